"""FP8 GEMM ceilings through cuBLASLt (nvmath-python's Matmul): E4M3 x E4M3 and the mixed E4M3/E5M2 pairs.

CuPy has no FP8 dtype and no cuBLASLt binding, so operands are PyTorch float8 tensors and nvmath plans the
cuBLASLt call (planning and autotuning untimed). A is row-major (m x k) and B column-major (k x n): the
"TN" layout cuBLASLt's FP8 kernels require. Inputs are drawn from values exact in both FP8 formats, so
the float64 reference of the sampled rows is exact and only accumulation and output rounding remain.
"""

from __future__ import annotations

from typing import Any

from hwprobe.errors import InputError, Skip
from hwprobe.measurement import Measurement
from hwprobe.probes import gemm_common as gc
from hwprobe.probes.base import probe
from hwprobe.probes.gpu_gemm import build_runner, ceiling_of, failure

VARIANTS = {  # name -> (A format, B format, precision, ceiling metric)
    "e4m3xe4m3": ("e4m3", "e4m3", "fp8_e4m3", "fp8_e4m3.tensor_core.cublaslt"),
    "e4m3xe5m2": ("e4m3", "e5m2", "fp8", "fp8.tensor_core.cublaslt.e4m3xe5m2"),
    "e5m2xe4m3": ("e5m2", "e4m3", "fp8", "fp8.tensor_core.cublaslt.e5m2xe4m3"),
}
OUT_TYPES = {"bf16": 14, "fp16": 2}   # cudaDataType of the result
CONVENTION = "A row-major (m x k) fp8, B column-major (k x n) fp8, per-tensor scales 1.0, result {out}"


def fp8_env(ctx) -> tuple[Any, Any, Any]:
    """(cupy, nvmath, torch), or Skip with the reason."""
    dev = ctx.device
    if (dev.cc_major, dev.cc_minor) < (8, 9):
        raise Skip(f"FP8 tensor cores need compute capability 8.9+, this GPU is {dev.arch}")
    try:
        import cupy as cp
    except Exception as e:
        raise Skip(f"CuPy not importable: {e}") from None
    try:
        import nvmath
        import nvmath.linalg.advanced  # noqa: F401
    except Exception as e:
        raise Skip(f"nvmath-python not installed (pip install nvmath-python): {type(e).__name__}: {e}") from None
    try:
        import torch
    except Exception as e:
        raise Skip(f"FP8 operands need PyTorch float8 tensors (CuPy has no FP8 dtype): {e}") from None
    if not hasattr(torch, "float8_e4m3fn"):
        raise Skip(f"torch {torch.__version__} has no float8 dtypes")
    return cp, nvmath, torch


class Fp8Gemm:
    """One planned FP8 matmul: operands, the nvmath Matmul object, and its last result."""

    def __init__(self, cp, nvmath, torch, m: int, n: int, k: int, a_fmt: str, b_fmt: str, *,
                 fast_accumulation: bool = True, out: str = "bf16", autotune: bool = True, seed: int = 3):
        self.cp, self.torch = cp, torch
        self.m, self.n, self.k = m, n, k
        self.fast = fast_accumulation
        dtypes = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
        gen = torch.Generator(device="cuda").manual_seed(seed)
        # Integers -4..4 times 0.5 are gc.FP8_EXACT_VALUES: exact in E4M3 and E5M2.
        def draw(shape, fmt):
            x = torch.randint(-4, 5, shape, device="cuda", generator=gen, dtype=torch.int8)
            return x.float().mul_(0.5).to(dtypes[fmt])

        self.a = draw((m, k), a_fmt)
        self.b = draw((n, k), b_fmt).T                       # (k, n), column-major
        self.stream = cp.cuda.get_current_stream().ptr
        options = {"result_type": nvmath.CudaDataType(OUT_TYPES[out]), "fast_accumulation": fast_accumulation}
        self.mm = nvmath.linalg.advanced.Matmul(self.a, self.b, quantization_scales={"a": 1.0, "b": 1.0},
                                                options=options, stream=self.stream)
        self.mm.plan(stream=self.stream)
        if autotune:
            self.mm.autotune(iterations=3, stream=self.stream)
        self.result = None

    def call(self, i: int = 0) -> None:
        self.result = self.mm.execute(stream=self.stream)

    def check(self, rows: int) -> float:
        torch = self.torch
        self.cp.cuda.get_current_stream().synchronize()
        idx = torch.as_tensor(gc.sample_rows(self.m, rows), device="cuda")
        ref = self.a[idx].float().double() @ self.b.float().double()
        got = self.result[idx].float().double()
        key = "fp8.fast" if self.fast else "fp8"
        return gc.check_close(got.cpu().numpy(), ref.cpu().numpy(), gc.tolerance(key),
                              f"FP8 {self.m}x{self.n}x{self.k}")

    def close(self) -> None:
        self.mm.free()
        self.result = None


def measure_fp8(ctx, env, m: int, n: int, k: int, a_fmt: str, b_fmt: str, *, metric: str, kind: str,
                precision: str, rows: int, fast_accumulation: bool = True, out: str = "bf16",
                autotune: bool = True, extra: dict | None = None) -> Measurement:
    cp, nvmath, torch = env
    g = Fp8Gemm(cp, nvmath, torch, m, n, k, a_fmt, b_fmt, fast_accumulation=fast_accumulation, out=out,
                autotune=autotune)
    try:
        runner = build_runner(cp, g.call, graph=False)
        err: dict = {}

        def check() -> None:
            err["rel"] = g.check(rows)

        meas = ctx.measure(
            metric, runner.fn, work=gc.gemm_flops(m, n, k) * runner.reps, unit="FLOP/s", kind=kind, check=check,
            precision=precision, exec_unit="tensor_core", path="library",
            params={"m": m, "n": n, "k": k, "a": a_fmt, "b": b_fmt, "out": out, "fast_accumulation": fast_accumulation,
                    "reps": runner.reps, "api": "nvmath.linalg.advanced.Matmul (cuBLASLt)", **(extra or {})},
            notes=[CONVENTION.format(out=out), *runner.notes])
        if "rel" in err:
            meas.params["rel_error"] = err["rel"]
        if runner.launch_bound:
            meas.flags.append("launch_bound")
        return meas
    finally:
        g.close()
        torch.cuda.empty_cache()


@probe(name="gpu.gemm_fp8", target="gpu", family="compute",
       summary="FP8 GEMM (E4M3, E4M3xE5M2) through cuBLASLt via nvmath-python: size sweep and ceilings",
       precisions=("fp8_e4m3", "fp8"))
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
    for n in plan:
        metric = f"{base}.n{n}"
        ctx.log(f"FP8 {first} {n}^3")
        try:
            m = measure_fp8(ctx, env, n, n, n, a_fmt, b_fmt, metric=metric, kind="sweep", precision=prec,
                            rows=check_rows, fast_accumulation=fast_accumulation, out=out)
        except Exception as e:
            yield failure(ctx, metric, f"FP8 {first} {n}^3", e, precision=prec, path="library")
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
            yield measure_fp8(ctx, env, best_n, best_n, best_n, af, bf, metric=metric, kind="compute",
                              precision=pr, rows=check_rows, fast_accumulation=fast, out=out)
        except Exception as e:
            yield failure(ctx, metric, f"FP8 {af}x{bf} {best_n}^3", e, precision=pr, path="library")


def fp8_align_points(ctx, plan, rows: int):
    """For gpu.gemm_align: (measurement, row) pairs at aligned and odd sizes, E4M3 x E4M3."""
    try:
        env = fp8_env(ctx)
    except Skip as e:
        yield failure(ctx, "align.fp8", "FP8", e, precision="fp8_e4m3", path="library"), None
        return
    for align, n, odd in plan:
        try:
            ma = measure_fp8(ctx, env, n, n, n, "e4m3", "e4m3", metric=f"align.fp8.{n}", kind="sweep",
                             precision="fp8_e4m3", rows=rows, autotune=False, extra={"align": align})
        except Exception as e:
            yield failure(ctx, f"align.fp8.{n}", f"FP8 {n}^3", e, precision="fp8_e4m3", path="library"), None
            continue
        yield ma, None
        row = {"align": align, "n": n, "rate": ma.value, "odd_rate": None}
        try:
            mo = measure_fp8(ctx, env, odd, odd, odd, "e4m3", "e4m3", metric=f"align.fp8.{odd}", kind="sweep",
                             precision="fp8_e4m3", rows=rows, autotune=False, extra={"align": 1})
            row["odd_rate"] = mo.value
            yield mo, row
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            yield failure(ctx, f"align.fp8.{odd}", f"FP8 {odd}^3 (odd size)", e, precision="fp8_e4m3",
                          path="library"), row
