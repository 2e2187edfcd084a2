"""gpu.dram: DRAM bandwidth with BabelStream semantics (read, write, copy, scale, triad) and cudaMemcpy D2D.

Each op tries a few kernel variants (block size, loads in flight per thread, blocks per SM, cache hints), keeps
the fastest, and records the winner in params: a probe that reports less than the hardware does is wrong.
Arrays are >= 4x L2 each, so every pass streams from DRAM.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hwprobe import keys as K
from hwprobe.errors import Skip, VerificationError
from hwprobe.kernels import compile_ahead
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory.common import MEM_FRACTION, blocks_per_sm, calibrate, free_bytes, info, release, repeat
from hwprobe.probes.memory.plan import align_down, bytes_counted, stream_array_bytes, stream_bytes
from hwprobe.timing import policy
from hwprobe.vocab import ExecUnit, Kind

FINALISTS = 2                # (variant, size) pairs measured in full; the faster one is reported

UNROLLS = (1, 2, 4, 8)
READ_HINTS = (0, 1, 2, 3)                                    # load hint LH (see memory.cu)
WRITE_HINTS = (0, 1)                                         # store hint SH for write (2 only with loads)
RW_HINTS = ((0, 0), (0, 1), (1, 1), (2, 0), (2, 1), (3, 1), (3, 2))  # (LH, SH) for copy/scale/triad
LOAD_HINT_NAMES = {0: "plain", 1: "ld.global.cs", 2: "ld.global.nc.L1::no_allocate.L2::256B",
                   3: "L1::no_allocate + L2 evict_first policy + L2::256B"}
STORE_HINT_NAMES = {0: "plain", 1: "st.global.cs", 2: "L1::no_allocate + L2 evict_first policy"}
SCALAR = 3.0                 # scale/triad multiplier; with the pattern's values every result is exact
FILL = 7.0


# ---------------------------------------------------------------------------------------------------------------
# The probe

WARP_OPS = ("copy", "scale")  # ops whose kernels take the warp-contiguous template flag W (see memory.cu)
BURST_UNROLLS = (2, 4, 8)     # the unrolls of the warp-contiguous shapes (W = 1 is compiled for these only)
TMA_OPS = {"copy": 0, "scale": 1}  # ops with a bulk-copy (TMA) kernel: tma_stream<OP>


def kernel_name(op: str, unroll: int, lh: int = 0, sh: int = 0, warp: int = 0) -> str:
    if op == "read":
        return f"stream_read<{unroll}, {lh}>"
    if op == "write":
        return f"stream_write<{unroll}, {sh}>"
    if op in WARP_OPS:
        return f"stream_{op}<{unroll}, {lh}, {sh}, {warp}>"
    return f"stream_{op}<{unroll}, {lh}, {sh}>"


def tma_kernel_name(op: str) -> str:
    return f"tma_stream<{TMA_OPS[op]}>"


def hint_pairs(op: str) -> list[tuple[int, int]]:
    if op == "read":
        return [(lh, 0) for lh in READ_HINTS]
    if op == "write":
        return [(0, sh) for sh in WRITE_HINTS]
    return list(RW_HINTS)


def all_kernel_names() -> tuple[str, ...]:
    names = [kernel_name(op, u, lh, sh, w) for op in OP_IO
             for u in UNROLLS for lh, sh in hint_pairs(op)
             for w in ((0, 1) if op in WARP_OPS and u in BURST_UNROLLS else (0,))]
    names += [tma_kernel_name(op) for op in TMA_OPS]
    return tuple(dict.fromkeys(names))


# Tile layouts (see memory.cu): how the tiles of blockDim.x * unroll vectors are handed to blocks.
#   grid_stride: persistent grid, block b takes tiles b, b + grid, ...      (chunk 1)
#   flat:        one block per tile, no loop (BabelStream's launch)          (chunk 1, grid = ntiles)
#   contiguous:  persistent grid, block b takes one contiguous range         (chunk = ntiles / grid)
#   chunked:     persistent grid, grid-stride over chunks of CHUNK_TILES tiles
# and "tma": bulk copies through shared memory, each block streaming one contiguous range (copy, scale).
CHUNK_TILES = 16
LAYOUTS = ("grid_stride", "flat", "contiguous", "chunked")


def launch_geometry(layout: str, ntiles: int, blocks: int | None) -> tuple[int, int]:
    """(grid, chunk) for a layout over ``ntiles`` tiles; ``blocks`` is the persistent grid (SMs x per SM)."""
    if layout == "flat":
        return ntiles, 1
    if layout == "grid_stride":
        return min(blocks, ntiles), 1
    if layout == "contiguous":
        grid = min(blocks, ntiles)
        return grid, -(-ntiles // grid)
    if layout == "chunked":
        chunk = min(CHUNK_TILES, ntiles)
        return min(blocks, -(-ntiles // chunk)), chunk
    raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")


def shapes(sms: int, occupancy: Callable[[int, int], int]) -> list[dict]:
    """Launch shapes to screen: (block, unroll, layout, blocks per SM). Flat grids (which won every mixed
    read/write op on the H200), persistent grid-stride grids at full and half occupancy, and block-contiguous
    and chunked persistent grids (DRAM page locality when reads and writes mix)."""
    out = []
    for block, unroll in ((256, 1), (256, 2), (256, 4), (512, 2), (1024, 1), (1024, 2)):
        out.append({"block": block, "unroll": unroll, "layout": "flat", "blocks_per_sm": None})
    for block, unroll in ((256, 4), (512, 4), (1024, 2)):
        k = occupancy(block, unroll)
        for kk in sorted({k, max(1, k // 2)}, reverse=True):
            out.append({"block": block, "unroll": unroll, "layout": "grid_stride", "blocks_per_sm": kk})
    for block, unroll in ((256, 4), (512, 4), (256, 8), (1024, 2)):
        k = occupancy(block, unroll)
        out.append({"block": block, "unroll": unroll, "layout": "contiguous", "blocks_per_sm": k})
    for block, unroll in ((256, 4), (512, 2)):
        k = occupancy(block, unroll)
        out.append({"block": block, "unroll": unroll, "layout": "chunked", "blocks_per_sm": k})
    for s in out:
        s["grid"] = sms * s["blocks_per_sm"] if s["blocks_per_sm"] else None
        s["warp"] = 0
    return out


def burst_shapes(sms: int, occupancy: Callable[[int, int], int]) -> list[dict]:
    """Extra shapes for 1 read : 1 write streams (copy, scale), which lose ~10% to read/write bus turnarounds:
    warp-contiguous bursts (each warp reads 32 x unroll x 16 B, then writes them) in small flat blocks (64
    threads x 4 vectors won on an H200: 4.24 TB/s against 4.20 at 128 x 8), block tiles of 32 KiB read into
    registers before any store, flat and on a persistent grid of exactly SMs x resident blocks."""
    u = max(BURST_UNROLLS)
    out = [{"block": 256, "unroll": u, "layout": "flat", "blocks_per_sm": None, "warp": 1},
           {"block": 128, "unroll": u, "layout": "flat", "blocks_per_sm": None, "warp": 1},
           {"block": 256, "unroll": u, "layout": "flat", "blocks_per_sm": None, "warp": 0}]
    out += [{"block": block, "unroll": unroll, "layout": "flat", "blocks_per_sm": None, "warp": 1}
            for block, unroll in ((32, 4), (64, 4), (128, 4), (64, 2), (128, 2))]
    k = occupancy(256, u)
    out.append({"block": 256, "unroll": u, "layout": "contiguous", "blocks_per_sm": k, "warp": 1})
    out.append({"block": 256, "unroll": u, "layout": "grid_stride", "blocks_per_sm": k, "warp": 1})
    for s in out:
        s["grid"] = sms * s["blocks_per_sm"] if s["blocks_per_sm"] else None
    return out


# Bulk-copy (TMA) configurations: (chunk bytes, stages, blocks per SM); shared memory per block = chunk x stages.
TMA_CONFIGS = ((16 << 10, 4, 3), (32 << 10, 3, 2), (16 << 10, 8, 1), (32 << 10, 6, 1), (8 << 10, 8, 3))
TMA_MAX_STAGES = 16          # memory.cu's barrier array
SMEM_RESERVED = 2 << 10      # per block: the driver's reserve plus the kernel's static barriers, rounded up


def tma_shapes(op: str, sms: int, smem_per_sm: int, smem_per_block: int) -> list[dict]:
    """Bulk-copy variants that fit the SM's shared memory: one thread issues for copy, a block of 256 threads
    scales the chunk in shared memory for scale."""
    out = []
    for chunk, stages, k in TMA_CONFIGS:
        smem = chunk * stages
        if not 2 <= stages <= TMA_MAX_STAGES or smem > smem_per_block or k * (smem + SMEM_RESERVED) > smem_per_sm:
            continue
        out.append({"block": 32 if op == "copy" else 256, "unroll": None, "layout": "tma", "blocks_per_sm": k,
                    "grid": sms * k, "warp": 0, "lh": None, "sh": None, "chunk_bytes": chunk, "stages": stages})
    return out


def tma_geometry(nbytes: int, chunk: int, grid: int) -> tuple[int, int]:
    """(chunks, chunks per block) for a bulk-copy pass over ``nbytes`` (a multiple of ``chunk``)."""
    if nbytes % chunk:
        raise ValueError(f"array of {nbytes} B is not a multiple of the {chunk} B bulk-copy chunk")
    nchunks = nbytes // chunk
    return nchunks, -(-nchunks // grid)


def array_sizes(base: int, largest: int) -> list[int]:
    """Array sizes to try with the best variant: ``base`` (where variants are screened), then 2x and 4x while
    they fit in ``largest``; a longer pass per launch shrinks the launch tail and drain between launches."""
    return [x for x in (base, 2 * base, 4 * base) if x <= largest] or [largest]


def median(xs: list[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2])


def finalists(size_tried: list[dict], n: int) -> list[dict]:
    """The ``n`` fastest verified (variant, size) records, fastest first."""
    ok = [t for t in size_tried if "gbps" in t]
    return sorted(ok, key=lambda t: -t["gbps"])[:n]


TOP_FOR_SIZES = 3            # best variants re-timed at each array size
VARIANT_KEYS = ("block", "unroll", "layout", "blocks_per_sm", "grid", "warp", "lh", "sh", "chunk_bytes", "stages")
RECORD_KEYS = (*VARIANT_KEYS, "array_bytes", "launches_per_sample", "gbps", "error")


# ---------------------------------------------------------------------------------------------------------------
# The plan (pure: what each op reads and writes, which variants are screened in which order, at which sizes)

@dataclass(frozen=True)
class OpIO:
    """What one stream op touches: arrays it reads (set to mult x the check pattern first), the array it writes
    (cleared to mult x pattern before each variant; None: read's per-block partial sums), the pointer arguments,
    the trailing arguments (floats, or "partial" for the partial-sum array) and the check (array, mult, add:
    every element must equal mult x pattern + add; None: the partial sums must add up to the pattern's sum)."""
    inputs: tuple[tuple[str, float], ...]
    output: tuple[str, float] | None
    ptrs: tuple[str, ...]
    tail: tuple[float | str, ...]
    check: tuple[str, float, float] | None


OP_IO = {
    "read": OpIO((("a", 1.0),), None, ("a",), ("partial",), None),
    "write": OpIO((), ("b", 1.0), ("b",), (FILL,), ("b", 0.0, FILL)),
    "copy": OpIO((("a", 1.0),), ("c", 0.0), ("a", "c"), (), ("c", 1.0, 0.0)),
    "scale": OpIO((("c", 1.0),), ("b", 0.0), ("c", "b"), (SCALAR,), ("b", SCALAR, 0.0)),
    "triad": OpIO((("b", 1.0), ("c", 1.0)), ("a", 0.0), ("b", "c", "a"), (SCALAR,), ("a", 1.0 + SCALAR, 0.0)),
}
OPS = (*OP_IO, "memcpy_d2d")     # a new pattern is its kernel (memory.cu) and its OP_IO entry


def first_stage(op: str, sms: int, occupancy: Callable[[int, int], int], search: bool) -> list[dict]:
    """The launch shapes screened first, with the op's first hint pair (all of them; only the first when the
    search is off)."""
    lh0, sh0 = hint_pairs(op)[0]
    cands = [{**s, "lh": lh0, "sh": sh0} for s in shapes(sms, occupancy)]
    if op in WARP_OPS:
        cands += [{**s, "lh": lh0, "sh": sh0} for s in burst_shapes(sms, occupancy)]
    return cands if search else cands[:1]


def hint_stage(op: str, best: dict) -> list[dict]:
    """The best shape again with every other cache-hint pair of the op."""
    return [{**best, "lh": lh, "sh": sh} for lh, sh in hint_pairs(op) if (lh, sh) != (best["lh"], best["sh"])]


def ranked(tried: list[dict], n: int) -> list[dict]:
    """The ``n`` fastest verified variants (VARIANT_KEYS only), fastest first."""
    ok = sorted((t for t in tried if "gbps" in t), key=lambda t: -t["gbps"])
    return [{k: t[k] for k in VARIANT_KEYS} for t in ok[:n]]


def dram_sizes(l2: int, free: int, array_mib: int | None, quick: bool, search: bool) -> tuple[int, list[int]]:
    """(the array size variants are screened at, the sizes the best are re-timed at). Raises ValueError when
    three arrays of 4x L2 do not fit in the memory budget."""
    base_target = (array_mib << 20) if array_mib else (4 * l2 if quick else 1 << 30)
    base = stream_array_bytes(l2, free, n_arrays=3, target_bytes=base_target, mem_fraction=MEM_FRACTION)
    if not (search and not array_mib and not quick):
        return base, [base]
    largest = stream_array_bytes(l2, free, n_arrays=3, target_bytes=4 * base, mem_fraction=MEM_FRACTION)
    return base, array_sizes(base, largest)


# ---------------------------------------------------------------------------------------------------------------
# The executor: arrays, launches, checks and timed variants on the GPU

class DramBench:
    """Three arrays of ``alloc`` bytes, the stream kernels, and the pieces every op's search uses."""

    def __init__(self, ctx, alloc: int):
        import cupy as cp

        from hwprobe.kernels import load

        self.ctx, self.alloc, self.n_max = ctx, alloc, alloc // 8
        self.mod = load(*_module())
        self._init, self._mismatch = self.mod.get_function("init_pattern"), self.mod.get_function("count_mismatch")
        self.arrays = {k: cp.empty(self.n_max, dtype=cp.float64) for k in "abc"}
        self.bad = cp.zeros(1, dtype=cp.uint64)
        self.fill_grid = (ctx.device.sms * 8,)
        self.arrays["partial"] = cp.zeros(max(ctx.device.sms * 64, alloc // 16 // 128), dtype=cp.float64)

    def set_pattern(self, name: str, mult: float) -> None:
        import cupy as cp

        self._init(self.fill_grid, (256,), (self.arrays[name], cp.uint64(self.n_max), cp.float64(mult)))

    def clear(self, op: str) -> None:
        out = OP_IO[op].output
        if out is None:
            self.arrays["partial"].fill(0)
        else:
            self.set_pattern(*out)

    def check(self, op: str, nbytes: int, grid: int) -> Callable[[], None]:
        """The check of one pass of ``op`` over arrays of ``nbytes`` (read: the partials of ``grid`` blocks)."""
        import cupy as cp

        n = nbytes // 8
        spec = OP_IO[op].check

        def elements() -> None:
            name, mult, add = spec
            self.bad.fill(0)
            self._mismatch(self.fill_grid, (256,), (self.arrays[name], cp.uint64(n), cp.float64(mult),
                                                    cp.float64(add), self.bad))
            nbad = int(self.bad.get()[0])
            if nbad:
                raise VerificationError(f"{nbad} of {n} elements differ from the expected value")

        def partial_sum() -> None:
            want = float(n // 1024) * sum(0.5 * j + 1.0 for j in range(1024))
            got = float(self.arrays["partial"][:grid].sum().get())
            if got != want:
                raise VerificationError(f"sum {got!r} != {want!r}")

        return elements if spec is not None else partial_sum

    def launcher(self, op: str, v: dict, nbytes: int) -> tuple[Callable[[], None], int]:
        """The launch of one pass of ``op`` with variant ``v`` over arrays of ``nbytes``, and its grid."""
        import cupy as cp

        io = OP_IO[op]
        ptrs = tuple(self.arrays[p] for p in io.ptrs)
        tail = tuple(self.arrays[x] if isinstance(x, str) else cp.float64(x) for x in io.tail)
        if v["layout"] == "tma":
            k = self.mod.get_function(tma_kernel_name(op))
            smem = v["chunk_bytes"] * v["stages"]
            k.max_dynamic_shared_size_bytes = smem
            grid = v["grid"]
            nchunks, per_block = tma_geometry(nbytes, v["chunk_bytes"], grid)
            args = (*ptrs, cp.uint64(nchunks), cp.uint64(per_block), cp.uint32(v["chunk_bytes"]),
                    cp.int32(v["stages"]), *(tail or (cp.float64(1.0),)))
            return (lambda: k((grid,), (v["block"],), args, shared_mem=smem)), grid
        k = self.mod.get_function(kernel_name(op, v["unroll"], v["lh"], v["sh"], v["warp"]))
        ntiles = nbytes // 16 // (v["block"] * v["unroll"])
        grid, chunk = launch_geometry(v["layout"], ntiles, v["grid"])
        args = (*ptrs, cp.uint64(ntiles), cp.uint64(chunk), *tail)
        return (lambda: k((grid,), (v["block"],), args)), grid

    def timed(self, op: str, v: dict, nbytes: int, rule: str) -> dict:
        """Clear the output, time back-to-back calls of the stopping rule's sample length (the way ctx.measure
        does), as many as it takes, after one warm-up; check the output; a record with gbps, or error."""
        from hwprobe.timing import time_cuda

        r = policy.rule(rule)

        rec = {**{k: v.get(k) for k in VARIANT_KEYS}, "array_bytes": nbytes}
        try:
            self.clear(op)
            launch, grid = self.launcher(op, v, nbytes)
            reps = calibrate(launch, r.sample_s)
            t = median(time_cuda(repeat(launch, reps), warmup=1, repeats=r.max_samples))
            self.check(op, nbytes, grid)()
            rec.update(launches_per_sample=reps, gbps=round(stream_bytes(op, nbytes) * reps / t / 1e9, 1))
        except Exception as e:  # a variant that fails to launch or to verify is recorded and skipped
            rec["error"] = f"{type(e).__name__}: {e}"
            self.ctx.log(f"{op} variant {rec} failed")
        return rec

    def screen(self, op: str, variants: list[dict], base: int, tried: list[dict]) -> dict | None:
        recs = [self.timed(op, v, base, "screen") for v in variants]
        tried.extend(recs)
        ok = [(r, v) for r, v in zip(recs, variants, strict=True) if "gbps" in r]
        return max(ok, key=lambda rv: rv[0]["gbps"])[1] if ok else None

    def occupancy(self, op: str) -> Callable[[int, int], int]:
        def occ(block: int, unroll: int) -> int:
            k = self.mod.get_function(kernel_name(op, unroll))
            return min(blocks_per_sm(k, block, fallback=max(1, 2048 // block)), 2048 // block)
        return occ


# ---------------------------------------------------------------------------------------------------------------
# The probe

def _module() -> tuple:
    """``load``'s arguments for memory.cu with every stream kernel (DramBench loads it, compile_ahead early)."""
    return ("memory.cu", (), all_kernel_names())


@probe(name="gpu.dram", target="gpu", family="memory", ahead=compile_ahead(_module),
       summary="DRAM bandwidth: read, write, copy, scale, triad (BabelStream bytes) and cudaMemcpy D2D")
def run(ctx, array_mib: int | None = None, ops: tuple[str, ...] = OPS, search: bool = True) -> Iterator[Measurement]:
    """``array_mib``: bytes per array (default: screen at 1 GiB, then try 2 and 4 GiB with the best variants;
    quick 4x L2; never below 4x L2). ``search``: screen kernel variants per op (off: one default variant)."""
    release()
    bad = [o for o in ops if o not in OPS]
    if bad:
        raise Skip(f"unknown ops {bad}; known: {', '.join(OPS)}")
    dev = ctx.device
    try:
        base, sizes = dram_sizes(dev.l2_bytes, free_bytes(), array_mib, ctx.quick, search)
    except ValueError as e:
        raise Skip(str(e)) from None
    bench = DramBench(ctx, max(sizes))
    ctx.log(f"gpu.dram: 3 arrays of {bench.alloc / 2**20:.0f} MiB, screening at {base / 2**20:.0f} MiB, sizes "
            f"{[x >> 20 for x in sizes]} MiB (L2 {dev.l2_bytes / 2**20:.0f} MiB)")
    tma_ok = dev.cc_major >= 9 and dev.smem_per_block_optin_bytes > 0
    for op in ops:
        if op == "memcpy_d2d":
            bench.set_pattern("a", 1.0)
            bench.set_pattern("c", 0.0)
            chk = bench.check("copy", bench.alloc, 0)     # the largest arrays: as for SM copies
            yield from _memcpy(ctx, bench.arrays["a"], bench.arrays["c"], bench.alloc, chk)
            continue
        for name, mult in OP_IO[op].inputs:
            bench.set_pattern(name, mult)
        tried: list[dict] = []
        best = bench.screen(op, first_stage(op, dev.sms, bench.occupancy(op), search), base, tried)
        if best is not None and search:
            bench.screen(op, hint_stage(op, best), base, tried)
        if search and tma_ok and op in TMA_OPS:
            bench.screen(op, tma_shapes(op, dev.sms, dev.smem_per_sm_bytes, dev.smem_per_block_optin_bytes), base,
                         tried)
        yield from _finish(ctx, bench, op, tried, sizes, base)
    bench = None  # drop the arrays before handing memory back
    release()


def _finish(ctx, bench: DramBench, op: str, tried: list[dict], sizes: list[int], base: int) -> Iterator[Measurement]:
    """The best few variants re-timed at every array size the way the final measurement is (calls of a stream sample,
    back to back); the FINALISTS fastest (variant, size) pairs measured in full with exactly the same launches
    per sample; the faster verified one is reported, with every variant tried in its params."""
    top = ranked(tried, TOP_FOR_SIZES)
    if not top:
        yield info(ctx, f"dram.{op}", f"every variant of {op} failed", "; ".join(t["error"] for t in tried))
        return
    size_tried = [bench.timed(op, v, nbytes, "stream_sizes") for v in top for nbytes in sizes]
    measured: list[tuple[Measurement, dict]] = []
    for fin in finalists(size_tried, FINALISTS):
        v, nbytes, reps = {k: fin[k] for k in VARIANT_KEYS}, fin["array_bytes"], fin["launches_per_sample"]
        bench.clear(op)
        launch, grid = bench.launcher(op, v, nbytes)
        m = ctx.measure(
            f"dram.{op}", repeat(launch, reps), work=stream_bytes(op, nbytes) * reps, unit="B/s", kind=Kind.MEMORY,
            check=bench.check(op, nbytes, grid), level="dram", exec_unit=ExecUnit.CUDA_CORE,
            bytes_counted=bytes_counted(op),
            params=_params(op, v, nbytes, reps, grid, fin["gbps"]),
        )
        measured.append((m, fin))
    if not measured:
        yield info(ctx, f"dram.{op}", f"every sized variant of {op} failed", "; ".join(t["error"] for t in size_tried))
        return
    m, fin = max(measured, key=lambda mf: (mf[0].verified is True, mf[0].value))
    m.params["variants"] = [{k: t[k] for k in RECORD_KEYS if t.get(k) is not None} for t in tried]
    m.params["sizes"] = [{k: t[k] for k in RECORD_KEYS if t.get(k) is not None} for t in size_tried]
    m.params["finalists"] = [{"layout": f["layout"], "array_bytes": f["array_bytes"], "search_gbps": f["gbps"],
                              "measured_gbps": round(mm.value / 1e9, 1)} for mm, f in measured]
    m.notes.append(f"best of {len(tried)} variants screened at {base >> 20} MiB per array, the top {len(top)} "
                   f"re-timed at {[x >> 20 for x in sizes]} MiB, the {len(measured)} fastest measured in full; "
                   f"layout {fin['layout']}")
    if m.value < 0.97 * fin["gbps"] * 1e9:
        m.notes.append(f"the full measurement ({m.value / 1e9:.0f} GB/s) is over 3% below the search's "
                       f"{fin['gbps']:.0f} GB/s for the same launches")
    yield m


def _params(op: str, v: dict, nbytes: int, reps: int, grid: int, search_gbps: float) -> dict:
    """What a DRAM measurement records about its winning variant."""
    tma = v["layout"] == "tma"
    return {
        "op": op, "array_bytes": nbytes, "launches_per_sample": reps, "block": v["block"], "grid": grid,
        "blocks_per_sm": v["blocks_per_sm"], "unroll": v["unroll"], "layout": v["layout"],
        "vector_bytes": None if tma else 16, "warp_contiguous": bool(v.get("warp")),
        "load_hint": None if op == "write" or tma else LOAD_HINT_NAMES[v["lh"]],
        "store_hint": None if op == "read" or tma else STORE_HINT_NAMES[v["sh"]],
        "bulk_copy": {"chunk_bytes": v["chunk_bytes"], "stages": v["stages"],
                      "api": "cp.async.bulk global->shared (mbarrier) + shared->global (bulk_group)"} if tma else None,
        "search_gbps": search_gbps,
    }


def _memcpy(ctx, src, dst, nbytes: int, check: Callable[[], None]) -> Iterator[Measurement]:
    """cudaMemcpyAsync device-to-device on the current stream (the driver picks copy engine or SM kernel)."""
    import cupy as cp

    rt = cp.cuda.runtime

    def launch() -> None:
        rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, rt.memcpyDeviceToDevice, cp.cuda.get_current_stream().ptr)

    try:
        reps = calibrate(launch, policy.rule("stream").sample_s)
        yield ctx.measure(
            "dram.memcpy_d2d", repeat(launch, reps), work=stream_bytes("copy", nbytes) * reps, unit="B/s",
            kind=Kind.MEMORY, check=check, level="dram", exec_unit=ExecUnit.COPY_ENGINE,
            bytes_counted=bytes_counted("memcpy_d2d"),
            params={K.OP: "memcpy_d2d", "array_bytes": nbytes, "calls_per_sample": reps, "api": "cudaMemcpyAsync"},
            notes=["same-device cudaMemcpy: the driver may use a copy engine or an SM copy kernel"],
        )
    except Exception as e:
        yield info(ctx, "dram.memcpy_d2d", "cudaMemcpy D2D failed", e)


__all__ = ["run", "OP_IO", "first_stage", "hint_stage", "ranked", "dram_sizes", "DramBench", "kernel_name",
           "tma_kernel_name", "all_kernel_names", "shapes", "burst_shapes", "tma_shapes", "tma_geometry",
           "launch_geometry", "array_sizes", "finalists", "align_down"]
