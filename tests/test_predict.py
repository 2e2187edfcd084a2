"""The prediction model (hwprobe.predict): interpolation against analytic oracles, the lowering against the kernel
counts PyTorch's profiler measured on the device for the same exported models, and the whole prediction against
the measured times committed in the validation runs (tests/refs.py: H200_VALIDATION_COLD, H200_VALIDATION). The
exports are tests/onnx_fixtures.py's stand-ins for the ones those runs kept before the pruning."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from hwprobe.calibration import CalibrationSection, GemmGrid, KernelCurve
from hwprobe.lowering.ops import KernelOp
from hwprobe.predict.calibration import ConvTable, GemmTable, MemCurve, SdpaTable
from hwprobe.predict.ops import OpTime
from tests import refs

VALID = refs.H200_VALIDATION_COLD
PREDICT = refs.H200_PREDICT_COLD


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory) -> Path:
    pytest.importorskip("onnx")
    from tests.onnx_fixtures import cnn_exports

    return cnn_exports(tmp_path_factory.mktemp("onnx"))


def _power_law(m, n, k):
    return 1e-6 * m ** 0.5 * n ** 0.7 * k ** 0.3


def _table() -> GemmTable:
    ms, ns = [1, 4, 16, 64, 256], [64, 256, 1024]
    t = [[[_power_law(m, n, k) for k in ns] for n in ns] for m in ms]
    return GemmTable.from_finding({"precision": "fp16", "m": ms, "n": ns, "k": ns, "time_s": t})


def test_gemm_table_is_exact_for_a_power_law_between_grid_points():
    tab = _table()
    for m, n, k in ((3, 100, 700), (37, 64, 1000), (200, 900, 80)):
        assert tab.time(m, n, k) == pytest.approx(_power_law(m, n, k), rel=1e-9)
        assert tab.covers(m, n, k)


def test_gemm_table_scales_linearly_past_the_grid_and_holds_below_it():
    tab = _table()
    assert tab.time(512, 1024, 1024) == pytest.approx(2 * _power_law(256, 1024, 1024), rel=1e-9)
    assert not tab.covers(512, 1024, 1024)
    assert tab.time(1, 16, 64) == pytest.approx(_power_law(1, 64, 64), rel=1e-9)   # held at the smallest N


def test_gemm_table_fills_a_failed_point_from_its_neighbours():
    ms, ns = [1, 4, 16], [64, 256]
    t = [[[_power_law(m, n, k) for k in ns] for n in ns] for m in ms]
    t[1][1][1] = None
    tab = GemmTable.from_finding({"precision": "fp16", "m": ms, "n": ns, "k": ns, "time_s": t})
    assert np.isfinite(tab.log_t).all()
    assert tab.time(4, 256, 256) == pytest.approx(_power_law(4, 256, 256), rel=0.5)


def test_memory_curve_log_log_inside_and_linear_beyond():
    c = MemCurve.from_finding({"kind": "elementwise", "bytes": [1e3, 1e6, 1e9], "time_s": [1e-6, 1e-5, 1e-3]})
    assert c.time(1e3) == pytest.approx(1e-6)
    assert c.time(10 ** 4.5) == pytest.approx(10 ** -5.5, rel=1e-9)       # halfway in log space
    assert c.time(2e9) == pytest.approx(2e-3)
    assert c.time(10) == pytest.approx(1e-6)                                # the floor


def test_conv_and_sdpa_tables_interpolate_power_laws():
    law = lambda m, a, b: 1e-7 * m ** 0.8 * a ** 0.5 * b ** 0.6
    pts = [{"k": 1, "m": m, "cin": a, "cout": b, "time_s": law(m, a, b)}
           for m in (49, 3136, 200704) for a in (64, 512) for b in (64, 2048)]
    t, covered = ConvTable(pts).time(1000, 128, 300, 1)
    assert covered and t == pytest.approx(law(1000, 128, 300), rel=1e-9)
    assert ConvTable(pts).time(1000, 128, 300, 3) is None                   # no 3x3 measured
    slaw = lambda bh, s: 1e-8 * bh * s ** 1.7
    spts = [{"bh": bh, "seq": s, "dim": 64, "causal": False, "time_s": slaw(bh, s)}
            for bh in (12, 96, 384) for s in (128, 512, 2048)]
    t, covered = SdpaTable(spts).time(50, 300, 64, False)
    assert covered and t == pytest.approx(slaw(50, 300), rel=1e-9)
    assert SdpaTable(spts).time(50, 300, 64, False, masked=True) is None    # no masked call measured
    masked = [{**p, "masked": True, "time_s": 2 * p["time_s"]} for p in spts]
    both = SdpaTable(spts + masked)
    assert both.time(50, 300, 64, False)[0] == pytest.approx(slaw(50, 300), rel=1e-9)         # the two kinds
    assert both.time(50, 300, 64, False, masked=True)[0] == pytest.approx(2 * slaw(50, 300), rel=1e-9)  # apart


def test_kernel_flops_count_a_multiply_add_as_two():
    assert KernelOp("g", "gemm", m=2, n=3, k=4, batch=5).total_flops == 2 * 2 * 3 * 4 * 5
    assert KernelOp("a", "attention", m=8, n=8, k=64, batch=3).total_flops == 4 * 3 * 8 * 8 * 64
    assert KernelOp("a", "attention", m=8, n=8, k=64, batch=3, causal=True).total_flops == 2 * 3 * 8 * 8 * 64
    with pytest.raises(ValueError):
        KernelOp("x", "nonsense")


def _measured_case(model: str, batch: int, variant: str) -> dict:
    d = json.loads(gzip.decompress((VALID / "validate_models.json.gz").read_bytes()))
    return next(c for c in d["cases"] if c["model"] == model and c["batch"] == batch and c.get("variant") == variant)


@pytest.mark.parametrize("model", ["resnet18", "resnet50"])
def test_lowering_launches_the_kernels_pytorch_launched(model, onnx_dir):
    """The lowered kernel count of the exported model equals what PyTorch's profiler counted for the same model
    (BN folded, channels-last) replayed as a CUDA graph on the H200: an oracle from the device, not this code."""
    from hwprobe.lowering.layers import lower
    from hwprobe.models import load_model

    low = lower(load_model(onnx_dir / f"{model}-b1.onnx", 1), "fp16", "graph")
    assert len(low.kernels) == _measured_case(model, 1, "bn_folded_nhwc")["kernels_graph"]["count"]


def test_fused_runtime_folds_pointwise_layers_into_their_producers(onnx_dir):
    from hwprobe.lowering.layers import lower
    from hwprobe.models import load_model

    m = load_model(onnx_dir / "resnet18-b1.onnx", 1)
    graph, fused = lower(m, "fp16", "graph"), lower(m, "fp16", "fused")
    convs = sum(1 for x in m.layers if x.op == "conv")
    assert len(fused.kernels) < len(graph.kernels)
    assert sum(1 for k in fused.kernels if k.kind == "gemm") == sum(1 for k in graph.kernels if k.kind == "gemm")
    assert len(fused.kernels) <= convs + 4                                 # convs, pools, the FC and a flatten


def test_prediction_against_the_measured_h200_run(onnx_dir):
    """ResNet-50 at batch 8 replayed as a CUDA graph on the H200 took what validate_models.json says; the committed
    validation puts every graph prediction within 11% (here: within 15%, and never below the roofline bound)."""
    from hwprobe.models import load_model
    from hwprobe.predict.estimate import predict_model
    from hwprobe.profile_build import load_profile

    measured = _measured_case("resnet50", 8, "bn_folded_nhwc")["cuda_graph"]["median_ms"] * 1e-3
    p = predict_model(load_model(onnx_dir / "resnet50-b8.onnx", 8), load_profile(PREDICT), "fp16", "graph")
    assert abs(p.time_s / measured - 1) < 0.15, (p.time_s, measured)
    assert p.time_s >= p.roofline_s
    assert sum(p.parts().values()) == pytest.approx(p.time_s)
    err = p.expected_error()          # the held-out zoo's channels-last CNN graph cases, both GPUs; not the seen ones
    assert err.measured and err.held_out.cases >= 40 and err.seen.cases >= 10
    assert "H200" in err.held_out.where and "H100" in err.held_out.where


def test_nchw_prediction_against_the_measured_h200_run(onnx_dir):
    """ResNet-50 and MobileNetV2 at batch 64 in PyTorch's default NCHW layout, timed on the H200 (the conv lease):
    priced from that lease's NCHW and depthwise points, within 10%; priced from the channels-last table of a profile
    without them (the cold lease), 19-30% low and flagged outside the calibration."""
    from hwprobe.models import load_model
    from hwprobe.predict.estimate import predict_model
    from hwprobe.profile_build import load_profile

    conv = refs.H200_VALIDATION
    cases = json.loads(gzip.decompress((conv / "validate_models.json.gz").read_bytes()))["cases"]
    for name in ("resnet50", "mobilenet_v2"):
        case = next(c for c in cases if (c["model"], c["variant"], c["batch"]) == (name, "bn_folded", 64))
        measured = case["cuda_graph"]["median_ms"] * 1e-3
        model = load_model(onnx_dir / f"{name}-b64.onnx", 64)
        p = predict_model(model, load_profile(refs.H200_PREDICT), "fp16", "graph", layout="nchw")
        assert abs(p.time_s / measured - 1) < 0.10, (name, p.time_s, measured)
        err = p.expected_error()                                           # the NCHW cases, not the nhwc ones
        assert err.layout == "nchw" and err.family == "cnn" and err.seen.cases >= 14
        old = predict_model(model, load_profile(PREDICT), "fp16", "graph", layout="nchw")
        assert old.time_s < 0.85 * measured and any("no NCHW points" in k.note for k in old.kernels)


class _Ceiling:
    def __init__(self, value, sustained):
        self.value, self.sustained = value, sustained


class _Profile:
    def __init__(self):
        ax = [64, 1024, 16384]
        grid = [[[1e-6 + 2 * m * n * k / 5e14 for k in ax] for n in ax] for m in ax]     # 500 TFLOP/s at size
        self.calibration = CalibrationSection(
            memory={"elementwise": KernelCurve(kind="elementwise", bytes=[1e3, 1e9], time_s=[1e-6, 1e-3])},
            gemm={"fp16": GemmGrid(precision="fp16", m=ax, n=ax, k=ax, time_s=grid)})

    def peak(self, precision, unit=None, path="best"):
        return _Ceiling(800e12, 600e12)

    def bandwidth(self, level="dram"):
        return 4e12


def test_the_power_cap_is_said_with_its_bound_and_not_applied():
    from hwprobe.predict.model import Predictor

    pred = Predictor(_Profile(), "graph")
    op = KernelOp("g", "gemm", m=1, n=1, k=1)
    comp, mem = OpTime(op, 3.0, compute_s=2.0, bound="compute"), OpTime(op, 1.0, bound="memory")
    slow = OpTime(op, 4.0, compute_s=1.0, bound="compute")      # bound by FLOPs, but at a quarter of its roof
    note = pred.power_note([comp, mem, slow], "fp16")
    f = 1 + 0.375 * (800 / 600 - 1)                            # 3 s of the 8 s run are at their compute roof
    assert (comp.time_s, mem.time_s, slow.time_s) == (3.0, 1.0, 4.0)
    assert note.startswith("power cap: not applied") and f"x{f:.3f}" in note and "38% of the run" in note


def test_a_profile_without_calibration_gets_no_prediction_but_says_why():
    from hwprobe.analysis import analyze

    a = analyze("resnet18", refs.H200_DEFAULT, precision="fp16")          # the full suite now holds the calibration
    assert a.prediction is None
    assert any("no predicted time" in n for n in a.notes)


def test_analyze_on_a_predict_suite_profile_prints_the_prediction(onnx_dir):
    """The 'predict' suite's profile has no CUDA-core probes: pointwise layers get a stand-in ceiling (said so),
    and the calibrated prediction is printed beside the roofline bound (exit 0, not a missing-ceiling error)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "hwprobe", "analyze", str(onnx_dir / "resnet18-b1.onnx"),
                        "--profile", str(PREDICT), "-p", "fp16"], capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "predicted time (replayed as a CUDA graph)" in r.stdout and "68 kernels" in r.stdout
    assert "roofline bound" in r.stdout


def test_llm_pricing_keeps_the_calibrated_times_under_the_power_cap():
    """hwprobe.analysis.llm's pricing leaves a compute-bound pass at its calibrated times (the power cap is a note,
    hwprobe.predict.model.Predictor.power_note); identical kernels share one price."""
    from hwprobe.analysis.llm.report import _price, phase_dict, price
    from hwprobe.predict.model import Predictor

    pred = Predictor(_Profile(), "graph")
    ops = [KernelOp("a", "gemm", "fp16", m=8192, n=8192, k=8192), KernelOp("b", "gemm", "fp16", m=8192, n=8192,
                                                                          k=8192)]
    priced = _price(ops, pred)
    t0 = pred.time(ops[0])
    assert t0.bound == "compute"
    assert priced[0].t.time_s == pytest.approx(t0.time_s, rel=1e-12)
    assert priced[0].t is priced[1].t
    res = price("prefill", 1, 8192, 8192, ops, pred)               # the pass says the bound beside its time
    assert res.time_s == pytest.approx(2 * t0.time_s, rel=1e-6)
    assert res.power_note.startswith("power cap: not applied") and "x1.333" in res.power_note
    assert phase_dict(res)["power_note"] == res.power_note


def test_a_point_past_the_sweep_cap_is_extrapolated_along_its_power_law():
    """A sweep skips its largest shapes (a MAC cap); the hole at the grid's corner continues the log-log trend of
    its measured neighbours. Averaging them (the old fill) put cuBLASLt's 32768 x 16384 x 16384 at 2962 TFLOP/s,
    three times the H200's FP16 peak."""
    ms, ns = [1, 4, 16, 64], [64, 256, 1024]
    t = [[[_power_law(m, n, k) for k in ns] for n in ns] for m in ms]
    t[3][2][2] = t[3][2][1] = None
    tab = GemmTable.from_finding({"precision": "fp16", "m": ms, "n": ns, "k": ns, "time_s": t})
    assert tab.time(64, 1024, 1024) == pytest.approx(_power_law(64, 1024, 1024), rel=1e-9)
    assert tab.time(64, 1024, 256) == pytest.approx(_power_law(64, 1024, 256), rel=1e-9)


def test_no_gemm_is_priced_faster_than_the_library_ceiling():
    from hwprobe.predict.model import Predictor

    prof = _Profile()
    ax = [64, 128, 256]
    prof.calibration.gemm["fp16"] = GemmGrid(precision="fp16", m=ax, n=ax, k=ax,
                                             time_s=[[[1e-9 for _ in ax] for _ in ax] for _ in ax])   # absurdly fast
    t = Predictor(prof, "graph").time(KernelOp("g", "gemm", m=256, n=256, k=256))
    assert t.time_s >= 2 * 256 ** 3 / 800e12 and not t.covered


def test_a_kernel_priced_below_its_roofline_bound_is_held_at_it_and_said_so():
    """A memory curve measured faster than the DRAM slope (here 1 GB in 1 us) must not price a kernel that
    cannot fit in L2 below its bytes at the measured DRAM bandwidth; one that fits in L2 has no DRAM term."""
    from hwprobe.predict.model import Predictor

    prof = _Profile()
    prof.calibration.memory["elementwise"] = KernelCurve(kind="elementwise", bytes=[1e3, 1e9], time_s=[1e-7, 1e-6])
    prof.device = {"l2_bytes": 50e6}
    prof.bandwidth = lambda level="dram": 4e12 if level == "dram" else None     # no L2 slope measured
    pred = Predictor(prof, "graph")
    big = pred.time(KernelOp("add", "elementwise", bytes=4e8))
    assert big.time_s == pytest.approx(4e8 / 4e12) and big.roofline_s == pytest.approx(4e8 / 4e12)
    assert big.extra["held_at_floor_s"] > 0 and "held at the bound" in big.note
    small = pred.time(KernelOp("add", "elementwise", bytes=1e7))          # L2-sized: no DRAM floor, no L2 slope
    assert "held_at_floor_s" not in small.extra and small.time_s < 1e7 / 4e12



def test_a_prediction_under_the_layer_by_layer_bound_says_why_it_may_be():
    """BERT-base b32's fused attention moves less than its ONNX layers do: the prediction (2.2 ms, measured 2.0 ms)
    sits under the layer view's 3.0 ms 'roofline bound' and over its own kernels' bound, and says so."""
    pytest.importorskip("onnx")
    from hwprobe.analysis import analyze

    a = analyze(VALID / "onnx" / "bert_base-b32-dynamo.onnx", refs.H200_PREDICT,
                precision="fp16", batch=32)
    p = a.prediction
    assert p.roofline_s <= p.time_s < a.totals["time_s"]
    assert any(n.startswith("below the layer-by-layer roofline bound") for n in p.notes)


# ---- issue 35 (mutation run on the merged code): prices on a hand calibration, each by its rule
#
# A GEMM table that is one power law (2 m n k at 50 TFLOP/s: exact between its two grid points on each axis), the
# lean memory curves at 1 TB/s (elementwise) and 0.1 TB/s (unary, which a copy uses), a library ceiling of
# 400 TFLOP/s (300 sustained), 2 TB/s DRAM, 8 TB/s L2 of 40 MB, 100 SMs.

HAND_RATE, HAND_DRAM, HAND_L2 = 50e12, 2e12, 8e12


def _hand_table(precision, rate=HAND_RATE):
    ax = [1, 16384]
    t = [[[2.0 * m * n * k / rate for k in ax] for n in ax] for m in ax]
    return GemmTable.from_finding({"precision": precision, "m": ax, "n": ax, "k": ax, "time_s": t})


def _curve(kind, bps):
    return MemCurve(kind, np.array([1e3, 1e10]), np.array([1e3 / bps, 1e10 / bps]))


class _HandProfile:
    def __init__(self, dram=HAND_DRAM, sms=100, peaks=True, collectives=None):
        self.device = {"l2_bytes": 40e6, **({"sms": sms} if sms else {})}
        self._dram, self._peaks = dram, peaks
        if collectives is not None:
            self.collective_time = collectives

    def peak(self, precision, unit=None, path="best"):
        from hwprobe.vocab import ExecUnit, Path
        if not self._peaks:
            return None
        if unit == ExecUnit.TENSOR_CORE and path == Path.LIBRARY:
            return {"fp16": _Ceiling(400e12, 300e12), "fp32": _Ceiling(20e12, 20e12)}.get(precision)
        return _Ceiling(900e12, None)                          # the best ceiling, off the library path

    def bandwidth(self, level="dram"):
        return {"dram": self._dram, "l2": HAND_L2 if self._dram else None}.get(level)


def _hand(runtime="graph", profile=None, **cal):
    from hwprobe.predict.calibration import Calibration
    from hwprobe.predict.model import Predictor

    c = Calibration(gemm={"fp16": _hand_table("fp16"), "fp32": _hand_table("fp32", 10e12)},
                    memory={"elementwise": _curve("elementwise", 1e12), "unary": _curve("unary", 0.1e12)},
                    launch={"graph_node_s": 2e-6, "host_issue_s": 5e-6})
    for k, v in cal.items():
        setattr(c, k, v)
    return Predictor(profile or _HandProfile(), runtime, cal=c)


def test_a_gemm_by_hand_in_each_precision():
    for prec, it, rate, peak in (("fp16", 2, HAND_RATE, 400e12), ("fp32", 4, 10e12, 20e12)):
        t = _hand().time(KernelOp("g", "gemm", prec, m=1024, n=1024, k=1024))
        assert t.time_s == pytest.approx(2 * 1024 ** 3 / rate, rel=1e-9)
        assert t.compute_s == pytest.approx(2 * 1024 ** 3 / peak, rel=1e-12)         # the library ceiling
        assert t.memory_s == pytest.approx(it * 3 * 1024 ** 2 / HAND_DRAM, rel=1e-12)
        assert (t.bound, t.source, t.covered, t.launch_s) == ("compute", "gemm", True, 2e-6)


def test_an_outer_product_without_gemm_points_moves_like_an_elementwise_kernel():
    """K = 1 at TF32 (no TF32 GEMM points): its bytes (4 x batch x (m n + m + n)) on the elementwise curve."""
    t = _hand().time(KernelOp("rope", "gemm", "tf32", m=4096, n=64, k=1, batch=2))
    nbytes = 4 * 2 * (4096 * 64 + 4096 + 64)
    assert t.time_s == pytest.approx(nbytes / 1e12, rel=1e-9) and t.memory_s == pytest.approx(nbytes / HAND_DRAM)
    assert t.compute_s == pytest.approx(t.op.gemm_flops / 900e12)              # no library ceiling: the best
    assert t.covered is False and t.source == "memory.elementwise"
    assert t.note == "an outer product (K = 1) with no tf32 GEMM points: its bytes on the elementwise curve"


def test_masked_attention_reads_its_bytes_at_the_dram_bandwidth():
    """SDPA's masked kernel (cuDNN's on Hopper): the fixed cost of a fused attention (here, no SDPA table: the copy
    curve's fastest kernel, 1 kB at 0.1 TB/s) plus its bytes at the profile's DRAM bandwidth, or the products at
    the P @ V rate where they take longer; without a DRAM figure, the copy curve at its bytes."""
    op = KernelOp("att", "attention", m=1, n=2048, k=64, batch=2, backend="efficient")     # one decode step
    nbytes = 2 * 2 * (2 * 1 * 64 + 2 * 2048 * 64)
    fixed = 1e3 / 0.1e12
    t = _hand().time(op)
    assert t.time_s == pytest.approx(fixed + nbytes / HAND_DRAM, rel=1e-9) and t.covered is True
    assert (t.source, t.note, t.bound) == ("attention.efficient", "masked SDPA: its bytes read at the DRAM bandwidth",
                                           "memory")
    t = _hand(profile=_HandProfile(dram=0)).time(op)
    assert t.time_s == pytest.approx(nbytes / 0.1e12, rel=1e-9) and t.note == ""
    wide = KernelOp("att", "attention", m=130, n=2048, k=1024, batch=2, backend="efficient", bytes=1e3)
    t = _hand().time(wide)
    assert t.time_s == pytest.approx(wide.gemm_flops / HAND_RATE, rel=1e-9)


def test_flash_attention_bytes_by_precision():
    op = dict(name="a", kind="attention", m=256, n=256, k=64, batch=4)
    for prec, it in (("fp16", 2), ("fp32", 4)):
        t = _hand().time(KernelOp(precision=prec, **op))
        assert t.memory_s == pytest.approx(it * 4 * (2 * 256 * 64 + 2 * 256 * 64) / HAND_DRAM, rel=1e-12)


def test_the_per_kernel_floor_of_each_runtime():
    """eager: a kernel keeps its GPU time; the host's time per op (the framework's where measured, else a bare
    launch's) is the pass's queue (``host_wait``); graph: the graph node's gap is the launch floor; without either
    figure there is no floor."""
    tiny = KernelOp("add", "elementwise", bytes=1e3)
    eager = _hand("eager")
    t = eager.time(tiny)
    assert (t.time_s, t.launch_s, eager.host_source) == (pytest.approx(1e-9), 1e-9, "cuda_launch")
    assert eager.run_overhead([tiny] * 10, [t] * 10)["host_wait"] == pytest.approx(10 * 5e-6 - 10 * 1e-9 + 1e-9)
    fw = _hand("eager", eager_op_s=8e-6)
    assert fw.host_s == 8e-6 and fw.host_source == "framework"
    assert "8.0 us" in fw.eager_note(1e-5, 3) and "framework's measured host time" in fw.eager_note(0, 3)
    bare = _hand("eager", launch={})
    assert bare.time(tiny).time_s == pytest.approx(1e-9) and bare.time(tiny).launch_s == 0.0
    assert "host_wait" not in bare.run_overhead([tiny], [bare.time(tiny)])
    assert _hand("graph", launch={}).time(tiny).launch_s == 0.0
    assert _hand("graph").time(tiny).launch_s == pytest.approx(1e-9)           # min(node gap, its own time)
    assert "host_wait" not in _hand("graph").run_overhead([tiny], [t])


def test_the_eager_host_is_a_queue_not_a_floor_per_kernel():
    """The host issues a kernel every host_s; the GPU runs each when issued and free. 10 us of host per kernel:
    ten 1-us kernels wait 10 us each (the host bounds them: 100 us), but a 200-us kernel first lets the host issue
    the next nine meanwhile, so the pass is 10 + 200 + 9 x 1 us, not 200 + 9 x 10."""
    from hwprobe.predict.model import host_queue

    assert host_queue([1e-6] * 10, 10e-6) == pytest.approx(101e-6 - 10e-6)
    assert host_queue([200e-6] + [1e-6] * 9, 10e-6) == pytest.approx(10e-6)
    assert host_queue([1e-6] * 9 + [200e-6], 10e-6) == pytest.approx(300e-6 - 209e-6)
    assert host_queue([], 10e-6) == 0.0 and host_queue([5e-6], 0.0) == 0.0


def test_a_profile_without_ceilings_or_dram_figure_prices_without_those_bounds():
    """No library ceiling and no DRAM bandwidth: the table's time stands, with no compute or memory term and no
    implicit-GEMM byte credit (it needs the DRAM slope)."""
    pred = _hand(profile=_HandProfile(dram=None, peaks=False))
    g = pred.time(KernelOp("g", "gemm", m=64, n=4096, k=4096, batch=2))
    assert g.time_s == pytest.approx(2 * 128 * 4096 * 4096 / HAND_RATE, rel=1e-9)
    assert (g.compute_s, g.memory_s, g.roofline_s) == (0.0, 0.0, 0.0)
    conv = pred.time(KernelOp("c", "gemm", m=12544, n=8, k=147, conv_kernel=7, conv_input_bytes=301056.0))
    assert conv.time_s == pytest.approx(2 * 12544 * 8 * 147 / HAND_RATE, rel=1e-9) and conv.roofline_s == 0.0
    assert pred.memory_floor(1e6) == 0.0 and pred.memory_floor(1e6, True) == 0.0


def test_memory_floor_by_hand():
    pred = _hand()
    assert pred.memory_floor(0.0) == 0.0 and pred.memory_floor(1.0) == 1.0 / HAND_DRAM
    assert pred.memory_floor(40e6, True) == 40e6 / HAND_L2                      # exactly the L2 size: fits
    assert pred.memory_floor(40e6 + 1, True) == (40e6 + 1) / HAND_DRAM
    assert pred.memory_floor(1e6) == 1e6 / HAND_DRAM                             # a GEMM's weights: DRAM


def test_implicit_gemm_convolutions_by_hand():
    """A 7x7 stem with 8 output channels: the table's GEMM read the 49x larger im2col matrix; without it the
    time falls below the convolution's own bytes (input once, weights, output) at the DRAM slope, which holds
    it. A 1x1 convolution reads its input once either way: the table's time exactly."""
    pred = _hand()
    stem = pred.time(KernelOp("c", "gemm", m=12544, n=8, k=147, conv_kernel=7, conv_input_bytes=301056.0))
    own = 301056 + 2 * (8 * 147 + 12544 * 8)
    assert stem.time_s == pytest.approx(own / HAND_DRAM, rel=1e-12)
    assert "held_at_floor_s" not in stem.extra and stem.note == "" and stem.source == "gemm"
    one = pred.time(KernelOp("c1", "gemm", m=3136, n=256, k=64, conv_kernel=1, conv_input_bytes=2.0 * 3136 * 64))
    assert one.time_s == pytest.approx(2 * 3136 * 256 * 64 / HAND_RATE, rel=1e-12)


def test_a_batched_gemm_reads_a_b_matrix_per_entry_and_a_gemv_is_held_at_its_bytes():
    pred = _hand()
    b2 = pred.time(KernelOp("moe", "gemm", m=16, n=4096, k=4096, batch=2))
    nbytes = 2 * 32 * 4096 + 2 * (2 * 4096 * 4096 + 32 * 4096)
    assert b2.time_s == pytest.approx(nbytes / HAND_DRAM, rel=1e-12) and "held_at_floor_s" not in b2.extra
    gemv = pred.time(KernelOp("gemv", "gemm", m=1, n=4096, k=4096))
    own = 2 * (4096 + 4096 * 4096 + 4096)
    table = 2 * 4096 * 4096 / HAND_RATE
    assert gemv.time_s == pytest.approx(own / HAND_DRAM, rel=1e-12)
    assert gemv.extra["held_at_floor_s"] == pytest.approx(own / HAND_DRAM - table, rel=1e-9)
    assert gemv.note == f"priced at {table / (own / HAND_DRAM):.0%} of its roofline bound: held at the bound"


def test_the_switch_cost_is_added_outside_the_fused_runtime():
    op = KernelOp("add", "elementwise", bytes=1e8)
    assert _hand("graph", switch_s=1e-6).time(op).time_s == pytest.approx(1e8 / 1e12 + 1e-6, rel=1e-12)
    assert _hand("fused", switch_s=1e-6).time(op).time_s == pytest.approx(1e8 / 1e12, rel=1e-12)


def test_collectives_without_a_curve_say_so():
    pred = _hand()
    two = pred.time(KernelOp("ar", "allreduce", bytes=1e6, ranks=2))
    assert (two.time_s, two.covered, two.source, two.bound) == (0.0, False, "collective", "comm")
    assert two.note == "missing: no measured collective curve in this profile"
    one = pred.time(KernelOp("ar", "allreduce", bytes=1e6, ranks=1))
    assert (one.time_s, one.covered, one.note) == (0.0, True, "")

    def refuse(kind, nbytes, ranks):
        raise KeyError(f"no {kind} curve at {ranks} ranks")

    t = _hand(profile=_HandProfile(collectives=refuse)).time(KernelOp("ag", "allgather", bytes=1e6, ranks=4))
    assert t.covered is False and t.note == "missing: 'no allgather curve at 4 ranks'"


def test_memory_kernels_on_stand_in_curves_say_which():
    """A kind without its own curve: the unary curve, else any; a profile without memory curves is refused. In the
    framework's table a stand-in curve marks only BatchNorm/GroupNorm/resize as outside the calibration."""
    soft = {"softmax": _curve("softmax", 2e12)}
    t = _hand("fused", memory=soft).time(KernelOp("add", "elementwise", bytes=1e6))
    assert t.time_s == pytest.approx(1e6 / 2e12) and t.note == "no elementwise curve: the softmax curve"
    dw = _hand("fused", memory=soft).time(KernelOp("dw", "conv_dw", bytes=1e6, conv_kernel=5))
    assert dw.note == "no unary curve: the softmax curve; no depthwise 5x5 points: the copy curve at its bytes"
    with pytest.raises(Exception) as e:
        _hand("fused", memory={}).time(KernelOp("add", "elementwise", bytes=1e6))
    assert str(e.value) == "the profile has no memory-kernel calibration (run the 'predict' suite)"
    fw = {"reduction": _curve("reduction", 1e12), "batch_norm": _curve("batch_norm", 1e12)}
    pool = _hand(framework=fw).time(KernelOp("p", "pool", bytes=1e6))
    bn = _hand(framework=fw).time(KernelOp("bn", "batchnorm", bytes=1e6))
    assert (pool.source, pool.covered, pool.note) == ("framework.reduction", True, "")
    assert (bn.source, bn.covered, bn.note) == ("framework.batch_norm", True, "")


def test_ropes_cat_takes_its_own_curve_else_the_cache_cats_price():
    """rotate_cat (RoPE's cat on transposed heads) on its own curve; a profile measured before it prices it exactly as
    it priced it then, as a cache cat (cat_strided, else that kind's stand-in), outside the calibration, and says so."""
    op = KernelOp("rope", "rotate_cat", bytes=1e6)
    fw = {"cat_strided": _curve("cat_strided", 0.6e12), "cat": _curve("cat", 1.2e12)}
    own = _hand(framework={**fw, "rotate_cat": _curve("rotate_cat", 0.5e12)}).time(op)
    assert (own.source, own.covered, own.note) == ("framework.rotate_cat", True, "")
    assert own.time_s > _hand(framework=fw).time(KernelOp("c", "cat_strided", bytes=1e6)).time_s
    for curves, source in ((fw, "framework.cat_strided"), ({"cat": fw["cat"]}, "framework.cat")):
        old, cache = (_hand(framework=curves).time(KernelOp(n, k, bytes=1e6))
                      for n, k in (("rope", "rotate_cat"), ("c", "cat_strided")))
        assert (old.time_s, old.source, old.covered) == (cache.time_s, source, False)
        assert old.note.startswith("no rotate_cat curve: priced as cat_strided (RoPE's cat on heads held transposed")


def test_a_cache_cat_takes_the_unary_curve_else_the_copy_curve():
    """cat_cache (a DynamicCache cat of contiguous inputs, PyTorch's vectorized cat) on the framework's unary curve;
    a profile from before that curve prices it as it priced every cache cat then, on the copy curve."""
    op = KernelOp("c", "cat_cache", bytes=1e6)
    both = _hand(framework={"unary": _curve("unary", 4e12), "copy": _curve("copy", 2.7e12)}).time(op)
    old = _hand(framework={"copy": _curve("copy", 2.7e12)}).time(op)
    assert (both.source, old.source) == ("framework.unary", "framework.copy") and old.time_s > both.time_s


def test_the_fused_runtime_says_when_it_uses_the_frameworks_linear_table():
    pts = [{"dim": "n", "align": 4, "m": 1024, "factor": 1.5}]
    fused = _hand("fused", gemm={}, framework_gemm={"fp16": _hand_table("fp16")}, align={"fp16": pts})
    t = fused.time(KernelOp("g", "gemm", m=1024, n=4100, k=1024, weight_bits=4))
    assert t.note == ("no cuBLAS fp16 table: the framework's linear layers; weights in 4 bits: inferred from the "
                      "FP16 table (no quantized-GEMM calibration); n=4100 not a multiple of 8: x1.50 (measured)")
    graph = _hand("graph", gemm={}, framework_gemm={"fp16": _hand_table("fp16")})
    g = graph.time(KernelOp("g", "gemm", m=1024, n=1024, k=1024))
    assert g.note == "" and g.source == "framework.linear"


def test_the_alignment_price_by_hand():
    """The measured factor of the nearest M for each of N and K off a multiple of 8 (the worse one; N's where
    they tie), from the other 16-bit type's points where a precision has none of its own."""
    pts = [{"dim": "n", "align": 4, "m": 1024, "factor": 1.5}, {"dim": "k", "align": 4, "m": 1024, "factor": 1.5},
           {"dim": "k", "align": 2, "m": 1024, "factor": 1.2}, {"dim": "k", "align": 1, "m": 64, "factor": 1.1},
           {"dim": "k", "align": 1, "m": 4096, "factor": 1.3}]
    pred = _hand(align={"fp16": pts})
    assert pred.align_factor("bf16", 1024, 4100, 4096) == (1.5, "n=4100 not a multiple of 8: x1.50 (measured)")
    assert pred.align_factor("fp16", 1024, 4100, 4100) == (1.5, "n=4100 not a multiple of 8: x1.50 (measured)")
    assert pred.align_factor("fp16", 1024, 4097, 4098) == (1.2, "k=4098 not a multiple of 8: x1.20 (measured)")
    assert pred.align_factor("fp16", 64, 4096, 1)[0] == 1.1 and pred.align_factor("fp16", 4000, 4096, 1)[0] == 1.3
    assert pred.align_factor("fp32", 1024, 4100, 4100) == (1.0, "")


def test_the_power_cap_by_hand():
    pred = _hand()
    assert pred.power_ratio("bf16") == (4 / 3, "fp16 library 400 TFLOP/s in bursts, 300 sustained at the power "
                                                "cap (gpu.gemm_power)")
    assert pred.power_ratio("fp32") == (1.0, "")                              # burst = sustained: no cap
    op = KernelOp("g", "gemm", m=1, n=1, k=1)
    half = OpTime(op, 2.0, compute_s=1.0, bound="compute")                      # exactly at half its roof
    mem = OpTime(op, 2.0, bound="memory")
    note = pred.power_note([half, half, mem], "fp16")
    f = 1 + (4.0 / 6.0) * (4 / 3 - 1)                                          # 4 s of 6 s at the roof
    assert half.time_s == 2.0 and mem.time_s == 2.0
    assert note == (f"power cap: not applied; a run that held it for seconds could be up to x{f:.3f} slower "
                    "(compute-bound kernels 67% of the run, from fp16 library 400 TFLOP/s in bursts, 300 sustained "
                    "at the power cap (gpu.gemm_power))")
    slow = OpTime(op, 2.0, compute_s=0.9, bound="compute")
    assert pred.power_note([slow, mem], "fp16") == "" and slow.time_s == 2.0
