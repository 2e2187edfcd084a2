"""gpu.p2p's latency measurements (pointer chase into peer memory, flag ping-pong) and its table records (topology,
access, the bandwidth and latency matrices). ``setup`` is p2p.Setup: idx, pairs, access, loopback, tag."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from hwprobe import keys as K
from hwprobe.measurement import Measurement
from hwprobe.probes.interconnect import p2pplan as P
from hwprobe.probes.interconnect.common import link_params, timed_record
from hwprobe.probes.interconnect.matrix import PairMatrix
from hwprobe.probes.interconnect.pairs import pair_key
from hwprobe.timing import policy
from hwprobe.vocab import Kind

PROBE = "gpu.p2p"
SLOT_BYTES = 64              # one chase step per 64-byte line
CHASE_SLOTS = 16384          # lines in a cycle unless the plan says (a random sample of the working set's lines)
PINGPONG_TIMEOUT_NS = 2_000_000_000


def _link(setup, a: int, b: int) -> tuple[str | None, str | None]:
    if setup.loopback:
        return None, None
    pl = setup.pairs.get((min(a, b), max(a, b)))
    return pair_key(a, b).replace("p2p.", f"p2p{setup.tag}."), (pl.link_type if pl else None)


def _stem(setup, what: str, a: int, b: int) -> str:
    return f"p2p.loopback.{what}.{a}-{b}" if setup.loopback else f"p2p{setup.tag}.{what}.{a}-{b}"


def chase_order(ws_bytes: int, rng: np.random.Generator, slots: int = CHASE_SLOTS) -> np.ndarray:
    """u32 word offsets of the lines visited, in visiting order: every line of a small working set, or a random
    sample of ``slots`` lines of a large one; following them wraps into one cycle."""
    from hwprobe.probes.memory.chase import random_cycle, sparse_random_cycle

    n = ws_bytes // SLOT_BYTES
    order = random_cycle(n, rng) if n <= slots else sparse_random_cycle(n, slots, rng)
    return (order * (SLOT_BYTES // 4)).astype(np.int64)


def chase_end(words: np.ndarray, start: int, steps: int) -> int:
    """The word the chase reaches from words[start] after ``steps`` steps."""
    return int(words[(start + steps) % len(words)])


def latency_records(ctx, setup, plan: P.Plan, results: dict[str, PairMatrix]) -> Iterator[Measurement]:
    """Chases per working set: one cycle, one buffer per GPU read from, every reader walking on from where the
    previous one stopped (a long cycle is never revisited while timed); then a ping-pong per pair."""
    rng = np.random.default_rng(20261123)
    ordered = plan.schedule.ordered_pairs
    for name, (ws, lines) in plan.chase_sets.items():
        words = chase_order(ws, rng, lines)
        for b in sorted({b for _, b in ordered}):
            readers = [a for a, bb in ordered if bb == b]
            try:
                buf = _chase_buffer(b, ws, words)
            except Exception as e:
                yield ctx.error(_stem(setup, f"chase.{name}", readers[0], b), f"chase buffer on GPU {b}", e)
                continue
            pos = 0
            for a in readers:
                metric = _stem(setup, f"chase.{name}", a, b)
                if a != b and not setup.access.get(a, b):
                    yield ctx.skip(metric, f"GPU {a} cannot map GPU {b}'s memory (no peer access)")
                    continue
                try:
                    m, pos = _chase(ctx, setup, a, b, name, ws, words, buf, pos, results)
                    yield m
                except Exception as e:
                    yield ctx.error(metric, f"pointer chase {a} -> {b}'s memory", e)
            del buf
    if not plan.pingpong:
        return
    for a, b in plan.schedule.unordered_pairs:
        metric = _stem(setup, "pingpong", a, b)
        if a != b and not (setup.access.get(a, b) and setup.access.get(b, a)):
            yield ctx.skip(metric, f"GPUs {a} and {b} cannot both map each other's memory (no peer access)")
            continue
        try:
            yield _pingpong(ctx, setup, a, b, results)
        except Exception as e:
            yield ctx.error(metric, f"ping-pong {a} <-> {b}", e)


def _chase_buffer(b: int, ws: int, words: np.ndarray):
    """The cycle written into GPU b's memory: word words[k] holds words[k + 1]."""
    import cupy as cp

    with cp.cuda.Device(b):
        buf = cp.zeros(ws // 4, dtype=cp.uint32)
        buf[cp.asarray(words)] = cp.asarray(np.roll(words, -1).astype(np.uint32))
        cp.cuda.Device().synchronize()
    return buf


def _chase(ctx, setup, a: int, b: int, name: str, ws: int, words, buf, pos: int, results) -> tuple[Measurement, int]:
    """One thread on GPU a walks the cycle in GPU b's memory from position ``pos``; latency = time / steps.
    Returns the record and the position where the walk stopped."""
    import cupy as cp

    from hwprobe.probes.interconnect import devops
    from hwprobe.timing import time_cuda

    steps, launches = P.LATENCY_STEPS, 1 + policy.rule("latency").max_samples
    with cp.cuda.Device(a):
        state = cp.asarray(np.array([words[pos], 0], dtype=np.uint64))
        fn = devops.kernel("p2p_chase")
        args = (np.uint64(buf.data.ptr), np.int32(steps), state)
        with ctx.sampler.window() as win:
            samples = time_cuda(lambda: fn((1,), (1,), args), warmup=1, repeats=policy.rule("latency").max_samples)
        end, ns = (int(x) for x in state.get())
    want = chase_end(words, pos, launches * steps)
    link, ltype = _link(setup, a, b)
    key = f"chase.{name}.{a}-{b}"
    params = {"reader": a, "memory_of": b, K.WORKING_SET_BYTES: ws, "lines_in_cycle": len(words), "steps": steps,
              "start_position": pos, "kernel_ns_per_step": ns / (launches * steps), "loopback": setup.loopback or None}
    if link:
        params.update(link_params("p2p", [a, b], ltype, key))
    m = timed_record(PROBE, _stem(setup, f"chase.{name}", a, b), "latency", samples, per_sample=steps, unit="s",
                     clocks=win.summary, link=link, params=params)
    m.verified = end == want
    if not m.verified:
        m.valid = False
        m.flags.append(f"verification_failed: chase ended at word {end}, expected {want}")
    revisit = "every line of the cycle, again and again (in the peer's L2)" if len(words) <= launches * steps else \
        f"{launches * steps} lines never visited before in this run (past the peer's L2)"
    m.notes.append(f"GPU {a} loads from GPU {b}'s memory, one dependent load per 64-byte line of a "
                   f"{ws / 2**20:g} MiB buffer: {revisit}")
    if m.verified and not setup.loopback:
        results.setdefault(f"chase.{name}", PairMatrix(setup.idx, "s")).set(a, b, m.value)
    return m, (pos + launches * steps) % len(words)


def _pingpong(ctx, setup, a: int, b: int, results) -> Measurement:
    """A counter bounced between GPU a and GPU b through each other's memory; latency = one way (half a round)."""
    import cupy as cp

    from hwprobe.probes.interconnect import devops

    iters = P.PINGPONG_ITERS
    side = {}
    for who, dev in (("a", a), ("b", b)):
        with cp.cuda.Device(dev):
            side[who] = {"flag": cp.zeros(1, dtype=cp.uint32), "out": cp.zeros(3, dtype=cp.uint64),
                         "stream": cp.cuda.Stream(non_blocking=True), "fn": devops.kernel("p2p_pingpong")}
    fa, fb = side["a"]["flag"], side["b"]["flag"]
    samples, ok, why = [], True, ""
    with ctx.sampler.window() as win:
        for r in range(1 + policy.rule("latency").max_samples):
            for dev, flag in ((a, fa), (b, fb)):
                with cp.cuda.Device(dev):
                    flag.fill(0)
                    cp.cuda.Device().synchronize()
            for who, dev, mine, peer, init in (("b", b, fb, fa, 0), ("a", a, fa, fb, 1)):
                s = side[who]
                with cp.cuda.Device(dev), s["stream"]:
                    s["fn"]((1,), (1,), (np.uint64(mine.data.ptr), np.uint64(peer.data.ptr), np.int32(iters),
                                         np.int32(init), np.uint64(PINGPONG_TIMEOUT_NS), s["out"]))
            for who in ("a", "b"):      # the kernels run on their own streams: wait for both before reading
                side[who]["stream"].synchronize()
            ra, rb = side["a"]["out"].get(), side["b"]["out"].get()
            good = ra[1] == 0 and rb[1] == 0 and ra[2] == 2 * iters and rb[2] == 2 * iters - 1
            if not good:
                ok, why = False, f"round {r}: timed out a={ra[1]} b={rb[1]}, last values {ra[2]}, {rb[2]}"
                break
            if r:
                samples.append(int(ra[0]) * 1e-9)
    if not samples:
        raise RuntimeError(f"ping-pong {a} <-> {b} never completed: {why}")
    link, ltype = _link(setup, a, b)
    params = {"gpus": [a, b], "round_trips": iters, "loopback": setup.loopback or None}
    if link:
        params.update(link_params("p2p", [a, b], ltype, "pingpong"))
    m = timed_record(PROBE, _stem(setup, "pingpong", a, b), "latency", samples, per_sample=2 * iters, unit="s",
                     clocks=win.summary, link=link, params=params)
    m.verified = ok
    if not ok:
        m.valid = False
        m.flags.append(f"verification_failed: {why}")
    m.notes.append(f"one-way latency: half of a round trip of a 4-byte flag store into the peer's memory and a spin "
                   f"on the local flag ({iters} round trips per sample, timed by GPU {a}'s globaltimer)")
    if ok and not setup.loopback:
        results.setdefault("pingpong", PairMatrix(setup.idx, "s")).set(a, b, m.value, symmetric=True)
    return m


# --- tables ----------------------------------------------------------------------------------------------------------

def topology_records(ctx, setup) -> Iterator[Measurement]:
    """The access matrix and each pair's link type and theory, as one finding."""
    types = PairMatrix(setup.idx, "")
    lines = []
    for (a, b), pl in sorted(setup.pairs.items()):
        types.set(a, b, pl.link_type, symmetric=True)
        bw = f"{pl.per_direction_Bps / 1e9:.1f} GB/s per direction" if pl.per_direction_Bps else "theory unknown"
        lines.append(f"GPU {a} <-> {b}: {pl.link_type} ({bw}); peer access "
                     f"{'both ways' if setup.access.get(a, b) and setup.access.get(b, a) else 'NOT both ways'}")
    m = ctx.derived(f"p2p{setup.tag}.topology", float(sum(1 for v in setup.access.cells.values() if v)), unit="pairs",
                    kind=Kind.INFO, params={"access": setup.access.to_dict(), "link_types": types.to_dict(),
                                         "pairs": {f"{a}-{b}": p.to_dict() for (a, b), p in setup.pairs.items()},
                                         "loopback": setup.loopback or None})
    m.notes += lines or [f"GPUs {setup.idx}: no pair (loopback self-test)" if setup.loopback else "no NVML topology"]
    yield m


def matrix_records(ctx, setup, results: dict[str, PairMatrix], plan: P.Plan) -> Iterator[Measurement]:
    """One finding per matrix (bandwidth in GB/s, latency in us), with min/median/max and spread over pairs."""
    for key, mat in results.items():
        sm = mat.summary()
        if not sm["pairs"]:
            continue
        latency = mat.unit == "s"
        m = ctx.derived(f"p2p{setup.tag}.matrix.{key}", sm["min"], unit=mat.unit, kind=Kind.INFO,
                        params={"matrix": mat.to_dict(), "schedule": plan.schedule.to_dict(), K.CEILING_KEY: key})
        unit, scale, fmt = ("us", 1e-6, "{:.2f}") if latency else ("GB/s", 1e9, "{:.1f}")
        spread = f"{sm['spread']:.1%}" if sm["spread"] is not None else "-"
        m.notes.append(f"{key} ({unit}, row = {'reader' if key.startswith('chase') else 'source'}): "
                       f"min {sm['min'] / scale:.3g}, max {sm['max'] / scale:.3g}, spread {spread} over "
                       f"{sm['pairs']} pairs\n" + mat.text(scale=scale, fmt=fmt))
        yield m

