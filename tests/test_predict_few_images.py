"""Two calibration axes of 2026-11-28 (eighteenth session, issue 31), found on synthetic layers of the two held-out
misses' shapes (no model run, no kernel list): depthwise convolutions at a few images (cuDNN's time follows images x
side, not pixels alone) and PyTorch's NCHW bilinear kernel (a thread per output pixel, looping over every plane).
Laws stand in for the GPU's times."""

from __future__ import annotations

import numpy as np
import pytest

from hwprobe.calibration import KernelCurve
from hwprobe.lowering.ops import KernelOp
from hwprobe.predict.calibration import ConvTable, MemCurve
from hwprobe.probes.calibration import grids
from tests.test_predict_grid_families import _curve, _predictor


def _law(images: int, side: int, c: int) -> float:
    """A depthwise law where a side of 7 runs 3x faster per pixel than larger sides (taps past a small map's border)."""
    return 1e-6 + 1e-11 * images * side * side * c * (1 / 3 if side <= 7 else 1.0)


def _dw(counts) -> list[dict]:
    sides = {1: (7, 28, 112), grids.IMAGES_FEW: grids.SIDES_FEW, grids.IMAGES_MANY: (7, 28, 80)}
    return [{"k": 5, "cin": c, "cout": c, "groups": c, "dw": True, "m": n * s * s, "images": n, "stride": 1,
             "dilation": 2, "layout": "nhwc", "time_s": _law(n, s, c)} for n in counts for s in sides[n]
            for c in (128, 1024)]


def test_a_few_images_are_priced_between_the_image_counts_either_side_at_their_pixels_per_image():
    few = ConvTable(_dw((1, grids.IMAGES_FEW, grids.IMAGES_MANY)))
    old = ConvTable(_dw((1, grids.IMAGES_MANY)))
    # 8 images of 14 x 14 hold the pixels of 32 of 7 x 7: without 8-image points, priced as those (the miss)
    t_old, _ = old.dw_time(8 * 196, 1024, 5, 1, "nhwc", 8, 2)
    assert t_old == pytest.approx(_law(32, 7, 1024), rel=1e-6)
    t, covered = few.dw_time(8 * 196, 1024, 5, 1, "nhwc", 8, 2)
    assert covered and t == pytest.approx(_law(8, 14, 1024), rel=1e-6)
    # 16 images: log time over log images between 8 and 32, each read at 14 x 14 per image
    t16, _ = few.dw_time(16 * 196, 1024, 5, 1, "nhwc", 16, 2)
    a, b = (32 * 49, _law(32, 7, 1024)), (32 * 784, _law(32, 28, 1024))     # the 32-image points either side
    hi = float(np.exp(np.interp(np.log(32 * 196), np.log([a[0], b[0]]), np.log([a[1], b[1]]))))
    lo = _law(8, 14, 1024)
    assert t16 == pytest.approx(np.sqrt(lo * hi), rel=1e-6) and lo < t16 < hi
    # one image and many: as before (the few-image points stay out of the many-image grid)
    assert few.dw_time(784, 1024, 5, 1, "nhwc", 1, 2) == old.dw_time(784, 1024, 5, 1, "nhwc", 1, 2)
    assert few.dw_time(64 * 784, 1024, 5, 1, "nhwc", 64, 2) == old.dw_time(64 * 784, 1024, 5, 1, "nhwc", 64, 2)
    assert few.dw_time(784, 1024, 3, 1, "nhwc", 8, 2) is None                  # no 3x3 points
    # past the few-image points' maps (8 images of 256 x 256: a detector's) the GPU is full: total pixels, as before
    big = 8 * 256 * 256
    assert few.dw_time(big, 1024, 5, 1, "nhwc", 8, 2) == old.dw_time(big, 1024, 5, 1, "nhwc", 8, 2)


def _bilinear_curve() -> KernelCurve:
    """Bytes curve of a 4x upsampling (fast per byte) and a grid where the kernel loops over planes per output pixel:
    each thread's loop sets the time until the output pixels fill the GPU (here 4096)."""
    b = [float(2 ** i) for i in range(13, 31)]
    grid = [{"pixels": s * s, "planes": n, "source": (s // 2) ** 2, "time_s": 2e-6 + 5e-8 * n * max(1.0, s * s / 4096)}
            for s in (7, 14, 28, 56) for n in (32, 256, 2048)]
    grid += [{"pixels": s * s, "planes": n, "source": 1, "time_s": 2e-6 + 1e-8 * n}
             for s in (7, 56) for n in (32, 2048)]
    return KernelCurve(kind="resize_linear_nchw", bytes=b, time_s=[2e-6 + x / 5e11 for x in b], grid=grid)


def test_nchw_bilinear_reads_its_grid_over_output_pixels_and_planes():
    curve = MemCurve.of(_bilinear_curve())
    t, covered = curve.grid_time(196, 2048)
    assert covered and t == pytest.approx(2e-6 + 5e-8 * 2048, rel=1e-6)
    assert curve.grid_time(196, 2048)[0] > 20 * curve.time(2 * 2048 * (196 + 49))    # far above its bytes
    assert MemCurve.of(KernelCurve(kind="x", bytes=[1.0, 2.0], time_s=[1.0, 2.0])).grid_time(196, 2048) is None
    # from a 1 x 1 map (a pooled context broadcast back) its own points: one element feeds all four taps
    t1, c1 = curve.grid_time(196, 2048, 1)
    assert c1 and t1 == pytest.approx(2e-6 + 1e-8 * 2048, rel=1e-6)
    assert curve.grid_time(196, 2048, 49)[0] == t                     # from a map: the 2x points


def test_the_lowering_gives_a_bilinear_resize_its_output_pixels_and_planes(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from hwprobe.lowering.layers import lower
    from hwprobe.models import load_model

    sizes = numpy_helper.from_array(np.array([8, 256, 14, 14], np.int64), "sz")
    node = helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear")
    g = helper.make_graph([node], "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [8, 256, 1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)], [sizes])
    path = tmp_path / "r.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    (op,) = lower(load_model(path, 8), "fp16", "graph").kernels
    assert (op.kind, op.m, op.n, op.k) == ("resize_linear", 196, 2048, 1)


def test_the_predictor_prices_an_nchw_bilinear_resize_from_the_grid_and_channels_last_from_bytes():
    op = KernelOp("r", "resize_linear", m=196, n=2048, bytes=2.0 * 2048 * 197)
    new = _predictor({"resize_linear_nchw": _bilinear_curve(), "resize_linear": _curve("resize_linear", 1.5)}, [])
    nchw, nhwc = new("nchw").time(op), new("nhwc").time(op)
    assert nchw.covered and nchw.source == "framework.resize_linear_nchw"
    assert nchw.time_s > 20 * nhwc.time_s                   # the channels-last kernel runs over every output element
    flat = KernelOp("r", "resize_linear", bytes=2.0 * 2048 * 197)      # no pixels or planes: the bytes curve
    assert new("nchw").time(flat).time_s < nchw.time_s / 20
