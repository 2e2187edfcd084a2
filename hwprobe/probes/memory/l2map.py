"""gpu.l2map: the L2 hit latency of every SM, to the near and the far L2 partition, in one launch.

One block per SM (l2map.cu); the SMs take turns (a ticket each, a flag per ticket), so only one SM loads at a
time and nothing contends. In its turn an SM follows a stretch of a random pointer cycle over 128-byte lines
that are in L2 and that no other SM has touched, timing every load alone (clock64 around one ld.global.cg).
On Hopper a line that no SM of this SM's half of the chip has read yet is served from the partition that holds
it: half the lines from the near partition, half from the far one across the die, so the per-load latencies
fall in two groups, and the threshold between them (Otsu's, on log cycles, pooled over all SMs) tells them
apart. A second pass over the same lines shows where they are served from once this SM has read them. A third,
untimed pass gives the cycles of the bare dependent chain, so the per-load timing overhead is subtracted.

The map (per SM: near and far cycles and ns, the far share, the SM clock) goes into the profile as
memory.l2.maps["latency.l2.sm_map"]; the spread across SMs is a finding. hwprobe.report.plots.l2map draws it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hwprobe import keys as K
from hwprobe.errors import Skip, VerificationError
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory.chase import next_slots, random_cycle
from hwprobe.probes.memory.common import CACHE_KERNELS, release
from hwprobe.timing import time_cuda_once
from hwprobe.vocab import Kind

LINE = 128                 # bytes per slot: one L2 line
FLAG_STRIDE = 32           # words per flag (l2map.cu)
MIN_RATIO = 1.25           # two latency groups count as near/far when their medians differ this much
MIN_SHARE = 0.05           # ... and each holds at least this share of the loads
MODES = ("fresh", "chunk")


# ---------------------------------------------------------------------------------------------------------------
# Pure logic (tested on the CPU)

@dataclass
class Modes:
    threshold: float       # cycles: loads at or above are "far"
    low: float             # median of each group (cycles)
    high: float
    high_share: float


def two_modes(values, *, min_ratio: float = MIN_RATIO, min_share: float = MIN_SHARE, bins: int = 256) -> Modes | None:
    """Split latencies into a near and a far group: Otsu's threshold on log values (the split that maximises the
    variance between the groups). None when the groups are not distinct (medians < ``min_ratio`` apart, or one
    group under ``min_share`` of the values)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size < 20:
        return None
    x = np.log(v)
    hist, edges = np.histogram(x, bins=bins)
    mids = 0.5 * (edges[:-1] + edges[1:])
    w = np.cumsum(hist)
    s = np.cumsum(hist * mids)
    total_w, total_s = w[-1], s[-1]
    w1 = total_w - w
    ok = (w > 0) & (w1 > 0)
    if not ok.any():
        return None
    m0 = np.where(ok, s / np.maximum(w, 1), 0)
    m1 = np.where(ok, (total_s - s) / np.maximum(w1, 1), 0)
    between = np.where(ok, w * w1 * (m0 - m1) ** 2, -1)
    k = int(np.argmax(between))
    thr = float(np.exp(edges[k + 1]))
    lo, hi = v[v < thr], v[v >= thr]
    if lo.size == 0 or hi.size == 0:
        return None
    m = Modes(thr, float(np.median(lo)), float(np.median(hi)), hi.size / v.size)
    if m.high / m.low < min_ratio or min(m.high_share, 1 - m.high_share) < min_share:
        return None
    return m


def turn_starts(order: np.ndarray, turns: int, steps: int, within: float = 1.0) -> np.ndarray:
    """Positions in ``order`` where each turn's stretch starts: turn t walks order[t*steps : (t+1)*steps], so no
    two turns share a line. The stretches must fit in the first ``within`` of the cycle."""
    if turns * steps + 1 > within * len(order):
        raise ValueError(f"{turns} turns x {steps} steps do not fit in {within:.0%} of a {len(order)}-slot cycle")
    return np.arange(turns, dtype=np.int64) * steps


def sm_map(smid, lat, plain, clk, steps: int) -> dict:
    """The per-SM table from the kernel's raw output, sorted by SM.

    ``lat``: (turns, 2, steps) per-load cycles (pass 0: first touch, pass 1: again); ``plain``: (turns,) cycles of
    the untimed pass; ``clk``: (turns, 4) globaltimer start/end and clock64 start/end of each turn. The per-load
    timing overhead is mean(pass 1) - plain / steps over all turns (the same loads, timed and untimed)."""
    lat = np.asarray(lat, dtype=float).reshape(len(smid), 2, steps)
    plain = np.asarray(plain, dtype=float)
    clk = np.asarray(clk, dtype=float).reshape(len(smid), 4)
    overhead = float(np.median(lat[:, 1, :].mean(axis=1) - plain / steps))
    modes = two_modes(lat[:, 0, :].ravel())
    mhz = (clk[:, 3] - clk[:, 2]) / np.maximum(clk[:, 1] - clk[:, 0], 1) * 1e3
    rows = []
    for i in np.argsort(np.asarray(smid), kind="stable"):
        first, again = lat[i, 0], lat[i, 1]
        if modes is not None:
            near_c = float(np.median(first[first < modes.threshold])) if (first < modes.threshold).any() else None
            far_c = float(np.median(first[first >= modes.threshold])) if (first >= modes.threshold).any() else None
            share = float(np.mean(first >= modes.threshold))
        else:
            near_c, far_c, share = float(np.median(first)), None, 0.0
        rows.append((int(smid[i]), near_c, far_c, share, float(np.median(again)), float(mhz[i])))

    def ns(c, f):
        return None if c is None else round((c - overhead) / f * 1e3, 2)

    return {
        "sm": [r[0] for r in rows],
        "near_cycles": [None if r[1] is None else round(r[1] - overhead, 1) for r in rows],
        "far_cycles": [None if r[2] is None else round(r[2] - overhead, 1) for r in rows],
        "near_ns": [ns(r[1], r[5]) for r in rows],
        "far_ns": [ns(r[2], r[5]) for r in rows],
        "far_share": [round(r[3], 3) for r in rows],
        "again_cycles": [round(r[4] - overhead, 1) for r in rows],
        "sm_mhz": [round(r[5], 1) for r in rows],
        "overhead_cycles": round(overhead, 1),
        "threshold_cycles": None if modes is None else round(modes.threshold, 1),
    }


def sm_sides(smid, lat, steps: int, near_below: float = 380.0) -> dict | None:
    """The two halves of the chip, from a "chunk" launch: after one SM has read a 3/4-L2 set once, the SMs of
    one half find none of its lines near (every load ~525 cycles on an H200) and the SMs of the other find about
    half of them near (~280) and the rest in DRAM (~740). Per SM (sorted): the share of loads under
    ``near_below`` cycles, and a side (0 = the half with SM 0) split at the widest gap between the shares; None
    when the shares do not fall in two groups at least 0.3 apart."""
    lat = np.asarray(lat, dtype=float).reshape(len(smid), 2, steps)
    order = np.argsort(np.asarray(smid), kind="stable")
    share = (lat[order, 0, :] < near_below).mean(axis=1)
    srt = np.sort(share)
    gaps = np.diff(srt)
    if gaps.size == 0 or gaps.max() < 0.3:
        return None
    cut = srt[int(np.argmax(gaps))] + gaps.max() / 2
    side = (share > cut).astype(int)
    if side[0] == 1:
        side = 1 - side
    return {"side": side.tolist(), "near_share": [round(float(x), 3) for x in share], "cut": round(float(cut), 3)}


def spread(values) -> dict | None:
    """min, median, max, max/min and the SMs at both ends of a per-SM column (None where a value is missing)."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    a = np.asarray(v, dtype=float)
    return {"min": float(a.min()), "median": float(np.median(a)), "max": float(a.max()),
            "ratio": float(a.max() / a.min()), "p10": float(np.percentile(a, 10)), "p90": float(np.percentile(a, 90))}


def map_text(table: dict) -> str:
    """The map as a fixed-width table: one line per SM."""
    lines = ["  SM  near ns  far ns  near cyc  far cyc  far share  again cyc  MHz"]
    def f(key, fmt, i):
        x = table[key][i]
        return fmt.format(x) if x is not None else "-".rjust(len(fmt.format(0.0)))

    for i, sm in enumerate(table["sm"]):
        lines.append(f"{sm:4d} {f('near_ns', '{:8.1f}', i)} {f('far_ns', '{:7.1f}', i)} "
                     f"{f('near_cycles', '{:9.0f}', i)} {f('far_cycles', '{:8.0f}', i)} {table['far_share'][i]:10.2f} "
                     f"{f('again_cycles', '{:10.0f}', i)} {table['sm_mhz'][i]:5.0f}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# The probe

@probe(name="gpu.l2map", target="gpu", family="memory",
       summary="L2 hit latency of every SM to the near and the far L2 partition, SMs taking turns in one launch",
       choices={"mode": MODES}, ranges={"steps": (64, 2048)})
def run(ctx, steps: int = 512, mode: str = "fresh", seed: int = 0, sides: bool = True) -> Iterator[Measurement]:
    """``steps``: timed loads per SM per pass. ``mode``: "fresh" (a 16 MiB set written just before the launch)
    or "chunk" (a set of 3/4 of L2 that one SM has read through once first). ``sides``: a second launch in
    "chunk" mode, which splits the SMs into the two halves of the chip (the L2 partition each sits next to)."""
    raw, n = collect(ctx, steps, mode, seed)
    side = None
    if sides:
        try:
            craw, _ = collect(ctx, steps, "chunk", seed + 1)
            check_raw(craw, ctx.device.sms)
            side = sm_sides(craw["smid"], craw["lat"], steps)
        except Exception as e:
            ctx.log(f"gpu.l2map: the chunk launch that finds the SM halves failed: {type(e).__name__}: {e}")
    yield from _report(ctx, raw, steps, mode, n, side)


def collect(ctx, steps: int, mode: str, seed: int = 0) -> tuple[dict, int]:
    """Build the chase set, run the map kernel once; (the raw kernel output, lines in the set)."""
    import cupy as cp

    from hwprobe.kernels import load

    if mode not in MODES:
        raise Skip(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    release()
    dev = ctx.device
    turns = dev.sms
    n = (16 << 20) // LINE if mode == "fresh" else int(0.75 * dev.l2_bytes) // LINE
    rng = np.random.default_rng(seed)
    order = random_cycle(n, rng)
    starts_pos = turn_starts(order, turns, steps, within=1.0 if mode == "fresh" else 1 / 3)
    buf = cp.zeros(n * LINE // 8, dtype=cp.uint64)
    base = int(buf.data.ptr)
    nxt = np.uint64(base) + next_slots(order).astype(np.uint64) * np.uint64(LINE)
    buf.reshape(n, LINE // 8)[:, 0] = cp.asarray(nxt)
    if mode == "chunk":     # one SM reads the whole cycle once: every line in L2, read by that SM only
        chase = load("mem_cache.cu", name_expressions=CACHE_KERNELS).get_function("chase<1>")
        scratch = cp.zeros(8, dtype=cp.uint64)
        chase((1,), (32,), (np.uint64(base), np.int64(n), np.int64(0), scratch, np.int32(0)))
    raw = _launch(ctx, load("l2map.cu"), order, starts_pos, base, steps, turns)
    raw["order"] = order
    buf = None
    release()
    return raw, n


def _launch(ctx, mod, order, starts_pos, base: int, steps: int, turns: int) -> dict:
    """One launch of l2map with a block per SM; returns the raw arrays and the launch's event time."""
    import cupy as cp

    dev = ctx.device
    k = mod.get_function("l2map")
    smem = max(2 * steps * 4, dev.smem_per_sm_bytes // 2 + 1024)
    smem = min(smem, dev.smem_per_block_optin_bytes or smem)
    k.max_dynamic_shared_size_bytes = smem
    starts = cp.asarray(np.uint64(base) + order[starts_pos].astype(np.uint64) * np.uint64(LINE))
    ticket = cp.zeros(1, dtype=cp.uint32)
    flags = cp.zeros((turns + 1) * FLAG_STRIDE, dtype=cp.uint32)
    flags[0] = 1
    smid = cp.full(turns, 0xFFFFFFFF, dtype=cp.uint32)
    lat = cp.zeros(turns * 2 * steps, dtype=cp.uint32)
    plain = cp.zeros(turns, dtype=cp.uint64)
    tail = cp.zeros(turns, dtype=cp.uint64)
    clk = cp.zeros(turns * 4, dtype=cp.uint64)
    launch_s = time_cuda_once(lambda: k((turns,), (32,), (starts, np.int32(steps), ticket, flags, smid, lat, plain,
                                                           tail, clk), shared_mem=smem), cp=cp)
    n = len(order)
    want = np.uint64(base) + order[(starts_pos + steps) % n].astype(np.uint64) * np.uint64(LINE)
    return {"smid": smid.get(), "lat": lat.get(), "plain": plain.get(), "tail": tail.get(), "want": want,
            "clk": clk.get(), "launch_s": launch_s, "smem": smem}


def check_raw(raw: dict, sms: int) -> None:
    """Every SM took exactly one turn and every chase ended on the line its cycle says."""
    got = sorted(int(s) for s in raw["smid"])
    if got != sorted(set(got)) or len(got) != sms:
        missing = sorted(set(range(sms)) - set(got))
        raise VerificationError(f"turns did not cover every SM once (SMs without a turn: {missing[:8]})")
    bad = int(np.count_nonzero(np.asarray(raw["tail"]) != np.asarray(raw["want"])))
    if bad:
        raise VerificationError(f"{bad} turns ended on the wrong pointer")


def _report(ctx, raw: dict, steps: int, mode: str, n: int, side: dict | None = None) -> Iterator[Measurement]:
    dev = ctx.device
    try:
        check_raw(raw, dev.sms)
    except VerificationError as e:
        yield ctx.error("latency.l2.sm_map", "per-SM L2 latency map", e)
        return
    table = sm_map(raw["smid"], raw["lat"], raw["plain"], raw["clk"], steps)
    if side is not None:
        table["side"], table["side_near_share"] = side["side"], side["near_share"]
    near, far = spread(table["near_ns"]), spread(table["far_ns"])
    method = (f"{dev.sms} SMs in turn, one launch ({raw['launch_s'] * 1e3:.0f} ms), {steps} timed loads each "
              f"(ld.global.cg, one 128-byte line per load, no line visited by two SMs) over a "
              f"{n * LINE / 2**20:.0f} MiB set ({mode}); near/far split at {table['threshold_cycles']} cycles "
              f"(Otsu on log cycles, all SMs pooled); per-load timing overhead {table['overhead_cycles']} cycles "
              "removed")
    params = {K.MAP: table, "steps": steps, "mode": mode, "set_bytes": n * LINE, "launch_s": raw["launch_s"],
              "near_spread": near, "far_spread": far}
    value = (near["median"] if near else 0.0) * 1e-9
    yield ctx.derived("latency.l2.sm_map", value, unit="s", kind=Kind.MAP, level="l2", params=params, notes=[method])
    text = (f"L2 hit latency by SM: near {near['min']:.0f}-{near['max']:.0f} ns (median {near['median']:.0f}, "
            f"max/min {near['ratio']:.2f})") if near else "no per-SM latency"
    if far:
        text += f", far {far['min']:.0f}-{far['max']:.0f} ns (median {far['median']:.0f}, max/min {far['ratio']:.2f})"
    else:
        text += "; the loads did not split into a near and a far group"
    if side is not None:
        halves = [sum(1 for x in side["side"] if x == h) for h in (0, 1)]
        text += (f"; the SMs fall in two halves of {halves[0]} and {halves[1]} (the L2 partition each sits next to: "
                 "after one SM reads a 3/4-L2 set, one half finds none of it near)")
    yield ctx.derived("latency.l2.sm_spread", near["ratio"] if near else 0.0, unit="", kind=Kind.INFO, level="l2",
                      params={"near": near, "far": far}, notes=[text])
