"""A model's predicted time: its kernels (hwprobe.lowering.layers) priced by the calibrated predictor, summed, with
the parts (compute, memory, latency, communication), the roofline bound beside it, what the calibration does not
cover, and the error measured for this kind of prediction on held-out models (hwprobe.predict.errorbar)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hwprobe.predict.errorbar import ErrorBar, error_bar, family
from hwprobe.predict.model import Predictor
from hwprobe.predict.ops import OpTime

PARTS = ("compute", "memory", "latency", "comm")


@dataclass
class Prediction:
    runtime: str
    kernels: list[OpTime]
    notes: list[str] = field(default_factory=list)
    overhead: dict[str, float] = field(default_factory=dict)   # per pass, not per kernel (Predictor.run_overhead)
    layout: str = "nhwc"          # the layout a convolutional model was priced in (its validation differs)

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels) + sum(self.overhead.values())

    @property
    def roofline_s(self) -> float:
        return sum(k.roofline_s for k in self.kernels)

    def parts(self) -> dict[str, float]:
        """Seconds per part: each kernel's whole time goes to what bounds it (latency: held by its fixed cost)."""
        out = dict.fromkeys(PARTS, 0.0)
        for k in self.kernels:
            out[k.bound if k.bound in out else "latency"] += k.time_s
        out["latency"] += sum(self.overhead.values())
        return out

    @property
    def uncovered(self) -> list[OpTime]:
        return [k for k in self.kernels if not k.covered]

    @property
    def uncovered_share(self) -> float:
        """The share of the kernels' time priced outside the calibration (extrapolated shapes, stand-in curves)."""
        total = sum(k.time_s for k in self.kernels)
        return sum(k.time_s for k in self.uncovered) / total if total else 0.0

    @property
    def family(self) -> str:
        return family(self.kernels)

    def expected_error(self) -> ErrorBar:
        return error_bar(self.runtime, self.layout, self.family, self.uncovered_share)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime, "time_s": self.time_s, "roofline_s": self.roofline_s, "parts_s": self.parts(),
            "kernels": len(self.kernels), "uncovered": len(self.uncovered), "notes": self.notes,
            "overhead_s": dict(self.overhead),
            "family": self.family, "uncovered_share": self.uncovered_share,
            "expected_error": self.expected_error().to_dict(),
            "per_kernel": [{"name": k.op.name, "kind": k.op.kind, "precision": k.op.precision, "m": k.op.m,
                            "n": k.op.n, "k": k.op.k, "batch": k.op.batch, "bytes": k.op.bytes,
                            "flops": k.op.total_flops, "time_s": k.time_s, "roofline_s": k.roofline_s,
                            "bound": k.bound, "covered": k.covered, "source": k.source, "note": k.note,
                            "layers": list(k.op.layers)} for k in self.kernels],
        }


def predict_model(model, profile, precision: str, runtime: str = "graph", cal=None,
                  layout: str = "nhwc") -> Prediction:
    """Lower ``model`` (a hwprobe.models.Model) and price every kernel on ``profile``'s calibration (``layout``: the
    memory layout the framework runs a convolutional model in)."""
    from hwprobe.lowering.layers import lower

    pred = Predictor(profile, runtime, cal, layout)
    low = lower(model, precision, runtime, layout)
    times = [pred.time(op) for op in low.kernels]
    notes = list(low.notes)
    power = pred.power_note(times, precision)
    if power:
        notes.append(power)
    overhead = pred.run_overhead(low.kernels, times)
    if "replay" in overhead:
        notes.append(f"graph replay: {overhead['replay'] * 1e6:.1f} us once per forward (the framework's measured "
                     "fixed cost of one replay)")
    if "switches" in overhead:
        notes.append(f"library/framework switches: {overhead['switches'] * 1e6:.1f} us "
                     f"({overhead['switches'] / pred.cal.switch_library_s:.0f} changes between cuBLAS/cuDNN and "
                     f"framework kernels at {pred.cal.switch_library_s * 1e9:.0f} ns each, measured)")
    if runtime == "eager":
        notes.append(pred.eager_note(overhead.get("host_wait", 0.0), len(times)))
    p = Prediction(runtime, times, notes, overhead, layout)
    held = [t for t in times if t.extra.get("held_at_floor_s")]
    if held:
        notes.append(f"{len(held)} kernels priced below their roofline bound were held at it (+"
                     f"{sum(t.extra['held_at_floor_s'] for t in held) * 1e6:.1f} us): their curves were stretched "
                     "past what they measured; the prediction is never below its floor")
    unc = p.uncovered
    if unc:
        share = sum(t.time_s for t in unc) / max(sum(t.time_s for t in times), 1e-30)
        notes.append(f"{len(unc)} kernels ({share:.0%} of the time) lie outside the calibrated shapes (priced by "
                     "extrapolation): " + ", ".join(sorted({t.op.name for t in unc})[:5]))
    return p

