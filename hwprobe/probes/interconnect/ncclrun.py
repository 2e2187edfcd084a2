"""The collective sweep of one process: its ranks (one, or all of a process's GPUs), every op at every size, out of
place and in place, timed as nccl-tests times it and checked after timing.

Per op, size and variant: the buffers are set (receive side to a sentinel, inputs in place for an in-place run),
warm-up operations run, then timed samples of back-to-back operations (host clock around the launches and a
stream synchronize, after a barrier; time per op = elapsed / iters); collectives.timing gives the counts (at least
5 warm-up and 20 timed operations, as nccl-tests' defaults). Then the result is checked on each rank's GPU, as
nccl-tests' ``-c 1`` does: out of place, the last timed operation's output (its inputs never change); in place,
the inputs are written again and one more operation runs before the check (timing overwrote them). Every rank
runs the same sizes and counts (derived, never measured), so no rank waits on a collective the others skip.

One process per GPU: ``spawn`` starts a worker per GPU (multiprocessing "spawn", the unique id passed in);
under MPI each rank calls ``run_ranks`` itself with the id broadcast over MPI.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hwprobe.probes.interconnect import ncclapi
from hwprobe.probes.interconnect.collectives import VARIANTS, Layout, in_place_elems, in_place_offsets, layout, timing
from hwprobe.probes.interconnect.verify import OP_CODES, SENTINEL


@dataclass
class CollPlan:
    ops: tuple[str, ...]
    sizes: list[int]                     # requested S; each op rounds to its layout
    n: int
    target_s: float = 0.02               # one timed sample lasts about this long
    samples: int = 5                     # at least; collectives.timing adds samples to reach 20 timed operations
    avg_check_bytes: int = 1 << 20       # all_reduce with ncclAvg at this size, checked within 2 ulp (0: off)
    variants: tuple[str, ...] = VARIANTS
    alltoall_api: str = "auto"           # "auto" (ncclAlltoAll where NCCL has it, as nccl-tests), or "send_recv"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CollPlan:
        return cls(tuple(d["ops"]), list(d["sizes"]), int(d["n"]), float(d["target_s"]), int(d["samples"]),
                   int(d["avg_check_bytes"]), tuple(d.get("variants", VARIANTS)), d.get("alltoall_api", "auto"))


@dataclass
class LocalRank:
    """A rank this process drives: its GPU, communicator and stream, and its buffers for the current op."""

    rank: int
    device: int
    comm: Any
    stream: Any = None
    send: Any = None
    recv: Any = None                     # also the one buffer of the in-place runs
    extra: dict[str, Any] = field(default_factory=dict)

    def views(self, lay: Layout, variant: str):
        """(send view, receive view) of ``variant``: out of place the two buffers' prefixes; in place two views
        of the one buffer at nccl-tests' offsets."""
        if variant == "out_of_place":
            return self.send[:lay.send_elems], self.recv[:lay.recv_elems]
        so, ro = in_place_offsets(lay, self.rank)
        return self.recv[so:so + lay.send_elems], self.recv[ro:ro + lay.recv_elems]


def _launch(engine, lr: LocalRank, op: str, lay: Layout, redop: int, n: int, variant: str) -> None:
    sv, rv = lr.views(lay, variant)
    s, r, c, st, F = sv.data.ptr, rv.data.ptr, lay.count, lr.stream.ptr, ncclapi.FLOAT32
    comm = lr.comm
    if op == "all_reduce":
        comm.all_reduce(s, r, c, F, redop, st)
    elif op == "all_gather":
        comm.all_gather(s, r, c, F, st)
    elif op == "reduce_scatter":
        comm.reduce_scatter(s, r, c, F, redop, st)
    elif op == "broadcast":
        comm.broadcast(s, r, c, F, 0, st)
    elif op == "reduce":
        comm.reduce(s, r, c, F, redop, 0, st)
    elif op == "alltoall" and lr.extra.get("alltoall_api") == "ncclAlltoAll":
        comm.alltoall(s, r, c, F, st)
    elif op == "alltoall":      # n sends and n receives in one group: what ncclAlltoAll does
        engine.group_start()
        for p in range(n):
            comm.send(s + p * c * lay.itemsize, c, F, p, st)
            comm.recv(r + p * c * lay.itemsize, c, F, p, st)
        engine.group_end()
    elif op == "sendrecv":      # a ring: send to rank + 1, receive from rank - 1 (nccl-tests' sendrecv)
        engine.group_start()
        comm.send(s, c, F, (lr.rank + 1) % n, st)
        comm.recv(r, c, F, (lr.rank - 1) % n, st)
        engine.group_end()
    else:
        raise ValueError(f"unknown collective {op!r}")


def _iterate(engine, ranks: list[LocalRank], op: str, lay: Layout, redop: int, n: int, iters: int,
             variant: str) -> None:
    import cupy as cp

    if len(ranks) == 1:          # one rank per process: no group, the device is already current
        lr = ranks[0]
        for _ in range(iters):
            _launch(engine, lr, op, lay, redop, n, variant)
        lr.stream.synchronize()
        return
    for _ in range(iters):       # one process drives every GPU: a group per operation (ncclGroupStart/End)
        engine.group_start()
        for lr in ranks:
            with cp.cuda.Device(lr.device):
                _launch(engine, lr, op, lay, redop, n, variant)
        engine.group_end()
    for lr in ranks:
        lr.stream.synchronize()


def _prepare(ranks: list[LocalRank], lay: Layout, variant: str) -> None:
    """Receive side to the sentinel; in place, the rank's inputs written at its send offset (v(rank, i), as the
    send buffer holds out of place). Waits for the writes."""
    import cupy as cp

    from hwprobe.probes.interconnect import devops

    for lr in ranks:
        with cp.cuda.Device(lr.device), lr.stream:
            whole = lr.recv[:in_place_elems(lay)] if variant == "in_place" else lr.recv[:lay.recv_elems]
            devops.fill_value(whole, whole.size, float(SENTINEL))
            if variant == "in_place":
                sv, _ = lr.views(lay, variant)
                devops.coll_fill(sv, lay.send_elems, lr.rank)
        lr.stream.synchronize()


def _check(ranks: list[LocalRank], op: str, lay: Layout, avg: bool, n: int,
           variant: str = "out_of_place") -> tuple[int, int, int | None]:
    """(wrong, checked, first wrong index) over this process's ranks."""
    import cupy as cp

    from hwprobe.probes.interconnect import devops

    wrong = checked = 0
    first = None
    for lr in ranks:
        if op == "reduce" and lr.rank != 0:
            continue     # reduce leaves non-root receive buffers undefined
        with cp.cuda.Device(lr.device):
            _, rv = lr.views(lay, variant)
            w, f = devops.coll_wrong(rv, lay.recv_elems, OP_CODES[op], lr.rank, n, lay.count, avg)
        wrong, checked = wrong + w, checked + lay.recv_elems
        if f is not None and first is None:
            first = f
    return wrong, checked, first


def _one(engine, ranks, plan: CollPlan, op: str, lay: Layout, redop: int, barrier: Callable[[], None],
         variant: str = "out_of_place") -> dict:
    tm = timing(op, plan.n, lay.size_bytes, plan.target_s, plan.samples)
    _prepare(ranks, lay, variant)
    _iterate(engine, ranks, op, lay, redop, plan.n, tm.warmup, variant)
    samples = []
    for _ in range(tm.samples):
        barrier()
        t0 = time.perf_counter()
        _iterate(engine, ranks, op, lay, redop, plan.n, tm.iters, variant)
        samples.append((time.perf_counter() - t0) / tm.iters)
    if variant == "in_place":     # timing overwrote the inputs: write them again, one operation, then check
        _prepare(ranks, lay, variant)
        barrier()
        _iterate(engine, ranks, op, lay, redop, plan.n, 1, variant)
    wrong, checked, first = _check(ranks, op, lay, redop == ncclapi.AVG, plan.n, variant)
    name = op + (".avg" if redop == ncclapi.AVG else "")
    return {"op": name, "variant": variant, "size": lay.size_bytes, "count": lay.count, "iters": tm.iters,
            "warmup": tm.warmup, "samples": samples, "wrong": wrong, "checked": checked, "first_bad": first}


def run_ranks(engine, ranks: list[LocalRank], plan: CollPlan, barrier: Callable[[], None] | None = None,
              log: Callable[[str], None] = lambda m: None) -> list[dict]:
    """Every op of ``plan`` at every size over this process's ``ranks``; one dict per (op, size)."""
    import cupy as cp

    from hwprobe.probes.interconnect import devops

    barrier = barrier or (lambda: None)
    if len(ranks) == 1:
        cp.cuda.Device(ranks[0].device).use()
    for lr in ranks:
        if lr.stream is None:
            with cp.cuda.Device(lr.device):
                lr.stream = cp.cuda.Stream(non_blocking=True)
    out = []
    api = alltoall_api(engine, plan)            # one engine, one plan: the same answer for every op and rank
    for op in plan.ops:
        lays = list({lay.size_bytes: lay for lay in (layout(op, plan.n, s) for s in plan.sizes) if lay}.values())
        if not lays:
            continue
        big_send, big_recv = max(x.send_elems for x in lays), max(in_place_elems(x) for x in lays)
        for lr in ranks:
            lr.extra["alltoall_api"] = api
            with cp.cuda.Device(lr.device):
                lr.send = cp.empty(big_send, dtype=cp.float32)
                lr.recv = cp.empty(big_recv, dtype=cp.float32)
                devops.coll_fill(lr.send, big_send, lr.rank)     # v(rank, i): every size uses a prefix
                cp.cuda.Device().synchronize()
        for lay in lays:
            for variant in plan.variants:
                out.append(_one(engine, ranks, plan, op, lay, ncclapi.SUM, barrier, variant))
                if op == "alltoall":
                    out[-1]["api"] = ranks[0].extra["alltoall_api"]
                got = out[-1]
                log(f"{op} {variant} {lay.size_bytes} B: "
                    f"{sorted(got['samples'])[len(got['samples']) // 2] * 1e6:.1f} us, {got['wrong']} wrong")
        if op == "all_reduce" and plan.avg_check_bytes:
            lay = layout(op, plan.n, min(plan.avg_check_bytes, max(x.size_bytes for x in lays)))
            out.append(_one(engine, ranks, plan, op, lay, ncclapi.AVG, barrier))
        for lr in ranks:
            lr.send = lr.recv = None
        cp.get_default_memory_pool().free_all_blocks()
    return out


def alltoall_api(engine, plan: CollPlan) -> str:
    """"ncclAlltoAll" where NCCL has it (>= 2.28, what nccl-tests calls there) and the plan allows it, else
    "send_recv" (n sends and n receives in one group)."""
    if plan.alltoall_api != "send_recv" and engine.has_alltoall():
        return "ncclAlltoAll"
    return "send_recv"


def comm_barrier(engine, lr: LocalRank) -> Callable[[], None]:
    """A barrier through the communicator itself: a one-element all_reduce, waited for."""
    import cupy as cp

    with cp.cuda.Device(lr.device):
        buf = cp.zeros(1, dtype=cp.float32)

    def barrier() -> None:
        with cp.cuda.Device(lr.device):
            lr.comm.all_reduce(buf.data.ptr, buf.data.ptr, 1, ncclapi.FLOAT32, ncclapi.SUM, lr.stream.ptr)
            lr.stream.synchronize()

    return barrier


# --- one process per GPU ------------------------------------------------------------------------------------------

def worker(rank: int, n: int, device: int, uid, plan_d: dict, engine_name: str, conn) -> None:
    """A spawned rank: init its communicator from the shared id, run the sweep, send the results back."""
    try:
        import cupy as cp

        cp.cuda.Device(device).use()
        engine = ncclapi.load("cupy" if engine_name == "cupy.cuda.nccl" else "ctypes")
        lr = LocalRank(rank, device, engine.comm(n, uid, rank))
        lr.stream = cp.cuda.Stream(non_blocking=True)
        res = run_ranks(engine, [lr], CollPlan.from_dict(plan_d), comm_barrier(engine, lr))
        lr.comm.destroy()
        conn.send({"rank": rank, "ok": True, "results": res, "host": socket.gethostname(), "pid": os.getpid(),
                   "engine": engine.name, "nccl_version": engine.version_text()})
    except BaseException as e:  # report anything, then exit: the parent kills the other ranks
        conn.send({"rank": rank, "ok": False, "error": f"{type(e).__name__}: {e}",
                   "traceback": traceback.format_exc(limit=8)})
    finally:
        conn.close()


def spawn(devices: list[int], uid, plan: CollPlan, engine_name: str, timeout_s: float) -> list[dict]:
    """One worker process per GPU (rank = position in ``devices``), their reports collected (hwprobe.probes.ranks:
    on the first failure, or past ``timeout_s``, the workers still running are terminated)."""
    from hwprobe.probes import ranks

    return ranks.spawn(devices, worker, lambda rank, dev: (rank, len(devices), dev, uid, plan.to_dict(), engine_name),
                       "hwprobe-nccl", timeout_s)
