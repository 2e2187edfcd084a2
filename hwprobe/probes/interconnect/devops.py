"""GPU helpers the interconnect probes share: p2p.cu's kernels, the fill/check of buffers, peer access, and the
timing of several transfers on several GPUs at once (each group of transfers timed by its own CUDA events)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

COPY_UNROLLS = (1, 2, 4, 8)
KERNEL_NAMES = tuple(f"p2p_copy<{u}>" for u in COPY_UNROLLS)
CHECK_BLOCK = 256
CHECK_GRID = 1024
PEER_ACCESS_ALREADY_ENABLED = 704          # cudaErrorPeerAccessAlreadyEnabled


def module():
    """p2p.cu compiled for the current device (CuPy loads it into each device's context as it is used)."""
    from hwprobe.kernels import load

    return load("p2p.cu", name_expressions=KERNEL_NAMES)


def kernel(name: str):
    return module().get_function(name)


def seed(device: int) -> int:
    """The pattern seed of buffers written by GPU ``device`` (distinct per GPU, so a copy from the wrong GPU shows)."""
    return (0x9E3779B9 * (device + 1) + 0x7F4A7C15) & 0xFFFFFFFF


def pattern_host(device: int, idx: np.ndarray) -> np.ndarray:
    """The words pattern_fill writes (numpy; for tests and spot checks)."""
    return ((np.asarray(idx, np.uint64) * np.uint64(2654435761) + np.uint64(seed(device))) & 0xFFFFFFFF).astype(
        np.uint32)


def _launch(name: str, args: tuple) -> None:
    kernel(name)((CHECK_GRID,), (CHECK_BLOCK,), args)


def fill_pattern(buf, words: int, device: int) -> None:
    """buf (uint32, on the current device)[:words] = the pattern of GPU ``device``."""
    _launch("pattern_fill", (buf, np.uint64(words), np.uint32(seed(device))))


def pattern_wrong(buf, words: int, device: int) -> int:
    """Words of buf[:words] that differ from GPU ``device``'s pattern (counted on the current device)."""
    import cupy as cp

    wrong = cp.zeros(1, dtype=cp.uint64)
    _launch("pattern_check", (buf, np.uint64(words), np.uint32(seed(device)), wrong))
    return int(wrong.get()[0])


def coll_fill(buf, n: int, rank: int) -> None:
    _launch("coll_fill", (buf, np.uint64(n), np.int64(rank)))


def fill_value(buf, n: int, value: float) -> None:
    _launch("fill_f32", (buf, np.uint64(n), np.float32(value)))


def coll_wrong(buf, n: int, op_code: int, rank: int, nranks: int, count: int, avg: bool) -> tuple[int, int | None]:
    """(wrong elements, first wrong index) of a collective's receive buffer, on the current device."""
    import cupy as cp

    out = cp.array([0, np.iinfo(np.uint64).max], dtype=cp.uint64)
    _launch("coll_check", (buf, np.uint64(n), np.int32(op_code), np.int64(rank), np.int64(nranks),
                           np.int64(max(count, 1)), np.int32(1 if avg else 0), out))
    wrong, first = (int(x) for x in out.get())
    return wrong, (first if wrong else None)


def enable_peer_access(a: int, b: int) -> bool:
    """Map GPU b's memory into GPU a (cudaDeviceEnablePeerAccess); True when a can access b."""
    import cupy as cp

    rt = cp.cuda.runtime
    if a == b:
        return True
    if not rt.deviceCanAccessPeer(a, b):
        return False
    with cp.cuda.Device(a):
        try:
            rt.deviceEnablePeerAccess(b)
        except rt.CUDARuntimeError as e:
            if getattr(e, "status", None) != PEER_ACCESS_ALREADY_ENABLED:
                raise
    return True


# --- timing transfers on several GPUs at once ----------------------------------------------------------------------

@dataclass
class Transfer:
    """One stream's work: ``launch()`` issues one transfer on the current stream of GPU ``device``."""

    device: int
    launch: Callable[[], None]
    nbytes: int
    stream: object = None


@dataclass
class Group:
    """Transfers timed together (a pair's one or two directions): from a common start on the first transfer's GPU
    to the end of the last; its time is the group's sample."""

    transfers: list[Transfer]
    samples: list[float] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.transfers)


def time_groups(groups: list[Group], reps: int, warmup: int, repeats: int) -> None:
    """Time every group ``repeats`` times (after ``warmup`` untimed rounds), all groups starting together: each
    sample, every stream waits on one start event, runs ``reps`` transfers, and the first group's stream waits
    for every group's end before the next sample. Fills ``group.samples`` (seconds per ``reps`` transfers)."""
    import cupy as cp

    for g in groups:
        for t in g.transfers:
            if t.stream is None:
                with cp.cuda.Device(t.device):
                    t.stream = cp.cuda.Stream(non_blocking=True)
    head = groups[0].transfers[0]
    events = []
    for r in range(warmup + repeats):
        with cp.cuda.Device(head.device):
            go = cp.cuda.Event(disable_timing=True)
            go.record(head.stream)
        marks = []
        for g in groups:
            lead = g.transfers[0]
            with cp.cuda.Device(lead.device):
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                lead.stream.wait_event(go)
                start.record(lead.stream)
            dones = []
            for t in g.transfers:
                with cp.cuda.Device(t.device):
                    if t is not lead:
                        t.stream.wait_event(start)
                    with t.stream:
                        for _ in range(reps):
                            t.launch()
                    done = cp.cuda.Event(disable_timing=True)
                    done.record(t.stream)
                    dones.append(done)
            with cp.cuda.Device(lead.device):
                for d in dones[1:]:
                    lead.stream.wait_event(d)
                stop.record(lead.stream)
            marks.append((start, stop))
        with cp.cuda.Device(head.device):
            for _, stop in marks:
                head.stream.wait_event(stop)
        if r >= warmup:
            events.append(marks)
    for g in groups:
        for t in g.transfers:
            t.stream.synchronize()
    for g in groups:
        g.samples = []
    for marks in events:
        for g, (start, stop) in zip(groups, marks, strict=True):
            g.samples.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
