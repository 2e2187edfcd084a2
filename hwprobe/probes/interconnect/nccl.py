"""gpu.nccl: NCCL collectives over the GPUs of this box (or the ranks of an MPI job), 8 B to 4 GiB.

all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall and sendrecv in float32 (sum), with
algbw and busbw as nccl-tests defines them (hwprobe.probes.interconnect.collectives), each out of place and
in place (nccl-tests runs both), every result checked against deterministic inputs as nccl-tests' ``-c 1`` does
(exact; an ncclAvg all_reduce within 2 ulp), wrong elements counted. alltoall calls ncclAlltoAll where NCCL has
it (>= 2.28, as nccl-tests), else n sends and receives in one group; the record says which.

Iterations: per point (op, size, variant) at least 5 warm-up and 20 timed operations (nccl-tests' -w 5 -n 20),
in samples of operations lasting about 20 ms each by a fixed cost model (at least 5 operations a sample, at
least ``samples`` samples); the figure is the median sample, and each point stores its spread (cv of the
sample times, slowest and fastest rate).

Modes: "process" (default on one node: a spawned process per GPU sharing NCCL's unique id, what frameworks
do), "single" (one process drives every GPU through ncclCommInitAll and group calls), "mpi" (under mpirun/srun:
one rank per process, the id broadcast over MPI; rank 0 files the figures for the whole world). NCCL runs with
NCCL_NVLS_ENABLE=0 unless ``allow_nvls``. Each op's ceiling is busbw (and algbw) at its best verified point of
either variant (``params["variant"]`` says which; ``by_variant`` what each reached), with the smallest size
reaching 90% of it and the curves of both variants (hwprobe.collective_curve reads them); theory is the slowest
GPU's link bandwidth per direction (NVML).
"""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hwprobe import keys as K
from hwprobe.errors import Skip
from hwprobe.measurement import ClockSummary, Measurement, Stats
from hwprobe.probes.base import probe
from hwprobe.probes.interconnect import collectives as C
from hwprobe.probes.interconnect.common import GPU_CHOICES, link_params, link_theory, pick_gpus, timed_record

MODES = ("auto", "process", "single", "mpi")
PROBE = "gpu.nccl"


def merge_ranks(per_rank: list[list[dict]]) -> list[dict]:
    """One result per (op, variant, size) from every rank's: time per sample = the mean over ranks (nccl-tests'
    default -a 1), wrong and checked elements summed. Ranks must have run the same points in the same order."""
    if not per_rank:
        return []
    base = per_rank[0]

    def keys(res):
        return [(x["op"], x.get("variant", "out_of_place"), x["size"]) for x in res]

    for r, res in enumerate(per_rank[1:], 1):
        if keys(res) != keys(base):
            raise ValueError(f"rank {r} ran other points than rank 0")
    out = []
    for k, first in enumerate(base):
        pts = [res[k] for res in per_rank]
        samples = [statistics.fmean(p["samples"][i] for p in pts) for i in range(len(first["samples"]))]
        bads = [p["first_bad"] for p in pts if p.get("first_bad") is not None]
        out.append({**first, "samples": samples, "wrong": sum(p["wrong"] for p in pts),
                    "checked": sum(p["checked"] for p in pts), "first_bad": bads[0] if bads else None,
                    "per_rank_median_s": [statistics.median(p["samples"]) for p in pts]})
    return out


def sweep_metric(op: str, variant: str, size: int, suffix: str = "") -> str:
    """nccl.<op>[.<mode>].<S> out of place (the names runs before in-place keep), nccl.<op>[.<mode>].in_place.<S>."""
    return f"nccl.{op}{suffix}." + ("" if variant == "out_of_place" else f"{variant}.") + str(size)


def spread(samples_s: list[float], work: float) -> dict[str, float]:
    """The spread of one point's samples, stored with it: cv of the times, slowest and fastest rate."""
    st = Stats.of(samples_s)
    return {"cv": st.cv, "min": work / max(samples_s), "max": work / min(samples_s), "samples": st.n}


def records(results: list[dict], n: int, meta: dict[str, Any], clocks: ClockSummary | None = None,
            suffix: str = "") -> list[Measurement]:
    """Sweep points, checks and ceilings from merged results. ``meta``: endpoints, link_type, theory_Bps,
    theory_basis, hosts, and anything to keep in params (engine, NCCL version and environment, mode)."""
    out: list[Measurement] = []
    by_op: dict[str, list[tuple[dict, Measurement]]] = {}
    common = {k: v for k, v in meta.items() if k not in ("endpoints", "theory_Bps", "theory_basis")}
    for r in results:
        op = r["op"]
        if op.endswith(".avg"):
            out.append(_avg_check(r, n, common, suffix))
            continue
        m = _sweep_record(r, n, meta, common, suffix)
        out.append(m)
        by_op.setdefault(op, []).append((r, m))
    for op, pts in by_op.items():
        out += _ceilings(op, pts, n, meta, clocks, suffix)
    return out


def _sweep_record(r: dict, n: int, meta: dict, common: dict, suffix: str) -> Measurement:
    op, variant = r["op"], r.get("variant", "out_of_place")
    f = C.bus_factor(op, n)
    work = r["size"] * f if n > 1 else r["size"]
    t = statistics.median(r["samples"])
    extra = {"api": r["api"]} if r.get("api") else {}
    m = timed_record(PROBE, sweep_metric(op, variant, r["size"], suffix), "sweep", r["samples"], work=work,
                     unit="B/s", bytes_counted="busbw (nccl-tests)" if n > 1 else "algbw (one rank)",
                     params={**common, K.ENDPOINTS: meta.get("endpoints", []), K.OP: op, K.VARIANT: variant,
                             K.BYTES: r["size"], "count": r["count"], K.RANKS: n, "iters": r["iters"],
                             "warmup": r.get("warmup"), "timed_iters": r["iters"] * len(r["samples"]),
                             "time_s": t, "algbw": r["size"] / t, K.BUSBW: r["size"] * f / t,
                             "spread": spread(r["samples"], work), "wrong": r["wrong"], "checked": r["checked"],
                             K.SCOPE: "world", **extra})
    _verdict(m, r)
    if r["wrong"] and variant == "in_place" and op in C.UNDEFINED_IN_PLACE:
        m.notes.append(f"in-place {op} has no defined result in NCCL (its send and receive share the buffer); "
                       "nccl-tests times it but does not check it (errors N/A). A wrong result is never a ceiling.")
    return m


def _verdict(m: Measurement, r: dict) -> None:
    m.verified = True if r["checked"] else None
    if r["wrong"]:
        m.verified, m.valid = False, False
        m.flags.append(f"verification_failed: {r['wrong']} of {r['checked']} elements wrong "
                       f"(first at {r['first_bad']})")


def _avg_check(r: dict, n: int, common: dict, suffix: str) -> Measurement:
    m = Measurement(probe=PROBE, metric=f"nccl.{r['op']}{suffix}.check", kind="info", value=float(r["wrong"]),
                    unit="elements", params={**common, K.BYTES: r["size"], K.RANKS: n, "wrong": r["wrong"],
                                             "checked": r["checked"], K.SCOPE: "world"})
    m.notes.append(f"all_reduce with ncclAvg at {r['size']} B over {n} ranks: {r['wrong']} of {r['checked']} "
                   "elements further than 2 ulp from the correctly rounded mean")
    _verdict(m, r)
    return m


def curves(ok: list[tuple[dict, Measurement]]) -> dict[str, list[list[float]]]:
    """Per variant, the verified points in size order: [bytes, busbw, algbw, time_s, cv] (median time), as each
    sweep record computed them (_sweep_record)."""
    out: dict[str, list[list[float]]] = {}
    for _, m in sorted(ok, key=lambda rm: rm[0]["size"]):
        p = m.params
        out.setdefault(p[K.VARIANT], []).append([p[K.BYTES], p[K.BUSBW], p["algbw"], p["time_s"],
                                                 m.stats.cv if m.stats else 0.0])
    return out


def best_curve(by_variant: dict[str, list[list[float]]]) -> list[list[float]]:
    """[size, busbw] at each size from the faster verified variant there."""
    best: dict[int, float] = {}
    for pts in by_variant.values():
        for s, bus, *_ in pts:
            best[s] = max(best.get(s, 0.0), bus)
    return [[s, bw] for s, bw in sorted(best.items())]


def _ceilings(op: str, pts: list[tuple[dict, Measurement]], n: int, meta: dict, clocks, suffix: str):
    """busbw and algbw at the best verified point of either variant, saying which variant it is and what the
    other reached; the curves of both variants go with them (the analyzer reads them)."""
    ok = [(r, m) for r, m in pts if m.verified]
    if not ok or n < 2:
        return []
    f = C.bus_factor(op, n)
    per_variant = curves(ok)
    curve = best_curve(per_variant)
    best_r, best_m = max(ok, key=lambda rm: rm[1].value)
    variant = best_r.get("variant", "out_of_place")
    tops = {v: max(p, key=lambda x: x[1]) for v, p in per_variant.items()}
    by_variant = {v: {"busbw": top[1], "bytes": top[0]} for v, top in tops.items()}
    at90 = C.size_at_fraction(curve, 0.9)
    common = {k: v for k, v in meta.items() if k not in ("endpoints", "theory_Bps", "theory_basis", "link_type")}
    out = []
    for key, factor in (("busbw", f), ("algbw", 1.0)):
        bw = meta.get("theory_Bps")
        th = link_theory(bw / (f / factor) if bw else None,
                         f"{meta.get('theory_basis', '')}" + ("" if key == "busbw" else f"; algbw = busbw / {f:.3g}"))
        m = timed_record(PROBE, f"nccl.{op}{suffix}.{key}", "memory", best_r["samples"],
                         work=best_r["size"] * factor, unit="B/s", clocks=clocks, theory=th, link=f"nccl.{op}{suffix}",
                         bytes_counted=f"{key} (nccl-tests: S = {best_r['size']} B"
                                       + (f", x {f:.3g}" if key == "busbw" else "") + f"; {variant.replace('_', '-')})",
                         params={**link_params("collective", meta.get("endpoints", []), meta.get("link_type"), key),
                                 **common, K.OP: op, K.RANKS: n, K.BYTES: best_r["size"], K.SIZE_AT_90PCT: at90,
                                 K.VARIANT: variant, "by_variant": by_variant, K.CURVE: curve, K.CURVES: per_variant,
                                 "spread": best_m.params.get("spread"), K.SCOPE: "world"})
        m.verified = True
        m.notes += list(meta.get("notes") or [])
        others = [f"{v.replace('_', '-')} {d['busbw'] / 1e9:.4g} GB/s busbw at {d['bytes']} B"
                  for v, d in by_variant.items() if v != variant]
        m.notes.append(f"best of out-of-place and in-place: {variant.replace('_', '-')}"
                       + (f" (beside it: {', '.join(others)})" if others else ""))
        out.append(m)
    return out


# --- running -------------------------------------------------------------------------------------------------------

def _mode(mode: str, world) -> str:
    if mode == "auto":
        return "mpi" if world.distributed else "process"
    return mode


@dataclass(frozen=True)
class Sweep:
    """What the probe's parameters ask the sweep to run (the plan adds the sizes that fit)."""

    ops: tuple[str, ...] = C.OPS
    max_mib: int | None = None
    size_step: int = 2
    samples: int = 5
    variants: tuple[str, ...] = C.VARIANTS
    alltoall_api: str = "auto"


def _plan(sw: Sweep, n: int, free: int | None, quick: bool):
    from hwprobe.probes.interconnect.ncclrun import CollPlan

    ops, max_mib, step, samples = sw.ops, sw.max_mib, sw.size_step, sw.samples

    hi = (max_mib << 20) if max_mib else (64 << 20 if quick else C.MAX_BYTES)
    cap_note = ""
    if free:
        cap = C.largest_size(ops, n, free)
        if cap < hi:
            cap_note = (f"largest size {cap} B, not {hi} B: the buffers of the hungriest op must fit in 60% of the "
                        f"{free / 2**30:.1f} GiB free on the fullest GPU")
            hi = cap
    sizes = C.sizes(C.MIN_BYTES, hi, 4 if quick and step == 2 else step)
    return CollPlan(tuple(ops), sizes, n, samples=3 if quick else samples, variants=tuple(sw.variants),
                    alltoall_api=sw.alltoall_api), cap_note


@probe(name=PROBE, target="gpu", family="interconnect",
       summary="NCCL collectives 8 B..4 GiB (algbw/busbw as nccl-tests, every result checked); process, "
               "single-process or MPI ranks",
       choices={"mode": MODES, "ops": C.OPS, "gpus": GPU_CHOICES, "engine": ("auto", "cupy", "ctypes"),
                "variants": C.VARIANTS, "alltoall_api": ("auto", "send_recv")},
       ranges={"size_step": (2, 64), "min_ranks": (1, None), "samples": (1, 1000), "max_mib": (1, None),
               "worker_timeout_s": (10, None)})
def run(ctx, mode: str = "auto", ops: tuple[str, ...] = C.OPS, max_mib: int | None = None, size_step: int = 2,
        samples: int = 5, min_ranks: int = 2, gpus: str = "auto", allow_nvls: bool = False, engine: str = "auto",
        worker_timeout_s: float = 600.0, variants: tuple[str, ...] = C.VARIANTS,
        alltoall_api: str = "auto") -> Iterator[Measurement]:
    """``mode``: auto = mpi under an MPI launcher, else one process per GPU. ``variants``: out_of_place and/or
    in_place (both by default, as nccl-tests). ``alltoall_api``: "send_recv" forces grouped sends and receives
    where NCCL has ncclAlltoAll. ``min_ranks``: fewer ranks skip (1
    runs the path on one GPU, a smoke test: no data crosses a link). ``allow_nvls``: leave NCCL_NVLS_ENABLE as
    the environment has it (hwprobe sets 0 otherwise). ``max_mib``: the largest S (default 4 GiB, capped by free
    memory). ``worker_timeout_s``: spawned ranks still running after this are stopped (a rank whose peer died waits
    forever inside NCCL)."""
    from hwprobe import distributed
    from hwprobe.probes.interconnect import ncclapi

    notes = ncclapi.guard_env(allow_nvls)
    if not variants:
        raise ValueError("variants: name out_of_place, in_place or both")
    sweep = Sweep(tuple(ops), max_mib, size_step, samples, tuple(dict.fromkeys(variants)), alltoall_api)
    world = distributed.detect()
    mode = _mode(mode, world)
    if mode == "mpi":
        yield from _run_mpi(ctx, world, sweep, min_ranks, engine, notes)
        return
    from hwprobe.probes.interconnect.common import visible_gpus

    devs, why = pick_gpus(ctx.devices, visible_gpus() if gpus != "run" else [], gpus)
    if len(devs) < min_ranks:
        raise Skip(f"{len(devs)} GPU(s) ({why}): collectives need at least {min_ranks} "
                   "(min_ranks = 1 runs the NCCL path on one GPU as a smoke test)")
    eng = ncclapi.load(engine)
    yield from _run_local(ctx, mode, devs, why, eng, sweep, worker_timeout_s, notes)


def _run_local(ctx, mode, devs, why, eng, sweep: Sweep, timeout_s, notes):
    from hwprobe.probes.interconnect import ncclapi, ncclrun
    from hwprobe.probes.interconnect.common import free_bytes_nvml

    n = len(devs)
    plan, cap_note = _plan(sweep, n, free_bytes_nvml(devs), ctx.quick)
    idx = [d.index for d in devs]
    ctx.log(f"{mode}: {n} rank(s) on GPUs {idx} ({why}), NCCL {eng.version_text()} via {eng.name}, "
            f"{len(plan.sizes)} sizes up to {plan.sizes[-1]} B")
    t0 = time.perf_counter()
    with ctx.sampler.window() as win:
        if mode == "process":
            reports = ncclrun.spawn(idx, eng.unique_id(), plan, eng.name, timeout_s)
            bad = [r for r in reports if not r["ok"]]
            if bad:
                raise RuntimeError("; ".join(f"rank {r['rank']}: {r['error']}" for r in bad)
                                   + "\n" + "\n".join(r.get("traceback", "") for r in bad))
            merged = merge_ranks([r["results"] for r in reports])
        else:
            comms = eng.comm_all(idx)
            ranks = [ncclrun.LocalRank(r, d, c) for r, (d, c) in enumerate(zip(idx, comms, strict=True))]
            try:
                merged = ncclrun.run_ranks(eng, ranks, plan, log=ctx.log)
            finally:
                for lr in ranks:
                    lr.comm.destroy()
    meta = _local_meta(devs, mode, eng, plan, notes, cap_note, time.perf_counter() - t0)
    meta["nccl_env"] = ncclapi.nccl_env()
    yield from records(merged, n, meta, win.summary, "" if mode == "process" else f".{mode}")


def _local_meta(devs, mode, eng, plan, notes, cap_note, took) -> dict[str, Any]:
    from hwprobe.probes.interconnect import topology
    from hwprobe.probes.interconnect.common import nvml_topology

    gpus, pairs = nvml_topology(devs)
    bws = [topology.gpu_link_bandwidth(g) for g in gpus.values()]
    host = socket.gethostname()
    meta = {"mode": mode, "engine": eng.name, "nccl_version": eng.version_text(),
            "library": eng.library,  # not vocab: the NCCL library's file
            K.HOSTS: [host], "wall_s": round(took, 2), "notes": list(notes) + ([cap_note] if cap_note else []),
            "endpoints": [{"rank": r, "host": host, "gpu": d.index, "name": d.name, "uuid": d.uuid}
                          for r, d in enumerate(devs)],
            "link_type": _common_type(pairs), "max_bytes": plan.sizes[-1], **plan_meta(plan)}
    if bws and all(b for b, _ in bws):
        slow = min(bws, key=lambda x: x[0])
        meta["theory_Bps"] = slow[0]
        meta["theory_basis"] = f"busbw <= the slowest GPU's link bandwidth per direction: {slow[1]}"
    return meta


ITERATION_RULE = (f"per point: >= {C.MIN_WARMUP} warm-up and >= {C.MIN_TIMED} timed operations "
                  "(nccl-tests -w 5 -n 20), in >= `samples` samples of >= 5 operations lasting ~target_s each "
                  "by the cost model; figure = median sample")


def plan_meta(plan) -> dict[str, Any]:
    """What every record of the sweep says about how it was run."""
    return {"variants": list(plan.variants), "iteration_rule": ITERATION_RULE, "target_s": plan.target_s,
            "min_samples": plan.samples}


def _common_type(pairs) -> str | None:
    kinds = {p.link_type for p in pairs.values()}
    return kinds.pop() if len(kinds) == 1 else ("mixed: " + ", ".join(sorted(kinds)) if kinds else None)


def _run_mpi(ctx, world, sweep: Sweep, min_ranks, engine, notes):
    """One rank per process: the id over MPI, every rank's results gathered on rank 0, which files them."""
    from hwprobe import distributed
    from hwprobe.probes.interconnect import ncclapi, ncclrun, topology
    from hwprobe.probes.interconnect.common import free_bytes_nvml, nvml_topology

    comm = distributed.comm_world(world, required=True)
    world = distributed.complete(distributed.World(comm.Get_rank(), comm.Get_size(), world.local_rank,
                                                   world.local_size, world.host, world.launcher), comm)
    n = comm.Get_size()
    if n < min_ranks:
        raise Skip(f"{n} MPI rank(s): collectives need at least {min_ranks} (min_ranks = 1 runs the path)")
    eng = ncclapi.load_on_every_rank(comm, engine)
    dev = ctx.device
    free = distributed.agree_min(comm, free_bytes_nvml([dev]) or 0) or None
    plan, cap_note = _plan(sweep, n, free, ctx.quick)
    uid = distributed.bcast_unique_id(comm, eng.unique_id)
    t0 = time.perf_counter()
    with ctx.sampler.window() as win:
        lr = ncclrun.LocalRank(world.rank, dev.index, eng.comm(n, uid, world.rank))
        import cupy as cp

        with cp.cuda.Device(dev.index):
            lr.stream = cp.cuda.Stream(non_blocking=True)
        res = ncclrun.run_ranks(eng, [lr], plan, ncclrun.comm_barrier(eng, lr), log=ctx.log)
        lr.comm.destroy()
    gpus, _ = nvml_topology([dev])
    bw = topology.gpu_link_bandwidth(next(iter(gpus.values()))) if gpus else (None, "no NVML")
    me = {"rank": world.rank, "host": world.host, "gpu": dev.index, "name": dev.name, "uuid": dev.uuid,
          "link_Bps": bw[0], "link_basis": bw[1]}
    got = comm.gather((res, me), root=0)
    if not world.root:
        return
    hosts = sorted({m["host"] for _, m in got})
    meta = {"mode": "mpi", "engine": eng.name, "nccl_version": eng.version_text(),
            "library": eng.library,  # not vocab: the NCCL library's file
            K.HOSTS: hosts, "wall_s": round(time.perf_counter() - t0, 2), "launcher": world.launcher,
            "notes": list(notes) + ([cap_note] if cap_note else []), "endpoints": [m for _, m in got],
            "link_type": None, "max_bytes": plan.sizes[-1], "nccl_env": ncclapi.nccl_env(), **plan_meta(plan)}
    if len(hosts) == 1 and all(m["link_Bps"] for _, m in got):
        slow = min((m for _, m in got), key=lambda m: m["link_Bps"])
        meta["theory_Bps"] = slow["link_Bps"]
        meta["theory_basis"] = f"busbw <= the slowest GPU's link bandwidth per direction: {slow['link_basis']}"
    elif len(hosts) > 1:
        meta["notes"].append(f"{len(hosts)} hosts: the network between them is not known to NVML, so no theory")
    yield from records(merge_ranks([r for r, _ in got]), n, meta, win.summary)
