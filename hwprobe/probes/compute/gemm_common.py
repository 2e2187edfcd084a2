"""Pure helpers shared by the library GEMM probes: FLOP counts, tolerances, reference checks, size plans.

Nothing here touches a GPU, so every rule the probes apply (how a result is checked, which sizes run, when
the INT8 pitfall is reported) is tested on the CPU. Array helpers take ``xp`` (numpy or cupy) where they
must run on either.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hwprobe import keys as K
from hwprobe.errors import VerificationError
from hwprobe.vocab import ExecUnit, Precision

# --- cuBLAS / CUDA enum values (cublas_api.h, library_types.h); CuPy does not export all of them by name ---
OP_N, OP_T = 0, 1
POINTER_MODE_HOST = 0
GEMM_DEFAULT, GEMM_DEFAULT_TENSOR_OP = -1, 99   # cublasGemmAlgo_t; TENSOR_OP is deprecated but still accepted
ALGO_NAMES = {GEMM_DEFAULT: "CUBLAS_GEMM_DEFAULT", GEMM_DEFAULT_TENSOR_OP: "CUBLAS_GEMM_DEFAULT_TENSOR_OP"}
MATH_DEFAULT, MATH_PEDANTIC, MATH_TF32 = 0, 2, 3
COMPUTE_16F, COMPUTE_32F, COMPUTE_64F, COMPUTE_32I, COMPUTE_32F_FAST_TF32 = 64, 68, 70, 72, 77
R_32F, R_64F, R_16F, R_8I, R_32I, R_16BF, R_8F_E4M3, R_8F_E5M2 = 0, 1, 2, 3, 10, 14, 28, 29

# alpha/beta must have the compute type's scalar type (host pointer mode).
SCALAR_FOR_COMPUTE = {
    COMPUTE_16F: "float16", COMPUTE_32F: "float32", COMPUTE_32F_FAST_TF32: "float32",
    COMPUTE_64F: "float64", COMPUTE_32I: "int32",
}
# cuBLASLt scale type (alpha/beta) per compute type: the cudaDataType matching SCALAR_FOR_COMPUTE.
SCALE_TYPE_FOR_COMPUTE = {COMPUTE_16F: R_16F, COMPUTE_32F: R_32F, COMPUTE_32F_FAST_TF32: R_32F,
                          COMPUTE_64F: R_64F, COMPUTE_32I: R_32I}
# Element size in bytes of the storage kinds the probes use ("bf16" is stored as uint16 bit patterns).
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bf16": 2, "int8": 1, "int32": 4, "fp8": 1}


@dataclass(frozen=True)
class GemmVariant:
    """One cuBLAS gemmEx configuration: types, compute type, math mode and layout."""

    key: str            # "fp16.f32acc": tolerance key and short name
    precision: str      # measurement precision
    metric: str         # ceiling metric; sweep points append ".n<size>"
    exec_unit: str      # what the kernel runs on (see notes in gpu_gemm)
    storage: str        # A/B element kind (ITEMSIZE key)
    out: str            # C element kind
    ab_type: int        # cudaDataType of A and B
    c_type: int         # cudaDataType of C
    compute: int        # cublasComputeType_t
    math: int = MATH_DEFAULT
    transa: int = OP_N
    transb: int = OP_N
    unit: str = "FLOP/s"
    algo: int = GEMM_DEFAULT
    scale: str | None = None    # alpha/beta type where it is not the compute type's (INT8 output: float32)

    @property
    def scalar(self) -> str:
        return self.scale or SCALAR_FOR_COMPUTE[self.compute]

    @property
    def scale_type(self) -> int:
        """cuBLASLt's scale type (cudaDataType of alpha/beta)."""
        return {"float32": R_32F}[self.scale] if self.scale else SCALE_TYPE_FOR_COMPUTE[self.compute]

    @property
    def layout(self) -> str:
        return ("T" if self.transa == OP_T else "N") + ("T" if self.transb == OP_T else "N")

    def with_layout(self, layout: str, algo: int | None = None) -> GemmVariant:
        """The same types with another layout ("NN", "TN", "NT", "TT") and optionally another gemmEx algo."""
        if len(layout) != 2 or set(layout.upper()) - {"N", "T"}:
            raise ValueError(f"layout must be two of N/T, got {layout!r}")
        ta, tb = (OP_T if c == "T" else OP_N for c in layout.upper())
        return dataclasses.replace(self, transa=ta, transb=tb, algo=self.algo if algo is None else algo)

    def candidate_metric(self, n: int) -> str:
        """Metric of a ceiling candidate: layout and (when not the default) algo in the name."""
        algo = "" if self.algo == GEMM_DEFAULT else ".tensor_op"
        return f"{self.metric}.{self.layout.lower()}{algo}.n{n}"


GEMM_VARIANTS: dict[str, tuple[GemmVariant, ...]] = {
    "fp64": (GemmVariant("fp64", "fp64", "fp64.tensor_core.cublas", ExecUnit.TENSOR_CORE, "float64", "float64",
                         R_64F, R_64F, COMPUTE_64F),),
    "fp32": (GemmVariant("fp32", "fp32", "fp32.cuda_core.cublas", ExecUnit.CUDA_CORE, "float32", "float32",
                         R_32F, R_32F, COMPUTE_32F, MATH_DEFAULT),),
    "tf32": (GemmVariant("tf32", "tf32", "tf32.tensor_core.cublas", ExecUnit.TENSOR_CORE, "float32", "float32",
                         R_32F, R_32F, COMPUTE_32F_FAST_TF32, MATH_TF32),),
    "fp16": (
        GemmVariant("fp16.f32acc", "fp16", "fp16.tensor_core.cublas.f32acc", ExecUnit.TENSOR_CORE, "float16", "float16",
                    R_16F, R_16F, COMPUTE_32F),
        GemmVariant("fp16.f16acc", "fp16", "fp16.tensor_core.cublas.f16acc", ExecUnit.TENSOR_CORE, "float16", "float16",
                    R_16F, R_16F, COMPUTE_16F),
    ),
    "bf16": (GemmVariant("bf16", "bf16", "bf16.tensor_core.cublas", ExecUnit.TENSOR_CORE, "bf16", "bf16",
                         R_16BF, R_16BF, COMPUTE_32F),),
    "int8": (
        GemmVariant("int8.tn", "int8", "int8.tensor_core.cublas.tn", ExecUnit.TENSOR_CORE, "int8", "int32",
                    R_8I, R_32I, COMPUTE_32I, transa=OP_T, transb=OP_N, unit="OP/s"),
        GemmVariant("int8.nn", "int8", "int8.cublas.nn", ExecUnit.TENSOR_CORE, "int8", "int32",
                    R_8I, R_32I, COMPUTE_32I, transa=OP_N, transb=OP_N, unit="OP/s"),
    ),
}


# cuBLASLt-only configurations (gemmEx has no INT8 output): s8 x s8 -> s32 accumulate -> alpha x acc rounded and
# saturated to s8, the requantizing epilogue of INT8 inference; a quarter of the INT32 output's C traffic.
LT_VARIANTS = {
    "int8.tn.i8out": GemmVariant("int8.tn.i8out", "int8", "int8.tensor_core.cublaslt.i8out", ExecUnit.TENSOR_CORE,
                                 "int8", "int8", R_8I, R_8I, COMPUTE_32I, transa=OP_T, transb=OP_N, unit="OP/s",
                                 scale="float32"),
    # FP8 E4M3 x E4M3 -> BF16 through raw cuBLASLt (TN, fast accumulation): gpu.gemm_power and gpu.sparse's
    # dense baseline; the key is its tolerance's
    "fp8.fast": GemmVariant("fp8.fast", "fp8_e4m3", "fp8_e4m3.tensor_core.cublaslt", ExecUnit.TENSOR_CORE, "fp8",
                            "bf16", R_8F_E4M3, R_16BF, COMPUTE_32F, transa=OP_T, transb=OP_N),
}


def variant(key: str) -> GemmVariant:
    for vs in (*GEMM_VARIANTS.values(), tuple(LT_VARIANTS.values())):
        for v in vs:
            if v.key == key:
                return v
    raise KeyError(key)


# --- work -------------------------------------------------------------------------------------------------
def gemm_flops(m: int, n: int, k: int) -> float:
    """Operations of C = A @ B: one multiply-add = 2 operations (the convention of every peak here)."""
    return 2.0 * m * n * k


def gemm_bytes(m: int, n: int, k: int, ab_itemsize: int, c_itemsize: int) -> int:
    """Bytes of one operand set (A, B, C): used to size L2-busting buffer rotation."""
    return (m * k + k * n) * ab_itemsize + m * n * c_itemsize


# --- tolerances -------------------------------------------------------------------------------------------
# Relative Frobenius error of sampled rows against a float64 reference.
TOLERANCES = {
    "fp64": 1e-12,
    "fp32": 1e-5,        # TF32 inputs (10-bit mantissa) would give ~3e-4: this check is what tells them apart
    "tf32": 1e-3,        # TF32 inputs: 2.6-3.1e-4 measured (H200); BF16-rounded inputs give ~2e-3 and fail
    "fp16.f32acc": 6e-4,  # fp16 output rounding: 2.1e-4 measured; FP16 accumulation: 1.2e-3 at k=1024, more above
    "bf16": 1e-2,         # bf16 output rounding (2^-8)
    "int8": 0.0,          # exact
    "int8.tn.i8out": 2e-2,  # int8 output of alpha x acc scaled to sigma 32: rounding (0.29 rms) / 32 ~ 0.009
    "fp8": 2e-2,          # exact fp8 inputs; bf16/fp16 output rounding plus Hopper's narrower fp8 accumulator
    "fp8.fast": 5e-2,     # fast accumulation: no periodic promotion to fp32
}


def tolerance(key: str, k: int = 0) -> float:
    """Tolerance for a variant key (``fp16.f16acc`` grows with the reduction length ``k``).

    fp16 accumulation rounds the running sum to 11 significant bits once per step; a random walk of those
    roundings over k terms gives a relative error near 2^-11 * sqrt(k) at worst (k=8192: 0.044).
    """
    if key == "fp16.f16acc":
        return max(1e-2, 2.0 ** -11 * math.sqrt(max(k, 1)))
    if key.startswith("int8") and key not in TOLERANCES:
        return 0.0
    if key not in TOLERANCES:
        raise KeyError(f"no tolerance for {key!r}")
    return TOLERANCES[key]


# --- precision checks on crafted operands: each precision's check fails for the next lower one at every k ---
# fp16.f32acc / bf16: A = [A1, A1], B = [B1; -B1 + E] with integer A1, B1 in [-64, 64] and E holding +-1 at four
# rows per column, so C = A1 @ E is a small integer (exact in the fp16/bf16 output). Every partial sum is an
# integer well inside fp32's exact range (any summation order), so FP32 accumulation is exact; the partial sums
# reach thousands, beyond FP16's integers (2048), so FP16 accumulation is not (and overflows near 65504).
# tf32: A has three nonzeros per row, A and B integers of 11 significant bits (+-[1025, 2047]): exact in TF32,
# products exact, |C| < 2^24, so the result is exact; BF16-rounded inputs (8 bits) are off by ~2^-9.
PRECISION_CHECKS = {"fp16.f32acc": "cancelling integers", "bf16": "cancelling integers",
                    "tf32": "11-bit integers, 3 nonzeros per row of A"}


def operand_rng(xp, seed: int):
    """A seeded generator for operand data (``xp``: numpy or cupy). On CuPy, cuRAND's Philox generator: the default
    (XORWOW) sets its state up with a kernel at every seeding, and one small GEMM point seeds one per operand of
    each of its up to 64 rotating sets."""
    method = getattr(getattr(getattr(xp, "cuda", None), "curand", None), "CURAND_RNG_PSEUDO_PHILOX4_32_10", None)
    return xp.random.RandomState(seed) if method is None else xp.random.RandomState(seed, method=method)


def precision_operands(key: str, m: int, n: int, k: int, seed: int = 7, xp=np):
    """Logical op(A) (m x k) and op(B) (k x n), float64 values exact in the variant's input type, whose exact
    product a lower precision cannot reproduce (see PRECISION_CHECKS); ``k`` even. ``xp``: numpy or cupy (the
    probes build them on the GPU: 8192^2 operands are too slow to make on the host)."""
    rs = operand_rng(xp, seed)
    if key == "tf32":
        def mag(shape):
            return (rs.randint(1025, 2048, size=shape) * (2 * rs.randint(0, 2, size=shape) - 1)).astype(xp.float64)
        a = xp.zeros((m, k), dtype=xp.float64)
        rows = xp.arange(m)[:, None]
        cols = (rows * 13 + xp.arange(3)[None, :] * (k // 3)) % k        # three distinct columns per row
        a[rows, cols] = mag((m, 3))
        return a, mag((k, n))
    if key not in PRECISION_CHECKS or k % 2:
        raise KeyError(f"no precision check for {key!r} at k={k}")
    h = k // 2
    a1 = rs.randint(-64, 65, size=(m, h)).astype(xp.float64)
    b1 = rs.randint(-64, 65, size=(h, n)).astype(xp.float64)
    e = xp.zeros((h, n), dtype=xp.float64)
    cols = xp.arange(n)[None, :]
    rows = (cols * 7 + xp.arange(4)[:, None] * max(1, h // 4)) % h      # four distinct rows per column (h >= 4)
    e[rows, cols] = (2 * rs.randint(0, 2, size=(4, n)) - 1).astype(xp.float64)
    return xp.concatenate([a1, a1], axis=1), xp.concatenate([b1, -b1 + e], axis=0)


def fp64_exec_unit(cc_major: int, cc_minor: int) -> tuple[str, str]:
    """cuBLAS DGEMM runs on DMMA tensor cores on sm_80/sm_90/sm_100 (A100, H100/H200, B200), else on DFMA."""
    if (cc_major, cc_minor) in {(8, 0), (9, 0), (10, 0), (10, 3)}:
        return ExecUnit.TENSOR_CORE, (f"sm_{cc_major}{cc_minor} has FP64 tensor cores (DMMA), which cuBLAS DGEMM uses; "
                               "params['exec_unit_evidence'] says whether the rate confirms it (above the DFMA "
                               "peak) or the unit is inferred from the architecture")
    return ExecUnit.CUDA_CORE, f"sm_{cc_major}{cc_minor} has no fast FP64 tensor cores: DGEMM runs on DFMA"


def rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    """||got - ref||_F / ||ref||_F, in float64 (inf if the result holds NaN/inf)."""
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        raise VerificationError(f"shape {g.shape} != reference {r.shape}")
    if not np.all(np.isfinite(g)):
        return math.inf
    den = float(np.linalg.norm(r))
    num = float(np.linalg.norm(g - r))
    return num / den if den > 0 else num


def check_close(got: np.ndarray, ref: np.ndarray, tol: float, what: str) -> float:
    """Raise VerificationError unless ``got`` matches ``ref`` (exactly when tol == 0); return the error."""
    if tol == 0:
        g = np.asarray(got, dtype=np.float64)
        r = np.asarray(ref, dtype=np.float64)
        if g.shape != r.shape:
            raise VerificationError(f"{what}: shape {g.shape} != reference {r.shape}")
        bad = int(np.count_nonzero(g != r))
        if bad:
            raise VerificationError(f"{what}: {bad} of {g.size} sampled values differ from the exact reference")
        return 0.0
    err = rel_error(got, ref)
    if not err <= tol:
        raise VerificationError(f"{what}: relative error {err:.3g} > tolerance {tol:.3g}")
    return err


def sample_rows(m: int, count: int, seed: int = 0) -> np.ndarray:
    """Sorted distinct row indices: the first, the last, and random ones between (all rows if m <= count)."""
    if m <= count:
        return np.arange(m)
    rng = np.random.default_rng(seed)
    inner = rng.choice(np.arange(1, m - 1), size=max(0, count - 2), replace=False)
    return np.unique(np.concatenate([[0, m - 1], inner]))


def reference_rows(a_rows: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 product of the sampled rows of op(A) with op(B)."""
    return np.asarray(a_rows, dtype=np.float64) @ np.asarray(b, dtype=np.float64)


def colmajor_views(a_buf, b_buf, c_buf, transa: int, transb: int):
    """Views of cuBLAS's column-major operands as row-major matrices: (op(A) m x k, op(B) k x n, C m x n).

    Buffers are C-ordered arrays holding what cuBLAS reads: column-major X with leading dimension ld is the
    C-ordered array of shape (cols, ld), so the matrix is its transpose. Works for numpy and cupy arrays.
    """
    op_a = a_buf if transa == OP_T else a_buf.T
    op_b = b_buf if transb == OP_T else b_buf.T
    return op_a, op_b, c_buf.T


def buffer_shapes(m: int, n: int, k: int, transa: int, transb: int) -> tuple[tuple[int, int], ...]:
    """C-ordered shapes of the A, B, C buffers for column-major cuBLAS with tight leading dimensions."""
    a = (m, k) if transa == OP_T else (k, m)
    b = (k, n) if transb == OP_T else (n, k)
    return a, b, (n, m)


def leading_dims(m: int, n: int, k: int, transa: int, transb: int) -> tuple[int, int, int]:
    """lda, ldb, ldc for column-major storage: the row count of each stored matrix."""
    lda = k if transa == OP_T else m
    ldb = n if transb == OP_T else k
    return lda, ldb, m


# --- bf16 / fp8 encodings (bit patterns; CuPy has neither dtype) ----------------------------------------
def bf16_bits_from_f32(x, xp=np):
    """Truncate float32 values to bf16 bit patterns (uint16). The decoded value is then exactly representable."""
    x = xp.ascontiguousarray(x, dtype=xp.float32)
    return (x.view(xp.uint32) >> 16).astype(xp.uint16)


def bf16_bits_to_f32(bits, xp=np):
    return (xp.ascontiguousarray(bits).astype(xp.uint32) << 16).view(xp.float32)


def fp8_decode_table(fmt: str) -> np.ndarray:
    """float64 value of each of the 256 codes of ``e4m3`` (OCP E4M3FN: no inf) or ``e5m2`` (IEEE-like)."""
    ebits, mbits = {"e4m3": (4, 3), "e5m2": (5, 2)}[fmt]
    bias = 2 ** (ebits - 1) - 1
    out = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> mbits) & ((1 << ebits) - 1)
        mant = code & ((1 << mbits) - 1)
        if fmt == "e4m3" and e == 15 and mant == 7:
            val = math.nan
        elif fmt == "e5m2" and e == 31:
            val = math.inf if mant == 0 else math.nan
        elif e == 0:
            val = mant / 2 ** mbits * 2.0 ** (1 - bias)
        else:
            val = (1 + mant / 2 ** mbits) * 2.0 ** (e - bias)
        out[code] = sign * val
    return out


# Values exact in both fp8 formats: FP8 inputs drawn from these make the float64 reference exact.
FP8_EXACT_VALUES = (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)


def fp8_encode_exact(values: np.ndarray, fmt: str) -> np.ndarray:
    """uint8 codes of values that are exactly representable in ``fmt`` (ValueError otherwise)."""
    table = fp8_decode_table(fmt)
    lookup = {}
    for code in range(256):
        v = table[code]
        if np.isfinite(v) and not (v == 0 and code & 0x80):   # +0 for zero
            lookup.setdefault(float(v), code)
    vals = np.asarray(values, dtype=np.float64)
    flat = vals.ravel()
    try:
        codes = np.fromiter((lookup[float(v)] for v in flat), dtype=np.uint8, count=flat.size)
    except KeyError as e:
        raise ValueError(f"{e.args[0]} is not exactly representable in fp8 {fmt}") from None
    return codes.reshape(vals.shape)


# --- 2:4 structured sparsity -----------------------------------------------------------------------------
def is_2to4(a: np.ndarray) -> bool:
    """True if every group of 4 consecutive elements along the last axis has at most 2 nonzeros."""
    a = np.asarray(a)
    if a.shape[-1] % 4:
        return False
    groups = a.reshape(*a.shape[:-1], a.shape[-1] // 4, 4)
    return bool(np.all(np.count_nonzero(groups, axis=-1) <= 2))


# --- size planning ---------------------------------------------------------------------------------------
def plan_sizes(sizes: Iterable[int], quick: bool, quick_cap: int = 4096) -> list[int]:
    """The sweep's sizes, sorted; under ``quick`` only the smallest and the largest up to ``quick_cap``."""
    s = sorted({int(x) for x in sizes})
    if not s or any(x <= 0 for x in s):
        raise ValueError(f"sizes must be positive, got {list(sizes)}")
    if not quick:
        return s
    capped = [x for x in s if x <= quick_cap] or s[:1]
    return sorted({capped[0], capped[-1]})


ALLOC_ALIGN = 512   # bytes: CuPy's memory pool and PyTorch's caching allocator both start a block on this boundary


def aligned_copies(make, shape: tuple[int, ...], count: int, itemsize: int) -> list:
    """``count`` arrays of ``shape`` as views of one ``make((count, row))`` fill (CuPy, NumPy or PyTorch), each
    starting on the ALLOC_ALIGN boundary its own allocation would have, so a kernel sees the alignment it saw in
    separate buffers. One fill for them all: made one by one, a small GEMM point's 64 rotating operand sets cost 128
    fills (1.5 s of gpu.gemm_shapes' 7.8 s of host time on an H200), a small layer's 512 weight copies 512
    allocations and three launches each."""
    n = math.prod(shape)
    row = -(-n * itemsize // ALLOC_ALIGN) * ALLOC_ALIGN // itemsize
    flat = make((count, row))
    return [flat[i, :n].reshape(shape) for i in range(count)]


def rotation_sets(bytes_per_set: int, l2_bytes: int, factor: float = 3.0, cap: int = 64) -> int:
    """Operand sets to cycle through so that one pass touches >= factor x L2 (no set is L2-resident)."""
    if bytes_per_set <= 0:
        raise ValueError("bytes_per_set must be positive")
    need = math.ceil(factor * max(l2_bytes, 0) / bytes_per_set)
    return int(min(cap, max(1, need)))


def alignment_sizes(base: int, aligns: Sequence[int]) -> list[tuple[int, int, int]]:
    """(align, n, n + 1) with n >= base the smallest multiple of ``align`` that is not a multiple of 2*align.

    So each aligned size has exactly that alignment (4104 is a multiple of 8 but not 16), and n + 1 is odd.
    """
    out = []
    for a in aligns:
        if a <= 0:
            raise ValueError("alignments must be positive")
        n = -(-base // a) * a
        if (n // a) % 2 == 0:
            n += a
        out.append((a, n, n + 1))
    return out


# --- summaries -------------------------------------------------------------------------------------------
def efficiency_curve(points: Sequence[tuple[int, float]]) -> list[dict]:
    """[(size, rate)] -> [{"n", "rate", "of_best"}] sorted by size: the "bigger runs more efficiently" curve."""
    if not points:
        return []
    best = max(r for _, r in points)
    return [{"n": int(n), "rate": float(r), "of_best": float(r / best) if best > 0 else 0.0}
            for n, r in sorted(points)]


def si(x: float, unit: str) -> str:
    """3 significant digits with an SI prefix: 1.6e15 OP/s -> '1.60 POP/s'."""
    for p, s in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= p:
            return f"{x / p:.3g} {s}{unit}"
    return f"{x:.3g} {unit}"


def int8_layout_exec_unit(rate: float, best_tn_rate: float | None, fallback_ratio: float = 4.0) -> tuple[str, str]:
    """Which unit an INT8 cuBLAS layout ran on, inferred from its rate against the TN (IMMA) layout, where no
    kernel name says it (gpu.gemm prefers the name: ``kernel_unit``).

    A layout that runs ``fallback_ratio`` or more times slower than TN at the same size is taken for a
    non-tensor-core fallback; that is an inference from the rate, and the record says so.
    """
    if not best_tn_rate or best_tn_rate <= 0:
        return ExecUnit.TENSOR_CORE, "unit not inferred: no TN rate to compare with"
    ratio = best_tn_rate / rate if rate > 0 else math.inf
    if ratio >= fallback_ratio:
        return ExecUnit.CUDA_CORE, (f"{ratio:.1f}x slower than TN at this size: taken for a CUDA-core fallback, "
                             f"inferred from the rate (no kernel name read)")
    return ExecUnit.TENSOR_CORE, f"within {ratio:.1f}x of TN: a tensor-core kernel (inferred from the rate)"


def kernel_unit(tensor: bool | None, evidence: str, inferred: tuple[str, str]) -> tuple[str, str, bool]:
    """(unit, note, inferred?) of a library point: a kernel name with a tensor-core token is measured evidence
    and wins over a unit inferred from the rate (``inferred`` = (unit, note) from ``int8_layout_exec_unit``)."""
    if tensor:
        return ExecUnit.TENSOR_CORE, f"tensor cores: {evidence} (the rate alone suggested {inferred[0]})", False
    return inferred[0], inferred[1], True


def pitfall_int8_vs_fp16(int8_rates: dict[str, float], fp16_rate: float, size: int) -> tuple[bool, str, dict]:
    """Is any INT8 layout slower than FP16 at the same size? Returns (found, sentence, details).

    INT8 tensor cores do twice FP16's operations per clock, so INT8 at or below FP16's rate means the
    library left the fast path. The sentence names the slowest layout and the way out (the best layout).
    """
    if not int8_rates or fp16_rate <= 0:
        raise ValueError("need INT8 rates and a positive FP16 rate")
    worst = min(int8_rates, key=int8_rates.get)
    best = max(int8_rates, key=int8_rates.get)
    w, b = int8_rates[worst], int8_rates[best]
    details = {"size": size, "fp16_flops": fp16_rate, "int8_ops": dict(int8_rates),
               "worst_layout": worst, "best_layout": best,
               "worst_vs_fp16": w / fp16_rate, "best_vs_fp16": b / fp16_rate}
    if w < fp16_rate:
        slower = fp16_rate / w if w > 0 else math.inf
        text = (f"INT8 {worst.upper()} layout runs at {si(w, 'OP/s')}, {slower:.1f}x slower than FP16 "
                f"({si(fp16_rate, 'FLOP/s')}) at {size}^3: cuBLAS runs another, slower kernel for this layout "
                f"(its kernel name is in the layout's records); "
                f"use {best.upper()} ({si(b, 'OP/s')}, {b / fp16_rate:.2f}x FP16)")
        if b < fp16_rate:
            text += "; every INT8 layout is slower than FP16 here"
        return True, text, details
    return False, (f"no INT8 pitfall at {size}^3: slowest INT8 layout {worst.upper()} {si(w, 'OP/s')} >= FP16 "
                   f"{si(fp16_rate, 'FLOP/s')}"), details


def alignment_finding(precision: str, rows: Sequence[dict]) -> tuple[float | None, str]:
    """Summarize aligned-vs-odd rates: rows of {"align", "n", "rate", "odd_rate" (None if unsupported)}.

    Returns (worst slowdown aligned/odd or None if no odd size ran, sentence with the seeds' rule).
    """
    rule = {"fp16": "multiples of 8", "bf16": "multiples of 8", "tf32": "multiples of 4",
            "int8": "multiples of 16 (align INT8 channels to 32)",
            "fp8": "multiples of 16"}.get(precision, "multiples of 8")
    ran = [r for r in rows if r.get("odd_rate")]
    unsupported = [r["n"] + 1 for r in rows if r.get("odd_rate") is None]
    parts = []
    worst = None
    if ran:
        ratios = [(r["rate"] / r["odd_rate"], r) for r in ran if r["odd_rate"] > 0]
        worst, wr = max(ratios, key=lambda t: t[0])
        parts.append(f"{precision.upper()}: odd size {wr['n'] + 1} runs {worst:.2f}x slower than {wr['n']} "
                     f"(aligned to {wr['align']})")
    if unsupported:
        parts.append(f"{precision.upper()}: odd sizes {', '.join(map(str, unsupported))} not supported by the library")
    parts.append(f"rule: tensor cores want {rule}")
    return worst, "; ".join(parts)


# --- ceiling candidates ------------------------------------------------------------------------------------
# Precisions whose gemmEx ceiling is searched over layouts (INT8 layouts are separate variants; FP64/FP32
# have one fast path) and, for the 16-bit types, over the gemmEx algo enum too.
LAYOUT_SEARCH = (Precision.TF32, Precision.FP16, Precision.BF16)
ALGO_SEARCH = (Precision.FP16, Precision.BF16)
# The call a framework makes, where it is not the variant's own: cupy.matmul on C-ordered FP64 arrays calls gemmEx
# NN with CUBLAS_COMPUTE_64F and, on sm_80+, CUBLAS_GEMM_DEFAULT_TENSOR_OP (cupy/_core/_routines_linalg.pyx,
# tensordot_core_v11): the FP64 ceiling tries that exact call beside its own (issue 33).
FRAMEWORK_CALLS = {"fp64": (("NN", GEMM_DEFAULT_TENSOR_OP),)}


def gemm_candidates(v: GemmVariant, layouts: Sequence[str], tensor_op: bool) -> list[GemmVariant]:
    """Other configurations of ``v`` to run at the top size: each layout, and the TENSOR_OP algo beside DEFAULT;
    for FP64, cupy.matmul's own call (FRAMEWORK_CALLS; with ``tensor_op``).

    ``v`` itself (its layout, default algo) is the sweep's top point and is not repeated.
    """
    if v.precision in FRAMEWORK_CALLS:
        calls = [v.with_layout(lay, algo) for lay, algo in FRAMEWORK_CALLS[v.precision]] if tensor_op else []
        return [c for c in calls if (c.transa, c.transb, c.algo) != (v.transa, v.transb, v.algo)]
    if v.precision not in LAYOUT_SEARCH:
        return []
    out = []
    for lay in dict.fromkeys(x.upper() for x in layouts):
        algos = [GEMM_DEFAULT] + ([GEMM_DEFAULT_TENSOR_OP] if tensor_op and v.precision in ALGO_SEARCH else [])
        for algo in algos:
            c = v.with_layout(lay, algo)
            if (c.transa, c.transb, c.algo) != (v.transa, v.transb, v.algo):
                out.append(c)
    return out


def plan_top(sizes: Sequence[int], big_sizes: Sequence[int], quick: bool) -> tuple[int, list[int]]:
    """(top sweep size, larger sizes tried for the best configuration only); no larger sizes under quick."""
    top = max(sizes)
    big = [] if quick else sorted({int(b) for b in big_sizes if b > top})
    return top, big


def int8_extra_sizes(int8_sizes: Sequence[int], sweep: Sequence[int], big: Sequence[int], quick: bool) -> list[int]:
    """INT8 sizes tried beside the sweep and the big sizes (none under quick), ascending.

    Near the power cap the best INT8 rate can sit at a size below the largest: more tiles per SM help,
    more power per tile does not.
    """
    if quick:
        return []
    taken = set(sweep) | set(big)
    return sorted({int(n) for n in int8_sizes if n > 0 and n not in taken})


def lt_plan(lt_sizes: Sequence[int], sweep: Sequence[int], quick: bool) -> list[int]:
    """cuBLASLt sizes, largest first (the ceiling runs before the GPU heats); the sweep's largest under quick."""
    if quick:
        return [max(sweep)]
    return sorted({int(n) for n in lt_sizes}, reverse=True)


def sparse_speedups(rows: Sequence[dict]) -> dict:
    """Sparse vs dense: per-size ratios and the one that compares ceilings (best sparse / best dense).

    A small dense point can be far below the dense ceiling (launch-bound, too few tiles per SM), which
    makes its same-size ratio exceed the 2x the sparse hardware offers; only best-vs-best is the
    tensor cores' speedup. ``rows`` hold {"n", "sparse", "dense" (or None)}.
    """
    with_dense = [r for r in rows if r.get("dense")]
    per_size = {int(r["n"]): r["sparse"] / r["dense"] for r in with_dense}
    if not with_dense:
        return {"per_size": {}, K.BEST_VS_BEST: None, "best_sparse_n": None, "best_dense_n": None, "suspect": [],
                "per_size_per_clock": {}, "best_vs_best_per_clock": None}
    bs = max(rows, key=lambda r: r["sparse"])
    bd = max(with_dense, key=lambda r: r["dense"])
    # a same-size ratio above 2x (plus noise) says the dense baseline there was inefficient
    suspect = sorted(n for n, s in per_size.items() if s > 2.1)
    return {"per_size": per_size, K.BEST_VS_BEST: bs["sparse"] / bd["dense"], "best_sparse_n": int(bs["n"]),
            "best_dense_n": int(bd["n"]), "suspect": suspect,
            "per_size_per_clock": {int(r["n"]): x for r in with_dense if (x := per_clock_ratio(r, r)) is not None},
            "best_vs_best_per_clock": per_clock_ratio(bs, bd)}


def per_clock_ratio(sparse_row: dict, dense_row: dict) -> float | None:
    """(sparse rate / its SM clock) / (dense rate / its SM clock): the speed-up the sparse tensor cores give at
    equal clocks, where power lets the sparse run clock higher (or lower) than the dense one. Rows carry
    ``sparse_mhz`` and ``dense_mhz``; None without both clocks."""
    cs, cd = sparse_row.get("sparse_mhz"), dense_row.get("dense_mhz")
    if not (cs and cd and dense_row.get("dense")):
        return None
    return (sparse_row["sparse"] / cs) / (dense_row["dense"] / cd)


def release_all(made: list) -> None:
    """Destroy library objects (``(destroy, handle)`` pairs) newest first, ignoring failures: cleanup must not
    mask the error that ended a measurement. Empties ``made``."""
    for destroy, obj in reversed(made):
        try:
            destroy(obj)
        except Exception:
            pass
    made.clear()
