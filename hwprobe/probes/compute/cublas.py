"""The cuBLAS runtime both library GEMM probes use: handles and math modes, operands, the row check against
float64, the CUDA-graph runner, one timed GEMM point (``measure_gemm``), failures, and the ceiling of a sweep.

gemmEx is called through nvmath-python's cuBLAS binding on a handle of its own (CuPy's refuses stream
capture); without nvmath, samples fall back to Python loops, flagged. Operand sets rotate when one set would
sit in L2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwprobe import keys as K
from hwprobe.errors import Skip, is_library_refusal
from hwprobe.measurement import Measurement
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.probes.compute.f64_copy import to_f64
from hwprobe.timing import policy, time_cuda_issue, time_cuda_once
from hwprobe.timing.steady import Settled, Sustain, best_window, settle
from hwprobe.vocab import Kind, Path, Precision

MAX_REPS = 4096         # GEMMs in one graph at most
COMPUTE_NAMES = {gc.COMPUTE_16F: "CUBLAS_COMPUTE_16F", gc.COMPUTE_32F: "CUBLAS_COMPUTE_32F",
                 gc.COMPUTE_64F: "CUBLAS_COMPUTE_64F", gc.COMPUTE_32I: "CUBLAS_COMPUTE_32I",
                 gc.COMPUTE_32F_FAST_TF32: "CUBLAS_COMPUTE_32F_FAST_TF32"}
FP32_UNIT_NOTE = ("FP32 without TF32 has no tensor-core path on this GPU: cuBLAS SGEMM runs on FFMA (CUDA "
                  "cores). The 1e-5 check against float64 rules out TF32 inputs (they give ~3e-4)")


# --- environment -----------------------------------------------------------------------------------------
WORKSPACE_BYTES = 32 << 20      # cuBLAS workspace on Hopper (set explicitly: nothing is allocated during capture)


@dataclass
class CublasEnv:
    cp: Any
    cublas: Any         # CuPy-style names (gemmEx, setStream, getMathMode...): CuPy's module or NvmathCublas
    handle: int
    l2_bytes: int
    binding: str = "cupy.cuda.cublas"
    graph_unavailable: str = ""     # why CUDA graphs cannot hold this binding's calls ("" = they can)


class NvmathCublas:
    """nvmath-python's cuBLAS binding under CuPy's method names, on a handle of its own.

    CuPy's cublas wrappers refuse to run during stream capture; nvmath's call cuBLAS directly, so gemmEx
    can be captured in a CUDA graph. setStream resets the handle's workspace to the default pool, so the
    explicit workspace is set again after every stream change.
    """

    def __init__(self, mod, workspace_ptr: int, workspace_bytes: int):
        self.mod, self.ws, self.ws_bytes = mod, workspace_ptr, workspace_bytes

    def getMathMode(self, h: int) -> int:       # noqa: N802 - CuPy's names
        return self.mod.get_math_mode(h)

    def setMathMode(self, h: int, mode: int) -> None:     # noqa: N802
        self.mod.set_math_mode(h, mode)

    def getPointerMode(self, h: int) -> int:    # noqa: N802
        return self.mod.get_pointer_mode(h)

    def setPointerMode(self, h: int, mode: int) -> None:  # noqa: N802
        self.mod.set_pointer_mode(h, mode)

    def setStream(self, h: int, stream: int) -> None:     # noqa: N802
        self.mod.set_stream(h, stream)
        self.mod.set_workspace(h, self.ws, self.ws_bytes)

    def gemmEx(self, *args) -> None:            # noqa: N802
        self.mod.gemm_ex(*args)


_NVMATH: dict[int, tuple[NvmathCublas, int, Any]] = {}    # device id -> (binding, handle, workspace buffer)


def _nvmath_cublas(cp) -> tuple[NvmathCublas, int]:
    """One nvmath cuBLAS handle (and workspace) per device for the process: probes share it."""
    dev = cp.cuda.Device().id
    if dev not in _NVMATH:
        from nvmath.bindings import cublas as mod

        ws = cp.empty(WORKSPACE_BYTES, dtype=cp.uint8)
        handle = mod.create()
        blas = NvmathCublas(mod, ws.data.ptr, WORKSPACE_BYTES)
        blas.setStream(handle, cp.cuda.get_current_stream().ptr)
        _NVMATH[dev] = (blas, handle, ws)
    blas, handle, _ = _NVMATH[dev]
    return blas, handle


def cublas_env(ctx) -> CublasEnv:
    """cuBLAS through nvmath's binding (CUDA-graph capturable); CuPy's binding, without graphs, if it fails."""
    try:
        import cupy as cp
    except Exception as e:
        raise Skip(f"CuPy not importable: {e}") from None
    l2 = int(getattr(ctx.device, "l2_bytes", 0) or 50 << 20)
    try:
        blas, handle = _nvmath_cublas(cp)
        return CublasEnv(cp, blas, handle, l2, binding="nvmath.bindings.cublas")
    except Exception as e:
        reason = (f"nvmath.bindings.cublas unusable ({type(e).__name__}: {e}); CuPy's cublas refuses stream "
                  f"capture, so samples are Python loops of gemmEx calls")
    try:
        from cupy_backends.cuda.libs import cublas
    except ImportError:
        from cupy.cuda import cublas
    return CublasEnv(cp, cublas, cp.cuda.device.get_cublas_handle(), l2, graph_unavailable=reason)


@contextlib.contextmanager
def cublas_mode(env: CublasEnv, math_mode: int):
    """Set the handle's math mode, host pointer mode and stream for a block, and restore the modes after."""
    cb, h = env.cublas, env.handle
    old_math, old_ptr = cb.getMathMode(h), cb.getPointerMode(h)
    cb.setMathMode(h, math_mode)
    cb.setPointerMode(h, gc.POINTER_MODE_HOST)
    cb.setStream(h, env.cp.cuda.get_current_stream().ptr)
    try:
        yield
    finally:
        cb.setMathMode(h, old_math)
        cb.setPointerMode(h, old_ptr)
        cb.setStream(h, env.cp.cuda.get_current_stream().ptr)


# --- operands --------------------------------------------------------------------------------------------
# Operand data: tensor-core power follows how many operand bits toggle, and at the power cap power sets the
# clock (gpu_gemm_power). Ceilings use "uniform", full-entropy data; the others are for that probe.
DATA = {
    "uniform": "uniform: int8 in [-127, 127], floats in (-s, s), fp8 uniform over its finite codes (full range)",
    "normal": "normal, same spread: int8 N(0, 32^2) rounded and clipped (a max-calibrated tensor, 4 sigma = 127), "
              "floats N(0, s^2 / 3), fp8 N(0, 112^2) rounded to the nearest E4M3 value (4 sigma = 448)",
    "relu": "A as post-ReLU activations (normal with the negative half zeroed), B normal (weights)",
    "zeros": "all zeros: no bit toggles (a reference for the kernel's per-clock rate, not a workload)",
}
INT8_SIGMA = 32.0
FP8_SIGMA = 112.0       # E4M3's largest finite value (448) at 4 sigma


def operands_desc(kind: str, data: str, scale: float = 1.0) -> str:
    """params["operands"]: the distribution a GEMM's A and B were drawn from, in words."""
    if data == "zeros":
        return "A and B all zeros"
    if kind == "int8":
        return {"uniform": "int8 uniform in [-127, 127]", "normal": "int8 N(0, 32^2) rounded, clipped to +-127",
                "relu": "A int8 max(N(0, 32^2), 0) rounded, B int8 N(0, 32^2)"}[data]
    if kind == "fp8":
        return {"uniform": "fp8 e4m3 uniform over its 254 finite codes (+-448 down to subnormals)",
                "normal": "fp8 e4m3: N(0, 112^2) rounded to the nearest finite value",
                "relu": "fp8 e4m3: A max(N(0, 112^2), 0), B N(0, 112^2), rounded"}[data]
    s = f"{scale:.4g}"
    return {"uniform": f"{kind} uniform in (-{s}, {s})", "normal": f"{kind} N(0, ({s}^2)/3)",
            "relu": f"{kind}: A max(N(0, {s}^2/3), 0), B N(0, {s}^2/3)"}[data]


def fp8_finite_values(fmt: str = "e4m3") -> np.ndarray:
    """(codes, values) of every finite fp8 code, +0 once (no -0), sorted by value."""
    table = gc.fp8_decode_table(fmt)
    codes = np.array([c for c in range(256) if np.isfinite(table[c]) and c != 0x80], dtype=np.uint8)
    order = np.argsort(table[codes], kind="stable")
    return codes[order], table[codes[order]]


def fp8_operand(cp, shape: tuple[int, ...], seed: int, data: str = "uniform", role: str = "a", rs=None):
    """E4M3 codes (uint8; CuPy has no FP8 dtype) of a distribution in DATA (drawn from ``rs`` where given)."""
    codes, values = fp8_finite_values("e4m3")
    rs = rs or gc.operand_rng(cp, seed)
    if data == "zeros":
        return cp.zeros(shape, dtype=cp.uint8)
    if data == "uniform":
        return cp.asarray(codes)[rs.randint(0, len(codes), size=shape)]
    x = rs.standard_normal(size=shape, dtype=cp.float32) * cp.float32(FP8_SIGMA)
    if data == "relu" and role == "a":
        x = cp.maximum(x, 0)
    vals = cp.asarray(values)
    i = cp.clip(cp.searchsorted(vals, x), 1, len(values) - 1)          # nearest of the two neighbours
    i = cp.where(cp.abs(vals[i - 1] - x) <= cp.abs(vals[i] - x), i - 1, i)
    return cp.asarray(codes)[i]


def random_operand(cp, kind: str, shape: tuple[int, ...], seed: int, scale: float = 1.0, data: str = "uniform",
                   role: str = "a", rs=None):
    """Random data of a storage kind (``data``: a key of DATA; ``role`` "a" or "b" for the relu pair), drawn from
    ``rs`` where given (one generator for a point's operand sets: seeding one per operand cost a small GEMM point
    128 generator set-ups), else from a generator seeded with ``seed``.

    uniform, the ceilings' data, is never all zero: uniform(-scale, scale) floats, int8 in [-127, 127]."""
    if data not in DATA:
        raise ValueError(f"unknown operand data {data!r}; known: {', '.join(DATA)}")
    if kind == "fp8":
        return fp8_operand(cp, shape, seed, data, role, rs)
    rs = rs or gc.operand_rng(cp, seed)
    if data == "zeros":
        x = cp.zeros(shape, dtype=cp.float32)
    elif data == "uniform":
        if kind == "int8":
            return rs.randint(-127, 128, size=shape).astype(cp.int8)
        if kind == "float64":
            return rs.uniform(-scale, scale, size=shape, dtype=cp.float64)
        x = rs.uniform(-scale, scale, size=shape, dtype=cp.float32)
    else:
        sigma = INT8_SIGMA if kind == "int8" else scale / math.sqrt(3.0)
        x = rs.standard_normal(size=shape, dtype=cp.float32) * cp.float32(sigma)
        if data == "relu" and role == "a":
            x = cp.maximum(x, 0)
    if kind == "int8":
        return cp.clip(cp.rint(x), -127, 127).astype(cp.int8)
    if kind in ("float64", "float32"):
        return x.astype(kind)
    if kind == "float16":
        return x.astype(cp.float16)
    if kind == "bf16":
        return gc.bf16_bits_from_f32(x, cp)
    raise ValueError(f"unknown storage kind {kind!r}")


def empty_operand(cp, kind: str, shape: tuple[int, ...]):
    dtype = {"float64": cp.float64, "float32": cp.float32, "float16": cp.float16, "bf16": cp.uint16,
             "int32": cp.int32, "int8": cp.int8}[kind]
    return cp.zeros(shape, dtype=dtype)


def check_rows(cp, a_rows, b, c_rows, tol: float, what: str, epilogue: Callable | None = None) -> float:
    """Compare c_rows with the float64 product a_rows @ b (all float64 cupy arrays) on the host; ``epilogue``
    maps the product to what the library writes (INT8 output: scaled and saturated)."""
    ref = a_rows @ b
    if epilogue is not None:
        ref = epilogue(ref)
    return gc.check_close(cp.asnumpy(c_rows), cp.asnumpy(ref), tol, what)


# --- timed runners ---------------------------------------------------------------------------------------
@dataclass
class Runner:
    """What one timed sample runs: ``fn`` issues ``reps`` calls (a graph launch, or a Python loop)."""

    fn: Callable[[], object]
    reps: int
    graph: bool
    per_call_s: float
    host_per_call_s: float
    notes: list[str]
    fallback: str = ""      # why a sample that should have been a graph is a Python loop ("" = no fallback)

    @property
    def launch_bound(self) -> bool:
        return not self.graph and self.host_per_call_s >= 0.8 * self.per_call_s


def _pilot(cp, call: Callable[[int], None], sets: int, count: int) -> tuple[float, float]:
    """(GPU seconds, host issue seconds) per call over ``count`` back-to-back calls."""
    def calls() -> None:
        for i in range(count):
            call(i % sets)

    gpu, host = time_cuda_issue(calls, cp=cp)
    return gpu / count, host / count


def _capture(cp, call: Callable[[int], None], sets: int, reps: int, set_stream: Callable[[int], None] | None):
    """A CUDA graph of ``reps`` calls cycling through the operand sets (captured on a side stream)."""
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        if set_stream:
            set_stream(side.ptr)
        call(0)                         # library state for this stream (workspace) before capture
        side.synchronize()
        side.begin_capture()
        err = None
        try:
            for i in range(reps):
                call(i % sets)
        except Exception as e:          # end the capture in every case, then report the first error
            err = e
        graph = side.end_capture()
    if set_stream:
        set_stream(cp.cuda.get_current_stream().ptr)
    if err is not None:
        raise err
    return graph


def build_runner(cp, call: Callable[[int], None], sets: int = 1, *, graph: bool = True,
                 set_stream: Callable[[int], None] | None = None, target_s: float | None = None,
                 max_reps: int = MAX_REPS, graph_unavailable: str = "") -> Runner:
    """Size a sample to ``target_s`` of GPU time and capture it as a CUDA graph (Python loop if that fails).

    Calls that each last over a quarter of the target run as a plain loop: launch overhead is noise there.
    ``graph_unavailable`` (a reason) skips the capture attempt where the binding is known to refuse it.
    """
    target_s = policy.LIBRARY.sample_s if target_s is None else target_s
    for i in range(2):
        call(i % sets)
    cp.cuda.get_current_stream().synchronize()
    hosts: list[float] = []

    def pilot(n: int) -> float:            # GPU seconds of n back-to-back calls; keeps the host's issue time
        gpu, host_ = _pilot(cp, call, sets, n)
        hosts.append(host_)
        return gpu * n

    # the timing policy's calibrate: one call, or 8 when one is under an eighth of the target
    cal = policy.calibrate(pilot, target_s, start=1, hi=max_reps, reach=1 / 8, grow=8, max_steps=2)
    per_call, host, reps = cal.unit_s, hosts[-1], cal.count
    notes: list[str] = []
    fallback = ""
    if graph and per_call < target_s / 4 and graph_unavailable:
        fallback = graph_unavailable
        notes.append(f"no CUDA graph: {graph_unavailable}")
    elif graph and per_call < target_s / 4:
        try:
            g = _capture(cp, call, sets, reps, set_stream)
            g.launch()
            t = time_cuda_once(g.launch, cp)
            if t < 0.5 * target_s and reps < max_reps:   # the pilot was launch-bound: size again from the graph
                reps = min(max_reps, math.ceil(reps * target_s / max(t, 1e-9)))
                g = _capture(cp, call, sets, reps, set_stream)
                t = time_cuda_once(g.launch, cp)
            return Runner(fn=g.launch, reps=reps, graph=True, per_call_s=t / reps, host_per_call_s=host,
                          notes=notes)
        except Exception as e:
            cp.cuda.get_current_stream().synchronize()
            fallback = f"CUDA graph capture failed ({type(e).__name__}: {e})"
            notes.append(f"{fallback}; timed a Python loop")

    def loop() -> None:
        for i in range(reps):
            call(i % sets)

    r = Runner(fn=loop, reps=reps, graph=False, per_call_s=per_call, host_per_call_s=host, notes=notes,
               fallback=fallback)
    if r.launch_bound:
        r.notes.append(f"launch-bound: issuing a call takes {host * 1e6:.1f} us on the host vs "
                       f"{per_call * 1e6:.1f} us on the GPU: the rate understates the GPU")
    return r


# --- one cuBLAS GEMM point -------------------------------------------------------------------------------
class CublasGemm:
    """Operand sets and the gemmEx call for one variant and shape (column-major, tight leading dims)."""

    def __init__(self, env: CublasEnv, v: gc.GemmVariant, m: int, n: int, k: int, *, seed: int = 1,
                 max_sets: int = 64, data: str = "uniform"):
        cp = env.cp
        self.env, self.v, self.m, self.n, self.k, self.data = env, v, m, n, k, data
        per_set = gc.gemm_bytes(m, n, k, gc.ITEMSIZE[v.storage], gc.ITEMSIZE[v.out])
        self.sets = gc.rotation_sets(per_set, env.l2_bytes, cap=max_sets)
        sa, sb, sc = gc.buffer_shapes(m, n, k, v.transa, v.transb)
        # Sums of k products stay near 1 for 16-bit types, so fp16 accumulation cannot overflow.
        scale = k ** -0.25 if v.storage in ("float16", "bf16") else 1.0
        self.operands = operands_desc(v.storage, data, scale)
        rs = gc.operand_rng(cp, seed)
        a, b = (gc.aligned_copies(lambda s, role=role: random_operand(cp, v.storage, s, seed, scale, data, role, rs),
                                  shape, self.sets, gc.ITEMSIZE[v.storage]) for role, shape in (("a", sa), ("b", sb)))
        c = gc.aligned_copies(lambda s: empty_operand(cp, v.out, s), sc, self.sets, gc.ITEMSIZE[v.out])
        self.ops = list(zip(a, b, c, strict=True))
        self.alpha = np.ones((), dtype=v.scalar)
        self.beta = np.zeros((), dtype=v.scalar)
        self.ld = gc.leading_dims(m, n, k, v.transa, v.transb)

    def call(self, i: int) -> None:
        v, (a, b, c), (lda, ldb, ldc) = self.v, self.ops[i], self.ld
        self.env.cublas.gemmEx(
            self.env.handle, v.transa, v.transb, self.m, self.n, self.k,
            self.alpha.ctypes.data, a.data.ptr, v.ab_type, lda, b.data.ptr, v.ab_type, ldb,
            self.beta.ctypes.data, c.data.ptr, v.c_type, ldc, v.compute, v.algo)

    def set_stream(self, ptr: int) -> None:
        self.env.cublas.setStream(self.env.handle, ptr)

    def check(self, rows: int) -> float:
        cp, v = self.env.cp, self.v
        a, b, c = self.ops[0]
        op_a, op_b, cm = gc.colmajor_views(a, b, c, v.transa, v.transb)
        idx = gc.sample_rows(self.m, rows)
        return check_rows(cp, to_f64(cp, op_a, v.storage, idx), to_f64(cp, op_b, v.storage),
                          to_f64(cp, cm, v.out, idx), gc.tolerance(v.key, self.k),
                          f"cuBLAS {v.key} {self.m}x{self.n}x{self.k}", self.epilogue)

    epilogue: Callable | None = None    # product -> output (subclasses whose output is not the product)
    precision_result: dict | None = None

    def precision_check(self, rows: int) -> dict | None:
        """The crafted-operand check of gc.PRECISION_CHECKS, run once on operand set 0 after the timed samples:
        exact, or VerificationError. It fails for the next lower precision at any k (tests/test_gemm_logic.py)."""
        cp, v = self.env.cp, self.v
        if v.key not in gc.PRECISION_CHECKS or self.k % 2 or self.k < 8:
            return None
        a_l, b_l = gc.precision_operands(v.key, self.m, self.n, self.k, xp=cp)
        a, b, c = self.ops[0]
        for buf, logical, trans in ((a, a_l, v.transa), (b, b_l, v.transb)):
            x = logical if trans == gc.OP_T else logical.T
            buf[...] = gc.bf16_bits_from_f32(x, cp) if v.storage == "bf16" else x.astype(buf.dtype)
        self.call(0)
        cp.cuda.get_current_stream().synchronize()
        op_a, op_b, cm = gc.colmajor_views(a, b, c, v.transa, v.transb)
        idx = gc.sample_rows(self.m, rows)
        check_rows(cp, to_f64(cp, op_a, v.storage, idx), to_f64(cp, op_b, v.storage), to_f64(cp, cm, v.out, idx),
                   0.0, f"cuBLAS {v.key} {self.m}x{self.n}x{self.k} precision check ({gc.PRECISION_CHECKS[v.key]})")
        self.precision_result = {"operands": gc.PRECISION_CHECKS[v.key], "rows": rows, "exact": True}
        return self.precision_result

    def params(self, runner: Runner) -> dict:
        v = self.v
        return {"m": self.m, "n": self.n, "k": self.k, "layout": v.layout, "compute_type": COMPUTE_NAMES[v.compute],
                "math_mode": v.math, "a_type": v.ab_type, "c_type": v.c_type, "reps": runner.reps,
                "operand_sets": self.sets, "cuda_graph": runner.graph, "api": "cublasGemmEx",
                "binding": self.env.binding, "algo": gc.ALGO_NAMES.get(v.algo, v.algo), "data": self.data,
                "operands": self.operands,
                **({"graph_fallback": runner.fallback} if runner.fallback else {})}


NAMED_KERNELS = (Precision.FP64, Precision.INT8)      # precisions whose points record the library's kernel names


def settle_runner(cp, runner: Runner, sustain: Sustain) -> tuple[dict, Settled]:
    """Run ``runner`` untimed until the power limiter has settled (hwprobe.timing.steady's rule), then return
    (the timing of one window, warmup and repeats, whose samples add up to sustain_s; what the settle did)."""
    sample_s = runner.per_call_s * runner.reps
    per_chunk = sustain.calls_per_chunk(sample_s)

    def chunk() -> tuple[float, float]:
        t = time_cuda_once(lambda: [runner.fn() for _ in range(per_chunk)], cp)
        return t, t / (per_chunk * runner.reps)

    def fixed() -> None:
        for _ in range(math.ceil(sustain.settle_s / sample_s)):
            runner.fn()
        cp.cuda.get_current_stream().synchronize()

    done = settle(chunk, fixed, sustain)
    return {"warmup": 1, "repeats": max(3, math.ceil(sustain.sustain_s / sample_s))}, done


def measure_sustained(ctx, window: Callable[[], Measurement], runner: Runner, sustain: Sustain, done: Settled,
                      check: Callable[[], None]) -> Measurement:
    """A settled point's timed windows (``window()`` times one, unchecked) back to back until one runs at the
    settle's level (hwprobe.timing.steady.best_window); the fastest is kept, checked, and carries the rule, the
    settle and every window in its params.

    Each window is bridged: ``sustain.chunk_s`` of the same work is queued, unsynchronized, before it, so the GPU
    stays loaded while the host reads the sentinel clock and starts the window's NVML sampling. An idle gap of a
    few milliseconds there made the H200's limiter lift the clock and then overshoot: every FP8 2:4 window at 16384
    opened 5-10% fast for ~50 ms, then ran 5-10% slow for 0.1-0.3 s (profiles/h200-sxm/2026-11-29-sparse-s37)."""
    bridge = sustain.calls_per_chunk(runner.per_call_s * runner.reps)

    def bridged() -> tuple[Measurement, float]:
        for _ in range(bridge):
            runner.fn()
        m = window()
        return m, m.stats.median_s / runner.reps

    got = best_window(bridged, done.level, sustain)
    m = got.kept
    m.params.update({**got.params(), **done.params(), "bridge_calls": bridge})
    if note := got.note():
        m.notes.append(note)
    ctx.verify(m, check)
    return m


def rest(cp, rest_s: float) -> dict:
    """Let the GPU idle ``rest_s`` once its queue is done; the timing of the rested window that follows: the rested
    rule, no warm-up. The burst after a rest lasts ~25 ms on an H200 under its cap; two warm-up samples spent 10 ms
    of it and left the first timed sample (after their sync) the slowest anyway, in 13 of 17 rested windows, while
    4 of 17 met the limiter at their fourth or fifth sample (profiles/h200-sxm/2026-11-29-ab-s43). The median of the
    five drops a slow first one."""
    cp.cuda.get_current_stream().synchronize()
    time.sleep(rest_s)
    return {"rule": policy.RESTED.name, "warmup": 0}


def sentinel(ctx):
    """The SM clock right now, by the sentinel kernel (hwprobe.timing.sentinel); None where it cannot run."""
    from hwprobe.timing.sentinel import sentinel_clock

    sms = int(getattr(ctx.device, "sms", 0) or 0)
    return sentinel_clock(sms) if sms else None


def record_sentinel(m: Measurement, before, after) -> None:
    from hwprobe.timing import sentinel as sn

    sn.record(m.params, before, after)
    if K.SENTINEL_SM_MHZ in m.params:
        m.notes.append(sn.NOTE)


def measure_gemm(ctx, env: CublasEnv, v: gc.GemmVariant, m: int, n: int, k: int, *, metric: str, kind: str,
                 rows: int, exec_unit: str | None = None, notes: tuple[str, ...] = (),
                 extra: dict | None = None, gemm_cls: type | None = None, data: str = "uniform",
                 sustain: Sustain | None = None, rest_s: float = 0.0) -> Measurement:
    """Time and check one cuBLAS GEMM; raises on library errors (the caller reports them).

    ``gemm_cls`` replaces CublasGemm by a class with the same operands and check but another call
    (gpu_fp8.LtGemm: cuBLASLt). ``data`` picks the operands (a key of DATA). ``sustain``
    (hwprobe.timing.steady.Sustain): an untimed settle, then samples adding up to its sustain_s, in one sampler
    window (the power limiter has settled, and the energy counter steps often enough in the window for its power).
    ``rest_s``: the GPU idles that long after the runner's pilot calls, then one window under the rested rule (the
    library's burst before the power limiter acts, as cublaslt.measure_matmul's rested windows).
    """
    env.cp.get_default_memory_pool().free_all_blocks()     # the previous point's operands are gone by now
    with cublas_mode(env, v.math):
        g = (gemm_cls or CublasGemm)(env, v, m, n, k, data=data)
        try:
            runner = build_runner(env.cp, g.call, g.sets, set_stream=g.set_stream,
                                  target_s=(policy.SUSTAINED if sustain else policy.LIBRARY).sample_s,
                                  graph_unavailable=getattr(g, "graph_unavailable", env.graph_unavailable))
            # settle outside the sampler window, so its clock and power are the settled ones
            timing, done = settle_runner(env.cp, runner, sustain) if sustain else ({}, None)
            if rest_s > 0 and not sustain:
                timing = rest(env.cp, rest_s)
            err: dict = {}
            clocks = [sentinel(ctx)]            # right before the timed window, and right after it (in check)

            def check() -> None:
                clocks.append(sentinel(ctx))
                err["rel"] = g.check(rows)
                g.precision_check(rows)

            def window(then_check=None) -> Measurement:
                return ctx.measure(metric, runner.fn, work=gc.gemm_flops(m, n, k) * runner.reps, unit=v.unit,
                                   kind=kind, check=then_check, precision=v.precision,
                                   exec_unit=exec_unit or v.exec_unit, path=Path.LIBRARY,
                                   params={**g.params(runner), **timing, **(extra or {}),
                                           **({"rest_s": rest_s} if rest_s > 0 else {})},
                                   notes=[*notes, *runner.notes], **timing)

            meas = measure_sustained(ctx, window, runner, sustain, done, check) if done else window(check)
            if v.precision in NAMED_KERNELS:       # which kernel ran: the unit's evidence (kernel_names)
                from hwprobe.probes.compute.kernel_names import captured_kernel_names, tensor_evidence

                names = captured_kernel_names(env.cp, g.call, g.set_stream)
                meas.params["kernels"] = names
                meas.params[K.KERNEL_TENSOR_CORE], meas.params[K.KERNEL_EVIDENCE] = tensor_evidence(names)
        finally:
            close = getattr(g, "close", None)
            if close:
                close()
    return finish_record(meas, err, g.precision_result, clocks, runner)


def finish_record(meas: Measurement, err: dict, precision_result, clocks: list, runner) -> Measurement:
    """What every library GEMM record carries after timing: the check's error, the crafted-operand precision
    check, the sentinel clocks around the window, and whether issuing the calls bounded the rate."""
    if "rel" in err:
        meas.params["rel_error"] = err["rel"]
    if precision_result:
        meas.params["precision_check"] = precision_result
    record_sentinel(meas, clocks[0], clocks[1] if len(clocks) > 1 else None)
    if runner.launch_bound:
        meas.flags.append("launch_bound")
    return meas


def failure(ctx, metric: str, what: str, e: Exception, **meta) -> Measurement:
    """The record of a point that could not run: a skip where the library does not offer the case (or a
    ``Skip``), an error (exit code 1) for anything else."""
    if not isinstance(e, Skip) and is_library_refusal(str(e)):
        return ctx.skip(metric, f"{what}: {type(e).__name__}: {e}", **meta)
    return ctx.error(metric, what, e, **meta)


def sm_mhz(m: Measurement) -> float | None:
    return m.clocks.sm_mhz if m.clocks else None


def candidate_row(m: Measurement) -> dict:
    """What the ceiling's params list about one point it was chosen from (clock included: rates follow it)."""
    p = m.params
    return {"metric": m.metric, "n": p.get("n"), "layout": p.get("layout"), "algo": p.get("algo"),
            "api": p.get("api"), "rate": m.value, "valid": m.valid, "sm_mhz": sm_mhz(m),
            "sentinel_sm_mhz": p.get(K.SENTINEL_SM_MHZ)}


def ceiling_of(points: list[Measurement], metric: str, curve_points: list[Measurement] | None = None) -> Measurement:
    """The best valid point re-labelled as the ceiling, with the efficiency curve and every candidate in params.

    ``curve_points`` (default: all points) are the size sweep of one configuration; ``points`` may add other
    layouts, algos and sizes, so the ceiling is the best the library gives over all of them.
    """
    valid = [p for p in points if p.valid] or points
    best = max(valid, key=lambda p: p.value)
    curve = gc.efficiency_curve([(p.params.get("n", 0), p.value) for p in (curve_points or points)])
    what = f"n={best.params.get('n')}" + (f", layout {best.params['layout']}" if best.params.get("layout") else "")
    if best.params.get("algo") not in (None, gc.ALGO_NAMES[gc.GEMM_DEFAULT]):
        what += f", {best.params['algo']}"
    if best.params.get("rest_s"):
        what += f", rested {best.params['rest_s']:g} s"
    return dataclasses.replace(
        best, metric=metric, kind=Kind.COMPUTE, samples_s=list(best.samples_s), flags=list(best.flags),
        params={**best.params, K.CURVE: curve, K.CANDIDATES: [candidate_row(p) for p in points],
                "ceiling_of": f"best of {len(points)} points ({what}) at {sm_mhz(best) or '?'} MHz"},
        notes=[*best.notes, "efficiency vs size: " + ", ".join(f"{c['n']}: {c['of_best']:.0%}" for c in curve)],
    )


