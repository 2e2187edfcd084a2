"""The library GEMM probes on a real GPU, briefly (quick mode, small sizes): every point verified."""

from __future__ import annotations

import pytest

from hwprobe.errors import VerificationError

pytestmark = pytest.mark.gpu


def _by_metric(ms):
    return {m.metric: m for m in ms}


def test_gemm_sweep_ceilings_and_pitfall(gpu_ctx_factory):
    import cupy as cp
    from cupy_backends.cuda.libs import cublas as cupy_cublas

    from hwprobe.probes.compute.cublas import cublas_env
    from hwprobe.probes.compute.gemm import run_gemm

    ctx = gpu_ctx_factory("gpu.gemm")
    env = cublas_env(ctx)
    cupy_h = cp.cuda.device.get_cublas_handle()
    cupy_modes = cupy_cublas.getMathMode(cupy_h), cupy_cublas.getPointerMode(cupy_h)
    before = env.cublas.getMathMode(env.handle), env.cublas.getPointerMode(env.handle)
    ms = list(run_gemm(ctx, precisions=("fp32", "tf32", "fp16", "int8"), sizes=(1024, 2048), frameworks=("cupy",)))
    assert (env.cublas.getMathMode(env.handle), env.cublas.getPointerMode(env.handle)) == before
    assert (cupy_cublas.getMathMode(cupy_h), cupy_cublas.getPointerMode(cupy_h)) == cupy_modes
    got = _by_metric(ms)
    # CUBLAS_GEMM_DEFAULT_TENSOR_OP is deprecated: a CUDA that refuses it reports that as an info record
    failed = [m.metric + ": " + "; ".join(m.notes) for m in ms
              if m.kind == "info" and m.value == 0.0 and "tensor_op" not in m.metric]
    assert not failed, failed
    for metric in ("fp32.cuda_core.cublas", "tf32.tensor_core.cublas", "fp16.tensor_core.cublas.f32acc",
                   "fp16.tensor_core.cublas.f16acc", "int8.tensor_core.cublas.tn", "int8.cublas.nn"):
        m = got[metric]
        # INT8 NN's unit is inferred from its rate: a sweep record, never a ceiling of the int8/cuda_core slot
        assert m.kind == ("sweep" if metric == "int8.cublas.nn" else "compute") and m.verified and m.value > 0
        assert [p["n"] for p in m.params["curve"]] == [1024, 2048]
        assert max(m.params["sentinel_sm_mhz"]) > 300, (metric, m.params.get("sentinel_sm_mhz"))
    for metric in ("tf32.tensor_core.cublas", "fp16.tensor_core.cublas.f32acc", "fp16.tensor_core.cublaslt",
                   "tf32.tensor_core.cublaslt"):     # the crafted checks a lower precision would fail: exact
        assert got[metric].params["precision_check"]["exact"], metric
    nn = got["int8.cublas.nn"]
    # its unit comes from its kernel's name where one was read (a WMMA tensor-op kernel on the H200), else from
    # the rate, and then it says it is inferred
    assert "kernels" in nn.params and nn.params["exec_unit_inferred"] is not bool(nn.params.get("kernel_tensor_core"))
    assert got["int8.tensor_core.cublas.tn"].params.get("kernel_tensor_core") in (True, None)
    for m in ms:
        if m.kind in ("sweep", "compute"):
            assert m.verified, (m.metric, m.flags)
            assert m.stats.median_s > 1e-3, (m.metric, m.stats.median_s)     # a sample is not launch-bound
    # small GEMMs are CUDA graphs of gemmEx calls (nvmath's binding); a loop only if nvmath's is unusable here
    for metric in ("fp16.tensor_core.cublas.f32acc.n2048", "fp16.tensor_core.cublas.f32acc.n1024",
                   "int8.tensor_core.cublas.tn.n1024"):
        p = got[metric].params
        if env.binding == "nvmath.bindings.cublas":
            assert p["cuda_graph"] and p["binding"] == env.binding and "graph_fallback" not in p, (metric, p)
        else:
            assert not p["cuda_graph"] and "nvmath.bindings.cublas unusable" in p["graph_fallback"], (metric, p)
    try:
        import nvmath.bindings.cublas  # noqa: F401
    except ImportError:
        pass
    else:
        assert env.binding == "nvmath.bindings.cublas", env.graph_unavailable
    assert got["tf32.tensor_core.cublas"].value > got["fp32.cuda_core.cublas"].value
    assert got["int8.tensor_core.cublas.tn"].value > 3 * got["int8.cublas.nn"].value      # IMMA vs CUDA-core path
    pit = got["pitfall.int8_vs_fp16"]
    assert pit.kind == "info" and pit.notes and "found" in pit.params
    assert got["fp16.tensor_core.cupy_matmul"].verified
    for metric in ("fp16.tensor_core.cublas.f32acc.tn.n2048", "tf32.tensor_core.cublas.tn.n2048",
                   "fp16.tensor_core.cublaslt", "tf32.tensor_core.cublaslt",
                   "int8.tensor_core.cublaslt", "int8.tensor_core.cublaslt.i8out"):
        assert got[metric].verified and got[metric].value > 0, metric
    i8 = got["int8.tensor_core.cublaslt.i8out"].params
    assert i8["c_type"] == 3 and 0 < i8["alpha"] < 1 and i8["rel_error"] <= 0.02     # CUDA_R_8I, scaled
    assert got["int8.tensor_core.cublaslt"].params["cuda_graph"]
    assert got["int8.tensor_core.cublaslt"].params["binding"] == "nvmath.bindings.cublasLt"
    cands = got["fp16.tensor_core.cublas.f32acc"].params["candidates"]
    assert {c["layout"] for c in cands} == {"NN", "TN"} and all(c["sm_mhz"] for c in cands)


@pytest.mark.parametrize("lt", [False, True])
def test_corrupted_gemm_output_fails_the_check(gpu_ctx_factory, lt):
    from hwprobe.probes.compute import gemm_common as gc
    from hwprobe.probes.compute.cublas import CublasGemm, cublas_env, cublas_mode

    cls = CublasGemm
    if lt:
        pytest.importorskip("nvmath")
        from hwprobe.probes.compute.cublaslt import LtGemm as cls
    env = cublas_env(gpu_ctx_factory("gpu.gemm"))
    for key in ("fp16.f32acc", "int8.tn", "bf16"):
        v = gc.variant(key)
        with cublas_mode(env, v.math):
            g = cls(env, v, 256, 256, 256)
            g.call(0)
            g.check(16)
            c = g.ops[0][2]
            c[3] = c[5]      # buffer row 3 is column 3 of C: every sampled row of C sees it
            c[:, 0] = c[:, 1]
            with pytest.raises(VerificationError):
                g.check(16)


def test_graph_runner_sizes_a_sample(gpu_ctx_factory):
    import cupy as cp

    from hwprobe.probes.compute import gemm_common as gc
    from hwprobe.probes.compute.cublas import CublasGemm, build_runner, cublas_env, cublas_mode

    env = cublas_env(gpu_ctx_factory("gpu.gemm"))
    v = gc.variant("fp16.f32acc")
    with cublas_mode(env, v.math):
        g = CublasGemm(env, v, 1024, 1024, 1024)
        g.ops[0][2].fill(0)
        r = build_runner(cp, g.call, g.sets, set_stream=g.set_stream, graph_unavailable=env.graph_unavailable)
        assert r.graph and r.reps > 100 and g.sets > 1, (env.binding, r.notes)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        r.fn()
        stop.record()
        stop.synchronize()
        assert cp.cuda.get_elapsed_time(start, stop) > 2.0       # ms: the sample is long enough
        g.ops[0][2].fill(0)
        r.fn()                                                  # the graph's replay writes the right product
        cp.cuda.get_current_stream().synchronize()
        g.check(16)


def test_gemm_align(gpu_ctx_factory):
    from hwprobe.probes.compute.gemm import run_align

    ms = list(run_align(gpu_ctx_factory("gpu.gemm_align"), precisions=("fp16", "int8")))
    got = _by_metric(ms)
    assert got["align.fp16.4104"].verified and got["align.fp16.4105"].verified
    assert got["align.fp16.slowdown"].kind == "info" and got["align.fp16.slowdown"].notes
    assert "align.int8.4105" in got and "align.int8.slowdown" in got   # measured or "not supported": both findings


def test_gemm_fp8(gpu_ctx_factory):
    pytest.importorskip("nvmath")
    pytest.importorskip("torch")
    from hwprobe.probes.compute.fp8 import run_fp8

    ctx = gpu_ctx_factory("gpu.gemm_fp8")
    ctx.energy_window_s = 1.2                               # as a run's: the variants' joules get their own window
    ms = list(run_fp8(ctx, sizes=(4096,)))
    got = _by_metric(ms)
    failed = [m.metric + ": " + "; ".join(m.notes) for m in ms if m.kind == "info"]
    assert not failed, failed
    for metric in ("fp8_e4m3.tensor_core.cublaslt", "fp8.tensor_core.cublaslt.e4m3xe5m2",
                   "fp8.tensor_core.cublaslt.e5m2xe4m3", "fp8_e4m3.tensor_core.cublaslt.promoted_acc"):
        assert got[metric].verified and got[metric].value > 0, metric
        assert "uniform over each format's finite codes" in got[metric].params["operands"]
    rested = got["fp8_e4m3.tensor_core.cublaslt.n4096"]     # the window opens rested, its samples in one batch
    assert rested.params["rest_s"] == 0.3 and len(rested.samples_s) == 5
    for metric in ("fp8.tensor_core.cublaslt.e4m3xe5m2", "fp8_e4m3.tensor_core.cublaslt.promoted_acc"):
        m = got[metric]                                     # a variant: rested too, its joules from 1.2 s after
        assert m.params["rest_s"] == 0.3 and len(m.samples_s) == 5 and m.energy_per_op_j is None, metric
        sus = m.params["sustained"]
        assert sus["samples"] >= 10 and sus["rate"] > 0 and sus["power_w"] > 0 and sus["j_per_op"] > 0, sus


def test_sparse(gpu_ctx_factory):
    pytest.importorskip("nvmath")
    from hwprobe.probes.compute.sparse import run_sparse

    ms = list(run_sparse(gpu_ctx_factory("gpu.sparse"), precisions=("fp16", "int8"), sizes=(4096,)))
    got = _by_metric(ms)
    for prec in ("fp16", "int8"):
        point = got.get(f"{prec}.tensor_core.sparse24.n4096")
        assert point is not None, [m.notes for m in ms if m.kind == "info"]
        assert point.verified and point.params["sparse"] and point.params["speedup_vs_dense"] > 0
        assert point.params["speedup_per_clock"] > 0 and point.params["dense_path"].startswith(f"sparse.{prec}.dense.")
        # the baseline is the best dense path that ran
        dense = [m for m in ms if m.metric.startswith(f"sparse.{prec}.dense.") and m.kind == "sweep" and m.valid]
        assert point.params["dense_rate"] == max(m.value for m in dense) and len(dense) == 2
        assert got[f"{prec}.tensor_core.sparse24"].kind == "compute"
        assert got[f"{prec}.tensor_core.sparse24"].params["speedup_best_vs_best_per_clock"] > 0
        assert got[f"sparse.{prec}.compress.n4096"].value > 0
        assert got[f"sparse.{prec}.speedup"].notes
        alg, swept = point.params["cusparselt_alg"], point.params["cusparselt_sweep_us"]
        assert alg["search"] == "sweep" and len(swept) >= 2, alg      # every config id timed, the pick among them
        assert {"config_id", "split_k", "split_k_mode", "split_k_buffers"} <= set(alg), alg
        first = point.params.get("cusparselt_settled_us") or swept
        kept = {c: t for c, t in first.items() if c not in point.params.get("cusparselt_rejected", {})}
        assert first[alg["config_id"]] == min(kept.values()), (alg, first)     # the fastest that ran and checked
        # settled windows: each one's time per call, the kept one the fastest, its samples the record's median
        for m in (point, *dense):
            win = m.params["sustain_windows_us"]
            assert 1 <= len(win) <= 5 and m.params["sustain_window_stop"] in ("level", "cap")
            assert m.params["bridge_calls"] >= 1
            assert win[m.params["sustain_window_kept"]] == min(win)
            assert min(win) == pytest.approx(m.stats.median_s / m.params["reps"] * 1e6, rel=1e-3)
    lib = _by_metric(run_sparse(gpu_ctx_factory("gpu.sparse"), precisions=("fp16",), sizes=(4096,),
                                search="cusparselt"))["fp16.tensor_core.sparse24.n4096"]
    assert lib.verified and lib.params["cusparselt_alg"]["search"] == "cusparselt"
    assert "cusparselt_sweep_us" not in lib.params and lib.params["cusparselt_alg"]["search_iterations"] > 0


def test_gemm_power_sustained_points(gpu_ctx_factory):
    """Every distribution's sustained point is verified, carries a clock, and a finding sums them up; zero
    operands never draw more power than random ones."""
    import cupy as cp

    from hwprobe.probes.compute.cublas import random_operand
    from hwprobe.probes.compute.gemm_power import run

    relu = random_operand(cp, "int8", (256, 256), 1, data="relu", role="a")
    assert int(relu.min()) == 0 and 0.4 < float((relu == 0).mean()) < 0.6
    normal = random_operand(cp, "int8", (256, 256), 2, data="normal")
    assert 25 < float(normal.astype(cp.float32).std()) < 40

    ctx = gpu_ctx_factory("gpu.gemm_power")
    ms = list(run(ctx, precisions=("int8",), data=("uniform", "zeros")))
    pts = {m.metric: m for m in ms if m.kind == "sweep"}
    stems = ("int8.tensor_core.cublaslt", "int8.tensor_core.cublaslt.i8out")
    assert set(pts) == {f"{s}.sustained.{d}" for s in stems for d in ("uniform", "zeros")}, \
        [(m.metric, m.notes) for m in ms]
    for m in pts.values():
        assert m.verified and m.value > 0 and m.clocks and m.clocks.sm_mhz, (m.metric, m.flags)
        assert 0 < m.params["per_clock"] <= 1.1       # NVML's clock lags: a bound, not an exact share
    info = {m.metric: m for m in ms if m.kind == "info"}
    assert set(info) == {f"{s}.power_data" for s in stems}
    for m in info.values():
        assert "uniform" in m.notes[0] and "zeros" in m.notes[0]


def test_rested_points_open_after_a_rest_and_are_checked(gpu_ctx_factory):
    """gpu.gemm's rested re-measure (issue 33): a gemmEx point and a cuBLASLt point (raw INT8, nvmath TF32) each
    open one window of five samples after the GPU idled, and are checked like every other point."""
    from hwprobe.probes.compute import gemm_common as gc
    from hwprobe.probes.compute.cublas import cublas_env, measure_gemm
    from hwprobe.probes.compute.cublaslt import lt_point
    from hwprobe.probes.compute.gemm import REST_S

    ctx = gpu_ctx_factory("gpu.gemm")
    env = cublas_env(ctx)
    ms = [measure_gemm(ctx, env, gc.variant("tf32"), 2048, 2048, 2048, metric="tf32.tensor_core.cublas.rested.n2048",
                       kind="sweep", rows=8, rest_s=REST_S),
          lt_point(ctx, env, "int8.tensor_core.cublaslt", 2048, 8, metric="int8.tensor_core.cublaslt.rested.n2048",
                   rest_s=REST_S)]
    try:
        import nvmath  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        ms.append(lt_point(ctx, env, "tf32.tensor_core.cublaslt", 2048, 8, rest_s=REST_S))
    for m in ms:
        assert m.verified and m.value > 0 and m.params["rest_s"] == REST_S, m.metric
        assert len(m.samples_s) == 5 and m.stats.stop, (m.metric, m.stats)
        assert m.energy_per_op_j is None and "sustained" not in m.params, m.metric     # a burst: no energy window


def test_fp64_library_ceiling_against_cupy_matmul(gpu_ctx_factory):
    """Issue 10: the FP64 library ceiling is at least cupy.matmul's at the same size in the same run, and its
    tensor-core unit is confirmed by the rate where it exceeds the DFMA peak."""
    from hwprobe.probes.compute.gemm import run_gemm

    ms = _by_metric(run_gemm(gpu_ctx_factory("gpu.gemm"), precisions=("fp64",), sizes=(4096,), frameworks=("cupy",)))
    ceil, cupy = ms["fp64.tensor_core.cublas"], ms["fp64.tensor_core.cupy_matmul"]
    assert cupy.verified and ceil.verified
    print(f"fp64 gemmEx {ceil.value / 1e12:.1f} vs cupy.matmul {cupy.value / 1e12:.1f} TFLOP/s")
    assert ceil.value >= 0.99 * cupy.value and ceil.params["vs_cupy_matmul"]["ratio"] >= 0.99
    dev = gpu_ctx_factory.device
    if (dev.cc_major, dev.cc_minor) == (9, 0):
        assert ceil.exec_unit == "tensor_core" and ceil.params["exec_unit_evidence"].startswith("measured")


def test_fp8_sustained_on_full_range_codes(gpu_ctx_factory):
    pytest.importorskip("nvmath")
    from hwprobe.probes.compute.gemm_power import run

    ms = list(run(gpu_ctx_factory("gpu.gemm_power"), precisions=("fp8",), data=("uniform", "zeros")))
    pts = {m.params["data"]: m for m in ms if m.kind == "sweep"}
    assert set(pts) == {"uniform", "zeros"}, [(m.metric, m.reason) for m in ms]
    for m in pts.values():
        assert m.verified and m.value > 0 and m.precision == "fp8_e4m3" and m.params["operands"]
    assert pts["uniform"].params["operands"].startswith("fp8 e4m3 uniform over its 254 finite codes")


@pytest.mark.parametrize("kind", ["float64", "float32", "float16", "bf16", "int32", "int8", "fp8"])
def test_f64_copy_kernel_matches_numpy_on_every_layout(kind):
    """The checks' float64 copy (kernels/f64_copy.cu) equals numpy's decode of the same bits, for a contiguous
    array, a transposed view and an offset slice, all rows or chosen rows in any order, repeated."""
    import cupy as cp
    import numpy as np

    from hwprobe.probes.compute import gemm_common as gc
    from hwprobe.probes.compute.f64_copy import host_f64, to_f64

    size = gc.ITEMSIZE[kind]
    dtype = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bf16": np.uint16,
             "int32": np.int32, "int8": np.int8, "fp8": np.uint8}[kind]
    raw = np.random.default_rng(3).integers(0, 256, size=37 * 53 * size, dtype=np.uint8)
    host = raw.view(dtype).reshape(37, 53)
    dev = cp.asarray(host)
    for view in (lambda x: x, lambda x: x.T, lambda x: x[3:, 5:]):
        want_all = host_f64(view(host), kind)
        got = to_f64(cp, view(dev), kind)
        assert got.flags.c_contiguous and got.dtype == cp.float64
        assert np.array_equal(cp.asnumpy(got), want_all, equal_nan=True)
        rows = [want_all.shape[0] - 1, 0, 2, 2]
        assert np.array_equal(cp.asnumpy(to_f64(cp, view(dev), kind, rows)), want_all[rows], equal_nan=True)
    for bad in ([37], [-1]):
        with pytest.raises(IndexError):
            to_f64(cp, dev, kind, bad)
