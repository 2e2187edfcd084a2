"""gpu.nccl_pairs: NCCL all_reduce between every pair of hosts of an MPI job, to find the slow pair (a bad cable,
NIC or switch port) and the slow host (every pair it is in is slow).

Hosts, not GPUs: on one host gpu.p2p already times every GPU pair. N hosts take N-1 rounds (N for odd N) of disjoint
host pairs (hwprobe.probes.interconnect.pairs.matchings); the pairs of a round run at once, each over every rank
of its two hosts, with its own communicator (the lowest rank of the pair makes the unique id; every rank learns
its pair's id from one allgather). Each pair's figure is busbw (nccl-tests' definition) at one size, median of
its samples; rank 0 files one record per pair and one finding that names the slow pairs and hosts:
- a pair is slow when its busbw is below the pairs' median by more than ``min_gap`` and its robust z
  (0.6745 x (x - median) / MAD, as ``hwprobe compare``) is below -``z`` (with 3 pairs or more);
- a host is slow when every pair it is in is slow (with 2 pairs or more per host: 3 hosts or more).
The finding is a health verdict (check "nccl_pairs") whose ``values["nodes"]`` are the hosts it concerns, so the
acceptance view fails those nodes. Each round opens a communicator: NCCL's start-up (about a second across
hosts) is most of a round.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field

from hwprobe import keys as K
from hwprobe.errors import Skip
from hwprobe.health import HealthVerdict, to_measurement
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.interconnect import collectives as C
from hwprobe.probes.interconnect.common import link_params, timed_record
from hwprobe.probes.interconnect.pairs import matchings
from hwprobe.vocab import Verdict

PROBE = "gpu.nccl_pairs"
MIN_PAIRS = 3                  # fewer pairs: no median/MAD rule (as compare's MIN_GROUP)

HostPair = tuple[str, str]


def host_rounds(hosts: list[str]) -> list[list[HostPair]]:
    """Rounds of disjoint host pairs over the job's hosts (sorted, each once), every pair exactly once."""
    names = sorted(set(hosts))
    return [[(names[a], names[b]) for a, b in rnd] for rnd in matchings(len(names))]


def group_of(rnd: list[HostPair], hosts: list[str], rank: int) -> tuple[HostPair, list[int]] | None:
    """The pair this rank's host is in this round and every rank of that pair (rank order), or None (idle)."""
    me = hosts[rank]
    for pair in rnd:
        if me in pair:
            return pair, [r for r, h in enumerate(hosts) if h in pair]
    return None


def pair_key(pair: HostPair) -> str:
    return f"{pair[0]}+{pair[1]}"        # host names often hold dashes


@dataclass
class PairVerdict:
    busbw: dict[HostPair, float]                     # busbw B/s per host pair
    median: float | None
    slow_pairs: list[HostPair] = field(default_factory=list)
    slow_hosts: list[str] = field(default_factory=list)
    z: dict[HostPair, float] = field(default_factory=dict)
    note: str = ""


def judge_pairs(busbw: dict[HostPair, float], min_gap: float = 0.05, z: float = 3.5) -> PairVerdict:
    """Slow pairs by the median/MAD rule, slow hosts as those whose every pair is slow (see the module doc)."""
    if not busbw:
        return PairVerdict({}, None, note="no pair measured")
    med = statistics.median(busbw.values())
    out = PairVerdict(dict(busbw), med)
    if len(busbw) < MIN_PAIRS:
        out.note = f"{len(busbw)} pair(s): the median/MAD rule needs {MIN_PAIRS} or more"
        return out
    mad = statistics.median(abs(v - med) for v in busbw.values())
    for p, v in busbw.items():
        rz = 0.6745 * (v - med) / mad if mad > 0 else (float("-inf") if v < med else 0.0)
        out.z[p] = rz
        if v < med * (1 - min_gap) and rz < -z:
            out.slow_pairs.append(p)
    slow = set(out.slow_pairs)
    hosts = sorted({h for p in busbw for h in p})
    for h in hosts:
        mine = [p for p in busbw if h in p]
        if len(mine) >= 2 and all(p in slow for p in mine):
            out.slow_hosts.append(h)
    return out


def verdict(pv: PairVerdict, size: int) -> HealthVerdict:
    """The finding the acceptance view reads: fail with the nodes concerned, pass, or not available."""
    gb = {pair_key(p): round(v / 1e9, 2) for p, v in pv.busbw.items()}
    vals = {"busbw_GBps": gb, "median_GBps": round(pv.median / 1e9, 2) if pv.median else None, "bytes": size,
            "slow_pairs": [list(p) for p in pv.slow_pairs], "slow_hosts": pv.slow_hosts}
    if pv.note and not pv.slow_pairs:
        return HealthVerdict("nccl_pairs", Verdict.NOT_AVAILABLE, pv.note, vals, "NCCL")
    if not pv.slow_pairs:
        return HealthVerdict("nccl_pairs", Verdict.PASS, f"{len(pv.busbw)} host pairs, none slow (median busbw "
                             f"{vals['median_GBps']} GB/s)", vals, "NCCL")
    if pv.slow_hosts:
        nodes = list(pv.slow_hosts)
        told = f"slow host(s) {', '.join(pv.slow_hosts)}: every pair they are in is slow"
    else:
        nodes = sorted({h for p in pv.slow_pairs for h in p})
        told = "slow pair(s) " + ", ".join(pair_key(p) for p in pv.slow_pairs)
    pairs = ", ".join(f"{pair_key(p)} {gb[pair_key(p)]} GB/s" for p in pv.slow_pairs)
    vals["nodes"] = nodes
    return HealthVerdict("nccl_pairs", Verdict.FAIL, f"{told} ({pairs}; median {vals['median_GBps']} GB/s)",
                         vals, "NCCL")


def pair_records(results: dict[HostPair, tuple[list[float], int, int]], size: int,
                 meta: dict) -> list[Measurement]:
    """One busbw record per pair: (median-over-ranks sample times, group size, bytes) -> B/s (world scope)."""
    out = []
    for pair, (samples, n, nbytes) in sorted(results.items()):
        f = C.bus_factor("all_reduce", n)
        m = timed_record(PROBE, f"nccl_pairs.all_reduce.{pair_key(pair)}.busbw", "memory", samples,
                         work=nbytes * f, unit="B/s", link=f"nccl_pair.{pair_key(pair)}",
                         bytes_counted=f"busbw (nccl-tests: S = {nbytes} B x {f:.3g}, {n} ranks)",
                         params={**link_params("collective", list(pair), None, "busbw"), K.OP: "all_reduce", K.RANKS: n,
                                 K.BYTES: nbytes, K.SCOPE: "world", **meta})
        m.verified = True
        out.append(m)
    return out


@probe(name=PROBE, target="gpu", family="interconnect",
       summary="NCCL all_reduce between every pair of hosts (rounds of disjoint pairs): the slow pair or host",
       ranges={"size_mib": (1, 4096), "samples": (1, 100), "min_gap": (0, 1), "z": (0, None)})
def run(ctx, size_mib: int = 64, samples: int = 3, min_gap: float = 0.05, z: float = 3.5,
        engine: str = "auto") -> Iterator[Measurement]:
    """``size_mib``: the all_reduce size per pair. ``min_gap``, ``z``: the slow-pair rule (see the module doc)."""
    from hwprobe import distributed

    world = distributed.detect()
    if not world.distributed:
        raise Skip("one process: the pairwise NCCL pass runs between hosts under srun or mpirun (gpu.p2p times "
                   "the GPU pairs of one host)")
    comm = distributed.comm_world(world)
    hosts = comm.allgather(world.host)
    if len(set(hosts)) < 2:
        raise Skip(f"{len(hosts)} ranks on one host ({hosts[0]}): the pairwise pass is between hosts (gpu.p2p "
                   "times this host's GPU pairs)")
    yield from _run_mpi(ctx, comm, world, hosts, size_mib << 20, samples, min_gap, z, engine)


def _run_mpi(ctx, comm, world, hosts, size, samples, min_gap, z, engine, runner=None):
    """The rounds under MPI. ``runner(eng, n, uid, rank_in_pair, size, samples) -> sample times`` times one pair's
    all_reduce on this rank (``time_pair``; tests pass a fake)."""
    from hwprobe.probes.interconnect import ncclapi

    eng = ncclapi.load_on_every_rank(comm, engine)
    runner = runner or time_pair
    rank = comm.Get_rank()
    mine: list[tuple[HostPair, int, list[float]]] = []
    rounds = host_rounds(hosts)
    for i, rnd in enumerate(rounds):
        got = group_of(rnd, hosts, rank)
        leader_uid = eng.unique_id() if got and got[1][0] == rank else None
        uids = comm.allgather(leader_uid)
        if got is None:
            continue
        pair, ranks = got
        ctx.log(f"round {i + 1}/{len(rounds)}: {pair_key(pair)} over {len(ranks)} ranks")
        t = runner(eng, ctx.device, len(ranks), uids[ranks[0]], ranks.index(rank), size, samples)
        mine.append((pair, len(ranks), t))
    every = comm.gather(mine, root=0)
    if every is None:
        return
    per_pair: dict[HostPair, list[tuple[int, list[float]]]] = {}
    for rank_results in every:
        for pair, n, t in rank_results:
            per_pair.setdefault(pair, []).append((n, t))
    results = {}
    for pair, got in per_pair.items():
        k = min(len(t) for _, t in got)
        results[pair] = ([statistics.fmean(t[i] for _, t in got) for i in range(k)], got[0][0], size)
    meta = {"engine": eng.name, "nccl_version": eng.version_text(), K.HOSTS: sorted(set(hosts)),
            "rounds": [[list(p) for p in r] for r in rounds]}
    recs = pair_records(results, size, meta)
    yield from recs
    pv = judge_pairs({p: m.value for p, m in zip(sorted(results), recs, strict=True)}, min_gap, z)
    v = to_measurement(verdict(pv, size), PROBE)
    v.params[K.SCOPE] = "world"                  # made once for the world: merged once, never per rank
    yield v


def time_pair(eng, dev, n: int, uid, rank: int, size: int, samples: int) -> list[float]:
    """One pair's all_reduce on this rank: a communicator over the pair's ranks, the timed sweep at one size
    (out of place, nccl-tests' counts), the communicator destroyed. Sample times in seconds per operation."""
    import cupy as cp

    from hwprobe.probes.interconnect import ncclrun

    lr = ncclrun.LocalRank(rank, dev.index, eng.comm(n, uid, rank))
    try:
        with cp.cuda.Device(dev.index):
            lr.stream = cp.cuda.Stream(non_blocking=True)
        plan = ncclrun.CollPlan(("all_reduce",), [size], n, samples=samples, avg_check_bytes=0,
                                variants=("out_of_place",))
        res = ncclrun.run_ranks(eng, [lr], plan, ncclrun.comm_barrier(eng, lr))
    finally:
        lr.comm.destroy()
    point = next(r for r in res if r["op"] == "all_reduce")
    if point["wrong"]:
        raise RuntimeError(f"all_reduce over {n} ranks: {point['wrong']} of {point['checked']} elements wrong")
    return list(point["samples"])
