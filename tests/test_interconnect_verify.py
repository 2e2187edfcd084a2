"""CPU tests of the collective checks: the closed-form expected results agree with a simulation of each op from
its definition for N = 1, 2, 4, 8; wrong elements are counted; averages pass within 2 ulp and fail beyond."""

from __future__ import annotations

import numpy as np
import pytest

from hwprobe.probes.interconnect import collectives as C
from hwprobe.probes.interconnect import verify as V
from hwprobe.probes.interconnect.collectives import OPS, layout


@pytest.mark.parametrize("n", [1, 2, 4, 8])
@pytest.mark.parametrize("op", OPS)
def test_expected_matches_simulated_collective(op, n):
    lay = layout(op, n, 4 * 8 * 37)           # 296 floats: splits into n chunks for n | 296
    inputs = [V.send_input(lay, r) for r in range(n)]
    results = V.simulate(lay, inputs)
    for r in range(n):
        want = V.expected(lay, r)
        if want is None:
            assert op == "reduce" and r > 0 and results[r] is None
            continue
        assert want.shape == (lay.recv_elems,)
        wrong, first = V.count_wrong(results[r], want)
        assert (wrong, first) == (0, None), f"{op} n={n} rank {r}"


@pytest.mark.parametrize("n", [2, 4, 8])
def test_misplaced_blocks_and_wrong_sums_are_counted(n):
    lay = layout("all_gather", n, 4 * n * 64)
    got = V.simulate(lay, [V.send_input(lay, r) for r in range(n)])[0].copy()
    c = lay.count
    got[:c], got[c:2 * c] = got[c:2 * c].copy(), got[:c].copy()      # ranks 0 and 1's blocks swapped
    wrong, first = V.count_wrong(got, V.expected(lay, 0))
    assert first == 0 and wrong >= c            # every element of both blocks differs except coincidences
    ar = layout("all_reduce", n, 4096)
    res = V.simulate(ar, [V.send_input(ar, r) for r in range(n)])[1]
    res[[3, 100, 1000]] += 1.0
    assert V.count_wrong(res, V.expected(ar, 1)) == (3, 3)
    stale = np.full(ar.recv_elems, V.SENTINEL, np.float32)               # an op that never ran
    assert V.count_wrong(stale, V.expected(ar, 0))[0] == ar.recv_elems


def test_values_depend_on_rank_and_index_and_sums_stay_exact():
    idx = np.arange(10_000)
    assert not np.array_equal(V.value(0, idx), V.value(1, idx))
    assert len(np.unique(V.value(3, idx[:509]))) == 509
    # 32768 ranks x 509 < 2**24: the float32 sum is exact
    assert 32768 * 509 < 2**24
    big = np.array([2**31 + 5, 10**12], dtype=np.int64)                # 64-bit indices wrap safely
    assert V.value(7, big).dtype == np.float32 and (V.value(7, big) >= 1).all()


@pytest.mark.parametrize("n", [3, 6, 7])
def test_average_within_two_ulp(n):
    lay = layout("all_reduce", n, 4 * 4096)
    want = V.expected(lay, 0, avg=True)
    # NCCL's float average multiplies each input by 1/n, then sums: a few roundings off the exact mean
    premul = np.zeros(lay.recv_elems, np.float32)
    for q in range(n):
        premul = (premul + V.send_input(lay, q) * np.float32(1.0 / n)).astype(np.float32)
    assert V.count_wrong(premul, want, avg=True)[0] == 0
    off = want.copy()
    off[5] = np.nextafter(np.nextafter(np.nextafter(off[5], np.inf), np.inf), np.inf)   # 3 ulp
    assert V.count_wrong(off, want, avg=True) == (1, 5)
    assert V.count_wrong(premul, want, avg=False)[0] > 0          # sums are exact, averages are not


def test_shape_mismatch_raises():
    with pytest.raises(ValueError):
        V.count_wrong(np.zeros(3, np.float32), np.zeros(4, np.float32))


# --- in place: nccl-tests' offsets, inputs placed as the device does, the same expected results ----------------

@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("op", [o for o in C.OPS if o not in C.UNDEFINED_IN_PLACE])
def test_in_place_layout_gives_the_out_of_place_results(op, n):
    """Each rank's one buffer set as ncclrun._prepare sets it (sentinel, then v(rank, i) at the send offset); the op
    applied by its definition (verify.simulate over the send views, results written to the receive views after
    every read); the receive view then holds what the device check expects (verify.expected), and nothing
    outside it is touched."""
    from hwprobe.probes.interconnect.verify import SENTINEL, count_wrong, expected, send_input, simulate, value

    lay = C.layout(op, n, 4 * n * 37)
    bufs = []
    for r in range(n):
        b = np.full(C.in_place_elems(lay), SENTINEL, dtype=np.float32)
        so, _ = C.in_place_offsets(lay, r)
        b[so:so + lay.send_elems] = value(r, np.arange(lay.send_elems))
        bufs.append(b)
    sends = [bufs[r][C.in_place_offsets(lay, r)[0]:][:lay.send_elems].copy() for r in range(n)]
    assert all((s == send_input(lay, r)).all() for r, s in enumerate(sends))      # the same inputs as out of place
    outs = simulate(lay, sends)
    for r in range(n):
        before = bufs[r].copy()
        _, ro = C.in_place_offsets(lay, r)
        if outs[r] is not None:
            bufs[r][ro:ro + lay.recv_elems] = outs[r]
        want = expected(lay, r)
        if want is not None:
            assert count_wrong(bufs[r][ro:ro + lay.recv_elems], want) == (0, None)
        outside = np.ones(bufs[r].size, dtype=bool)
        outside[ro:ro + lay.recv_elems] = False
        assert (bufs[r][outside] == before[outside]).all()


def test_in_place_offsets_are_nccl_tests():
    """src/all_gather.cu: sendInplaceOffset = per-rank count; src/reduce_scatter.cu: recvInplaceOffset = per-rank
    count; every other test 0 (each times rank, in startColl)."""
    n = 4
    ag, rs = C.layout("all_gather", n, 4096), C.layout("reduce_scatter", n, 4096)
    assert [C.in_place_offsets(ag, r) for r in range(n)] == [(r * ag.count, 0) for r in range(n)]
    assert [C.in_place_offsets(rs, r) for r in range(n)] == [(0, r * rs.count) for r in range(n)]
    for op in ("all_reduce", "broadcast", "reduce", "alltoall", "sendrecv"):
        assert C.in_place_offsets(C.layout(op, n, 4096), 3) == (0, 0)
    assert C.in_place_elems(rs) == rs.send_elems == 4096 // 4 and C.in_place_elems(ag) == ag.recv_elems
    assert C.buffer_bytes("reduce_scatter", n, 4096) == 2 * 4096      # its receive buffer holds the in-place runs
