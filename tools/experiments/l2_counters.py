"""L2 read bandwidth with the hardware counters beside it: which pattern reaches the L2's real rate, and how
many of the bytes each pattern counts the L2 slices really served.

Two modes. ``time``: every pattern x set size timed with CUDA events (median of 7 calls of ~2 ms after a
warm-up), every output checked, the NVML clock and power recorded; writes l2_counters_time.json and the
launch list for the counter pass. ``ncu``: launches each configuration twice (warm-up + measured) with the
iteration counts the time mode chose, for ``ncu --cache-control none --clock-control none`` to read the L2
slice (lts__), L2-to-L1 crossbar (l1tex__m_xbar2l1tex) and L1 counters of each launch; tools/experiments/
l2_counters.sh drives both and tabulates.

Patterns (bytes = bytes requested by the loads or the bulk copies):
- peer_dbl: the established cache benchmark's structure (flat grid of 100,000 blocks of 1024 threads, 64 plain
  8-byte loads per thread, block b reads chunks i * n + b mod n): co-running blocks read the same lines.
- peer_cg / peer_plain: hwprobe's re-creation (l2_region, 512 KiB regions, 16-byte ld.global.cg / plain).
- stream: gpu.cache's stream kernel (sweep_read<1>).
- private / private_fixed: l2_region, every block owns its rows; regions moved to other SMs every launch, or not.
- tma: cp.async.bulk global -> shared, one block per SM, each block on its own tiles.
"""
import json
import os
import sys
import time

import cupy as cp
import numpy as np
from expkit import Poll, event_median_s

from hwprobe.kernels import arch_flag, load, source
from hwprobe.probes.memory import l2plan
from hwprobe.probes.memory.common import CACHE_KERNELS
from hwprobe.probes.memory.hopper import dsm_kernel

OUT = os.environ.get("OUT", "/tmp")
MIB = 1 << 20
dev = cp.cuda.Device()
SMS = dev.attributes["MultiProcessorCount"]
L2 = dev.attributes["L2CacheSize"]
UNIT = SMS * 64 << 10                       # sets are multiples of SMs x 64 KiB (every private plan fits)
SIZES = [UNIT // 2, UNIT, 2 * UNIT]        # 4.1, 8.25, 16.5 MiB on 132 SMs
PEER_SRC = r"""
extern "C" __global__ void __launch_bounds__(1024) peer_dbl(const double* __restrict__ B, int n,
                                                            unsigned* __restrict__ err) {
    double s = 0.0;
    for (int i = 0; i < 64; ++i)
        s += B[(long long)blockDim.x * n * i + (long long)(blockIdx.x % n) * blockDim.x + threadIdx.x];
    if (s != 64.0) atomicAdd(err, 1u);
}
"""

# l2_flat (tried here, not kept in hwprobe: the skew raised the coalesced share instead of removing it)
FLAT_SRC = r"""
// L2 read bandwidth, "flat, skewed": the established cache benchmark's shape (a flat grid of short blocks, block
// b reads region r = b mod nregions, FLAT_CHUNKS chunks of blockDim.x loads spread over the set: chunk c of region
// r at (c * nregions + r) * blockDim.x) without its shared lines: a block starts at chunk (b / nregions) * skew,
// so blocks that read one region at the same time are on different chunks while they keep pace. Every load is
// issued before the first add (full unroll, independent addresses). VEC: 8 (ld.global.cg.v2.u32) or 16 (.v4).
// Every word is 1: out[b] = blockDim.x * FLAT_CHUNKS * VEC / 4.
#define FLAT_CHUNKS 64
template <int VEC>
__global__ void __launch_bounds__(1024) l2_flat(const unsigned* __restrict__ buf, unsigned nregions, unsigned skew,
                                                unsigned* __restrict__ out) {
    const unsigned r = blockIdx.x % nregions, start = (blockIdx.x / nregions) * skew;
    unsigned a = 0;
#pragma unroll
    for (int i = 0; i < FLAT_CHUNKS; ++i) {
        const unsigned c = (i + start) % FLAT_CHUNKS;
        const unsigned long long e = ((unsigned long long)c * nregions + r) * blockDim.x + threadIdx.x;
        if constexpr (VEC == 8) {
            unsigned x, y;
            asm("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "l"(buf + 2 * e));
            a += x + y;
        } else {
            const uint4 v = ld_l2<0>(reinterpret_cast<const uint4*>(buf) + e);
            a += v.x + v.y + v.z + v.w;
        }
    }
    const unsigned s = block_sum<unsigned>(a);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

"""
ARCH = arch_flag(*divmod(int(dev.compute_capability), 10))
cache = cp.RawModule(code=source("mem_cache.cu") + FLAT_SRC, options=(ARCH, "-std=c++17"),
                     name_expressions=CACHE_KERNELS + l2plan.kernel_names() + ("l2_flat<8>", "l2_flat<16>"))
hopper = load("hopper_mem.cu", name_expressions=(dsm_kernel(2),)) if int(dev.compute_capability) >= 90 else None
peer_mod = cp.RawModule(code=PEER_SRC)
big = cp.ones(L2 // 4, dtype=cp.uint32)                    # every 32-bit word 1 (the l2_region / stream checks)
dbl = cp.ones(L2 // 8, dtype=cp.float64)                   # every double 1.0 (peer_dbl's check)
out = cp.zeros(1 << 22, dtype=cp.uint32)
err = cp.zeros(1, dtype=cp.uint32)
stamps = cp.zeros(SMS * 4 * 4, dtype=cp.uint64)


def timed(fn, reps: int = 7) -> float:
    return event_median_s(fn, reps)


# --------------------------------------------------------------------------------------------------------------
# Each builder: (size, scale) -> (fn, bytes, check); scale sets the launch length (iterations or grid).

def peer_dbl(size: int, scale: int):
    k = peer_mod.get_function("peer_dbl")
    n = max(1, size // (64 * 1024 * 8))
    grid = scale

    def fn():
        k((grid,), (1024,), (dbl, np.int32(n), err))

    def check():
        bad = int(err.get()[0])
        err.fill(0)
        return bad == 0
    return fn, grid * 64 * 1024 * 8, check, n * 64 * 1024 * 8


def region(kind: str, v: l2plan.L2Variant):
    def build(size: int, scale: int):
        k = cache.get_function(v.kernel)
        if kind.startswith("peer"):
            plan = l2plan.shared_plan(size, v, 1, l2plan.PEER_REGION)
            grid, it, rotate = scale, 1, False
        else:
            plan = l2plan.private_plan(size, v, SMS)
            grid, it, rotate = plan.grid, scale, kind == "private"
        calls = [0]

        def fn():
            calls[0] += 1
            off = (calls[0] * 7919) % grid if rotate else 0
            k((grid,), (v.block,), (big, np.uint64(plan.region_vecs), np.uint64(plan.nregions), np.uint32(it),
                                    np.uint32(off), out))

        def check():
            return bool(np.all(out[:grid].get() == l2plan.block_sum(plan, it)))
        return fn, grid * it * plan.region_vecs * 16, check, plan.set_bytes
    return build


def stream(size: int, scale: int):
    k = cache.get_function("sweep_read<1>")
    grid, nvec = SMS * 4, size // 16

    def fn():
        k((grid,), (512,), (big, np.uint32(nvec), np.uint64(0), np.int32(0), np.uint64(scale), out))

    def check():
        return bool(np.all(out[:grid].get() == (512 * scale * 16) % (1 << 32)))
    return fn, grid * 512 * scale * 64, check, size


def tma(tile: int, stages: int):
    def build(size: int, scale: int):
        k = hopper.get_function("tma_load")
        k.max_dynamic_shared_size_bytes = tile * stages
        grid = SMS
        per = size // tile // grid                 # tiles each block owns; it reads them `scale` times over
        if per == 0:
            raise ValueError(f"a {size} B set gives no {tile} B tile to each of {grid} blocks")
        ntiles, per_block = per * grid, per * scale

        def fn():
            k((grid,), (256,), (big, np.uint64(ntiles), np.uint64(per_block), np.uint32(tile), np.int32(stages),
                                out, stamps), shared_mem=tile * stages)

        def check():
            return bool(np.all(out[:grid].get() == (per_block * tile // 4) % (1 << 32)))
        return fn, grid * per_block * tile, check, ntiles * tile
    return build


def flat(vec: int, block: int, skewed: bool = True):
    """l2_flat: the peer's shape, 16-byte or 8-byte .cg loads, regions of block x 64 loads; skew from the
    resident blocks per region (0: the peer's own order)."""
    def build(size: int, scale: int):
        k = cache.get_function(f"l2_flat<{vec}>")
        region = block * 64 * vec
        n = max(1, size // region)
        resident = SMS * occupancy(k, block)
        per_region = -(-resident // n)
        skew = max(1, 64 // per_region) if skewed else 0
        grid = scale

        def fn():
            k((grid,), (block,), (big, np.uint32(n), np.uint32(skew), out))

        def check():
            return bool(np.all(out[:grid].get() == (block * 64 * vec // 4) % (1 << 32)))
        return fn, grid * region, check, n * region
    return build


def occupancy(k, block):
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(k.kernel.ptr, block, 0))
    except Exception:
        return 2048 // block


PATTERNS = {
    "peer_dbl": (peer_dbl, 4 * SMS),
    "peer_cg": (region("peer", l2plan.L2Variant(1024, 8, 0, 0)), 4 * SMS),
    "peer_plain": (region("peer", l2plan.L2Variant(1024, 8, 2, 0)), 4 * SMS),
    "stream": (stream, 16),
    "private_b256u8nc": (region("private", l2plan.L2Variant(256, 8, 1, 4)), 2),
    "private_b256u4cg": (region("private", l2plan.L2Variant(256, 4, 0, 4)), 2),
    "private_b512u4cg": (region("private", l2plan.L2Variant(512, 4, 0, 4)), 2),
    "private_b1024u4cg": (region("private", l2plan.L2Variant(1024, 4, 0, 2)), 2),
    "fixed_b256u4cg": (region("fixed", l2plan.L2Variant(256, 4, 0, 4)), 2),
    "fixed_b256u8nc": (region("fixed", l2plan.L2Variant(256, 8, 1, 4)), 2),
}
if hopper is not None:
    for tile, stages in ((16 << 10, 12), (32 << 10, 6), (64 << 10, 3)):
        PATTERNS[f"tma_{tile >> 10}k_x{stages}"] = (tma(tile, stages), 2)
PATTERNS_V1 = PATTERNS
PATTERNS = {
    "peer_dbl": (peer_dbl, 4 * SMS),
    "peer_cg": PATTERNS_V1["peer_cg"],
    "flat8_b1024": (flat(8, 1024), 4 * SMS), "flat8_b1024_noskew": (flat(8, 1024, False), 4 * SMS),
    "flat16_b1024": (flat(16, 1024), 4 * SMS), "flat8_b512": (flat(8, 512), 8 * SMS),
    "flat16_b512": (flat(16, 512), 8 * SMS), "flat16_b256": (flat(16, 256), 16 * SMS),
    "private_b256u4cg": PATTERNS_V1["private_b256u4cg"],
}
if hopper is not None:
    for tile, stages in ((48 << 10, 4), (64 << 10, 3), (96 << 10, 2), (112 << 10, 2)):
        PATTERNS[f"tma_{tile >> 10}k_x{stages}"] = (tma(tile, stages), 2)
if os.environ.get("L2C_SET") == "v1":
    PATTERNS = PATTERNS_V1
MIB_SIZES = [2, 3, 4, 6, 8, 12, 16, 20]


def calibrate(build, size: int, scale0: int, target: float = 0.002) -> int:
    fn, _, _, _ = build(size, scale0)
    t = timed(fn, 2)
    return max(scale0, int(scale0 * target / max(t, 1e-7)))


def time_mode() -> None:
    poll = Poll()
    rows, launches = [], []
    print(f"{SMS} SMs, L2 {L2 / MIB:.0f} MiB, sizes {[round(s / MIB, 2) for s in SIZES]} MiB")
    for name, (build, scale0) in PATTERNS.items():
        sizes = SIZES if PATTERNS is PATTERNS_V1 else (
            [s * MIB for s in MIB_SIZES] if not name.startswith(("tma", "private")) else [UNIT, 2 * UNIT])
        for size in sizes:
            try:
                scale = calibrate(build, size, scale0)
                fn, nbytes, check, set_bytes = build(size, scale)
                t0 = time.perf_counter()
                t = timed(fn)
                ok = check()
                w = poll.window(t0, time.perf_counter())
                rows.append({"pattern": name, "size": set_bytes, "scale": scale, "bytes": nbytes, "s": t,
                             "tbps": nbytes / t / 1e12, "ok": ok, **w})
                launches.append({"pattern": name, "size": size, "scale": scale})
                print(f"{name:20s} {set_bytes / MIB:6.2f} MiB {nbytes / t / 1e12:6.2f} TB/s ok={ok} "
                      f"{w.get('sm_mhz')} MHz {w.get('power_w')} W")
            except Exception as e:
                print(f"{name:20s} {size / MIB:6.2f} MiB failed: {type(e).__name__}: {e}")
    poll.stop()
    json.dump(rows, open(os.path.join(OUT, "l2_counters_time.json"), "w"), indent=1)
    json.dump(launches, open(os.path.join(OUT, "l2_counters_launches.json"), "w"), indent=1)


def ncu_mode() -> None:
    """Each configuration twice (warm-up, measured), in the order of the launch list."""
    launches = json.load(open(os.path.join(OUT, "l2_counters_launches.json")))
    manifest = []
    for x in launches:
        build = PATTERNS[x["pattern"]][0]
        fn, nbytes, check, set_bytes = build(x["size"], x["scale"])
        for rep in range(2):
            fn()
            cp.cuda.Device().synchronize()
            manifest.append({**x, "rep": rep, "bytes": nbytes, "set": set_bytes, "ok": bool(check())})
    json.dump(manifest, open(os.path.join(OUT, "l2_counters_manifest.json"), "w"), indent=1)


if __name__ == "__main__":
    (ncu_mode if sys.argv[1:] == ["ncu"] else time_mode)()
