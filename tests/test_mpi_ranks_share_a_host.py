"""Ranks of one launch on one host (2x H200 under mpiexec, 2026-11-27): they must not read each other as another
user's work on the GPU, and they take turns on the host link they share."""

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

from hwprobe import distributed
from hwprobe.probes.interconnect import host


class _Comm:
    def __init__(self, rank: int, local_sizes: list[int]):
        self.rank, self.local_sizes, self.barriers = rank, local_sizes, 0

    def allgather(self, x):
        return self.local_sizes if isinstance(x, int) else [x] * len(self.local_sizes)

    def Barrier(self):
        self.barriers += 1

    def Get_rank(self):
        return self.rank


def _turns(monkeypatch, local_rank: int, local_sizes: list[int]) -> tuple[list[str], _Comm]:
    comm = _Comm(local_rank, local_sizes)
    world = distributed.World(rank=local_rank, size=2, local_rank=local_rank, local_size=2, launcher="openmpi")
    monkeypatch.setattr(distributed, "detect", lambda: world)
    monkeypatch.setattr(distributed, "comm_world", lambda w: comm)
    monkeypatch.setattr(distributed, "complete", lambda w, c: w)
    order = []

    def measured(ctx, max_mib, pageable):
        order.append(f"measured at barrier {comm.barriers}")
        yield "figure"

    monkeypatch.setattr(host, "_measure", measured)
    out = list(host.run(None))
    assert out == ["figure"]
    return order, comm


def test_local_ranks_take_turns_on_the_host_link(monkeypatch):
    first, c0 = _turns(monkeypatch, 0, [2, 2])
    second, c1 = _turns(monkeypatch, 1, [2, 2])
    assert first == ["measured at barrier 0"] and second == ["measured at barrier 1"]
    assert c0.barriers == c1.barriers == 2          # every rank passes every turn's barrier, or the others hang


def test_a_plain_run_measures_at_once(monkeypatch):
    monkeypatch.setattr(distributed, "detect", lambda: distributed.World())
    monkeypatch.setattr(host, "_measure", lambda ctx, m, p: iter(["figure"]))
    assert list(host.run(SimpleNamespace())) == ["figure"]


CHILD = textwrap.dedent("""
    import json, sys, time
    from hwprobe.device import nvml
    print(json.dumps(sorted(nvml._job_ranks())), flush=True)
""")


def _job_ranks_seen(env_extra: dict) -> tuple[list[int], int]:
    """A sibling process (same parent: this test) and a child asking for its job's ranks."""
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "SLURM_"))}
        r = subprocess.run([sys.executable, "-c", CHILD], env={**env, **env_extra}, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        import json

        return json.loads(r.stdout.strip().splitlines()[-1]), sibling.pid
    finally:
        sibling.kill()
        sibling.wait()


def test_the_other_ranks_of_the_launch_are_not_other_users_work():
    seen, sib = _job_ranks_seen({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})
    assert sib in seen


def test_a_plain_run_counts_every_other_process():
    seen, sib = _job_ranks_seen({})
    assert seen == []
