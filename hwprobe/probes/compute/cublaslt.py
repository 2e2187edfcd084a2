"""cuBLASLt GEMM paths for the library probes (gpu.gemm, gpu.gemm_fp8, gpu.sparse, gpu.gemm_power).

CuPy has no FP8 dtype and no cuBLASLt binding. Two routes, both autotuned untimed:
- nvmath-python's ``Matmul`` (FP8, FP16, BF16, TF32) on PyTorch operands: A row-major (m x k), B
  column-major (k x n), the "TN" layout cuBLASLt's FP8 kernels require.
- ``LtGemm``: raw cuBLASLt (nvmath.bindings.cublasLt) for INT8, which nvmath's Matmul does not accept, with
  the TN layout (A transposed) that INT8 tensor-core (IMMA) kernels need; the fastest of up to 32 heuristic
  algorithms wins.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hwprobe.errors import Skip
from hwprobe.measurement import Measurement
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.probes.compute.cublas import (
    CublasGemm,
    build_runner,
    failure,
    finish_record,
    fp8_finite_values,
    measure_gemm,
    rest,
    sentinel,
)
from hwprobe.timing import interleaved_medians
from hwprobe.vocab import ExecUnit, Kind, Path

VARIANTS = {  # name -> (A format, B format, precision, ceiling metric)
    "e4m3xe4m3": ("e4m3", "e4m3", "fp8_e4m3", "fp8_e4m3.tensor_core.cublaslt"),
    "e4m3xe5m2": ("e4m3", "e5m2", "fp8", "fp8.tensor_core.cublaslt.e4m3xe5m2"),
    "e5m2xe4m3": ("e5m2", "e4m3", "fp8", "fp8.tensor_core.cublaslt.e5m2xe4m3"),
}
OUT_TYPES = {"bf16": 14, "fp16": 2}   # cudaDataType of the result
CONVENTION = "A row-major (m x k) fp8, B column-major (k x n) fp8, per-tensor scales {scale:.3g} each, result {out}"
# nvmath Matmul paths of gpu.gemm: precision -> (torch dtype name, compute type or None, tolerance key)
MATMUL_TYPES = {"fp16": ("float16", None, "fp16.f32acc"), "bf16": ("bfloat16", None, "bf16"),
                "tf32": ("float32", gc.COMPUTE_32F_FAST_TF32, "tf32")}
AUTOTUNE_ITERATIONS = 3
LT_ALGOS = 8            # heuristic algorithms autotuned (nvmath's default plan limit)
LT_GEMM_ALGOS = 32      # raw cuBLASLt (INT8): ask the heuristic for more; each runs a few times, interleaved
LT_WORKSPACE = 32 << 20
# A rested window (gpu.gemm_fp8's every size, gpu.gemm's limited ceilings) opens after the GPU rested REST_S.
# Under the 700 W cap an H200 runs e4m3 at 16384 at ~1520 TFLOP/s for 25-60 ms after a rest of 0.3 s or 1 s, then at
# the cap's ~1330; right after 150 ms of the same GEMM (the autotuning and the runner's pilot calls) the window opened
# at ~1340 (8192: ~1500 against 1260-1280). Without the rest the window opened wherever the host's gaps had left the
# limiter: 1383-1516 across one lease's runs of the same code. Rested, the ceiling is the library's burst
# (profiles/h200-sxm/2026-11-29-s40: every call timed over 1.5 s, 18 records). The FP8 variants (E5M2 pairs,
# promoted accumulation) rest too: in 1.2-s energy windows at the cap's level they read 9-12% under the rested E4M3
# ceiling for the window, not the format; their joules come from a window of their own (measure_matmul).
REST_S = 0.3


def ahead(dev) -> None:
    """The run-start hook (``@probe(ahead=...)``) of the probes that plan nvmath Matmuls on PyTorch tensors: PyTorch
    and nvmath's linalg imported on a daemon thread (hwprobe.probes.imports), for lt_env to find loaded."""
    from hwprobe.probes.imports import import_ahead

    import_ahead("torch", "nvmath.linalg.advanced")


def lt_env(ctx, fp8: bool = True) -> tuple[Any, Any, Any]:
    """(cupy, nvmath, torch), or Skip with the reason."""
    dev = ctx.device
    if fp8 and (dev.cc_major, dev.cc_minor) < (8, 9):
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
        raise Skip(f"nvmath Matmul operands here are PyTorch tensors (CuPy has no FP8/BF16 dtype): {e}") from None
    if fp8 and not hasattr(torch, "float8_e4m3fn"):
        raise Skip(f"torch {torch.__version__} has no float8 dtypes")
    return cp, nvmath, torch


def fp8_env(ctx) -> tuple[Any, Any, Any]:
    return lt_env(ctx, fp8=True)


class LtMatmul:
    """One planned nvmath Matmul (cuBLASLt) on given operands: autotuned untimed; ``call`` is one execute."""

    def __init__(self, cp, nvmath, torch, a, b, *, options: dict, tol: float, what: str, scales=None,
                 autotune: bool = True, operands: str = "", precision_key: str = ""):
        self.cp, self.torch, self.a, self.b, self.tol, self.what = cp, torch, a, b, tol, what
        self.operands, self.precision_key, self.precision_result = operands, precision_key, None
        self.scale = float((scales or {}).get("a", 1.0) * (scales or {}).get("b", 1.0))   # D = sa sb A @ B
        self.m, self.k = a.shape
        self.n = b.shape[1]
        self.stream = cp.cuda.get_current_stream().ptr
        self.mm = nvmath.linalg.advanced.Matmul(a, b, quantization_scales=scales, options=options, stream=self.stream)
        try:
            self.mm.plan(preferences={"limit": LT_ALGOS}, stream=self.stream)
            self.algorithms = len(self.mm.algorithms)
            if autotune:
                self.mm.autotune(iterations=AUTOTUNE_ITERATIONS, stream=self.stream)
        except Exception:
            self.mm.free()
            raise
        self.result = None

    def call(self, i: int = 0) -> None:
        self.result = self.mm.execute(stream=self.stream)

    def chosen(self) -> dict:
        """The algorithm that runs (the fastest after autotuning), for params."""
        try:
            alg = self.mm.algorithms[0]
            return {"algorithm_id": int(alg.algorithm_id), "tile": str(alg.tile), "split_k": int(alg.split_k),
                    "algorithms_tried": self.algorithms}
        except Exception as e:      # informative only
            return {"algorithms_tried": self.algorithms, "algorithm": f"unknown ({type(e).__name__})"}

    def check(self, rows: int) -> float:
        torch = self.torch
        self.cp.cuda.get_current_stream().synchronize()
        idx = torch.as_tensor(gc.sample_rows(self.m, rows), device="cuda")
        ref = self.a[idx].float().double() @ self.b.float().double() * self.scale   # FP8: no direct cast
        got = self.result[idx].float().double()
        return gc.check_close(got.cpu().numpy(), ref.cpu().numpy(), self.tol, f"{self.what} {self.m}x{self.n}x{self.k}")

    def precision_check(self, rows: int) -> dict | None:
        """gc.PRECISION_CHECKS on crafted operands written into A and B after the timed samples: exact."""
        key = self.precision_key
        if key not in gc.PRECISION_CHECKS or self.k % 2 or self.k < 8:
            return None
        torch = self.torch
        a_l, b_l = gc.precision_operands(key, self.m, self.n, self.k, xp=self.cp)
        self.a.copy_(torch.as_tensor(a_l, device="cuda"))
        self.b.copy_(torch.as_tensor(b_l, device="cuda"))
        self.call()
        self.cp.cuda.get_current_stream().synchronize()
        idx = torch.as_tensor(gc.sample_rows(self.m, rows), device="cuda")
        ref = self.a[idx].double() @ self.b.double()
        gc.check_close(self.result[idx].double().cpu().numpy(), ref.cpu().numpy(), 0.0,
                       f"{self.what} {self.m}x{self.n}x{self.k} precision check ({gc.PRECISION_CHECKS[key]})")
        self.precision_result = {"operands": gc.PRECISION_CHECKS[key], "rows": rows, "exact": True}
        return self.precision_result

    def close(self) -> None:
        self.mm.free()
        self.result = None


def fp8_scale(fmt_a: str, fmt_b: str, k: int) -> float:
    """Per-tensor scale for A and B that brings sa sb (A @ B) of uniform random codes near unit size: the
    product's rms is sqrt(k E[a^2] E[b^2]) (so an FP16 result cannot overflow)."""
    ea, eb = (float(np.mean(fp8_finite_values(f)[1] ** 2)) for f in (fmt_a, fmt_b))
    return float((k * ea * eb) ** -0.25)


FP8_OPERANDS = "{a} x {b}: uniform over each format's finite codes (full range, every code but NaN/inf equally likely)"


def fp8_matmul(cp, nvmath, torch, m: int, n: int, k: int, a_fmt: str, b_fmt: str, *, fast_accumulation: bool = True,
               out: str = "bf16", autotune: bool = True, seed: int = 3) -> LtMatmul:
    """A (m x k) and B (k x n, column-major) drawn uniformly from every finite FP8 code, per-tensor scales
    (``fp8_scale``) as FP8 training and inference use them."""
    dtypes = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    gen = torch.Generator(device="cuda").manual_seed(seed)

    def draw(shape, fmt):
        codes = torch.as_tensor(fp8_finite_values(fmt)[0], device="cuda")
        idx = torch.randint(0, len(codes), shape, device="cuda", generator=gen)
        return codes[idx].view(dtypes[fmt])

    a = draw((m, k), a_fmt)
    b = draw((n, k), b_fmt).T                       # (k, n), column-major
    sc = fp8_scale(a_fmt, b_fmt, k)
    options = {"result_type": nvmath.CudaDataType(OUT_TYPES[out]), "fast_accumulation": fast_accumulation}
    return LtMatmul(cp, nvmath, torch, a, b, options=options, scales={"a": sc, "b": sc}, autotune=autotune,
                    tol=gc.tolerance("fp8.fast" if fast_accumulation else "fp8"), what=f"FP8 {a_fmt}x{b_fmt}",
                    operands=FP8_OPERANDS.format(a=a_fmt, b=b_fmt) + f"; scales {sc:.3g} each")


def typed_matmul(cp, nvmath, torch, prec: str, m: int, n: int, k: int, seed: int = 4) -> LtMatmul:
    """FP16/BF16/TF32 nvmath Matmul: uniform operands scaled so sums of k products stay near 1."""
    dtype_name, compute, tol_key = MATMUL_TYPES[prec]
    dtype = getattr(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    scale = k ** -0.25

    def draw(shape):
        return (torch.rand(shape, device="cuda", generator=gen) * 2 - 1).mul_(scale).to(dtype)

    a = draw((m, k))
    b = draw((n, k)).T                             # (k, n), column-major: the TN layout
    options = {} if compute is None else {"compute_type": compute}
    return LtMatmul(cp, nvmath, torch, a, b, options=options, tol=gc.tolerance(tol_key, k), what=f"cuBLASLt {prec}",
                    operands=f"{dtype_name} uniform in (-{scale:.4g}, {scale:.4g})", precision_key=tol_key)


def measure_matmul(ctx, g: LtMatmul, *, metric: str, kind: str, precision: str, rows: int, params: dict,
                   notes: list[str], rest_s: float = 0.0) -> Measurement:
    """Time (Python loop of executes; calls here last >= ~10 us) and check one planned Matmul, then free it.
    ``rest_s``: the GPU idles that long after the autotuning and the runner's pilot calls, before a window under
    the policy's rested rule (five samples in one batch). A rested compute figure's joules per operation come from
    a window of their own right after it (the energy rule's 1.2 s, at the power cap's level): ``params
    ["sustained"]`` gives that window's rate, clock, power and joules, and the record's own rate stays the burst's."""
    try:
        runner = build_runner(g.cp, g.call, graph=False)
        timing: dict = {}
        if rest_s > 0:
            params, timing = {**params, "rest_s": rest_s}, rest(g.cp, rest_s)
        err: dict = {}
        clocks = [sentinel(ctx)]

        def check() -> None:
            clocks.append(sentinel(ctx))
            err["rel"] = g.check(rows)
            g.precision_check(rows)

        m, n, k = g.m, g.n, g.k
        meas = ctx.measure(
            metric, runner.fn, work=gc.gemm_flops(m, n, k) * runner.reps, unit="FLOP/s", kind=kind, check=check,
            precision=precision, exec_unit=ExecUnit.TENSOR_CORE, path=Path.LIBRARY,
            params={"m": m, "n": n, "k": k, "layout": "TN", "reps": runner.reps,
                    "api": "nvmath.linalg.advanced.Matmul (cuBLASLt)", "autotune_iterations": AUTOTUNE_ITERATIONS,
                    "operands": g.operands, **g.chosen(), **params},
            notes=[*notes, *runner.notes], **timing)
        if rest_s > 0 and kind == Kind.COMPUTE and ctx.energy_window_s > 0:
            meas.params["sustained"] = sustained_window(ctx, metric, runner.fn, meas.work, meas.unit)
        return finish_record(meas, err, g.precision_result, clocks, runner)
    finally:
        g.close()
        g.torch.cuda.empty_cache()


def sustained_window(ctx, metric: str, fn, work: float, unit: str) -> dict:
    """A compute figure's energy window (the energy rule, unchecked: the burst window before it was checked) as
    params: its rate, SM clock, power, joules per operation and throttle reasons."""
    w = ctx.measure(metric, fn, work=work, unit=unit, kind=Kind.COMPUTE, warmup=0)
    return {**w.power_summary(), "samples": len(w.samples_s),
            "throttle_reasons": list(w.clocks.throttle_reasons) if w.clocks else []}


def measure_fp8(ctx, env, m: int, n: int, k: int, a_fmt: str, b_fmt: str, *, metric: str, kind: str,
                precision: str, rows: int, fast_accumulation: bool = True, out: str = "bf16",
                autotune: bool = True, extra: dict | None = None, rest_s: float = 0.0) -> Measurement:
    cp, nvmath, torch = env
    g = fp8_matmul(cp, nvmath, torch, m, n, k, a_fmt, b_fmt, fast_accumulation=fast_accumulation, out=out,
                   autotune=autotune)
    return measure_matmul(ctx, g, metric=metric, kind=kind, precision=precision, rows=rows,
                          params={"a": a_fmt, "b": b_fmt, "out": out, "fast_accumulation": fast_accumulation,
                                  **(extra or {})},
                          notes=[CONVENTION.format(out=out, scale=fp8_scale(a_fmt, b_fmt, k))], rest_s=rest_s)


# --- raw cuBLASLt (INT8) -------------------------------------------------------------------------------------
def _set_attr(setter, dtype_of, obj: int, attr, value) -> None:
    arr = np.array([value], dtype=dtype_of(attr))
    setter(obj, attr, arr.ctypes.data, arr.itemsize)


def lt_layouts(v: gc.GemmVariant, m: int, n: int, k: int) -> tuple[tuple[int, int, int], ...]:
    """(rows, cols, ld) of the stored A, B, C for cuBLASLt's column-major layouts (same buffers as gemmEx)."""
    lda, ldb, ldc = gc.leading_dims(m, n, k, v.transa, v.transb)
    a = (k, m) if v.transa == gc.OP_T else (m, k)
    b = (n, k) if v.transb == gc.OP_T else (k, n)
    return (a[0], a[1], lda), (b[0], b[1], ldb), (m, n, ldc)


class LtGemm(CublasGemm):
    """CublasGemm's operands and check, multiplied by cublasLtMatmul with the fastest heuristic algorithm.

    The algorithm is chosen untimed: each of up to LT_GEMM_ALGOS heuristic candidates runs
    AUTOTUNE_ITERATIONS times on operand set 0, in interleaved rounds so that a clock falling under the
    power cap penalizes no candidate more than another, and the lowest median wins. Candidates the library
    rejects at their first run are dropped. cublasLtMatmul (nvmath's binding) can be captured in a graph.
    """

    graph_unavailable = ""

    def __init__(self, env, v: gc.GemmVariant, m: int, n: int, k: int, *, lt=None, **kw):
        super().__init__(env, v, m, n, k, **kw)
        if lt is None:
            from nvmath.bindings import cublasLt as lt
        self.lt, self._made = lt, []
        try:
            self._setup()
        except Exception:
            self.close()
            raise

    def _keep(self, destroy, obj: int) -> int:
        self._made.append((destroy, obj))
        return obj

    def _setup(self) -> None:
        lt, v, cp = self.lt, self.v, self.env.cp
        self.h = self._keep(lt.destroy, lt.create())
        self.desc = self._keep(lt.matmul_desc_destroy,
                               lt.matmul_desc_create(v.compute, v.scale_type))
        attrs = [(lt.MatmulDescAttribute.TRANSA, v.transa), (lt.MatmulDescAttribute.TRANSB, v.transb)]
        if v.storage == "fp8":      # FP8: fast accumulation (no periodic promotion), as gpu.gemm_fp8's ceiling
            attrs.append((lt.MatmulDescAttribute.FAST_ACCUM, 1))
        for attr, val in attrs:
            _set_attr(lt.matmul_desc_set_attribute, lt.get_matmul_desc_attribute_dtype, self.desc, attr, val)
        (ar, ac, lda), (br, bc, ldb), (cr, cc, ldc) = lt_layouts(v, self.m, self.n, self.k)
        self.la = self._keep(lt.matrix_layout_destroy, lt.matrix_layout_create(v.ab_type, ar, ac, lda))
        self.lb = self._keep(lt.matrix_layout_destroy, lt.matrix_layout_create(v.ab_type, br, bc, ldb))
        self.lc = self._keep(lt.matrix_layout_destroy, lt.matrix_layout_create(v.c_type, cr, cc, ldc))
        self.ws = cp.zeros(LT_WORKSPACE, dtype=cp.uint8)
        pref = self._keep(lt.matmul_preference_destroy, lt.matmul_preference_create())
        _set_attr(lt.matmul_preference_set_attribute, lt.get_matmul_preference_attribute_dtype, pref,
                  lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, LT_WORKSPACE)
        self.heur = np.zeros(LT_GEMM_ALGOS, dtype=lt.matmul_heuristic_result_dtype)
        count = np.zeros(1, dtype=np.int32)
        lt.matmul_algo_get_heuristic(self.h, self.desc, self.la, self.lb, self.lc, self.lc, pref, LT_GEMM_ALGOS,
                                     self.heur.ctypes.data, count.ctypes.data)
        usable = [i for i in range(int(count[0]))
                  if int(self.heur["state"][i]) == 0 and int(self.heur["workspace_size"][i]) <= LT_WORKSPACE]
        if not usable:
            raise RuntimeError(f"cuBLASLt heuristic found no algorithm for {v.key} {v.layout}")
        self.timings, self.rejected = self._autotune(usable)
        if not self.timings:
            raise RuntimeError(f"cuBLASLt rejected all {len(usable)} heuristic algorithms: {self.rejected}")
        self.algorithms = len(usable)
        self.best = min(self.timings, key=self.timings.get)
        self.algo_ptr = self._algo_ptr(self.best)

    def _algo_ptr(self, i: int) -> int:
        return self.heur.ctypes.data + i * self.heur.itemsize + self.heur.dtype.fields["algo"][1]

    def _autotune(self, usable: list[int]) -> tuple[dict[int, float], dict[str, str]]:
        """({heuristic index: median seconds}, {index: error} for candidates that failed their warm-up)."""
        ok, rejected = [], {}
        for i in usable:
            try:
                self._matmul(self._algo_ptr(i), 0)          # warm-up (and the error, if it has one)
                ok.append(i)
            except Exception as e:
                rejected[str(i)] = f"{type(e).__name__}: {e}"
        self.env.cp.cuda.get_current_stream().synchronize()
        ptrs = {i: self._algo_ptr(i) for i in ok}
        calls = {i: (lambda ptr=ptr: self._matmul(ptr, 0)) for i, ptr in ptrs.items()}
        return interleaved_medians(calls, AUTOTUNE_ITERATIONS, self.env.cp), rejected

    def _matmul(self, algo_ptr: int, i: int) -> None:
        a, b, c = self.ops[i]
        self.lt.matmul(self.h, self.desc, self.alpha.ctypes.data, a.data.ptr, self.la, b.data.ptr, self.lb,
                       self.beta.ctypes.data, c.data.ptr, self.lc, c.data.ptr, self.lc, algo_ptr,
                       self.ws.data.ptr, LT_WORKSPACE, self.env.cp.cuda.get_current_stream().ptr)

    def call(self, i: int) -> None:
        self._matmul(self.algo_ptr, i)

    def set_stream(self, ptr: int) -> None:
        pass            # every call runs on the current stream (the graph's capture stream included)

    def params(self, runner) -> dict:
        p = super().params(runner)
        p.update(api="cublasLtMatmul", binding="nvmath.bindings.cublasLt",
                 algo=f"heuristic #{self.best} of {self.algorithms}",
                 autotune_s={str(i): t for i, t in self.timings.items()}, workspace_bytes=LT_WORKSPACE,
                 **({"rejected_algos": self.rejected} if self.rejected else {}))
        return p

    def close(self) -> None:
        gc.release_all(self._made)


class LtGemmI8Out(LtGemm):
    """INT8 in, INT32 accumulate, INT8 out: C = sat(round(alpha x A.B)), alpha (float32) scaling the products to
    a standard deviation of 32 (what a calibrated INT8 activation holds). Checked against alpha x the float64
    product of sampled rows, saturated to [-128, 127], within the rounding's relative error."""

    OUT_SIGMA = 32.0

    def __init__(self, env, v: gc.GemmVariant, m: int, n: int, k: int, **kw):
        super().__init__(env, v, m, n, k, **kw)
        cp = env.cp
        a, b, _ = self.ops[0]
        rms = float(cp.sqrt(cp.mean(cp.square(a.astype(cp.float32))) * cp.mean(cp.square(b.astype(cp.float32)))))
        self.alpha.fill(self.OUT_SIGMA / (math.sqrt(k) * rms) if rms > 0 else 1.0)

    def epilogue(self, product):
        """What the INT8 output should hold: alpha x the product, saturated (the check's reference)."""
        return self.env.cp.clip(float(self.alpha) * product, -128, 127)

    def params(self, runner) -> dict:
        return {**super().params(runner), "alpha": float(self.alpha), "output": "int8, saturated"}


INT8_LT = (  # (variant key, class, metric stem, note) of gpu.gemm's INT8 cuBLASLt points
    ("int8.tn", LtGemm, "int8.tensor_core.cublaslt",
     "raw cuBLASLt, INT8 TN (IMMA), INT32 output, fastest heuristic algo"),
    ("int8.tn.i8out", LtGemmI8Out, "int8.tensor_core.cublaslt.i8out",
     "raw cuBLASLt, INT8 TN (IMMA), INT8 output (alpha x acc, rounded and saturated: INT8 inference's epilogue), "
     "fastest heuristic algo"),
)


def lt_points(ctx, env, prec: str, sizes: list[int], rows: int):
    """gpu.gemm's cuBLASLt points for one precision (largest size first); failures come back as info records."""
    stems = [stem for _, _, stem, _ in INT8_LT] if prec == "int8" else [f"{prec}.tensor_core.cublaslt"]
    if prec != "int8":
        try:
            lt_env(ctx, fp8=False)
        except Skip as e:
            yield failure(ctx, stems[0], "cuBLASLt (nvmath Matmul)", e, precision=prec, path=Path.LIBRARY)
            return
    for n in sizes:
        for stem in stems:
            try:
                yield lt_point(ctx, env, stem, n, rows)
            except Exception as e:
                yield failure(ctx, f"{stem}.n{n}", f"cuBLASLt {stem} {n}^3", e, precision=prec, path=Path.LIBRARY)


def lt_point(ctx, env, stem: str, n: int, rows: int, *, metric: str | None = None, rest_s: float = 0.0):
    """One of gpu.gemm's cuBLASLt points: configuration ``stem`` (a ceiling metric) at n^3, named ``metric``
    (default ``stem.n<n>``); ``rest_s``: a rested window (measure_gemm, measure_matmul). Raises on failure."""
    metric = metric or f"{stem}.n{n}"
    prec = stem.split(".", 1)[0]
    for key, cls, int8_stem, note in INT8_LT:
        if stem == int8_stem:
            ctx.log(f"cuBLASLt {key} {n}^3")
            return measure_gemm(ctx, env, gc.variant(key), n, n, n, metric=metric, kind=Kind.SWEEP, rows=rows,
                                gemm_cls=cls, notes=(note,), rest_s=rest_s)
    cp, nvmath, torch = lt_env(ctx, fp8=False)
    ctx.log(f"cuBLASLt {prec} {n}^3 (nvmath Matmul, autotuned)")
    g = typed_matmul(cp, nvmath, torch, prec, n, n, n)
    return measure_matmul(ctx, g, metric=metric, kind=Kind.SWEEP, precision=prec, rows=rows,
                          params={"dtype": MATMUL_TYPES[prec][0],
                                  "compute_type": "COMPUTE_32F_FAST_TF32" if prec == "tf32" else "default"},
                          notes=["A row-major, B column-major (TN), result in the input type"], rest_s=rest_s)


def fp8_align_points(ctx, plan, rows: int):
    """For gpu.gemm_align: (measurement, row) pairs at aligned and odd sizes, E4M3 x E4M3."""
    try:
        env = fp8_env(ctx)
    except Skip as e:
        yield failure(ctx, "align.fp8", "FP8", e, precision="fp8_e4m3", path=Path.LIBRARY), None
        return
    for align, n, odd in plan:
        try:
            ma = measure_fp8(ctx, env, n, n, n, "e4m3", "e4m3", metric=f"align.fp8.{n}", kind=Kind.SWEEP,
                             precision="fp8_e4m3", rows=rows, autotune=False, extra={"align": align})
        except Exception as e:
            yield failure(ctx, f"align.fp8.{n}", f"FP8 {n}^3", e, precision="fp8_e4m3", path=Path.LIBRARY), None
            continue
        yield ma, None
        row = {"align": align, "n": n, "rate": ma.value, "odd_rate": None}
        try:
            mo = measure_fp8(ctx, env, odd, odd, odd, "e4m3", "e4m3", metric=f"align.fp8.{odd}", kind=Kind.SWEEP,
                             precision="fp8_e4m3", rows=rows, autotune=False, extra={"align": 1})
            row["odd_rate"] = mo.value
            yield mo, row
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            yield failure(ctx, f"align.fp8.{odd}", f"FP8 {odd}^3 (odd size)", e, precision="fp8_e4m3",
                          path=Path.LIBRARY), row
