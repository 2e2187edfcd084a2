"""A model on a measured profile: ``analyze(model, profile)`` places each layer on the roofline
(roofline.py: the ceiling it meets, its bound and time; whatif.py: other precisions; placement.py, roofs.py),
adds the calibrated prediction (hwprobe.predict) where the profile holds the calibration curves, and joins the
times of profiler files (timings.py, classify.py, join.py, advice.py); kernelview.py shows a profiler file's
kernels without a model; render.py prints it all. LLMs: hwprobe.analysis.llm.

``model`` is an ONNX file, a layer CSV, a built-in architecture name (see ``hwprobe.models.zoo.ARCHS``) or a
``Model``; ``profile`` a results directory, a profile.json or a loaded ``Profile``. Returns an ``Analysis`` whose
``layers`` is a pandas DataFrame. onnx, pandas and matplotlib load lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hwprobe.errors import InputError
from hwprobe.models import Model, load_model

if TYPE_CHECKING:
    from hwprobe.analysis.roofline import Analysis
    from hwprobe.analysis.roofs import Source


def source(profile=None, spec: str | None = None) -> Source | None:
    """The ceilings: a measured profile (path or Profile), a datasheet entry (``spec``), or None (counts only)."""
    from hwprobe.analysis import roofs

    if profile is not None and spec:
        raise InputError("give --profile or --spec, not both")
    if spec:
        from hwprobe import specs

        return roofs.Datasheet(specs.sku_theory(specs.find(spec)))
    if profile is None:
        return None
    from hwprobe.profile import Profile
    from hwprobe.profile_build import as_profile

    return roofs.Measured(as_profile(profile), "" if isinstance(profile, Profile) else str(profile))


def analyze(model, profile=None, *, spec: str | None = None, precision: str = "fp32", batch: int = 1,
            convention: str = "standard", path: str = "auto", level: str = "dram", times=(),
            runtime: str = "graph", dims: dict[str, int] | None = None, layout: str = "nhwc") -> Analysis:
    """Analyze ``model`` on ``profile``'s measured ceilings (or ``spec``'s datasheet); join ``times`` files."""
    from hwprobe import roofline
    from hwprobe.analysis.roofline import Options
    from hwprobe.analysis.roofline import analyze as run

    opts = Options(roofline.norm_precision(precision), convention.strip().lower(), path.strip().lower(),
                   level.strip().lower())
    m = load_model(model, batch, dims)
    src = source(profile, spec)
    a = run(m, src, opts)
    _predict(a, m, src, runtime, layout)
    if isinstance(times, (str, Path)):
        times = [times]
    if times:
        from hwprobe.analysis.join import join
        from hwprobe.analysis.timings import parse

        if "time_s" not in a.layers:
            raise InputError("joining measured times needs ceilings: give --profile or --spec")
        a.timing = join(a, [parse(t) for t in times])
    return a


def _predict(a: Analysis, model: Model, src, runtime: str, layout: str = "nhwc") -> None:
    """The calibrated prediction beside the roofline bound, where the profile holds the calibration curves."""
    from hwprobe.analysis.roofs import Measured
    from hwprobe.lowering.ops import RUNTIMES
    from hwprobe.predict.calibration import Calibration

    if runtime not in RUNTIMES:
        raise InputError(f"unknown runtime {runtime!r}; runtimes: {', '.join(RUNTIMES)}")
    if not isinstance(src, Measured):
        a.notes.append("no predicted time: a prediction needs a measured profile with the 'predict' suite's "
                       "calibration (the datasheet gives only the roofline bound)")
        return
    cal = Calibration.of(src.profile)
    if cal.empty:
        a.notes.append("no predicted time: this profile has no calibration curves (run `hwprobe run --suite "
                       "predict`); the times shown are the roofline bound")
        return
    from hwprobe.predict.calibration import Uncalibrated
    from hwprobe.predict.estimate import predict_model

    try:
        cal.require_precision(a.options.precision)
    except Uncalibrated as e:        # the roofline analysis stands; no time priced from another precision's points
        a.notes.append(str(e))
        return
    a.prediction = p = predict_model(model, src.profile, a.options.precision, runtime, cal, layout)
    layer_bound = a.totals.get("time_s")
    if layer_bound and p.time_s < layer_bound:     # the two bounds count different work: say which one binds
        p.notes.append(f"below the layer-by-layer roofline bound ({layer_bound * 1e3:.3g} ms): that bound moves every "
                       "layer's tensors through DRAM (an unfused attention's scores, a fused GELU's intermediates); "
                       f"the kernels this runtime launches have their own bound, {p.roofline_s * 1e3:.3g} ms, and the "
                       "prediction is never below it")


__all__ = ["analyze", "load_model", "source"]
