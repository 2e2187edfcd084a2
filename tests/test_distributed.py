"""CPU tests of hwprobe.distributed: the world from each launcher's variables, GPUs per local rank, and the
collective steps (id broadcast, agreement, gather, merge) over a fake communicator whose ranks are threads."""

from __future__ import annotations

import os
import threading

import pytest

from hwprobe import distributed as D
from hwprobe.errors import InputError
from hwprobe.profile import validate_dict
from hwprobe.profile_build import from_measurements
from tests.helpers import meas


@pytest.mark.parametrize("env,want", [
    ({}, (0, 1, 0, 1, "none")),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "3",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, (3, 8, 3, 4, "openmpi")),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}, (1, 2, 1, 2, "mpich")),
    ({"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "16", "SLURM_LOCALID": "1"}, (5, 16, 1, None, "slurm")),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "16"}, (0, 1, 0, 1, "none")),       # a batch script, not an srun step
    ({"PMIX_RANK": "2", "PMIX_SIZE": "4"}, (2, 4, -1, None, "pmix")),
])
def test_detect(env, want):
    w = D.detect(env, host="node1")
    assert (w.rank, w.size, w.local_rank, w.local_size, w.launcher) == want
    assert w.host == "node1" and w.distributed == (want[1] > 1) and w.root == (want[0] == 0)


def test_detect_rejects_bad_values():
    with pytest.raises(InputError, match="OMPI_COMM_WORLD_RANK"):
        D.detect({"OMPI_COMM_WORLD_RANK": "x", "OMPI_COMM_WORLD_SIZE": "2"})
    with pytest.raises(InputError, match="outside"):
        D.detect({"PMI_RANK": "4", "PMI_SIZE": "4"})


def test_local_ranks_and_gpus():
    hosts = ["a", "a", "b", "a", "b"]
    assert D.local_ranks(hosts) == [(0, 3), (1, 3), (0, 2), (2, 3), (1, 2)]
    assert D.gpu_for(D.World(rank=9, size=16, local_rank=5, local_size=8), 8) == 5
    assert D.gpu_for(D.World(rank=9, size=16, local_rank=5, local_size=8), 1) == 0      # one GPU per rank
    with pytest.raises(InputError, match="no CUDA GPU"):
        D.gpu_for(D.World(), 0)
    assert D.comm_world(D.World()) is None                                              # a plain run: no MPI


class FakeComm:
    """An MPI communicator over threads: each collective is a barrier-separated exchange through a shared slot."""

    def __init__(self, shared, rank):
        self.s, self.rank = shared, rank

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.s["n"]

    def _exchange(self, value):
        self.s["slots"][self.rank] = value
        self.s["barrier"].wait()
        got = list(self.s["slots"])
        self.s["barrier"].wait()
        return got

    def allgather(self, v):
        return self._exchange(v)

    def bcast(self, v, root=0):
        return self._exchange(v)[root]

    def gather(self, v, root=0):
        got = self._exchange(v)
        return got if self.rank == root else None


def run_ranks(n, fn):
    shared = {"n": n, "slots": [None] * n, "barrier": threading.Barrier(n)}
    out = [None] * n
    errors = []

    def body(r):
        try:
            out[r] = fn(FakeComm(shared, r), r)
        except BaseException as e:  # surface a rank's failure in the test
            errors.append(e)

    threads = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors, errors
    return out


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_unique_id_agreement_and_min(n):
    made = []

    def fn(comm, r):
        uid = D.bcast_unique_id(comm, lambda: made.append(r) or bytes(range(128)))
        ok = D.agree(comm, r != 2, f"rank {r} has no NCCL" if r == 2 else "")
        low = D.agree_min(comm, 1000 - r)
        world = D.complete(D.World(r, n, -1, None, f"h{r % 2}", "pmix"), comm)
        return uid, ok, low, world

    res = run_ranks(n, fn)
    assert made == [0]                                         # only rank 0 made the id
    assert all(uid == bytes(range(128)) for uid, *_ in res)
    for _, (ok, why), low, _w in res:
        assert ok == (n <= 2) and low == 1000 - (n - 1)
        assert why == ([] if n <= 2 else ["rank 2: rank 2 has no NCCL"])
    if n == 8:
        assert [(w.local_rank, w.local_size) for *_, w in res] == [(r // 2, 4) for r in range(8)]


def _rank_records(r: int):
    recs = [meas("fp32.cuda_core.ffma", 60e12 + r * 1e12, precision="fp32", exec_unit="cuda_core",
                 path="instruction", theory=67e12)]
    if r == 0:   # rank 0 files the collective for the whole world
        m = meas("nccl.all_reduce.busbw", 340e9, kind="memory", unit="B/s", theory=450e9, link="nccl.all_reduce",
                 params={"link_kind": "collective", "ceiling_key": "busbw", "scope": "world", "ranks": 4,
                         "endpoints": [{"rank": q, "host": f"h{q // 2}", "gpu": q % 2} for q in range(4)]})
        recs.append(m)
    if r % 2 == 1:
        recs.append(meas("p2p.delegated", 0, kind="info", unit="", status="skipped", reason="rank 0 measured",
                         params={"delegated_to": r - 1}))
    return recs


def test_gather_and_merge_four_ranks_into_one_profile():
    def fn(comm, r):
        w = D.World(r, 4, r % 2, 2, f"h{r // 2}", "openmpi")
        dev = {"index": r % 2, "name": "H200", "uuid": f"GPU-{r}", "pci_bus_id": f"0000:{r}:00.0", "kind": "gpu"}
        return D.gather_outputs(comm, D.rank_output(w, dev, _rank_records(r)))

    res = run_ranks(4, fn)
    assert res[1] is None and res[2] is None and res[3] is None
    outs = res[0]
    assert [o.rank for o in outs] == [0, 1, 2, 3]
    merged = D.merge(outs)
    metrics = [m.metric for m in merged]
    assert metrics.count("nccl.all_reduce.busbw") == 1
    assert metrics[:2] == ["fp32.cuda_core.ffma", "nccl.all_reduce.busbw"]
    assert {"rank1.fp32.cuda_core.ffma", "rank2.fp32.cuda_core.ffma", "rank3.fp32.cuda_core.ffma"} <= set(metrics)
    assert "p2p.delegated" not in metrics                 # rank 0 and 2 are in the world: their figures stand
    ffma3 = next(m for m in merged if m.metric == "rank3.fp32.cuda_core.ffma")
    assert ffma3.params["rank"] == 3 and ffma3.params["host"] == "h1" and ffma3.params["gpu"]["uuid"] == "GPU-3"
    coll = next(m for m in merged if m.metric == "nccl.all_reduce.busbw")
    assert "rank" not in coll.params                      # a world figure names all ranks in its endpoints
    devices = D.merged_devices(outs)
    assert [(d["rank"], d["host"]) for d in devices] == [(0, "h0"), (1, "h0"), (2, "h1"), (3, "h1")]
    prof = from_measurements(devices[0], merged, devices=devices)
    best = prof.compute["fp32"]["cuda_core"]["instruction"]
    assert best.value == 63e12 and best.params["rank"] == 3           # the best rank's figure, named
    assert len(prof.links["nccl.all_reduce"].endpoints) == 4
    validate_dict(prof.to_dict(), "merged profile")


def test_merge_keeps_a_delegated_skip_whose_delegate_is_absent():
    out = D.RankOutput(1, "h", {"index": 0}, [r.to_dict() for r in _rank_records(1)])
    merged = D.merge([out])
    assert [m.metric for m in merged] == ["fp32.cuda_core.ffma", "p2p.delegated"]


def test_finish_world_gives_rank0_the_merge_and_others_nothing():
    def fn(comm, r):
        w = D.World(r, 3, r, 3, "h", "mpich")
        return D.finish_world(w, comm, {"index": r, "name": "H200", "kind": "gpu"}, _rank_records(r))

    res = run_ranks(3, fn)
    assert res[1] is None and res[2] is None
    merged, devices = res[0]
    assert [d["rank"] for d in devices] == [0, 1, 2]
    assert sum(m.metric.endswith("fp32.cuda_core.ffma") for m in merged) == 3


def test_finish_run_rewrites_rank0_results_and_removes_the_others(tmp_path):
    import json

    from hwprobe.results import read_measurements

    dirs = [tmp_path / f"r{r}" for r in range(3)]
    for d in dirs:
        d.mkdir()
        (d / "environment.json").write_text(json.dumps({"suite": "multigpu", "finished": True}))

    def fn(comm, r):
        w = D.World(r, 3, r, 3, "h", "openmpi")
        dev = {"index": r, "name": "H200", "kind": "gpu", "uuid": f"GPU-{r}"}
        return D.finish_run(dirs[r], "own profile", _rank_records(r), dev, comm=comm, world=w)

    res = run_ranks(3, fn)
    assert res[1] == res[2] == "own profile"
    assert not dirs[1].exists() and not dirs[2].exists()
    prof = res[0]
    assert [d["rank"] for d in prof.devices] == [0, 1, 2]
    assert len(prof.links["nccl.all_reduce"].endpoints) == 4
    back = read_measurements(dirs[0])
    assert sorted(m.metric for m in back if m.metric.endswith("ffma")) == \
        ["fp32.cuda_core.ffma", "rank1.fp32.cuda_core.ffma", "rank2.fp32.cuda_core.ffma"]
    env = json.loads((dirs[0] / "environment.json").read_text())
    assert env["world"]["size"] == 3 and [r["gpu"] for r in env["world"]["ranks"]] == [0, 1, 2]
    assert (dirs[0] / "profile.json").exists() and (dirs[0] / "measurements.csv").exists()


def test_the_other_ranks_leave_no_directory_behind(tmp_path, monkeypatch):
    """As hwprobe.api.run lays it out: each rank other than 0 writes its run's directory inside rank_out's temporary
    directory; after finish_run neither is left (an empty hwprobe-rank1-* stayed in the temporary folder per run)."""
    import json
    import tempfile

    from hwprobe.results import new_run_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    bases = [D.rank_out(tmp_path / "out", env={"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": "3"})
             for r in range(3)]
    assert bases[0] == tmp_path / "out" and all(os.path.dirname(b) == str(tmp_path / "tmp") for b in bases[1:])
    dirs = [new_run_dir(b, f"h-rank{r}") for r, b in enumerate(bases)]
    for d in dirs:
        (d / "environment.json").write_text(json.dumps({"suite": "multigpu", "finished": True}))

    def fn(comm, r):
        dev = {"index": r, "name": "H200", "kind": "gpu", "uuid": f"GPU-{r}"}
        return D.finish_run(dirs[r], "own profile", _rank_records(r), dev, comm=comm,
                            world=D.World(r, 3, r, 3, "h", "openmpi"))

    run_ranks(3, fn)
    assert os.listdir(tmp_path / "tmp") == []
    assert (dirs[0] / "profile.json").exists()


def test_plain_run_hooks_change_nothing(tmp_path):
    assert D.rank_device("3", env={}) == "3" and D.rank_device(None, env={}) is None
    assert D.rank_out(tmp_path, env={}) == tmp_path
    assert D.finish_run(tmp_path, "p", [], {}, world=D.World()) == "p"


@pytest.mark.parametrize("bad", [set(), {2}, {0, 3}])
def test_nccl_loads_on_every_rank_or_none(monkeypatch, bad):
    """gpu.nccl and gpu.nccl_pairs load NCCL through one rule: a rank without it makes every rank skip, each naming
    the ranks that failed and why; where every rank loads it, each goes on with its own engine."""
    from hwprobe.errors import Skip
    from hwprobe.probes.interconnect import ncclapi

    here = threading.local()

    def load(prefer="auto"):
        assert prefer == "ctypes"
        if here.rank in bad:
            raise Skip(f"no libnccl.so.2 on rank {here.rank}")
        return f"engine {here.rank}"

    def body(comm, r):
        here.rank = r
        try:
            return ncclapi.load_on_every_rank(comm, "ctypes")
        except Skip as e:
            return str(e)

    monkeypatch.setattr(ncclapi, "load", load)
    got = run_ranks(4, body)
    if not bad:
        assert got == [f"engine {r}" for r in range(4)]
    else:
        why = "; ".join(f"rank {r}: no libnccl.so.2 on rank {r}" for r in sorted(bad))
        assert got == [f"NCCL is not usable on every rank: {why}"] * 4
