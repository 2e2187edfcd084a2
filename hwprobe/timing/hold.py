"""A stream hold: one call timed by CUDA events without the host's stalls in it.

``time_cuda_once`` records a start event, then calls ``fn``, which launches. Whatever the host does between the
two (Python building the launch's arguments, a GIL switch to another thread, a garbage collection) is GPU idle time
after the start event, and it is timed. In the forty-fifth session a PyTorch import on a daemon thread made gpu.fma's
FP64 search read one trip at 7.4 ms and keep a config 8% slower (profiles/h200-sxm/2026-11-29-ab-s45).

A hold launches one thread that spins on a flag in mapped pinned host memory (kernels/hold.cu) before the start
event. The GPU reaches the start event only once the host has queued the timed work and set the flag. nvbench's
blocking kernel does the same. This one gives up after ``timeout_s``, because a call that synchronizes the held
stream would otherwise never return, and it counts those timeouts: a timing with one in it may hold host time again.

``time_cuda(..., hold=)`` holds its samples too, in batches of at most ``BATCH``: with a Python thread holding the
GIL beside it (a 46th-session test), gpu.fma's held search kept its best config, and its unheld samples still read
64.5% of the FP64 peak, because the host fell behind a queue of 2-ms launches. A batch queues three commands a
sample (two events and the launch), well inside the device's queue, so the host never blocks on a full queue
while the stream is held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

MODULE = "hold.cu"
HOST_ALLOC_MAPPED = 2          # cudaHostAllocMapped: the device reads the flag through the host pointer (UVA)
UNIFIED_ADDRESSING, HOST_POINTER_USABLE = 41, 91   # cudaDevAttr*: both 1, or the host pointer is no device address
# 1 s let one batch of the 46th session's `full` run unheld: the host took longer to queue 64 launches while an
# import thread loaded PyTorch (h200-sxm/2026-11-29-ab-s46). The timeout only bounds a misuse (a call that
# synchronizes inside a hold), so it can be long.
TIMEOUT_S = 5.0
BATCH = 64                     # held samples queued behind one hold


class StreamHold:
    """Held single-call timings on the current stream. ``make`` builds one on the GPU; the parts are given here so
    that the ordering is tested with a fake CuPy."""

    def __init__(self, cp, kernel: Callable[..., Any], flag: np.ndarray, flag_ptr: int, timed_out, timeout_s: float):
        self.cp, self.kernel, self.flag, self.flag_ptr = cp, kernel, flag, flag_ptr
        self.timed_out, self.timeout_s = timed_out, timeout_s
        self.timeouts = 0

    @classmethod
    def make(cls, cp, timeout_s: float = TIMEOUT_S) -> StreamHold:
        from hwprobe.kernels import load

        dev = cp.cuda.Device().id
        if not all(cp.cuda.runtime.deviceGetAttribute(a, dev) for a in (UNIFIED_ADDRESSING, HOST_POINTER_USABLE)):
            raise RuntimeError("this GPU cannot read mapped host memory at its host address")
        mem = cp.cuda.PinnedMemory(4, HOST_ALLOC_MAPPED)
        ptr = cp.cuda.PinnedMemoryPointer(mem, 0)
        flag = np.frombuffer(ptr, dtype=np.int32, count=1)
        hold = cls(cp, load(MODULE).get_function("hwp_hold"), flag, ptr.ptr, cp.zeros(1, dtype=cp.int32), timeout_s)
        hold._keep = (mem, ptr)        # the flag's memory lives as long as the hold
        return hold

    @contextmanager
    def queued(self) -> Iterator[None]:
        """Work queued on the current stream inside the block starts only once the block ends (or the hold times
        out). The caller synchronizes, then calls ``settle``."""
        self.flag[0] = 0
        self.kernel((1,), (1,), (np.uint64(self.flag_ptr), np.int64(self.timeout_s * 1e9), self.timed_out))
        try:
            yield
        finally:
            self.flag[0] = 1               # released whatever happened: never a stream left spinning

    def settle(self) -> None:
        """Count a timeout of the last hold (after the stream is synchronized)."""
        if int(self.timed_out.get()[0]):
            self.timeouts += 1
            self.timed_out.fill(0)

    def time(self, fn: Callable[[], object]) -> float:
        """Seconds of one call of ``fn`` on the current stream, from its first queued work to its last."""
        return self.time_each(fn, 1)[0]

    def time_each(self, fn: Callable[[], object], repeats: int) -> list[float]:
        """Seconds of each of ``repeats`` calls of ``fn``, queued back to back behind holds of ``BATCH`` calls."""
        from hwprobe.timing import elapsed_s, queue_calls

        stream = self.cp.cuda.get_current_stream()
        out: list[float] = []
        while len(out) < repeats:
            with self.queued():
                events = queue_calls(self.cp, stream, fn, min(BATCH, repeats - len(out)))
            out += elapsed_s(self.cp, events)
            self.settle()
        return out
