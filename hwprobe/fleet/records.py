"""Runs as flat records: one value per ceiling key, with what was recorded beside it (clock, throttle, power).

A ceiling key names a slot the same way in every run: ``fp16.tensor_core.library``, ``dram.bandwidth``,
``link.<name>.<ceiling>``. ``load_run`` reads a profile.json with the JSON parser and the schema migration only
(``strict`` adds the JSON Schema check, ~9 ms on a full profile): a fleet of thousands loads in seconds.
"""

from __future__ import annotations

import glob
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwprobe import keys as K
from hwprobe.errors import InputError
from hwprobe.flags import Code, has
from hwprobe.results import MEASUREMENTS, PROFILE, RECORD_FILES, profile_path, records_file

_GLOB_CHARS = set("*?[")


@dataclass
class CeilingRec:
    key: str
    value: float
    unit: str
    metric: str = ""
    clock_mhz: float | None = None
    clock_source: str | None = None
    throttle: list[str] = field(default_factory=list)
    power_w: float | None = None
    per_clock: float | None = None            # as recorded (Ceiling.per_clock); None where the run did not
    flags: list[str] = field(default_factory=list)
    theory_at_max: float | None = None
    edges_mhz: tuple[float, float] | None = None   # the SM clock at the window's edges, (before, after)
    candidates: list[dict[str, Any]] = field(default_factory=list)   # the points it was the best of (ceiling_of)

    def candidate(self, metric: str) -> dict[str, Any] | None:
        """The point of ``metric`` this ceiling was chosen among, as its params list it."""
        return next((c for c in self.candidates if c.get("metric") == metric), None)

    @property
    def source(self) -> dict[str, Any] | None:
        """The candidate the ceiling is (the one at its value)."""
        return next((c for c in self.candidates if c.get("rate") == self.value), None)

    @property
    def size(self) -> int | None:
        """A library GEMM ceiling's n: its source candidate's."""
        n = (self.source or {}).get("n")
        return n if isinstance(n, int) else None

    def per_cycle(self) -> tuple[float | None, str]:
        """The figure per clock cycle and where it comes from: "recorded" (the profile's per_clock), "derived"
        (value / clock_mhz) or "absent" (no clock)."""
        if self.per_clock:
            return self.per_clock, "recorded"
        if self.clock_mhz:
            return self.value / (self.clock_mhz * 1e6), "derived"
        return None, "absent"

    @property
    def window_fall(self) -> float | None:
        from hwprobe.profile import window_fall

        return window_fall(self.edges_mhz)

    @property
    def power_limited(self) -> bool:
        return any("power" in t for t in self.throttle)

    @property
    def thermal(self) -> bool:
        return any("thermal" in t for t in self.throttle)


@dataclass
class RunRecord:
    path: str
    label: str
    device: dict[str, Any]
    environment: dict[str, Any]
    ceilings: dict[str, CeilingRec]
    created: str = ""
    version: str = ""
    partial: bool = False
    measured: bool = True                     # False: a spec-derived expectation, not a measurement
    superseded: str = ""                      # the run directory's SUPERSEDED note (profile.superseded_note)
    health: list[dict[str, Any]] = field(default_factory=list)   # findings holding a health verdict (hwprobe.health)
    devices: list[dict[str, Any]] = field(default_factory=list)  # every device of the run, each rank's under MPI
    rebuilt: bool = False                     # no profile.json: rebuilt from measurements.jsonl (partial)

    @property
    def contended(self) -> bool:
        """Other work shared the GPU while this ran (recorded by the run), for the run or any ceiling."""
        env = self.environment
        return bool(env.get("contended") or (env.get("processes") or {}).get("contended")
                    or any(has(c.flags, Code.CONTENDED) for c in self.ceilings.values()))

    @property
    def contention(self) -> str:
        """What marks this run contended, as the run recorded it ("" where nothing does): other processes NVML
        listed on the GPU, or figures that look contended (hwprobe.contention: far below theory, split samples),
        from which other work on the CPU or GPU is only inferred."""
        what = "CPU" if self.device.get("kind") == "cpu" else "GPU"
        procs = self.environment.get("processes") or {}
        if procs.get("contended"):
            names = ", ".join(f"{p.get('name')} ({p.get('pid')})" for p in (procs.get("processes") or [])[:4])
            return f"other processes used the {what} during this run: {names or 'listed by NVML'}"
        recorded = self.environment.get("contended")
        metrics = (list(recorded) if isinstance(recorded, list) else []) or sorted(
            c.metric or c.key for c in self.ceilings.values() if has(c.flags, Code.CONTENDED))
        if not metrics and recorded:
            return f"the run recorded itself as contended: other work probably used the {what}"
        if metrics:
            return (f"{len(metrics)} figure(s) look contended, far below theory or with split samples "
                    f"({', '.join(metrics[:3])}{', ...' if len(metrics) > 3 else ''}): other work probably used "
                    f"the {what}")
        return ""

    @property
    def jetson(self) -> dict:
        return self.device.get("jetson") or (self.environment.get("device") or {}).get("jetson") or {}

    @property
    def power_mode(self) -> str | None:
        return (self.jetson.get("nvpmodel") or {}).get("name")

    @property
    def device_name(self) -> str:
        d = self.device
        name = self.jetson.get("module") or d.get("name") or d.get("model") or "?"
        return f"{name} ({d.get('sms')} SMs)" if d.get("sms") and not self.jetson else name


def _ceiling(key: str, c: dict[str, Any]) -> CeilingRec | None:
    try:
        value = float(c["value"])
    except (KeyError, TypeError, ValueError):
        return None
    from hwprobe.profile import _legacy_memory_clock, window_edges

    clock, params = c.get("clock_mhz"), c.get("params") or {}
    if c.get("clock_source") == "memory":     # profiles before 2026-11-26 stored the SM clock here (as Ceiling reads)
        clock = _legacy_memory_clock(c) or clock
    return CeilingRec(key=key, value=value, unit=str(c.get("unit") or ""), metric=str(c.get("metric") or ""),
                      clock_mhz=clock, clock_source=c.get("clock_source"),
                      throttle=list(c.get("throttle_reasons") or []), power_w=c.get("power_w"),
                      per_clock=c.get("per_clock"), flags=[str(f) for f in c.get("flags") or []],
                      theory_at_max=c.get("theory_at_max_clock"), edges_mhz=window_edges(params),
                      candidates=[x for x in params.get(K.CANDIDATES) or [] if isinstance(x, dict)])


def ceilings_of(d: dict[str, Any]) -> dict[str, CeilingRec]:
    """Every ceiling of a profile dict under its key."""
    out: dict[str, CeilingRec] = {}
    for prec, units in (d.get("compute") or {}).items():
        for unit, paths in (units or {}).items():
            for path, c in (paths or {}).items():
                if isinstance(c, dict) and (rec := _ceiling(f"{prec}.{unit}.{path}", c)):
                    out[rec.key] = rec
    for level, lvl in (d.get("memory") or {}).items():
        bw = (lvl or {}).get("bandwidth")
        if isinstance(bw, dict) and (rec := _ceiling(f"{level}.bandwidth", bw)):
            out[rec.key] = rec
    for name, link in (d.get("links") or {}).items():
        for cname, c in ((link or {}).get("ceilings") or {}).items():
            if isinstance(c, dict) and (rec := _ceiling(f"link.{name}.{cname}", c)):
                out[rec.key] = rec
    return out


def record_of(d: dict[str, Any], path: str, label: str | None = None) -> RunRecord:
    env = d.get("environment") or {}
    return RunRecord(path=path, label=label or path, device=d.get("device") or {}, environment=env,
                     ceilings=ceilings_of(d), created=str(d.get("created_utc") or ""),
                     version=str(d.get("hwprobe_version") or ""), partial=bool(d.get("partial")),
                     measured=env.get("measured", True) is not False,
                     health=[f for f in d.get("findings") or [] if isinstance(f, dict)
                             and isinstance((f.get("params") or {}).get(K.HEALTH), dict)],
                     devices=[x for x in d.get("devices") or [] if isinstance(x, dict)])


def _records_only(p: Path) -> bool:
    """A run directory that holds its records (measurements.jsonl, or gzipped) but no profile.json: a run killed
    before it wrote one."""
    return p.is_dir() and not (p / PROFILE).is_file() and records_file(p) is not None


def load_run(path: str | Path, label: str | None = None, strict: bool = False) -> RunRecord:
    """Read one run (a results directory or a profile.json). ``strict`` checks the JSON Schema too."""
    from hwprobe.profile import migrate, read_json_object, validate_dict

    if _records_only(Path(path)):
        return _rebuilt(Path(path), label)
    p = profile_path(Path(path))
    where = f"profile {str(p)!r}"
    d = migrate(read_json_object(p, where), where)
    if strict:
        validate_dict(d, where)
    elif not isinstance(d.get("device"), dict) or not isinstance(d.get("compute", {}), dict):
        raise InputError(f"{where} has no device/compute sections: not an hwprobe profile")
    from hwprobe.profile import superseded_note

    rec = record_of(d, str(p.parent if p.name == PROFILE else p), label)
    rec.superseded = superseded_note(p.parent)
    return rec


def _rebuilt(run_dir: Path, label: str | None) -> RunRecord:
    """The record of a run that has measurements.jsonl and no profile.json, rebuilt (partial) as report does."""
    from hwprobe.profile import superseded_note
    from hwprobe.profile_build import rebuild_profile

    rec = record_of(rebuild_profile(run_dir).to_dict(), str(run_dir), label)
    rec.superseded, rec.rebuilt = superseded_note(run_dir), True
    return rec


@dataclass
class Found:
    """What the inputs name: run paths (a profile.json, or a run directory that has only measurements.jsonl), and
    the folders named (directly or by a glob) that hold neither, in or below them."""
    runs: list[Path]
    skipped: list[Path]


def find_runs(inputs: list[str]) -> Found:
    """Runs for results directories, profile.json files and globs; a directory without a profile.json is searched
    below (a results root holding many runs). A folder with no run in or below it is skipped, whether the shell
    or hwprobe expanded the glob that named it; the caller refuses when no run remains."""
    out: list[Path] = []
    skipped: list[Path] = []
    for item in inputs:
        if _GLOB_CHARS & set(item):
            hits = sorted(glob.glob(item, recursive=True))
            if not hits:
                raise InputError(f"no file matches {item!r}")
            paths = [Path(h) for h in hits]
        else:
            paths = [Path(item)]
        for p in paths:
            if p.is_dir():
                found = _runs_in(p)
                if not found:
                    skipped.append(p)
                out += found
            elif p.is_file():
                out.append(p)
            elif not _GLOB_CHARS & set(item):
                raise InputError(f"{str(p)!r} does not exist")
    return Found(list(dict.fromkeys(x.resolve() for x in out)), skipped)


def _runs_in(p: Path) -> list[Path]:
    if (p / PROFILE).is_file():
        return [p / PROFILE]
    if _records_only(p):
        return [p]
    killed = {f.parent for name in RECORD_FILES for f in p.rglob(name) if _records_only(f.parent)}
    return sorted([*p.rglob(PROFILE), *killed])


def expand(inputs: list[str]) -> list[Path]:
    """The runs of ``inputs`` (see find_runs); none at all is an error."""
    return _some(find_runs(inputs), inputs).runs


def _some(found: Found, inputs: list[str]) -> Found:
    if not found.runs:
        where = ", ".join(repr(str(p)) for p in found.skipped) or ", ".join(inputs)
        raise InputError(f"no {PROFILE} in or below {where}, nor a run's {MEASUREMENTS}")
    return found


def labels_for(paths: list[Path]) -> list[str]:
    """Short unique labels: the end of each run's path, as many parts as it takes to tell it from every other run,
    and at least as many as most runs need (a fleet reads "h200-sxm/2026-11-26-full" throughout). Only the runs
    that need more get more: two copies of one run in two clones are told apart by the clone, and the other runs
    do not carry the clone's path."""
    import statistics

    runs = [p.parent if p.name == PROFILE else p if p.is_dir() else p.with_suffix("") for p in paths]

    def tail(r: Path, depth: int) -> tuple[str, ...]:
        return r.parts[-depth:]

    need = []
    for i, r in enumerate(runs):
        depth = 1
        while depth < len(r.parts) and any(tail(o, depth) == tail(r, depth) for j, o in enumerate(runs) if j != i):
            depth += 1
        need.append(depth)
    common = math.ceil(statistics.median(need)) if need else 1
    return [str(Path(*tail(r, max(n, common)))) for r, n in zip(runs, need, strict=True)]


def load_many(inputs: list[str], skipped: list[Path] | None = None) -> list[RunRecord]:
    """Every run of ``inputs``; the folders that hold none are appended to ``skipped`` (the CLI names them)."""
    found = _some(find_runs(inputs), inputs)
    paths = found.runs
    if skipped is not None:
        skipped += found.skipped
    return [load_run(p, label) for p, label in zip(paths, labels_for(paths), strict=True)]
