"""gpu.torch_kernels' convolution points measured by worker processes: cuDNN's search in parallel, the timing alone.

A convolution shape's first call under cudnn.benchmark searches cuDNN's algorithms, and that search is host work:
cuDNN builds a plan for every engine it lists, compiling runtime-compiled kernels with NVRTC. On an H100 (40
sampled FP16 grid points) it took 13.6 s of wall, 12 ms of it on the GPU; py-spy put 70% of the search in NVRTC
and 20% in the driver. In one process it does not parallelize (8 threads searched 48 shapes in 4.2 s, one thread
4.9 s) and PyTorch keeps the plan it picks per thread, so the point must be timed where it was searched.

So each worker process holds one point at a time: all workers search their points at once (separate processes
compile in parallel; the GPU sees only the searches' single timed runs of each plan, as in a user's first call),
then each times its point in turn while the others wait, so no timed replay shares the GPU with other work. The
timing and check are gpu.torch_kernels' own (torch_library.conv_search, conv_time). A worker that dies is
replaced and its point reported as an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

WORKERS = 8            # worker processes at most (and at most half the CPUs this process may use)
MIN_POINTS = 64        # fewer points: measured in this process (starting the workers, ~5 s, would cost more)


def count(points: int) -> int:
    """Worker processes for a sweep of ``points`` convolution points (0: measure them in this process)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = min(WORKERS, cpus // 2)
    return n if points >= MIN_POINTS and n >= 2 else 0


def _serve(conn, device: int) -> None:
    """A worker: ("search", case) builds and first-calls the case, ("time", None) times and checks it; each answered
    ("ok", seconds or None) or ("error", the exception); None ends it."""
    import signal

    import torch

    from hwprobe.probes.calibration import torch_library as lib

    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's: it ends the workers (Pool.close)
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True
    held = None
    with torch.inference_mode():
        while (msg := conn.recv()) is not None:
            op, case = msg
            try:
                if op == "search":
                    held = (case["precision"], lib.conv_search(torch, case))
                    conn.send(("ok", None))
                else:
                    conn.send(("ok", lib.conv_time(torch, *held)))
            except Exception as e:
                try:
                    conn.send(("error", e))
                except Exception:                   # an exception that does not pickle: its text
                    conn.send(("error", RuntimeError(f"{type(e).__name__}: {e}")))
            finally:
                if op != "search" or held is None:
                    held = None
                    torch.cuda.empty_cache()


class Pool:
    """Worker processes on one GPU (spawned: a CUDA context each)."""

    def __init__(self, workers: int, device: int, serve=None) -> None:
        import multiprocessing as mp

        self._mp, self.device, self.serve = mp.get_context("spawn"), device, serve or _serve
        self.slots = [self._start() for _ in range(workers)]

    def _start(self):
        here, there = self._mp.Pipe()
        proc = self._mp.Process(target=self.serve, args=(there, self.device), daemon=True, name="hwprobe-conv")
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
            return "error", RuntimeError(f"conv worker exited ({proc.exitcode}): {type(e).__name__}")

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
def measuring(torch, workers: int, serve=None):
    """``sweep``'s ``measured`` for ``workers`` worker processes (None below two: measure in this process): the cases
    in batches of ``workers``, each batch searched at once, then timed one point at a time; (case, seconds or the
    exception) in the cases' order. The workers start at the first sweep and end with the block. ``serve``: the
    workers' loop (_serve; a test's stand-in)."""
    if workers < 2:
        yield None
        return
    pools: list[Pool] = []

    def run(cases: list[dict]) -> Iterator[tuple[dict, object]]:
        from hwprobe.interrupt import check as check_interrupt

        if not pools:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            pools.append(Pool(workers, torch.cuda.current_device(), serve))
        pool = pools[0]
        for start in range(0, len(cases), workers):
            check_interrupt()
            batch = cases[start:start + workers]
            for i, case in enumerate(batch):
                pool.ask(i, ("search", case))
            searched = [pool.answer(i) for i in range(len(batch))]     # every search done: the GPU is quiet
            for i, (case, (status, got)) in enumerate(zip(batch, searched, strict=True)):
                if status == "ok":
                    pool.ask(i, ("time", None))
                    status, got = pool.answer(i)
                yield case, got

    try:
        yield run
    finally:
        for pool in pools:
            pool.close()
