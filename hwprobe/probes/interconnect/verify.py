"""Deterministic collective inputs and the exact results they must give (numpy; the device check in p2p.cu's
``coll_check`` computes the same formulas per element, and a GPU test holds the two together).

Rank q's input element i is v(q, i) = ((131 q + 7 i) mod 509) + 1: small whole numbers, so float32 sums over
up to 32768 ranks are exact and any misplaced block shows (the value depends on both rank and index).
Sums are checked exactly; averages (ncclAvg) within 2 ulp of the correctly rounded mean.
"""

from __future__ import annotations

import numpy as np

from hwprobe.probes.interconnect.collectives import Layout

OP_CODES = {"all_reduce": 0, "all_gather": 1, "reduce_scatter": 2, "broadcast": 3, "reduce": 4, "alltoall": 5,
            "sendrecv": 6}
AVG_ULPS = 2
SENTINEL = np.float32(-1.0)       # what a receive buffer holds before the op: no correct result is negative


def value(q: int, idx: np.ndarray) -> np.ndarray:
    """v(q, i) as float32 for an int64 index array."""
    idx = np.asarray(idx, dtype=np.int64)
    return (((131 * q + 7 * idx) % 509) + 1).astype(np.float32)


def send_input(lay: Layout, rank: int) -> np.ndarray:
    return value(rank, np.arange(lay.send_elems, dtype=np.int64))


def expected(lay: Layout, rank: int, avg: bool = False) -> np.ndarray | None:
    """What rank ``rank``'s receive buffer must hold after ``lay.op``; None where it is undefined (reduce's
    non-root ranks). Roots are rank 0; sendrecv receives from rank - 1 (a ring)."""
    n, c, op = lay.n, lay.count, lay.op
    j = np.arange(lay.recv_elems, dtype=np.int64)
    if op == "all_reduce" or (op == "reduce" and rank == 0):
        return _reduce(n, j, avg)
    if op == "reduce":
        return None
    if op == "broadcast":
        return value(0, j)
    if op == "sendrecv":
        return value((rank - 1) % n, j)
    if op == "all_gather":
        return _blocks(j, c, lambda q, k: value(q, k))
    if op == "reduce_scatter":
        return _reduce(n, rank * c + j, avg)
    if op == "alltoall":
        return _blocks(j, c, lambda q, k: value(q, rank * c + k))
    raise ValueError(f"unknown collective {op!r}")


def _reduce(n: int, idx: np.ndarray, avg: bool) -> np.ndarray:
    s = np.zeros(idx.shape, dtype=np.float64)
    for q in range(n):
        s += value(q, idx)
    return (s / n if avg else s).astype(np.float32)


def _blocks(j: np.ndarray, c: int, fn) -> np.ndarray:
    """Element j of a receive buffer of n blocks of c: block q = j // c, offset k = j % c."""
    q, k = j // c, j % c
    out = np.empty(j.shape, dtype=np.float32)
    for qq in np.unique(q):
        sel = q == qq
        out[sel] = fn(int(qq), k[sel])
    return out


def count_wrong(got: np.ndarray, want: np.ndarray, avg: bool = False) -> tuple[int, int | None]:
    """(wrong elements, index of the first) of ``got`` against ``want``: exact, or within AVG_ULPS ulp of the
    expected value for an average."""
    got = np.asarray(got, dtype=np.float32)
    want = np.asarray(want, dtype=np.float32)
    if got.shape != want.shape:
        raise ValueError(f"result has {got.shape} elements, expected {want.shape}")
    if avg:
        tol = AVG_ULPS * np.spacing(np.abs(want))
        bad = ~(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= tol)
    else:
        bad = got != want
    idx = np.flatnonzero(bad)
    return int(idx.size), (int(idx[0]) if idx.size else None)


def simulate(lay: Layout, inputs: list[np.ndarray], avg: bool = False) -> list[np.ndarray | None]:
    """What NCCL computes for ``lay.op`` from each rank's input (a reference used by the CPU tests, written from
    the ops' definitions rather than from ``expected``'s closed forms)."""
    n, c, op = lay.n, lay.count, lay.op
    if op == "all_reduce":
        total = np.sum([x.astype(np.float64) for x in inputs], axis=0)
        r = (total / n if avg else total).astype(np.float32)
        return [r.copy() for _ in range(n)]
    if op == "reduce":
        total = np.sum([x.astype(np.float64) for x in inputs], axis=0).astype(np.float32)
        return [total] + [None] * (n - 1)
    if op == "broadcast":
        return [inputs[0].copy() for _ in range(n)]
    if op == "sendrecv":
        return [inputs[(r - 1) % n].copy() for r in range(n)]
    if op == "all_gather":
        g = np.concatenate(inputs)
        return [g.copy() for _ in range(n)]
    if op == "reduce_scatter":
        total = np.sum([x.astype(np.float64) for x in inputs], axis=0)
        total = (total / n if avg else total).astype(np.float32)
        return [total[r * c:(r + 1) * c] for r in range(n)]
    if op == "alltoall":
        return [np.concatenate([inputs[q][r * c:(r + 1) * c] for q in range(n)]) for r in range(n)]
    raise ValueError(f"unknown collective {op!r}")
