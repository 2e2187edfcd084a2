"""The measured roofline profile: ceilings per precision/unit/path and per memory level, theory beside each.

Data and file I/O only: filing measurements into a Profile is hwprobe.profile_build's job (it imports this
module, never the other way round).

The JSON form is versioned (``schema_version``) and described by hwprobe/schema/profile.schema.json.
Older versions load through MIGRATIONS; newer ones are refused with a clear message. Since v3 the prediction's
calibration curves have a typed section of their own (hwprobe.calibration), out of the findings.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from hwprobe import keys as K
from hwprobe.calibration import CalibrationSection, lift
from hwprobe.errors import InputError
from hwprobe.flags import Code, has
from hwprobe.measurement import Measurement
from hwprobe.results import profile_path
from hwprobe.vocab import Kind

SCHEMA_VERSION = 3
# 2:4 sparse ceilings (dense-equivalent FLOPs) sit beside the dense ones, never mixed into a roofline peak.
# The roofline slope of a memory level: the first of these variants measured (a 2-read/1-write mix is what most
# kernels do, so triad before copy before read; write-only never sets the slope). The others stay beside it.
SLOPE_PREFERENCE = ("triad", "copy", "scale", "read", "add")
STABLE_SPREAD = 0.01      # a ceiling whose repeated runs agree within 1% is "stable"

# MIGRATIONS[v] turns a version-v profile dict into a version-(v+1) dict.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def window_power(c) -> float | None:
    """The power of the figure's own window: the energy counter's mean over it (a window of a second or
    more). Records written before issue 23 kept NVML's median reading for short windows too, a 1 s moving
    average of the time before the figure (123 W beside a power-cap throttle): those are dropped here."""
    return c.power_w if c and c.energy_j else None


def window_edges(params: dict[str, Any] | None) -> tuple[float, float] | None:
    """The SM clock a clock sentinel read at a library window's two edges, (before, after), where both were read
    (hwprobe.timing.sentinel.record). The figure's clock is the higher edge, so a clock that fell inside the window
    shows only here: an H200's TF32 GEMM at 8192 read 1971 MHz before its window and 1635 after, labelled 1980 MHz
    with no throttle reason NVML saw (profiles/h200-sxm/2026-11-28-suite-s27)."""
    got = [(params or {}).get(k) for k in (K.SENTINEL_BEFORE, K.SENTINEL_AFTER)]
    if not all(isinstance(g, dict) and g.get("mhz") for g in got):
        return None
    return float(got[0]["mhz"]), float(got[1]["mhz"])


def window_fall(edges: tuple[float, float] | None) -> float | None:
    """How far the SM clock fell inside a window of these edges (after / before - 1, below 0); None: it did not."""
    return edges[1] / edges[0] - 1 if edges and edges[1] < edges[0] else None


@dataclass
class Ceiling:
    """One measured ceiling and the theory beside it (value in ``unit``)."""

    value: float
    unit: str
    metric: str
    probe: str
    theory_at_clock: float | None = None
    theory_at_max_clock: float | None = None
    datasheet: float | None = None
    clock_mhz: float | None = None
    clock_source: str | None = None          # what clock_mhz is: "kernel", "nvml", "max", "memory"
    power_w: float | None = None
    throttle_reasons: list[str] = field(default_factory=list)
    energy_per_unit_j: float | None = None
    basis: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    runs: list[float] = field(default_factory=list)   # the same measurement repeated, apart (suite rounds)
    runs_clock_mhz: list[float] = field(default_factory=list)
    sustained: float | None = None           # the rate held for seconds at the power cap, where measured
    noise: float | None = None               # the samples' relative standard error of the median (policy)
    stop_reason: str | None = None           # why its sampling stopped (hwprobe.vocab.StopReason)

    @property
    def ratio_at_clock(self) -> float | None:
        return self.value / self.theory_at_clock if self.theory_at_clock else None

    @property
    def ratio_at_max_clock(self) -> float | None:
        return self.value / self.theory_at_max_clock if self.theory_at_max_clock else None

    @property
    def ratio_datasheet(self) -> float | None:
        return self.value / self.datasheet if self.datasheet else None

    @property
    def spread(self) -> float | None:
        """max/min - 1 over the repeated runs (None with fewer than 2)."""
        return max(self.runs) / min(self.runs) - 1 if len(self.runs) >= 2 and min(self.runs) > 0 else None

    @property
    def stable(self) -> bool | None:
        """True when >= 3 runs agree within 1%; None when it was not repeated enough to say."""
        return None if len(self.runs) < 3 or self.spread is None else self.spread <= STABLE_SPREAD

    @property
    def per_clock(self) -> float | None:
        """Operations (or bytes) per clock cycle of the clock behind the figure: what to compare across
        boards whose clocks differ (power-limited ceilings)."""
        return self.value / (self.clock_mhz * 1e6) if self.clock_mhz else None

    @classmethod
    def of(cls, m: Measurement) -> Ceiling:
        t, c = m.theory, m.clocks
        kernel = m.kind == Kind.COMPUTE and t and t.clock_mhz
        if kernel:
            source = m.params.get(K.THEORY_CLOCK_SOURCE) or ("kernel" if m.params.get(K.KERNEL_SM_MHZ) else "nvml")
            if has(m.flags, Code.CLOCK_LAG):
                source = "max"
        elif m.kind == Kind.MEMORY and m.level == "dram":
            source = "memory"
        else:
            source = "nvml" if c and c.sm_mhz else None
        return cls(
            value=m.value, unit=m.unit, metric=m.metric, probe=m.probe,
            theory_at_clock=t.at_clock if t else None, theory_at_max_clock=t.at_max_clock if t else None,
            datasheet=t.datasheet if t else None,
            # compute: the SM clock theory used (the kernel's own where it timed one); DRAM: the memory clock its
            # theory used; other memory levels: the SM clock
            clock_mhz=(t.clock_mhz if kernel else _memory_clock(t, c) if source == "memory"
                       else (c.sm_mhz if c else None)),
            clock_source=source,
            power_w=window_power(c), throttle_reasons=list(c.throttle_reasons) if c else [],
            energy_per_unit_j=m.energy_per_op_j, basis=t.basis if t else "",
            params=m.params, notes=list(m.notes), flags=list(m.flags),
            noise=m.stats.noise if m.stats else None, stop_reason=m.stats.stop if m.stats else None,
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(ratio_at_clock=self.ratio_at_clock, ratio_at_max_clock=self.ratio_at_max_clock,
                 ratio_datasheet=self.ratio_datasheet, spread=self.spread, stable=self.stable,
                 per_clock=self.per_clock)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ceiling:
        keep = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        if keep.get("clock_source") == "memory":       # profiles written before the DRAM clock was the memory's
            keep["clock_mhz"] = _legacy_memory_clock(keep) or keep.get("clock_mhz")
        return cls(**keep)


def _memory_clock(t, c) -> float | None:
    """A DRAM ceiling's clock: the memory clock its theory used, else NVML's memory clock."""
    return (t.clock_mhz if t and t.clock_mhz else None) or (c.mem_mhz if c else None)


def _legacy_memory_clock(d: dict[str, Any]) -> float | None:
    """The memory clock behind a stored DRAM ceiling, from its theory: the basis names the reported clock
    ("3201 MHz x 2 x 6016-bit / 8"), and theory @clock / theory @max is the measured clock's share of it (how
    specs.memory scales it). Profiles before 2026-11-26 stored the SM clock here under the source "memory"."""
    import re

    m = re.match(r"\s*([\d.]+) MHz x ([\d.]+) x", d.get("basis") or "")
    at, top = d.get("theory_at_clock"), d.get("theory_at_max_clock")
    if not (m and at and top):
        return None
    reported = float(m.group(1)) * float(m.group(2)) / 2
    return round(reported * at / top, 1)


@dataclass
class MemoryLevel:
    bandwidth: Ceiling | None = None          # the roofline slope (see SLOPE_PREFERENCE)
    capacity_bytes: float | None = None
    latency_s: float | None = None
    latency_cycles: float | None = None
    variants: dict[str, float] = field(default_factory=dict)   # metric -> B/s (read, write, copy, ...)
    capacities: dict[str, float] = field(default_factory=dict)  # metric -> bytes (physical, effective, ...)
    maps: dict[str, Any] = field(default_factory=dict)          # metric -> table (e.g. L2 latency per SM)

    def to_dict(self) -> dict[str, Any]:
        return {"bandwidth": self.bandwidth.to_dict() if self.bandwidth else None,
                "capacity_bytes": self.capacity_bytes, "latency_s": self.latency_s,
                "latency_cycles": self.latency_cycles, "variants": self.variants,
                "capacities": self.capacities, "maps": self.maps}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemoryLevel:
        bw = d.get("bandwidth")
        return cls(Ceiling.from_dict(bw) if bw else None, d.get("capacity_bytes"), d.get("latency_s"),
                   d.get("latency_cycles"), dict(d.get("variants") or {}), dict(d.get("capacities") or {}),
                   dict(d.get("maps") or {}))


@dataclass
class Link:
    """An interconnect: a GPU pair, the host link or a collective over N ranks, with its ceilings."""

    kind: str                                  # "p2p" | "collective" | "host"
    endpoints: list[Any] = field(default_factory=list)   # GPU indices, or "host:rank:gpu" strings
    link_type: str | None = None               # "NVLink4 x18", "PCIe Gen5 x16"
    ceilings: dict[str, Ceiling] = field(default_factory=dict)   # "ce.uni", "sm.read", "busbw", ...
    latency_s: dict[str, float] = field(default_factory=dict)    # "chase", "pingpong"
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "endpoints": self.endpoints, "link_type": self.link_type,
                "ceilings": {k: c.to_dict() for k, c in self.ceilings.items()}, "latency_s": self.latency_s,
                "params": self.params}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Link:
        return cls(d["kind"], list(d.get("endpoints") or []), d.get("link_type"),
                   {k: Ceiling.from_dict(c) for k, c in (d.get("ceilings") or {}).items()},
                   dict(d.get("latency_s") or {}), dict(d.get("params") or {}))


@dataclass
class Profile:
    device: dict[str, Any]
    compute: dict[str, dict[str, dict[str, Ceiling]]] = field(default_factory=dict)  # prec -> unit -> path
    memory: dict[str, MemoryLevel] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)       # what a reader reads
    calibration: CalibrationSection = field(default_factory=CalibrationSection)   # the prediction's curves
    skipped: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    devices: list[dict[str, Any]] = field(default_factory=list)   # every device of the run (multi-GPU)
    partial: bool = False
    created_utc: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    hwprobe_version: str = ""
    schema_version: int = SCHEMA_VERSION
    superseded: str = ""          # why a committed run is no longer to be taken (its SUPERSEDED file), or ""

    # --- queries ---------------------------------------------------------------------------------
    # Validated in hwprobe.roofline (case-insensitive names, path="library"|"instruction"|"best", one
    # RooflineError for bad arguments and missing ceilings). Lookups (peak, bandwidth) return None for a ceiling
    # this profile lacks; computations (attainable, ridge_point) raise RooflineError (also a KeyError).
    def peak(self, precision: str, unit: str | None = None, path: str = "best") -> Ceiling | None:
        """The highest measured dense ceiling for a precision (over units and paths unless given), or None."""
        from hwprobe import roofline

        p, u, pa = roofline.norm_precision(precision), roofline.norm_unit(unit), roofline.norm_path(path)
        try:
            return roofline.peak(self, p, u, pa)
        except roofline.RooflineError:
            return None

    def bandwidth(self, level: str = "dram") -> float | None:
        """The measured bandwidth (B/s) of a memory level, or None."""
        from hwprobe import roofline

        try:
            return roofline.bandwidth(self, level)
        except roofline.RooflineError:
            return None

    def attainable(self, intensity: float, precision: str, level: str = "dram", unit: str | None = None,
                   path: str = "best") -> float:
        """Roofline: min(measured peak, intensity x measured bandwidth) in FLOP/s (or OP/s)."""
        from hwprobe import roofline

        return roofline.attainable(self, intensity, precision, level, unit, path)

    def ridge_point(self, precision: str, level: str = "dram", unit: str | None = None, path: str = "best") -> float:
        """Operations per byte where the measured roof turns from memory-bound to compute-bound."""
        from hwprobe import roofline

        return roofline.ridge_point(self, precision, level, unit, path)

    def collective_curve(self, op: str = "all_reduce", ranks: int | None = None, variant: str = "best"):
        """The measured NCCL curve of ``op``: [CurvePoint(bytes, busbw, algbw, time_s, variant)] in size order
        (hwprobe.collective; raises RooflineError where this profile has none)."""
        from hwprobe import collective

        return collective.collective_curve(self, op, ranks, variant)

    def collective_time(self, op: str, nbytes: float, ranks: int | None = None, variant: str = "best"):
        """Seconds for one ``op`` of ``nbytes`` from the measured curve, log-log interpolated; the result says
        whether the size was inside the measured range (hwprobe.collective.CollectiveTime)."""
        from hwprobe import collective

        return collective.collective_time(self, op, nbytes, ranks, variant)

    # --- (de)serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version, "hwprobe_version": self.hwprobe_version,
            "created_utc": self.created_utc, "partial": self.partial, "device": self.device,
            "compute": {p: {u: {k: c.to_dict() for k, c in paths.items()} for u, paths in units.items()}
                        for p, units in self.compute.items()},
            "memory": {lvl: m.to_dict() for lvl, m in self.memory.items()},
            "links": {k: link.to_dict() for k, link in self.links.items()},
            "calibration": self.calibration.to_dict(),
            "findings": self.findings, "skipped": self.skipped, "errors": self.errors, "invalid": self.invalid,
            "environment": self.environment, "devices": self.devices,
            **({"superseded": self.superseded} if self.superseded else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        return cls(
            device=d["device"],
            compute={p: {u: {k: Ceiling.from_dict(c) for k, c in paths.items()} for u, paths in units.items()}
                     for p, units in d.get("compute", {}).items()},
            memory={k: MemoryLevel.from_dict(v) for k, v in d.get("memory", {}).items()},
            links={k: Link.from_dict(v) for k, v in d.get("links", {}).items()},
            devices=list(d.get("devices") or []),
            calibration=CalibrationSection.from_dict(d.get("calibration") or {}),
            findings=d.get("findings", []), skipped=d.get("skipped", []), errors=d.get("errors", []),
            invalid=d.get("invalid", []), environment=d.get("environment", {}), partial=d.get("partial", False),
            created_utc=d.get("created_utc", ""), hwprobe_version=d.get("hwprobe_version", ""),
            schema_version=d["schema_version"], superseded=str(d.get("superseded") or ""),
        )

    def save(self, path: Path | str) -> None:
        """Write atomically (a temporary file renamed over the target): a reader never sees half a profile."""
        from hwprobe.results import atomic_write

        atomic_write(Path(path), json.dumps(finite(self.to_dict()), indent=2, default=str, allow_nan=False) + "\n")


def _v1_to_v2(d: dict[str, Any]) -> dict[str, Any]:
    """v2 adds ``links`` (interconnect ceilings), ``devices``, and per memory level ``capacities`` and ``maps``;
    a v1 profile has none of them, and its skips/errors were already filed by text."""
    d = dict(d)
    d.setdefault("links", {})
    d.setdefault("devices", [d["device"]] if isinstance(d.get("device"), dict) else [])
    for lvl in (d.get("memory") or {}).values():
        if isinstance(lvl, dict):
            lvl.setdefault("capacities", {})
            lvl.setdefault("maps", {})
    return d


MIGRATIONS[1] = _v1_to_v2


def _v2_to_v3(d: dict[str, Any]) -> dict[str, Any]:
    """v3 files the prediction's calibration curves (v2's ``predict.*`` findings) in the typed ``calibration``
    section; the findings keep the rest, in their order."""
    d = dict(d)
    findings = d.get("findings") or []
    if not isinstance(findings, list):
        raise TypeError("findings is not a list")
    sec, d["findings"] = lift(findings)
    d["calibration"] = sec.to_dict()
    return d


MIGRATIONS[2] = _v2_to_v3


def finite(o: Any) -> Any:
    """``o`` with every NaN or infinite float replaced by None (null): what JSON can hold, and load accepts."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [finite(v) for v in o]
    return o


def schema() -> dict[str, Any]:
    return json.loads(resources.files("hwprobe.schema").joinpath("profile.schema.json").read_text())


def validate_dict(d: dict[str, Any], where: str = "profile") -> None:
    import jsonschema

    v = jsonschema.Draft202012Validator(schema())
    err = next(iter(sorted(v.iter_errors(d), key=lambda e: list(e.absolute_path))), None)
    if err is not None:
        loc = "/".join(str(p) for p in err.absolute_path) or "(root)"
        msg = f"{where} does not match the profile schema at {loc}: {err.message}"
        raise InputError(msg.encode("unicode_escape").decode("ascii")[:400])     # one line, whatever the keys hold


def migrate(d: dict[str, Any], where: str = "profile") -> dict[str, Any]:
    v = d.get("schema_version")
    if not isinstance(v, int):
        raise InputError(f"{where} has no integer schema_version: not an hwprobe profile")
    if v > SCHEMA_VERSION:
        raise InputError(f"{where} has schema_version {v}, newer than this hwprobe understands "
                         f"({SCHEMA_VERSION}): upgrade hwprobe to read it")
    while v < SCHEMA_VERSION:
        if v not in MIGRATIONS:
            raise InputError(f"{where} has schema_version {v}, which this hwprobe cannot migrate")
        try:
            d = MIGRATIONS[v](d)
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            raise InputError(f"{where} is malformed (schema_version {v} cannot be migrated: "
                             f"{type(e).__name__}: {e})") from None
        v += 1
        d["schema_version"] = v
    return d


def loads_finite(text: str, where: str = "profile") -> Any:
    """json.loads, but NaN and Infinity (which Python's parser accepts, and JSON does not have) are refused in one
    line: a ceiling of NaN would pass the schema as a number and print as "nan%"."""
    def refuse(token: str) -> None:
        raise InputError(f"{where} holds {token}, which is not a JSON number: a damaged or hand-edited profile")

    return json.loads(text, parse_constant=refuse)


def read_json_object(p: Path, where: str, kind: str = "an hwprobe profile") -> dict:
    """The JSON object in file ``p`` (plain or gzipped, as the evidence folders keep their profiles), or one line
    of InputError naming ``where`` and what it should have been (``kind``): missing, unreadable, damaged, not JSON,
    not an object. The one reader behind read_profile, the fleet's load_run and an LLM's --routing."""
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{where} does not exist") from None
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror or e}") from None
    if raw[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"{where} is a damaged gzip file: {e}") from None
    try:
        d = loads_finite(raw.decode("utf-8"), where)
    except UnicodeDecodeError:
        raise InputError(f"{where} is not text (binary or damaged): not {kind}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{where} is not valid JSON (truncated or damaged?): {e.msg} at line {e.lineno}") from None
    except RecursionError:
        raise InputError(f"{where} is nested too deeply to be {kind}") from None
    if not isinstance(d, dict):
        raise InputError(f"{where} is not a JSON object: not {kind}")
    return d


def read_profile(path: Path | str) -> Profile:
    """Read, migrate and validate a profile.json, or a results directory holding one: the file reader behind the
    one ``load_profile`` (hwprobe.profile_build), which also rebuilds the profile of a run killed before it wrote
    one. Call that one."""
    p = profile_path(Path(path))
    where = f"profile {str(p)!r}"
    d = migrate(read_json_object(p, where), where)
    validate_dict(d, where)
    try:
        prof = Profile.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError) as e:   # valid by schema but not buildable: a bug
        raise InputError(f"{where} cannot be read: {type(e).__name__}: {e}") from None
    prof.superseded = superseded_note(p.parent)
    return prof


SUPERSEDED = "SUPERSEDED"


def superseded_note(run_dir: Path | str) -> str:
    """The text of a run directory's SUPERSEDED file: a committed run judged under rules since corrected (or
    measured with a fault since fixed) says so there, and every reader (report, compare, validate) shows it."""
    try:
        return " ".join((Path(run_dir) / SUPERSEDED).read_text(encoding="utf-8").split())
    except (OSError, UnicodeDecodeError):
        return ""
