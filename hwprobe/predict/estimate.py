"""A model's predicted time: its kernels (hwprobe.predict.lower) priced by the calibrated predictor, summed, with
the parts (compute, memory, latency, communication), the plain roofline bound beside it, what the calibration
does not cover, and the error measured for this kind of prediction (hwprobe/predict/validation.json, written
from the committed validation runs: tools/validate_models.py on the device)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

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
        """Seconds per part: each kernel's whole time goes to what bounds it (latency: too small to reach a roof)."""
        out = dict.fromkeys(PARTS, 0.0)
        for k in self.kernels:
            out[k.bound if k.bound in out else "latency"] += k.time_s
        out["latency"] += sum(self.overhead.values())
        return out

    @property
    def uncovered(self) -> list[OpTime]:
        return [k for k in self.kernels if not k.covered]

    def expected_error(self) -> dict[str, Any] | None:
        return expected_error(self.runtime, self.layout)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime, "time_s": self.time_s, "roofline_s": self.roofline_s, "parts_s": self.parts(),
            "kernels": len(self.kernels), "uncovered": len(self.uncovered), "notes": self.notes,
            "overhead_s": dict(self.overhead),
            "expected_error": self.expected_error(),
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
    from hwprobe.predict.lower import lower

    pred = Predictor(profile, runtime, cal, layout)
    low = lower(model, precision, runtime)
    times = [pred.time(op) for op in low.kernels]
    notes = list(low.notes)
    power = pred.power_adjust(times, precision)
    if power:
        notes.append(power)
    overhead = pred.run_overhead(low.kernels)
    if "replay" in overhead:
        notes.append(f"graph replay: {overhead['replay'] * 1e6:.1f} us once per forward (the framework's measured "
                     "fixed cost of one replay)")
    if "switches" in overhead:
        notes.append(f"library/framework switches: {overhead['switches'] * 1e6:.1f} us "
                     f"({overhead['switches'] / pred.cal.switch_library_s:.0f} changes between cuBLAS/cuDNN and "
                     f"framework kernels at {pred.cal.switch_library_s * 1e9:.0f} ns each, measured)")
    if runtime == "eager" and pred.host_source == "framework":
        notes.append(f"eager: each kernel waits at least the framework's measured host time per op "
                     f"({pred.host_s * 1e6:.1f} us, gpu.torch_kernels)")
    elif runtime == "eager":
        notes.append(f"eager: each kernel waits at least the measured host issue time ({pred.host_s * 1e6:.1f} us, a "
                     "bare CUDA launch from Python); a framework's own per-op overhead comes on top (not measured "
                     "in this profile: run the calibration where the framework is installed)")
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


def expected_error(runtime: str, layout: str = "nhwc") -> dict[str, Any] | None:
    """The median and worst error measured for ``runtime`` in the committed validation (None if never run); CNNs
    run in NCHW were validated on their own (key ``<runtime>_nchw``)."""
    return _validation().get(runtime if layout == "nhwc" else f"{runtime}_{layout}")


@cache
def _validation() -> dict[str, Any]:
    """hwprobe/predict/validation.json's runtimes, read once per process."""
    try:
        data = json.loads(resources.files("hwprobe.predict").joinpath("validation.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return dict(data.get("runtimes") or {})
