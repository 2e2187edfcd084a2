"""Rank processes a probe spawns, one per GPU (gpu.nccl's sweep, gpu.tp_host's torch.distributed group): start them,
collect each one's report over a pipe, and stop the rest on the first failure or past a deadline, since a rank whose
peer died waits in its collective forever."""

from __future__ import annotations

import time
from collections.abc import Callable


def spawn(devices: list[int], target: Callable, args: Callable[[int, int], tuple], name: str,
          timeout_s: float) -> list[dict]:
    """One process per GPU running ``target(*args(rank, device), conn)`` (rank = position in ``devices``), which sends
    one report dict with "ok" through ``conn``; the reports in rank order, a rank that sent none reported as failed."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    procs, conns = [], []
    for rank, dev in enumerate(devices):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=target, args=(*args(rank, dev), child), name=f"{name}-rank{rank}", daemon=True)
        p.start()
        child.close()
        procs.append(p)
        conns.append(parent)
    reports: dict[int, dict] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(reports) < len(procs) and time.monotonic() < deadline:
            for rank, (p, c) in enumerate(zip(procs, conns, strict=True)):
                if rank in reports:
                    continue
                if c.poll(0.2):
                    try:
                        reports[rank] = c.recv()
                    except EOFError:            # it died before it sent anything: the pipe closed
                        p.join(5)
                        reports[rank] = {"rank": rank, "ok": False, "error": f"worker exited with code {p.exitcode}"}
                    if not reports[rank]["ok"]:
                        deadline = min(deadline, time.monotonic() + 10)
                elif not p.is_alive() and not c.poll(0):
                    reports[rank] = {"rank": rank, "ok": False, "error": f"worker exited with code {p.exitcode}"}
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join(5)
    return [reports.get(r) or {"rank": r, "ok": False, "error": f"no report within {timeout_s:.0f} s"}
            for r in range(len(procs))]
