"""Tensor Core peak at the instruction level: PTX ``mma.sync`` (sm_80+) and Hopper ``wgmma`` (sm_90a).

Both kernels keep their operands on chip (registers for mma.sync; shared memory for wgmma, A in registers in its
rs form) and loop on the same tiles, so the rate is the tensor pipe's, with no DRAM traffic. A few launch
configurations are timed briefly and the best is measured (wgmma: the best per SM clock, and among forms tied
there the one the GPU clocks highest, FORM_PREFERENCE). The host packs every operand itself (per-lane register
fragments for mma.sync, the K-major shared-memory image for wgmma) and unpacks the accumulators with the PTX
fragment layouts; the check compares every output element with ``count x A @ B`` in exact integer math, so a
wrong layout fails it. The timed launches' own output is checked the same way: the kernels keep every
accumulator bounded and exact for any launch length (mma.sync alternates B and -B, wgmma resets through its
scale-d operand every ``reset`` iterations), so FP16 accumulation never overflows and the count is known. The
SASS of each kernel is read back to show the intended tensor instruction (HMMA/IMMA/QMMA/DMMA,
HGMMA/QGMMA/IGMMA) really runs (ptxas emulates some PTX on some archs): a mismatch invalidates the figure. Every
CTA stamps its clock64 cycles and globaltimer nanoseconds; mma_clock turns them into the kernel's clock, the
rate over the launch's span and the clocks' agreement.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from hwprobe.errors import Skip, VerificationError
from hwprobe.kernels import sass
from hwprobe.probes.base import probe
from hwprobe.probes.compute import mma_clock as mc
from hwprobe.timing import iterations_for, policy
from hwprobe.vocab import ExecUnit, Path, Precision

MMA_SYNC_PRECISIONS = (Precision.FP64, Precision.TF32, Precision.FP16, Precision.BF16, Precision.FP8, Precision.INT8,
                       Precision.INT4)
WGMMA_PRECISIONS = (Precision.FP16, Precision.BF16, Precision.TF32, Precision.FP8, Precision.INT8)

CHAINS = 8          # independent accumulators per warp in mma_sync.cu (-DCHAINS)
KSTEPS = 4          # wgmma per loop iteration (one commit group) in wgmma.cu: 4 K slices of a 128-byte row
WGMMA_N = 256
SETTLE_S = 0.3      # untimed run before timing wgmma: power and SM clock reach their steady state first
SETTLE_S_QUICK = 0.1
VERIFY_ITERS = 3    # loop iterations of the layout check's launch (odd: mma.sync's +B/-B pairs leave A @ B)
MAX_ITERS = 1 << 30
CLK_SLOTS = 256     # launches whose per-CTA stamps are kept (a ring)
MAX_CTAS_PER_SM = 4
# The largest integer every partial sum may reach and stay exact, per accumulator (FP8 wgmma: Hopper keeps
# about 14 significant bits in its FP8 accumulation, so 2^13).
ACC_EXACT = {"f16": 2 ** 11, "f32": 2 ** 24, "s32": 2 ** 31 - 1, "f64": 2 ** 53}
FP8_ACC_EXACT = 2 ** 13

# Launch configurations searched, (threads per block, blocks per SM). A wgmma CTA is one warpgroup (154-170
# registers per thread); two CTAs per SM give two independent accumulators per SM, as two consumer
# warpgroups in one CTA would (they share nothing else in this loop).
MMA_CONFIGS = ((256, 1), (256, 2), (256, 4))
WGMMA_BLOCKS_PER_SM = (1, 2)
# Operand forms of wgmma.cu (-DWGMMA_FORM index): A from shared memory (no swizzle / 128-byte swizzle)
# or from registers (B 128-byte swizzle).
WGMMA_FORMS = ("ss_nosw", "ss_sw128", "rs_sw128")
WGMMA_CONFIGS = tuple((form, per_sm) for form in WGMMA_FORMS for per_sm in WGMMA_BLOCKS_PER_SM)
# Forms tied per SM clock are not tied in rate: the GPU grants each its own clock. On an H200 (issue 33,
# profiles/h200-sxm/2026-11-29-suite-s34; 2 blocks/SM, settled, three rounds) all three forms ran 8191-8192
# operations per SM clock, but A from registers held 1770 / 1875 / 1875 / 1785 MHz (FP16 f32acc / FP16 f16acc /
# BF16 / FP8) where A from shared memory held 1740 / 1845 / 1830-1845 / 1755: 1.8-1.9% more rate, each round.
# TF32 (1980 MHz, no cap) and INT8 (1920 MHz) read the same in every form. The search scores per clock (a cap
# drop during it cannot pick the wrong form), so among the forms within FORM_TIE of the best per clock, at the
# best's blocks/SM, the first in FORM_PREFERENCE is timed.
FORM_PREFERENCE = ("rs_sw128", "ss_sw128", "ss_nosw")
FORM_TIE = 1e-3

# Shared-memory tiles of wgmma.cu: K-major, 128 bytes of K per row, 8-row slabs of 1024 bytes.
ROW_BYTES, SLAB_BYTES, CORE_BYTES = 128, 1024, 128

BITS = {"fp16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "s4": 4, "f64": 64}
ACC_DTYPE = {"f32": np.float32, "s32": np.int32, "f16": np.uint32, "f64": np.float64}


@dataclass(frozen=True)
class Variant:
    """One instruction form: what it computes, how the host feeds it and which SASS proves it ran."""

    api: str                      # "mma_sync" | "wgmma"
    precision: str                # the probe parameter ("fp8" covers e4m3 and e5m2)
    metric_precision: str         # Measurement.precision
    acc: str                      # "f32" | "f16" | "s32" | "f64"
    kernel: str                   # extern "C" name in the .cu file
    shape: tuple[int, int, int]   # M, N, K of one instruction
    in_fmt: str                   # element format of A and B
    ptx: str
    sass: str                     # SASS opcode prefix expected in the timed loop
    lo: int                       # verification inputs: integers in [lo, hi], exact in in_fmt
    hi: int
    tag: str = ""                 # metric suffix of a second shape of the same type (fp64 m16n8k16)
    min_cc: tuple[int, int] = (0, 0)

    @property
    def metric(self) -> str:
        base = f"{self.metric_precision}.tensor_core.{self.api}.{self.acc}acc"
        return f"{base}.{self.tag}" if self.tag else base

    @property
    def unit(self) -> str:
        return "OP/s" if self.acc == "s32" else "FLOP/s"

    @property
    def ops_per_instruction(self) -> int:
        m, n, k = self.shape
        return 2 * m * n * k

    @property
    def shape_name(self) -> str:
        return "m{}n{}k{}".format(*self.shape)


def _mma(prec, mprec, acc, kernel, shape, fmt, ptx_types, sass, lo=-3, hi=3, tag="", min_cc=(0, 0)):
    ptx = "mma.sync.aligned.m{}n{}k{}.row.col.".format(*shape) + ptx_types
    return Variant("mma_sync", prec, mprec, acc, kernel, shape, fmt, ptx, sass, lo, hi, tag, min_cc)


def _wg(prec, mprec, acc, kernel, k, fmt, ptx_types, sass, lo=-3, hi=3):
    ptx = f"wgmma.mma_async.sync.aligned.m64n{WGMMA_N}k{k}.{ptx_types}"
    return Variant("wgmma", prec, mprec, acc, kernel, (64, WGMMA_N, k), fmt, ptx, sass, lo, hi)


VARIANTS = (
    _mma("fp16", "fp16", "f32", "mma_fp16_f32acc", (16, 8, 16), "fp16", "f32.f16.f16.f32", "HMMA.16816.F32"),
    # f16 accumulate: |A|,|B| <= 2 keeps a chain (0 or A @ B) and the sum of CHAINS of them <= 8 x 16 x 4.
    _mma("fp16", "fp16", "f16", "mma_fp16_f16acc", (16, 8, 16), "fp16", "f16.f16.f16.f16", "HMMA.16816.F16",
         -2, 2),
    _mma("bf16", "bf16", "f32", "mma_bf16_f32acc", (16, 8, 16), "bf16", "f32.bf16.bf16.f32", "HMMA.16816.F32.BF16"),
    _mma("tf32", "tf32", "f32", "mma_tf32_f32acc", (16, 8, 8), "tf32", "f32.tf32.tf32.f32", "HMMA.1688.F32.TF32"),
    _mma("int8", "int8", "s32", "mma_int8_s32acc", (16, 8, 32), "s8", "s32.s8.s8.s32", "IMMA.16832.S8.S8",
         -100, 100),
    _mma("int4", "int4", "s32", "mma_int4_s32acc", (16, 8, 64), "s4", "s32.s4.s4.s32", "IMMA.16864.S4.S4", -7, 7),
    _mma("fp8", "fp8_e4m3", "f32", "mma_fp8e4m3_f32acc", (16, 8, 32), "e4m3", "f32.e4m3.e4m3.f32",
         "QMMA.16832.F32.E4M3.E4M3"),
    _mma("fp8", "fp8_e5m2", "f32", "mma_fp8e5m2_f32acc", (16, 8, 32), "e5m2", "f32.e5m2.e5m2.f32",
         "QMMA.16832.F32.E5M2.E5M2"),
    _mma("fp64", "fp64", "f64", "mma_fp64_f64acc", (8, 8, 4), "f64", "f64.f64.f64.f64", "DMMA"),
    # Hopper's larger DMMA: m8n8k4 (DMMA.8x8x4) issues at half the FP64 tensor rate there.
    _mma("fp64", "fp64", "f64", "mma_fp64_f64acc_m16n8k16", (16, 8, 16), "f64", "f64.f64.f64.f64",
         "DMMA.16x8x16", tag="m16n8k16", min_cc=(9, 0)),
    _wg("fp16", "fp16", "f32", "wgmma_fp16_f32acc", 16, "fp16", "f32.f16.f16", "HGMMA.64x256x16.F32"),
    _wg("fp16", "fp16", "f16", "wgmma_fp16_f16acc", 16, "fp16", "f16.f16.f16", "HGMMA.64x256x16.F16", -2, 2),
    _wg("bf16", "bf16", "f32", "wgmma_bf16_f32acc", 16, "bf16", "f32.bf16.bf16", "HGMMA.64x256x16.F32.BF16"),
    _wg("tf32", "tf32", "f32", "wgmma_tf32_f32acc", 8, "tf32", "f32.tf32.tf32", "HGMMA.64x256x8.F32.TF32"),
    _wg("fp8", "fp8_e4m3", "f32", "wgmma_fp8e4m3_f32acc", 32, "e4m3", "f32.e4m3.e4m3",
        "QGMMA.64x256x32.F32.E4M3.E4M3"),
    _wg("fp8", "fp8_e5m2", "f32", "wgmma_fp8e5m2_f32acc", 32, "e5m2", "f32.e5m2.e5m2",
        "QGMMA.64x256x32.F32.E5M2.E5M2"),
    _wg("int8", "int8", "s32", "wgmma_int8_s32acc", 32, "s8", "s32.s8.s8", "IGMMA.64x256x32.S8.S8", -100, 100),
)

# -DWGMMA_ONLY=<id> in wgmma.cu compiles one op alone.
WGMMA_IDS = {"wgmma_fp16_f32acc": 1, "wgmma_fp16_f16acc": 2, "wgmma_bf16_f32acc": 3, "wgmma_tf32_f32acc": 4,
             "wgmma_fp8e4m3_f32acc": 5, "wgmma_fp8e5m2_f32acc": 6, "wgmma_int8_s32acc": 7}


def variants(api: str, precision: str | None = None) -> list[Variant]:
    return [v for v in VARIANTS if v.api == api and (precision is None or v.precision == precision)]


# ---------------------------------------------------------------------------------------------------
# Support rules (pure): which (api, precision) run natively on a compute capability.
# ---------------------------------------------------------------------------------------------------

def skip_reason(api: str, precision: str, cc: tuple[int, int]) -> str | None:
    """Why ``api`` cannot measure ``precision`` natively on compute capability ``cc``; None if it can.

    From the PTX ISA targets and from the SASS ptxas 13.0 emits (checked with cuobjdump): on sm_90 and
    sm_100/103/110, mma.sync FP8 becomes F2FP + HMMA.16816 and INT4 becomes IMMA.16832.S8.S8, i.e. no
    FP8/INT4 tensor rate; QMMA (FP8) exists on sm_89 and sm_12x, IMMA.16864.S4 on sm_80..sm_89.
    """
    arch = f"sm_{cc[0]}{cc[1]}"
    if api == "wgmma":
        if cc != (9, 0):
            return f"wgmma needs sm_90a (Hopper), device is {arch}"
        return None
    if api != "mma_sync":
        raise ValueError(f"unknown api {api!r}")
    if cc < (8, 0):
        return f"{precision} mma.sync (m16n8k8/16/32/64, m8n8k4 f64 shapes) needs sm_80+, device is {arch}"
    if precision == "fp8":
        if cc < (8, 9):
            return f"fp8 mma.sync needs sm_89+, device is {arch}"
        if cc != (8, 9) and cc[0] != 12:
            return (f"fp8 mma.sync has no native instruction on {arch} (ptxas lowers it to F2FP + HMMA.16816); "
                    "Hopper runs FP8 through wgmma")
    if precision == "int4" and cc >= (9, 0):
        return (f"int4 mma.sync has no native instruction on {arch} (ptxas lowers it to IMMA.16832.S8.S8): "
                "no INT4 tensor cores")
    return None


def variant_skip_reason(v: Variant, cc: tuple[int, int]) -> str | None:
    """skip_reason, plus the variant's own minimum arch (a shape that only newer PTX targets have)."""
    reason = skip_reason(v.api, v.precision, cc)
    if reason is None and cc < v.min_cc:
        reason = f"{v.ptx} needs sm_{v.min_cc[0]}{v.min_cc[1]}+, device is sm_{cc[0]}{cc[1]}"
    return reason


def supported(cc: tuple[int, int]) -> frozenset[tuple[str, str]]:
    """Every (api, precision) measured natively on ``cc``."""
    pairs = [("mma_sync", p) for p in MMA_SYNC_PRECISIONS] + [("wgmma", p) for p in WGMMA_PRECISIONS]
    return frozenset(pair for pair in pairs if skip_reason(pair[0], pair[1], cc) is None)


# ---------------------------------------------------------------------------------------------------
# Operand encoding and the PTX fragment layouts (pure numpy).
# ---------------------------------------------------------------------------------------------------

def fp8_code(x: float, fmt: str) -> int:
    """The e4m3 / e5m2 byte of ``x``; ValueError unless ``x`` is exactly representable."""
    ebits, mbits, bias = (4, 3, 7) if fmt == "e4m3" else (5, 2, 15)
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = abs(float(x))
    if a == 0:
        return sign
    e = math.floor(math.log2(a))
    if e + bias >= 1:
        field, frac = e + bias, a / 2.0 ** e - 1.0
    else:                                       # subnormal
        field, frac = 0, a / 2.0 ** (1 - bias)
    m = frac * (1 << mbits)
    max_field = (1 << ebits) - (1 if fmt == "e4m3" else 2)
    if m != int(m) or field > max_field or (fmt == "e4m3" and field == max_field and m == (1 << mbits) - 1):
        raise ValueError(f"{x} is not exactly representable in {fmt}")
    return sign | (field << mbits) | int(m)


def encode(values: np.ndarray, fmt: str) -> np.ndarray:
    """Bit patterns (uint64) of small integer ``values`` in ``fmt``; ValueError if one is not exact."""
    v = np.asarray(values)
    if fmt == "fp16":
        h = v.astype(np.float16)
        if not np.array_equal(h.astype(np.float64), v):
            raise ValueError("not exact in fp16")
        return h.view(np.uint16).astype(np.uint64)
    if fmt in (Precision.BF16, Precision.TF32):
        bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
        low = 16 if fmt == "bf16" else 13
        if np.any(bits & ((1 << low) - 1)) or not np.array_equal(v.astype(np.float32).astype(np.float64), v):
            raise ValueError(f"not exact in {fmt}")
        return bits >> 16 if fmt == "bf16" else bits
    if fmt in ("e4m3", "e5m2"):
        table = {float(x): fp8_code(float(x), fmt) for x in np.unique(v)}
        return np.vectorize(lambda x: table[float(x)], otypes=[np.uint64])(v)
    if fmt in ("s8", "s4"):
        bits = BITS[fmt]
        if v.min() < -(1 << (bits - 1)) or v.max() >= 1 << (bits - 1):
            raise ValueError(f"out of range for {fmt}")
        return (v.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint64)
    raise ValueError(f"no bit encoding for {fmt!r}")


def _lane_ids() -> tuple[np.ndarray, np.ndarray]:
    lane = np.arange(32)[:, None]
    return lane // 4, lane % 4                  # groupID, threadID_in_group


def mma_a_map(in_fmt: str, k: int = 4) -> np.ndarray:
    """(32 lanes, elements, 2): the (row, k) of A held by each lane's fragment element, PTX order.

    m16n8k{8,16,32,64}: 4 registers of e = 32/bits elements; register r holds row g + 8*(r%2) and
    columns t*e + j + 4e*(r//2). f64: m8n8k4 holds one element (g, t); m16n8k{8,16} hold k/4 doubles,
    double r at row g + 8*(r%2), column t + 4*(r//2) (``k`` selects the f64 shape).
    """
    g, t = _lane_ids()
    if in_fmt == "f64":
        if k == 4:
            return np.stack(np.broadcast_arrays(g, t), axis=-1)
        r = np.arange(k // 2)[None, :]
        return np.stack(np.broadcast_arrays(g + 8 * (r % 2), t + 4 * (r // 2)), axis=-1)
    e = 32 // BITS[in_fmt]
    i = np.arange(4 * e)[None, :]
    reg, j = i // e, i % e
    return np.stack(np.broadcast_arrays(g + 8 * (reg % 2), t * e + j + 4 * e * (reg // 2)), axis=-1)


def mma_b_map(in_fmt: str, k: int = 4) -> np.ndarray:
    """(32, elements, 2): the (k, n) of B per lane element. 2 registers: k = t*e + j + 4e*r, n = g.
    f64: k/4 doubles, double r at k = t + 4r, n = g."""
    g, t = _lane_ids()
    if in_fmt == "f64":
        r = np.arange(k // 4)[None, :]
        return np.stack(np.broadcast_arrays(t + 4 * r, g), axis=-1)
    e = 32 // BITS[in_fmt]
    i = np.arange(2 * e)[None, :]
    reg, j = i // e, i % e
    return np.stack(np.broadcast_arrays(t * e + j + 4 * e * reg, g), axis=-1)


def mma_c_map(in_fmt: str, m: int = 16) -> np.ndarray:
    """(32, elements, 2): the (row, n) of the accumulator per lane element (f16 accumulate: 2 per register).

    m16n8 (f64 too): element i at row g + 8*(i//2), column 2t + i%2. m8n8k4 f64: (g, 2t + i), i < 2.
    """
    g, t = _lane_ids()
    if in_fmt == "f64" and m == 8:
        i = np.arange(2)[None, :]
        return np.stack(np.broadcast_arrays(g, 2 * t + i), axis=-1)
    i = np.arange(4)[None, :]
    return np.stack(np.broadcast_arrays(g + 8 * (i // 2), 2 * t + i % 2), axis=-1)


def wgmma_d_map(n: int = WGMMA_N) -> np.ndarray:
    """(128 threads, n/2 elements, 2): the (row, col) of the m64nN accumulator per thread element.

    Warp w owns rows 16w..16w+15; element i: row 16w + g + 8*((i//2)%2), column 8*(i//4) + 2t + i%2.
    """
    tid = np.arange(128)[:, None]
    lane = tid % 32
    g, t = lane // 4, lane % 4
    i = np.arange(n // 2)[None, :]
    row = 16 * (tid // 32) + g + 8 * ((i // 2) % 2)
    return np.stack(np.broadcast_arrays(row, 8 * (i // 4) + 2 * t + i % 2), axis=-1)


def pack_lanes(codes: np.ndarray, fmap: np.ndarray, bits: int) -> np.ndarray:
    """Pack the codes a fragment map selects into 32-bit registers, lowest element in the lowest bits."""
    per = codes[fmap[..., 0], fmap[..., 1]].astype(np.uint64)       # (threads, elements)
    e = 32 // bits
    per = per.reshape(per.shape[0], -1, e)
    shifts = np.arange(e, dtype=np.uint64) * np.uint64(bits)
    return (per << shifts).sum(axis=2).astype(np.uint32)


def kmajor_offsets(rows: int, k: int, esize: int, swizzle: bool) -> np.ndarray:
    """Byte offset of element (r, k) of a K-major wgmma tile with 128-byte rows (see wgmma.cu): no swizzle
    (8x16-byte core matrices, LBO 128, SBO 1024) or the 128-byte swizzle (16-byte chunk c of row r
    stored at chunk c ^ (r % 8))."""
    r = np.arange(rows)[:, None]
    kb = np.arange(k)[None, :] * esize
    if kb.max() >= ROW_BYTES:
        raise ValueError(f"a tile row holds {ROW_BYTES} bytes of K")
    if swizzle:
        return (r // 8) * SLAB_BYTES + (r % 8) * ROW_BYTES + ((kb // 16) ^ (r % 8)) * 16 + kb % 16
    return (r // 8) * SLAB_BYTES + (kb // 16) * CORE_BYTES + (r % 8) * 16 + kb % 16


def smem_image(codes: np.ndarray, bits: int, swizzle: bool) -> np.ndarray:
    """The shared-memory bytes of a (rows, K) K-major tile, as little-endian 32-bit words."""
    rows, k = codes.shape
    esize = bits // 8
    img = np.zeros(rows * ROW_BYTES, dtype=np.uint8)
    off = kmajor_offsets(rows, k, esize, swizzle)
    for b in range(esize):
        img[off + b] = ((codes >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.uint8)
    return img.view("<u4").copy()


def scatter(vals: np.ndarray, dmap: np.ndarray, m: int, n: int) -> np.ndarray:
    """(units, threads, elements) accumulator values -> (units, m, n) matrices through ``dmap``."""
    out = np.full((vals.shape[0], m, n), np.nan)
    out[:, dmap[..., 0], dmap[..., 1]] = vals
    return out


def k_total(v: Variant) -> int:
    """K of the product one loop iteration computes: one instruction (mma.sync), KSTEPS slices (wgmma)."""
    return v.shape[2] * (KSTEPS if v.api == "wgmma" else 1)


def inputs(v: Variant, seed: int = 1234) -> tuple[np.ndarray, np.ndarray]:
    """Small non-uniform integer A (M x K) and B^T (N x K), exact in the input format."""
    m, n, _ = v.shape
    rng = np.random.default_rng(seed)
    return rng.integers(v.lo, v.hi + 1, (m, k_total(v))), rng.integers(v.lo, v.hi + 1, (n, k_total(v)))


def wgmma_a_fragments(codes: np.ndarray, in_fmt: str) -> np.ndarray:
    """A (64 x KSTEPS*k codes) as the rs form's registers, [thread][K slice][4 regs]: warp w of the
    warpgroup holds rows 16w..16w+15 of each slice in the mma.sync m16n8k{8,16,32} A-fragment layout."""
    bits = BITS[in_fmt]
    k = codes.shape[1] // KSTEPS
    amap = mma_a_map(in_fmt)
    out = np.zeros((4, 32, KSTEPS, 4), dtype=np.uint32)
    for w in range(4):
        for s in range(KSTEPS):
            out[w, :, s, :] = pack_lanes(codes[16 * w:16 * w + 16, s * k:(s + 1) * k], amap, bits)
    return out.reshape(128, KSTEPS, 4)


def pack(v: Variant, a: np.ndarray, bt: np.ndarray, form: str = "ss_sw128") -> tuple[np.ndarray, np.ndarray]:
    """The device arrays of A and B: per-lane fragments (mma.sync: B's, then -B's, which the odd iterations
    use) or shared-memory images and, for the rs form, A's register fragments (wgmma)."""
    k = v.shape[2]
    if v.in_fmt == "f64":
        am, bm = mma_a_map("f64", k), mma_b_map("f64", k)
        b_frag = lambda b: b.T.astype(np.float64)[bm[..., 0], bm[..., 1]]  # noqa: E731
        return a.astype(np.float64)[am[..., 0], am[..., 1]].copy(), np.concatenate([b_frag(bt), b_frag(-bt)])
    bits = BITS[v.in_fmt]
    ca = encode(a, v.in_fmt)
    if v.api == "wgmma":
        cb = encode(bt, v.in_fmt)
        swizzle = form.endswith("sw128")
        img_a = wgmma_a_fragments(ca, v.in_fmt) if form.startswith("rs") else smem_image(ca, bits, swizzle)
        return img_a, smem_image(cb, bits, swizzle)
    bmap = mma_b_map(v.in_fmt)
    return pack_lanes(ca, mma_a_map(v.in_fmt), bits), np.concatenate(
        [pack_lanes(encode(b, v.in_fmt).T, bmap, bits) for b in (bt, -bt)])


def n_acc_regs(v: Variant) -> int:
    """32-bit accumulator registers (f64: doubles) per thread, as the kernel writes them."""
    if v.api == "wgmma":
        return WGMMA_N // 4 if v.acc == "f16" else WGMMA_N // 2
    return 2 if v.acc == "f16" or v.shape[0] == 8 else 4


def unpack(v: Variant, out: np.ndarray, units: int) -> np.ndarray:
    """The kernel's output buffer -> (units, M, N) accumulator matrices (float64)."""
    m, n, _ = v.shape
    regs = n_acc_regs(v)
    if v.api == "wgmma":                        # written as [warpgroup][register][thread]
        vals = np.ascontiguousarray(out.reshape(units, regs, 128).transpose(0, 2, 1))
        dmap = wgmma_d_map()
    else:                                       # written as [warp][lane][register]
        vals = np.ascontiguousarray(out.reshape(units, 32, regs))
        dmap = mma_c_map(v.in_fmt, m)
    if v.acc == "f16":
        vals = vals.view(np.float16)            # each register holds two halves, lower element first
    return scatter(vals.astype(np.float64), dmap, m, n)


def reference(a: np.ndarray, bt: np.ndarray, count: int) -> np.ndarray:
    """count x (A @ B) in exact integer arithmetic."""
    return count * (a.astype(np.int64) @ bt.astype(np.int64).T)


def compare(got: np.ndarray, want: np.ndarray) -> None:
    """Element-wise exact comparison of every unit's matrix; VerificationError names the first miss."""
    bad = got != want[None]
    if bad.any():
        u, r, c = (int(x[0]) for x in np.nonzero(bad))
        raise VerificationError(
            f"{int(bad.sum())}/{bad.size} accumulator elements differ; first at unit {u} (row {r}, col {c}): "
            f"got {got[u, r, c]}, want {want[r, c]}")


def ops_per_iteration(v: Variant) -> int:
    """Operations per loop iteration of one warp (mma.sync) or one warpgroup (wgmma)."""
    return v.ops_per_instruction * (CHAINS if v.api == "mma_sync" else KSTEPS)


def verify_count(v: Variant) -> int:
    """How many times the layout check's launch (VERIFY_ITERS, no reset) leaves A @ B in each output."""
    return timed_count(v, VERIFY_ITERS, MAX_ITERS)


def timed_count(v: Variant, iters: int, reset: int) -> int:
    """Multiples of A @ B (over k_total) in each output of a launch: mma.sync alternates +B and -B, so each of
    the CHAINS chains holds A @ B after an odd count and 0 after an even one; wgmma resets the accumulators
    (scale-d = 0) at every ``reset``-th iteration, so it holds the iterations since the last reset."""
    if v.api == "mma_sync":
        return CHAINS * (iters % 2)
    return (iters - 1) % reset + 1


def acc_exact(v: Variant) -> int:
    """The largest magnitude every partial sum of ``v``'s accumulator may reach and stay exact."""
    return FP8_ACC_EXACT if v.in_fmt in ("e4m3", "e5m2") else ACC_EXACT[v.acc]


def reset_period(v: Variant, a: np.ndarray, bt: np.ndarray) -> int:
    """wgmma: iterations between accumulator resets that keep every partial sum exact. Within a period a
    partial sum is at most (iterations since the reset) x max(|A| @ |B|^T); mma.sync needs none (its chains
    never exceed |A @ B|: MAX_ITERS). ValueError when one iteration alone can leave the exact range."""
    bound = int((np.abs(a).astype(np.int64) @ np.abs(bt).astype(np.int64).T).max())
    chains = CHAINS if v.api == "mma_sync" else 1       # mma.sync also sums its chains in the accumulator type
    if bound * chains > acc_exact(v):
        raise ValueError(f"{v.metric}: |A| @ |B| reaches {bound}, beyond the exact range {acc_exact(v)}")
    if v.api == "mma_sync":
        return MAX_ITERS
    return max(1, acc_exact(v) // max(bound, 1))


def odd(iters: int) -> int:
    """mma.sync runs an odd count so its outputs hold A @ B (an even count leaves 0, which checks nothing)."""
    return iters if iters % 2 else iters + 1


def check_timed(v: Variant, out: np.ndarray, units: int, a: np.ndarray, bt: np.ndarray, count: int) -> str:
    """The timed launch's own output against ``count`` x (A @ B), exactly; VerificationError names the first
    miss, and says first how many values are inf or NaN (an accumulator that overflowed)."""
    got = unpack(v, out, units)
    bad = int(np.count_nonzero(~np.isfinite(got)))
    if bad:
        raise VerificationError(f"timed launch: {bad}/{got.size} accumulator values are inf or NaN")
    compare(got, reference(a, bt, count))
    return (f"timed launch's own output checked: all {got.size} accumulator values of {units} "
            f"{'warps' if v.api == 'mma_sync' else 'warpgroups'} exact ({count} x A @ B), none inf or NaN")


# ---------------------------------------------------------------------------------------------------
# Iteration calibration and configuration search (pure, with an injected timer).
# ---------------------------------------------------------------------------------------------------

def calibrate(timer: Callable[[int], float], target_s: float, start: int = 16, hi: int = MAX_ITERS) -> int:
    """Iterations that make one launch last about ``target_s`` (the timing policy's calibrate: grow until a
    launch takes a quarter of the target, then scale linearly)."""
    return policy.calibrate(timer, target_s, start=start, hi=hi).count


def search(configs, rate_of: Callable) -> tuple[object, dict, dict]:
    """Try each configuration: ``rate_of(cfg) -> (rate, seconds per iteration)``. Returns the best one,
    the results by configuration and the errors of those that could not run."""
    results, errors = {}, {}
    for cfg in configs:
        try:
            results[cfg] = rate_of(cfg)
        except Exception as e:          # a configuration that cannot launch here is left out
            errors[cfg] = f"{type(e).__name__}: {e}"
    if not results:
        raise RuntimeError(f"no launch configuration ran: {errors}")
    best = max(results, key=lambda c: results[c][0])
    return best, results, errors


def geometry(v: Variant, cfg: tuple, sms: int, grid: int | None = None) -> tuple[int, int, int]:
    """(grid, block, units) of a launch: units = warps (mma.sync) or warpgroups (wgmma) launched.
    A configuration is (threads per block, blocks per SM) for mma.sync, (form, blocks per SM) for wgmma."""
    block = 128 if v.api == "wgmma" else cfg[0]
    grid = grid or sms * cfg[1]
    return grid, block, grid * block // (32 if v.api == "mma_sync" else 128)


def config_label(cfg: tuple) -> str:
    if isinstance(cfg[0], str):
        return f"{cfg[0]}, 128 threads x {cfg[1]} blocks/SM"
    return f"{cfg[0]} threads x {cfg[1]} blocks/SM"


def kernel_name(v: Variant, cfg: tuple | None = None) -> str:
    """The extern "C" function a configuration launches (wgmma.cu has one per operand form)."""
    return f"{v.kernel}_{cfg[0]}" if v.api == "wgmma" else v.kernel


def per_clock(ops_per_cta: float, per_sm: int, cycles: float) -> float:
    """Operations per SM clock: the CTAs of one SM run side by side for ``cycles`` SM cycles."""
    return ops_per_cta * per_sm / cycles


def sass_flags(has_expected: bool | None, v: Variant) -> list[str]:
    """The flag for a kernel whose timed loop lacks the intended tensor instruction."""
    return [f"sass_mismatch: {v.sass} not in the timed loop"] if has_expected is False else []


# ---------------------------------------------------------------------------------------------------
# GPU side.
# ---------------------------------------------------------------------------------------------------

def _source_file(api: str) -> str:
    return "mma_sync.cu" if api == "mma_sync" else "wgmma.cu"


def _base_options(api: str) -> tuple[str, ...]:
    return (f"-DCHAINS={CHAINS}",) if api == "mma_sync" else ()


def _isolate_options(v: Variant) -> tuple[str, ...]:
    if v.api == "mma_sync":
        return ("-DMMA_ONLY", f"-DMMA_ONLY_{v.kernel}")
    return (f"-DWGMMA_ONLY={WGMMA_IDS[v.kernel]}",)


def _sass_options(v: Variant, cfg: tuple, extra: tuple[str, ...]) -> tuple[str, ...]:
    """Options of the cubin whose SASS is read: wgmma compiles only the timed type and form (fast)."""
    if v.api != "wgmma":
        return extra
    only = tuple(o for o in _isolate_options(v) if o not in extra)
    return (*extra, *only, f"-DWGMMA_FORM={WGMMA_FORMS.index(cfg[0])}")


_BROKEN: set[str] = set()     # sources whose all-variants module failed to compile in this process


def _module(v: Variant) -> tuple[object, tuple[str, ...]]:
    """The compiled module holding ``v``'s kernels and the extra NVRTC options used. One module holds every
    variant; if it fails to compile, this variant is compiled alone so one bad form does not sink the rest."""
    from hwprobe.kernels import load

    file, arch_specific = _source_file(v.api), v.api == "wgmma"
    opts = _base_options(v.api)
    mod = None
    if file not in _BROKEN:
        try:
            mod = load(file, opts, arch_specific=arch_specific)
        except Exception:
            _BROKEN.add(file)
    if mod is None:
        opts = opts + _isolate_options(v)
        mod = load(file, opts, arch_specific=arch_specific)
    return mod, opts


def sass_evidence(v: Variant, function: str, nvrtc_options: tuple[str, ...]) -> tuple[str, bool | None]:
    """(a line for the notes, whether the expected opcode is in the timed loop; None if not checked)."""
    text = sass.once_of(_source_file(v.api), nvrtc_options)
    if text is None:
        return "SASS: not checked (no cubin from NVRTC, or cuobjdump/nvdisasm missing)", None
    return sass.evidence(text, function, (v.sass,)), sass.has_opcodes(text, function, (v.sass,))


def _nvrtc_options(device, api: str, extra: tuple[str, ...]) -> tuple[str, ...]:
    from hwprobe.kernels import arch_flag

    return (arch_flag(device.cc_major, device.cc_minor, arch_specific=api == "wgmma"), "-std=c++17", *extra)


def _median_time(fn: Callable[[], object], repeats: int = 2) -> float:
    from hwprobe.timing import time_cuda

    return statistics.median(time_cuda(fn, warmup=1, repeats=repeats))


class _Launch:
    """Launches of one kernel configuration: ``launch(iters)`` runs it; every launch's per-CTA stamps go to a
    ring of CLK_SLOTS records of its own (``slots`` lists the slots in launch order)."""

    def __init__(self, cp, v: Variant, fn, grid: int, block: int, units: int, args: tuple, reset: int):
        self.cp, self.v, self.fn, self.grid, self.block, self.units = cp, v, fn, grid, block, units
        self.args, self.reset = args, reset
        regs = n_acc_regs(v) * (32 if v.api == "mma_sync" else 128)
        self.out = cp.zeros(units * regs, dtype=ACC_DTYPE[v.acc])
        self.clk = cp.zeros(CLK_SLOTS * grid * mc.CLK_FIELDS, dtype=np.uint64)
        self.slots: list[int] = []

    def __call__(self, iters: int) -> None:
        slot = len(self.slots) % CLK_SLOTS
        self.slots.append(slot)
        tail = (np.int32(iters), np.int32(self.reset)) if self.v.api == "wgmma" else (np.int32(iters),)
        self.fn((self.grid,), (self.block,), (*self.args, self.out, self.clk, np.int32(slot), *tail))

    def stamps(self, last: int, end: int | None = None) -> np.ndarray:
        """(launches, CTAs, CLK_FIELDS) stamps of the ``last`` launches before launch number ``end``."""
        rec = self.cp.asnumpy(self.clk).reshape(CLK_SLOTS, self.grid, mc.CLK_FIELDS)
        slots = self.slots[:end] if end is not None else self.slots
        return rec[slots[-last:] if last else []]


class _Launcher:
    """Device operands of one variant and launches for a configuration."""

    def __init__(self, cp, v: Variant, mod, sms: int):
        self.cp, self.v, self.mod, self.sms = cp, v, mod, sms
        self.a, self.bt = inputs(v)
        self.reset = reset_period(v, self.a, self.bt)
        self._operands: dict[str, tuple] = {}

    def operands(self, cfg: tuple):
        form = cfg[0] if self.v.api == "wgmma" else ""
        if form not in self._operands:
            pa, pb = pack(self.v, self.a, self.bt, form) if form else pack(self.v, self.a, self.bt)
            self._operands[form] = (self.cp.asarray(pa.ravel()), self.cp.asarray(pb.ravel()))
        return self._operands[form]

    def make(self, cfg: tuple, grid: int | None = None, reset: int | None = None) -> _Launch:
        grid, block, units = geometry(self.v, cfg, self.sms, grid)
        fn = self.mod.get_function(kernel_name(self.v, cfg))
        return _Launch(self.cp, self.v, fn, grid, block, units, self.operands(cfg), reset or self.reset)

    def rate(self, cfg: tuple, target_s: float) -> tuple[float, float]:
        launch = self.make(cfg)
        iters = calibrate(lambda n: _median_time(partial(launch, n)), target_s)
        t = _median_time(partial(launch, iters), repeats=3)
        return launch.units * ops_per_iteration(self.v) * iters / t, t / iters

    def per_clock_rate(self, cfg: tuple, iters: int) -> tuple[float, float]:
        """wgmma: (operations per SM clock in the timed loop of CTA 0, seconds per iteration) of ``cfg``,
        checked first (a form whose layout is wrong raises VerificationError and drops out of the search)."""
        self.check(cfg)
        launch = self.make(cfg)
        t = _median_time(partial(launch, iters), repeats=2)
        loop_cycles = float(launch.stamps(1)[0, 0, 4])
        return per_clock(ops_per_iteration(self.v) * iters, cfg[1], loop_cycles), t / iters

    def check(self, cfg: tuple) -> None:
        """The layout check: two CTAs, VERIFY_ITERS iterations, no reset, every output exact."""
        launch = self.make(cfg, grid=2, reset=MAX_ITERS)
        launch(VERIFY_ITERS)
        got = unpack(self.v, self.cp.asnumpy(launch.out), launch.units)
        compare(got, reference(self.a, self.bt, verify_count(self.v)))

    def check_timed(self, launch: _Launch, iters: int) -> str:
        return check_timed(self.v, self.cp.asnumpy(launch.out), launch.units, self.a, self.bt,
                           timed_count(self.v, iters, launch.reset))


def _meta(v: Variant) -> dict:
    return dict(precision=v.metric_precision, exec_unit=ExecUnit.TENSOR_CORE, path=Path.INSTRUCTION,
                params={"instruction": v.ptx})  # not vocab: the PTX instruction


FORM_NOTES = {
    "ss_nosw": "A and B from shared memory (descriptors, K-major, no swizzle)",
    "ss_sw128": "A and B from shared memory (descriptors, K-major, 128-byte swizzle)",
    "rs_sw128": "A from registers, B from shared memory (descriptor, K-major, 128-byte swizzle)",
}


def _layout_note(v: Variant, cfg: tuple) -> str:
    if v.api == "mma_sync":
        return (f"{v.ptx}: A and B in registers (per-lane fragments loaded once), {CHAINS} independent "
                "accumulator chains per warp; no memory traffic in the loop")
    return (f"{v.ptx}: {FORM_NOTES[cfg[0]]}, accumulators in registers, {KSTEPS} wgmma (K slices) per commit "
            f"group with one group in flight, {cfg[1]} warpgroup(s) per SM; no DRAM traffic in the loop")


def _search_wgmma(lau: _Launcher, quick: bool):
    """Every (form, blocks/SM), scored by operations per SM clock (in-kernel clock64), so a power-cap
    clock drop during the search cannot pick the wrong one. One calibration serves every configuration."""
    first = lau.make(WGMMA_CONFIGS[0])
    search_s = policy.rule("search").sample_s
    iters = calibrate(lambda n: _median_time(partial(first, n)), search_s / 2 if quick else search_s)
    best, results, errors = search(WGMMA_CONFIGS, lambda cfg: lau.per_clock_rate(cfg, iters))
    return prefer_form(best, results), results, errors


def prefer_form(best: tuple, results: dict) -> tuple:
    """The configuration to time: among those at ``best``'s blocks/SM within FORM_TIE of its operations per clock,
    the first form of FORM_PREFERENCE (the one the GPU clocks highest: see FORM_PREFERENCE)."""
    top = results[best][0]
    tied = [c for c in results if c[1] == best[1] and results[c][0] >= top * (1 - FORM_TIE)]
    return min(tied, key=lambda c: FORM_PREFERENCE.index(c[0]))


def _settle(launch, iters: int, seconds: float, per_launch_s: float) -> None:
    """Run untimed until power and clock settle (the power-cap controller reacts within ~0.1-0.3 s)."""
    import cupy as cp

    for _ in range(max(1, int(seconds / max(per_launch_s, 1e-4)))):
        launch(iters)
    cp.cuda.get_current_stream().synchronize()


def _peak_at(ctx, v: Variant) -> Callable[[float | None], float | None]:
    """Theory of ``v``'s precision on the tensor cores at a clock (None: the max clock), or nothing known."""
    theory = getattr(ctx, "theory", None)
    if theory is None:
        try:
            from hwprobe.specs.live import device_theory

            theory = device_theory(ctx.device)
        except Exception:
            return lambda clk: None

    def at(clk):
        t = theory.compute(v.metric_precision, ExecUnit.TENSOR_CORE, clk)
        return t.at_clock if t else None
    return at


def _plan(ctx, lau: _Launcher, v: Variant):
    """Search the launch configurations; returns (best, results, errors, iterations per timed launch)."""
    if v.api == "mma_sync":
        search_s = policy.rule("search").sample_s / (2 if ctx.quick else 1)
        best, results, errors = search(MMA_CONFIGS, lambda cfg: lau.rate(cfg, search_s))
    else:
        best, results, errors = _search_wgmma(lau, ctx.quick)
    target_s = (policy.INSTRUCTION_QUICK if ctx.quick else policy.INSTRUCTION).sample_s
    iters = iterations_for(results[best][1], target_s, lo=1, hi=MAX_ITERS)
    return best, results, errors, odd(iters) if v.api == "mma_sync" else iters


def _measure(ctx, cp, v: Variant):
    mod, extra = _module(v)
    lau = _Launcher(cp, v, mod, ctx.device.sms)
    best, results, errors, iters = _plan(ctx, lau, v)
    launch = lau.make(best)
    notes = [_layout_note(v, best)]
    if v.precision == "fp8" and v.api == "mma_sync":
        notes.append("fp8 mma.sync needs PTX ISA 8.4+ (CUDA 12.4+) and sm_89+")
    notes += [f"config {config_label(c)} could not run or failed its check: {e}" for c, e in errors.items()]
    function = kernel_name(v, best)
    sass_opts = _nvrtc_options(ctx.device, v.api, _sass_options(v, best, extra))
    from hwprobe.kernels import ahead

    ahead(*sass.job(_source_file(v.api), sass_opts))
    params = {
        "instruction": v.ptx,  # not vocab: the PTX instruction
        "shape": v.shape_name, "kernel": function, "grid": launch.grid, "block": launch.block,
        "iters": iters, "units": launch.units, "per_unit_iteration_ops": ops_per_iteration(v),
        "instructions_per_iteration": CHAINS if v.api == "mma_sync" else KSTEPS,
        "timed_output": {"multiple_of_a_at_b": timed_count(v, iters, launch.reset), "inputs": [v.lo, v.hi],
                         **({"reset_every": launch.reset} if v.api == "wgmma" else {"b_sign": "+B, -B alternating"})},
    }
    if v.api == "mma_sync":
        params["search"] = {config_label(c): r for c, (r, _) in results.items()}
    else:
        params["form"], params["blocks_per_sm"] = best
        params["search_ops_per_clk_per_sm"] = {config_label(c): r for c, (r, _) in results.items()}
        params["form_preference"] = {"order": list(FORM_PREFERENCE), "tie": FORM_TIE}
        _settle(launch, iters, SETTLE_S_QUICK if ctx.quick else SETTLE_S, results[best][1] * iters)
    ctx.log(f"{v.metric}: {config_label(best)}, {iters} iterations per launch")
    work = float(launch.units * ops_per_iteration(v) * iters)

    def take():
        checked: list[str] = []

        def check():
            checked.append(lau.check_timed(launch, iters))      # the timed launches' own output, first
            lau.check(best)

        m = ctx.measure(v.metric, partial(launch, iters), work=work, unit=v.unit, kind="compute", check=check,
                        precision=v.metric_precision, exec_unit=ExecUnit.TENSOR_CORE, path=Path.INSTRUCTION,
                        params=dict(params), notes=list(notes))
        m.notes += checked
        _account_clocks(ctx, m, v, launch, work, best)
        return m

    m = take()
    if off := next((f for f in m.flags if str(f).startswith("timer_disagreement")), None):
        # The launches ran longer than their CTAs (a clock change stalls the front end: H200 under its power
        # cap, 2026-11-27): the rate is over the span either way, but such a sample set is taken once more.
        m = take()
        m.notes.append(f"re-measured once: the first sample set had {off}")
        m.params["remeasured"] = True
    line, has = sass_evidence(v, function, sass_opts)     # compiled on a worker while the samples ran
    m.notes.append(line)
    if flags := sass_flags(has, v):
        from hwprobe.kernels.sass import invalidate

        m.flags += flags
        invalidate(m)
    return m


def _account_clocks(ctx, m, v: Variant, launch: _Launch, work: float, cfg: tuple) -> None:
    """The rate over the launches' span, the kernel clock and the share of theory at each clock (mma_clock)."""
    n = min(len(m.samples_s), CLK_SLOTS, len(launch.slots))
    lc = mc.launch_clocks(launch.stamps(n), m.samples_s[-n:] if n else [])
    if not lc:
        m.notes.append("SM clock not read: no complete per-CTA stamps from the timed launches")
        return
    units_per_cta = launch.units // launch.grid        # warps (mma.sync) or warpgroups (wgmma) per CTA
    vd = mc.verdict(lc, work, m.clocks.sm_mhz if m.clocks else None, _peak_at(ctx, v),
                    ops_per_cta=ops_per_iteration(v) * m.params["iters"] * units_per_cta, ctas_per_sm=cfg[1],
                    sms=ctx.device.sms)
    m.value = vd.value
    m.params.update(vd.params)
    m.flags += vd.flags
    m.notes += vd.notes


def _run(ctx, api: str, precisions):
    cc = (ctx.device.cc_major, ctx.device.cc_minor)
    cp = None
    for prec in precisions:
        for v in variants(api, prec):
            reason = variant_skip_reason(v, cc)
            if reason:
                yield ctx.skip(v.metric, reason, **_meta(v))
                continue
            if cp is None:
                try:
                    import cupy as cp
                except Exception as e:
                    raise Skip(f"CuPy is not importable: {e}") from None
            try:
                yield _measure(ctx, cp, v)
            except Exception as e:          # one failing form does not stop the others
                yield ctx.error(v.metric, v.metric, e, **_meta(v))


def _ahead(api: str):
    """The probe's compile-ahead hook: its all-variants module (wgmma's on sm_90 only, its sm_90a target)."""
    def hook(dev) -> None:
        from hwprobe.kernels import prefetch

        if api == "mma_sync" or (dev.cc_major, dev.cc_minor) == (9, 0):
            prefetch([(_source_file(api), _base_options(api), None, api == "wgmma")])
    return hook


@probe(name="gpu.mma_sync", target="gpu", family="compute", precisions=MMA_SYNC_PRECISIONS, ahead=_ahead("mma_sync"),
       summary="Tensor Core peak through warp-level PTX mma.sync (registers only), per precision")
def run_mma_sync(ctx, precisions=MMA_SYNC_PRECISIONS):
    yield from _run(ctx, "mma_sync", precisions)


@probe(name="gpu.wgmma", target="gpu", family="compute", precisions=WGMMA_PRECISIONS, ahead=_ahead("wgmma"),
       summary="Tensor Core peak through Hopper wgmma (sm_90a, operands in shared memory), per precision")
def run_wgmma(ctx, precisions=WGMMA_PRECISIONS):
    yield from _run(ctx, "wgmma", precisions)
