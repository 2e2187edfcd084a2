"""Timing transfers on several streams of several GPUs at once: each group of transfers (a pair's one or two
directions) starts from one event and is timed by its own CUDA event pair, all groups together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


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


def fork_join(cp, streams: list, launches: list[Callable[[int], None]]) -> None:
    """Inside one timed sample on the current stream: ``launches[i](stream_ptr)`` on ``streams[i]``, all after the
    current stream's work so far, and the current stream waits for every one (the sample spans the slowest)."""
    cur = cp.cuda.get_current_stream()
    start = cp.cuda.Event()
    start.record(cur)
    for s in streams:
        s.wait_event(start)
    for s, launch in zip(streams, launches, strict=True):
        launch(s.ptr)
    ends = [cp.cuda.Event() for _ in streams]
    for e, s in zip(ends, streams, strict=True):
        e.record(s)
    for e in ends:
        cur.wait_event(e)
