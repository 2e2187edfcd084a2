"""Where an analysis gets its ceilings: a measured profile (with the datasheet figures stored beside each
ceiling), or a datasheet entry alone (``--spec``). Also the Tensor Core alignment rule and its price, read from
the profile's gpu.gemm_align findings: no number here stands in for a measurement."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwprobe import keys as K
from hwprobe import roofline
from hwprobe.roofline import Roof, RooflineError
from hwprobe.vocab import ExecUnit, Path

# Channel multiples Tensor Cores want (002/003: 8 for FP16, 16 for INT8; TF32 4; FP8 16) and 003's INT8 advice.
ALIGN_RULE = {"fp16": 8, "bf16": 8, "tf32": 4, "int8": 16, "fp8": 16}
ALIGN_ADVICE = {"int8": 32}
# What a precision falls back to where the library refuses misaligned sizes outright.
REFUSED_FALLBACK = {"int8": ("int8", ExecUnit.CUDA_CORE), "fp8": ("fp16", ExecUnit.TENSOR_CORE)}


@dataclass(frozen=True)
class Alignment:
    dims: dict[str, int]            # the sizes that break the rule
    rule: int
    factor: float | None            # measured slowdown (x); None: not measured here
    basis: str
    advice_only: bool = False       # the rule is met, 003's stricter INT8 advice (32) is not

    def short(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in self.dims.items())
        price = f"{self.factor:.2f}x" if self.factor else "unpriced"
        return f"{dims} {'advice x' if self.advice_only else 'not x'}{self.rule}: {price}"

    def text(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in self.dims.items())
        if self.advice_only:
            gain = f"measured {self.factor:.2f}x faster there" if self.factor else "gain not measured"
            return (f"{dims} meet the rule but not the source notes' advice to align INT8 to {self.rule} ({gain}; "
                    f"{self.basis})")
        price = f"{self.factor:.2f}x slower" if self.factor else "slowdown not measured"
        return f"{dims} not a multiple of {self.rule}: {price} ({self.basis})"


class Source:
    """Ceilings for an analysis. ``roof`` raises RooflineError where the source lacks the slot."""

    label = ""
    kind = ""
    cpu = False                     # a CPU's ceilings: every layer on the cores, no Tensor Cores

    def roof(self, precision: str, unit: str, path: str, level: str) -> Roof:
        raise NotImplementedError

    def datasheet(self, precision: str, unit: str, path: str, level: str) -> Roof | None:
        raise NotImplementedError

    def alignment(self, precision: str, dims: dict[str, int]) -> Alignment | None:
        return None

    def capacity(self, level: str) -> float | None:
        return None

    def has(self, precision: str, unit: str | None = None) -> bool:
        try:
            self.roof(precision, unit, "best", "dram")
            return True
        except RooflineError:
            return False


class Measured(Source):
    kind = "measured"

    def __init__(self, profile, where: str = "") -> None:
        self.profile = profile
        dev = profile.device or {}
        what = ("measured profile" if roofline.is_measured(profile)
                else "SPEC-DERIVED profile (expectations, not measured)")
        self.label = f"{what} of {dev.get('name') or dev.get('model') or '?'} ({profile.created_utc})"
        self.where = where
        self.cpu = dev.get("kind") == "cpu"

    def roof(self, precision, unit, path, level) -> Roof:
        return roofline.roof(self.profile, precision, unit, path, level)

    def datasheet(self, precision, unit, path, level) -> Roof | None:
        try:
            return roofline.datasheet_roof(self.profile, precision, unit, path, level)
        except RooflineError:
            return None

    def capacity(self, level: str) -> float | None:
        m = self.profile.memory.get(level)
        return m.capacity_bytes if m else None

    def _finding(self, metric: str) -> dict | None:
        return next((f for f in self.profile.findings if f.get("metric") == metric), None)

    def alignment(self, precision: str, dims: dict[str, int]) -> Alignment | None:
        rule = ALIGN_RULE.get(precision)
        if not rule or not dims:
            return None
        bad = {k: v for k, v in dims.items() if v % rule}
        advice = ALIGN_ADVICE.get(precision)
        if not bad and advice:
            off = {k: v for k, v in dims.items() if v % advice}
            if off:
                f, basis = self._point_ratio(precision, _pow2(min(off.values())), advice)
                return Alignment(off, advice, f, basis or "the source notes' advice for INT8", advice_only=True)
        if not bad:
            return None
        a = _pow2(min(bad.values()))
        factor, basis = self._point_ratio(precision, a, rule)
        if factor is None:
            factor, basis = self._odd_price(precision)
        return Alignment(bad, rule, factor, basis)

    def _point_ratio(self, precision: str, align: int, rule: int) -> tuple[float | None, str]:
        """Rate at the rule's alignment over the rate at the layer's alignment, where gpu.gemm_align measured both."""
        f = self._finding(f"align.{precision}.slowdown")
        pts = {p.get("align"): p for p in ((f or {}).get("params") or {}).get(K.POINTS, []) if p.get("rate")}
        ref = next((pts[a]["rate"] for a in sorted(pts) if a >= rule), None)
        mine = pts.get(align)
        if ref and mine and align < rule:
            return ref / mine["rate"], f"gpu.gemm_align: n={mine['n']} (multiple of {align}) vs multiple of {rule}"
        return None, ""

    def _odd_price(self, precision: str) -> tuple[float | None, str]:
        f = self._finding(f"align.{precision}.slowdown")
        if f is None:
            return None, f"no gpu.gemm_align finding for {precision} in this profile"
        if f.get("value"):
            return float(f["value"]), f"gpu.gemm_align: {f.get('text', '').split(';')[0]}"
        fb = REFUSED_FALLBACK.get(precision)
        if fb:
            try:
                mine = self.roof(precision, ExecUnit.TENSOR_CORE, Path.LIBRARY, "dram").peak
                other = self.roof(fb[0], fb[1], "best", "dram")
                return mine / other.peak, (f"the library refuses misaligned {precision.upper()} sizes (gpu.gemm_align);"
                                           f" priced at the measured {fb[0]} {fb[1]} ceiling {other.peak_metric}")
            except RooflineError:
                pass
        return None, f"gpu.gemm_align: {f.get('text', '')}"


def _pow2(n: int) -> int:
    """The largest power of two dividing n (n > 0)."""
    return n & -n if n > 0 else 1


class Datasheet(Source):
    """``--spec NAME``: theory and datasheet figures only (no measurement: no alignment price, no paths)."""

    kind = "datasheet"

    def __init__(self, theory) -> None:
        self.theory = theory
        self.label = f"datasheet {theory.label}"
        self.cpu = theory.kind == "cpu"

    def roof(self, precision, unit, path, level) -> Roof:
        p = roofline.norm_precision(precision)
        units = [roofline.norm_unit(unit)] if unit else [ExecUnit.TENSOR_CORE, ExecUnit.CUDA_CORE, ExecUnit.CPU]
        for u in units:
            t = self.theory.compute(p, u)
            if t is None:
                continue
            pk = t.datasheet or t.at_max_clock
            mem = self.theory.memory(roofline.norm_level(level))
            if mem is None:
                raise RooflineError(f"{self.theory.label}: no {level} bandwidth in the datasheet model")
            bw = mem.datasheet or mem.at_max_clock
            return Roof(p, u, "datasheet", pk, "datasheet" if t.datasheet else "theory at boost clock", bw,
                        roofline.norm_level(level), t.max_clock_mhz)
        raise RooflineError(f"{self.theory.label}: no {p} figure on {unit or 'any unit'} in the datasheet model")

    def datasheet(self, precision, unit, path, level) -> Roof | None:
        try:
            return self.roof(precision, unit, path, level)
        except RooflineError:
            return None


def finite(x: float) -> bool:
    return x is not None and math.isfinite(x)
