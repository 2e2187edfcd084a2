"""The profile's roofline queries, validated: peak, bandwidth, attainable rate and ridge point.

One place answers "how fast can this go here": every argument is checked, names are case-insensitive, a
missing ceiling and a bad argument raise the same ``RooflineError`` (an ``InputError``, so the CLI prints
one line and exits 2; also a ``KeyError`` for code written against the old ``Profile.attainable``).

``path`` chooses between the two kinds of compute ceiling a profile holds:
- ``"library"``: what cuBLAS/cuBLASLt reached (what a model running through a library can expect);
- ``"instruction"``: what hand-written kernels reached with the raw instruction (FFMA, wgmma, ...);
- ``"best"``: the higher of the two (the hardware's demonstrated limit).
2:4-sparse ceilings never count as a dense peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any, Protocol

from hwprobe.errors import InputError
from hwprobe.vocab import PROFILE_PRECISIONS, SPARSE_SUFFIX, ExecUnit, Path

PATHS = (Path.LIBRARY, Path.INSTRUCTION, "best")
UNITS = (ExecUnit.CUDA_CORE, ExecUnit.TENSOR_CORE, ExecUnit.CPU)
_UNIT_ALIASES = {**dict.fromkeys(("tensor", "tensorcore", "tensor_cores", "tc"), ExecUnit.TENSOR_CORE),
                 **dict.fromkeys(("cuda", "cudacore", "cuda_cores", "simt", "cc"), ExecUnit.CUDA_CORE)}
_PRECISION_ALIASES = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8", "half": "fp16",
                      "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32", "single": "fp32",
                      "double": "fp64", "float64": "fp64", "i8": "int8", "s8": "int8", "i32": "int32"}
_LEVEL_ALIASES = {"hbm": "dram", "gmem": "dram", "global": "dram", "smem": "shared", "l2cache": "l2"}


class Ceiling(Protocol):
    """What a query reads of one ceiling (hwprobe.profile.Ceiling is one)."""

    value: float
    metric: str
    clock_mhz: float | None
    datasheet: float | None
    theory_at_max_clock: float | None


class Level(Protocol):
    bandwidth: Ceiling | None


class Ceilings(Protocol):
    """The ceilings the queries take: compute per precision -> unit -> path, and memory levels. A Profile is one;
    naming the protocol here, not the Profile, keeps this module below the profile (which wraps its queries)."""

    compute: dict[str, dict[str, dict[str, Ceiling]]]
    memory: dict[str, Level]


class Described(Protocol):
    device: dict[str, Any]
    environment: dict[str, Any]


class RooflineError(InputError, KeyError):
    """A roofline query that can't be answered: a bad argument, or a ceiling this profile lacks."""

    def __str__(self) -> str:   # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _name(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RooflineError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip().lower().replace("-", "_")


def norm_precision(precision) -> str:
    """'FP16' -> 'fp16', 'fp8_e4m3' -> 'fp8'; unknown names are refused with the list of known ones."""
    p = _name(precision, "precision")
    p = _PRECISION_ALIASES.get(p, p)
    if p not in PROFILE_PRECISIONS:
        raise RooflineError(f"unknown precision {precision!r}; precisions: {', '.join(PROFILE_PRECISIONS)}")
    return p


def norm_unit(unit) -> str | None:
    """None (any unit), 'tensor_core', 'cuda_core' or 'cpu'; 'tensor', 'TC', 'cuda' are accepted spellings."""
    if unit is None:
        return None
    u = _name(unit, "unit")
    u = _UNIT_ALIASES.get(u.replace(" ", "_"), u)
    if u not in UNITS:
        raise RooflineError(f"unknown unit {unit!r}; units: {', '.join(UNITS)} (or None for any)")
    return u


def norm_path(path) -> str:
    p = _name(path, "path")
    if p not in PATHS:
        raise RooflineError(f"unknown path {path!r}; paths: {', '.join(PATHS)}")
    return p


def norm_level(level) -> str:
    lv = _name(level, "level")
    return _LEVEL_ALIASES.get(lv, lv)


def check_intensity(intensity) -> float:
    """Operations per byte: a finite number >= 0 (0 is a layer that does no work)."""
    if isinstance(intensity, bool) or not isinstance(intensity, Real):
        raise RooflineError(f"intensity must be a number of operations per byte, got {intensity!r}")
    x = float(intensity)
    if not math.isfinite(x) or x < 0:
        raise RooflineError(f"intensity must be finite and >= 0 operations per byte, got {intensity!r}")
    return x


@dataclass(frozen=True)
class Roof:
    """The two limits one kernel meets: a compute ceiling and a memory slope, and where they cross."""

    precision: str
    unit: str
    path: str
    peak: float            # op/s
    peak_metric: str
    bandwidth: float       # B/s
    level: str
    clock_mhz: float | None = None

    @property
    def ridge(self) -> float:
        return ridge(self.peak, self.bandwidth)

    def attainable(self, intensity: float) -> float:
        return min(self.peak, check_intensity(intensity) * self.bandwidth)

    def bound(self, intensity: float) -> str:
        return "compute" if check_intensity(intensity) >= self.ridge else "memory"


def is_measured(profile: Described) -> bool:
    """False for a spec-derived profile (expectations from theory, e.g. profiles/jetson/): say so, never call
    its figures measured."""
    return (profile.environment or {}).get("measured") is not False and profile.device.get("measured") is not False


def ridge(peak: float, bandwidth: float) -> float:
    """The ridge point (operations per byte): peak / bandwidth. Both must be positive."""
    if not (peak and peak > 0 and bandwidth and bandwidth > 0):
        raise RooflineError(f"a ridge point needs a positive peak and bandwidth (got {peak!r}, {bandwidth!r})")
    return peak / bandwidth


def _candidates(profile: Ceilings, p: str, unit: str | None, path: str) -> list[tuple[str, str, Ceiling]]:
    out = []
    for u, paths in profile.compute.get(p, {}).items():
        if unit and u != unit:
            continue
        for k, c in paths.items():
            if k.endswith(SPARSE_SUFFIX) or (path != "best" and k != path):
                continue
            out.append((u, k, c))
    return out


def peak_ceiling(profile: Ceilings, precision, unit=None, path="best") -> tuple[str, str, Ceiling]:
    """(unit, path, Ceiling) of the highest dense ceiling matching the arguments; RooflineError if none."""
    p, u, pa = norm_precision(precision), norm_unit(unit), norm_path(path)
    found = _candidates(profile, p, u, pa)
    if not found:
        raise RooflineError(_missing(profile, p, u, pa))
    return max(found, key=lambda t: t[2].value)


def _missing(profile: Ceilings, p: str, u: str | None, path: str) -> str:
    have = sorted(profile.compute)
    if p not in profile.compute:
        return f"this profile has no measured {p} ceiling; it has: {', '.join(have) or 'none'}"
    slots = sorted(f"{uu}/{k}" for uu, paths in profile.compute[p].items() for k in paths
                   if not k.endswith(SPARSE_SUFFIX))
    want = f"{u or 'any unit'}, path {path}"
    return f"this profile has no measured {p} ceiling on {want}; {p} has: {', '.join(slots) or 'none'}"


def peak(profile: Ceilings, precision, unit=None, path="best") -> Ceiling:
    """The measured compute ceiling (dense) for a precision, optionally on one unit and path."""
    return peak_ceiling(profile, precision, unit, path)[2]


def bandwidth(profile: Ceilings, level="dram") -> float:
    """The measured bandwidth (B/s) of a memory level."""
    lv = norm_level(level)
    m = profile.memory.get(lv)
    if m is None or m.bandwidth is None:
        have = sorted(k for k, v in profile.memory.items() if v.bandwidth is not None)
        raise RooflineError(f"this profile has no measured {lv} bandwidth; levels: {', '.join(have) or 'none'}")
    return m.bandwidth.value


def roof(profile: Ceilings, precision, unit=None, path="best", level="dram") -> Roof:
    """The measured roof one kernel meets: the ceiling picked by precision/unit/path and a level's slope."""
    u, k, c = peak_ceiling(profile, precision, unit, path)
    return Roof(norm_precision(precision), u, k, c.value, c.metric, bandwidth(profile, level), norm_level(level),
                c.clock_mhz)


def attainable(profile: Ceilings, intensity, precision, level="dram", unit=None, path="best") -> float:
    """Roofline: min(measured peak, intensity x measured bandwidth), in op/s."""
    x = check_intensity(intensity)
    return roof(profile, precision, unit, path, level).attainable(x)


def ridge_point(profile: Ceilings, precision, level="dram", unit=None, path="best") -> float:
    """Operations per byte at which a kernel stops being memory-bound on the measured roof."""
    return roof(profile, precision, unit, path, level).ridge


def datasheet_roof(profile: Ceilings, precision, unit=None, path="best", level="dram") -> Roof | None:
    """The same slot's datasheet figures stored beside the measurement (theory at max clock where no datasheet
    figure exists); None where the profile carries neither."""
    u, k, c = peak_ceiling(profile, precision, unit, path)
    pk = c.datasheet or c.theory_at_max_clock
    m = profile.memory.get(norm_level(level))
    b = m.bandwidth if m else None
    bw = (b.datasheet or b.theory_at_max_clock) if b else None
    if not pk or not bw:
        return None
    return Roof(norm_precision(precision), u, k, pk, "datasheet" if c.datasheet else "theory at max clock",
                bw, norm_level(level))
