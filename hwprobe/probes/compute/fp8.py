"""cuBLASLt GEMM paths: FP8 (E4M3, E4M3/E5M2 pairs) as its own probe, and FP16/BF16/TF32/INT8 for gpu.gemm.

CuPy has no FP8 dtype and no cuBLASLt binding. Two routes, both autotuned untimed:
- nvmath-python's ``Matmul`` (FP8, FP16, BF16, TF32) on PyTorch operands: A row-major (m x k), B
  column-major (k x n), the "TN" layout cuBLASLt's FP8 kernels require. FP8 inputs are drawn from values
  exact in both FP8 formats, so the float64 reference of the sampled rows is exact.
- ``LtGemm``: raw cuBLASLt (nvmath.bindings.cublasLt) for INT8, which nvmath's Matmul does not accept.
  It reuses gpu_gemm's column-major operand sets, check and CUDA-graph runner, with the TN layout
  (A transposed) that INT8 tensor-core (IMMA) kernels need; the fastest of up to 32 heuristic algorithms
  wins. (The COL32/COL4 IMMA orders serve Turing/Ampere kernels; Hopper's INT8 kernels take plain
  column-major TN, s8 x s8 -> s32.)
"""

from __future__ import annotations

from hwprobe.errors import InputError
from hwprobe.probes.base import probe
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.probes.compute.cublas import ceiling_of, failure
from hwprobe.probes.compute.cublaslt import OUT_TYPES, REST_S, VARIANTS, ahead, fp8_env, measure_fp8
from hwprobe.vocab import Kind, Path, Precision


@probe(name="gpu.gemm_fp8", target="gpu", family="compute",
       summary="FP8 GEMM (E4M3, E4M3xE5M2) through cuBLASLt via nvmath-python: size sweep and ceilings",
       precisions=(Precision.FP8_E4M3, Precision.FP8), ahead=ahead)
def run_fp8(ctx, variants=("e4m3xe4m3", "e4m3xe5m2", "e5m2xe4m3"), sizes=(4096, 8192, 16384), check_rows=16,
            out="bf16", fast_accumulation=True):
    env = fp8_env(ctx)
    bad = [v for v in variants if v not in VARIANTS]
    if bad or out not in OUT_TYPES:
        raise InputError(f"gpu.gemm_fp8: unknown variant {bad} or out {out!r}; "
                         f"variants: {', '.join(VARIANTS)}; out: {', '.join(OUT_TYPES)}")
    plan = gc.plan_sizes(sizes, ctx.quick, quick_cap=4096)
    first, *others = variants
    a_fmt, b_fmt, prec, base = VARIANTS[first]
    points = []
    for n in sorted(plan, reverse=True):     # the ceiling size first, before the GPU heats up
        metric = f"{base}.n{n}"
        ctx.log(f"FP8 {first} {n}^3")
        try:
            m = measure_fp8(ctx, env, n, n, n, a_fmt, b_fmt, metric=metric, kind=Kind.SWEEP, precision=prec,
                            rows=check_rows, fast_accumulation=fast_accumulation, out=out, rest_s=REST_S)
        except Exception as e:
            yield failure(ctx, metric, f"FP8 {first} {n}^3", e, precision=prec, path=Path.LIBRARY)
            continue
        points.append(m)
        yield m
    if not points:
        return
    yield ceiling_of(points, base)
    best_n = max(points, key=lambda p: p.value).params["n"]
    jobs = [(VARIANTS[v], VARIANTS[v][3], fast_accumulation) for v in others]
    if fast_accumulation:   # the price of exact accumulation (cuBLASLt's periodic promotion to FP32)
        jobs.append(((a_fmt, b_fmt, prec, base), f"{base}.promoted_acc", False))
    for (af, bf, pr, _), metric, fast in jobs:
        ctx.log(f"FP8 {af}x{bf} {best_n}^3 fast_accumulation={fast}")
        try:
            yield measure_fp8(ctx, env, best_n, best_n, best_n, af, bf, metric=metric, kind=Kind.COMPUTE,
                              precision=pr, rows=check_rows, fast_accumulation=fast, out=out, rest_s=REST_S)
        except Exception as e:
            yield failure(ctx, metric, f"FP8 {af}x{bf} {best_n}^3", e, precision=pr, path=Path.LIBRARY)


