"""The pairwise NCCL pass between hosts (gpu.nccl_pairs) on CPU: rounds of disjoint host pairs, each rank in its
pair's group with its leader's id, the slow pair and the slow host named; the MPI orchestration over threads
(tests/test_distributed.FakeComm) with a fake NCCL engine and a fake timer."""

from __future__ import annotations

import threading
import types

import pytest

from hwprobe.probes.interconnect import ncclpairs as NP
from hwprobe.vocab import Verdict
from tests.test_distributed import run_ranks


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_every_host_pair_once_in_rounds_of_disjoint_pairs(n):
    hosts = [f"n{i:02d}" for i in range(n)]
    rounds = NP.host_rounds(hosts * 2)                  # two ranks per host: hosts count once
    seen = [p for r in rounds for p in r]
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2
    for r in rounds:
        used = [h for p in r for h in p]
        assert len(used) == len(set(used))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)


def test_each_rank_joins_its_pairs_ranks_or_sits_the_round_out():
    hosts = ["a", "a", "b", "b", "c", "c"]
    rnd = [("a", "c")]
    assert NP.group_of(rnd, hosts, 1) == (("a", "c"), [0, 1, 4, 5])
    assert NP.group_of(rnd, hosts, 2) is None


def _bw(pairs: dict[str, float]) -> dict:
    return {tuple(f"gpu-{h}" for h in k.split("-")): v * 1e9 for k, v in pairs.items()}   # names with a dash


def test_a_slow_link_is_a_slow_pair_and_fails_its_two_nodes():
    pv = NP.judge_pairs(_bw({"a-b": 40, "a-c": 41, "a-d": 40, "b-c": 39.5, "b-d": 22, "c-d": 40.5}))
    assert pv.slow_pairs == [("gpu-b", "gpu-d")] and pv.slow_hosts == []
    v = NP.verdict(pv, 64 << 20)
    assert v.verdict == Verdict.FAIL and v.values["nodes"] == ["gpu-b", "gpu-d"]
    assert "gpu-b+gpu-d 22.0 GB/s" in v.reason


def test_a_slow_host_is_named_when_every_pair_it_is_in_is_slow():
    pv = NP.judge_pairs(_bw({"a-b": 40, "a-c": 41, "a-d": 18, "b-c": 39.5, "b-d": 19, "c-d": 18.5,
                             "a-e": 40, "b-e": 41, "c-e": 40, "d-e": 17}))
    assert pv.slow_hosts == ["gpu-d"] and len(pv.slow_pairs) == 4 and all("gpu-d" in p for p in pv.slow_pairs)
    v = NP.verdict(pv, 64 << 20)
    assert v.verdict == Verdict.FAIL and v.values["nodes"] == ["gpu-d"] and "slow host(s) gpu-d" in v.reason


def test_an_even_fleet_passes_and_too_few_pairs_say_why():
    assert NP.verdict(NP.judge_pairs(_bw({"a-b": 40, "a-c": 39, "b-c": 40.5})), 1).verdict == Verdict.PASS
    v = NP.verdict(NP.judge_pairs(_bw({"a-b": 40})), 1)
    assert v.verdict == Verdict.NOT_AVAILABLE and "needs 3 or more" in v.reason


class _Engine:
    name, library = "fake", "fake"

    def __init__(self):
        self.made = 0

    def unique_id(self):
        self.made += 1
        return f"uid{self.made}"

    def version_text(self):
        return "2.99.0"


def test_the_rounds_over_mpi_ranks_file_one_record_per_pair_and_the_verdict(monkeypatch):
    from hwprobe.probes.interconnect import ncclapi

    hosts = ["a", "a", "b", "b", "c", "c", "d", "d"]
    eng = _Engine()
    monkeypatch.setattr(ncclapi, "load", lambda prefer="auto": eng)
    calls = []
    slow = {"b", "d"}                                    # the b-d link is slow
    here = threading.local()                             # the calling rank and its rounds so far

    def fake_time(e, dev, n, uid, rank, size, samples):
        pair = NP.group_of(NP.host_rounds(hosts)[here.rounds], hosts, here.rank)[0]
        here.rounds += 1
        calls.append((uid, n, rank, pair))
        return [1.0 if set(pair) == slow else 0.5] * samples

    def fn(comm, r):
        here.rank, here.rounds = r, 0
        ctx = types.SimpleNamespace(device=types.SimpleNamespace(index=r % 2), log=lambda m: None)
        world = types.SimpleNamespace(rank=r, host=hosts[r])
        return list(NP._run_mpi(ctx, comm, world, hosts, 64 << 20, 3, 0.05, 3.5, "auto", runner=fake_time))

    out = run_ranks(8, fn)
    assert all(not recs for recs in out[1:])               # only rank 0 files
    recs = out[0]
    pairs = [m for m in recs if m.kind == "memory"]
    assert sorted(m.link for m in pairs) == sorted(f"nccl_pair.{a}+{b}" for a, b in
                                                  [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"),
                                                   ("c", "d")])
    bd = next(m for m in pairs if m.link == "nccl_pair.b+d")
    ab = next(m for m in pairs if m.link == "nccl_pair.a+b")
    assert bd.value == pytest.approx((64 << 20) * 1.5 / 1.0) and ab.value == pytest.approx(2 * bd.value)
    assert bd.params["ranks"] == 4 and bd.params["scope"] == "world"
    finding = recs[-1]
    assert finding.params["health"]["verdict"] == "fail" and finding.params["health"]["values"]["nodes"] == ["b", "d"]
    assert finding.params["scope"] == "world"
    assert len(calls) == 6 * 4                             # every pair once, on each of its 4 ranks
    assert eng.made == 6                                   # one id per pair, made by the pair's lowest rank
    by_pair = {}
    for uid, n, rank, pair in calls:
        by_pair.setdefault(pair, set()).add((uid, n, rank))
    assert all(len({u for u, _, _ in v}) == 1 and {q for _, _, q in v} == {0, 1, 2, 3} for v in by_pair.values())


def test_one_host_or_one_process_skips_with_the_reason(monkeypatch):
    from hwprobe import distributed
    from hwprobe.errors import Skip

    monkeypatch.setattr(distributed, "detect", lambda env=None, host=None: distributed.World(host="a"))
    with pytest.raises(Skip, match="under srun or mpirun"):
        next(NP.run(types.SimpleNamespace()))
    monkeypatch.setattr(distributed, "detect", lambda env=None, host=None: distributed.World(1, 2, 1, 2, "a", "slurm"))
    monkeypatch.setattr(distributed, "comm_world", lambda w=None, required=False: types.SimpleNamespace(
        allgather=lambda v: ["a", "a"]))
    with pytest.raises(Skip, match="2 ranks on one host"):
        next(NP.run(types.SimpleNamespace()))
