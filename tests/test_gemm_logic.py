"""CPU tests of the library GEMM probes' rules: FLOP counts, tolerances, the sampled-row check, layouts
(against a mock cuBLAS that reads column-major memory itself), encodings, size plans and the pitfall logic."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from hwprobe.errors import VerificationError
from hwprobe.measurement import Measurement, Stats
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.timing.steady import Sustain

# --- work and tolerances ---------------------------------------------------------------------------------


def test_gemm_flops_counts_a_multiply_add_as_two():
    assert gc.gemm_flops(8192, 8192, 8192) == 2 * 8192**3
    assert gc.gemm_flops(2, 3, 5) == 60.0
    assert gc.gemm_bytes(4, 4, 4, 2, 4) == (16 + 16) * 2 + 16 * 4


def test_tolerances_per_precision():
    assert gc.tolerance("fp64") == 1e-12
    assert gc.tolerance("fp32") == 1e-5
    assert gc.tolerance("int8.tn") == 0.0 and gc.tolerance("int8.nn") == 0.0 and gc.tolerance("int8") == 0.0
    assert gc.tolerance("fp64") < gc.tolerance("fp32") < gc.tolerance("fp16.f32acc") < gc.tolerance("tf32")
    assert gc.tolerance("fp8") < gc.tolerance("fp8.fast")
    # fp16 accumulation: at least 1e-2, growing like sqrt(k)
    assert gc.tolerance("fp16.f16acc", 64) == 1e-2
    assert gc.tolerance("fp16.f16acc", 8192) == pytest.approx(2.0**-11 * 8192**0.5)
    with pytest.raises(KeyError):
        gc.tolerance("fp7")


def test_every_variant_has_a_tolerance_and_a_consistent_scalar():
    metrics = set()
    for prec, variants in gc.GEMM_VARIANTS.items():
        for v in variants:
            assert v.precision == prec
            assert gc.tolerance(v.key, 1024) >= 0
            assert v.scalar == {gc.COMPUTE_16F: "float16", gc.COMPUTE_32F: "float32", gc.COMPUTE_64F: "float64",
                                gc.COMPUTE_32I: "int32", gc.COMPUTE_32F_FAST_TF32: "float32"}[v.compute]
            assert v.metric not in metrics
            metrics.add(v.metric)
            assert (v.unit == "OP/s") == (prec == "int8")
    assert gc.variant("int8.tn").layout == "TN" and gc.variant("int8.nn").layout == "NN"
    assert gc.variant("tf32").math == gc.MATH_TF32 == 3
    assert gc.variant("fp32").math == gc.MATH_DEFAULT and gc.variant("fp32").exec_unit == "cuda_core"
    assert gc.variant("fp16.f16acc").compute == gc.COMPUTE_16F


def _tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 to TF32 (10 explicit mantissa bits), as tensor cores read TF32 inputs."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x1000) & 0xFFFFE000).view(np.float32)


def test_fp32_tolerance_tells_tf32_inputs_apart():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (16, 512)).astype(np.float32)
    b = rng.uniform(-1, 1, (512, 64)).astype(np.float32)
    ref = gc.reference_rows(a, b)
    exact32 = (a @ b).astype(np.float32)
    tf32 = _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64)
    gc.check_close(exact32, ref, gc.tolerance("fp32"), "fp32")
    with pytest.raises(VerificationError):
        gc.check_close(tf32, ref, gc.tolerance("fp32"), "tf32 posing as fp32")
    gc.check_close(tf32, ref, gc.tolerance("tf32"), "tf32")


# --- the sampled-row check -------------------------------------------------------------------------------


def test_sample_rows_has_both_ends_and_no_repeats():
    r = gc.sample_rows(1000, 16)
    assert r[0] == 0 and r[-1] == 999 and len(r) == 16 and np.all(np.diff(r) > 0)
    assert list(gc.sample_rows(5, 16)) == [0, 1, 2, 3, 4]
    assert np.array_equal(gc.sample_rows(1000, 16, seed=3), gc.sample_rows(1000, 16, seed=3))


def test_sampled_row_check_passes_correct_and_fails_injected_errors():
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (200, 300)).astype(np.float32)
    b = rng.uniform(-1, 1, (300, 100)).astype(np.float32)
    c = (a @ b).astype(np.float32)
    rows = gc.sample_rows(200, 16)
    ref = gc.reference_rows(a[rows], b)
    gc.check_close(c[rows], ref, gc.tolerance("fp32"), "ok")
    bad = c.copy()
    bad[rows[3], 7] += 1.0                                      # one wrong element in a sampled row
    with pytest.raises(VerificationError, match="relative error"):
        gc.check_close(bad[rows], ref, gc.tolerance("fp32"), "one element")
    with pytest.raises(VerificationError):
        gc.check_close(c[rows] * (1 + 1e-3), ref, gc.tolerance("fp32"), "scaled")
    gc.check_close(c[rows] * (1 + 1e-3), ref, gc.tolerance("bf16"), "scaled within bf16")
    nan = c[rows].copy()
    nan[0, 0] = np.nan
    with pytest.raises(VerificationError):
        gc.check_close(nan, ref, 1.0, "nan")
    with pytest.raises(VerificationError, match="shape"):
        gc.check_close(c[rows][:, :5], ref, 1.0, "shape")


def test_exact_check_for_integers():
    rng = np.random.default_rng(2)
    a = rng.integers(-127, 128, (32, 64)).astype(np.int8)
    b = rng.integers(-127, 128, (64, 16)).astype(np.int8)
    c = a.astype(np.int32) @ b.astype(np.int32)
    ref = gc.reference_rows(a, b)
    assert gc.check_close(c, ref, 0.0, "int8") == 0.0
    c[5, 5] += 1
    with pytest.raises(VerificationError, match="1 of"):
        gc.check_close(c, ref, 0.0, "int8")


# --- column-major layouts, checked against an independent column-major reader ----------------------------


def _read_colmajor(flat: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    """What cuBLAS reads: element (i, j) at flat[i + j * ld]."""
    return np.reshape(flat[: ld * cols], (ld, cols), order="F")[:rows]


@pytest.mark.parametrize("transa", [gc.OP_N, gc.OP_T])
@pytest.mark.parametrize("transb", [gc.OP_N, gc.OP_T])
def test_colmajor_views_match_what_cublas_reads(transa, transb):
    m, n, k = 5, 7, 3
    sa, sb, sc = gc.buffer_shapes(m, n, k, transa, transb)
    lda, ldb, ldc = gc.leading_dims(m, n, k, transa, transb)
    assert (sa[1], sb[1], sc[1]) == (lda, ldb, ldc)              # C-order (cols, ld) buffers
    a = np.arange(np.prod(sa), dtype=np.float64).reshape(sa)
    b = np.arange(np.prod(sb), dtype=np.float64).reshape(sb) + 100
    c = np.arange(np.prod(sc), dtype=np.float64).reshape(sc) + 1000
    op_a, op_b, cm = gc.colmajor_views(a, b, c, transa, transb)
    a_st = _read_colmajor(a.ravel(), *((m, k) if transa == gc.OP_N else (k, m)), lda)
    b_st = _read_colmajor(b.ravel(), *((k, n) if transb == gc.OP_N else (n, k)), ldb)
    assert np.array_equal(op_a, a_st if transa == gc.OP_N else a_st.T) and op_a.shape == (m, k)
    assert np.array_equal(op_b, b_st if transb == gc.OP_N else b_st.T) and op_b.shape == (k, n)
    assert np.array_equal(cm, _read_colmajor(c.ravel(), m, n, ldc))


# A mock CuPy (numpy arrays that expose .data.ptr) and a mock cuBLAS gemmEx that reads and writes memory
# column-major by itself, so CublasGemm's layout, leading dimensions, scalars and check are all exercised.
_REG: dict[int, np.ndarray] = {}


class _Arr(np.ndarray):
    @property
    def data(self):  # noqa: D401 - mimic cupy's MemoryPointer
        _REG[self.ctypes.data] = self
        return SimpleNamespace(ptr=self.ctypes.data)


def _wrap(x):
    return np.asarray(x).view(_Arr)


class _RandomState:
    def __init__(self, seed):
        self.r = np.random.RandomState(seed)

    def uniform(self, low, high, size, dtype=np.float64):
        return _wrap(self.r.uniform(low, high, size).astype(dtype))

    def randint(self, low, high, size):
        return _wrap(self.r.randint(low, high, size))

    def standard_normal(self, size, dtype=np.float64):
        return _wrap(self.r.standard_normal(size).astype(dtype))


class _FakeCp:
    float64, float32, float16, uint16, uint32, int8, int32 = (np.float64, np.float32, np.float16, np.uint16,
                                                              np.uint32, np.int8, np.int32)
    random = SimpleNamespace(RandomState=_RandomState)

    @staticmethod
    def zeros(shape, dtype):
        return _wrap(np.zeros(shape, dtype))

    @staticmethod
    def asarray(x):
        return _wrap(x)

    @staticmethod
    def ascontiguousarray(x, dtype=None):
        return _wrap(np.ascontiguousarray(x, dtype=dtype))

    @staticmethod
    def asnumpy(x):
        return np.asarray(x)

    uint8 = np.uint8
    float32 = np.float32
    maximum, clip, where, abs, searchsorted = np.maximum, np.clip, np.where, np.abs, np.searchsorted


def _decode(flat, dtype_code):
    if dtype_code == gc.R_16BF:
        return gc.bf16_bits_to_f32(np.ascontiguousarray(flat)).astype(np.float64)
    return np.asarray(flat, dtype=np.float64)


def _mock_gemm(ignore_transa=False, write_rowmajor=False):
    def gemmEx(handle, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo):
        scalar = np.dtype(gc.SCALAR_FOR_COMPUTE[compute])
        read = lambda p: np.frombuffer((ctypes.c_char * scalar.itemsize).from_address(p), dtype=scalar)[0]
        assert read(alpha) == 1 and read(beta) == 0, "alpha/beta must have the compute type's scalar type"
        ta = gc.OP_N if ignore_transa else ta
        a = _decode(_REG[A].ravel(), at)
        b = _decode(_REG[B].ravel(), bt)
        a_st = _read_colmajor(a, *((m, k) if ta == gc.OP_N else (k, m)), lda)
        b_st = _read_colmajor(b, *((k, n) if tb == gc.OP_N else (n, k)), ldb)
        res = (a_st if ta == gc.OP_N else a_st.T) @ (b_st if tb == gc.OP_N else b_st.T)
        cbuf = _REG[C]
        if ct == gc.R_16BF:
            out = gc.bf16_bits_from_f32(res.astype(np.float32))
        else:
            out = res.astype(cbuf.dtype)
        flat = cbuf.reshape(-1)
        if write_rowmajor:
            flat[: m * n] = out.ravel()
        else:   # element (i, j) at flat[i + j * ldc]
            np.reshape(flat[: ldc * n], (n, ldc))[:, :m] = out.T
    return gemmEx


def _gemm(key, gemm, m=24, n=40, k=56):
    from hwprobe.probes.compute.cublas import CublasEnv, CublasGemm

    env = CublasEnv(cp=_FakeCp, cublas=SimpleNamespace(gemmEx=gemm), handle=0, l2_bytes=1)
    g = CublasGemm(env, gc.variant(key), m, n, k)
    g.call(0)
    return g


@pytest.mark.parametrize("key", ["fp64", "fp32", "tf32", "fp16.f32acc", "fp16.f16acc", "bf16", "int8.tn", "int8.nn"])
def test_cublas_gemm_layout_scalars_and_check_agree_with_a_column_major_gemm(key):
    g = _gemm(key, _mock_gemm())
    assert g.sets == 1
    assert g.check(rows=6) <= gc.tolerance(key, g.k)


@pytest.mark.parametrize("key", ["int8.tn", "fp32"])
def test_cublas_gemm_check_catches_a_wrong_layout(key):
    with pytest.raises(VerificationError):
        _gemm(key, _mock_gemm(write_rowmajor=True)).check(rows=6)
    if key == "int8.tn":
        with pytest.raises(VerificationError):
            _gemm(key, _mock_gemm(ignore_transa=True), m=32, n=32, k=32).check(rows=6)


@pytest.mark.parametrize("key", ["fp16.f16acc", "int8.tn", "fp64"])
def test_rotating_sets_are_one_fill_each_set_aligned_distinct_and_correct(key):
    """Operand sets that rotate out of L2 come from one fill per operand (gemm_common.aligned_copies): every set
    starts on CuPy's 512-byte allocation boundary, holds its own data, and each set's GEMM passes the check."""
    from hwprobe.probes.compute.cublas import CublasEnv, CublasGemm

    env = CublasEnv(cp=_FakeCp, cublas=SimpleNamespace(gemmEx=_mock_gemm()), handle=0, l2_bytes=80_000)
    g = CublasGemm(env, gc.variant(key), 24, 40, 56)
    assert g.sets > 4
    for part in range(3):
        ptrs = [op[part].ctypes.data for op in g.ops]
        assert all((p - ptrs[0]) % gc.ALLOC_ALIGN == 0 for p in ptrs) and len(set(ptrs)) == g.sets
    assert not np.array_equal(np.asarray(g.ops[0][0]), np.asarray(g.ops[1][0]))
    for i in range(g.sets):
        g.call(i)
        g.ops[0], g.ops[i] = g.ops[i], g.ops[0]          # check() reads set 0
        assert g.check(rows=6) <= gc.tolerance(key, g.k)
        g.ops[0], g.ops[i] = g.ops[i], g.ops[0]


def test_operands_are_random_and_scaled():
    g = _gemm("fp16.f16acc", _mock_gemm(), k=4096)
    a = np.asarray(g.ops[0][0], dtype=np.float64)
    assert np.count_nonzero(a) > 0.99 * a.size
    assert np.abs(a).max() <= 4096 ** -0.25 + 1e-3
    i8 = np.asarray(_gemm("int8.tn", _mock_gemm()).ops[0][0])
    assert i8.dtype == np.int8 and i8.min() >= -127 and len(np.unique(i8)) > 50


# --- encodings -------------------------------------------------------------------------------------------


def test_bf16_bits_roundtrip():
    x = np.array([1.0, -2.5, 0.15625, 3.0e38, -1.0e-30], dtype=np.float32)
    bits = gc.bf16_bits_from_f32(x)
    assert bits.dtype == np.uint16 and bits[0] == 0x3F80 and bits[1] == 0xC020
    back = gc.bf16_bits_to_f32(bits)
    assert np.array_equal(back[:3], x[:3])
    assert np.all(np.abs(back - x) <= np.abs(x) * 2.0**-7)


def test_fp8_decode_tables_known_codes():
    e4 = gc.fp8_decode_table("e4m3")
    assert e4[0x38] == 1.0 and e4[0xB8] == -1.0 and e4[0x40] == 2.0 and e4[0x7E] == 448.0
    assert e4[0x08] == 2.0**-6 and e4[0x01] == 2.0**-9 and np.isnan(e4[0x7F]) and np.isnan(e4[0xFF])
    e5 = gc.fp8_decode_table("e5m2")
    assert e5[0x3C] == 1.0 and e5[0x7B] == 57344.0 and np.isinf(e5[0x7C]) and np.isnan(e5[0x7D])
    assert e5[0x04] == 2.0**-14 and e5[0x01] == 2.0**-16
    assert np.sum(np.isfinite(e4)) == 254 and np.sum(np.isfinite(e5)) == 248


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_exact_values_roundtrip(fmt):
    vals = np.array(gc.FP8_EXACT_VALUES * 3).reshape(3, -1)
    codes = gc.fp8_encode_exact(vals, fmt)
    assert codes.dtype == np.uint8 and codes.shape == vals.shape
    assert np.array_equal(gc.fp8_decode_table(fmt)[codes], vals)
    assert gc.fp8_encode_exact(np.array([0.0]), fmt)[0] == 0x00
    with pytest.raises(ValueError, match="not exactly representable"):
        gc.fp8_encode_exact(np.array([0.1]), fmt)


def test_2to4_detection():
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (8, 16))
    assert not gc.is_2to4(a)
    groups = a.reshape(8, 4, 4).copy()
    np.put_along_axis(groups, np.argsort(np.abs(groups), axis=-1)[..., :2], 0, axis=-1)   # keep the 2 largest
    assert gc.is_2to4(groups.reshape(8, 16))
    three = groups.reshape(8, 16).copy()
    three[5, 4:8] = [1, 2, 3, 0]
    assert not gc.is_2to4(three)
    assert not gc.is_2to4(np.ones((2, 6)))


# --- plans and summaries ---------------------------------------------------------------------------------


def test_plan_sizes():
    assert gc.plan_sizes((8192, 1024, 2048, 4096, 1024), quick=False) == [1024, 2048, 4096, 8192]
    assert gc.plan_sizes((1024, 2048, 4096, 8192), quick=True) == [1024, 4096]
    assert gc.plan_sizes((8192, 16384), quick=True) == [8192]
    assert gc.plan_sizes((4096,), quick=True) == [4096]
    with pytest.raises(ValueError):
        gc.plan_sizes((0, 1024), quick=False)


def test_rotation_sets_bust_l2():
    l2 = 60 << 20
    per = gc.gemm_bytes(1024, 1024, 1024, 2, 2)                 # 6 MiB: 30 sets make 3 x L2
    s = gc.rotation_sets(per, l2)
    assert s * per >= 3 * l2 and (s - 1) * per < 3 * l2
    assert gc.rotation_sets(gc.gemm_bytes(8192, 8192, 8192, 2, 2), l2) == 1
    assert gc.rotation_sets(1, l2, cap=64) == 64
    with pytest.raises(ValueError):
        gc.rotation_sets(0, l2)


def test_alignment_sizes_have_exactly_that_alignment():
    plan = gc.alignment_sizes(4096, (8, 16, 32, 64))
    assert [n for _, n, _ in plan] == [4104, 4112, 4128, 4160]
    for a, n, odd in plan:
        assert n >= 4096 and n % a == 0 and (n // a) % 2 == 1 and odd == n + 1 and odd % 2 == 1
    assert gc.alignment_sizes(100, (8,)) == [(8, 104, 105)]
    with pytest.raises(ValueError):
        gc.alignment_sizes(100, (0,))


def test_efficiency_curve():
    pts = [(4096, 800.0), (1024, 400.0), (8192, 760.0)]
    curve = gc.efficiency_curve(pts)
    assert [c["n"] for c in curve] == [1024, 4096, 8192]
    assert curve[1]["of_best"] == 1.0 and curve[0]["of_best"] == 0.5
    assert gc.efficiency_curve([]) == []


def test_pitfall_reports_int8_nn_slower_than_fp16():
    found, text, d = gc.pitfall_int8_vs_fp16({"tn": 1.6e15, "nn": 0.13e15}, 0.9e15, 8192)
    assert found and d["worst_layout"] == "nn" and d["best_layout"] == "tn"
    assert "NN" in text and "6.9x slower than FP16" in text and "use TN" in text and "1.6 POP/s" in text
    found, text, _ = gc.pitfall_int8_vs_fp16({"tn": 1.6e15, "nn": 1.5e15}, 0.9e15, 8192)
    assert not found and "no INT8 pitfall" in text
    found, text, _ = gc.pitfall_int8_vs_fp16({"tn": 0.5e15}, 0.9e15, 4096)
    assert found and "every INT8 layout is slower" in text
    with pytest.raises(ValueError):
        gc.pitfall_int8_vs_fp16({}, 1.0, 1)


def test_int8_layout_unit_inference():
    assert gc.int8_layout_exec_unit(0.13e15, 1.6e15)[0] == "cuda_core"
    assert gc.int8_layout_exec_unit(1.5e15, 1.6e15)[0] == "tensor_core"
    unit, note = gc.int8_layout_exec_unit(1.0e15, None)
    assert unit == "tensor_core" and "not inferred" in note
    assert "inferred from the rate" in gc.int8_layout_exec_unit(0.13e15, 1.6e15)[1]


# What the H200 ran (read from CUDA graphs of one call each, cuBLAS 13.1, issue 9's first device run).
H200_INT8_NN = ("_ZN7cutlass7Kernel2I76cutlass_80_wmma_tensorop_i161616gemm_s8_forwardCompat_128x128_32x2_nn_align4"
                "EEvNT_6ParamsE")
H200_DGEMM = ("sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize128x64x16_stage3_warpsize2x2x1_tensor16x8x8_execute_"
              "kernel__5x_cublas")


def test_kernel_names_are_measured_evidence_of_the_unit():
    from hwprobe.probes.compute.kernel_names import tensor_evidence

    # INT8 NN: 11x slower than TN, which the rate alone took for CUDA cores; its kernel is a WMMA tensor-op one
    tensor, ev = tensor_evidence([H200_INT8_NN])
    assert tensor is True and "'wmma'" in ev
    unit, note, inferred = gc.kernel_unit(tensor, ev, gc.int8_layout_exec_unit(0.129e15, 1.44e15))
    assert (unit, inferred) == ("tensor_core", False) and "the rate alone suggested cuda_core" in note
    assert tensor_evidence([H200_DGEMM])[0] is True
    assert tensor_evidence(["nvjet_sm90_bsb_176x128_128x5_1x2_h_bz_TNN"])[0] is True
    # a name without a tensor token proves nothing either way; nothing read, nothing said
    assert tensor_evidence(["gemv2T_kernel_val<int, int, float>"]) == (
        None, "kernel names (read from a CUDA graph): gemv2T_kernel_val<int, int, float>; no tensor-core token in them")
    assert tensor_evidence(None) == (None, "kernel names not read")
    unit, _, inferred = gc.kernel_unit(None, "kernel names not read", gc.int8_layout_exec_unit(0.13e15, 1.6e15))
    assert (unit, inferred) == ("cuda_core", True)


def test_fp64_exec_unit_by_architecture():
    assert gc.fp64_exec_unit(9, 0)[0] == "tensor_core"
    assert gc.fp64_exec_unit(8, 0)[0] == "tensor_core"
    assert gc.fp64_exec_unit(8, 6)[0] == "cuda_core"
    assert gc.fp64_exec_unit(8, 9)[0] == "cuda_core"


def test_alignment_finding_sentence():
    rows = [{"align": 8, "n": 4104, "rate": 800.0, "odd_rate": 400.0},
            {"align": 64, "n": 4160, "rate": 820.0, "odd_rate": 600.0},
            {"align": 16, "n": 4112, "rate": 1600.0, "odd_rate": None}]
    worst, text = gc.alignment_finding("fp16", rows)
    assert worst == 2.0 and "4105 runs 2.00x slower than 4104" in text and "multiples of 8" in text
    assert "4113 not supported" in text
    worst, text = gc.alignment_finding("int8", [rows[2]])
    assert worst is None and "align INT8 channels to 32" in text


def test_si_prefixes():
    assert gc.si(1.6e15, "OP/s") == "1.6 POP/s"
    assert gc.si(9.05e14, "FLOP/s") == "905 TFLOP/s"
    assert gc.si(12.0, "x") == "12 x"


# --- probe plumbing that needs no GPU --------------------------------------------------------------------


def _m(n, value, valid=True):
    st = Stats.of([0.01, 0.011])
    return Measurement(probe="gpu.gemm", metric=f"fp16.x.n{n}", kind="sweep", value=value, unit="FLOP/s",
                       samples_s=[0.01, 0.011], stats=st, params={"n": n}, notes=["a"], valid=valid)


def test_ceiling_is_the_best_valid_sweep_point_with_the_curve():
    from hwprobe.probes.compute.cublas import ceiling_of

    pts = [_m(1024, 300.0), _m(4096, 900.0), _m(8192, 950.0, valid=False), _m(2048, 700.0)]
    c = ceiling_of(pts, "fp16.tensor_core.cublas.f32acc")
    assert c.kind == "compute" and c.metric == "fp16.tensor_core.cublas.f32acc" and c.value == 900.0
    assert [p["n"] for p in c.params["curve"]] == [1024, 2048, 4096, 8192]
    assert c.params["n"] == 4096 and "efficiency vs size" in c.notes[-1]
    c.notes.append("x")
    c.samples_s.append(1.0)
    assert pts[1].notes == ["a"] and len(pts[1].samples_s) == 2 and pts[1].kind == "sweep"


def test_runner_launch_bound_rule():
    from hwprobe.probes.compute.cublas import Runner

    assert Runner(lambda: None, 10, False, 2e-6, 8e-6, []).launch_bound
    assert not Runner(lambda: None, 10, False, 1e-3, 8e-6, []).launch_bound
    assert not Runner(lambda: None, 10, True, 2e-6, 8e-6, []).launch_bound


def test_library_probes_register_and_load_no_gpu_library():
    code = ("import sys; import hwprobe.probes.compute.gemm, hwprobe.probes.compute.fp8, "
            "hwprobe.probes.compute.sparse; "
            "from hwprobe.probes.base import _REGISTRY as R; "
            "print(sorted(k for k in R if k.startswith('gpu.gemm') or k == 'gpu.sparse')); "
            "print(' '.join(m for m in ('cupy', 'nvmath', 'torch', 'pynvml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "['gpu.gemm', 'gpu.gemm_align', 'gpu.gemm_fp8', 'gpu.sparse']"
    assert lines[1].strip() == ""


def test_probe_parameters_and_precisions():
    import hwprobe.probes.compute.fp8  # noqa: F401
    import hwprobe.probes.compute.gemm  # noqa: F401
    import hwprobe.probes.compute.sparse  # noqa: F401
    from hwprobe.errors import InputError
    from hwprobe.probes.base import _REGISTRY

    gemm = _REGISTRY["gpu.gemm"]
    assert gemm.params()["sizes"] == (1024, 2048, 4096, 8192) and gemm.params()["check_rows"] == 16
    assert set(gemm.precisions) == set(gc.GEMM_VARIANTS)
    with pytest.raises(InputError):
        gemm.check_params({"precisions": ("fp4",)})
    assert _REGISTRY["gpu.sparse"].params()["sizes"] == (4096, 8192, 16384)
    assert gemm.params()["layouts"] == ("NN", "TN") and gemm.params()["lt_sizes"] == (8192, 16384)
    assert _REGISTRY["gpu.gemm_align"].params()["aligns"] == (8, 16, 32, 64)
    assert _REGISTRY["gpu.gemm_fp8"].params()["variants"] == ("e4m3xe4m3", "e4m3xe5m2", "e5m2xe4m3")


class _SimGpu:
    """A fake CuPy whose 'GPU' is a clock: each call adds ``per_call`` seconds; capture records calls."""

    def __init__(self, per_call: float, fail_capture: bool = False):
        self.per_call, self.fail_capture = per_call, fail_capture
        self.t, self.capturing, self.captured, self.streams_set = 0.0, None, None, []
        sim = self

        class Event:
            def record(self, stream=None):
                self.t = sim.t

            def synchronize(self):
                pass

        class Graph:
            def __init__(self, calls):
                self.calls = calls

            def launch(self, stream=None):
                sim.t += sim.per_call * len(self.calls)

        class Stream:
            ptr = 1234

            def __init__(self, non_blocking=False):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *a):
                return False

            def synchronize(self):
                pass

            def begin_capture(self):
                sim.capturing = []

            def end_capture(self):
                calls, sim.capturing = sim.capturing, None
                return Graph(calls)

        current = SimpleNamespace(ptr=0, synchronize=lambda: None)
        self.cuda = SimpleNamespace(Event=Event, Stream=Stream, get_current_stream=lambda: current,
                                    get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3)

    def call(self, i):
        if self.capturing is not None:
            if self.fail_capture:
                raise RuntimeError("operation not permitted when stream is capturing")
            self.capturing.append(i)
        else:
            self.t += self.per_call


def test_build_runner_sizes_samples_and_captures_graphs():
    from hwprobe.probes.compute.cublas import build_runner
    from hwprobe.timing import policy

    target_s = policy.rule("library").sample_s
    sim = _SimGpu(2e-6)
    r = build_runner(sim, sim.call, sets=7, set_stream=sim.streams_set.append)
    assert r.graph and r.reps == round(target_s / 2e-6) and r.per_call_s == pytest.approx(2e-6)
    assert sim.streams_set == [1234, 0]                          # capture stream, then back to the current one
    t0 = sim.t
    r.fn()
    assert sim.t - t0 == pytest.approx(target_s)

    big = _SimGpu(0.02)
    r = build_runner(big, big.call)
    assert not r.graph and r.reps == 1 and not r.launch_bound    # a 20 ms call: one per sample, no graph

    bad = _SimGpu(2e-6, fail_capture=True)
    r = build_runner(bad, bad.call)
    assert not r.graph and "graph capture failed" in r.notes[0]
    t0 = bad.t
    r.fn()
    assert bad.t - t0 == pytest.approx(r.reps * 2e-6)


def test_settle_runner_settles_until_the_launch_time_stops_moving():
    from hwprobe.probes.compute.cublas import Runner, settle_runner
    from hwprobe.timing.steady import Sustain

    sim = _SimGpu(0.005)

    def fn():       # 5 ms per call, slowing by 10% over the first 0.4 s of device time, then flat
        sim.per_call = 0.005 * (1 + 0.1 * min(sim.t, 0.4) / 0.4)
        sim.call(0)

    runner = Runner(fn=fn, reps=1, graph=False, per_call_s=0.005, host_per_call_s=0.0, notes=[])
    timing, done = settle_runner(sim, runner, Sustain(0.25, 0.4, 1.0))
    settled = done.params()
    assert timing == {"warmup": 1, "repeats": 80}
    assert settled["settle_stop"] == "steady" and settled["settle_ran_s"] == pytest.approx(sim.t, abs=1e-3)
    assert 0.45 <= sim.t <= 0.7                 # to near the ramp's end: the last four chunks within 2%
    chunks = settled["settle_chunks_us"]
    assert chunks[0] == pytest.approx(5000, rel=0.02) and chunks[-1] == pytest.approx(5500, rel=0.005)
    assert done.level == pytest.approx(0.0055, rel=0.01)    # the level the windows are held to

    fixed = _SimGpu(0.005)
    runner = Runner(fn=lambda: fixed.call(0), reps=1, graph=False, per_call_s=0.005, host_per_call_s=0.0, notes=[])
    timing, done = settle_runner(fixed, runner, Sustain(0.25, 0.4))
    assert timing["repeats"] == 80 and done.params()["settle_stop"] == "fixed" and fixed.t == pytest.approx(0.25)
    assert done.level is None


def test_sparse_specs_and_fp8_operands():
    from hwprobe.probes.compute import f64_copy
    from hwprobe.probes.compute import sparse as gpu_sparse

    for prec, spec in gpu_sparse.SPECS.items():
        assert gc.tolerance(spec.tol_key, 4096) >= 0
        assert spec.storage in gc.ITEMSIZE and spec.out in gc.ITEMSIZE
        for key, api in spec.dense:             # every dense baseline computes the same types as the sparse one
            dense = gc.variant(key)
            assert dense.ab_type == spec.ab_type and dense.unit == spec.unit and api in ("cublas", "cublaslt")
            assert dense.precision == spec.precision
        assert (spec.unit == "OP/s") == (prec == "int8")
    codes = gpu_sparse._sparse_operand(_FakeCp, "fp8", (64, 64), seed=2)
    assert codes.dtype == np.uint8
    vals = f64_copy.host_f64(np.asarray(codes), "fp8")
    # full-range random codes, not the nine values the issue found: finite, many distinct, up to +-448
    assert np.isfinite(vals).all() and len(np.unique(vals)) > 150 and np.abs(vals).max() > 256


def test_fp8_operand_distributions():
    from hwprobe.probes.compute.cublas import fp8_finite_values, operands_desc, random_operand

    codes, values = fp8_finite_values("e4m3")
    assert len(codes) == 253 and values.min() == -448 and values.max() == 448 and np.all(np.diff(values) > 0)
    assert len(fp8_finite_values("e5m2")[0]) == 256 - 8 - 1          # no inf/NaN (exponent 31), one zero
    table = gc.fp8_decode_table("e4m3")
    uni = np.asarray(random_operand(_FakeCp, "fp8", (200, 200), seed=1))
    assert set(np.unique(uni)) <= set(codes.tolist()) and len(np.unique(uni)) == len(codes)
    nor = table[np.asarray(random_operand(_FakeCp, "fp8", (200, 200), seed=1, data="normal")).astype(int)]
    assert 100 < nor.std() < 125 and np.abs(nor).max() <= 448                 # N(0, 112^2), rounded
    assert not np.asarray(random_operand(_FakeCp, "fp8", (8, 8), seed=1, data="zeros")).any()
    relu = table[np.asarray(random_operand(_FakeCp, "fp8", (50, 50), seed=1, data="relu")).astype(int)]
    assert relu.min() == 0 and relu.max() > 100
    assert operands_desc("fp8", "uniform").startswith("fp8 e4m3 uniform over its 254 finite codes")
    assert operands_desc("float16", "uniform", 0.1) == "float16 uniform in (-0.1, 0.1)"
    assert operands_desc("int8", "zeros") == "A and B all zeros"


def test_fp8_scale_brings_the_product_near_unit_size():
    from hwprobe.probes.compute.cublas import fp8_finite_values
    from hwprobe.probes.compute.cublaslt import fp8_scale

    rng = np.random.default_rng(0)
    k = 4096
    vals = fp8_finite_values("e4m3")[1]
    a, b = rng.choice(vals, (16, k)), rng.choice(vals, (k, 16))
    sc = fp8_scale("e4m3", "e4m3", k)
    prod = sc * sc * (a @ b)
    assert 0.5 < prod.std() < 2.0                       # an FP16 result cannot overflow (65504)
    assert np.abs(a @ b).max() > 65504                  # ... which unscaled it would


# --- ceiling candidates: layouts, algos, sizes, cuBLASLt -------------------------------------------------


def test_with_layout_and_candidate_metrics():
    v = gc.variant("fp16.f32acc")
    tn = v.with_layout("tn")
    assert (tn.transa, tn.transb, tn.layout, tn.key, tn.algo) == (gc.OP_T, gc.OP_N, "TN", v.key, gc.GEMM_DEFAULT)
    assert tn.candidate_metric(8192) == "fp16.tensor_core.cublas.f32acc.tn.n8192"
    top = v.with_layout("NN", gc.GEMM_DEFAULT_TENSOR_OP)
    assert top.candidate_metric(16384) == "fp16.tensor_core.cublas.f32acc.nn.tensor_op.n16384"
    with pytest.raises(ValueError):
        v.with_layout("TX")


def test_gemm_candidates_per_precision():
    got = gc.gemm_candidates(gc.variant("fp16.f32acc"), ("NN", "TN", "tn"), tensor_op=True)
    assert [(c.layout, c.algo) for c in got] == [("NN", gc.GEMM_DEFAULT_TENSOR_OP), ("TN", gc.GEMM_DEFAULT),
                                                  ("TN", gc.GEMM_DEFAULT_TENSOR_OP)]
    assert [c.layout for c in gc.gemm_candidates(gc.variant("tf32"), ("NN", "TN"), True)] == ["TN"]
    assert [c.layout for c in gc.gemm_candidates(gc.variant("bf16"), ("NN", "TN"), False)] == ["TN"]
    for key in ("int8.tn", "int8.nn", "fp32"):
        assert gc.gemm_candidates(gc.variant(key), ("NN", "TN"), True) == []
    # FP64: cupy.matmul's own call (NN, CUBLAS_GEMM_DEFAULT_TENSOR_OP on sm_80+) beside gemmEx's default algo
    fp64 = gc.gemm_candidates(gc.variant("fp64"), ("NN", "TN"), True)
    assert [(c.layout, c.algo) for c in fp64] == [("NN", gc.GEMM_DEFAULT_TENSOR_OP)]
    assert fp64[0].candidate_metric(8192) == "fp64.tensor_core.cublas.nn.tensor_op.n8192"
    assert gc.gemm_candidates(gc.variant("fp64"), ("NN", "TN"), False) == []


def test_size_plans_for_ceilings():
    assert gc.plan_top([1024, 8192], (16384, 4096), quick=False) == (8192, [16384])
    assert gc.plan_top([1024, 2048], (16384,), quick=True) == (2048, [])
    assert gc.lt_plan((8192, 16384), [1024, 8192], quick=False) == [16384, 8192]
    assert gc.lt_plan((8192, 16384), [1024, 2048], quick=True) == [2048]


def test_sparse_speedup_compares_ceilings_and_flags_a_weak_dense_baseline():
    # run 1, FP8: dense 2048 ran at a fraction of its ceiling (launch-bound), so its ratio was 2.44x
    rows = [{"n": 2048, "sparse": 1.60e15, "dense": 0.656e15}, {"n": 4096, "sparse": 1.93e15, "dense": 1.48e15},
            {"n": 16384, "sparse": 2.12e15, "dense": 1.54e15}]
    sp = gc.sparse_speedups(rows)
    assert sp["suspect"] == [2048] and sp["best_sparse_n"] == 16384 and sp["best_dense_n"] == 16384
    assert sp["best_vs_best"] == pytest.approx(2.12 / 1.54)
    assert sp["per_size"][2048] == pytest.approx(1.60 / 0.656)
    assert gc.sparse_speedups([{"n": 1, "sparse": 1.0, "dense": None}])["best_vs_best"] is None
    assert sp["best_vs_best_per_clock"] is None                  # no clocks, no per-clock figure


def test_sparse_speedup_per_clock():
    # the H200 FP16 4096^3: dense power-capped at 1695 MHz, sparse at 1980 MHz: 1.41x measured
    rows = [{"n": 4096, "sparse": 1.41 * 650e12, "dense": 650e12, "sparse_mhz": 1980.0, "dense_mhz": 1695.0}]
    sp = gc.sparse_speedups(rows)
    assert sp["best_vs_best"] == pytest.approx(1.41)
    assert sp["best_vs_best_per_clock"] == pytest.approx(1.41 * 1695 / 1980) == pytest.approx(1.207, abs=1e-3)
    assert sp["per_size_per_clock"] == {4096: pytest.approx(1.207, abs=1e-3)}
    assert gc.per_clock_ratio({"sparse": 1.0, "sparse_mhz": None}, {"dense": 1.0, "dense_mhz": 1000}) is None


def test_ceiling_lists_candidates_and_keeps_the_sweep_curve():
    from hwprobe.probes.compute.cublas import ceiling_of

    sweep = [_m(4096, 700.0), _m(8192, 710.0)]
    tn = _m(8192, 760.0)
    tn.params.update(layout="TN", algo="CUBLAS_GEMM_DEFAULT")
    c = ceiling_of([*sweep, tn], "fp16.tensor_core.cublas.f32acc", curve_points=sweep)
    assert c.value == 760.0 and [p["n"] for p in c.params["curve"]] == [4096, 8192]
    assert len(c.params["candidates"]) == 3 and "layout TN" in c.params["ceiling_of"]


@pytest.mark.parametrize("layout", ["NN", "TN", "NT", "TT"])
@pytest.mark.parametrize("key", ["fp16.f32acc", "bf16", "tf32"])
def test_cublas_gemm_every_layout_and_algo_reaches_gemmex(layout, key):
    from hwprobe.probes.compute.cublas import CublasEnv, CublasGemm

    algos = []
    inner = _mock_gemm()

    def gemm(*args):
        algos.append(args[-1])
        inner(*args)

    env = CublasEnv(cp=_FakeCp, cublas=SimpleNamespace(gemmEx=gemm), handle=0, l2_bytes=1)
    g = CublasGemm(env, gc.variant(key).with_layout(layout, gc.GEMM_DEFAULT_TENSOR_OP), 24, 40, 56)
    g.call(0)
    assert algos == [gc.GEMM_DEFAULT_TENSOR_OP]
    assert g.check(rows=6) <= gc.tolerance(key, g.k)


# A mock cuBLASLt: layouts and transposes come only from the descriptors, so LtGemm's descriptors are what
# is tested; the product is computed by the same column-major reader as the gemmEx mock.
class _MockLt:
    class MatmulDescAttribute:
        TRANSA, TRANSB = 3, 4

    class MatmulPreferenceAttribute:
        MAX_WORKSPACE_BYTES = 1

    matmul_heuristic_result_dtype = np.dtype([("algo", np.uint64, (8,)), ("workspace_size", np.uint64),
                                              ("state", np.int32), ("waves_count", np.float32), ("pad", np.int32, 4)])

    def __init__(self, ignore_trans=False, algos=3, reject=()):
        self.objs, self.next, self.ignore_trans, self.algos, self.destroyed = {}, 100, ignore_trans, algos, []
        self.reject = set(reject)       # algo ids whose matmul fails (the library rejects them)
        self.destroy = self.matmul_desc_destroy = self.matrix_layout_destroy = self.destroyed.append
        self.matmul_preference_destroy = self.destroyed.append

    def _new(self, obj):
        self.next += 1
        self.objs[self.next] = obj
        return self.next

    def create(self):
        return self._new({})

    def matmul_desc_create(self, compute, scale):
        assert scale in (gc.SCALE_TYPE_FOR_COMPUTE[compute], gc.R_32F)
        return self._new({"compute": compute, "scale": scale, 3: gc.OP_N, 4: gc.OP_N})

    @staticmethod
    def get_matmul_desc_attribute_dtype(attr):
        return np.int32

    @staticmethod
    def get_matmul_preference_attribute_dtype(attr):
        return np.uint64

    def matmul_desc_set_attribute(self, desc, attr, ptr, size):
        self.objs[desc][attr] = int(np.frombuffer((ctypes.c_char * size).from_address(ptr), dtype=np.int32)[0])

    def matrix_layout_create(self, dtype, rows, cols, ld):
        return self._new((dtype, rows, cols, ld))

    def matmul_preference_create(self):
        return self._new({})

    def matmul_preference_set_attribute(self, pref, attr, ptr, size):
        self.objs[pref][attr] = int(np.frombuffer((ctypes.c_char * size).from_address(ptr), dtype=np.uint64)[0])

    def matmul_algo_get_heuristic(self, h, desc, la, lb, lc, ld, pref, limit, res_ptr, count_ptr):
        self.limit = limit
        res = np.frombuffer((ctypes.c_char * (limit * self.matmul_heuristic_result_dtype.itemsize))
                            .from_address(res_ptr), dtype=self.matmul_heuristic_result_dtype)
        for i in range(self.algos):
            res["algo"][i][0] = 7 + i                  # algo id, used below as the "speed"
        ctypes.c_int32.from_address(count_ptr).value = self.algos
        self.ran = []

    def matmul(self, h, desc, alpha, a, la, b, lb, beta, c, lc, d, ld, algo, ws, ws_size, stream):
        self.ran.append(ctypes.c_uint64.from_address(algo).value)
        if self.ran[-1] in self.reject:
            raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED")
        d_ = self.objs[desc]
        scalar = np.dtype("float32" if d_["scale"] == gc.R_32F else gc.SCALAR_FOR_COMPUTE[d_["compute"]])
        alpha_v = float(np.frombuffer((ctypes.c_char * scalar.itemsize).from_address(alpha), dtype=scalar)[0])
        assert alpha_v == 1 or d_["scale"] == gc.R_32F
        ta, tb = (gc.OP_N, gc.OP_N) if self.ignore_trans else (d_[3], d_[4])
        (at, ar, ac, lda), (bt, br, bc, ldb), (ct, cr, cc, ldc) = self.objs[la], self.objs[lb], self.objs[lc]
        a_st = _read_colmajor(_decode(_REG[a].ravel(), at), ar, ac, lda)
        b_st = _read_colmajor(_decode(_REG[b].ravel(), bt), br, bc, ldb)
        res = (a_st.T if ta == gc.OP_T else a_st) @ (b_st.T if tb == gc.OP_T else b_st)
        assert res.shape == (cr, cc)
        cbuf = _REG[d]
        if ct == gc.R_8I:       # INT8 output: alpha x acc in float32, rounded and saturated
            res = np.clip(np.rint(np.float32(alpha_v) * res.astype(np.float32)), -128, 127)
        out = gc.bf16_bits_from_f32(res.astype(np.float32)) if ct == gc.R_16BF else res.astype(cbuf.dtype)
        np.reshape(cbuf.reshape(-1)[: ldc * cc], (cc, ldc))[:, :cr] = out.T


class _EventCp(_FakeCp):
    """_FakeCp with events whose elapsed time is the id of the last cuBLASLt algo run (so algo 7 is fastest)."""

    lt: _MockLt | None = None
    uint8 = np.uint8
    sqrt, mean, square, clip = np.sqrt, np.mean, np.square, np.clip

    class _Event:
        def record(self, stream=None):
            pass

        def synchronize(self):
            pass

    cuda = SimpleNamespace(Event=_Event, get_current_stream=lambda: SimpleNamespace(ptr=5, synchronize=lambda: None),
                           get_elapsed_time=lambda a, b: float(10 - _EventCp.lt.ran[-1]))


def _lt_gemm(lt, key="int8.tn", m=32, n=48, k=64):
    from hwprobe.probes.compute.cublas import CublasEnv
    from hwprobe.probes.compute.cublaslt import LtGemm, LtGemmI8Out

    _EventCp.lt = lt
    env = CublasEnv(cp=_EventCp, cublas=None, handle=0, l2_bytes=1)
    g = (LtGemmI8Out if key.endswith("i8out") else LtGemm)(env, gc.variant(key), m, n, k, lt=lt)
    g.call(0)
    return g


@pytest.mark.parametrize("key", ["int8.tn", "int8.nn", "fp16.f32acc", "bf16", "int8.tn.i8out"])
def test_lt_gemm_descriptors_autotune_and_check(key):
    lt = _MockLt()
    g = _lt_gemm(lt, key)
    assert g.best == 2 and lt.ran[-1] == 9           # the algo with the shortest (mock) time runs
    assert g.check(rows=6) <= gc.tolerance(key, g.k)
    g.close()
    assert len(lt.destroyed) == 6                    # handle, desc, 3 layouts, preference


def test_lt_gemm_autotune_interleaves_rounds_and_drops_rejected_algos():
    from hwprobe.probes.compute import cublaslt as gpu_fp8

    lt = _MockLt(algos=5, reject={9})
    g = _lt_gemm(lt)
    assert lt.limit == gpu_fp8.LT_GEMM_ALGOS == 32            # the heuristic is asked for 32 candidates
    assert g.best == 4 and lt.ran[-1] == 11 and set(g.timings) == {0, 1, 3, 4}
    assert set(g.rejected) == {"2"} and "NOT_SUPPORTED" in g.rejected["2"]
    assert g.params(SimpleNamespace(reps=1, graph=True, fallback=""))["rejected_algos"] == g.rejected
    timed = lt.ran[5:-1]                                      # after one warm-up per candidate: rounds
    assert timed == [7, 8, 10, 11] * gpu_fp8.AUTOTUNE_ITERATIONS
    with pytest.raises(RuntimeError, match="rejected all"):
        _lt_gemm(_MockLt(algos=2, reject={7, 8}))


def test_lt_gemm_int8_output_scales_to_sigma_32_and_its_check_catches_a_wrong_scale():
    v = gc.variant("int8.tn.i8out")
    assert v.scalar == "float32" and v.scale_type == gc.R_32F and v.out == "int8" and v.c_type == gc.R_8I
    assert "int8.tn.i8out" not in {x.key for vs in gc.GEMM_VARIANTS.values() for x in vs}   # not for gemmEx
    assert gc.tolerance("int8.tn.i8out") == 0.02 and gc.tolerance("int8.tn") == 0.0
    g = _lt_gemm(_MockLt(), "int8.tn.i8out", m=64, n=64, k=256)
    out = np.asarray(g.ops[0][2], dtype=np.float64)
    assert 20 < out.std() < 45 and np.abs(out).max() <= 128          # sigma ~32: the int8 range is used
    assert g.params(SimpleNamespace(reps=1, graph=True, fallback=""))["alpha"] == pytest.approx(float(g.alpha))
    assert g.check(rows=6) <= 0.02
    c = g.ops[0][2]                                                  # an epilogue that scaled by 1.5 alpha
    c[...] = np.clip(np.rint(np.asarray(c, dtype=np.float64) * 1.5), -128, 127)
    with pytest.raises(VerificationError):
        g.check(rows=6)


def test_lt_gemm_check_catches_ignored_transposes():
    with pytest.raises(VerificationError):
        _lt_gemm(_MockLt(ignore_trans=True), m=32, n=32, k=32).check(rows=6)
    with pytest.raises(RuntimeError):
        _lt_gemm(_MockLt(algos=0))


def test_run_gemm_runs_ceilings_first_then_the_sweep(monkeypatch):
    from hwprobe.probes.compute import cublaslt as gpu_fp8
    from hwprobe.probes.compute import gemm as gpu_gemm

    order = []

    def fake_measure(ctx, env, v, m, n, k, *, metric, kind, rows, exec_unit=None, notes=(), extra=None,
                     gemm_cls=None, rest_s=0.0):
        order.append(metric)
        rate = n * (2.0 if v.layout == "TN" else 1.0) * (1.1 if v.algo == gc.GEMM_DEFAULT_TENSOR_OP else 1.0)
        best = rate
        if metric.startswith("fp16.tensor_core.cublas.f32acc.tn.tensor_op.") and n == 16384:   # the limiter acts
            best, rate = 1.2 * rate, 1.15 * rate if rest_s else rate
        return Measurement(probe="gpu.gemm", metric=metric, kind=kind, value=rate, best=best, unit=v.unit,
                           precision=v.precision, params={"n": n, "layout": v.layout, "algo": gc.ALGO_NAMES[v.algo],
                                                           **({"rest_s": rest_s} if rest_s else {})})

    def fake_lt(ctx, env, prec, sizes, rows):
        for n in sizes:
            order.append(f"lt.{prec}.{n}")
            yield Measurement(probe="gpu.gemm", metric=f"{prec}.tensor_core.cublaslt.n{n}", kind="sweep",
                              value=float(n), best=float(n) * (1.5 if (prec, n) == ("int8", 16384) else 1.0),
                              unit="FLOP/s", params={"n": n})
            if prec == "int8":      # the INT8-output configuration has a ceiling of its own
                yield Measurement(probe="gpu.gemm", metric=f"int8.tensor_core.cublaslt.i8out.n{n}", kind="sweep",
                                  value=2.0 * n, best=2.0 * n, unit="OP/s", params={"n": n})

    def fake_lt_point(ctx, env, stem, n, rows, *, metric, rest_s):
        order.append(metric)
        return Measurement(probe="gpu.gemm", metric=metric, kind="sweep", value=1.4 * n, best=1.4 * n,
                           unit="OP/s", params={"n": n, "rest_s": rest_s})

    monkeypatch.setattr(gpu_gemm, "cublas_env", lambda ctx: None)
    monkeypatch.setattr(gpu_gemm, "measure_gemm", fake_measure)
    monkeypatch.setattr(gpu_gemm, "_framework_points", lambda *a: iter([order.append("frameworks")] and []))
    monkeypatch.setattr(gpu_fp8, "lt_points", fake_lt)
    monkeypatch.setattr(gpu_fp8, "lt_point", fake_lt_point)
    ctx = SimpleNamespace(quick=False, log=lambda msg: None, device=SimpleNamespace(cc_major=9, cc_minor=0),
                          derived=lambda metric, value, **kw: Measurement(probe="gpu.gemm", metric=metric,
                                                                          value=value, **kw))
    ms = list(gpu_gemm.run_gemm(ctx, precisions=("fp32", "fp16", "int8"), sizes=(1024, 8192)))
    got = {m.metric: m for m in ms}
    # INT8 first (most power per clock: it loses most to a hot card), its extra sizes, then its big size
    assert order[:4] == ["int8.tensor_core.cublas.tn.n8192", "int8.tensor_core.cublas.tn.n6144",
                         "int8.tensor_core.cublas.tn.n12288", "int8.tensor_core.cublas.tn.n16384"]
    assert order[4] == "int8.cublas.nn.n8192" and "int8.cublas.nn.n6144" not in order
    assert order[5:9] == ["lt.int8.16384", "lt.int8.12288", "lt.int8.8192", "lt.int8.6144"]
    fp16 = "fp16.tensor_core.cublas.f32acc"
    assert order[9:13] == [f"{fp16}.n8192", f"{fp16}.nn.tensor_op.n8192", f"{fp16}.tn.n8192",
                           f"{fp16}.tn.tensor_op.n8192"]
    assert order[13] == "fp16.tensor_core.cublas.f32acc.tn.tensor_op.n16384"       # the best config, larger
    assert order.index("lt.fp16.16384") < order.index("frameworks")
    assert "lt.fp16.12288" not in order
    assert [p["n"] for p in got["int8.tensor_core.cublas.tn"].params["curve"]] == [1024, 6144, 8192, 12288, 16384]
    assert "int8.cublas.nn.n16384" not in order and "fp32.cuda_core.cublas.nn.n16384" not in order
    assert order.index("fp32.cuda_core.cublas.n8192") < order.index("fp16.tensor_core.cublas.f32acc.n1024")
    # after the sweep, the two configurations whose windows lost the clock run again, rested; nothing else does
    rested = [o for o in order if ".rested." in o]
    assert rested == ["fp16.tensor_core.cublas.f32acc.tn.tensor_op.rested.n16384",
                      "int8.tensor_core.cublaslt.rested.n16384"]
    assert order.index(rested[0]) > order.index("fp16.tensor_core.cublas.f32acc.n1024")
    ceil = got["fp16.tensor_core.cublas.f32acc"]
    assert ceil.kind == "compute" and ceil.params["n"] == 16384 and ceil.params["layout"] == "TN"
    assert ceil.value == pytest.approx(1.15 * 2.2 * 16384) and ceil.params["rest_s"] == gpu_gemm.REST_S
    assert "rested 0.3 s" in ceil.params["ceiling_of"]
    assert "measured again after a 0.3-s rest" in got[rested[0]].notes[-1]
    assert [p["n"] for p in ceil.params["curve"]] == [1024, 8192]
    lt8 = got["int8.tensor_core.cublaslt"]      # 16384's rested window over its first one's median
    assert lt8.value == pytest.approx(1.4 * 16384) and len(lt8.params["candidates"]) == 5
    assert got["fp16.tensor_core.cublaslt"].kind == "compute"
    i8 = got["int8.tensor_core.cublaslt.i8out"]
    assert i8.kind == "compute" and i8.value == 32768.0 and len(i8.params["candidates"]) == 4
    assert got["pitfall.int8_vs_fp16"].params["size"] == 8192


def test_int8_extra_sizes():
    assert gc.int8_extra_sizes((12288, 6144, 8192), [1024, 8192], [16384], quick=False) == [6144, 12288]
    assert gc.int8_extra_sizes((6144, 12288), [1024, 2048], [], quick=True) == []


def test_build_runner_skips_capture_where_the_binding_refuses_it():
    from hwprobe.probes.compute.cublas import build_runner

    sim = _SimGpu(2e-6, fail_capture=True)
    r = build_runner(sim, sim.call, graph_unavailable="CuPy's cublas refuses stream capture")
    assert not r.graph and r.fallback == "CuPy's cublas refuses stream capture" and sim.captured is None
    assert r.notes[0].startswith("no CUDA graph: CuPy's cublas")


def test_nvmath_cublas_adapter_sets_the_workspace_after_every_stream_change():
    from hwprobe.probes.compute.cublas import NvmathCublas

    calls = []
    mod = SimpleNamespace(set_stream=lambda h, s: calls.append(("stream", h, s)),
                          set_workspace=lambda h, p, n: calls.append(("ws", h, p, n)),
                          gemm_ex=lambda *a: calls.append(("gemm", len(a))),
                          get_math_mode=lambda h: 3, set_math_mode=lambda h, m: calls.append(("math", m)),
                          get_pointer_mode=lambda h: 0, set_pointer_mode=lambda h, m: calls.append(("ptr", m)))
    b = NvmathCublas(mod, 1000, 32 << 20)
    b.setStream(7, 42)
    b.gemmEx(*range(19))
    assert calls == [("stream", 7, 42), ("ws", 7, 1000, 32 << 20), ("gemm", 19)]
    assert b.getMathMode(7) == 3 and b.getPointerMode(7) == 0


def test_gemm_power_summary_states_measurements_and_labels_the_inference():
    from hwprobe.measurement import ClockSummary, Measurement
    from hwprobe.probes.compute.gemm_power import PATHS, summarize

    assert [p.metric("relu") for p in PATHS["int8"]] == ["int8.tensor_core.cublaslt.sustained.relu",
                                                          "int8.tensor_core.cublaslt.i8out.sustained.relu"]

    def point(data, rate, mhz, watts, per_clock):
        return Measurement(probe="gpu.gemm_power", metric=PATHS["int8"][0].metric(data), kind="sweep",
                           unit="OP/s", value=rate, precision="int8",
                           clocks=ClockSummary(sm_mhz=mhz, power_w=watts),
                           params={"data": data, "per_clock": per_clock})

    pts = [point("uniform", 1.30e15, 1410, 693, 0.85), point("zeros", 1.80e15, 1980, 600, 0.84)]
    ratio, text = summarize("int8", 8192, pts, 700.0)
    assert abs(ratio - 1.80 / 1.30) < 1e-9
    assert "power limit 700 W" in text and "28% slower" in text
    assert "per clock 85% vs 84% of theory at NVML's 1410 vs 1980 MHz" in text
    assert "inferred from the rates and NVML's clocks" in text and "i.e. power, not the kernel" not in text
    assert "zeros 1.8 POP/s at 1980 MHz, 600 W" in text              # the zero reference's own clock and power
    # a kernel that is itself slower per clock on random data is not blamed on the clock
    pts[0].params["per_clock"] = 0.60
    text = summarize("int8", 8192, pts, 700.0)[1]
    assert "inferred" not in text and "not all of the difference is clock" in text
    # invalid points and missing references leave the ratio at 0
    pts[1].valid = False
    assert summarize("int8", 8192, pts, None)[0] == 0.0


def test_gemm_power_paths_select_per_precision_in_order():
    from hwprobe.probes.compute.gemm_power import ALL_PATHS, paths_of

    assert [p.variant for p in paths_of("int8", ALL_PATHS)] == ["int8.tn", "int8.tn.i8out"]
    assert [p.variant for p in paths_of("int8", ("fp8.fast", "int8.tn.i8out"))] == ["int8.tn.i8out"]
    assert paths_of("fp16", ("int8.tn",)) == ()
    assert ALL_PATHS == ("int8.tn", "int8.tn.i8out", "fp16.f32acc", "bf16", "fp8.fast")


def test_gemm_power_per_clock_uses_the_window_clock():
    from hwprobe import specs
    from hwprobe.measurement import ClockSummary, Measurement
    from hwprobe.probes.compute.gemm_power import per_clock

    th = specs.sku_theory(specs.find("H200 SXM"))
    m = Measurement(probe="p", metric="m", kind="sweep", unit="OP/s", value=1.30e15, precision="int8",
                    clocks=ClockSummary(sm_mhz=1410))
    assert abs(per_clock(m, th) - 1.30e15 / (132 * 8192 * 1410e6)) < 1e-9
    m.clocks = None
    assert per_clock(m, th) is None


def test_sentinel_reading_and_the_params_the_judge_reads():
    from hwprobe.timing import sentinel as sn

    # rows of (cycles, ns, smid, start ns): 132 SMs at 1980 MHz over 200 us, one SM's record missing
    rec = np.array([[396_000, 200_000, i, 10**9] for i in range(131)] + [[0, 0, 131, 0]], dtype=np.uint64)
    r = sn.reading(rec, 2e-4)
    assert (r.mhz, r.min_mhz, r.max_mhz, r.sms) == (1980.0, 1980.0, 1980.0, 131)
    assert sn.reading(np.zeros((4, 4)), 2e-4) is None
    low = sn.SentinelReading(1425.0, 1424.9, 1425.3, 132, 2e-4)
    p: dict = {}
    sn.record(p, r, low)              # a burst that starts at 1980 and ends at 1425 MHz (the H200's INT8 TN)
    assert p["sentinel_sm_mhz"] == [1425.0, 1980.0] and sn.clock_of(p) == 1980.0
    assert p["sentinel_sm_mhz_mean"] == pytest.approx(1702.5) and p["sentinel_sm_mhz_after"]["mhz"] == 1425.0
    q: dict = {}
    sn.record(q, None, None)
    assert q == {} and sn.clock_of(q) is None


# --- precision checks: each precision's check fails for the next lower one -------------------------------


def _round_bits(x, bits):
    m, e = np.frexp(np.asarray(x, dtype=np.float64))
    return np.ldexp(np.rint(np.ldexp(m, bits)), e - bits)


def _tc_gemm(a, b, acc, chunk=16, out_bits=None):
    """A tensor-core GEMM model: k in chunks of ``chunk`` summed exactly, each chunk added to an accumulator of
    ``acc`` ("f32" | "f16"), the result rounded to ``out_bits`` significant bits."""
    total = np.zeros((a.shape[0], b.shape[1]))
    for s in range(0, a.shape[1], chunk):
        part = a[:, s:s + chunk] @ b[s:s + chunk]
        if acc == "f16":
            with np.errstate(over="ignore"):
                total = (total + part).astype(np.float16).astype(np.float64)
        else:
            total = (total.astype(np.float32) + part.astype(np.float32)).astype(np.float64)
    return _round_bits(total, out_bits) if out_bits else total


@pytest.mark.parametrize("k", [32, 64, 256, 1024, 4096])
def test_fp16_f32acc_check_fails_for_fp16_accumulation_at_every_k(k):
    a, b = gc.precision_operands("fp16.f32acc", 16, 24, k)
    assert np.array_equal(a.astype(np.float16).astype(np.float64), a)          # inputs exact in fp16
    ref = a @ b
    assert np.abs(ref).max() <= 2048 and np.array_equal(ref, np.rint(ref))     # exact in the fp16 output
    gc.check_close(_tc_gemm(a, b, "f32", out_bits=11), ref, 0.0, "f32 accumulate")   # passes, exactly
    with pytest.raises(VerificationError):
        gc.check_close(_tc_gemm(a, b, "f16", out_bits=11), ref, 0.0, "f16 accumulate")


@pytest.mark.parametrize("k", [64, 1024, 4096])
def test_tf32_check_fails_for_bf16_rounded_inputs(k):
    a, b = gc.precision_operands("tf32", 16, 24, k)
    assert np.array_equal(_round_bits(a, 11), a) and np.array_equal(_round_bits(b, 11), b)   # exact in TF32
    assert np.count_nonzero(a, axis=1).tolist() == [3] * 16
    ref = a @ b
    assert np.abs(ref).max() < 2 ** 24
    gc.check_close(_tc_gemm(a, b, "f32"), ref, 0.0, "tf32")
    with pytest.raises(VerificationError):
        gc.check_close(_tc_gemm(_round_bits(a, 8), _round_bits(b, 8), "f32"), ref, 0.0, "bf16 inputs")


def test_timed_data_tolerances_tell_the_precisions_apart():
    rng = np.random.default_rng(3)
    for k in (1024, 4096):
        a, b = rng.uniform(-1, 1, (32, k)), rng.uniform(-1, 1, (k, 48))
        ref = a @ b
        tf32 = gc.rel_error(_tc_gemm(_round_bits(a, 11), _round_bits(b, 11), "f32"), ref)
        bf16 = gc.rel_error(_tc_gemm(_round_bits(a, 8), _round_bits(b, 8), "f32"), ref)
        assert tf32 < gc.tolerance("tf32") / 2 and bf16 > gc.tolerance("tf32") * 1.5, (k, tf32, bf16)
        h = a.astype(np.float16).astype(np.float64) * k ** -0.25, b.astype(np.float16).astype(np.float64) * k ** -0.25
        h = tuple(x.astype(np.float16).astype(np.float64) for x in h)
        ref = h[0] @ h[1]
        f32 = gc.rel_error(_tc_gemm(*h, "f32", out_bits=11), ref)
        f16 = gc.rel_error(_tc_gemm(*h, "f16", out_bits=11), ref)
        assert f32 < gc.tolerance("fp16.f32acc") / 2 and f16 > gc.tolerance("fp16.f32acc"), (k, f32, f16)


def test_bf16_check_operands_are_exact_in_bf16_and_the_product_too():
    a, b = gc.precision_operands("bf16", 8, 8, 256)
    ref = a @ b
    assert np.array_equal(_round_bits(a, 8), a) and np.array_equal(_round_bits(b, 8), b)
    assert np.abs(ref).max() <= 256 and np.array_equal(_round_bits(ref, 8), ref)   # exact in the bf16 output
    assert np.abs(np.cumsum(a[0] * b[:, 0])).max() > 2048          # partial sums leave FP16's integers
    with pytest.raises(KeyError):
        gc.precision_operands("int8", 8, 8, 256)


def test_fp64_runs_first_after_the_tighter_settle(monkeypatch):
    """Issue 33: FP64's library ceiling is judged against a plain cupy.matmul on a cool GPU, so its top size runs
    before the tensor-core GEMMs heat the card, after a settle with tighter margins than the other precisions'."""
    from hwprobe.probes.compute import cublaslt as gpu_fp8
    from hwprobe.probes.compute import gemm as gpu_gemm

    order, settles = [], []

    def fake_measure(ctx, env, v, m, n, k, *, metric, kind, rows, exec_unit=None, notes=(), extra=None, rest_s=0.0):
        order.append(metric)
        return Measurement(probe="gpu.gemm", metric=metric, kind=kind, value=float(n), unit=v.unit,
                           precision=v.precision, params={"n": n, "layout": v.layout, "algo": gc.ALGO_NAMES[v.algo],
                                                           **(extra or {})})

    def fake_cupy(ctx, env, n, rows):
        order.append(f"cupy.fp64.n{n}")
        return Measurement(probe="gpu.gemm", metric="fp64.tensor_core.cupy_matmul", kind="sweep", value=float(n),
                           unit="FLOP/s", precision="fp64")

    def fake_settle(sampler, **rule):
        settles.append((order[-1] if order else None, rule))
        return {"settled": True, "rule": str(rule)}

    import hwprobe.timing.settle as st

    monkeypatch.setattr(st, "settle", fake_settle)
    monkeypatch.setattr(gpu_gemm, "cublas_env", lambda ctx: None)
    monkeypatch.setattr(gpu_gemm, "measure_gemm", fake_measure)
    monkeypatch.setattr(gpu_gemm, "_cupy_fp64", fake_cupy)
    monkeypatch.setattr(gpu_gemm, "_framework_points", lambda *a: iter([]))
    monkeypatch.setattr(gpu_fp8, "lt_points", lambda *a: iter([]))
    ctx = SimpleNamespace(quick=False, log=lambda msg: None, device=SimpleNamespace(cc_major=9, cc_minor=0),
                          theory=None, sampler=None,
                          derived=lambda metric, value, **kw: Measurement(probe="gpu.gemm", metric=metric,
                                                                          value=value, **kw))
    list(gpu_gemm.run_gemm(ctx, precisions=("int8", "fp16", "fp64"), sizes=(4096, 8192), frameworks=("cupy",)))
    assert order[:4] == ["fp64.tensor_core.cublas.n8192", "fp64.tensor_core.cublas.nn.tensor_op.n8192",
                         "cupy.fp64.n8192", "fp64.tensor_core.cublas.again.n8192"]
    assert order[4] == "int8.tensor_core.cublas.tn.n8192"
    assert settles[0] == (None, gpu_gemm.COOL_SETTLE)                     # before FP64's top size: the tight rule
    assert settles[1] == ("fp64.tensor_core.cublas.again.n8192", {"max_wait_s": 0.0})   # INT8: its state, no wait
    assert all(rule == {"max_wait_s": 0.0} for _, rule in settles[1:])
    # tighter on temperature than the usual rule, its idle power (a 1.2x rule was never met after work: 8 s a run)
    from hwprobe.timing import settle as st
    assert gpu_gemm.COOL_SETTLE["temp_margin_c"] < st.TEMP_MARGIN_C
    assert gpu_gemm.COOL_SETTLE["power_factor"] == st.POWER_IDLE_FACTOR


def test_the_sweep_below_the_top_size_records_where_it_started_and_never_waits(monkeypatch):
    """Below the top size each precision's sizes run from the largest down. A power-capped precision's points
    record the state each size started from, read without waiting: where the limiter touched a ceiling, its best
    configuration runs again rested (_rested), so the sweep's settles (10.9 s of gpu.gemm's 33.7 in an H200 `full`)
    no longer decide a ceiling. An uncapped precision records no state."""
    from hwprobe.probes.compute import gemm as gpu_gemm
    from hwprobe.timing import settle as st

    order, settles = [], []

    def run_point(v, n, metric, sweep):
        order.append((v.precision, n, start["state"]))
        return Measurement(probe="gpu.gemm", metric=metric, kind="sweep", value=1.0, unit="FLOP/s"), v

    def fake_settle(sampler, **rule):
        settles.append(rule)
        return {"settled": False, "waited_s": 0.0}

    monkeypatch.setattr(st, "settle", fake_settle)
    ctx = SimpleNamespace(quick=False, sampler=None)
    start: dict = {}
    list(gpu_gemm._phase2(ctx, (1024, 2048, 4096, 8192), ["fp64", "bf16", "fp16"], {"fp64", "bf16"}, start,
                          run_point))
    assert [n for prec, n, _ in order if prec == "fp64"] == [4096, 2048, 1024]
    assert all(state == {"settled": False, "waited_s": 0.0} for prec, _, state in order if prec != "fp16")
    assert all(state is None for prec, _, state in order if prec == "fp16")
    assert settles == [{"max_wait_s": 0.0}] * 6                        # three sizes of FP64 and of BF16


def test_sparse_algorithm_attributes_are_set_and_read_through_the_binding():
    """cuSPARSELt's search iterations go in before the plan, and the chosen config comes back, each in the dtype
    the binding names for the attribute (a fake binding that keeps what it is given)."""
    import ctypes
    import types

    from hwprobe.probes.compute import sparse as gpu_sparse

    store: dict[int, int] = {}
    attrs = types.SimpleNamespace(CONFIG_ID=0, SPLIT_K=3, SEARCH_ITERATIONS=2)

    def set_attr(handle, alg, attr, ptr, size):
        assert (handle, alg, size) == (7, 11, 4)
        store[attr] = int(np.ctypeslib.as_array((ctypes.c_int32 * 1).from_address(ptr))[0])

    def get_attr(handle, alg, attr, ptr, size):
        (ctypes.c_int32 * 1).from_address(ptr)[0] = store.get(attr, -1)

    lt = types.SimpleNamespace(MatmulAlgAttribute=attrs, get_matmul_alg_attribute_dtype=lambda a: np.int32,
                               matmul_alg_set_attribute=set_attr, matmul_alg_get_attribute=get_attr)
    g = object.__new__(gpu_sparse.SparseGemm)
    g.lt, g.h, g.alg = lt, 7, 11
    assert g._alg_attr(attrs.SEARCH_ITERATIONS, 2) == 2 and store == {2: 2}
    store[attrs.CONFIG_ID] = 25
    assert g._alg_attr(attrs.CONFIG_ID) == 25 and g._alg_attr(attrs.SPLIT_K) == -1
    assert g._read_attr("CONFIG_ID") == 25 and g._read_attr("SPLIT_K_MODE") is None    # not in this binding


def test_sparse_sweep_keeps_the_fastest_config_that_runs_and_checks(monkeypatch):
    """hwprobe's own config sweep: every id on a fresh selection and plan, timed in interleaved rounds; an id the
    library rejects at its first launch and one whose output fails the check are dropped, the fastest of the rest
    becomes the GEMM's plan (its old selection and plan destroyed), and every other plan made is destroyed."""
    import itertools
    import types

    import hwprobe.timing
    from hwprobe.errors import VerificationError
    from hwprobe.probes.compute import sparse as gpu_sparse

    attrs = types.SimpleNamespace(CONFIG_ID="id", CONFIG_MAX_ID="max", SPLIT_K="sk")
    seconds = {0: 5e-3, 1: 2e-3, 2: 1e-3, 3: 0.5e-3, 4: 3e-3}    # 3 fails at launch, 2 computes wrong
    new_id = itertools.count(100)
    config, plan_of, destroyed, ran = {}, {}, [], []

    def set_config(g, attr, value=None, alg=None):
        alg = g.alg if alg is None else alg
        if value is not None:
            config[alg] = value
        return len(seconds) if attr == "max" else config.get(alg, 0)

    def plan_init(h, desc, alg):
        plan = next(new_id)
        plan_of[plan] = config.get(alg, 0)
        return plan

    def matmul(h, plan, *rest):
        if plan_of[plan] == 3:
            raise RuntimeError("CUSPARSE_STATUS_NOT_SUPPORTED")
        ran.append(plan_of[plan])

    lt = types.SimpleNamespace(
        MatmulAlgAttribute=attrs, MatmulAlg=types.SimpleNamespace(DEFAULT=0), matmul=matmul,
        matmul_alg_selection_init=lambda h, desc, how: next(new_id), matmul_plan_init=plan_init,
        matmul_get_workspace=lambda h, plan: 0, matmul_plan_destroy=lambda p: destroyed.append(("plan", p)),
        matmul_alg_selection_destroy=lambda a: destroyed.append(("alg", a)))
    buf = types.SimpleNamespace(data=types.SimpleNamespace(ptr=0), size=0)
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(ptr=0)))
    g = object.__new__(gpu_sparse.SparseGemm)
    g.lt, g.h, g.cp, g.desc, g.alg, g.plan, g.ws = lt, 7, cp, 9, 1, 2, buf
    g._descs = [(lt.matmul_alg_selection_destroy, 1), (lt.matmul_plan_destroy, 2)]
    g.ops, g.streams = [[buf, buf, buf, buf]], np.zeros(1, np.uint64)
    g.alpha = g.beta = np.zeros((), np.float32)
    g.rejected, g.timings, g.settled, g.contenders, g.finalist = {}, {}, {}, [], None
    monkeypatch.setattr(gpu_sparse.SparseGemm, "_alg_attr", set_config)

    def check(rows):
        if ran[-1] == 2:
            raise VerificationError("4 of 4 sampled rows wrong")
    g.check = check

    def once(fn, cp=None):
        fn()
        return seconds[ran[-1]]
    monkeypatch.setattr(hwprobe.timing, "time_cuda_once", once)
    g._sweep(rows=4)
    assert plan_of[g.plan] == 1 and config[g.alg] == 1
    assert set(g.timings) == {0, 1, 2, 4} and g.timings[1] == 2e-3
    assert set(g.rejected) == {2, 3} and g.rejected[2].startswith("output:") and "NOT_SUPPORTED" in g.rejected[3]
    assert g.search_params() == {"cusparselt_sweep_us": {0: 5000.0, 1: 2000.0, 2: 1000.0, 4: 3000.0},
                                 "cusparselt_rejected": g.rejected}       # no refine ran: no settled times
    assert g._descs == [(lt.matmul_alg_selection_destroy, g.alg), (lt.matmul_plan_destroy, g.plan)]
    made = {p for p in plan_of} | {a for a in config}
    assert {o for _, o in destroyed} == (made | {1, 2}) - {g.alg, g.plan}    # nothing leaks, the winner lives
    assert g.finalist is None                                # no tie: nothing measured beside the pick

    # the refine timed 1, 2 and 4: the pick is 1, 2 computes wrong, so 4 is the finalist, kept
    # alive (owned by close()) and swappable with the pick
    ran.clear(), destroyed.clear(), config.clear(), plan_of.clear()
    g.alg, g.plan, g.rejected = 1, 2, {}
    g._descs = [(lt.matmul_alg_selection_destroy, 1), (lt.matmul_plan_destroy, 2)]
    ranked = [1, 2, 4, 0]

    def tie(self, plans):
        self.contenders = [1, 2, 4]
        return ranked
    monkeypatch.setattr(gpu_sparse.SparseGemm, "_ranked", tie)
    g._sweep(rows=4)
    cid, f_alg, f_plan = g.finalist
    assert plan_of[g.plan] == 1 and cid == 4 and plan_of[f_plan] == 4 and config[f_alg] == 4
    assert set(g.rejected) == {2, 3}
    assert {o for _, o in g._descs} == {g.alg, g.plan, f_alg, f_plan}
    assert {o for _, o in destroyed}.isdisjoint({g.alg, g.plan, f_alg, f_plan})
    pick_alg, pick_plan = g.alg, g.plan
    g.ws = types.SimpleNamespace(size=0)
    g._read_attr = lambda name: config.get(g.alg) if name == "CONFIG_ID" else None
    g.search = "sweep"
    g._read_chosen()                                         # as _setup does after the sweep
    assert g.take_finalist() == 4 and (g.alg, g.plan) == (f_alg, f_plan) and g.chosen["config_id"] == 4
    assert g.finalist == (1, pick_alg, pick_plan)


def test_sparse_sweep_ranks_close_configs_by_their_settled_rate(monkeypatch):
    """Configs within REFINE_WITHIN of the fastest burst run again for REFINE_S each, back to back, in interleaved
    rounds; their settled time per launch orders them where the burst winner's is more than REFINE_CLEAR slower (the
    power cap can reverse a burst ranking), else the burst order stands; the rest keep their burst order after."""
    import types

    import hwprobe.timing
    from hwprobe.probes.compute import sparse as gpu_sparse

    settled = {50: 1.2e-3, 60: 1.0e-3, 70: 1.1e-3}
    calls = []

    def time_cuda(fn, warmup, repeats, cp):
        ran = []
        g._matmul = lambda f, i, plan: ran.append(plan)
        fn()
        calls.append((ran[0], warmup, repeats))
        return [settled[ran[0]]] * repeats

    monkeypatch.setattr(hwprobe.timing, "time_cuda", time_cuda)
    g = object.__new__(gpu_sparse.SparseGemm)
    g.lt, g.cp, g.contenders = types.SimpleNamespace(matmul=None), None, []
    g.timings = {5: 1.00e-3, 6: 1.02e-3, 7: 1.04e-3, 8: 1.5e-3, 9: 1.01e-3 * 2}
    assert g._ranked({5: 50, 6: 60, 7: 70, 8: 80, 9: 90}) == [6, 7, 5, 8, 9]
    assert g.contenders == [5, 6, 7]                         # the pool the point's finalist comes from
    assert {c: t for c, t in g.settled.items()} == {5: 1.2e-3, 6: 1.0e-3, 7: 1.1e-3}
    assert len(calls) == gpu_sparse.REFINE_ROUNDS * 3
    n = [int(gpu_sparse.REFINE_S / t) for t in (1.00e-3, 1.02e-3, 1.04e-3)]
    first = [(p, k // 2, k - k // 2) for p, k in zip((50, 60, 70), n, strict=True)]
    assert calls[:6] == first + first[::-1]                  # the second round in reverse: each place in turn
    g.timings = {5: 1.0e-3, 6: 1.2e-3}                     # nothing close: the burst order stands, no refine
    calls.clear()
    assert g._ranked({5: 50, 6: 60}) == [5, 6] and not calls
    assert g.contenders == []
    settled.update({50: 1.015e-3, 60: 1.0e-3})              # windows within REFINE_CLEAR: the bursts decide
    g.timings = {5: 1.00e-3, 6: 1.02e-3}
    assert g._ranked({5: 50, 6: 60}) == [5, 6] and calls
    assert g.contenders == [5, 6]


def test_sparse_point_measures_the_finalist_and_keeps_the_faster_verified(monkeypatch):
    """A point whose sweep left a finalist is measured twice, as the point is (pick, then finalist), and the faster
    verified measurement is returned, each carrying both rates; without a finalist it is measured once."""
    import types

    from hwprobe.probes.compute import sparse as gpu_sparse

    rate = {25: 2000.0, 17: 1950.0}
    valid = {25: True, 17: True}
    closed, measured = [], []

    class Fake:
        def __init__(self, *a, **k):
            self.chosen, self.finalist = {"config_id": 17}, (25, 1, 2)
            self.prune_s = self.compress_s = [1e-3]
            self.compressed_bytes = 8

        def take_finalist(self):
            cid = self.finalist[0]
            self.finalist, self.chosen = (self.chosen["config_id"], 3, 4), {"config_id": cid}
            return cid

        def close(self):
            closed.append(self)

    def settled(ctx, lib, g, spec, n, sets, rows, sustain, metric, prep):
        cid = g.chosen["config_id"]
        measured.append(cid)
        return types.SimpleNamespace(value=rate[cid], valid=valid[cid], notes=[],
                                     params={"cusparselt_alg": dict(g.chosen)})

    monkeypatch.setattr(gpu_sparse, "SparseGemm", Fake)
    monkeypatch.setattr(gpu_sparse, "_settled", settled)
    lib = types.SimpleNamespace(cp=None, lt=None, cs=None, handle=0, l2=50 << 20, search="sweep",
                                search_iterations=None)
    spec = gpu_sparse.SPECS["int8"]
    m, prep = gpu_sparse._sparse_point(None, lib, spec, 4096, 4, Sustain(0.1, 0.1), "x")
    assert measured == [17, 25] and m.value == 2000.0 and m.params["finalist_rates"] == {17: 1950.0, 25: 2000.0}
    assert "config ids 17 and 25" in m.notes[0] and prep["prune_s"] == 1e-3 and len(closed) == 1
    valid[25] = False                                        # a faster output that fails its check is never kept
    measured.clear()
    assert gpu_sparse._sparse_point(None, lib, spec, 4096, 4, Sustain(0.1, 0.1), "x")[0].value == 1950.0
    class Single(Fake):                                      # no tie in the sweep: one measurement
        def __init__(self, *a, **k):
            super().__init__()
            self.finalist = None
    monkeypatch.setattr(gpu_sparse, "SparseGemm", Single)
    measured.clear()
    m, _ = gpu_sparse._sparse_point(None, lib, spec, 4096, 4, Sustain(0.1, 0.1), "x")
    assert measured == [17] and "finalist_rates" not in m.params


def test_f64_copy_host_reference_and_input_errors():
    """host_f64, the GPU copy's reference, decodes every storage kind; to_f64 refuses a wrong kind or element size
    before it touches the GPU."""
    from hwprobe.probes.compute import f64_copy

    bits = gc.bf16_bits_from_f32(np.array([[1.5, -2.0], [0.0, 2.0 ** 100]], dtype=np.float32))
    assert f64_copy.host_f64(bits, "bf16").tolist() == [[1.5, -2.0], [0.0, 2.0 ** 100]]
    codes = np.array([[0x38, 0xB8], [0x7E, 0x00]], dtype=np.uint8)          # E4M3: 1, -1, 448, 0
    assert f64_copy.host_f64(codes, "fp8").tolist() == [[1.0, -1.0], [448.0, 0.0]]
    assert f64_copy.host_f64(np.array([[-127, 127]], dtype=np.int8), "int8").dtype == np.float64
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert f64_copy.to_f64(np, x.T, "int32", [3, 0]).tolist() == [[3, 7, 11], [0, 4, 8]]
    for bad in ([4], [-1]):                                  # numpy would wrap -1: refused on both paths
        with pytest.raises(IndexError, match="out of range for 4 rows"):
            f64_copy.to_f64(np, x.T, "int32", bad)
    with pytest.raises(ValueError, match="unknown storage kind"):
        f64_copy.to_f64(None, np.zeros((2, 2), np.float16), "half")
    with pytest.raises(ValueError, match="2-D array of bf16"):
        f64_copy.to_f64(None, np.zeros((2, 2), np.float32), "bf16")
    with pytest.raises(ValueError, match="2-D array of int8"):
        f64_copy.to_f64(None, np.zeros(4, np.int8), "int8")


def test_measure_sustained_checks_only_the_kept_window_and_records_every_window():
    from types import SimpleNamespace

    from hwprobe.probes.compute.cublas import measure_sustained
    from hwprobe.timing.steady import Settled, Sustain
    from hwprobe.vocab import SettleStop

    per_call = iter([4.78e-3, 4.60e-3, 4.50e-3])     # two calls per sample: the window's median is twice that
    windows, checked = [], []

    def window():
        windows.append(SimpleNamespace(stats=SimpleNamespace(median_s=2 * next(per_call)), params={}, notes=[]))
        return windows[-1]

    ctx = SimpleNamespace(verify=lambda m, check: checked.append((m, check)))
    done = Settled(0.3, SettleStop.STEADY, [4.6e-3, 4.55e-3, 4.55e-3, 4.56e-3, 4.55e-3], 4)
    check, bridged = object(), []
    runner = SimpleNamespace(fn=lambda: bridged.append(len(windows)), reps=2, per_call_s=4.5e-3)
    m = measure_sustained(ctx, window, runner, Sustain(0.25, 0.4, 1.0, sustain_max_s=2.0), done, check)
    assert len(windows) == 2 and m is windows[1] and checked == [(windows[1], check)]
    # 50 ms of the work queued before each window: ceil(0.05 / (2 x 4.5 ms)) = 6 calls, then the window
    assert bridged == [0] * 6 + [1] * 6 and m.params["bridge_calls"] == 6
    assert m.params["sustain_windows_us"] == [4780.0, 4600.0] and m.params["sustain_window_stop"] == "level"
    assert m.params["settle_stop"] == "steady" and m.params["sustain_max_s"] == 2.0
    assert "fastest of 2" in m.notes[0]


def _ceiling_groups(run: str) -> dict:
    """A committed run's gpu.gemm ceilings, each with its candidates as gpu.gemm grouped them (rested ones left out)."""
    from pathlib import Path

    from hwprobe.results import read_measurements

    ms = [m for m in read_measurements(Path(__file__).resolve().parents[1] / run) if m.probe == "gpu.gemm"]
    by_metric = {m.metric: m for m in ms if m.kind == "sweep"}
    return {c.metric: [by_metric[row["metric"]] for row in c.params["candidates"] if ".rested." not in row["metric"]]
            for c in ms if c.kind == "compute" and "candidates" in c.params}


def test_to_rest_picks_each_ceiling_the_power_limiter_touched_in_real_full_runs():
    """The H200 `full` runs of profiles/h200-sxm/2026-11-29-ab-s42 (3e45c72) and -ab-s43 (978fdd5). The limiter cut
    gemmEx TF32 at 8192 in s42 (samples 406, 415, 401, 386, ... 348: median 378) and both cuBLASLt TF32 and FP16 at
    8192 (408 and 785 at first, medians 381 and 739): their fastest samples beat every median by over 1%. Where NVML
    named the power cap or the sentinel clock fell by over 3% in the best window, the ceiling rests too (BF16
    cuBLASLt's window ran flat at 824.5 in a round where rested it read 832.5 before and 832.8 after). FP32's best
    window ran at 1980 MHz throughout: no rest. Nine ceilings rest in s42, ten in s43 (~0.4 s each)."""
    from hwprobe.probes.compute.gemm import limited, to_rest

    s42 = _ceiling_groups("profiles/h200-sxm/2026-11-29-ab-s42/run-new-full")
    assert len(s42) == 12
    picked = {c: to_rest(pts) for c, pts in s42.items()}
    assert {c for c, m in picked.items() if m is not None} == {
        f"{p}.tensor_core.{v}" for p, v in (("fp64", "cublas"), ("int8", "cublaslt"), ("int8", "cublaslt.i8out"),
                                            ("fp16", "cublas.f16acc"), ("fp16", "cublaslt"), ("bf16", "cublas"),
                                            ("bf16", "cublaslt"), ("tf32", "cublas"), ("tf32", "cublaslt"))}
    lost = {c: (m.metric, round(m.best / 1e12), round(m.value / 1e12)) for c, m in picked.items()
            if m is not None and m.best > 1.01 * max(p.value for p in s42[c])}
    assert lost == {"fp16.tensor_core.cublaslt": ("fp16.tensor_core.cublaslt.n8192", 785, 739),
                    "tf32.tensor_core.cublas": ("tf32.tensor_core.cublas.n8192", 415, 378),
                    "tf32.tensor_core.cublaslt": ("tf32.tensor_core.cublaslt.n8192", 408, 381)}
    fp32 = max(s42["fp32.cuda_core.cublas"], key=lambda p: p.best)
    assert fp32.metric == "fp32.cuda_core.cublas.n8192" and not limited(fp32)
    s43 = _ceiling_groups("profiles/h200-sxm/2026-11-29-ab-s43/run-new-full")
    assert sum(to_rest(pts) is not None for pts in s43.values()) == 10
    assert to_rest(s43["fp32.cuda_core.cublas"]) is None


def test_limited_reads_the_power_cap_from_nvml_or_the_sentinel():
    from hwprobe import keys as K
    from hwprobe.measurement import ClockSummary
    from hwprobe.probes.compute.gemm import limited

    def m(reasons=(), before=1980.0, after=1980.0):
        return Measurement(probe="gpu.gemm", metric="x", kind="sweep", value=1.0, unit="FLOP/s",
                           clocks=ClockSummary(sm_mhz=1980.0, throttle_reasons=list(reasons)),
                           params={K.SENTINEL_BEFORE: {"mhz": before}, K.SENTINEL_AFTER: {"mhz": after}})

    assert not limited(m()) and not limited(m(after=1925.0))             # 2.8% lower: within the sentinel's rule
    assert limited(m(reasons=["sw_power_cap"])) and limited(m(after=1635.0))   # NVML saw it; the sentinel saw it
    assert not limited(m(reasons=["sw_thermal_slowdown"], before=1700.0))      # the clock rose inside the window
    assert not limited(Measurement(probe="gpu.gemm", metric="x", kind="sweep", value=1.0, unit="FLOP/s"))


def test_a_rested_window_opens_without_a_warm_up_after_the_rest():
    from hwprobe.probes.compute.cublas import rest
    from hwprobe.timing import policy

    synced = []
    cp = SimpleNamespace(cuda=SimpleNamespace(get_current_stream=lambda: SimpleNamespace(
        synchronize=lambda: synced.append(True))))
    assert rest(cp, 0.001) == {"rule": policy.RESTED.name, "warmup": 0} and synced == [True]
