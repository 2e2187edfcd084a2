"""gpu.p2p: peer-to-peer between every pair of GPUs: access, link type, bandwidth and latency matrices.

For each pair (rounds of disjoint pairs timed together on NVLink/NVSwitch, one pair at a time on PCIe; see
pairs.py and p2pplan.py): copy-engine (cudaMemcpyPeerAsync) and SM copy kernels that read from or write to the
peer's memory, unidirectional and bidirectional, swept from 4 KiB to 1 GiB, the ceiling re-measured at the
best size; latency by a pointer chase into the peer's memory (a working set in its L2, and one well past it)
and a flag ping-pong between the two GPUs. Bytes counted: those that cross the link, once; bidirectional
figures count both directions. Every copy's destination is checked word by word after timing. Theory per
pair from NVML (NVLink count x rate per direction, or PCIe generation x width).

On one GPU every part skips with the reason; ``loopback`` then times the same code on GPU 0 with itself (a
self-test of the kernels and the timing; never filed as a link).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hwprobe import keys as K
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.interconnect import p2pplan as P
from hwprobe.probes.interconnect.common import GPU_CHOICES, link_params, link_theory, pick_gpus, timed_record
from hwprobe.probes.interconnect.matrix import PairMatrix
from hwprobe.probes.interconnect.p2plat import latency_records, matrix_records, topology_records
from hwprobe.probes.interconnect.pairs import Schedule, pair_key
from hwprobe.timing import policy
from hwprobe.vocab import ExecUnit, Kind

PROBE = "gpu.p2p"
PARTS = ("access", "ce", "sm.read", "sm.write", "latency.chase", "latency.pingpong")
SM_VARIANTS = ((512, 4, 2), (256, 8, 4), (1024, 2, 1), (256, 4, 8))    # (block, unroll, blocks per SM)
SCREEN_BYTES = 64 << 20
CONCURRENCY_TOLERANCE = 0.95


@dataclass
class Setup:
    """What a run of the probe holds: its GPUs, their buffers, the pair links and the chosen kernel shapes."""

    devices: list[Any]
    idx: list[int]
    pairs: dict                                  # (lo, hi) -> topology.PairLink
    access: PairMatrix
    max_bytes: int
    src: dict[int, Any] = field(default_factory=dict)
    dst: dict[int, Any] = field(default_factory=dict)
    sm: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    tag: str = ""                                # ".host" when the world spans hosts
    loopback: bool = False

    def sms(self, d: int) -> int:
        return next(x.sms for x in self.devices if x.index == d)

    def link(self, a: int, b: int):
        return self.pairs.get((min(a, b), max(a, b)))


def skip_all(ctx, reason: str) -> list[Measurement]:
    """One skip per part, each with the reason (what a one-GPU box reports)."""
    return [ctx.skip(f"p2p.{part}", reason) for part in PARTS]


@probe(name=PROBE, target="gpu", family="interconnect",
       summary="Peer-to-peer between every GPU pair: access, NVLink/PCIe link type, copy-engine and SM read/write "
               "bandwidth matrices (uni/bi, 4 KiB..1 GiB), pointer-chase and ping-pong latency",
       choices={"gpus": GPU_CHOICES, "methods": P.METHODS, "concurrent": ("auto", "yes", "no")},
       ranges={"size_step": (2, 64), "max_mib": (1, None)})
def run(ctx, gpus: str = "auto", methods: tuple[str, ...] = P.METHODS, max_mib: int | None = None,
        size_step: int = 4, bidirectional: bool = True, latency: bool = True, concurrent: str = "auto",
        loopback: bool = False) -> Iterator[Measurement]:
    """``gpus``: auto = the run's devices when it names several, else every visible GPU. ``concurrent``: time
    disjoint pairs together (auto: only when every pair has NVLinks of its own). ``loopback``: on one GPU,
    run everything GPU 0 -> GPU 0 as a self-test."""
    from hwprobe import distributed
    from hwprobe.probes.interconnect.common import visible_gpus

    world = distributed.detect()
    tag = ""
    if world.distributed:
        comm = distributed.comm_world(world)
        hosts = comm.allgather(world.host)
        leader = hosts.index(world.host)
        if leader != world.rank:
            yield ctx.skip("p2p.delegated", f"rank {world.rank}: this host's GPU pairs are measured by rank "
                                            f"{leader} on {world.host}", params={K.DELEGATED_TO: leader})
            return
        tag = f".{world.host}" if len(set(hosts)) > 1 else ""
    devs, why = pick_gpus(ctx.devices, visible_gpus() if gpus != "run" else [], gpus)
    if len(devs) < 2 and not loopback:
        names = ", ".join(f"{d.index} ({d.name})" for d in devs) or "none"
        yield from skip_all(ctx, f"{len(devs)} GPU visible ({why}: {names}): peer-to-peer needs two GPUs")
        return
    if len(devs) < 2:
        devs = devs[:1]
    setup = _setup(ctx, devs, tag, max_mib, loopback=len(devs) == 1)
    yield from topology_records(ctx, setup)
    conc = concurrent == "yes" or (concurrent == "auto" and _concurrent_ok(setup))
    if setup.loopback:
        d = setup.idx[0]
        plan = P.Plan(Schedule([d], [[(d, d)]], [[(d, d)]] if bidirectional else [], False),
                      P.transfer_sizes(setup.max_bytes, size_step), tuple(methods), bidirectional)
    else:
        plan = P.Plan.of(setup.idx, concurrent=conc, max_bytes=setup.max_bytes, step=size_step,
                         methods=tuple(methods), bidirectional=bidirectional)
    ctx.log(f"GPUs {setup.idx} ({why}); {len(plan.rounds())} rounds, sizes {plan.sizes[0]}..{plan.sizes[-1]} B, "
            f"{'disjoint pairs together' if conc else 'one pair at a time'}")
    results: dict[str, PairMatrix] = {}
    for method, bi, pairs in plan.rounds():
        yield from _round(ctx, setup, plan, method, bi, pairs, results)
    if conc and any(len(r) > 1 for r in plan.schedule.uni):
        yield from _concurrency_check(ctx, setup, plan, results)
    if latency:
        yield from latency_records(ctx, setup, plan, results)
    yield from matrix_records(ctx, setup, results, plan)
    _release(setup)


def _concurrent_ok(setup: Setup) -> bool:
    from hwprobe.probes.interconnect.topology import concurrent_ok

    return concurrent_ok(setup.pairs)


def _setup(ctx, devs, tag: str, max_mib: int | None, loopback: bool) -> Setup:
    import cupy as cp

    from hwprobe.probes.interconnect import devops
    from hwprobe.probes.interconnect.common import free_bytes_nvml, nvml_topology

    idx = [d.index for d in devs]
    _, pairs = nvml_topology(devs)
    access = PairMatrix(idx, "bool")
    for a in idx:
        for b in idx:
            if a != b:
                access.set(a, b, bool(devops.enable_peer_access(a, b)))
    want = (max_mib << 20) if max_mib else ((64 << 20) if ctx.quick else (1 << 30))
    free = free_bytes_nvml(devs)
    if free is None:
        with cp.cuda.Device(idx[0]):
            free = int(cp.cuda.runtime.memGetInfo()[0])
    cap = 1 << max(12, int(0.2 * free / 2).bit_length() - 1)     # src + dst within 20% of the free memory
    s = Setup(devs, idx, pairs, access, min(want, cap), tag=tag, loopback=loopback)
    for d in idx:
        with cp.cuda.Device(d):
            s.src[d] = cp.empty(s.max_bytes // 4, dtype=cp.uint32)
            s.dst[d] = cp.empty(s.max_bytes // 4, dtype=cp.uint32)
            if loopback:
                s.dst[-1] = cp.empty(s.max_bytes // 4, dtype=cp.uint32)   # the second direction's destination
            devops.fill_pattern(s.src[d], s.max_bytes // 4, d)
            cp.cuda.Device().synchronize()
    if want > s.max_bytes:
        ctx.log(f"largest transfer {s.max_bytes} B, not {want} B: 2 buffers per GPU within 20% of free memory")
    s.sm = {m: _screen_sm(ctx, s, m) for m in ("sm.read", "sm.write")}
    return s


def _release(setup: Setup) -> None:
    import cupy as cp

    setup.src.clear()
    setup.dst.clear()
    for d in setup.idx:
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()


# --- transfers -----------------------------------------------------------------------------------------------------

def _dst_buf(setup: Setup, a: int, b: int, second: bool):
    """The destination of a -> b; in loopback the reverse direction lands in its own buffer."""
    return setup.dst[-1] if setup.loopback and second else setup.dst[b]


def _transfer(setup: Setup, method: str, a: int, b: int, size: int, second: bool = False, shape=None):
    """A devops.Transfer moving ``size`` bytes from GPU a's source buffer to GPU b's destination by ``method``."""
    import cupy as cp
    import numpy as np

    from hwprobe.probes.interconnect import devops

    src, dst = setup.src[a].data.ptr, _dst_buf(setup, a, b, second).data.ptr
    if method == "ce":
        rt = cp.cuda.runtime

        def ce() -> None:
            rt.memcpyPeerAsync(dst, b, src, a, size, cp.cuda.get_current_stream().ptr)

        return devops.Transfer(a, ce, size)
    dev = b if method == "sm.read" else a                  # read: pull on the destination; write: push
    block, unroll, per_sm = shape or setup.sm[method]
    with cp.cuda.Device(dev):
        fn = devops.kernel(f"p2p_copy<{unroll}>")
    n16 = size // 16
    grid = max(1, min(setup.sms(dev) * per_sm, -(-n16 // block)))
    args = (np.uint64(src), np.uint64(dst), np.uint64(n16))

    def sm() -> None:
        fn((grid,), (block,), args)

    return devops.Transfer(dev, sm, size)


def _groups(setup: Setup, method: str, bi: bool, pairs, size: int, shape=None):
    from hwprobe.probes.interconnect.devops import Group

    out = []
    for a, b in pairs:
        ts = [_transfer(setup, method, a, b, size, shape=shape)]
        if bi:
            ts.append(_transfer(setup, method, b, a, size, second=True, shape=shape))
        out.append(Group(ts))
    return out


def _reset(setup: Setup, pairs, bi: bool, size: int) -> None:
    """Destinations get a pattern no copy writes (the seed of GPU -1), so a copy that never ran fails the check."""
    import cupy as cp

    from hwprobe.probes.interconnect import devops

    for a, b in pairs:
        for x, y, second in [(a, b, False)] + ([(b, a, True)] if bi else []):
            with cp.cuda.Device(y):
                devops.fill_pattern(_dst_buf(setup, x, y, second), size // 4, -1)
                cp.cuda.Device().synchronize()


def _wrong(setup: Setup, pairs, bi: bool, size: int) -> dict[tuple[int, int], int]:
    """Wrong words at each destination of the round (by (source, destination))."""
    import cupy as cp

    from hwprobe.probes.interconnect import devops

    out = {}
    for a, b in pairs:
        for x, y, second in [(a, b, False)] + ([(b, a, True)] if bi else []):
            with cp.cuda.Device(y):
                out[(x, y)] = devops.pattern_wrong(_dst_buf(setup, x, y, second), size // 4, x)
    return out


def _time(setup: Setup, groups, target_s: float, repeats: int) -> int:
    """Calibrate repetitions per sample to ``target_s`` on a single call, then time ``repeats`` samples."""
    from hwprobe.probes.interconnect.devops import time_groups
    from hwprobe.timing import iterations_for

    time_groups(groups, reps=1, warmup=1, repeats=1)
    one = max(max(g.samples) for g in groups)
    reps = iterations_for(one, target_s, lo=1, hi=4096)
    time_groups(groups, reps=reps, warmup=1, repeats=repeats)
    return reps


def _screen_sm(ctx, setup: Setup, method: str) -> tuple[int, int, int]:
    """The fastest SM copy shape on the first pair at 64 MiB (block, unroll, blocks per SM); kept for all pairs."""
    a = setup.idx[0]
    b = setup.idx[1] if len(setup.idx) > 1 else a
    if not setup.access.get(a, b) and a != b:
        return SM_VARIANTS[0]
    size = min(SCREEN_BYTES, setup.max_bytes)
    best, rates = SM_VARIANTS[0], {}
    for shape in SM_VARIANTS:
        groups = _groups(setup, method, False, [(a, b)], size, shape=shape)
        reps = _time(setup, groups, policy.rule("sweep").sample_s, policy.rule("sweep").max_samples)
        rates[shape] = size * reps / sorted(groups[0].samples)[1]
        if rates[shape] > rates[best]:
            best = shape
    ctx.log(f"{method}: kernel shape {best} ({rates[best] / 1e9:.1f} GB/s on {a}->{b} at {size} B); tried "
            + ", ".join(f"{k}: {v / 1e9:.0f}" for k, v in rates.items()))
    return best


# --- one round: sweep, then the ceiling at the best size -----------------------------------------------------------

def _names(setup: Setup, method: str, bi: bool, a: int, b: int) -> tuple[str, str | None, str]:
    """(metric stem, link key or None for loopback, ceiling key)."""
    key = P.ceiling_key(method, bi)
    if setup.loopback:
        return f"p2p.loopback.{key}.{a}-{a}", None, key
    return f"p2p{setup.tag}.{key}.{a}-{b}", pair_key(a, b).replace("p2p.", f"p2p{setup.tag}."), key


def _round(ctx, setup: Setup, plan: P.Plan, method: str, bi: bool, pairs, results) -> Iterator[Measurement]:
    usable = [(a, b) for a, b in pairs if _usable(setup, method, bi, a, b)]
    for a, b in sorted(set(pairs) - set(usable)):
        yield ctx.skip(_names(setup, method, bi, a, b)[0], f"no peer access between GPU {a} and GPU {b} "
                                                            f"({method} needs the kernel's GPU to map the other's "
                                                            "memory)")
    if not usable:
        return
    sweep: dict[tuple[int, int], list[tuple[int, float]]] = {p: [] for p in usable}
    for size in plan.sizes:
        try:
            yield from _point(ctx, setup, method, bi, usable, size, sweep)
        except Exception as e:
            yield ctx.error(f"p2p.{P.ceiling_key(method, bi)}.{size}", f"{method} {size} B on {usable}", e)
    best = _best_size(sweep)
    if best is None:
        return
    try:
        yield from _ceiling(ctx, setup, method, bi, usable, best, results)
    except Exception as e:
        yield ctx.error(f"p2p.{P.ceiling_key(method, bi)}", f"{method} ceiling at {best} B on {usable}", e)


def _usable(setup: Setup, method: str, bi: bool, a: int, b: int) -> bool:
    """CE copies run without peer access (the driver stages them); an SM read of a -> b runs on b and maps a's
    memory, an SM write runs on a and maps b's; bidirectional needs both."""
    if method == "ce" or a == b:
        return True
    if bi:
        return bool(setup.access.get(a, b) and setup.access.get(b, a))
    return bool(setup.access.get(b, a) if method == "sm.read" else setup.access.get(a, b))


def _best_size(sweep) -> int | None:
    """The size with the highest summed bandwidth over the round's pairs (verified points only)."""
    totals: dict[int, float] = {}
    for pts in sweep.values():
        for s, bw in pts:
            totals[s] = totals.get(s, 0.0) + bw
    return max(totals, key=totals.get) if totals else None


def _timed_round(ctx, setup, method, bi, pairs, size, sample_s: float, samples: int):
    """One round of concurrent transfers: fresh buffers, timed under the clock sampler, then every destination
    checked. Returns (groups, reps, wrong words per direction, the window's clocks)."""
    _reset(setup, pairs, bi, size)
    groups = _groups(setup, method, bi, pairs, size)
    with ctx.sampler.window() as win:
        reps = _time(setup, groups, sample_s, samples)
    return groups, reps, _wrong(setup, pairs, bi, size), win.summary


def _point(ctx, setup, method, bi, pairs, size, sweep) -> Iterator[Measurement]:
    rule = policy.rule("sweep")
    groups, reps, wrong, clocks = _timed_round(ctx, setup, method, bi, pairs, size, rule.sample_s, rule.max_samples)
    for (a, b), g in zip(pairs, groups, strict=True):
        stem, _, key = _names(setup, method, bi, a, b)
        bad = wrong[(a, b)] + (wrong[(b, a)] if bi else 0)
        m = timed_record(PROBE, f"{stem}.{size}", "sweep", g.samples, work=g.nbytes * reps, unit="B/s",
                         clocks=clocks, exec_unit=ExecUnit.COPY_ENGINE if method == "ce" else ExecUnit.CUDA_CORE,
                         bytes_counted=_counted(bi), params=_point_params(setup, method, bi, a, b, size, reps, pairs))
        _verdict(m, bad, size, bi)
        if m.verified:
            sweep[(a, b)].append((size, m.value))
        yield m


def _counted(bi: bool) -> str:
    return "bytes over the link, both directions" if bi else "bytes over the link, one direction"


def _point_params(setup, method, bi, a, b, size, reps, pairs) -> dict[str, Any]:
    p = {"method": method, "bidirectional": bi, "src": a, "dst": b, "bytes": size, "transfers_per_sample": reps,
         "pairs_in_round": [list(x) for x in pairs]}
    if method != "ce":
        p["kernel"] = dict(zip(("block", "unroll", "blocks_per_sm"), setup.sm[method], strict=True))
    if setup.loopback:
        p["loopback"] = True
    return p


def _verdict(m: Measurement, wrong: int, size: int, bi: bool) -> None:
    words = size // 4 * (2 if bi else 1)
    m.params["wrong_words"] = wrong
    m.verified = wrong == 0
    if wrong:
        m.valid = False
        m.flags.append(f"verification_failed: {wrong} of {words} words wrong at the destination")


def _ceiling(ctx, setup, method, bi, pairs, size, results) -> Iterator[Measurement]:
    ceiling = policy.rule("ceiling")
    groups, reps, wrong, clocks = _timed_round(ctx, setup, method, bi, pairs, size, ceiling.sample_s,
                                               ceiling.max_samples)
    for (a, b), g in zip(pairs, groups, strict=True):
        stem, link, key = _names(setup, method, bi, a, b)
        pl = setup.link(a, b)
        bw = (pl.per_direction_Bps * (2 if bi else 1)) if pl and pl.per_direction_Bps else None
        basis = (pl.basis + (" x 2 directions" if bi else "")) if pl else ""
        params = {**_point_params(setup, method, bi, a, b, size, reps, pairs), K.CEILING_KEY: key}
        if link:
            params.update(link_params("p2p", [a, b], pl.link_type if pl else None, key,
                                      link_notes=list(pl.notes) if pl else []))
        m = timed_record(PROBE, stem, "memory", g.samples, work=g.nbytes * reps, unit="B/s", clocks=clocks,
                         theory=link_theory(bw, basis) if link else None, link=link,
                         exec_unit=ExecUnit.COPY_ENGINE if method == "ce" else ExecUnit.CUDA_CORE,
                         bytes_counted=_counted(bi),
                         params=params)
        _verdict(m, wrong[(a, b)] + (wrong[(b, a)] if bi else 0), size, bi)
        if m.verified:
            mat = results.setdefault(key, PairMatrix(setup.idx, "B/s"))
            if not setup.loopback:
                mat.set(a, b, m.value, symmetric=bi)
        yield m


def _concurrency_check(ctx, setup, plan, results) -> Iterator[Measurement]:
    """The first CE pair alone at the ceiling's size, against its figure in its concurrent round: disjoint pairs
    must not slow each other (if they do, the matrix is flagged and the pairs should be run one at a time)."""
    if "ce.uni" not in results or "ce" not in plan.methods:
        return
    a, b = plan.schedule.uni[0][0]
    together = results["ce.uni"].get(a, b)
    if not together:
        return
    size = plan.sizes[-1]
    _reset(setup, [(a, b)], False, size)
    groups = _groups(setup, "ce", False, [(a, b)], size)
    reps = _time(setup, groups, policy.rule("ceiling").sample_s, 5)
    alone = size * reps / sorted(groups[0].samples)[len(groups[0].samples) // 2]
    ratio = together / alone
    m = ctx.derived("p2p.concurrency_check", ratio, unit="x", kind=Kind.INFO,
                    params={"pair": [a, b], "alone_Bps": alone, "together_Bps": together, K.BYTES: size,
                            "tolerance": CONCURRENCY_TOLERANCE})
    m.notes.append(f"ce {a}->{b}: {together / 1e9:.1f} GB/s beside the other pairs of its round, {alone / 1e9:.1f} "
                   f"GB/s alone ({ratio:.1%})" + ("" if ratio >= CONCURRENCY_TOLERANCE else
                                                   ": the pairs interfere; run with concurrent = \"no\""))
    if ratio < CONCURRENCY_TOLERANCE:
        m.flags.append("concurrent_pairs_interfere")
    yield m

