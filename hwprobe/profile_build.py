"""Profile assembly: filing measurements into a Profile, one function per section, each over plain records;
a run's profile (``build_profile``), a killed run's rebuilt one, and ``load_profile`` (which rebuilds where the
run ended before writing profile.json). Nothing below this module imports it: the runner, the distributed
merge and the readers of profiles call it.

Each record is filed by its typed status (hwprobe.vocab.Status), never by text in its notes or flags:
ok records become ceilings, capacities, latencies, maps and links; invalid ones, skips and errors go to their
lists; "info" records that are ok are calibration curves where their metric names one (hwprobe.calibration.parse),
else findings. Repeats of one metric (suite rounds) become a ceiling's runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hwprobe import keys as K
from hwprobe.device.info import device_kind
from hwprobe.errors import InputError
from hwprobe.measurement import Measurement
from hwprobe.profile import (
    SLOPE_PREFERENCE,
    Ceiling,
    Link,
    MemoryLevel,
    Profile,
    read_profile,
    superseded_note,
    validate_dict,
)
from hwprobe.results import ENVIRONMENT, MEASUREMENTS, PROFILE, load_records, records_file, version
from hwprobe.vocab import SPARSE_SUFFIX, Kind, Status, profile_precision


def from_measurements(device: dict[str, Any], ms: list[Measurement], **kw: Any) -> Profile:
    """File each record by its status: ok ones become ceilings (the best per slot, every repeat of the
    same metric kept as a run), invalid ones, skips and errors go to their lists."""
    prof = Profile(device=device, hwprobe_version=version(), **kw)
    build(prof, ms)
    return prof


def build_profile(device, ms: list[Measurement], env: dict[str, Any], partial: bool, theory=None,
                  devices: list | None = None) -> Profile:
    """The profile of a run's records (also what ``report`` rebuilds after a crash)."""
    dev = device if isinstance(device, dict) else device.to_dict()
    devs = [d if isinstance(d, dict) else d.to_dict() for d in (devices or [])] or [dev]
    prof = from_measurements(dev, ms, environment=env, partial=partial, devices=devs)
    if theory is not None:
        for text in theory.disagreements():
            prof.findings.append({"probe": "specs", "metric": "datasheet_vs_device", "text": text})
    try:  # a profile that fails its own schema is a bug; keep the data and say so rather than lose it
        validate_dict(prof.to_dict(), "the new profile")
    except InputError as e:
        prof.errors.append({"probe": "profile", "metric": "schema", "error": str(e)})
    except ImportError as e:   # jsonschema missing (an image installed with --no-deps): never lose the run
        prof.findings.append({"probe": "profile", "metric": "schema", "text": f"not checked against the schema: {e}"})
    return prof


def rebuild_profile(run_dir: Path) -> Profile:
    """The profile of a run that died before writing one (kill -9, a crash): every complete record of
    measurements.jsonl, marked partial; a torn last line is skipped and said so in the findings."""
    rec = load_records(run_dir)
    env: dict[str, Any] = {}
    try:
        env = json.loads((Path(run_dir) / ENVIRONMENT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    device = env.get("device") if isinstance(env.get("device"), dict) else {"kind": "unknown"}
    device.setdefault("kind", device_kind(device))
    prof = build_profile(device, rec.measurements, env, partial=True)
    # the run's own time, never the rebuild's: environment.json's start (the records carry no time of their own)
    prof.created_utc = str(env.get("started_utc") or "")
    note = (f"rebuilt from {MEASUREMENTS}: {len(rec.measurements)} records (the run ended before writing {PROFILE}); "
            f"created_utc is the run's start{'' if prof.created_utc else ' (unknown: no environment.json)'}")
    if rec.skipped_lines:
        note += f"; skipped {len(rec.skipped_lines)} unreadable line(s): {'; '.join(rec.skipped_lines[:3])}"
    prof.findings.insert(0, {"probe": "report", "metric": "rebuilt", "text": note})
    prof.superseded = superseded_note(run_dir)
    return prof


def load_profile(path: Path | str) -> Profile:
    """Read, migrate and validate a profile.json, or a results directory holding one. A results directory
    whose run was killed before it wrote profile.json is rebuilt from its measurements.jsonl (marked partial)."""
    p = Path(path)
    if p.is_dir() and not (p / PROFILE).exists() and records_file(p):
        return rebuild_profile(p)
    return read_profile(p)


def as_profile(profile: Profile | Path | str) -> Profile:
    """``profile`` as given where it is a Profile already, else load_profile's reading of the path."""
    return profile if isinstance(profile, Profile) else load_profile(profile)


def build(prof: Profile, ms: list[Measurement]) -> None:
    runs: dict[str, list[Measurement]] = {}
    slopes: dict[str, dict[str, Ceiling]] = {}      # level -> metric -> bandwidth ceiling candidates
    for m in ms:
        m.settle()
        if m.status == Status.SKIPPED:
            prof.skipped.append({"probe": m.probe, "metric": m.metric, "reason": m.reason})
        elif m.status == Status.ERROR:
            prof.errors.append({"probe": m.probe, "metric": m.metric, "error": m.reason})
        elif m.status == Status.INVALID:
            prof.invalid.append({"metric": m.metric, "probe": m.probe, "value": m.value, "unit": m.unit,
                                 "reason": m.reason, "flags": m.flags})
        elif m.kind == Kind.INFO:
            if prof.calibration.add(m.metric, m.value, m.params, m.probe, " ".join(m.notes)):
                continue
            prof.findings.append({"probe": m.probe, "metric": m.metric, "value": m.value, "unit": m.unit,
                                  "text": " ".join(m.notes), "params": m.params})
        else:
            runs.setdefault(m.metric, []).append(m)
    for same in runs.values():
        lower_is_better = same[0].kind == Kind.LATENCY
        best = (min if lower_is_better else max)(same, key=lambda m: m.value)
        if best.link:
            _link(prof, best, same)
        elif best.kind == Kind.COMPUTE and best.precision and best.exec_unit and best.path:
            _compute(prof, best, same)
        elif best.level:
            _memory(prof, best, same, slopes.setdefault(best.level, {}))
    for level, cands in slopes.items():
        _choose_slope(prof.memory[level], cands)
    _sustained(prof)


def _ceiling(best: Measurement, same: list[Measurement]) -> Ceiling:
    c = Ceiling.of(best)
    if len(same) > 1:
        c.runs = [m.value for m in same]
        c.runs_clock_mhz = [Ceiling.of(m).clock_mhz or 0.0 for m in same]
    return c


def _compute(prof: Profile, best: Measurement, same: list[Measurement]) -> None:
    if best.params.get(K.EXEC_UNIT_INFERRED):
        return  # a unit inferred from the rate never fills a measured slot (it stays in measurements.jsonl)
    slot = prof.compute.setdefault(profile_precision(best.precision), {}).setdefault(best.exec_unit, {})
    key = best.path + (SPARSE_SUFFIX if best.params.get(K.SPARSE) else "")
    if key not in slot or best.value > slot[key].value:
        slot[key] = _ceiling(best, same)


def _memory(prof: Profile, best: Measurement, same: list[Measurement], slopes: dict[str, Ceiling]) -> None:
    lvl = prof.memory.setdefault(best.level, MemoryLevel())
    if best.kind == Kind.MEMORY:
        lvl.variants[best.metric] = best.value
        if best.params.get(K.CEILING, True) is not False:  # e.g. pageable host copies are not ceilings
            slopes[best.metric] = _ceiling(best, same)
    elif best.kind == Kind.LATENCY:
        lvl.latency_s = best.value
        lvl.latency_cycles = best.params.get(K.CYCLES, lvl.latency_cycles)
    elif best.kind == Kind.CAPACITY:
        lvl.capacities[best.metric] = best.value
        primary = best.params.get(K.PRIMARY)
        if primary or (primary is None and lvl.capacity_bytes is None):   # secondary estimates stay beside it
            lvl.capacity_bytes = best.value
    elif best.kind == Kind.MAP:
        lvl.maps[best.metric] = best.params.get(K.MAP, best.params)


def _choose_slope(lvl: MemoryLevel, cands: dict[str, Ceiling]) -> None:
    """The level's roofline slope: the first variant of SLOPE_PREFERENCE, else the fastest ceiling variant."""
    if not cands:
        return
    pick = None
    for op in SLOPE_PREFERENCE:
        named = [c for metric, c in cands.items() if metric.split(".")[-1] == op]
        if named:
            pick = max(named, key=lambda c: c.value)
            break
    if pick is None:
        pick = max(cands.values(), key=lambda c: c.value)
    others = ", ".join(f"{k.split('.')[-1]} {v.value / 1e9:.4g} GB/s" for k, v in cands.items() if v is not pick)
    pick.notes = [*pick.notes, f"roofline slope: {pick.metric}" + (f" (beside it: {others})" if others else "")]
    lvl.bandwidth = pick


def _link(prof: Profile, best: Measurement, same: list[Measurement]) -> None:
    p = best.params
    link = prof.links.setdefault(best.link, Link(kind=p.get(K.LINK_KIND, "p2p"),
                                                 endpoints=list(p.get(K.ENDPOINTS) or []),
                                                 link_type=p.get(K.LINK_TYPE)))
    if best.kind == Kind.LATENCY:
        link.latency_s[p.get(K.CEILING_KEY, best.metric)] = best.value
    elif best.kind in (Kind.MEMORY, Kind.COMPUTE):
        key = p.get(K.CEILING_KEY, best.metric)
        if key not in link.ceilings or best.value > link.ceilings[key].value:
            link.ceilings[key] = _ceiling(best, same)
    for k in (K.SIZE_AT_90PCT, K.RANKS, K.HOSTS):
        if k in p:
            link.params.setdefault(f"{p.get(K.CEILING_KEY, best.metric)}.{k}", p[k])


def _sustained(prof: Profile) -> None:
    """gpu.gemm_power's sustained rate on random operands becomes the library ceiling's ``sustained``."""
    for f in prof.findings:
        metric = f.get("metric", "")
        if not metric.endswith(".power_data"):
            continue
        pts: dict[str, Any] = (f.get("params") or {}).get(K.POINTS) or {}
        rate = (pts.get("uniform") or {}).get("rate")
        prec, unit = metric.split(".")[:2]
        c = prof.compute.get(profile_precision(prec), {}).get(unit, {}).get("library")
        if c is not None and rate:
            c.sustained = max(c.sustained or 0.0, float(rate))
