"""gpu.gemm_shapes: what cuBLAS delivers at the GEMM shapes models run, not only at its best size.

A model's GEMMs are seldom 8192^3: a batch-1 layer has a handful of rows (M) against weights of N x K, a
convolution's implicit GEMM has K = C_in x kh x kw as small as 27, an attention head K = 64. The library's
efficiency at those shapes, not its peak, sets their time. This probe times cuBLAS gemmEx over a grid of
M (rows: 1 .. 65536) x N (output features: 16 .. 16384) x K (16 .. 16384), log-spaced by 4 (the framework's
own linear layers, gpu.torch_kernels, have the finer grid the eager and graph runtimes price from), in the
layout a framework's linear layer calls (row-major activations times the transposed weight: cuBLAS "TN" with
m = N, n = M), with the library's own heuristics (default algo), each point replayed back to back as a CUDA graph
(so the time per GEMM holds the gap between graph nodes, as in a replayed model) on operand sets that rotate out
of L2 like the weights of successive layers do. Every point's output is checked against a float64 product of
sampled rows.
Grid points that interpolation from their neighbours predicts within 2% (hwprobe.predict.prune, judged on the
committed H200 and H100 grids) are left out; the predictor interpolates them back.

Then the alignment price where the library really pays it: the same shapes with N or K one, two and four
elements off a multiple of eight.

Results: the profile's calibration curves (hwprobe.calibration) ``gemm`` (the grid of seconds per GEMM) and
``gemm_align`` (misaligned over aligned time) per precision, which hwprobe.predict interpolates.
"""

from __future__ import annotations

import numpy as np

from hwprobe import calibration as C
from hwprobe import keys as K
from hwprobe.probes.base import probe
from hwprobe.probes.calibration import common
from hwprobe.probes.compute import f64_copy
from hwprobe.vocab import Curve

PRECISIONS = ("fp16", "bf16", "tf32", "fp32", "int8")
VARIANT = {"fp16": "fp16.f32acc", "bf16": "bf16", "tf32": "tf32", "fp32": "fp32", "int8": "int8.tn"}
M_LIST = common.geometric(1, 65536, 4)
NK_LIST = common.geometric(16, 16384, 4)
QUICK_M = [1, 16, 256, 4096]
QUICK_NK = [256, 4096]
ALIGN_BASES = ((2048, 4096, 4096), (64, 4096, 4096))      # (M, N, K) in model terms
ALIGN_OFFSETS = (1, 2, 4)                                  # off a multiple of 8 by these: alignment 1, 2, 4
CHECK_ROWS = 4


def _point(ctx, env, v, m: int, n: int, k: int, metric: str):
    """Time one GEMM in model terms (M rows x K) @ (K x N); returns the Measurement (value in FLOP/s)."""
    from hwprobe.probes.compute.cublas import CublasGemm, build_runner, cublas_mode
    from hwprobe.probes.compute.gemm_common import gemm_flops

    env.cp.get_default_memory_pool().free_all_blocks()
    with cublas_mode(env, v.math):
        g = CublasGemm(env, v, n, m, k)          # cuBLAS column-major: m = N (features), n = M (rows)
        rule = common.point_rule()
        runner = build_runner(env.cp, g.call, g.sets, set_stream=g.set_stream, target_s=rule.sample_s,
                              max_reps=common.MAX_REPS, graph_unavailable=env.graph_unavailable)
        return ctx.measure(metric, runner.fn, work=gemm_flops(m, n, k) * runner.reps, unit=v.unit, kind="sweep",
                           check=lambda: g.check(CHECK_ROWS), warmup=1, rule=rule.name,
                           precision=v.precision, exec_unit=v.exec_unit, path="library",
                           params={"rows_m": m, "features_n": n, "k": k, **g.params(runner)},
                           notes=list(runner.notes))


def _grid(ctx, env, v, prec: str, ms: list[int], nks: list[int]):
    """Every grid point (yielded as it is measured), then the finding with the table. Points interpolation from
    their neighbours predicts within 2% (hwprobe.predict.prune) are left out, and the predictor fills them."""
    from hwprobe.probes.calibration.pruned import pruned

    table = np.full((len(ms), len(nks), len(nks)), np.nan)
    clocks = []
    left_out = []
    for i, m in enumerate(ms):
        for j, n in enumerate(nks):
            for q, k in enumerate(nks):
                if not ctx.quick and pruned().gemm_point(prec, m, n, k):
                    left_out.append([m, n, k])
                    continue
                metric = C.point_metric(C.metric(Curve.GEMM, prec), m=m, n=n, k=k)
                try:
                    meas = _point(ctx, env, v, m, n, k, metric)
                except Exception as e:
                    yield ctx.error(metric, f"cuBLAS {prec} {m}x{n}x{k}", e)
                    continue
                yield meas
                if meas.valid and meas.value > 0:
                    table[i, j, q] = 2.0 * m * n * k / meas.value
                    if meas.clocks and meas.clocks.sm_mhz:
                        clocks.append(meas.clocks.sm_mhz)
    done = int(np.isfinite(table).sum())
    yield ctx.derived(
        C.metric(Curve.GEMM, prec), done, unit="points", kind="info",
        params={"precision": prec, K.VARIANT: v.key, "layout": "TN (linear layer: x @ W^T)", "api": "cublasGemmEx",
                "m": ms, "n": nks, "k": nks,
                "time_s": [[[None if not np.isfinite(x) else float(x) for x in row] for row in plane]
                           for plane in table],
                "runtime": "cuda_graph", "sm_mhz_median": float(np.median(clocks)) if clocks else None,
                "pruned": left_out},
        notes=[f"seconds per GEMM over M x N x K ({len(ms)} x {len(nks)} x {len(nks)}; {done} measured"
               + (f", {len(left_out)} left out as interpolation predicts them within 2%" if left_out else "")
               + "), replayed back to back in a CUDA graph on operands rotating out of L2"])


def _align(ctx, env, v, prec: str):
    rows = []
    curve = C.metric(Curve.GEMM_ALIGN, prec)
    for m, n, k in ALIGN_BASES:
        try:
            base = _point(ctx, env, v, m, n, k, C.point_metric(curve, m=m, n=n, k=k))
        except Exception as e:
            yield ctx.error(curve, f"cuBLAS {prec} {m}x{n}x{k}", e)
            continue
        yield base
        t0 = 2.0 * m * n * k / base.value
        for dim in ("n", "k"):
            for off in ALIGN_OFFSETS:
                nn, kk = (n + off, k) if dim == "n" else (n, k + off)
                metric = C.point_metric(curve, m=m, n=nn, k=kk)
                try:
                    meas = _point(ctx, env, v, m, nn, kk, metric)
                except Exception as e:
                    yield ctx.skip(metric, f"the library refuses or fails {prec} {m}x{nn}x{kk}: {e}")
                    continue
                yield meas
                if meas.valid:
                    t = 2.0 * m * nn * kk / meas.value
                    scale = (nn * kk) / (n * k)          # the extra work of the larger size, not a penalty
                    rows.append({"m": m, "n": nn, "k": kk, "dim": dim, "align": off, "time_s": t,
                                 "aligned_time_s": t0, "factor": t / (t0 * scale)})
    if rows:
        yield ctx.derived(curve, len(rows), unit="points", kind="info",
                          params={"precision": prec, K.POINTS: rows},
                          notes=["misaligned over aligned seconds per GEMM (scaled for the extra elements)"])


@probe(name="gpu.gemm_shapes", target="gpu", family="calibration", precisions=PRECISIONS,
       summary="Prediction calibration: cuBLAS GEMM time over model shapes (M 1..64k x N x K) and the alignment "
               "price, in CUDA graphs", ahead=f64_copy.ahead)
def run(ctx, precisions: list[str] | None = None, align: bool = True):
    from hwprobe.errors import Skip
    from hwprobe.probes.compute import gemm_common as gc
    from hwprobe.probes.compute.cublas import cublas_env

    try:
        env = cublas_env(ctx)
    except Skip as e:
        yield ctx.skip(C.family(Curve.GEMM), str(e))
        return
    ms, nks = (QUICK_M, QUICK_NK) if ctx.quick else (M_LIST, NK_LIST)
    for prec in precisions or ("fp16", "bf16"):
        v = gc.variant(VARIANT[prec])
        if prec != "int8":
            v = v.with_layout("TN")
        yield from _grid(ctx, env, v, prec, ms, nks)
        if align and prec in ("fp16", "bf16", "int8"):
            yield from _align(ctx, env, v, prec)
