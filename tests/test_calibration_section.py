"""The prediction's calibration as a typed profile section (profile schema v3, issue 34): the curves are named in one
place, a run files them out of the findings, v2 profiles lift theirs whole on load, and predictions from them are
the ones the findings gave."""

from __future__ import annotations

import pytest

from hwprobe import calibration as C
from hwprobe.vocab import Curve


# --- names ---------------------------------------------------------------------------------------------------
def test_every_curve_has_one_metric_and_reads_back_from_it():
    keys = {c: "fp16" if c in C.KEYED else "" for c in Curve}
    assert len({C.metric(c, k) for c, k in keys.items()}) == len(Curve)
    assert all(C.parse(C.metric(c, k)) == (c, k) for c, k in keys.items())
    assert C.metric(Curve.FRAMEWORK, "norm") == "predict.torch.norm"          # the names v2 profiles filed
    assert C.metric(Curve.LAUNCH_REPLAY) == "predict.launch.graph_replay_s"
    assert C.curve_id(Curve.MEMORY, "norm") == "memory.norm"                  # as pruned_grid.json names it
    for other in (C.point_metric(C.metric(Curve.GEMM, "fp16"), m=1, n=16, k=16),     # single points
                  C.point_metric(C.metric(Curve.CONV), "fp16", k=1, cin=64),
                  C.family(Curve.FRAMEWORK), "predict.gemm.", "fp16.tensor_core.cublas.power_data"):
        assert C.parse(other) is None, other
    assert C.point_metric(C.metric(Curve.MEMORY, "norm"), b=8192) == "predict.memory.norm.b8192"
    with pytest.raises(ValueError):
        C.metric(Curve.FRAMEWORK, "conv")          # would read back as the convolution table
    with pytest.raises(ValueError):
        C.metric(Curve.GEMM)                       # a GEMM grid is per precision
