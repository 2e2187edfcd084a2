"""CPU tests of the interconnect bookkeeping: pair schedules for N = 1..8, matrices, nccl-tests' busbw formulas,
collective layouts, memory caps and the suite's time plan."""

from __future__ import annotations

import itertools

import pytest

from hwprobe.probes.interconnect import collectives as C
from hwprobe.probes.interconnect import pairs
from hwprobe.probes.interconnect.matrix import PairMatrix

# --- pair schedules ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 16])
def test_matchings_cover_every_pair_once_with_disjoint_rounds(n):
    rounds = pairs.matchings(n)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [p for r in rounds for p in r]
    assert sorted(seen) == sorted(itertools.combinations(range(n), 2))
    for r in rounds:
        gpus = [g for p in r for g in p]
        assert len(gpus) == len(set(gpus))
        assert len(r) == n // 2


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_schedule_concurrent_rounds(n):
    s = pairs.schedule(list(range(n)))
    pairs.check(s)
    if n == 1:
        assert s.uni == [] and s.bi == []
        return
    assert len(s.bi) == n - 1                      # 1, 3, 7 rounds of n/2 pairs timed together
    assert len(s.uni) == 2 * (n - 1)               # one round per direction
    assert len(s.ordered_pairs) == n * (n - 1)
    assert len(s.unordered_pairs) == n * (n - 1) // 2
    for rnd in s.uni:                              # a GPU only sends or only receives in a uni round
        srcs, dsts = {a for a, _ in rnd}, {b for _, b in rnd}
        assert not srcs & dsts
        assert len(rnd) == n // 2


@pytest.mark.parametrize("n", [2, 4, 8])
def test_schedule_sequential_is_one_pair_per_round(n):
    s = pairs.schedule(list(range(n)), concurrent=False)
    pairs.check(s)
    assert all(len(r) == 1 for r in s.uni + s.bi)
    assert len(s.uni) == n * (n - 1) and len(s.bi) == n * (n - 1) // 2


def test_schedule_over_arbitrary_ordinals_and_check_catches_errors():
    s = pairs.schedule([3, 1, 6, 4])
    pairs.check(s)
    assert {g for p in s.ordered_pairs for g in p} == {1, 3, 4, 6}
    bad = pairs.schedule([0, 1, 2, 3])
    bad.bi[0] = bad.bi[0] + [(0, 2)]               # GPU 0 twice in a round
    with pytest.raises(ValueError, match="two pairs"):
        pairs.check(bad)
    missing = pairs.schedule([0, 1, 2, 3])
    missing.uni.pop()
    with pytest.raises(ValueError, match="missing"):
        pairs.check(missing)
    with pytest.raises(ValueError, match="twice"):
        pairs.schedule([0, 1, 1])
    assert pairs.pair_key(5, 2) == "p2p.2-5"


# --- matrices ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 4, 8])
def test_matrix_from_a_schedule_is_complete_and_summarised(n):
    s = pairs.schedule(list(range(n)))
    m = PairMatrix(list(range(n)), "B/s")
    for a, b in s.ordered_pairs:
        m.set(a, b, 400e9 - 10e9 * (a == 0))        # GPU 0 sends slower
    assert m.complete
    rows = m.rows()
    assert all(rows[i][i] is None for i in range(n))
    sm = m.summary()
    assert sm["pairs"] == n * (n - 1)
    assert sm["min"] == 390e9 and sm["max"] == 400e9
    assert sm["spread"] == pytest.approx(400 / 390 - 1)
    assert all(p[0] == 0 for p in sm["min_pairs"]) and len(sm["min_pairs"]) == n - 1
    text = m.text(scale=1e9)
    assert text.splitlines()[1].split()[1] == "-" and "390.0" in text


def test_matrix_symmetric_and_bad_cells():
    m = PairMatrix([0, 1, 2])
    m.set(0, 2, 785e9, symmetric=True)
    assert m.get(2, 0) == m.get(0, 2) == 785e9
    assert not m.complete
    with pytest.raises(KeyError):
        m.set(1, 1, 1.0)
    with pytest.raises(KeyError):
        m.set(0, 7, 1.0)
    assert PairMatrix([0]).summary() == {"pairs": 0}


# --- busbw (nccl-tests' definitions) -------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_bus_factors(n):
    assert C.bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for op in ("all_gather", "reduce_scatter", "alltoall"):
        assert C.bus_factor(op, n) == pytest.approx((n - 1) / n)
    for op in ("broadcast", "reduce", "sendrecv"):
        assert C.bus_factor(op, n) == 1.0
    with pytest.raises(ValueError):
        C.bus_factor("allreduce", n)


def test_busbw_numbers_match_nccl_tests_examples():
    # 2 GiB all_reduce on 8 GPUs in 12 ms: algbw 178.96 GB/s, busbw x 1.75
    s, t = 2 << 30, 0.012
    assert C.algbw(s, t) == pytest.approx(178.956970e9, rel=1e-6)
    assert C.busbw("all_reduce", 8, s, t) == pytest.approx(178.956970e9 * 1.75, rel=1e-6)
    assert C.busbw("all_gather", 2, s, t) == pytest.approx(C.algbw(s, t) / 2)
    assert C.busbw("sendrecv", 2, s, t) == C.algbw(s, t)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_layouts_count_bytes_as_nccl_tests(n):
    lay = C.layout("all_reduce", n, 1 << 20)
    assert (lay.size_bytes, lay.count, lay.send_elems, lay.recv_elems) == (1 << 20, 1 << 18, 1 << 18, 1 << 18)
    ag = C.layout("all_gather", n, 1 << 20)           # S = recv bytes = per-rank count x n
    assert ag.size_bytes == ag.count * n * 4 and ag.send_elems == ag.count and ag.recv_elems == ag.count * n
    rs = C.layout("reduce_scatter", n, 1 << 20)       # S = send bytes = per-rank recv count x n
    assert rs.send_elems == rs.count * n and rs.recv_elems == rs.count and rs.size_bytes == rs.send_elems * 4
    a2a = C.layout("alltoall", n, 1 << 20)            # S = per-rank send buffer, chunks of count to each peer
    assert a2a.send_elems == a2a.recv_elems == a2a.count * n and a2a.size_bytes == a2a.send_elems * 4
    # sizes that don't split into n chunks are rounded down; too small is None
    odd = C.layout("all_gather", n, 4 * n * 3 + 4)
    assert odd.size_bytes == 4 * n * 3
    assert C.layout("alltoall", n, 4 * n - 4) is None
    assert C.layout("broadcast", n, 8).count == 2
    assert C.layout("sendrecv", n, 3) is None


def test_sizes_and_memory_cap():
    s = C.sizes()
    assert s[0] == 8 and s[-1] == 4 << 30 and len(s) == 30
    assert C.sizes(4096, 1 << 30, 4)[-1] == 1 << 30
    # an 80 GB GPU with 60 GB free: all_reduce at 4 GiB needs 8 GiB: fits; a 16 GB one caps at 2 GiB
    assert C.largest_size(C.OPS, 8, 60e9) == 4 << 30
    cap = C.largest_size(C.OPS, 8, 12e9)
    assert C.buffer_bytes("alltoall", 8, cap) <= 0.6 * 12e9 < C.buffer_bytes("alltoall", 8, 2 * cap)
    assert cap == 2 << 30


def test_iterations_are_deterministic_and_bounded():
    assert C.iterations("all_reduce", 2, 8, 0.02) == 200
    assert C.iterations("all_reduce", 2, 4 << 30, 0.02) == 5
    assert C.iterations("all_reduce", 8, 1 << 20, 0.02) == C.iterations("all_reduce", 8, 1 << 20, 0.02)
    assert C.iterations("all_reduce", 1, 4 << 30, 0.02) == 5          # one rank: still a 4 GiB copy per op


def test_size_at_90pct():
    pts = [(1 << 20, 100e9), (1 << 24, 300e9), (1 << 26, 335e9), (1 << 28, 340e9), (1 << 30, 338e9)]
    assert C.size_at_fraction(pts, 0.9) == 1 << 26           # best 340: 300 < 306, 335 is the first >= 306
    pts[1] = (1 << 24, 310e9)
    assert C.size_at_fraction(pts, 0.9) == 1 << 24
    assert C.size_at_fraction([], 0.9) is None


def test_size_at_90pct_first_point_below():
    pts = [(1 << 24, 300e9), (1 << 26, 335e9), (1 << 28, 340e9)]
    assert C.size_at_fraction(pts, 0.9) == 1 << 26


# --- the suite's time plan -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 4, 8])
def test_multigpu_suite_fits_three_minutes(n):
    """The suite's sizes and repeats (suites/multigpu.toml) on n NVLink GPUs stay under 3 minutes by the cost
    model, at modest rates (300 GB/s P2P, 250 GB/s busbw)."""
    from hwprobe.probes.interconnect import p2pplan
    from hwprobe.suites import load

    suite = load("multigpu")
    p2p = next(e.params for e in suite.entries if e.probe == "gpu.p2p")
    nccl = next(e.params for e in suite.entries if e.probe == "gpu.nccl")
    plan = p2pplan.Plan.of(list(range(n)), concurrent=True, max_bytes=(p2p.get("max_mib") or 1024) << 20,
                           step=p2p.get("size_step", 4))
    t_p2p = p2pplan.estimate_seconds(plan, bw_Bps=300e9)
    size_list = C.sizes(8, 4 << 30, nccl.get("size_step", 2))
    t_nccl = C.estimate_seconds(nccl.get("ops", C.OPS), n, size_list, busbw_Bps=250e9)
    print(f"n={n}: p2p {t_p2p:.0f} s, nccl {t_nccl:.0f} s")
    assert t_p2p + t_nccl < 170
    seq = p2pplan.Plan.of(list(range(n)), concurrent=False, max_bytes=1 << 30, step=4)
    if n == 8:   # the reason for disjoint rounds: one pair at a time would take far longer
        assert p2pplan.estimate_seconds(seq, bw_Bps=300e9) > 2.5 * t_p2p
