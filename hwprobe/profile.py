"""The measured roofline profile: ceilings per precision/unit/path and per memory level, theory beside each.

The JSON form is versioned (``schema_version``) and described by hwprobe/schema/profile.schema.json.
Older versions load through MIGRATIONS; newer ones are refused with a clear message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from hwprobe.errors import InputError
from hwprobe.measurement import Measurement

SCHEMA_VERSION = 1
# 2:4 sparse ceilings (dense-equivalent FLOPs) sit beside the dense ones, never mixed into a roofline peak.
SPARSE_SUFFIX = "_sparse24"

# MIGRATIONS[v] turns a version-v profile dict into a version-(v+1) dict.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


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
    power_w: float | None = None
    throttle_reasons: list[str] = field(default_factory=list)
    energy_per_unit_j: float | None = None
    basis: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ratio_at_clock(self) -> float | None:
        return self.value / self.theory_at_clock if self.theory_at_clock else None

    @property
    def ratio_at_max_clock(self) -> float | None:
        return self.value / self.theory_at_max_clock if self.theory_at_max_clock else None

    @property
    def ratio_datasheet(self) -> float | None:
        return self.value / self.datasheet if self.datasheet else None

    @classmethod
    def of(cls, m: Measurement) -> Ceiling:
        t, c = m.theory, m.clocks
        return cls(
            value=m.value, unit=m.unit, metric=m.metric, probe=m.probe,
            theory_at_clock=t.at_clock if t else None, theory_at_max_clock=t.at_max_clock if t else None,
            datasheet=t.datasheet if t else None,
            # compute: the SM clock theory used (the kernel's own where it timed one); memory: the SM clock
            clock_mhz=t.clock_mhz if (m.kind == "compute" and t and t.clock_mhz) else (c.sm_mhz if c else None),
            power_w=c.power_w if c else None, throttle_reasons=list(c.throttle_reasons) if c else [],
            energy_per_unit_j=m.energy_per_op_j, basis=t.basis if t else "",
            params=m.params, notes=list(m.notes),
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(ratio_at_clock=self.ratio_at_clock, ratio_at_max_clock=self.ratio_at_max_clock,
                 ratio_datasheet=self.ratio_datasheet)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ceiling:
        keep = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**keep)


@dataclass
class MemoryLevel:
    bandwidth: Ceiling | None = None
    capacity_bytes: float | None = None
    latency_s: float | None = None
    latency_cycles: float | None = None
    variants: dict[str, float] = field(default_factory=dict)   # metric -> B/s (read, write, copy, ...)

    def to_dict(self) -> dict[str, Any]:
        return {"bandwidth": self.bandwidth.to_dict() if self.bandwidth else None,
                "capacity_bytes": self.capacity_bytes, "latency_s": self.latency_s,
                "latency_cycles": self.latency_cycles, "variants": self.variants}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemoryLevel:
        bw = d.get("bandwidth")
        return cls(Ceiling.from_dict(bw) if bw else None, d.get("capacity_bytes"), d.get("latency_s"),
                   d.get("latency_cycles"), dict(d.get("variants") or {}))


@dataclass
class Profile:
    device: dict[str, Any]
    compute: dict[str, dict[str, dict[str, Ceiling]]] = field(default_factory=dict)  # prec -> unit -> path
    memory: dict[str, MemoryLevel] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    partial: bool = False
    created_utc: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    hwprobe_version: str = ""
    schema_version: int = SCHEMA_VERSION

    # --- building --------------------------------------------------------------------------------
    @classmethod
    def from_measurements(cls, device: dict[str, Any], ms: list[Measurement], **kw: Any) -> Profile:
        """Keep the best valid measurement per ceiling slot; list invalid ones, skips and errors apart."""
        from hwprobe import __version__

        prof = cls(device=device, hwprobe_version=__version__, **kw)
        for m in ms:
            if m.kind == "info":
                prof._note_info(m)
                continue
            if not m.valid:
                prof.invalid.append({"metric": m.metric, "probe": m.probe, "value": m.value, "unit": m.unit,
                                     "flags": m.flags})
                continue
            if m.kind == "compute" and m.precision and m.exec_unit and m.path:
                prec = "fp8" if m.precision.startswith("fp8") else m.precision
                slot = prof.compute.setdefault(prec, {}).setdefault(m.exec_unit, {})
                key = m.path + (SPARSE_SUFFIX if m.params.get("sparse") else "")
                if key not in slot or m.value > slot[key].value:
                    slot[key] = Ceiling.of(m)
            elif m.level and m.kind in ("memory", "latency", "capacity"):
                lvl = prof.memory.setdefault(m.level, MemoryLevel())
                if m.kind == "memory":
                    lvl.variants[m.metric] = max(m.value, lvl.variants.get(m.metric, 0.0))
                    is_ceiling = m.params.get("ceiling", True) is not False  # e.g. pageable host copies
                    if is_ceiling and (lvl.bandwidth is None or m.value > lvl.bandwidth.value):
                        lvl.bandwidth = Ceiling.of(m)
                elif m.kind == "latency":
                    lvl.latency_s = m.value
                    lvl.latency_cycles = m.params.get("cycles", lvl.latency_cycles)
                else:
                    lvl.capacity_bytes = m.value
        return prof

    def _note_info(self, m: Measurement) -> None:
        skips = [n[len("skipped: "):] for n in m.notes if n.startswith("skipped: ")]
        errors = [f for f in m.flags if f.startswith("error: ")]
        for s in skips:
            self.skipped.append({"probe": m.probe, "metric": m.metric, "reason": s})
        for e in errors:
            self.errors.append({"probe": m.probe, "metric": m.metric, "error": e[len("error: "):]})
        if not skips and not errors:
            self.findings.append({"probe": m.probe, "metric": m.metric, "value": m.value, "unit": m.unit,
                                  "text": " ".join(m.notes), "params": m.params})

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

    # --- (de)serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version, "hwprobe_version": self.hwprobe_version,
            "created_utc": self.created_utc, "partial": self.partial, "device": self.device,
            "compute": {p: {u: {k: c.to_dict() for k, c in paths.items()} for u, paths in units.items()}
                        for p, units in self.compute.items()},
            "memory": {lvl: m.to_dict() for lvl, m in self.memory.items()},
            "findings": self.findings, "skipped": self.skipped, "errors": self.errors, "invalid": self.invalid,
            "environment": self.environment,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        return cls(
            device=d["device"],
            compute={p: {u: {k: Ceiling.from_dict(c) for k, c in paths.items()} for u, paths in units.items()}
                     for p, units in d.get("compute", {}).items()},
            memory={k: MemoryLevel.from_dict(v) for k, v in d.get("memory", {}).items()},
            findings=d.get("findings", []), skipped=d.get("skipped", []), errors=d.get("errors", []),
            invalid=d.get("invalid", []), environment=d.get("environment", {}), partial=d.get("partial", False),
            created_utc=d.get("created_utc", ""), hwprobe_version=d.get("hwprobe_version", ""),
            schema_version=d["schema_version"],
        )

    def save(self, path: Path | str) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")


def schema() -> dict[str, Any]:
    return json.loads(resources.files("hwprobe.schema").joinpath("profile.schema.json").read_text())


def validate_dict(d: dict[str, Any], where: str = "profile") -> None:
    import jsonschema

    v = jsonschema.Draft202012Validator(schema())
    err = next(iter(sorted(v.iter_errors(d), key=lambda e: list(e.absolute_path))), None)
    if err is not None:
        loc = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise InputError(f"{where} does not match the profile schema at {loc}: {err.message}")


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
        d = MIGRATIONS[v](d)
        v += 1
        d["schema_version"] = v
    return d


def load_profile(path: Path | str) -> Profile:
    """Read, migrate and validate a profile.json (or a results directory holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "profile.json"
    where = f"profile {str(p)!r}"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{where} does not exist") from None
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror or e}") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{where} is not valid JSON (truncated or damaged?): {e.msg} at line {e.lineno}") from None
    if not isinstance(d, dict):
        raise InputError(f"{where} is not a JSON object: not an hwprobe profile")
    d = migrate(d, where)
    validate_dict(d, where)
    return Profile.from_dict(d)
