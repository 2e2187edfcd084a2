"""gpu.torch_kernels' library points measured by worker processes: each shape's first call in parallel, the timing
alone. Two families: cuDNN convolutions and scaled-dot-product attention (torch_library.SEARCH_FAMILIES).

A convolution shape's first call under cudnn.benchmark searches cuDNN's algorithms, and that search is host work:
cuDNN builds a plan for every engine it lists, compiling runtime-compiled kernels with NVRTC. On an H100 (40
sampled FP16 grid points) it took 13.6 s of wall, 12 ms of it on the GPU; py-spy put 70% of the search in NVRTC
and 20% in the driver. In one process it does not parallelize (8 threads searched 48 shapes in 4.2 s, one thread
4.9 s) and PyTorch keeps the plan it picks per thread, so the point must be timed where it was searched.

So the points are measured in two phases per chunk of a sweep. First every worker process searches: it calls each
of its points once and keeps only PyTorch's pick. What a process compiles for one shape it reuses for the next of
the same kind (torch_library.SEARCH_FAMILIES: precision, layout, kernel, stride, grouping): in one worker's timeline
a kind's first search took 0.3-1.3 s and the later ones mostly 0.04-0.1 s, and with every worker taking the next free
point every worker compiled nearly every kind. So each kind goes to one worker (plan_queues: the kinds end to end,
cut into equal loads), and a worker whose queue is empty takes a point of a kind it has compiled, or one from the
longest queue where that queue would outlast a compile (steal). Then the
points are timed in the sweep's order, one at a time while the others wait, each by the worker that searched it:
the worker builds the point's operands again (its first call finds the pick) and times and checks it with
gpu.torch_kernels' own code (torch_library.conv_search, conv_time). No timed replay shares the GPU with other work.
A worker that dies is replaced, the point it held reported as an error; a point whose searcher died is searched
again by the one that times it.

SDPA's first call of a shape is host work too: PyTorch builds and finalizes a cuDNN attention graph for it (on an
H200, 46 ms of a point's ~65 in one process, torch 2.11, 158 points; the masked points' ~250 ms in a cold `full`),
and keeps it per process. So its points go through the same two phases, searched and timed by the same workers.

The workers start before the parent's first sweep (``measuring``): importing PyTorch took each 3.1-4.8 s on an H200's
host, about 5 s of a 120-point search phase's 11, and that host work can overlap the parent's GPU-timed points.
A shared cap remains: on one 120-point sample (fresh driver JIT cache each), 1, 2, 4, 6, 8 and 12 workers searched
in 18.3, 13.1, 11.2, 10.9, 9.8 and 10.0 s, each worker keeping one core busy, and a search took twice as long beside
five others as alone (the workers' summed search seconds 37.5 against 21.4 for two). The driver's JIT cache is
shared on disk and matters: without it the same searches took twice as long.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

# Worker processes at most (and two CPUs left to this process and the system). The searches do not scale past
# about four: on GPU 0 of a 2x H200 lease (32 CPUs, 2026-11-28, .ab/pool_scaling.py, each count on its own
# 240-point sample of the grid) 4, 8, 12, 16 and 24 workers searched in 10.6, 13.6, 10.3, 10.8 and 15.3 s, so
# something the processes share (not CPU) caps them at ~23 searches a second; and each idle worker slowed the
# timing phase (16.8, 22.0, 22.9, 28.4 and 39.2 ms a point). Six keeps a margin for a slower host's searches.
WORKERS = 6
MIN_POINTS = 64        # fewer points: measured in this process (starting the workers, ~5 s, would cost more)
CHUNK = 512            # points searched before they are timed (a Ctrl-C loses at most one chunk's searches)
# A search kind's first search in a process costs about as much as this many later ones: in one worker's timeline
# (profiles/h200-sxm/2026-11-28-suite-s27, search-trace) a kind's first took 0.3-1.3 s (median ~0.8), the next ones
# 0.04-0.1 s (median ~0.06).
FIRST_SEARCH = 12
KEEP_BYTES = 4 << 30   # a worker's cached memory kept between its points (trim)


def count(points: int) -> int:
    """Worker processes for sweeps of ``points`` library points in all (0: measure them in this process)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = min(WORKERS, cpus - 2)
    return n if points >= MIN_POINTS and n >= 2 else 0


def search_kind(family: str, case: dict):
    """torch_library.SEARCH_FAMILIES' kind of a case (None for a family without one)."""
    from hwprobe.probes.calibration.torch_library import SEARCH_FAMILIES

    fam = SEARCH_FAMILIES.get(family)
    return fam.kind(case) if fam else None


def plan_queues(kinds: list, workers: int, home: dict | None = None) -> list[deque[int]]:
    """Each worker's queue of case indices (None kinds left out: any worker takes those). A kind is what a process
    compiles once for every shape of it (SEARCH_FAMILIES), so its cases stay together: the kinds are laid end to end,
    those with a ``home`` (their searcher in an earlier chunk) in their home's order first, and the line is cut into
    ``workers`` equal loads, each case weighing 1 and each kind a worker starts FIRST_SEARCH more. So a kind is split
    only at a cut, and cases keep their order within a kind."""
    groups: dict = {}
    for i, k in enumerate(kinds):
        if k is not None:
            groups.setdefault(k, []).append(i)
    queues = [deque() for _ in range(workers)]
    home = home or {}
    line = sorted(groups, key=lambda k: min(home.get(k, workers), workers))
    target = (sum(map(len, groups.values())) + FIRST_SEARCH * (len(groups) + workers - 1)) / workers
    w, load = 0, 0.0
    for k in line:
        if load >= target - FIRST_SEARCH and w < workers - 1:      # a cut between kinds, a little early, splits none
            w, load = w + 1, 0.0
        load += FIRST_SEARCH
        for i in groups[k]:
            if load >= target and w < workers - 1:                  # a cut inside a kind: the next worker compiles it
                w, load = w + 1, float(FIRST_SEARCH)
            queues[w].append(i)
            load += 1
    return _to_homes(queues, kinds, home)


def _to_homes(segments: list[deque[int]], kinds: list, home: dict) -> list[deque[int]]:
    """The segments given to the workers, largest first, each to the free worker most of its cases' kinds call home."""
    queues: list = [None] * len(segments)
    for seg in sorted(segments, key=len, reverse=True):
        free = [w for w, q in enumerate(queues) if q is None]
        queues[max(free, key=lambda w: (sum(home.get(kinds[i]) == w for i in seg), -w))] = seg
    return queues


def steal(queues: list[deque[int]], kinds: list, seen: set, force: bool = False) -> int | None:
    """A case for a worker whose own queue is empty: the last queued case of a kind it has searched (no compile), else
    the last of the longest queue where that queue holds more than FIRST_SEARCH cases (a compile then costs less than
    waiting for its owner) or ``force`` (no worker is busy); None: stay idle."""
    for q in sorted(queues, key=len, reverse=True):
        for j in range(len(q) - 1, -1, -1):
            if kinds[q[j]] in seen:
                i = q[j]
                del q[j]
                return i
    longest = max(queues, key=len, default=None)
    if longest and (len(longest) > FIRST_SEARCH or force):
        return longest.pop()
    return None


def _serve(conn, device: int) -> None:
    """A worker: ("search", family, case) builds the case and calls it once (cuDNN's search or graph build; PyTorch
    keeps the result), ("time", family, case) builds it again, times and checks it; each answered ("ok", seconds or
    None) or ("error", the exception); None ends it. It imports PyTorch and loads cuDNN's library at once, host
    work only, and makes its CUDA context at its first message, so it can start while the parent still measures."""
    import signal

    import torch

    from hwprobe.probes.calibration import torch_library as lib

    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's: it ends the workers (Pool.close)
    torch.backends.cudnn.version()
    msg = conn.recv()
    if msg is None:
        return
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True
    with torch.inference_mode():
        while msg is not None:
            op, family, case = msg
            try:
                conn.send(("ok", answer(torch, lib.SEARCH_FAMILIES[family], op, case)))
            except Exception as e:
                try:
                    conn.send(("error", e))
                except Exception:                   # an exception that does not pickle: its text
                    conn.send(("error", RuntimeError(f"{type(e).__name__}: {e}")))
            finally:
                trim(torch)
            msg = conn.recv()


def trim(torch) -> None:
    """Give a worker's cached memory back to the driver once it holds more than KEEP_BYTES; six workers holding
    KEEP_BYTES each leave most of the GPU to the one that searches or times. Freeing after every point took 0.67 ms
    a point in the forty-first session's step timing (~1.1 s over a `full` run's 1640 conv points), but the saving
    did not show in `full`: the timing phase took 24.82 s with this rule (2026-11-29-ab-s42) against 24.82 and
    25.17 s without it (2026-11-29-s41), on other leases."""
    if torch.cuda.memory_reserved() > KEEP_BYTES:
        torch.cuda.empty_cache()


def answer(torch, fam, op: str, case: dict):
    """A worker's result for one request: ``fam.search`` makes the case's first call; "time" then times it, and
    "search" checks that call's output. So the check's FP32 reference is first run in a process (cuBLAS's handle,
    kernels loaded on first use) while every worker searches, not in the timing phase, where one point runs at a
    time; and a wrong output is reported before the point is timed. On an H200 (547 conv points, 6 workers,
    2026-11-29) the timing phase's first point of a kind per worker took 1.54-1.58 s in all against 2.03 s, and the
    slowest points ~110 ms against 130-200; the whole phase 8.3-8.5 s against 8.8 s."""
    searched = fam.search(torch, case)
    if op == "search":
        fam.check(searched)
        return None
    return fam.time(torch, case, searched)


class Pool:
    """Worker processes on one GPU (spawned: a CUDA context each)."""

    def __init__(self, workers: int, device: int, serve=None) -> None:
        import multiprocessing as mp

        self._mp, self.device, self.serve = mp.get_context("spawn"), device, serve or _serve
        self.slots = [self._start() for _ in range(workers)]
        self.seen: list[set] = [set() for _ in range(workers)]   # the search kinds each worker has searched
        self.home: dict = {}                                      # a kind's first searcher: later chunks go there

    def _start(self):
        here, there = self._mp.Pipe()
        proc = self._mp.Process(target=self.serve, args=(there, self.device), daemon=True, name="hwprobe-library")
        proc.start()
        there.close()
        return here, proc

    def ask(self, i: int, msg) -> None:
        self.slots[i][0].send(msg)

    def answer(self, i: int):
        """Worker ``i``'s reply; a worker that died is replaced and its reply is the error."""
        conn, proc = self.slots[i]
        try:
            return conn.recv()
        except (EOFError, OSError) as e:
            proc.join(timeout=5)
            self.slots[i] = self._start()
            self.seen[i] = set()
            self.home = {k: w for k, w in self.home.items() if w != i}
            return "error", RuntimeError(f"library worker exited ({proc.exitcode}): {type(e).__name__}")

    def search(self, family: str, cases: list[dict], check=lambda: None,
               kinds: list | None = None) -> tuple[dict[int, int], dict[int, BaseException]]:
        """Every case searched by a worker: ({case index: its worker}, {case index: the exception its search raised}).
        ``kinds``: each case's search kind (search_kind; None: any worker). A kind's cases go to the worker that
        plan_queues gives them; a free worker takes from its own queue, then the shared one, then steals (steal)."""
        from multiprocessing.connection import wait

        kinds = kinds or [None] * len(cases)
        queues = plan_queues(kinds, len(self.slots), self.home)
        shared = deque(i for i, k in enumerate(kinds) if k is None)
        busy, free = {}, list(range(len(self.slots)))
        owner: dict[int, int] = {}
        failed: dict[int, BaseException] = {}
        while any(queues) or shared or busy:
            check()
            for w in sorted(free, key=lambda w: not (queues[w] or shared)):    # own work first, then steals
                i = queues[w].popleft() if queues[w] else shared.popleft() if shared else steal(
                    queues, kinds, self.seen[w], force=not busy)
                if i is not None:
                    self.ask(w, ("search", family, cases[i]))
                    busy[w] = i
            free = [w for w in free if w not in busy]
            ready = set(wait([self.slots[w][0] for w in busy]))
            for w in [w for w in busy if self.slots[w][0] in ready]:
                i = busy.pop(w)
                status, got = self.answer(w)
                if status == "ok":
                    owner[i] = w
                    if kinds[i] is not None:
                        self.seen[w].add(kinds[i])
                        self.home.setdefault(kinds[i], w)
                else:
                    failed[i] = got
                free.append(w)
        return owner, failed

    def close(self) -> None:
        for conn, _ in self.slots:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for conn, proc in self.slots:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
            conn.close()


@contextmanager
def measuring(torch, workers: int, serve=None, kind=None):
    """``sweep``'s ``measured`` for ``workers`` worker processes (None below two: measure in this process):
    ``measured(cases, family)`` takes the cases in chunks of CHUNK, each chunk searched by all workers at once, then
    timed one point at a time, and gives (case, seconds or the exception) in the cases' order.
    ``measured.phases[family]`` adds up the seconds spent starting the workers, searching and timing.

    The workers are spawned as the block is entered and end with it: their PyTorch imports (the module docstring)
    overlap whatever this process measures before its first sweep, and they touch the GPU only from their first
    point on, after this process has freed its cached memory for them. ``serve``: the workers' loop (_serve; a
    test's stand-in)."""
    if workers < 2:
        yield None
        return
    kind = kind or search_kind
    t0 = time.perf_counter()
    pool = Pool(workers, torch.cuda.current_device(), serve)
    spawned_s = time.perf_counter() - t0

    def run(cases: list[dict], family: str = "conv") -> Iterator[tuple[dict, object]]:
        from hwprobe.interrupt import check as check_interrupt

        phases = run.phases.setdefault(family, {"start_s": 0.0, "search_s": 0.0, "time_s": 0.0})
        if not run.freed:                  # the first sweep: the workers' contexts get this process's cached memory
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            phases["start_s"] += spawned_s
            run.freed = True
        for start in range(0, len(cases), CHUNK):
            chunk = cases[start:start + CHUNK]
            t0 = time.perf_counter()
            owner, failed = pool.search(family, chunk, check_interrupt,     # every search done: the GPU is quiet
                                        [kind(family, c) for c in chunk])
            t1 = time.perf_counter()
            phases["search_s"] += t1 - t0
            for i, case in enumerate(chunk):
                got = failed.get(i)
                if got is None:
                    check_interrupt()
                    pool.ask(owner[i], ("time", family, case))
                    _, got = pool.answer(owner[i])
                yield case, got
            phases["time_s"] += time.perf_counter() - t1

    run.phases, run.freed = {}, False
    try:
        yield run
    finally:
        pool.close()
