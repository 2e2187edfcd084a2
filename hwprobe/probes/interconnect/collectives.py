"""Collective bookkeeping with nccl-tests' definitions: sizes, counts, algbw and busbw, memory and time plans.

nccl-tests (doc/PERFORMANCE.md) reports for an operation of size S bytes taking t seconds:
  algbw = S / t
  busbw = algbw x factor, factor = 2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter and
          alltoall; 1 for broadcast, reduce and sendrecv,
so busbw is comparable to the hardware's per-GPU link bandwidth whatever n is. S is the per-rank buffer of
all_reduce, broadcast, reduce and sendrecv; the whole gathered buffer (per-rank count x n) of all_gather;
the whole input (per-rank output x n) of reduce_scatter; the per-rank send buffer (chunk x n) of alltoall.
The time of one operation is the mean over ranks of each rank's mean time per iteration.

Every op runs out of place (separate send and receive buffers) and in place (one buffer: all_gather sends from
its own block of the receive buffer, reduce_scatter receives into its own block of the send buffer, the others
pass the same pointer twice), as nccl-tests does (src/common.cu: startColl with in_place; the offsets of each
test's GetCollByteCount). NCCL defines no in-place result for alltoall and sendrecv (a send and a receive over
the same bytes race); nccl-tests times them but reports their errors as N/A. hwprobe checks them anyway: a
wrong result is filed as such and never becomes a ceiling.

Iterations (``timing``): at least MIN_WARMUP warm-up and MIN_TIMED timed operations per point, as nccl-tests'
defaults (-w 5 -n 20 in the versions the issue compared against), in samples of ``iterations`` operations that
each last about ``target_s`` by the cost model; the spread over the samples is stored with every point.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwprobe.collective import OPS, SPLIT_OPS, bus_factor  # noqa: F401  (OPS: the probes name the collectives here too)

REDUCING = ("all_reduce", "reduce_scatter", "reduce")
ROOTED = ("broadcast", "reduce")                              # root rank 0, as nccl-tests' default
MIN_BYTES = 8
MAX_BYTES = 4 << 30
VARIANTS = ("out_of_place", "in_place")
UNDEFINED_IN_PLACE = ("alltoall", "sendrecv")                 # NCCL defines no in-place result for these
MIN_WARMUP = 5                                                # warm-up operations per point, at least
MIN_TIMED = 20                                                # timed operations per point, at least


def algbw(size_bytes: float, seconds: float) -> float:
    return size_bytes / seconds


def busbw(op: str, n: int, size_bytes: float, seconds: float) -> float:
    return algbw(size_bytes, seconds) * bus_factor(op, n)


@dataclass(frozen=True)
class Layout:
    """One operation at one size: S (``size_bytes``, as nccl-tests counts it), the count passed to NCCL, and
    the elements of each rank's send and receive buffers."""

    op: str
    n: int
    size_bytes: int
    count: int           # NCCL's count argument: per-rank count (all_gather send, reduce_scatter recv, chunk)
    send_elems: int
    recv_elems: int
    itemsize: int


def layout(op: str, n: int, size_bytes: int, itemsize: int = 4) -> Layout | None:
    """The layout nearest below ``size_bytes`` (whole elements, n equal chunks for split ops); None when it
    holds no element (a split op smaller than n elements)."""
    bus_factor(op, n)
    elems = size_bytes // itemsize
    if op in SPLIT_OPS:
        c = elems // n
        if c == 0:
            return None
        total = c * n
        send, recv = {"all_gather": (c, total), "reduce_scatter": (total, c), "alltoall": (total, total)}[op]
        return Layout(op, n, total * itemsize, c, send, recv, itemsize)
    if elems == 0:
        return None
    return Layout(op, n, elems * itemsize, elems, elems, elems, itemsize)


def sizes(lo: int = MIN_BYTES, hi: int = MAX_BYTES, factor: int = 2) -> list[int]:
    """lo, lo x factor, ... up to hi (hi itself always included)."""
    if lo < 1 or hi < lo or factor < 2:
        raise ValueError(f"bad size range {lo}..{hi} x{factor}")
    out, s = [], lo
    while s < hi:
        out.append(s)
        s *= factor
    out.append(hi)
    return out


def in_place_offsets(lay: Layout, rank: int) -> tuple[int, int]:
    """(send offset, receive offset) in elements into the one buffer of an in-place operation (nccl-tests'
    sendInplaceOffset / recvInplaceOffset x rank): all_gather sends from its block of the receive buffer,
    reduce_scatter receives into its block of the send buffer; every other op uses the buffer's start."""
    if lay.op == "all_gather":
        return rank * lay.count, 0
    if lay.op == "reduce_scatter":
        return 0, rank * lay.count
    return 0, 0


def in_place_elems(lay: Layout) -> int:
    """Elements of the one buffer an in-place operation needs (the larger of its send and receive sides)."""
    return max(lay.send_elems, lay.recv_elems)


def buffer_bytes(op: str, n: int, size_bytes: int, itemsize: int = 4) -> int:
    """Device bytes one rank holds for ``op`` at S = ``size_bytes``: a send buffer and a receive buffer that
    also serves the in-place runs (so at least as large as the send side)."""
    lay = layout(op, n, size_bytes, itemsize)
    return 0 if lay is None else (lay.send_elems + in_place_elems(lay)) * itemsize


def largest_size(ops, n: int, free_bytes: int, fraction: float = 0.6, hi: int = MAX_BYTES) -> int:
    """The largest power-of-two S <= ``hi`` whose buffers, for the hungriest op, fit in ``fraction`` of the
    free memory of the fullest rank (the same cap on every rank, so all ranks run the same sizes)."""
    budget = fraction * free_bytes
    s = 1 << (max(hi, 1).bit_length() - 1)
    while s > MIN_BYTES and max(buffer_bytes(op, n, s) for op in ops) > budget:
        s //= 2
    return s


def iterations(op: str, n: int, size_bytes: int, target_s: float, lo: int = 5, hi: int = 200,
               latency_s: float = 20e-6, busbw_guess: float = 100e9) -> int:
    """Iterations per timed sample, from a fixed model of the op's time (latency + bus bytes / a modest bus
    bandwidth), so every rank computes the same count without talking (a rank that ran a different count
    would hang the others). Bus bytes count at least S (one rank still copies its buffer)."""
    est = latency_s + size_bytes * max(bus_factor(op, n), 1.0) / busbw_guess
    return int(min(hi, max(lo, round(target_s / est))))


@dataclass(frozen=True)
class Timing:
    """How one point is timed: warm-up operations, then ``samples`` samples of ``iters`` operations each."""

    warmup: int
    iters: int
    samples: int

    @property
    def timed(self) -> int:
        return self.iters * self.samples


def timing(op: str, n: int, size_bytes: int, target_s: float, samples: int) -> Timing:
    """The iteration rule: samples of ``iterations`` operations (each about ``target_s`` by the cost model, at
    least 5), at least ``samples`` of them and enough for MIN_TIMED timed operations; warm-up of one sample's
    worth, at least MIN_WARMUP and at most MIN_TIMED. Derived from the plan alone, so every rank agrees."""
    it = iterations(op, n, size_bytes, target_s)
    return Timing(warmup=max(MIN_WARMUP, min(it, MIN_TIMED)), iters=it,
                  samples=max(samples, -(-MIN_TIMED // it)))


def size_at_fraction(points: list[tuple[int, float]], fraction: float = 0.9) -> int | None:
    """The smallest size whose bandwidth reaches ``fraction`` of the best over ``points`` [(size, bw)]."""
    ok = [(s, bw) for s, bw in points if bw and bw > 0]
    if not ok:
        return None
    best = max(bw for _, bw in ok)
    return min(s for s, bw in ok if bw >= fraction * best)


def estimate_seconds(ops, n: int, size_list: list[int], *, busbw_Bps: float, latency_s: float = 20e-6,
                     target_s: float = 0.02, samples: int = 5, variants=VARIANTS,
                     per_size_overhead_s: float = 0.004, init_s: float = 8.0) -> float:
    """Wall time of a sweep: for each op, size and variant, (warm-up + timed) operations at the given bus
    bandwidth (``timing``'s rule), plus checks and Python per point, plus process start and communicator init."""
    total = init_s
    for op in ops:
        f = bus_factor(op, n)
        for s in size_list:
            lay = layout(op, n, s)
            if lay is None:
                continue
            t_op = latency_s + lay.size_bytes * f / busbw_Bps
            tm = timing(op, n, lay.size_bytes, target_s, samples)
            for v in variants:
                total += (tm.warmup + tm.timed + (v == "in_place")) * t_op + per_size_overhead_s
                total += 2 * lay.recv_elems * lay.itemsize / 1.5e12      # the check reads its buffer (~1.5 TB/s)
    return total
