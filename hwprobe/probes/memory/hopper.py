"""gpu.hopper_mem: Hopper's own memory paths (sm_90 and later), each with its bytes stated and its output checked.

- Distributed shared memory (DSM), SM to SM inside a thread-block cluster: the latency of a dependent chase
  through the other CTA's shared memory (ld.shared::cluster) beside the same chase in the CTA's own shared
  memory; and the read bandwidth when every CTA reads its neighbour's shared memory, by cluster size.
- TMA, the bulk copy engine: cp.async.bulk global -> shared throughput by tile size, from DRAM and from L2.

Elsewhere (compute capability < 9.0) every section is skipped with the reason. Kernels: hopper_mem.cu.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from hwprobe import keys as K
from hwprobe.errors import VerificationError
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory.common import info, release
from hwprobe.timing import policy
from hwprobe.vocab import ExecUnit, Kind

DSM_CLUSTERS = (2, 4, 8, 16)
DSM_BLOCK = 1024
DSM_SMEM = 128 << 10        # per CTA: more than half an SM's shared memory, so one CTA per SM
DSM_RING = 4096             # words in each latency ring (16 KiB)
RING_STRIDE = 1031          # coprime with DSM_RING: the chase visits every word
TMA_TILES = (1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10)
TMA_INFLIGHT = 128 << 10    # bytes in flight per block (stages x tile), at most TMA_MAX_STAGES stages
TMA_MAX_STAGES = 16         # must match hopper_mem.cu
TMA_BLOCK = 256


# ---------------------------------------------------------------------------------------------------------------
# Pure plans (tested on the CPU)

def dsm_kernel(cs: int) -> str:
    return f"dsm_read<{cs}>"


def dsm_expected(cs: int, iters: int, vecs: int, block: int, grid: int) -> np.ndarray:
    """What each thread of dsm_read sums: iters x (vecs / block) vectors x 4 words x (its peer's rank + 1)."""
    rank = np.arange(grid) % cs
    peer = (rank + 1) % cs
    per_block = (np.uint64(iters) * np.uint64(vecs // block) * np.uint64(4) * (peer + 1).astype(np.uint64))
    return np.repeat(per_block % np.uint64(1 << 32), block).astype(np.uint32)


@dataclass(frozen=True)
class TmaPlan:
    tile: int               # bytes per cp.async.bulk
    stages: int             # tiles in flight per block
    grid: int
    ntiles: int             # tiles in the source (a smaller source is re-read: L2)
    per_block: int          # tiles each block loads

    @property
    def bytes(self) -> int:
        return self.grid * self.per_block * self.tile

    @property
    def smem(self) -> int:
        return self.tile * self.stages


def tma_stages(tile: int, inflight: int = TMA_INFLIGHT, cap: int = TMA_MAX_STAGES) -> int:
    return max(2, min(cap, inflight // tile))


def tma_plan(tile: int, src_bytes: int, grid: int, per_block: int | None = None) -> TmaPlan:
    """A TMA pass: ``grid`` blocks, each loading ``per_block`` tiles (default: the source split evenly, every
    tile loaded once)."""
    if src_bytes % tile:
        raise ValueError(f"source of {src_bytes} B is not a multiple of the {tile} B tile")
    ntiles = src_bytes // tile
    return TmaPlan(tile, tma_stages(tile), grid, ntiles, per_block or max(1, ntiles // grid))


def tma_expected(plan: TmaPlan) -> int:
    """Each block's sum: every word of the source is 1, so per_block x tile / 4 (mod 2^32)."""
    return (plan.per_block * plan.tile // 4) % (1 << 32)


# ---------------------------------------------------------------------------------------------------------------
# The probe

@probe(name="gpu.hopper_mem", target="gpu", family="memory",
       summary="Hopper memory paths: distributed shared memory latency and bandwidth by cluster size, TMA by tile")
def run(ctx, dsm: bool = True, tma: bool = True) -> Iterator[Measurement]:
    """``dsm``: distributed shared memory latency and bandwidth. ``tma``: bulk-copy throughput by tile size."""
    dev = ctx.device
    if dev.cc_major < 9:
        why = (f"needs sm_90 or later (thread-block clusters, cp.async.bulk); this GPU is "
               f"sm_{dev.cc_major}{dev.cc_minor}")
        for metric in ("dsm.latency", "dsm.read", "tma.load"):
            yield ctx.skip(metric, why)
        return
    from hwprobe.kernels import load

    release()
    mod = load("hopper_mem.cu", name_expressions=tuple(dsm_kernel(c) for c in DSM_CLUSTERS))
    if dsm:
        yield from _dsm_latency(ctx, mod)
        for cs in DSM_CLUSTERS:
            yield from _dsm_bandwidth(ctx, mod, cs)
    if tma:
        yield from _tma(ctx, mod)
    release()


def _dsm_latency(ctx, mod) -> Iterator[Measurement]:
    """CTA 0 of a 2-CTA cluster chases its own ring (ld.shared::cta, ld.shared::cluster) and CTA 1's ring."""
    import cupy as cp

    try:
        k = mod.get_function("dsm_chase")
        smem = 2 * DSM_RING * 4
        out = cp.zeros(12, dtype=cp.uint64)
        steps = 4096 if ctx.quick else 16384
        k((2,), (256,), (np.uint32(DSM_RING), np.uint32(RING_STRIDE), np.uint64(DSM_RING), np.uint64(steps), out),
          shared_mem=smem)
        res = out.get().reshape(3, 4)
    except Exception as e:
        yield info(ctx, "dsm.latency", "distributed shared memory chase failed", e)
        return
    names = (("dsm.latency.local", None, "own shared memory, ld.shared::cta"),
             ("dsm.latency.local_cluster", None, "own shared memory through its cluster address, ld.shared::cluster"),
             ("dsm.latency.remote", "dsm", "the other CTA's shared memory (another SM), ld.shared::cluster"))
    for (metric, level, what), (p, cyc, ns, start) in zip(names, res, strict=True):
        n = steps
        ok = (int(p) - int(start)) % (1 << 32) == 4 * _ring_end(n)   # the word the ring says, in its own window
        m = ctx.derived(metric, float(ns) / float(n) * 1e-9, unit="s", kind=Kind.LATENCY, level=level,
                        exec_unit=ExecUnit.CUDA_CORE,
                        params={K.CYCLES: float(cyc) / float(n), "steps": int(n), "ring_bytes": DSM_RING * 4,
                                "cluster": 2, "path": what, K.KERNEL_SM_MHZ: round(float(cyc) / float(ns) * 1e3, 1)},
                        notes=[f"one thread, a dependent chain of 4-byte loads through {what}"])
        m.verified = ok
        if not ok:
            m.valid = False
            m.flags.append("verification_failed: the chase ended on the wrong word")
        yield m


def _ring_end(steps: int) -> int:
    """The ring index after ``steps`` steps of stride RING_STRIDE from 0."""
    return (steps * RING_STRIDE) % DSM_RING


def _timed(fn: Callable[[], None]) -> float:
    from hwprobe.timing import time_cuda_once

    fn()
    return time_cuda_once(fn)


def _dsm_bandwidth(ctx, mod, cs: int) -> Iterator[Measurement]:
    """Every CTA reads the whole shared buffer of the next CTA in its cluster, iters times."""
    import cupy as cp

    dev = ctx.device
    metric = f"dsm.read.c{cs}"
    try:
        k = mod.get_function(dsm_kernel(cs))
        k.max_dynamic_shared_size_bytes = DSM_SMEM
        if cs > 8:      # cluster sizes over 8 are not portable: the kernel must allow them
            cp.cuda.driver.funcSetAttribute(k.kernel.ptr, 14, 1)  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
        grid = dev.sms // cs * cs
        vecs = DSM_SMEM // 16
        out = cp.zeros(grid * DSM_BLOCK, dtype=cp.uint32)
        stamps = cp.zeros(grid * 4, dtype=cp.uint64)
        smid = cp.zeros(grid, dtype=cp.uint32)

        def make(iters: int) -> Callable[[], None]:
            args = (np.uint32(vecs), np.uint64(iters), out, stamps, smid)
            return lambda: k((grid,), (DSM_BLOCK,), args, shared_mem=DSM_SMEM)

        t = _timed(make(4))
        iters = max(4, int(policy.rule("stream").sample_s / max(t / 4, 1e-9)))
        want = dsm_expected(cs, iters, vecs, DSM_BLOCK, grid)

        def check() -> None:
            bad = int(np.count_nonzero(out.get() != want))
            if bad:
                raise VerificationError(f"{bad} threads read wrong sums from their neighbour's shared memory")

        m = ctx.measure(metric, make(iters), work=grid * vecs * 16 * iters, unit="B/s", kind=Kind.MEMORY, check=check,
                        level="dsm", exec_unit=ExecUnit.CUDA_CORE, warmup=1, repeats=3 if ctx.quick else 5,
                        bytes_counted="bytes each CTA reads from its neighbour's shared memory (ld.shared::cluster.v4)",
                        params={"cluster": cs, "grid": grid, "block": DSM_BLOCK, "smem_per_cta": DSM_SMEM,
                                "iters": iters, "loads_in_flight_per_thread": 4})
        st = stamps.get().reshape(grid, 4).astype(float)
        cyc = st[:, 1] - st[:, 0]
        m.params["bytes_per_clk_per_sm"] = round(float(np.median(vecs * 16 * iters / cyc)), 2)
        m.params[K.KERNEL_SM_MHZ] = round(float(np.median(cyc / (st[:, 3] - st[:, 2]) * 1e3)), 1)
        span = float(st[:, 3].max() - st[:, 2].min())
        together = float(np.median(st[:, 3] - st[:, 2])) / span if span else 1.0
        m.params["concurrent_fraction"] = round(together, 3)
        m.params["sms_used"] = len(set(int(s) for s in smid.get()))
        if together < 0.9:   # the clusters ran in waves (a GPC holds only so many): rate per SM x SMs instead
            m.params["event_rate_bps"] = m.value
            m.value = m.params["bytes_per_clk_per_sm"] * dev.sms * m.params[K.KERNEL_SM_MHZ] * 1e6
            m.notes.append(f"clusters of {cs} ran in waves (blocks overlapped {together:.0%} of the launch): the "
                           f"figure is the per-SM rate ({m.params['bytes_per_clk_per_sm']} B/clk) x {dev.sms} SMs x "
                           f"the kernel clock; the launch's own rate is {m.params['event_rate_bps'] / 1e12:.2f} TB/s")
        yield m
    except Exception as e:
        yield info(ctx, metric, f"distributed shared memory read with clusters of {cs} failed", e,
                   params={"cluster": cs})


def _tma(ctx, mod) -> Iterator[Measurement]:
    """cp.async.bulk global -> shared by tile size, from a DRAM-sized source and from an L2-sized one."""
    import cupy as cp

    dev = ctx.device
    k = mod.get_function("tma_load")
    grid = dev.sms
    sources = (("dram", max(4 * dev.l2_bytes, 256 << 20) if ctx.quick else max(8 * dev.l2_bytes, 1 << 30)),
               ("l2", dev.l2_bytes // 4))
    for where, nbytes in sources:
        nbytes = nbytes // (64 << 10) * (64 << 10)
        try:
            src = cp.ones(nbytes // 4, dtype=cp.uint32)
        except Exception as e:
            yield info(ctx, f"tma.load.{where}", "source allocation failed", e)
            continue
        best: Measurement | None = None
        for tile in TMA_TILES:
            m = _tma_point(ctx, k, src, nbytes, tile, grid, where)
            if m.kind == "sweep" and m.verified and (best is None or m.value > best.value):
                best = m
            yield m
        if best is not None:
            yield _tma_point(ctx, k, src, nbytes, best.params["tile_bytes"], grid, where, final=True)
        src = None
        release()


def _tma_point(ctx, k, src, nbytes: int, tile: int, grid: int, where: str, final: bool = False) -> Measurement:
    import cupy as cp

    metric = f"tma.load.{where}" if final else f"tma.load.{where}.{tile}"
    try:
        plan = tma_plan(tile, nbytes, grid)
        if where == "l2":       # re-read the L2-sized source: enough tiles per block for a stream sample
            plan = tma_plan(tile, nbytes, grid, per_block=max(plan.per_block, 64))
        k.max_dynamic_shared_size_bytes = plan.smem
        out = cp.zeros(grid, dtype=cp.uint32)
        stamps = cp.zeros(grid * 4, dtype=cp.uint64)

        def make(p: TmaPlan) -> Callable[[], None]:
            args = (src, np.uint64(p.ntiles), np.uint64(p.per_block), np.uint32(p.tile), np.int32(p.stages), out,
                    stamps)
            return lambda: k((p.grid,), (TMA_BLOCK,), args, shared_mem=p.smem)

        if where == "l2":
            t = _timed(make(plan))
            target = policy.rule("stream").sample_s
            plan = tma_plan(tile, nbytes, grid, per_block=max(16, int(plan.per_block * target / max(t, 1e-7))))
        want = tma_expected(plan)

        def check() -> None:
            bad = int(np.count_nonzero(out.get() != want))
            if bad:
                raise VerificationError(f"{bad} blocks summed the wrong number of words")

        m = ctx.measure(metric, make(plan), work=plan.bytes, unit="B/s", kind=Kind.MEMORY if final else "sweep",
                        check=check, level=where if final else None, exec_unit=ExecUnit.COPY_ENGINE, warmup=1,
                        repeats=3 if (ctx.quick or not final) else 5,
                        bytes_counted="bytes loaded into shared memory by cp.async.bulk",
                        params={"tile_bytes": tile, "stages": plan.stages, "grid": grid, "block": TMA_BLOCK,
                                "source_bytes": nbytes, "source": where, "tiles_per_block": plan.per_block,
                                "bytes_in_flight_per_block": plan.tile * plan.stages})
        st = stamps.get().reshape(grid, 4).astype(float)
        m.params["bytes_per_clk_per_sm"] = round(float(np.median(plan.per_block * tile / (st[:, 1] - st[:, 0]))), 2)
        if final:
            m.notes.append(f"best tile of {', '.join(str(t >> 10) + ' KiB' for t in TMA_TILES)}: {tile >> 10} KiB, "
                           f"{plan.stages} in flight per block, one block per SM")
        return m
    except Exception as e:
        return info(ctx, metric, f"TMA load of {tile} B tiles from {where} failed", e, params={"tile_bytes": tile})
