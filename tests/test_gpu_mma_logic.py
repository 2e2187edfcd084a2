"""CPU tests of the Tensor Core instruction probes: support rules, work counts, operand encodings, PTX
fragment layouts, the output check, calibration, the configuration search and the SASS evidence."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from hwprobe.device import GpuInfo
from hwprobe.errors import VerificationError
from hwprobe.kernels import source
from hwprobe.probes.base import _REGISTRY, ProbeContext
from hwprobe.probes.compute import mma as g
from hwprobe.probes.compute import mma_clock as mc

# ---------------------------------------------------------------- support rules


def test_support_rules_per_arch():
    all_mma = {("mma_sync", p) for p in g.MMA_SYNC_PRECISIONS}
    all_wg = {("wgmma", p) for p in g.WGMMA_PRECISIONS}
    assert g.supported((7, 5)) == frozenset()
    assert g.supported((8, 0)) == all_mma - {("mma_sync", "fp8")}
    assert g.supported((8, 6)) == all_mma - {("mma_sync", "fp8")}
    assert g.supported((8, 9)) == all_mma
    assert g.supported((9, 0)) == (all_mma - {("mma_sync", "fp8"), ("mma_sync", "int4")}) | all_wg
    assert g.supported((10, 0)) == all_mma - {("mma_sync", "fp8"), ("mma_sync", "int4")}
    assert g.supported((12, 0)) == all_mma - {("mma_sync", "int4")}


def test_skip_reasons_name_the_requirement_and_the_device():
    assert g.skip_reason("mma_sync", "fp8", (8, 0)) == "fp8 mma.sync needs sm_89+, device is sm_80"
    assert g.skip_reason("wgmma", "fp16", (8, 9)) == "wgmma needs sm_90a (Hopper), device is sm_89"
    bf16_xavier = g.skip_reason("mma_sync", "bf16", (7, 2))
    assert "sm_80+" in bf16_xavier and "device is sm_72" in bf16_xavier
    assert "F2FP + HMMA" in g.skip_reason("mma_sync", "fp8", (9, 0))
    assert "IMMA.16832.S8.S8" in g.skip_reason("mma_sync", "int4", (9, 0))
    assert g.skip_reason("mma_sync", "int4", (8, 7)) is None
    with pytest.raises(ValueError):
        g.skip_reason("wmma", "fp16", (9, 0))


class _Log:
    def __init__(self):
        self.lines = []

    def __call__(self, msg):
        self.lines.append(msg)


def _gpu(cc):
    return GpuInfo(index=0, name="fake", cc_major=cc[0], cc_minor=cc[1], sms=108, l2_bytes=40 << 20,
                   mem_bytes=80 << 30, mem_clock_mhz=1593.0, bus_width_bits=5120, sm_clock_max_mhz=1410.0)


def test_unsupported_points_become_info_measurements_without_touching_the_gpu():
    log = _Log()
    ctx = ProbeContext(target="gpu", device=_gpu((8, 0)), sampler=None, probe_name="gpu.wgmma", log=log)
    out = list(g.run_wgmma(ctx))
    assert [m.metric for m in out] == [v.metric for v in g.VARIANTS if v.api == "wgmma"]
    for m in out:
        assert m.kind == "info" and m.exec_unit == "tensor_core" and m.path == "instruction"
        assert m.status == "skipped" and m.reason == "wgmma needs sm_90a (Hopper), device is sm_80"
    assert {m.precision for m in out} == {"fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "int8"}
    assert len(log.lines) == len(out)
    ctx.probe_name = "gpu.mma_sync"
    fp8 = list(g.run_mma_sync(ctx, precisions=("fp8",)))
    assert [(m.precision, m.status, m.reason) for m in fp8] == [
        ("fp8_e4m3", "skipped", "fp8 mma.sync needs sm_89+, device is sm_80"),
        ("fp8_e5m2", "skipped", "fp8 mma.sync needs sm_89+, device is sm_80"),
    ]


def test_probes_are_registered_with_their_parameters():
    assert _REGISTRY["gpu.mma_sync"].params() == {"precisions": g.MMA_SYNC_PRECISIONS}
    assert _REGISTRY["gpu.wgmma"].params() == {"precisions": g.WGMMA_PRECISIONS}
    assert _REGISTRY["gpu.wgmma"].target == "gpu" and _REGISTRY["gpu.wgmma"].family == "compute"
    for api, precs in (("mma_sync", g.MMA_SYNC_PRECISIONS), ("wgmma", g.WGMMA_PRECISIONS)):
        assert {v.precision for v in g.variants(api)} == set(precs)


# ---------------------------------------------------------------- metrics and work


def test_metric_names_units_and_precisions():
    names = {v.metric for v in g.VARIANTS}
    assert len(names) == len(g.VARIANTS)
    assert "fp16.tensor_core.mma_sync.f32acc" in names and "fp16.tensor_core.mma_sync.f16acc" in names
    assert "fp8_e5m2.tensor_core.wgmma.f32acc" in names and "int8.tensor_core.wgmma.s32acc" in names
    for v in g.VARIANTS:
        assert v.unit == ("OP/s" if v.precision in ("int8", "int4") else "FLOP/s")
        assert v.metric_precision in ("fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "int8", "int4", "fp64")


def test_work_is_two_mnk_per_instruction_times_count():
    by = {v.metric: v for v in g.VARIANTS}
    v = by["fp16.tensor_core.mma_sync.f32acc"]
    assert v.ops_per_instruction == 2 * 16 * 8 * 16
    assert g.ops_per_iteration(v) == g.CHAINS * 4096
    assert by["int4.tensor_core.mma_sync.s32acc"].ops_per_instruction == 2 * 16 * 8 * 64
    assert by["fp64.tensor_core.mma_sync.f64acc"].ops_per_instruction == 2 * 8 * 8 * 4
    w = by["fp16.tensor_core.wgmma.f32acc"]
    assert w.ops_per_instruction == 2 * 64 * 256 * 16 and g.ops_per_iteration(w) == g.KSTEPS * 524288
    assert by["fp8_e4m3.tensor_core.wgmma.f32acc"].ops_per_instruction == 2 * 64 * 256 * 32
    assert by["tf32.tensor_core.wgmma.f32acc"].ops_per_instruction == 2 * 64 * 256 * 8
    assert by["fp64.tensor_core.mma_sync.f64acc.m16n8k16"].ops_per_instruction == 2 * 16 * 8 * 16


def test_launch_geometry_counts_warps_and_warpgroups():
    by = {v.metric: v for v in g.VARIANTS}
    assert g.geometry(by["fp16.tensor_core.mma_sync.f32acc"], (256, 2), 132) == (264, 256, 2112)
    wg = by["bf16.tensor_core.wgmma.f32acc"]
    assert g.geometry(wg, ("rs_sw128", 2), 132) == (264, 128, 264)    # wgmma.cu: one warpgroup per CTA
    assert g.geometry(wg, ("ss_nosw", 2), 132, grid=2) == (2, 128, 2)
    assert {form for form, _ in g.WGMMA_CONFIGS} == set(g.WGMMA_FORMS)
    assert g.kernel_name(wg, ("ss_sw128", 1)) == "wgmma_bf16_f32acc_ss_sw128"
    assert g.config_label(("rs_sw128", 2)) == "rs_sw128, 128 threads x 2 blocks/SM"


def test_per_clock_rate_and_kernel_clock():
    # two CTAs per SM, each 4 x m64n256k16 (4 x 524288 ops) per iteration, 1000 iterations in 1.0e6 cycles
    assert g.per_clock(4 * 524288 * 1000, 2, 1.0e6) == pytest.approx(4194.304)


# ---------------------------------------------------------------- clock accounting (mma_clock)

MHZ = 1980.0
PEAK_PER_CLK = 132 * 4096 * 1e6        # FLOP/s per MHz of a 132-SM Hopper, FP16 dense (2048 FMA/clk/SM x 2)


def _stamps(durations_ns, mhz=MHZ, start_ns=1_000_000, offsets_ns=None):
    """Per-CTA stamps of one launch: CTA i runs durations_ns[i] ns (from start + offsets_ns[i]) at ``mhz``."""
    offsets_ns = offsets_ns or [0] * len(durations_ns)
    rows = []
    for d, o in zip(durations_ns, offsets_ns, strict=True):
        cyc = round(d * mhz / 1e3)
        rows.append([5_000_000, 5_000_000 + cyc, start_ns + o, start_ns + o + d, cyc - 2000, d - 1000])
    return np.array([rows], dtype=np.float64)


def _peak(clk):
    return PEAK_PER_CLK * (clk or MHZ)


def test_a_straggler_is_lost_efficiency_not_a_lower_clock():
    # The launch's event time is twice CTA 0's loop; NVML and globaltimer both say 1980 MHz.
    # CTA 3 straggles to twice the others' time. Work: what 132 SMs do at full rate in T = 10 ms at 1980 MHz.
    t = 10_000_000
    st = _stamps([t, t, t, 2 * t])
    work = _peak(MHZ) * t * 1e-9
    lc = mc.launch_clocks(st, [2 * t * 1e-9])
    assert lc.kernel_mhz == [pytest.approx(MHZ, rel=1e-6)]              # the clock stays 1980, never 990
    assert lc.busy_share == [pytest.approx(0.5)]                        # the median CTA ran half the span
    vd = mc.verdict(lc, work, MHZ, _peak, ops_per_cta=1.0, ctas_per_sm=1, sms=132)
    assert vd.params["kernel_sm_mhz"] == [pytest.approx(MHZ, abs=0.1)]
    assert vd.params["pct_at_clock"]["kernel"] == pytest.approx(0.5, rel=1e-3)   # the shortfall is efficiency
    assert vd.params["pct_at_clock"]["nvml"] == pytest.approx(0.5, rel=1e-3)
    assert vd.value == pytest.approx(work / (2 * t * 1e-9))
    assert vd.params["theory_clock_source"] == "kernel"
    assert vd.flags == []                                   # every clock and both timers agree: nothing to flag
    assert "the median CTA ran 50% of the span" in vd.notes[0]


def test_a_second_wave_raises_no_clock_flag():
    # Issue 23: 264 CTAs on 132 SMs at one CTA per SM run as two back-to-back waves of 5 ms each; globaltimer
    # and events agree within 0.1% (the committed H100 mma.sync FP64 record: span 9.989 ms, events 9.992 ms).
    # The old "event clock" (one CTA's cycles over the launch's event time) read 990 MHz here and raised
    # clock_disagreement; the SMs ran at 1980 MHz throughout.
    half = 5_000_000
    st = _stamps([half] * 264, offsets_ns=[0] * 132 + [half] * 132)
    event = 2 * half * 1.0003e-9
    lc = mc.launch_clocks(st, [event])
    vd = mc.verdict(lc, _peak(MHZ) * 2 * half * 1e-9, MHZ, _peak, ops_per_cta=1.0, ctas_per_sm=1, sms=132)
    assert lc.kernel_mhz == [pytest.approx(MHZ, rel=1e-6)]
    assert vd.flags == []
    assert vd.params["pct_at_clock"] == {"kernel": pytest.approx(1.0, rel=1e-3), "nvml": pytest.approx(1.0, rel=1e-3),
                                         "max": pytest.approx(1.0, rel=1e-3)}
    assert vd.params["event_over_span"] == pytest.approx(1.0003, rel=1e-6)
    assert "event" not in vd.params["clocks_mhz"]


def test_event_time_far_off_the_span_is_a_timer_flag_not_a_clock():
    t = 10_000_000
    lc = mc.launch_clocks(_stamps([t] * 4), [1.2 * t * 1e-9])      # 20% of the launch outside every CTA
    vd = mc.verdict(lc, 1e12, MHZ, _peak, ops_per_cta=1.0, ctas_per_sm=1, sms=132)
    assert [f.split(":")[0] for f in vd.flags] == ["timer_disagreement"]
    assert "event 12.000 vs span 10.000 ms" in vd.flags[0]


def test_clocks_that_agree_raise_no_flag_and_give_the_rate_over_the_span():
    t = 10_000_000
    st = _stamps([t] * 4, offsets_ns=[0, 3000, 1000, 2000])          # CTAs start a few us apart
    lc = mc.launch_clocks(st, [(t + 3000 + 5000) * 1e-9])               # 5 us of launch overhead on top
    vd = mc.verdict(lc, 1e12, 1970.0, _peak, ops_per_cta=1.0, ctas_per_sm=1, sms=132)
    assert vd.flags == []
    assert vd.params["span_s"] == pytest.approx((t + 3000) * 1e-9)
    assert vd.value == pytest.approx(1e12 / ((t + 3000) * 1e-9))
    assert vd.params["rate_event"] < vd.value                           # the event time holds the overhead too
    assert set(vd.params["pct_at_clock"]) == {"kernel", "nvml", "max"}


def test_launches_with_missing_stamps_are_left_out():
    st = np.concatenate([_stamps([10_000]), np.zeros((1, 1, mc.CLK_FIELDS))])
    lc = mc.launch_clocks(st, [1e-5, 1e-5])
    assert len(lc.span_s) == 1 and bool(lc)
    assert not mc.launch_clocks(np.zeros((0, 4, mc.CLK_FIELDS)), [])


@pytest.mark.parametrize("clocks,flag", [
    ({"kernel": 1800, "nvml": 1980}, True),         # the H200's offset: NVML 10% above the kernel
    ({"kernel": 1800, "nvml": 1845}, False),        # within 3%
    ({"kernel": 1800, "nvml": None}, False),
])
def test_disagreement_over_three_percent(clocks, flag):
    f = mc.disagreement(clocks)
    assert (f is not None) == flag
    if flag:
        assert "kernel cycles/globaltimer 1800 MHz" in f and "NVML 1980 MHz" in f


# ---------------------------------------------------------------- the timed launch's own output


def test_timed_counts():
    mma = _by_metric("fp16.tensor_core.mma_sync.f16acc")
    wg = _by_metric("fp16.tensor_core.wgmma.f16acc")
    assert [g.timed_count(mma, n, g.MAX_ITERS) for n in (1, 2, 3, 1000, 1001)] == [8, 0, 8, 0, 8]
    assert g.odd(1000) == 1001 and g.odd(7) == 7
    assert [g.timed_count(wg, n, 8) for n in (1, 8, 9, 16, 17, 16618)] == [1, 8, 1, 8, 1, 2]
    assert g.verify_count(wg) == g.VERIFY_ITERS and g.verify_count(mma) == g.CHAINS


@pytest.mark.parametrize("v", g.VARIANTS, ids=lambda v: v.metric)
def test_reset_period_keeps_every_partial_sum_exact(v):
    a, bt = g.inputs(v)
    r = g.reset_period(v, a, bt)
    bound = int((np.abs(a) @ np.abs(bt).T).max())
    if v.api == "mma_sync":
        assert r == g.MAX_ITERS and g.CHAINS * bound <= g.acc_exact(v)
    else:
        assert 1 <= r and r * bound <= g.acc_exact(v) < (r + 1) * bound
    # the H200's old timed FP16-accumulate launch: 16618 iterations without a reset reach far past FP16's range
    if v.acc == "f16" and v.api == "wgmma":
        assert r <= 16 and 16618 * int(np.abs(a @ bt.T).max()) > 65504


def test_fp16_accumulation_without_a_reset_overflows_and_the_timed_check_says_so():
    v = _by_metric("fp16.tensor_core.wgmma.f16acc")
    a, bt = g.inputs(v)
    r = g.reset_period(v, a, bt)
    good = g.reference(a, bt, g.timed_count(v, 16618, r))
    msg = g.check_timed(v, _fake_kernel_output(v, good, 2), 2, a, bt, g.timed_count(v, 16618, r))
    assert "exact" in msg and "none inf or NaN" in msg
    # what the old kernel wrote: 16618 x (A @ B) in FP16 (inf wherever |A @ B| > 3)
    old = _fake_kernel_output(v, g.reference(a, bt, 16618), 2)
    with pytest.raises(VerificationError, match="inf or NaN"):
        g.check_timed(v, old, 2, a, bt, 16618)
    # a finite but wrong count fails too (one reset period more)
    with pytest.raises(VerificationError, match="differ"):
        g.check_timed(v, _fake_kernel_output(v, g.reference(a, bt, r), 2), 2, a, bt, r - 1)


def test_mma_sync_packs_minus_b_beside_b():
    v = _by_metric("fp16.tensor_core.mma_sync.f32acc")
    a, bt = g.inputs(v)
    pa, pb = g.pack(v, a, bt)
    halves = pb.view(np.float16).astype(np.float64)
    assert pb.shape[0] == 64 and np.array_equal(halves[32:], -halves[:32]) and np.abs(halves).max() == 3


def _by_metric(metric):
    return next(v for v in g.VARIANTS if v.metric == metric)


# ---------------------------------------------------------------- encodings


def test_fp8_codes():
    assert [g.fp8_code(x, "e4m3") for x in (1.0, 2.0, -1.0, 3.0, 0.5, 0.0, 448.0)] == [
        0x38, 0x40, 0xB8, 0x44, 0x30, 0x00, 0x7E]
    assert [g.fp8_code(x, "e5m2") for x in (1.0, 2.0, -3.0, 0.25, 57344.0)] == [0x3C, 0x40, 0xC2, 0x34, 0x7B]
    assert g.fp8_code(2.0 ** -9, "e4m3") == 0x01            # smallest subnormal
    for bad, fmt in ((1.0625, "e4m3"), (4.5, "e5m2"), (480.0, "e4m3"), (1e6, "e5m2")):
        with pytest.raises(ValueError):
            g.fp8_code(bad, fmt)


def test_encode_formats():
    v = np.array([[1, -2], [3, 0]])
    assert g.encode(v, "fp16").tolist() == [[0x3C00, 0xC000], [0x4200, 0x0000]]
    assert g.encode(v, "bf16").tolist() == [[0x3F80, 0xC000], [0x4040, 0x0000]]
    assert g.encode(v, "tf32").tolist() == [[0x3F800000, 0xC0000000], [0x40400000, 0]]
    assert g.encode(np.array([-1, 7, -8]), "s4").tolist() == [0xF, 0x7, 0x8]
    assert g.encode(np.array([-100, 100]), "s8").tolist() == [0x9C, 0x64]
    assert g.encode(v, "e4m3").tolist() == [[0x38, 0xC0], [0x44, 0x00]]
    with pytest.raises(ValueError):
        g.encode(np.array([8]), "s4")
    with pytest.raises(ValueError):
        g.encode(np.array([4097]), "fp16")


def test_verification_inputs_are_exact_and_fp16_accumulation_cannot_round():
    for v in g.VARIANTS:
        a, bt = g.inputs(v)
        k = g.k_total(v)
        assert k == v.shape[2] * (g.KSTEPS if v.api == "wgmma" else 1)
        assert a.shape == (v.shape[0], k) and bt.shape == (v.shape[1], k)
        assert len(np.unique(a)) > 3 and len(np.unique(bt)) > 3        # non-uniform
        for form in g.WGMMA_FORMS if v.api == "wgmma" else ("",):
            g.pack(v, a, bt, form) if form else g.pack(v, a, bt)       # encode raises if inexact
        bound = g.verify_count(v) * k * max(abs(v.lo), v.hi) ** 2
        assert bound <= {"f16": 2048, "f32": 2 ** 24, "s32": 2 ** 31 - 1, "f64": 2 ** 53}[v.acc]
        assert -v.lo <= v.hi or v.in_fmt not in ("s8", "s4")   # -B must be exact too (mma.sync's odd steps)


# ---------------------------------------------------------------- fragment layouts


def _covers_once(fmap, rows, cols):
    seen = Counter(map(tuple, fmap.reshape(-1, 2).tolist()))
    return set(seen) == {(r, c) for r in range(rows) for c in range(cols)} and set(seen.values()) == {1}


@pytest.mark.parametrize("fmt,k", [("fp16", 16), ("bf16", 16), ("tf32", 8), ("s8", 32), ("e4m3", 32), ("s4", 64)])
def test_mma_maps_are_bijections(fmt, k):
    assert _covers_once(g.mma_a_map(fmt), 16, k)
    assert _covers_once(g.mma_b_map(fmt), k, 8)
    assert _covers_once(g.mma_c_map(fmt), 16, 8)


def test_mma_maps_match_the_ptx_isa_tables():
    # lane 5: groupID 1, threadID_in_group 1
    a = g.mma_a_map("fp16")
    assert [tuple(a[5, i]) for i in (0, 1, 2, 3, 4, 6, 7)] == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (9, 10),
                                                                (9, 11)]
    assert tuple(g.mma_a_map("tf32")[6, 3]) == (9, 6)                  # a3: (g+8, t+4), lane 6 = (1, 2)
    assert tuple(g.mma_a_map("s8")[7, 9]) == (1, 12 + 1 + 16)          # a9: row g, col 4t + 1 + 16
    assert tuple(g.mma_a_map("s4")[31, 31]) == (15, 24 + 7 + 32)       # a31: row g+8, col 8t + 7 + 32
    assert tuple(g.mma_b_map("fp16")[5, 3]) == (2 + 1 + 8, 1)          # b3: k = 2t + 1 + 8, n = g
    assert tuple(g.mma_b_map("s8")[7, 5]) == (12 + 1 + 16, 1)
    assert tuple(g.mma_b_map("tf32")[6, 1]) == (2 + 4, 1)
    assert tuple(g.mma_c_map("fp16")[5, 3]) == (9, 3)
    # m8n8k4 f64, lane 13 = (3, 1): A (g, t), B (t, g), C (g, 2t + i)
    assert tuple(g.mma_a_map("f64")[13, 0]) == (3, 1)
    assert tuple(g.mma_b_map("f64")[13, 0]) == (1, 3)
    assert [tuple(x) for x in g.mma_c_map("f64", 8)[13]] == [(3, 2), (3, 3)]
    assert _covers_once(g.mma_a_map("f64"), 8, 4) and _covers_once(g.mma_c_map("f64", 8), 8, 8)
    # m16n8k16 f64 (PTX ISA: a_i at (g + 8*(i%2), t + 4*(i//2)), b_i at (t + 4i, g), c as m16n8)
    assert _covers_once(g.mma_a_map("f64", 16), 16, 16) and _covers_once(g.mma_b_map("f64", 16), 16, 8)
    assert tuple(g.mma_a_map("f64", 16)[13, 7]) == (3 + 8, 1 + 12)
    assert tuple(g.mma_b_map("f64", 16)[13, 2]) == (1 + 8, 3)
    assert _covers_once(g.mma_c_map("f64", 16), 16, 8)


def test_wgmma_accumulator_map():
    d = g.wgmma_d_map()
    assert d.shape == (128, 128, 2) and _covers_once(d, 64, 256)
    assert tuple(d[37, 6]) == (16 + 1 + 8, 8 + 2)                      # warp 1, lane 5, element 6
    assert tuple(d[0, 127]) == (8, 249)


def test_pack_lanes_puts_the_first_element_in_the_low_bits():
    v = next(x for x in g.VARIANTS if x.metric == "fp16.tensor_core.mma_sync.f32acc")
    a, bt = g.inputs(v)
    pa, _ = g.pack(v, a, bt)
    codes = g.encode(a, "fp16")
    lane = 5                                  # a0 = A[1, 2], a1 = A[1, 3]
    assert int(pa[lane, 0]) == int(codes[1, 2]) | (int(codes[1, 3]) << 16)
    v4 = next(x for x in g.VARIANTS if x.in_fmt == "s4")
    a4, bt4 = g.inputs(v4)
    pa4, _ = g.pack(v4, a4, bt4)
    word = int(pa4[0, 0])                     # lane 0, register 0: A[0, 0..7], one nibble each
    assert [((word >> (4 * j)) & 0xF) for j in range(8)] == [int(x) & 0xF for x in a4[0, :8]]


@pytest.mark.parametrize("swizzle", [False, True])
def test_smem_image_layout(swizzle):
    off = g.kmajor_offsets(64, 64, 2, swizzle)                          # 64 rows x 128 bytes of fp16
    assert sorted(off.ravel().tolist()) == list(range(0, 8192, 2))
    if swizzle:                                                         # chunk 1 of row 9 -> chunk 1 ^ 1 = 0
        assert off[9, 9] == 1024 + 1 * 128 + 0 * 16 + 2
        assert off[3, 0] == 3 * 128 + 3 * 16                            # row 3, chunk 0 -> chunk 3
    else:
        assert off[9, 9] == 1024 + 1 * 128 + 1 * 16 + 2
        assert off[0, 8] == g.CORE_BYTES and off[8, 0] == g.SLAB_BYTES
    codes = np.arange(64 * 64, dtype=np.uint64).reshape(64, 64) * 7 % 65536
    img = g.smem_image(codes, 16, swizzle).view(np.uint8)
    back = img[off].astype(np.uint64) | (img[off + 1].astype(np.uint64) << 8)
    assert np.array_equal(back, codes)
    with pytest.raises(ValueError):
        g.kmajor_offsets(8, 65, 2, swizzle)


@pytest.mark.parametrize("fmt", ["fp16", "tf32", "s8"])
def test_wgmma_a_fragments_hold_each_warps_rows_per_k_slice(fmt):
    bits = g.BITS[fmt]
    k = 256 // bits                                                     # one 32-byte K slice
    codes = (np.arange(64 * 4 * k, dtype=np.uint64).reshape(64, 4 * k) * 3) % (1 << bits)
    frag = g.wgmma_a_fragments(codes, fmt)
    assert frag.shape == (128, g.KSTEPS, 4)
    amap = g.mma_a_map(fmt)
    for tid, s in ((37, 2), (127, 3)):                                  # warp 1 lane 5; warp 3 lane 31
        w, lane = divmod(tid, 32)
        sub = codes[16 * w:16 * w + 16, s * k:(s + 1) * k]
        want = g.pack_lanes(sub, amap, bits)[lane]
        assert np.array_equal(frag[tid, s], want)


# ---------------------------------------------------------------- the output check


def _fake_kernel_output(v, d, units):
    """What a correct kernel writes: the inverse of unpack (the accumulator layout, then the store order)."""
    regs = g.n_acc_regs(v)
    dmap = g.wgmma_d_map() if v.api == "wgmma" else g.mma_c_map(v.in_fmt, v.shape[0])
    vals = np.broadcast_to(d[dmap[..., 0], dmap[..., 1]], (units, *dmap.shape[:2]))
    if v.acc == "f16":   # what an FP16 accumulator holds (inf past its range, as on the GPU)
        with np.errstate(over="ignore"):
            vals = np.ascontiguousarray(vals.astype(np.float16)).view(np.uint32)
    else:
        vals = vals.astype(g.ACC_DTYPE[v.acc])
    if v.api == "wgmma":
        vals = vals.transpose(0, 2, 1)
    assert vals.shape[-1] == (128 if v.api == "wgmma" else regs)
    return np.ascontiguousarray(vals).ravel()


@pytest.mark.parametrize("v", g.VARIANTS, ids=lambda v: v.metric)
def test_check_accepts_the_right_layout_and_rejects_a_wrong_one(v):
    a, bt = g.inputs(v)
    want = g.reference(a, bt, g.verify_count(v))
    out = _fake_kernel_output(v, want, units=3)
    g.compare(g.unpack(v, out, 3), want)
    wrong = out.reshape(3, -1).copy()
    wrong[1] = np.roll(wrong[1], 1)           # unit 1 with its registers shifted by one
    with pytest.raises(VerificationError, match="unit 1"):
        g.compare(g.unpack(v, wrong.ravel(), 3), want)
    swapped = g.reference(a, bt[::-1], g.verify_count(v))    # B columns reversed: another layout's answer
    with pytest.raises(VerificationError):
        g.compare(g.unpack(v, _fake_kernel_output(v, swapped, 1), 1), want)


# ---------------------------------------------------------------- calibration and search


def test_calibrate_reaches_the_target_with_a_mocked_timer():
    calls = []

    def timer(n):
        calls.append(n)
        return 20e-6 + n * 1e-6               # 20 us fixed cost, 1 us per iteration

    iters = g.calibrate(timer, 0.010)
    assert 9000 <= iters <= 10000
    assert calls[0] == 16 and calls == sorted(calls) and len(calls) < 8
    assert g.calibrate(lambda n: 1.0, 0.010) == 1       # one launch already too long: 1 iteration
    assert g.calibrate(lambda n: 0.0, 0.010, hi=1000) == 1000


def test_search_picks_the_fastest_and_keeps_errors():
    rates = {(256, 1): (1.0, 1e-6), (256, 2): (3.0, 1e-6), (256, 4): None}

    def rate_of(cfg):
        if rates[cfg] is None:
            raise RuntimeError("too many resources requested for launch")
        return rates[cfg]

    best, results, errors = g.search(list(rates), rate_of)
    assert best == (256, 2) and set(results) == {(256, 1), (256, 2)}
    assert "too many resources" in errors[(256, 4)]
    with pytest.raises(RuntimeError, match="no launch configuration ran"):
        g.search([(1, 1)], lambda cfg: 1 / 0)


def test_a_form_tied_per_clock_gives_way_to_the_preferred_one():
    per_clk = {("ss_nosw", 1): 8191.0, ("ss_nosw", 2): 8192.2, ("ss_sw128", 1): 8191.3, ("ss_sw128", 2): 8191.9,
               ("rs_sw128", 1): 8191.1, ("rs_sw128", 2): 8191.5}
    results = {c: (r, 1e-6) for c, r in per_clk.items()}
    assert g.prefer_form(("ss_nosw", 2), results) == ("rs_sw128", 2)       # tied: registers first, same blocks/SM
    results[("rs_sw128", 2)] = (8100.0, 1e-6)                              # 1.1% slower per clock: not tied
    assert g.prefer_form(("ss_nosw", 2), results) == ("ss_sw128", 2)
    results[("ss_sw128", 2)] = (8000.0, 1e-6)
    assert g.prefer_form(("ss_nosw", 2), results) == ("ss_nosw", 2)        # nothing tied: the best stays
    del results[("rs_sw128", 1)]                                           # a form that could not run is no candidate
    assert g.prefer_form(("ss_sw128", 1), results) == ("ss_sw128", 1)
    assert set(g.FORM_PREFERENCE) == set(g.WGMMA_FORMS)


# ---------------------------------------------------------------- sources and SASS evidence


def test_kernel_names_exist_in_the_sources():
    mma, wg = source("mma_sync.cu"), source("wgmma.cu")
    for v in g.VARIANTS:
        if v.api == "mma_sync":
            assert f"MMA_KERNEL({v.kernel}," in mma and f"MMA_ONLY_{v.kernel}" in mma
            assert v.ptx.split(".", 3)[3].split(".row")[0] in mma      # the shape is in the source
        else:
            assert f"WGMMA_FORMS({v.kernel}, " in wg
            assert f"WGMMA_ONLY == {g.WGMMA_IDS[v.kernel]}\nWGMMA_FORMS({v.kernel}," in wg
    for form in g.WGMMA_FORMS:
        assert f"NAME##_{form}, OP, {g.WGMMA_FORMS.index(form)})" in wg
    assert "#define A_BYTES 8192" in wg and "#define B_BYTES 32768" in wg and "#define KSTEPS 4" in wg
    assert f"#define KSTEPS {g.KSTEPS}" in wg


# Real cuobjdump -sass excerpts (nvcc 13.0, encodings dropped): the timed loops of mma_sync.cu on sm_90,
# of mma_fp8e4m3_f32acc on sm_90 (emulated) and of wgmma.cu on sm_90a.
SASS_MMA_FP16_SM90 = """
	code for sm_90
		Function : mma_fp16_f32acc
        /*0390*/                   IMAD.MOV.U32 R0, RZ, RZ, R0 ;
        /*03a0*/                   HMMA.16816.F32 R36, R4, R2, R36 ;
        /*03b0*/                   VIADD R0, R0, 0xfffffffe ;
        /*03c0*/                   HMMA.16816.F32 R32, R4, R2, R32 ;
        /*03d0*/                   ISETP.NE.AND P1, PT, R0, RZ, PT ;
        /*03e0*/                   HMMA.16816.F32 R8, R4.reuse, R2.reuse, R8 ;
        /*03f0*/                   HMMA.16816.F32 R12, R4.reuse, R2.reuse, R12 ;
        /*0400*/                   HMMA.16816.F32 R16, R4.reuse, R2.reuse, R16 ;
        /*0410*/                   HMMA.16816.F32 R20, R4.reuse, R2.reuse, R20 ;
        /*0420*/                   HMMA.16816.F32 R24, R4.reuse, R2.reuse, R24 ;
        /*0430*/                   HMMA.16816.F32 R28, R4.reuse, R2.reuse, R28 ;
        /*04c0*/                   NOP ;
        /*04d0*/               @P1 BRA 0x3a0 ;
        /*04e0*/              @!P0 BRA 0x580 ;
        /*0830*/                   BRA 0x830;
"""

SASS_MMA_FP8_SM90 = """
	code for sm_90
		Function : mma_fp8e4m3_f32acc
        /*03c0*/                   F2FP.F16.E4M3.UNPACK_B R16, R48 ;
        /*03d0*/                   F2FP.F16.E4M3.UNPACK_B R17, R47 ;
        /*0440*/                   F2FP.F16.E4M3.UNPACK_B R18, R44.H1 ;
        /*0450*/                   HMMA.16816.F32 R12, R12, R16, RZ ;
        /*0460*/                   F2FP.F16.E4M3.UNPACK_B R19, R42.H1 ;
        /*0470*/                   IADD3 R49, R49, -0x2, RZ ;
        /*04a0*/                   ISETP.NE.AND P1, PT, R49, RZ, PT ;
        /*04b0*/                   HMMA.16816.F32 R12, R16, R32, R12 ;
        /*04c0*/                   NOP ;
        /*04d0*/                   FADD R31, R12.reuse, R31 ;
        /*04e0*/                   FADD R7, R12.reuse, R7 ;
        /*08c0*/                   FADD R40, R15, R40 ;
        /*08d0*/               @P1 BRA 0x3c0 ;
"""

SASS_WGMMA_FP16_SM90A = """
	code for sm_90a
		Function : wgmma_fp16_f32acc
        /*0ba0*/                   WARPGROUP.ARRIVE ;
        /*0bb0*/                   VIADD R2, R2, 0xfffffffc ;
        /*0bc0*/                   HGMMA.64x256x16.F32 R24, gdesc[UR4], R24 ;
        /*0bd0*/                   ISETP.NE.AND P1, PT, R2, RZ, PT ;
        /*0be0*/                   NOP ;
        /*0bf0*/                   HGMMA.64x256x16.F32 R24, gdesc[UR4], R24 ;
        /*0c00*/                   NOP ;
        /*0c10*/                   HGMMA.64x256x16.F32 R24, gdesc[UR4], R24 ;
        /*0c20*/                   NOP ;
        /*0c30*/                   HGMMA.64x256x16.F32 R24, gdesc[UR4], R24, gsb0 ;
        /*0c40*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0e00*/               @P1 BRA 0xba0 ;
"""


def _by(metric):
    return next(v for v in g.VARIANTS if v.metric == metric)


def test_sass_evidence_on_real_excerpts():
    sass = pytest.importorskip("hwprobe.kernels.sass")
    fp16 = _by("fp16.tensor_core.mma_sync.f32acc")
    assert sass.has_opcodes(SASS_MMA_FP16_SM90, "mma_fp16_f32acc", (fp16.sass,))
    assert g.sass_flags(True, fp16) == []
    assert "8 HMMA.16816.F32" in sass.evidence(SASS_MMA_FP16_SM90, "mma_fp16_f32acc", (fp16.sass,))
    # bf16's opcode is a longer form: the fp16 loop must not pass for it, nor f16 accumulate.
    assert not sass.has_opcodes(SASS_MMA_FP16_SM90, "mma_fp16_f32acc", (_by("bf16.tensor_core.mma_sync.f32acc").sass,))
    assert not sass.has_opcodes(SASS_MMA_FP16_SM90, "mma_fp16_f32acc", (_by("fp16.tensor_core.mma_sync.f16acc").sass,))

    fp8 = _by("fp8_e4m3.tensor_core.mma_sync.f32acc")
    has = sass.has_opcodes(SASS_MMA_FP8_SM90, "mma_fp8e4m3_f32acc", (fp8.sass,))
    assert has is False
    assert g.sass_flags(has, fp8) == ["sass_mismatch: QMMA.16832.F32.E4M3.E4M3 not in the timed loop"]

    wg = _by("fp16.tensor_core.wgmma.f32acc")
    assert sass.has_opcodes(SASS_WGMMA_FP16_SM90A, "wgmma_fp16_f32acc", (wg.sass,))
    assert "4 HGMMA.64x256x16.F32" in sass.evidence(SASS_WGMMA_FP16_SM90A, "wgmma_fp16_f32acc", (wg.sass,))
    assert g.sass_flags(None, wg) == []       # not checked: no flag


# ---------------------------------------------------------------- the probe's plumbing, on a simulated GPU


class _FakeCupy:
    """Stands in for CuPy: host arrays, and kernels that write what a correct GPU kernel would."""

    asarray = staticmethod(np.asarray)
    asnumpy = staticmethod(np.asarray)

    @staticmethod
    def zeros(n, dtype):
        return np.zeros(n, dtype)

    class cuda:  # noqa: N801 (CuPy's name)
        @staticmethod
        def get_current_stream():
            class _Stream:
                def synchronize(self):
                    pass
            return _Stream()


class _FakeModule:
    def __init__(self, kernel):
        self.kernel, self.names = kernel, []

    def get_function(self, name):
        self.names.append(name)
        return self.kernel


def _simulated(monkeypatch, wrong_metric=None):
    import sys

    import hwprobe.timing

    monkeypatch.setitem(sys.modules, "cupy", _FakeCupy())

    def module(v):
        a, bt = g.inputs(v)

        def kernel(grid, block, args):
            out, clk, slot, iters = args[2], args[3], int(args[4]), int(args[5])
            reset = int(args[6]) if v.api == "wgmma" else g.MAX_ITERS
            units = grid[0] * block[0] // (32 if v.api == "mma_sync" else 128)
            want = g.reference(a, bt, g.timed_count(v, iters, reset) + (v.metric == wrong_metric))
            out[:] = _fake_kernel_output(v, want, units)
            # every CTA: 512 SM cycles per iteration at 1980 MHz (clock64 and globaltimer agree)
            cyc, ns = 512 * iters, round(512 * iters / 1.98)
            rec = clk.reshape(g.CLK_SLOTS, grid[0], mc.CLK_FIELDS)
            rec[slot] = [7_000, 7_000 + cyc + 990, 10**9, 10**9 + ns + 500, cyc, ns]

        return _FakeModule(kernel), (f"-DCHAINS={g.CHAINS}",) if v.api == "mma_sync" else ()

    monkeypatch.setattr(g, "_module", module)
    # one launch: 10 us + 1 us per iteration (a partial(launch, iters) is what gets timed); the timers launch
    # the kernel as the real ones do, so its output and stamps are there to check
    def median_time(fn, repeats=2):
        fn()
        return 1e-5 + 1e-6 * fn.args[0]

    def time_cuda(fn, warmup=2, repeats=10, cp=None, hold=None):
        assert hold is None                     # gpu.mma_sync and gpu.wgmma pass no hold
        for _ in range(warmup + repeats):
            fn()
        return [1e-3 * (1 + i % 2) for i in range(repeats)]

    monkeypatch.setattr(g, "_median_time", median_time)
    monkeypatch.setattr(hwprobe.timing, "time_cuda", time_cuda)
    monkeypatch.setattr(g.sass, "once_of", lambda file, options: SASS_MMA_FP16_SM90)


def test_probe_end_to_end_on_a_simulated_gpu(monkeypatch):
    from hwprobe.timing import NullSampler

    _simulated(monkeypatch, wrong_metric="bf16.tensor_core.mma_sync.f32acc")
    dev = _gpu((9, 0))
    dev.sms = 4
    ctx = ProbeContext(target="gpu", device=dev, sampler=NullSampler(), probe_name="gpu.mma_sync", quick=True)
    out = {m.metric: m for m in g.run_mma_sync(ctx, precisions=("fp16", "bf16", "int4"))}
    m = out["fp16.tensor_core.mma_sync.f32acc"]
    assert m.kind == "compute" and m.verified is True and m.valid and m.unit == "FLOP/s"
    assert (m.precision, m.exec_unit, m.path) == ("fp16", "tensor_core", "instruction")
    p = m.params
    assert p["block"] == 256 and p["units"] == p["grid"] * 256 // 32 and p["shape"] == "m16n8k16"
    assert m.work == p["units"] * g.CHAINS * 4096 * p["iters"]
    # calibration: 1 us per iteration -> the quick target (4 ms) is about 4000 iterations
    assert 3500 <= p["iters"] <= 4500
    assert len(p["search"]) == len(g.MMA_CONFIGS)
    assert any(n.startswith("SASS sm_90: 8 HMMA.16816.F32") for n in m.notes)
    # f16 accumulate: its kernel is not in the canned SASS, so the expected opcode is missing
    f16 = out["fp16.tensor_core.mma_sync.f16acc"]
    assert f16.verified is True and f16.flags[-1] == "sass_mismatch: HMMA.16816.F16 not in the timed loop"
    assert not f16.valid
    bad = out["bf16.tensor_core.mma_sync.f32acc"]   # its simulated kernel adds one product too many
    assert bad.verified is False and not bad.valid and bad.flags[0].startswith("verification_failed")
    assert out["int4.tensor_core.mma_sync.s32acc"].kind == "info"


def test_wgmma_end_to_end_on_a_simulated_gpu(monkeypatch):
    from hwprobe.timing import NullSampler

    _simulated(monkeypatch)
    dev = _gpu((9, 0))
    dev.sms = 2
    ctx = ProbeContext(target="gpu", device=dev, sampler=NullSampler(), probe_name="gpu.wgmma", quick=True)
    out = list(g.run_wgmma(ctx))
    assert [m.metric for m in out] == [v.metric for v in g.variants("wgmma")]
    for m in out:
        assert m.kind == "compute" and m.verified is True, (m.metric, m.flags, m.notes)
        assert m.params["block"] == 128 and m.params["units"] == m.params["grid"]
        assert m.work == m.params["units"] * g.ops_per_iteration(g.variants("wgmma")[0]) * m.params["iters"] * (
            {"fp16": 1, "bf16": 1, "tf32": 0.5}.get(m.precision, 2))
        assert set(m.params["search_ops_per_clk_per_sm"]) == {g.config_label(c) for c in g.WGMMA_CONFIGS}
        assert m.params["kernel"] == g.kernel_name(next(v for v in g.VARIANTS if v.metric == m.metric),
                                                   (m.params["form"], 1))
        # the simulated clock64/globaltimer say 1980 MHz over each CTA; the mocked event times (1 and 2 ms)
        # disagree with the stamps' span, and the record says so as two timers, never as a clock
        assert len(m.params["kernel_sm_mhz"]) == len(m.samples_s)
        assert all(abs(x - 1980) < 1 for x in m.params["kernel_sm_mhz"])
        assert not any(f.startswith("clock_disagreement") for f in m.flags)
        flag = next(f for f in m.flags if f.startswith("timer_disagreement"))
        # the mocked events alternate 1, 2 ms within each batch: 3 then 1 and 1 under the quick rule (they
        # disagree, so it goes on to its 5)
        assert "in 1 of 5 launches" in flag
        # a sample set whose timers disagree is taken once more; this one's second disagrees too and keeps the flag
        assert m.params["remeasured"] is True
        assert sum(n.startswith("re-measured once: the first sample set had timer_disagreement") for n in m.notes) == 1
        assert m.verified is True
        # the canned SASS holds no HGMMA: the mismatch invalidates the figure
        assert not m.valid and m.flags[-1].startswith("sass_mismatch: ") and "GMMA" in m.flags[-1]
        assert m.value == pytest.approx(m.work / m.params["span_s"])
        assert any("timed launch's own output checked" in n for n in m.notes)
        assert any("SM clock over the timed launches" in n for n in m.notes)


def test_a_failing_point_becomes_an_info_measurement(monkeypatch):
    from hwprobe.timing import NullSampler

    _simulated(monkeypatch)

    def broken(v):
        raise RuntimeError("nvrtc: error: something")

    monkeypatch.setattr(g, "_module", broken)
    ctx = ProbeContext(target="gpu", device=_gpu((9, 0)), sampler=NullSampler(), probe_name="gpu.wgmma")
    out = list(g.run_wgmma(ctx, precisions=("tf32", "int8")))
    assert [(m.kind, m.status, m.reason) for m in out] == [
        ("info", "error", f"{m.metric}: RuntimeError: nvrtc: error: something") for m in out]


def test_gap_books_the_hidden_tensor_clock_apart_from_the_set_clock():
    from hwprobe import gap
    from hwprobe.profile import Ceiling

    # the H200's TF32 wgmma: NVML 1980 (no reason), the kernel's own clock 1815, 99.7% at that clock
    peak = lambda mhz: 132 * 1024 * 2 * mhz * 1e6  # noqa: E731
    c = Ceiling(value=0.997 * peak(1815), unit="FLOP/s", metric="tf32.tensor_core.wgmma.f32acc", probe="gpu.wgmma",
                theory_at_clock=peak(1815), theory_at_max_clock=peak(1980), clock_mhz=1815.0, clock_source="kernel",
                params={"clocks_mhz": {"kernel": 1815.0, "nvml": 1980.0}})
    steps = gap.clock_steps(c)
    assert [s[0] for s in steps] == ["clock under load", "SM clock below the set clock"]
    assert steps[0][1] == pytest.approx(1.0) and steps[1][1] == pytest.approx(1815 / 1980)
    assert steps[0][1] * steps[1][1] == pytest.approx(c.theory_at_clock / c.theory_at_max_clock)
    # clocks that agree (or no kernel clock): one step, as before
    c.params = {"clocks_mhz": {"kernel": 1815.0, "nvml": 1830.0}}
    assert [s[0] for s in gap.clock_steps(c)] == ["clock under load"]


def test_a_sample_set_whose_timers_disagree_is_taken_again(monkeypatch):
    """The first sample set's event times run off the CTAs' span; the second's match it: the record keeps the
    second, without the flag, and says it was re-measured."""
    import hwprobe.timing
    from hwprobe.timing import NullSampler

    _simulated(monkeypatch)
    agree = []
    account = g._account_clocks

    def once_accounted(*a, **k):
        account(*a, **k)
        agree.append(True)

    def time_cuda(fn, warmup=2, repeats=10, cp=None, hold=None):
        assert hold is None                     # gpu.mma_sync and gpu.wgmma pass no hold
        for _ in range(warmup + repeats):
            fn()
        span = (round(512 * fn.args[0] / 1.98) + 500) * 1e-9           # the simulated stamps' span
        return [span] * repeats if agree else [1e-3 * (1 + i % 2) for i in range(repeats)]

    monkeypatch.setattr(g, "_account_clocks", once_accounted)
    monkeypatch.setattr(hwprobe.timing, "time_cuda", time_cuda)
    dev = _gpu((9, 0))
    dev.sms = 4
    ctx = ProbeContext(target="gpu", device=dev, sampler=NullSampler(), probe_name="gpu.mma_sync", quick=True)
    m = next(x for x in g.run_mma_sync(ctx, precisions=("fp16",)) if x.metric == "fp16.tensor_core.mma_sync.f32acc")
    assert m.verified is True and m.params["remeasured"] is True
    assert not any(str(f).startswith("timer_disagreement") for f in m.flags), m.flags
    assert any(n.startswith("re-measured once: the first sample set had timer_disagreement") for n in m.notes)
    assert m.params["event_over_span"] == pytest.approx(1.0)
