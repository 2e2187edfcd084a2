"""CPU tests of gpu.fma's logic: search planning, work counting, the host replays that check the kernels,
the kernel source's contract with the Python side, and SASS parsing on real cuobjdump output."""

from __future__ import annotations

import re
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from hwprobe.errors import VerificationError
from hwprobe.kernels import sass, source
from hwprobe.probes.compute import fma as g
from hwprobe.probes.compute import launch_search as S

ALL = g.FAMILIES + g.EXPERIMENTS

# ---------------------------------------------------------------------------------------------- search


def test_plan_full_quick_and_single():
    full = S.plan((4, 8, 16, 32))
    assert len(full) == 16 and {c.blocks_per_sm for c in full} == set(S.BLOCKS_PER_SM)
    quick = S.plan((4, 8, 16, 32), quick=True)
    assert {c.chains for c in quick} == {8, 16} and {c.blocks_per_sm for c in quick} == set(S.QUICK_BLOCKS_PER_SM)
    one = S.plan((4, 8, 16), search=False, default_chains=8)
    assert one == [S.Config(8, max(S.BLOCKS_PER_SM))]
    assert S.plan((4, 16), search=False, default_chains=8) == [S.Config(4, 8)]   # nearest, smaller on a tie


def test_resident_blocks_registers_threads_and_slots():
    assert S.resident_blocks(32, 256) == 8                    # 2048 threads/SM
    assert S.resident_blocks(40, 256) == 6                    # 40 regs -> 1280/warp -> 10240/block -> 6
    assert S.resident_blocks(72, 256) == 3                    # 72 -> 2304/warp -> 18432/block -> 3
    assert S.resident_blocks(33, 256) == 6                    # rounded up to 40 registers
    assert S.resident_blocks(16, 32, max_blocks=32) == 32     # block slots bind
    assert S.resident_blocks(32, 256, max_threads_per_sm=1536) == 6
    assert S.resident_blocks(255, 1024) == 0                  # does not fit at all
    assert S.max_blocks_per_sm((8, 6)) == 16 and S.max_blocks_per_sm((9, 0)) == 32


def test_fit_drops_oversubscribed_and_keeps_every_chain_count():
    configs = S.plan((4, 8, 32))
    keep, drop = S.fit(configs, {4: 8, 8: 8, 32: 3})
    assert S.Config(32, 4) in drop and S.Config(32, 8) in drop
    assert S.Config(32, 2) in keep and S.Config(4, 8) in keep
    assert S.Config(32, 3) in keep and len(keep) == 12 - 2 + 1       # the real maximum replaces both
    keep, drop = S.fit([S.Config(32, 8)], {32: 3})
    assert keep == [S.Config(32, 3)] and drop == [S.Config(32, 8)]
    keep, _ = S.fit([S.Config(32, 8)], {32: 0})
    assert keep == []


def test_best_prefers_rate_then_the_simpler_config():
    t = [S.Trial(S.Config(8, 8), 1.0, 0.01, 10), S.Trial(S.Config(16, 8), 1.5, 0.01, 10),
         S.Trial(S.Config(4, 4), 1.5, 0.01, 10)]
    assert S.best(t).config == S.Config(4, 4)
    assert [r["rate"] for r in S.table(t)] == [1.5, 1.5, 1.0]
    with pytest.raises(ValueError):
        S.best([])


def test_whole_search_is_cheap():
    """Every family at every planned config, with its calibration: well inside the ~15 s probe budget."""
    full = sum(len(S.plan(f.chains)) for f in ALL)
    quick = sum(len(S.plan(f.chains, quick=True)) for f in ALL)
    assert S.cost_s(full, search_s=2e-3, calibrate_s=1.5e-3) < 1.0
    assert S.cost_s(quick, search_s=1e-3, calibrate_s=1e-3) < 0.2
    assert sum(len(S.plan(f.chains, search=False)) for f in ALL) == len(ALL)


# ---------------------------------------------------------------------------------------------- work


@pytest.mark.parametrize(("fam", "per_step"), [
    (g.FAMILIES[0], 2), (g.FAMILIES[1], 2), (g.FAMILIES[2], 4), (g.FAMILIES[3], 4),
    (g.FAMILIES[4], 2), (g.FAMILIES[5], 8), (g.FAMILIES[6], 4),
])
def test_work_counts_multiply_adds_twice(fam, per_step):
    for c in fam.chains:
        assert fam.unroll(c) * c == g.BODY                     # a trip is exactly BODY instructions
        assert g.work(fam, c, threads_total=1000, iters=7) == 1000 * 7 * g.BODY * per_step


def test_work_of_mixes_adds_both_ops():
    mix = next(f for f in g.EXPERIMENTS if f.b is g.F32 and f.a is g.H2)
    for c in mix.chains:
        assert mix.unroll(c) * c * 2 == g.BODY
        assert g.work(mix, c, 10, 1) == 10 * (g.BODY // 2) * (4 + 2)
        assert g.expected_sass(mix, c) == {g.H2: g.BODY // 2, g.F32: g.BODY // 2}
    pipe = next(f for f in g.EXPERIMENTS if f.a is g.H1)
    assert g.expected_sass(pipe, 16) == {g.H1: g.BODY // 2}    # ptxas pairs scalar fp16 FMAs into HFMA2


def test_metric_names_units_and_precisions():
    names = [f.metric for f in ALL]
    assert len(set(names)) == len(names)
    assert {f.metric for f in g.FAMILIES} == {
        "fp64.cuda_core.dfma", "fp32.cuda_core.ffma", "fp16.cuda_core.hfma2", "bf16.cuda_core.hfma2",
        "int32.cuda_core.imad", "int8.cuda_core.dp4a", "int8.cuda_core.dp2a"}
    for f in g.FAMILIES:
        assert f.metric.startswith(f.a.precision + ".cuda_core.")
        assert f.a.unit == ("OP/s" if f.a.precision.startswith("int") else "FLOP/s")
    assert set(g.PRECISIONS) == {f.a.precision for f in g.FAMILIES}


# ---------------------------------------------------------------------------------------------- replays


def test_round_to_bits_matches_ieee_casts():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.25, 4.0, 20000) * rng.choice([-1, 1], 20000)
    assert np.array_equal(g.round_to_bits(x, 24), x.astype(np.float32).astype(np.float64))
    assert np.array_equal(g.round_to_bits(x, 11), x.astype(np.float16).astype(np.float64))
    ties = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11])           # halfway cases round to even
    assert list(g.round_to_bits(ties, 11)) == [1.0, 1 + 2 * 2 ** -10]


def _exact_fma_steps(x0: float, steps: int, bits: int) -> float:
    """Independent replay in rational arithmetic: exact a*x+b, then one round-to-nearest-even."""
    a, b, x = Fraction(g.F_P1), Fraction(g.F_P2), Fraction(x0)
    for _ in range(steps):
        v = a * x + b
        e = v.numerator.bit_length() - v.denominator.bit_length()
        if Fraction(2) ** e > v:
            e -= 1
        q = v / Fraction(2) ** (e - bits + 1)                 # significand scaled to an integer part of `bits` bits
        n, r = divmod(q.numerator, q.denominator)
        if 2 * r > q.denominator or (2 * r == q.denominator and n % 2):
            n += 1
        x = n * Fraction(2) ** (e - bits + 1)
    return float(x)


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
def test_fma_replay_is_a_correctly_rounded_fma(fmt):
    bits = g.SIGNIFICAND_BITS[fmt]
    x0 = g.start_values(g.H2, 8).ravel()
    for steps in (1, 5, 40):
        got = g.replay_fma(x0, g.F_P1, g.F_P2, steps, bits)
        assert list(got) == [_exact_fma_steps(v, steps, bits) for v in x0]


def test_fma_replay_settles_near_the_fixed_point_and_stops():
    x = g.replay_fma(g.start_values(g.F64, 4), g.F_P1, g.F_P2, 10 ** 9, None)   # would hang without the stop
    assert np.allclose(x, 1.5, rtol=1e-14)
    for fmt, op in (("f16", g.H2), ("bf16", g.B2)):
        v = g.from_bits(g.reference(op, 8, 10 ** 7), op)
        ulp = 2.0 ** (1 - g.SIGNIFICAND_BITS[fmt])
        assert np.all(np.abs(v - 1.5) <= 8 * ulp)               # within the rounding band 1/(1-p1) ulp wide


def test_start_values_are_exact_and_distinct():
    for op in (g.F64, g.F32, g.H2, g.B2, g.H1):
        x = g.start_values(op, 32)
        assert np.array_equal(g.from_bits(g.to_bits(x, op), op), x)
        assert len(np.unique(x)) == x.size
    with pytest.raises(ValueError):
        g.to_bits(np.array([[1.0 + 2 ** -10, 1.0]]), g.B2)     # not a bf16 value


def test_params_layout():
    p = g.params(g.H2, 4)
    assert p.dtype == np.uint32 and p.shape == (6,)
    v = g.from_bits(p, g.H2)
    assert np.all(v[0] == g.F_P1) and np.all(v[1] == g.F_P2)
    assert np.array_equal(v[2:], g.start_values(g.H2, 4))
    assert g.params(g.F64, 8).dtype == np.uint64 and g.params(g.H1, 8).dtype == np.uint16
    assert list(g.params(g.I32, 2)[:2]) == [g.I_P1, g.I_P2]


def test_imad_closed_form_matches_stepping():
    x = g.start_values(g.I32, 4)[:, 0].astype(np.uint64)
    for n in range(0, 70):
        assert np.array_equal(g.reference(g.I32, 4, n), x.astype(np.uint32))
        x = (x * np.uint64(g.I_P1) + np.uint64(g.I_P2)) & np.uint64(g.MASK32)
    a, b = g.affine_power(3, 5, 10 ** 12)
    assert 0 <= a <= g.MASK32 and 0 <= b <= g.MASK32


def test_dot_increments_match_numpy_int8():
    a = np.frombuffer(np.uint32(g.DP_P1).tobytes(), np.int8).astype(int)
    b = np.frombuffer(np.uint32(g.DP_P2).tobytes(), np.int8).astype(int)
    assert g.dot_increment(g.DP4A) == int(a @ b)
    h = np.frombuffer(np.uint32(g.DP2_P1).tobytes(), np.int16).astype(int)
    assert g.dot_increment(g.DP2A) == int(h @ b[:2])           # .lo: bytes 0 and 1 of the second operand
    for op in (g.DP4A, g.DP2A):
        x0 = g.start_values(op, 3)[:, 0].astype(np.int64)
        want = ((x0 + 1000 * g.dot_increment(op)) % (1 << 32)).astype(np.uint32)
        assert np.array_equal(g.reference(op, 3, 1000), want)


def test_verify_reports_threads_that_disagree():
    exp = g.reference(g.F32, 4, 50)
    got = np.tile(exp, 10)
    got[7 * 4 + 2] = exp[1]                                       # thread 7 holds another chain's value
    with pytest.raises(VerificationError, match="1 of 10 threads disagree"):
        g.verify(g.F32, got, 4, exp)
    exp = g.reference(g.I32, 4, 10)
    wrong = exp.copy()
    wrong[3] ^= np.uint32(8)                                      # every thread wrong the same way
    with pytest.raises(VerificationError, match="chain 3 of 4"):
        g.verify(g.I32, np.tile(wrong, 3), 4, exp)


@pytest.mark.parametrize("op", [g.F64, g.F32, g.H2, g.B2, g.H1, g.I32, g.DP4A, g.DP2A])
def test_verify_accepts_exact_and_rejects_corruption(op):
    c = 8
    exp = g.reference(op, c, 300)
    good = np.tile(exp, 50)
    assert "values" in g.verify(op, good, c, exp)
    bad = good.copy()
    bad[123] ^= op.raw.type(1 << 9)                              # one flipped significand bit in one thread
    with pytest.raises(VerificationError):
        g.verify(op, bad, c, exp)
    unwritten = good.copy()
    unwritten[-1] = np.iinfo(op.raw).max                        # the sentinel an unwritten element keeps
    with pytest.raises(VerificationError):
        g.verify(op, unwritten, c, exp)


def test_wrong_step_count_is_caught_by_the_short_run():
    for fam in g.FAMILIES:
        c = fam.chains[0]
        u = fam.unroll(c)
        exp = g.reference(fam.a, c, u)
        with pytest.raises(VerificationError):
            g.verify(fam.a, np.tile(g.reference(fam.a, c, u - 1), 4), c, exp)
        # the GPU test runs 2 trips and checks them as 1: that too must differ
        assert not np.array_equal(g.reference(fam.a, c, 2 * u), exp), fam.metric


def test_fp64_tolerance_absorbs_unfused_replay():
    exp = g.reference(g.F64, 4, 200)
    near = (exp.view(np.float64) * (1 + 4e-16)).view(np.uint64)
    assert "ulp" in g.verify(g.F64, np.tile(near, 3), 4, exp)


# ---------------------------------------------------------------------------------------------- kernel source


def test_kernel_source_declares_every_op_and_six_chain_slots():
    src = source(g.KERNEL_FILE)
    for op in {o for f in ALL for o in f.ops}:
        assert re.search(rf"struct {op.struct}\b", src), op.struct
    for i in range(6):
        assert f"#ifdef HWP_C{i}" in src
    assert "#include" not in src                                # NVRTC needs no include path
    for f in ALL:
        opts = f.options()
        assert sum(o.startswith("-DHWP_C") for o in opts) == len(f.chains) <= 6
        assert f"-DHWP_BODY={g.BODY}" in opts


def test_sub_partitions():
    assert g.sub_partitions((9, 0)) == 4 and g.sub_partitions((6, 0)) == 2


# ---------------------------------------------------------------------------------------------- SASS parsing

# Real `cuobjdump -sass` output of an early cuda_core.cu (CUDA 13, nvcc -arch=sm_90 -ftz=true -DHWP_A=OpH2
# -DHWP_BODY=16 -DHWP_C0=4),
# the hex-encoding lines and NOP padding removed.
SASS_SM90_HFMA2 = """
	code for sm_90
	.target	sm_90

		Function : hwp_fma_c4
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                       /* 0x00000a00ff017b82 */
        /*0010*/                   LDC R0, c[0x0][0x230] ;                      /* 0x00008c00ff007b82 */
        /*0060*/                   ISETP.GE.AND P0, PT, R0, 0x1, PT ;           /* 0x000000010000780c */
        /*0070*/                   LDG.E.CONSTANT R9, desc[UR6][R4.64+0x8] ;    /* 0x0000080604097981 */
        /*00b0*/              @!P0 BRA 0x230 ;                                  /* 0x00000000005c8947 */
        /*00f0*/                   UMOV UR4, URZ ;                              /* 0x0000003f00047c82 */
        /*0100*/                   HFMA2.MMA R9, R9, R4.reuse, R7.reuse ;       /* 0x0000000409097235 */
        /*0110*/                   UIADD3 UR4, UR4, 0x1, URZ ;                  /* 0x0000000104047890 */
        /*0120*/                   HFMA2.MMA R13, R13, R4.reuse, R7.reuse ;     /* 0x000000040d0d7235 */
        /*0130*/                   HFMA2 R11, R11, R4.reuse, R7.reuse ;         /* 0x000000040b0b7231 */
        /*0140*/                   HFMA2 R15, R15, R4.reuse, R7.reuse ;         /* 0x000000040f0f7231 */
        /*0150*/                   ISETP.LE.AND P0, PT, R0, UR4, PT ;           /* 0x0000000400007c0c */
        /*0160*/                   HFMA2.MMA R9, R9, R4.reuse, R7.reuse ;       /* 0x0000000409097235 */
        /*0170*/                   HFMA2 R11, R11, R4.reuse, R7.reuse ;         /* 0x000000040b0b7231 */
        /*0180*/                   HFMA2.MMA R13, R13, R4, R7 ;                 /* 0x000000040d0d7235 */
        /*0190*/                   HFMA2 R15, R15, R4, R7 ;                     /* 0x000000040f0f7231 */
        /*01a0*/                   HFMA2 R11, R11, R4.reuse, R7.reuse ;         /* 0x000000040b0b7231 */
        /*01b0*/                   HFMA2 R15, R15, R4.reuse, R7.reuse ;         /* 0x000000040f0f7231 */
        /*01c0*/                   HFMA2.MMA R9, R9, R4.reuse, R7.reuse ;       /* 0x0000000409097235 */
        /*01d0*/                   HFMA2 R11, R11, R4.reuse, R7.reuse ;         /* 0x000000040b0b7231 */
        /*01e0*/                   HFMA2.MMA R13, R13, R4, R7 ;                 /* 0x000000040d0d7235 */
        /*01f0*/                   HFMA2 R15, R15, R4, R7 ;                     /* 0x000000040f0f7231 */
        /*0200*/                   HFMA2.MMA R9, R9, R4.reuse, R7.reuse ;       /* 0x0000000409097235 */
        /*0210*/                   HFMA2.MMA R13, R13, R4, R7 ;                 /* 0x000000040d0d7235 */
        /*0220*/              @!P0 BRA 0x100 ;                                  /* 0xfffffffc00b48947 */
        /*0230*/                   S2UR UR4, SR_CTAID.X ;                       /* 0x00000000000479c3 */
        /*0250*/                   IMAD.WIDE.U32 R2, R17, UR4, R2 ;             /* 0x0000000411027c25 */
        /*0270*/                   LEA R4, P0, R2, UR4, 0x4 ;                   /* 0x0000000402047c11 */
        /*0290*/                   STG.E desc[UR6][R4.64], R9 ;                 /* 0x0000000904007986 */
        /*02d0*/                   EXIT ;                                       /* 0x000000000000794d */
        /*02e0*/                   BRA 0x2e0;                                   /* 0xfffffffc00fc7947 */
		..........
"""

# Same, sm_80, -DHWP_A=OpDP4A -DHWP_BODY=8 -DHWP_C0=4 (an HFMA2.MMA used as a move sits outside the loop).
SASS_SM80_DP4A = """
	code for sm_80
	.target	sm_80

		Function : hwp_fma_c4
	.headerflags	@"EF_CUDA_SM80 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM80)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                         /* 0x00000a0000017a02 */
        /*0080*/                   IMAD.MOV.U32 R3, RZ, RZ, RZ ;                  /* 0x000000ffff037224 */
        /*0150*/              @!P0 BRA 0x240 ;                                    /* 0x000000e000008947 */
        /*0180*/                   HFMA2.MMA R6, -RZ, RZ, 0, 0 ;                  /* 0x00000000ff067435 */
        /*0190*/                   IADD3 R6, R6, 0x1, RZ ;                        /* 0x0000000106067810 */
        /*01a0*/                   IDP.4A.S8.S8 R9, R0, R7, R9 ;                  /* 0x0000000700097226 */
        /*01b0*/                   IDP.4A.S8.S8 R11, R0, R7.reuse, R11 ;          /* 0x00000007000b7226 */
        /*01c0*/                   ISETP.GE.AND P0, PT, R6, c[0x0][0x180], PT ;   /* 0x0000600006007a0c */
        /*01d0*/                   IDP.4A.S8.S8 R13, R0.reuse, R7.reuse, R13 ;    /* 0x00000007000d7226 */
        /*01e0*/                   IDP.4A.S8.S8 R15, R0.reuse, R7.reuse, R15 ;    /* 0x00000007000f7226 */
        /*01f0*/                   IDP.4A.S8.S8 R9, R0.reuse, R7.reuse, R9 ;      /* 0x0000000700097226 */
        /*0200*/                   IDP.4A.S8.S8 R11, R0.reuse, R7.reuse, R11 ;    /* 0x00000007000b7226 */
        /*0210*/                   IDP.4A.S8.S8 R13, R0, R7, R13 ;                /* 0x00000007000d7226 */
        /*0220*/                   IDP.4A.S8.S8 R15, R0, R7, R15 ;                /* 0x00000007000f7226 */
        /*0230*/              @!P0 BRA 0x190 ;                                    /* 0xffffff5000008947 */
        /*0240*/                   STG.E [R2.64], R9 ;                            /* 0x0000000902007986 */
        /*0280*/                   EXIT ;                                         /* 0x000000000000794d */
        /*0290*/                   BRA 0x290;                                     /* 0xfffffff000007947 */
		..........
"""


# sm_120 (CUDA 13, -DHWP_A=OpF32 -DHWP_BODY=8 -DHWP_C0=4): the loop closes with a uniform-predicate BRA.U.
SASS_SM120_FFMA = """
		Function : hwp_fma_c4
	.headerflags	@"EF_CUDA_SM120 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM120)"
        /*00c0*/                   UISETP.GE.AND UP0, UPT, UR4, 0x1, UPT ;  /* 0x000000010400788c */
        /*00d0*/                   BRA.U !UP0, 0x1d0 ;                      /* 0x00000001083c7547 */
        /*0110*/                   UIADD3 UR4, UPT, UPT, -UR4, URZ, URZ ;   /* 0x000000ff04047290 */
        /*0120*/                   UIADD3 UR4, UPT, UPT, UR4, 0x1, URZ ;    /* 0x0000000104047890 */
        /*0130*/                   FFMA R7, R0.reuse, R7, R6.reuse ;        /* 0x0000000700077223 */
        /*0140*/                   FFMA R9, R0.reuse, R9, R6.reuse ;        /* 0x0000000900097223 */
        /*0150*/                   FFMA R11, R0.reuse, R11, R6.reuse ;      /* 0x0000000b000b7223 */
        /*0160*/                   UISETP.NE.AND UP0, UPT, UR4, URZ, UPT ;  /* 0x000000ff0400728c */
        /*0170*/                   FFMA R13, R0.reuse, R13, R6.reuse ;      /* 0x0000000d000d7223 */
        /*0180*/                   FFMA R7, R0.reuse, R7, R6.reuse ;        /* 0x0000000700077223 */
        /*0190*/                   FFMA R9, R0.reuse, R9, R6.reuse ;        /* 0x0000000900097223 */
        /*01a0*/                   FFMA R11, R0.reuse, R11, R6.reuse ;      /* 0x0000000b000b7223 */
        /*01b0*/                   FFMA R13, R0, R13, R6 ;                  /* 0x0000000d000d7223 */
        /*01c0*/                   BRA.U UP0, 0x120 ;                       /* 0xfffffffd00d47547 */
        /*01d0*/                   S2UR UR4, SR_CTAID.X ;                   /* 0x00000000000479c3 */
        /*0270*/                   EXIT ;                                   /* 0x000000000000794d */
"""


def test_parse_functions_arch_and_predicates():
    funcs = sass.parse(SASS_SM90_HFMA2)
    assert list(funcs) == ["hwp_fma_c4"]
    ops = [op for _, op, _ in funcs["hwp_fma_c4"]]
    assert ops[0] == "LDC" and ops[-1] == "BRA" and "EXIT" in ops
    assert ("BRA", "0x100") in [(op, rest) for _, op, rest in funcs["hwp_fma_c4"]]   # "@!P0" dropped
    assert sass.arch(SASS_SM90_HFMA2) == "sm_90" and sass.arch(SASS_SM80_DP4A) == "sm_80"


def test_histogram_counts_with_and_without_modifiers():
    h = sass.opcode_histogram(SASS_SM90_HFMA2, "hwp_fma_c4")
    assert h["HFMA2"] == 16 and h["HFMA2.MMA"] == 8
    assert h["IMAD"] == 1 and h["IMAD.WIDE"] == 1 and h["IMAD.WIDE.U32"] == 1
    loop = sass.opcode_histogram(SASS_SM90_HFMA2, "hwp_fma_c4", loop_only=True)
    assert loop["HFMA2"] == 16 and loop["IMAD"] == 0 and loop["BRA"] == 1
    h80 = sass.opcode_histogram(SASS_SM80_DP4A, loop_only=True)
    assert h80["IDP.4A"] == 8 and h80["IDP.4A.S8.S8"] == 8 and h80["HFMA2"] == 0   # the move is outside
    both = SASS_SM80_DP4A + SASS_SM90_HFMA2.replace("hwp_fma_c4", "hwp_fma_c8")     # two functions, same addresses
    h = sass.opcode_histogram(both, loop_only=True)
    assert h["IDP.4A"] == 8 and h["HFMA2"] == 16 and h["BRA"] == 2
    assert len(sass.loop_body(sass.instructions(both))) == 19                      # never spans two functions


def test_loop_body_is_the_backward_branch_span():
    body = sass.loop_body(sass.instructions(SASS_SM90_HFMA2, "hwp_fma_c4"))
    assert body[0][0] == 0x100 and body[-1][0] == 0x220 and len(body) == 19
    assert sass.loop_body(sass.instructions(SASS_SM90_HFMA2.replace("@!P0 BRA 0x100", "@!P0 BRA 0x300"))) == []
    body = sass.loop_body(sass.instructions(SASS_SM120_FFMA))
    assert (body[0][0], body[-1][0], len(body)) == (0x120, 0x1c0, 11)
    assert sass.arch(SASS_SM120_FFMA) is None and sass.evidence(SASS_SM120_FFMA, None, ("FFMA",)).startswith(
        "SASS ?: 8 FFMA in loop body (11 instr)")


def test_evidence_line_and_presence():
    line = sass.evidence(SASS_SM90_HFMA2, "hwp_fma_c4", ("HFMA2",))
    assert line == "SASS sm_90: 8 HFMA2.MMA + 8 HFMA2 in loop body (19 instr), 0 other arithmetic"
    line = sass.evidence(SASS_SM80_DP4A, "hwp_fma_c4", ("IDP.4A",))
    assert line == "SASS sm_80: 8 IDP.4A.S8.S8 in loop body (11 instr), 1 other arithmetic"  # the IADD3
    assert "0 FFMA" in sass.evidence(SASS_SM80_DP4A, "hwp_fma_c4", ("FFMA",))
    assert sass.has_opcodes(SASS_SM80_DP4A, "hwp_fma_c4", ("IDP.4A",))
    assert not sass.has_opcodes(SASS_SM80_DP4A, "hwp_fma_c4", ("HFMA2",))
    assert "not found" in sass.evidence(SASS_SM80_DP4A, "nope", ("FFMA",))


def test_probe_counts_and_mismatch_detection():
    fam = next(f for f in g.FAMILIES if f.a is g.H2)
    counts = g.sass_counts(SASS_SM90_HFMA2, "hwp_fma_c4", fam)
    assert counts == {g.H2: 16}
    assert g.sass_counts(None, "hwp_fma_c4", fam) is None
    dp4a = next(f for f in g.FAMILIES if f.a is g.DP4A)
    assert g.sass_counts(SASS_SM80_DP4A, "hwp_fma_c4", dp4a) == {g.DP4A: 8}
    assert g.sass_counts(SASS_SM80_DP4A, "hwp_fma_c4", fam) == {g.H2: 0}       # the wrong op is not there


def test_tool_lookup_returns_paths_or_none():
    for found in (sass.find_cuobjdump(), sass.find_nvdisasm()):
        assert found is None or shutil.os.path.isfile(found)
    assert sass.disassemble(b"") is None


def test_can_disassemble_needs_cuobjdump_and_nvdisasm_for_cuda13(monkeypatch, tmp_path):
    fake = tmp_path / "cuobjdump"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    fake.chmod(0o755)
    cases = [(None, None, False), (str(fake), "/x/nvdisasm", True), (str(fake), None, False)]
    for cuobjdump, nvdisasm, want in cases:
        monkeypatch.setattr(sass, "find_cuobjdump", lambda c=cuobjdump: c)
        monkeypatch.setattr(sass, "find_nvdisasm", lambda n=nvdisasm: n)
        sass.can_disassemble.cache_clear()
        assert sass.can_disassemble() is want, (cuobjdump, nvdisasm)
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    sass.can_disassemble.cache_clear()
    assert sass.can_disassemble() is True                       # CUDA 12's cuobjdump disassembles alone
    sass.can_disassemble.cache_clear()


# ---------------------------------------------------------------------------------------------- real SASS

def _nvcc_sass(arch: str, fam: g.Family) -> str:
    nvcc = shutil.which("nvcc")
    if not nvcc or not sass.can_disassemble():
        pytest.skip("needs nvcc and cuobjdump (with nvdisasm for CUDA 13) to build real SASS")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        cu, out = Path(d) / "k.cu", Path(d) / "k.cubin"
        cu.write_text(source(g.KERNEL_FILE))
        subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-std=c++17", "-ftz=true", *fam.options(), str(cu),
                        "-o", str(out)], check=True, capture_output=True, timeout=300)
        text = sass.disassemble(out.read_bytes())
    if text is None:
        pytest.skip("cuobjdump could not disassemble (CUDA 13's cuobjdump -sass needs nvdisasm)")
    return text


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
@pytest.mark.parametrize("fam", ALL, ids=lambda f: f.metric)
def test_every_kernel_issues_the_intended_instruction(arch, fam):
    """Compile the real module like the probe does and count the loop's opcodes in every chain kernel."""
    text = _nvcc_sass(arch, fam)
    for c in fam.chains:
        fn = f"hwp_fma_c{c}"
        assert g.sass_counts(text, fn, fam) == g.expected_sass(fam, c), (fn, sass.evidence(text, fn, ("",)))
        body = [ins for ins in sass.loop_body(sass.instructions(text, fn)) if ins[1] != "NOP"]
        assert len(body) <= sum(g.expected_sass(fam, c).values()) * 1.2 + 6     # little besides the chains
        # (sm_120 pads its slow DFMA with NOPs: they take issue slots the DFMA pipe cannot use anyway)
        # no chain moved to the uniform datapath (sm_120 did that with UFFMA before thread_mask existed)
        assert not [op for _, op, _ in body if op.startswith("U") and op.split(".")[0] in
                    ("UFFMA", "UFMUL", "UFADD", "UIMAD", "UHFMA2")], fn
    if fam.a in (g.H2, g.B2) and fam.b is None:
        h = sass.opcode_histogram(text, f"hwp_fma_c{fam.chains[0]}", loop_only=True)
        # sm_80 has no bf16 HFMA2.MMA; sm_120 (GeForce Blackwell) none at all: FP16 runs at the FP32 rate
        mma_expected = arch == "sm_90" or (arch == "sm_80" and fam.a is g.H2)
        assert (h["HFMA2.MMA"] > 0) == mma_expected


# ---------------------------------------------------------------------------------------------- simulated run

class _FakeArray:
    def __init__(self, a):
        self.a = a

    def fill(self, v):
        self.a.fill(v)

    def get(self):
        return self.a.copy()


class _FakeDevice:
    """Just enough of CuPy for gpu.fma: events on a simulated clock, arrays on numpy, kernels that write the
    replayed values and take time as a device with `sms` SMs issuing one warp-instruction per clock per
    sub-partition would, once `chains x warps` covers the pipeline."""

    def __init__(self, sms=4, mhz=1000.0, fail_struct=None):
        import types

        self.sms, self.mhz, self.now, self.fail_struct, self.launches = sms, mhz, 0.0, fail_struct, []
        dev = self

        class Event:
            def record(self, stream=None):
                self.t = dev.now

            def synchronize(self):
                pass

        stream = types.SimpleNamespace(synchronize=lambda: None)
        self.cuda = types.SimpleNamespace(Event=Event, get_current_stream=lambda: stream,
                                          driver=types.SimpleNamespace(),
                                          get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3)

    def asarray(self, x):
        return _FakeArray(np.array(x))

    def empty(self, n, dtype):
        return _FakeArray(np.empty(n, dtype))

    def load(self, name, options=()):
        import types

        fam = next(f for f in ALL if f.options() == options)
        if self.fail_struct == fam.a.struct:
            raise RuntimeError("simulated NVRTC failure")
        return types.SimpleNamespace(get_function=lambda fn: _FakeKernel(self, fam, int(fn.rsplit("_c", 1)[1])))


class _FakeKernel:
    def __init__(self, dev, fam, chains):
        self.dev, self.fam, self.chains = dev, fam, chains
        self.num_regs = 16 + chains * (2 if fam.a.fmt == "f64" else 1) * len(fam.ops)

    def __call__(self, grid, block, args):
        oa, pa, ob, pb, iters, thread_mask = args
        assert int(thread_mask) == 0
        fam, c = self.fam, self.chains
        threads = grid[0] * block[0]
        u = fam.unroll(c)
        for op, out, p in ((fam.a, oa, pa), (fam.b, ob, pb)):
            if op is None:
                continue
            assert np.array_equal(p.a, g.params(op, c)) and out.a.size == threads * c
            out.a[:] = np.tile(g.reference(op, c, int(iters) * u), threads)
        warps_per_smsp = grid[0] // self.dev.sms * block[0] / 32 / 4
        efficiency = min(1.0, warps_per_smsp * c / 32)
        warp_instr = threads / 32 * int(iters) * sum(g.expected_sass(fam, c).values())
        self.dev.now += 5e-6 + warp_instr / (self.dev.sms * 4 * self.dev.mhz * 1e6 * efficiency)
        self.dev.launches.append((c, grid[0] // self.dev.sms, int(iters)))


def _simulated_run(monkeypatch, fake, cc=(9, 0), **params):
    import sys

    import hwprobe.kernels
    from hwprobe.device import GpuInfo
    from hwprobe.probes.base import ProbeContext
    from hwprobe.timing import NullSampler

    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(hwprobe.kernels, "load", fake.load)
    dev = GpuInfo(index=0, name="sim", cc_major=cc[0], cc_minor=cc[1], sms=fake.sms, l2_bytes=0, mem_bytes=0,
                  mem_clock_mhz=None, bus_width_bits=None, sm_clock_max_mhz=fake.mhz, regs_per_sm=65536,
                  max_threads_per_sm=2048)
    ctx = ProbeContext(target="gpu", device=dev, sampler=NullSampler(), probe_name="gpu.fma", quick=True)
    return list(g.run(ctx, **params))


def test_simulated_run_measures_verifies_and_reports_ipc(monkeypatch):
    fake = _FakeDevice()
    out = _simulated_run(monkeypatch, fake)
    got = {m.metric: m for m in out}
    assert [m.metric for m in out if not m.metric.endswith(".ipc")] == [f.metric for f in ALL]
    for fam in ALL:
        m = got[fam.metric]
        assert m.verified and m.valid and not m.flags, (m.metric, m.flags, m.notes)
        assert m.kind == ("sweep" if fam.experiment else "compute")
        assert m.params["chains"] * m.params["blocks_per_sm"] * 8 / 4 >= 32            # the search found full rate
        planned = len(S.plan(fam.chains, quick=True))
        assert 1 <= len(m.params["search"]) <= planned
        if len(m.params["search"]) < planned:                                       # fp64 c16 x 8 blocks
            assert any(n.startswith("not run (exceed residency)") for n in m.notes), m.notes
        ipc = got[fam.metric + ".ipc"]
        assert ipc.value == pytest.approx(1.0, rel=0.02) and ipc.unit == "warp-instr/clk/SMSP"
        if not fam.experiment:
            per_clk_sm = 4 * 32 * fam.flops_per_trip(m.params["chains"]) / sum(
                g.expected_sass(fam, m.params["chains"]).values())
            assert m.value == pytest.approx(fake.sms * fake.mhz * 1e6 * per_clk_sm, rel=0.02)
            assert m.unit == fam.a.unit and m.precision == fam.a.precision and m.exec_unit == "cuda_core"
        assert m.stats.median_s >= 2e-3                                                # quick target: ~3 ms
    mix = got["experiment.cuda_core.hfma2_ffma_mix"]
    assert set(mix.params["flop_per_s"]) == {"hfma2", "ffma"}


def test_simulated_run_isolates_failures_and_skips_old_archs(monkeypatch):
    out = _simulated_run(monkeypatch, _FakeDevice(fail_struct="OpF64"), precisions=("fp64", "fp32"),
                         experiments=False)
    assert [(m.metric, m.kind) for m in out] == [("fp64.cuda_core.dfma", "info"), ("fp32.cuda_core.ffma", "compute")]
    assert out[0].status == "error" and "simulated NVRTC failure" in out[0].reason
    out = _simulated_run(monkeypatch, _FakeDevice(), cc=(7, 5), precisions=("bf16",), experiments=False)
    assert len(out) == 1 and out[0].kind == "info" and out[0].status == "skipped"
    assert out[0].reason == "needs sm_80, device is sm_75"


def test_simulated_single_config(monkeypatch):
    fake = _FakeDevice()
    out = _simulated_run(monkeypatch, fake, precisions=("int8",), search=False, experiments=False)
    assert [m.metric for m in out] == ["int8.cuda_core.dp4a", "int8.cuda_core.dp2a"]
    assert all(len(m.params["search"]) == 1 and m.params["chains"] == 8 for m in out)


def test_a_sass_mismatch_invalidates_the_figure(monkeypatch):
    """A loop whose SASS is not the intended instruction count is no figure of that instruction (issue 9)."""
    assert g.sass_flags(None, {g.F32: 512}) == [] and g.sass_flags({g.F32: 512}, {g.F32: 512}) == []
    assert g.sass_flags({g.F32: 256}, {g.F32: 512}) == [
        "sass_mismatch: SASS per trip found 256 ffma, expected 512 ffma"]
    # the run: the canned SASS has HFMA2 where FFMA is expected (every chain kernel name resolves to it)
    monkeypatch.setattr(g.sass, "once_of", lambda file, options: SASS_SM90_HFMA2.replace("hwp_fma_c4", "hwp_fma_c8"))
    out = _simulated_run(monkeypatch, _FakeDevice(), precisions=("fp32",), search=False, experiments=False)
    m = out[0]
    assert m.metric == "fp32.cuda_core.ffma" and m.verified is True
    assert m.flags == ["sass_mismatch: SASS per trip found 0 ffma, expected 512 ffma"]
    assert not m.valid and m.status == "invalid" and m.reason == m.flags[0]


def test_the_check_says_what_it_proves():
    # floats settle to the fixed point long before a timed launch ends: the note says so, with the step
    text = g.what_is_checked(g.F32, 8, 151616)
    steps = int(text.split("settle after ")[1].split(" ")[0])
    assert 100 < steps < 1000 and "not the count" in text
    assert g.what_is_checked(g.F32, 8, 64).startswith("step count exact")   # one trip: still moving
    assert g.what_is_checked(g.I32, 8, 151616).startswith("step count exact")
    assert g.what_is_checked(g.DP4A, 8, 151616).startswith("step count exact")
