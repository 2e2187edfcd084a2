"""The calibration families of 2026-11-28 (seventeenth session, issue 31), found by listing which priced kernels of
the held-out zoo's ONNX graphs lay outside the calibration (no measured kernel list opened): dilated dense 3x3
convolutions (FCN, DeepLab), non-square kernels (Inception's 1x7 / 7x1), NCHW max pooling, permute copies
(ShuffleNet, Swin), 1x1 convolutions of a few input channels (a squeeze-excitation's expansion), and where the
grids put their points. Laws stand in for the GPU's times; each family is priced from its own points and said
outside the calibration where it has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwprobe.calibration import KernelCurve
from hwprobe.lowering.ops import KernelOp
from hwprobe.predict.calibration import ConvTable
from hwprobe.probes.calibration import grids

ROOT = Path(__file__).resolve().parents[1]
NEW_CURVES = ("pool_nchw", "permute", "resize_linear", "resize_linear_nchw")
LAW = lambda m, c, f=1.0: 1e-6 + f * 1e-12 * m * c * c        # noqa: E731


def _dense3(f: float = 1.0, **extra) -> list[dict]:
    return [{"k": 3, "m": m, "cin": c, "cout": c, "images": 1, "layout": "nhwc", "time_s": LAW(m, c, f), **extra}
            for m in (196, 784, 3136) for c in (64, 512)]


def test_dilated_points_have_their_own_grid_and_do_not_enter_the_dense_one():
    pts = _dense3() + _dense3(2.0, dilation=2) + _dense3(4.0, dilation=12)
    table = ConvTable(pts)
    plain = lambda f: ConvTable(_dense3(f)).time(784, 128, 128, 3)[0]          # noqa: E731  the law's own grid
    assert table.time(784, 128, 128, 3)[0] == pytest.approx(plain(1.0))         # undilated: the dense points only
    t2, c2 = table.dilated(784, 128, 128, 2)
    assert c2 and t2 == pytest.approx(plain(2.0))
    t4, c4 = table.dilated(784, 128, 128, 4)                   # between 2 and 12: log time over log dilation
    assert c4 and plain(2.0) < t4 < plain(4.0)
    t36, c36 = table.dilated(784, 128, 128, 36)                # past the measured dilations: the nearest, flagged
    assert not c36 and t36 == pytest.approx(plain(4.0))
    assert ConvTable(_dense3()).dilated(784, 128, 128, 2) is None


def test_nonsquare_points_price_their_own_kernel_only():
    rows = [{"k": kh, "kw": kw, "m": m, "cin": c, "cout": c, "images": 1, "layout": "nhwc",
             "time_s": LAW(m, c, f)} for kh, kw, f in ((1, 7, 0.8), (7, 1, 1.3)) for m in (49, 784) for c in (128, 512)]
    table = ConvTable(_dense3() + rows)
    assert table.nonsquare(289, 192, 192, 1, 7)[1] and table.nonsquare(289, 192, 192, 7, 1)[1]
    assert table.nonsquare(289, 192, 192, 1, 7)[0] < table.nonsquare(289, 192, 192, 7, 1)[0]
    assert table.nonsquare(289, 192, 192, 1, 3) is None and table.kernels() == frozenset({3})


def test_a_1x1_of_few_input_channels_is_no_stem():
    """EfficientNet's squeeze-excitation expansion (4 -> 96 channels on a 1 x 1 map) was priced as the nearest stem
    (a 3-channel image convolution): 10.9 us. It is a tiny GEMM: the 1x1 grid at its fewest input channels."""
    one = [{"k": 1, "m": m, "cin": a, "cout": b, "images": 1, "layout": "nchw", "time_s": 2e-6 + 1e-14 * m * a * b}
           for m in (1, 49, 784) for a in (16, 64) for b in (16, 64, 256)]
    stem = [{"k": 3, "m": m, "cin": 3, "cout": 32, "stride": 2, "images": 1, "layout": "nchw", "time_s": 1e-5}
            for m in (12544, 50176)]
    t, covered = ConvTable(one + stem).time(1, 4, 96, 1, layout="nchw")
    assert not covered and t == pytest.approx(2e-6, rel=0.01)


def _predictor(framework: dict, conv: list[dict]):
    from dataclasses import replace

    from hwprobe.predict.model import Predictor
    from hwprobe.profile_build import load_profile

    base = load_profile(ROOT / "profiles/h200-sxm/2026-11-27-predict-generic")
    sec = base.calibration        # as before these families: the test puts in what it prices
    old_fw = {k: v for k, v in sec.framework.items() if k not in NEW_CURVES}
    old_conv = [p for p in sec.conv.points if not p.get("kw") and not (p.get("dilation", 1) > 1 and not p.get("dw"))]
    base.calibration = replace(sec, framework={**old_fw, **framework},
                               conv=replace(sec.conv, points=old_conv + conv))
    return lambda layout="nchw": Predictor(base, "graph", layout=layout)


def _curve(kind: str, f: float) -> KernelCurve:
    b = [float(2 ** i) for i in range(10, 31, 2)]
    return KernelCurve(kind=kind, bytes=b, time_s=[2e-6 + f * x / 1e12 for x in b])


def test_nchw_pooling_and_permute_copies_use_their_own_curves_where_the_profile_has_them():
    pool = KernelOp("p", "pool", bytes=64e6)
    perm = KernelOp("t", "permute", bytes=64e6)
    old = _predictor({}, [])()
    assert "no NCHW pool curve" in old.time(pool).note and not old.time(pool).covered
    assert "no permute curve: the cat curve" in old.time(perm).note and not old.time(perm).covered
    new = _predictor({"pool_nchw": _curve("pool_nchw", 3.0), "permute": _curve("permute", 2.0)}, [])()
    tp, tt = new.time(pool), new.time(perm)
    assert tp.covered and tp.source == "framework.pool_nchw" and tp.time_s == pytest.approx(2e-6 + 3 * 64e6 / 1e12,
                                                                                             rel=0.05)
    assert tt.covered and tt.source == "framework.permute" and tt.time_s == pytest.approx(2e-6 + 2 * 64e6 / 1e12,
                                                                                           rel=0.05)


def test_the_model_prices_a_dilated_and_a_nonsquare_convolution_from_their_points():
    dil = [dict(p, precision="fp16", layout="nchw") for p in _dense3(3.0, dilation=2) + _dense3(3.0, dilation=12)]
    ns = [{"k": 1, "kw": 7, "m": m, "cin": c, "cout": c, "images": 1, "layout": "nchw", "precision": "fp16",
           "time_s": LAW(m, c, 0.5)} for m in (49, 784) for c in (128, 512)]
    pred = _predictor({}, dil + ns)()
    op = KernelOp("d", "gemm", m=784, n=256, k=256 * 9, conv_kernel=3, conv_images=1, conv_dilation=4,
                  conv_input_bytes=2 * 784 * 256)
    got = pred.time(op)
    assert got.covered and "priced as undilated" not in got.note
    want = ConvTable([p for p in dil if p["dilation"] == 2]).dilated(784, 256, 256, 2, "nchw")[0]
    sw = pred.cal.switch_s                                 # every graph kernel pays the measured switch cost
    assert got.time_s == pytest.approx(max(want + sw, got.roofline_s), rel=0.01)
    op7 = KernelOp("n", "gemm", m=289, n=192, k=192 * 7, conv_taps=7, conv_kw=7, conv_images=1,
                   conv_input_bytes=2 * 289 * 192)
    t7 = pred.time(op7)
    assert t7.covered and "non-square kernel: between" not in t7.note
    want7 = ConvTable(ns).nonsquare(289, 192, 192, 1, 7, "nchw")[0]
    assert t7.time_s == pytest.approx(max(want7 + sw, t7.roofline_s), rel=0.01)
    op71 = KernelOp("n", "gemm", m=289, n=192, k=192 * 7, conv_taps=7, conv_kw=1, conv_images=1,
                    conv_input_bytes=2 * 289 * 192)                                  # 7x1: not measured here
    assert "non-square kernel: between" in pred.time(op71).note and not pred.time(op71).covered


def test_the_grids_hold_the_new_families_and_name_each_point_s_family():
    cases = grids.conv_cases("fp16")
    fams = {f: grids.conv_cases("fp16", families=[f]) for f in grids.CONV_FAMILIES}
    assert sum(len(v) for v in fams.values()) == len(cases)
    assert {c.get("dilation") for c in fams["dilated"]} == set(grids.DILATIONS)
    assert {(c["k"], c["kw"]) for c in fams["nonsquare"]} == set(grids.NONSQUARE)
    assert {c["m"] for c in fams["dense_large"]} == {grids.SIDE_ONE_LARGE ** 2,
                                                      grids.IMAGES_MANY * grids.SIDE_MANY_LARGE ** 2}
    assert {c["cin"] for c in fams["depthwise"]} >= {grids.C_DW_WIDE}
    assert {(c["cin"], c["groups"]) for c in fams["grouped_odd"]} >= {(72, 3)}
    for f, pts in fams.items():
        assert all(grids.conv_family(dict(p)) == f for p in pts), f
    assert grids.conv_family({"k": 9, "cin": 16, "cout": 16, "m": 3, "precision": "fp16"}) is None


def test_a_bilinear_resize_is_its_own_kind_priced_on_its_layout_s_curve(tmp_path):
    """Segmentation heads and U-Nets upsample bilinearly (ONNX Resize mode 'linear'), FPNs by nearest neighbour:
    PyTorch runs other kernels, and the NCHW and channels-last bilinear kernels differ again."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from hwprobe.lowering.layers import lower
    from hwprobe.models import load_model

    kinds = {}
    for mode in ("linear", "nearest"):
        scales = numpy_helper.from_array(np.array([1, 1, 4, 4], np.float32), "sc")
        node = helper.make_node("Resize", ["x", "", "sc"], ["y"], mode=mode)
        g = helper.make_graph([node], "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 32, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)], [scales])
        path = tmp_path / f"{mode}.onnx"
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(path))
        kinds[mode] = [k.kind for k in lower(load_model(path, 2), "fp16", "graph").kernels]
    assert kinds == {"linear": ["resize_linear"], "nearest": ["resize"]}
    op = KernelOp("r", "resize_linear", bytes=64e6)
    old = _predictor({}, [])()
    assert "a bilinear resize, not the nearest-neighbour one" in old.time(op).note
    new = _predictor({"resize_linear_nchw": _curve("resize_linear_nchw", 5.0),
                      "resize_linear": _curve("resize_linear", 1.5)}, [])
    nchw, nhwc = new("nchw").time(op), new("nhwc").time(op)
    assert nchw.covered and nchw.source == "framework.resize_linear_nchw"
    assert nhwc.covered and nhwc.source == "framework.resize_linear" and nhwc.time_s < nchw.time_s


def _graph_kinds(tmp_path, nodes, inits, x_shape, layout):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from hwprobe.lowering.layers import lower
    from hwprobe.models import load_model

    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, x_shape)],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT16, None)], inits)
    path = tmp_path / "g.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return [k.kind for k in lower(load_model(path, x_shape[0]), "fp16", "graph", layout).kernels]


def test_a_silu_is_one_kernel_and_a_squeeze_excitation_gate_two(tmp_path):
    """torch.nn.SiLU exports as Sigmoid(x) -> Mul(x, .): one PyTorch kernel. A squeeze-excitation's gate multiplies
    the map by the sigmoid of something else: two."""
    from onnx import helper

    silu = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["z"])]
    assert _graph_kinds(tmp_path, silu, [], [1, 64, 8, 8], "nchw") == ["elementwise"]
    se = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3]), helper.make_node("Sigmoid", ["m"], ["s"]),
          helper.make_node("Mul", ["x", "s"], ["z"])]
    assert len(_graph_kinds(tmp_path, se, [], [1, 64, 8, 8], "nchw")) == 3


def test_a_channel_shuffle_in_channels_last_leaves_nchw_order_the_next_convolution_converts(tmp_path):
    """ShuffleNet run channels-last: x.view(b, 2, c/2, h, w).transpose(1, 2).contiguous() transposes the
    channels-last map into NCHW order (a plain tensor), and the next convolution converts it back (cuDNN runs
    channels-last when the weight is): two copies of the map where NCHW has one permute copy."""
    import numpy as np
    from onnx import helper, numpy_helper

    inits = [numpy_helper.from_array(np.array([1, 2, 32, 8, 8], np.int64), "s1"),
             numpy_helper.from_array(np.array([1, 64, 8, 8], np.int64), "s2"),
             numpy_helper.from_array(np.zeros((64, 64, 1, 1), np.float16), "w")]
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "s1"], ["a"]),
             helper.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["b", "s2"], ["c"]), helper.make_node("Relu", ["c"], ["d"]),
             helper.make_node("Conv", ["d", "w"], ["z"])]
    nhwc = _graph_kinds(tmp_path, nodes, inits, [1, 64, 8, 8], "nhwc")
    nchw = _graph_kinds(tmp_path, nodes, inits, [1, 64, 8, 8], "nchw")
    assert nhwc == ["elementwise", "relayout", "elementwise", "relayout", "gemm"]
    assert nchw == ["elementwise", "permute", "elementwise", "gemm"]
    pred = _predictor({"permute": _curve("permute", 2.0)}, [])("nhwc")
    t = pred.time(KernelOp("c.to_channels_last", "relayout", bytes=8e6))
    assert not t.covered and t.source == "framework.permute" and "between NCHW and channels-last" in t.note
