"""hwprobe.probes.ranks: rank processes spawned, their reports collected in rank order, a rank that dies or says
nothing reported as failed, and the rest stopped (no GPU needed: the ranks here only report)."""

from __future__ import annotations

import os
import time

from hwprobe.probes import ranks


def report(rank: int, mode: str, conn) -> None:
    if mode == "ok" or (mode == "one fails" and rank == 0):
        conn.send({"rank": rank, "ok": True, "pid": os.getpid()})
    elif mode == "one fails":
        conn.send({"rank": rank, "ok": False, "error": "RuntimeError: peer"})
    elif mode == "dies":
        os._exit(3)
    else:                                   # "hangs": a rank stuck in a collective
        time.sleep(60)
    conn.close()


def test_reports_come_back_in_rank_order_from_processes_of_their_own():
    got = ranks.spawn([5, 7], report, lambda rank, dev: (rank, "ok"), "hwprobe-test", 60)
    assert [r["rank"] for r in got] == [0, 1] and all(r["ok"] for r in got)
    assert len({r["pid"] for r in got} | {os.getpid()}) == 3


def test_a_failing_dead_or_silent_rank_is_a_failed_report():
    got = ranks.spawn([0, 1], report, lambda rank, dev: (rank, "one fails"), "hwprobe-test", 60)
    assert got[0]["ok"] and not got[1]["ok"] and "peer" in got[1]["error"]
    dead = ranks.spawn([0], report, lambda rank, dev: (rank, "dies"), "hwprobe-test", 60)
    assert not dead[0]["ok"] and "exited with code 3" in dead[0]["error"]
    t0 = time.monotonic()
    silent = ranks.spawn([0], report, lambda rank, dev: (rank, "hangs"), "hwprobe-test", 2)
    assert not silent[0]["ok"] and "no report within 2 s" in silent[0]["error"] and time.monotonic() - t0 < 20
