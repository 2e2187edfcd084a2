"""CPU tests of the memory probes' logic: byte accounting, sweep plans, chase orders, host models of the
kernels' checks, kernel names against the CUDA sources, and lazy imports."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import hwprobe.probes.memory.chase as chase
import hwprobe.probes.memory.plan as mplan
from hwprobe.kernels import source
from tests.refs import H100_L2_GPUBENCHES

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


@pytest.mark.parametrize("op,factor", [("read", 1), ("write", 1), ("copy", 2), ("scale", 2), ("triad", 3)])
def test_stream_bytes(op, factor):
    assert mplan.stream_bytes(op, GIB) == factor * GIB
    assert mplan.bytes_counted(op)


def test_stream_bytes_unknown_op():
    with pytest.raises(ValueError):
        mplan.stream_bytes("nstream", 1)


def test_stream_array_bytes_target_budget_and_floor():
    l2 = 60 * MIB
    # plenty of memory: the target
    assert mplan.stream_array_bytes(l2, 140 * GIB, n_arrays=3, target_bytes=GIB) == GIB
    # the target below 4x L2 is raised to 4x L2
    assert mplan.stream_array_bytes(l2, 140 * GIB, n_arrays=3, target_bytes=64 * MIB) == 240 * MIB
    # budget-bound: 25% of 12 GiB over 3 arrays = 1 GiB, aligned to 2 MiB
    got = mplan.stream_array_bytes(l2, 12 * GIB, n_arrays=3, target_bytes=8 * GIB)
    assert got == GIB and got % (2 * MIB) == 0
    # too little memory for 3 x 240 MiB in 25%
    with pytest.raises(ValueError, match="do not fit"):
        mplan.stream_array_bytes(l2, 2 * GIB, n_arrays=3)


def test_roofline_intensity_accounting():
    assert mplan.roofline_intensity("fp32", 0) == 0.25          # 4 adds per 16 B
    assert mplan.roofline_intensity("fp64", 0) == 0.125         # 2 adds per 16 B
    assert mplan.roofline_intensity("fp16", 0) == 0.5           # 4 half2 lanes x 2 fp32 adds
    assert mplan.roofline_intensity("fp32", 8) == (4 * (8 * 2 + 1)) / 16
    assert mplan.roofline_intensity("fp16", 8) == (4 * (8 * 4 + 2)) / 16
    assert mplan.roofline_flops_per_vector("int32", 3) == 4 * 7


@pytest.mark.parametrize("prec", list(mplan.ROOF_PRECISIONS))
def test_roofline_plan_spans_the_range(prec):
    plan = mplan.roofline_plan(prec, 0.125, 1024.0, per_octave=2)
    ms = [m for m, _ in plan]
    its = [i for _, i in plan]
    assert ms == sorted(set(ms)) and ms[0] == 0
    assert its == sorted(its)
    assert 0.9 * 1024 <= its[-1] <= 1.1 * 1024
    assert its[0] <= 0.5


def test_random_cycle_is_one_cycle_over_all_slots():
    rng = np.random.default_rng(0)
    order = chase.random_cycle(1000, rng)
    nxt = chase.next_slots(order)
    seen, s = [], 0
    for _ in range(1000):
        seen.append(s)
        s = int(nxt[s])
    assert s == 0 and sorted(seen) == list(range(1000))
    assert chase.slot_after(order, 1000) == 0 and chase.slot_after(order, 7) == order[7]


def test_page_local_cycle_stays_in_a_page_then_moves_on():
    rng = np.random.default_rng(1)
    per_page = 64
    order = chase.page_local_cycle(per_page * 10, per_page, rng)
    assert order[0] == 0 and sorted(order) == list(range(640))
    pages = order // per_page
    # each page is one contiguous run of the visiting order
    changes = np.count_nonzero(np.diff(pages))
    assert changes == 9
    nxt = chase.next_slots(order)
    s, n = 0, 0
    while True:
        s, n = int(nxt[s]), n + 1
        if s == 0:
            break
    assert n == 640
    with pytest.raises(ValueError):
        chase.page_local_cycle(100, 64, rng)


def test_dram_kernel_names_match_templates():
    from hwprobe.probes.memory import dram as d

    names = d.all_kernel_names()
    src = source("memory.cu")
    for base in ("stream_read", "stream_write", "stream_copy", "stream_scale", "stream_triad", "tma_stream"):
        assert re.search(rf"__global__ void __launch_bounds__\(1024\) {base}\(", src)
        assert any(n.startswith(base + "<") for n in names)
    assert d.kernel_name("read", 4, 2) == "stream_read<4, 2>"
    assert d.kernel_name("write", 8, 0, 1) == "stream_write<8, 1>"
    assert d.kernel_name("triad", 2, 3, 1) == "stream_triad<2, 3, 1>"
    assert d.kernel_name("copy", 8, 1, 1, 1) == "stream_copy<8, 1, 1, 1>"
    assert d.kernel_name("scale", 2, 3, 2) == "stream_scale<2, 3, 2, 0>"
    assert d.tma_kernel_name("copy") == "tma_stream<0>" and d.tma_kernel_name("scale") == "tma_stream<1>"
    rw = len(d.RW_HINTS)
    # read 4 hints, write 2, triad rw, copy/scale rw each plus the warp-contiguous flavour at the burst unrolls
    want = len(d.UNROLLS) * (4 + 2 + 3 * rw) + 2 * rw * len(d.BURST_UNROLLS) + 2
    assert len(names) == len(set(names)) == want
    assert "#define FOR_TILES" in src and src.count("FOR_TILES(t)") == 6   # the macro + 5 kernels
    # hints 0..2 have explicit branches, 3 is the final else; stores: 0 and 1 explicit, 2 the else
    assert all(f"LH == {lh}" in src for lh in (0, 1, 2)) and "SH == 0" in src and "SH == 1" in src
    assert set(d.LOAD_HINT_NAMES) == set(d.READ_HINTS)
    assert set(d.STORE_HINT_NAMES) == {sh for _, sh in d.RW_HINTS} | set(d.WRITE_HINTS)
    assert f"#define TMA_MAX_STAGES {d.TMA_MAX_STAGES}" in src


def _vec_at(u, w, unroll, block, thread):
    """Mirror of vec_at in memory.cu (offset inside one tile)."""
    if w == 0:
        return thread + u * block
    return (thread // 32) * 32 * unroll + u * 32 + thread % 32


@pytest.mark.parametrize("w", [0, 1])
def test_dram_tile_offsets_cover_the_tile_once(w):
    unroll, block = 8, 256
    offs = [_vec_at(u, w, unroll, block, t) for t in range(block) for u in range(unroll)]
    assert sorted(offs) == list(range(block * unroll))
    if w == 1:  # a warp's accesses form one contiguous 32 * unroll vector (4 KiB) burst
        warp0 = sorted(_vec_at(u, 1, unroll, block, t) for t in range(32) for u in range(unroll))
        assert warp0 == list(range(32 * unroll))


def test_dram_burst_and_tma_shapes():
    from hwprobe.probes.memory import dram as d

    bursts = d.burst_shapes(132, lambda block, unroll: 2048 // block)
    assert any(s["warp"] == 1 for s in bursts) and all(s["unroll"] in d.BURST_UNROLLS for s in bursts)
    assert all(s["grid"] == 132 * s["blocks_per_sm"] for s in bursts if s["blocks_per_sm"])
    tma = d.tma_shapes("copy", 132, 228 << 10, 227 << 10)
    assert tma and all(s["layout"] == "tma" and s["block"] == 32 for s in tma)
    for s in tma:
        assert s["blocks_per_sm"] * (s["chunk_bytes"] * s["stages"] + d.SMEM_RESERVED) <= 228 << 10
        assert 2 <= s["stages"] <= d.TMA_MAX_STAGES and s["chunk_bytes"] % 16 == 0
        assert s["grid"] == 132 * s["blocks_per_sm"]
    assert all(s["block"] == 256 for s in d.tma_shapes("scale", 132, 228 << 10, 227 << 10))
    assert len(d.tma_shapes("copy", 132, 100 << 10, 99 << 10)) < len(tma)   # smaller shared memory, fewer fit
    assert d.tma_shapes("copy", 132, 0, 0) == []


@pytest.mark.parametrize("nbytes,chunk,grid",
                         [(1 << 30, 16 << 10, 396), (64 << 20, 32 << 10, 132), (1 << 21, 8 << 10, 1000)])
def test_dram_tma_geometry_covers_every_chunk_once(nbytes, chunk, grid):
    from hwprobe.probes.memory import dram as d

    nchunks, per_block = d.tma_geometry(nbytes, chunk, grid)
    assert nchunks * chunk == nbytes
    seen = [i for bid in range(grid) for i in range(bid * per_block, min(bid * per_block + per_block, nchunks))]
    assert seen == list(range(nchunks))
    with pytest.raises(ValueError):
        d.tma_geometry(nbytes + 16, chunk, grid)


def test_dram_finalists_rank_verified_records():
    from hwprobe.probes.memory import dram as d

    recs = [{"layout": "flat", "gbps": 4100.0}, {"layout": "tma", "error": "VerificationError: 5 of 9"},
            {"layout": "contiguous", "gbps": 4200.0}, {"layout": "grid_stride", "gbps": 3900.0}]
    assert [r["layout"] for r in d.finalists(recs, 2)] == ["contiguous", "flat"]
    assert d.finalists([{"error": "x"}], 2) == []
    assert d.median([3.0, 1.0, 2.0]) == 2.0 and d.median([4.0, 1.0]) == 2.5


def test_dram_shapes_cover_layouts_and_occupancy():
    from hwprobe.probes.memory import dram as d

    shapes = d.shapes(132, lambda block, unroll: 2048 // block)
    assert {s["layout"] for s in shapes} == set(d.LAYOUTS)
    assert {s["block"] for s in shapes} >= {256, 512, 1024} and {s["unroll"] for s in shapes} == set(d.UNROLLS)
    assert all(s["grid"] is None for s in shapes if s["layout"] == "flat")
    gs = [s for s in shapes if s["layout"] == "grid_stride" and s["block"] == 256 and s["unroll"] == 4]
    assert {s["blocks_per_sm"] for s in gs} == {8, 4}
    assert all(s["grid"] == 132 * s["blocks_per_sm"] for s in shapes if s["blocks_per_sm"])


def _tiles_visited(layout, ntiles, blocks):
    """Simulate FOR_TILES in memory.cu: which tiles each block visits."""
    grid, chunk = d_launch(layout, ntiles, blocks)
    seen = []
    for bid in range(grid):
        c = bid
        while c * chunk < ntiles:
            seen.append((bid, list(range(c * chunk, min(c * chunk + chunk, ntiles)))))
            c += grid
    return grid, chunk, seen


def d_launch(layout, ntiles, blocks):
    from hwprobe.probes.memory import dram as d

    return d.launch_geometry(layout, ntiles, blocks)


@pytest.mark.parametrize("layout", ["grid_stride", "flat", "contiguous", "chunked"])
@pytest.mark.parametrize("ntiles", [1, 100, 1056, 4096 + 7])
def test_dram_layouts_visit_every_tile_once(layout, ntiles):
    grid, chunk, seen = _tiles_visited(layout, ntiles, 1056)
    tiles = sorted(t for _, ts in seen for t in ts)
    assert tiles == list(range(ntiles))
    if layout == "contiguous":          # one range per block
        assert all(len({b for b, _ in seen if b == bid}) <= 1 for bid in range(grid))
        assert len(seen) == len({b for b, _ in seen})
    if layout == "flat":
        assert grid == ntiles and chunk == 1


def test_dram_array_sizes():
    from hwprobe.probes.memory import dram as d

    g = 1 << 30
    assert d.array_sizes(g, 4 * g) == [g, 2 * g, 4 * g]
    assert d.array_sizes(g, 3 * g) == [g, 2 * g]
    assert d.array_sizes(g, g) == [g]


def test_cache_kernels_exist_in_source():
    from hwprobe.probes.memory.cache import CACHE_KERNELS, SMEM_BLOCK, SMEM_VECS

    src = source("mem_cache.cu")
    for name in CACHE_KERNELS:
        assert re.search(rf"__global__ void[^;{{}}]*?\b{name.split('<')[0]}\(", src), name
    assert f"#define SMEM_BLOCK {SMEM_BLOCK}" in src
    assert f"#define SMEM_VECS_PER_THREAD {SMEM_VECS}" in src
    assert 'extern "C" __global__ void __launch_bounds__(SMEM_BLOCK) smem_read(' in src


def test_roofline_kernels_exist_and_constants_match():
    from hwprobe.probes.compute import roofline as r

    src = source("mem_roofline.cu")
    for spec in mplan.ROOF_PRECISIONS.values():
        assert f"void __launch_bounds__(256) {spec.kernel}(" in src
    assert f"#define ROOF_U {r.ROOF_U}" in src and r.BLOCK == 256


@pytest.mark.parametrize("prec", ["fp32", "fp64", "fp16"])
def test_roofline_host_chain_matches_fused_steps(prec):
    from hwprobe.probes.compute import roofline as r

    x0 = r.pattern(prec)
    dtype = x0.dtype
    v = x0.copy()
    for _ in range(5):   # independent replay: exact product + add in float64, one rounding
        v = np.array([dtype.type(float(a) * 0.5 + 0.75) for a in v], dtype=dtype)
    assert np.array_equal(r.chain(prec, x0, 5), v)
    assert np.all(r.chain(prec, x0, 200) == dtype.type(1.5))   # the fixed point of x -> x/2 + 3/4


def test_roofline_int_chain_and_total():
    from hwprobe.probes.compute import roofline as r

    x = r.pattern("int32")
    assert list(x[:3]) == [1, 2, 3]
    v = [int(a) for a in x]
    for _ in range(3):
        v = [(a * 1664525 + 1013904223) % (1 << 32) for a in v]
    assert [int(a) for a in r.chain("int32", x, 3)] == v
    assert r.expected_total("int32", 3, 128) == (2 * sum(v)) % (1 << 64)
    assert r.expected_total("fp32", 0, 128) == pytest.approx(2 * float(r.pattern("fp32").sum()))


def test_host_sizes_samples_and_patterns():
    from hwprobe.probes.interconnect import host as h

    s = h.transfer_sizes(GIB, quick=False)
    assert s[0] == 4 * KIB and s[-1] == GIB and len(s) == 19
    q = h.transfer_sizes(64 * MIB, quick=True)
    assert q == [4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB]
    idx = h.sample_index(1024)
    assert idx[0] == 0 and idx[-1] == 1023 and len(idx) <= h.CHECKED_WORDS
    assert h.host_pattern(idx).dtype == np.uint32
    assert not np.array_equal(h.host_pattern(idx), h.device_pattern(idx))
    assert h.SENTINEL not in set(h.host_pattern(np.arange(1 << 16)).tolist())


def test_probes_register_with_the_right_fields():
    from hwprobe.probes.base import _REGISTRY
    from hwprobe.probes.compute import roofline as gpu_roofline  # noqa: F401
    from hwprobe.probes.interconnect import host as gpu_host  # noqa: F401
    from hwprobe.probes.memory import cache as gpu_cache  # noqa: F401
    from hwprobe.probes.memory import dram as gpu_dram  # noqa: F401
    from hwprobe.probes.memory import latency as gpu_latency  # noqa: F401

    want = {"gpu.dram": "memory", "gpu.cache": "memory", "gpu.latency": "memory", "gpu.host": "interconnect",
            "gpu.roofline": "compute"}
    for name, family in want.items():
        p = _REGISTRY[name]
        assert p.target == "gpu" and p.family == family
    assert set(_REGISTRY["gpu.roofline"].precisions) == {"fp32", "fp64", "fp16", "int32"}
    assert "array_mib" in _REGISTRY["gpu.dram"].params()


def test_memory_probes_import_no_gpu_library():
    code = ("import sys; import hwprobe.probes.memory.dram, hwprobe.probes.memory.cache, "
            "hwprobe.probes.memory.latency, hwprobe.probes.interconnect.host, hwprobe.probes.compute.roofline, "
            "hwprobe.curves; "
            "bad = [m for m in ('cupy', 'cupyx', 'pynvml', 'numba.cuda') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ridge_note_states_the_measured_ridge_first():
    from hwprobe.probes.compute.roofline import ridge_note

    n = ridge_note("fp32", 15.09, 63.71e12, 4.22e12, "FLOP/B", 13.9, "132 SM x 128 FMA/clk/SM x 2 x 1980 MHz / ...")
    assert n.startswith("fp32 roofline sweep: this kernel's knee 15.1 FLOP/B (its roof 63.7 TFLOP/s; its slope "
                        "4.22 TB/s);")
    assert "theoretical DRAM bandwidth) 13.9 FLOP/B" in n and "measured peak" in n and "ridge table" in n
    assert "TOP/s" in ridge_note("int32", 7.8, 33.1e12, 4.25e12, "OP/B", None, "no theory")


def test_host_ceiling_is_measured_again_when_disturbed():
    from hwprobe.measurement import Measurement
    from hwprobe.probes.interconnect.host import retried

    def runs(*gbps):
        it = iter(gbps)

        def measure():
            m = Measurement(probe="gpu.host", metric="host.bidir.pinned", kind="memory", unit="B/s",
                            value=next(it) * 1e9)
            m.verified = True
            return m
        return measure

    calm = retried(runs(98.0), 99e9)
    assert calm.value == 98e9 and "attempts_gbps" not in calm.params and not calm.notes
    disturbed = retried(runs(47.6, 97.5, 12.0), 99e9)       # the second attempt is back above 95%: no third
    assert disturbed.value == 97.5e9 and disturbed.params["attempts_gbps"] == [47.6, 97.5]
    assert "disturbed host" in disturbed.notes[0]
    short = retried(runs(89.4, 93.0, 96.0), 99e9)           # 90% of the sweep is not enough: 95%
    assert short.value == 96e9 and short.params["attempts_gbps"] == [89.4, 93.0, 96.0]
    stuck = retried(runs(40.0, 45.0, 41.0, 56.0, 48.0, 99.0), 99e9)   # at most 4 retries, then the best of five
    assert stuck.value == 56e9 and stuck.params["attempts_gbps"] == [40.0, 45.0, 41.0, 56.0, 48.0]
    from hwprobe.probes.interconnect.host import ceiling_retries
    pageable = retried(runs(40.0, 99.0), 99e9, retries=ceiling_retries("pageable"))   # not the ceiling: once
    assert pageable.value == 40e9 and "attempts_gbps" not in pageable.params
    assert ceiling_retries("pinned") == 4


def test_host_ceiling_is_the_better_of_the_sweeps_best_sizes():
    from hwprobe.measurement import Measurement
    from hwprobe.probes.interconnect.host import CEILING_SIZES, best_of_sizes, ceiling_sizes

    rates = {1 << 20: 80e9, 256 << 20: 101.6e9, 512 << 20: 99.7e9, 1 << 30: 99.9e9}
    assert CEILING_SIZES == 2 and ceiling_sizes(rates, "pinned") == [256 << 20, 1 << 30]
    assert ceiling_sizes({}, "pinned") == [] and ceiling_sizes({}, "pageable") == []
    # pageable: a comparison figure, at its best size up to 64 MiB (one H200 run's bidirectional rates)
    pageable = {4 << 20: 10.1e9, 16 << 20: 10.4e9, 64 << 20: 8.5e9, 512 << 20: 8.5e9, 1 << 30: 11.4e9}
    assert ceiling_sizes(pageable, "pageable") == [16 << 20]
    assert ceiling_sizes({1 << 30: 9e9, 512 << 20: 8e9}, "pageable") == [1 << 30]      # none small: the best

    def at(size, gbps, verified=True):
        m = Measurement(probe="gpu.host", metric="host.bidir.pinned", kind="memory", unit="B/s", value=gbps * 1e9,
                        params={"bytes": size})
        m.verified = verified
        return m

    # the sweep's best size read low in its longer window; the second-best size's window is the ceiling
    m = best_of_sizes([at(256 << 20, 96.0), at(1 << 30, 98.9)])
    assert m.value == 98.9e9 and m.params["bytes"] == 1 << 30
    assert m.params["sizes_gbps"] == {str(256 << 20): 96.0, str(1 << 30): 98.9}
    assert best_of_sizes([at(256 << 20, 96.0), at(1 << 30, 120.0, verified=False)]).value == 96.0e9
    one = best_of_sizes([at(256 << 20, 96.0)])
    assert "sizes_gbps" not in one.params


@pytest.mark.parametrize("far_ns", [320.0, 262.0])
def test_l2_latency_sweep_reports_a_far_partition_only_where_a_step_shows(monkeypatch, far_ns):
    from types import SimpleNamespace

    from hwprobe.measurement import Measurement
    from hwprobe.probes.base import ProbeContext
    from hwprobe.probes.memory import latency as gpu_latency
    from hwprobe.timing import NullSampler

    l2 = 50 << 20

    def fake_chase(ctx, mod, out, rng, *, metric, level, set_bytes, **kw):
        ns = 260.0 if set_bytes <= l2 // 2 else far_ns if set_bytes <= l2 else 650.0
        return Measurement(probe="gpu.latency", metric=metric, kind="latency", value=ns * 1e-9, unit="s",
                           level=level, params={"cycles": ns * 1.98})

    monkeypatch.setattr(gpu_latency, "_chase", fake_chase)
    monkeypatch.setattr(gpu_latency, "release", lambda: None)
    dev = SimpleNamespace(l2_bytes=l2)
    ctx = ProbeContext(target="gpu", device=dev, sampler=NullSampler(), probe_name="gpu.latency")
    out = {m.metric: m for m in gpu_latency._l2_sweep(ctx, None, None, None, int(1.25 * l2))}
    sweep = out["latency.l2.sweep"]
    assert [p["bytes"] for p in sweep.params["curve"]] == sorted(p["bytes"] for p in sweep.params["curve"])
    assert sweep.params["curve"][-1]["ns"] == 650.0
    if far_ns == 262.0:
        assert "latency.l2_far" not in out and "no near/far step" in sweep.notes[0]
        return
    far = out["latency.l2_far"]
    assert far.level == "l2_far" and far.value == pytest.approx(320e-9)
    assert 0.4 * l2 < sweep.value <= 0.6 * l2 and "near partition 260 ns, far 320 ns" in sweep.notes[0]


# ---------------------------------------------------------------- L2 pattern plan (issue 10)

def test_l2_private_plan_gives_every_block_its_own_rows():
    from hwprobe.probes.memory import l2plan

    v = l2plan.L2Variant(256, 4, 0, 4)
    plan = l2plan.private_plan(20 * MIB, v, 132)
    assert plan.private and plan.nregions % plan.grid == 0 and plan.set_bytes <= 20 * MIB
    assert plan.set_bytes > 20 * MIB - v.min_set(132)              # rounded down by less than one row per block
    for off in (0, 7919 % plan.grid):
        owners = l2plan.owners(plan, iters=3 * plan.nregions // plan.grid, off=off)
        assert len(owners) == plan.nregions and all(len(b) == 1 for b in owners.values())
    with pytest.raises(ValueError, match="smaller than one"):
        l2plan.private_plan(v.min_set(132) - 1, v, 132)
    # a shared plan (the peer's) does put several blocks on one region
    peer = l2plan.shared_plan(8 * MIB, l2plan.PEER, 64, l2plan.PEER_REGION)
    assert peer.nregions == 16 and max(len(b) for b in l2plan.owners(peer, 1).values()) == 4
    assert l2plan.block_sum(plan, 5) == 5 * plan.region_vecs * 4
    assert l2plan.launch_bytes(plan, 5) == plan.grid * 5 * plan.region_vecs * 16


def test_l2_sweep_plan_reads_the_sizes_it_reports():
    from hwprobe.probes.memory import l2plan

    wanted = mplan.log_sizes(60 * MIB // 16, 120 * MIB, 8, align=1 << 16)
    planned = l2plan.sweep_plan([l2plan.CAPACITY], wanted, 132)
    q = l2plan.CAPACITY.min_set(132)
    assert list(planned) == sorted(planned) and all(s % q == 0 for s in planned)
    assert planned and min(planned) == q and max(planned) <= 120 * MIB
    assert l2plan.choose([l2plan.CAPACITY], q - 1, 132) is None
    big, small = l2plan.L2Variant(256, 4, 0, 8), l2plan.L2Variant(64, 4, 0, 8)
    assert l2plan.choose([big, small], 22 * MIB, 132) is small      # 16.5 MiB of 22 would lose 25%
    assert l2plan.choose([big, small], 33 * MIB, 132) is big


GPUBENCH_RUN = H100_L2_GPUBENCHES / "lease1" / "gpubench-1.txt"   # gpu-benches' own output


def _gpubench_sets(path) -> list[int]:
    """The 'data set' column of gpu-benches gpu-l2-cache's printout, in bytes (read by the tool that tabulates it)."""
    from pathlib import Path

    from tests.helpers import load_tool

    return sorted(load_tool("peers/gpubenches_l2_table").bench_curve(Path(path)))


def test_peer_sets_are_the_benchmarks_own_sets():
    """The sets of the peer method are the ones gpu-benches printed on an H100 (its run is the oracle), so the
    median of the 2-20 MiB window falls on the same set (8 MiB of 25)."""
    from hwprobe.probes.memory import l2plan

    printed = [s for s in _gpubench_sets(GPUBENCH_RUN) if 2 * MIB <= s <= 20 * MIB]
    assert len(printed) == 25 and printed[0] == 2 * MIB and printed[12] == 8 * MIB
    assert l2plan.peer_sizes(2 * MIB, 20 * MIB) == printed
    assert l2plan.peer_sizes(1 * MIB, 3 * MIB) == [MIB * 3 // 2, 2 * MIB, MIB * 5 // 2, 3 * MIB]
    assert l2plan.peer_window(60 * MIB) == l2plan.peer_window(40 * MIB) == (2 * MIB, 20 * MIB)
    assert l2plan.peer_window(6 * MIB) == pytest.approx((6 * MIB / 30, 2 * MIB))
    # the same pattern with the benchmark's kind of load: plain loads, which may hit L1 (it counts those hits)
    assert l2plan.PEER_PLAIN.load == 2 and "may hit L1" in l2plan.LOADS[2]
    assert (l2plan.PEER_PLAIN.block, l2plan.PEER_PLAIN.unroll) == (l2plan.PEER.block, l2plan.PEER.unroll)


def test_l2_kernel_names_exist_in_the_source():
    from hwprobe.probes.memory import l2plan

    src = source("mem_cache.cu")
    assert "l2_region(" in src and "template <int U, int LD>" in src
    assert {n.split("<")[0] for n in l2plan.kernel_names()} == {"l2_region"}
    assert all(v.load in l2plan.L2_LOADS for v in (*l2plan.SCREEN, l2plan.CAPACITY, l2plan.LOW_MLP, l2plan.PEER))
    assert all(v.unroll in l2plan.UNROLLS for v in (*l2plan.SCREEN, l2plan.CAPACITY, l2plan.LOW_MLP, l2plan.PEER))


# ---------------------------------------------------------------- per-SM L2 map

def _fake_map(rng, turns=132, steps=512, near=280.0, far=456.0, share=0.4, overhead=6.0):
    smid = rng.permutation(turns)
    is_far = rng.random((turns, steps)) < share
    first = np.where(is_far, far, near) + rng.normal(0, 6, (turns, steps)) + overhead
    again = near + overhead + rng.normal(0, 3, (turns, steps))
    lat = np.stack([first, again], axis=1)
    plain = (again.mean(axis=1) - overhead) * steps
    clk = np.stack([np.zeros(turns), np.full(turns, 1e6), np.zeros(turns), np.full(turns, 1.98e6)], axis=1)
    return smid, lat, plain, clk


def test_l2map_splits_near_and_far_and_removes_the_timing_overhead():
    from hwprobe.probes.memory import l2map

    rng = np.random.default_rng(0)
    smid, lat, plain, clk = _fake_map(rng)
    t = l2map.sm_map(smid, lat, plain, clk, 512)
    assert t["sm"] == list(range(132))
    assert t["overhead_cycles"] == pytest.approx(6.0, abs=0.5)
    assert 300 < t["threshold_cycles"] < 440
    assert all(x == pytest.approx(280, abs=4) for x in t["near_cycles"])
    assert all(x == pytest.approx(456, abs=4) for x in t["far_cycles"])
    assert all(x == pytest.approx(280 / 1.98, rel=0.02) for x in t["near_ns"])
    assert all(0.3 < x < 0.5 for x in t["far_share"]) and all(x == 1980.0 for x in t["sm_mhz"])
    s = l2map.spread(t["near_ns"])
    assert s["min"] <= s["median"] <= s["max"] and s["ratio"] >= 1.0
    assert l2map.map_text(t).count("\n") == 132


def test_l2map_one_group_is_not_a_near_far_split():
    from hwprobe.probes.memory import l2map

    rng = np.random.default_rng(1)
    assert l2map.two_modes(rng.normal(280, 8, 5000)) is None
    assert l2map.two_modes(np.r_[rng.normal(280, 5, 990), rng.normal(460, 5, 10)]) is None   # 1%: noise
    m = l2map.two_modes(np.r_[rng.normal(280, 5, 600), rng.normal(460, 5, 400)])
    assert m is not None and m.high_share == pytest.approx(0.4, abs=0.01) and 290 < m.threshold < 450
    smid, lat, plain, clk = _fake_map(rng, share=0.0)
    t = l2map.sm_map(smid, lat, plain, clk, 512)
    assert t["threshold_cycles"] is None and all(x is None for x in t["far_cycles"])


def test_l2map_sides_and_turns():
    from hwprobe.probes.memory import l2map

    rng = np.random.default_rng(2)
    turns, steps = 132, 512
    half = (np.arange(turns) // 6) % 2                  # runs of SMs, as the H200's halves come
    first = np.where(half[:, None] == 0, 527.0, np.where(rng.random((turns, steps)) < 0.57, 283.0, 740.0))
    lat = np.stack([first, first], axis=1)
    smid = np.arange(turns)[::-1]
    s = l2map.sm_sides(smid, lat[::-1], steps)
    assert s is not None and s["side"] == half.tolist() and s["side"][0] == 0
    assert l2map.sm_sides(smid, np.full((turns, 2, steps), 280.0), steps) is None
    order = np.arange(1000)
    starts = l2map.turn_starts(order, 10, 50, within=1.0)
    assert starts.tolist() == [0, 50, 100, 150, 200, 250, 300, 350, 400, 450]
    with pytest.raises(ValueError):
        l2map.turn_starts(order, 10, 50, within=1 / 3)
    raw = {"smid": np.arange(4), "tail": np.array([1, 2, 3, 4]), "want": np.array([1, 2, 3, 4])}
    l2map.check_raw(raw, 4)
    from hwprobe.errors import VerificationError
    with pytest.raises(VerificationError, match="every SM"):
        l2map.check_raw({**raw, "smid": np.array([0, 1, 1, 3])}, 4)
    with pytest.raises(VerificationError, match="wrong pointer"):
        l2map.check_raw({**raw, "tail": np.array([1, 2, 0, 4])}, 4)


def test_l2map_plot_writes_a_png_of_every_sms_latency(tmp_path):
    """The heat maps hold each SM's near and far latency at its place (rows of 12), the titles their range, each
    cell its value and chip half, the colour bar its unit."""
    pytest.importorskip("matplotlib")
    from hwprobe.probes.memory import l2map
    from tests.figures import saved_figures, texts

    rng = np.random.default_rng(3)
    t = l2map.sm_map(*_fake_map(rng), 512)
    t["side"] = [i % 2 for i in range(132)]
    from hwprobe.report.plots.l2map import plot_sm_map

    with saved_figures() as figs:
        path = plot_sm_map(t, str(tmp_path / "map.png"))
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    (fig,) = figs
    assert fig._suptitle.get_text() == "L2 hit latency per SM  (a/b: the chip half of each SM)"
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 2
    for ax, key, name in zip(maps, ("near_ns", "far_ns"), ("near partition", "far partition"), strict=True):
        grid = ax.images[0].get_array()
        assert grid.shape == (11, 12)                              # 132 SMs in rows of 12
        for sm, v in zip(t["sm"], t[key], strict=True):
            assert grid[sm // 12, sm % 12] == pytest.approx(v)
        vals = [v for v in t[key] if v is not None]
        assert ax.get_title() == f"{name}: {min(vals):.0f}-{max(vals):.0f} ns"
        cells = {tx.get_text() for tx in ax.texts}
        assert f"{t[key][5]:.0f}b" in cells and f"{t[key][6]:.0f}a" in cells and len(cells) <= 132
        assert ax.get_xlabel() == "SM id mod 12" and ax.get_ylabel() == "SM id (row start)"
    assert texts(fig).count("| ns") == 2                           # one colour bar per map, in ns


# ---------------------------------------------------------------- Hopper paths

def test_hopper_dsm_and_tma_bookkeeping():
    from hwprobe.probes.memory import hopper

    want = hopper.dsm_expected(4, 10, 8192, 1024, 8)
    per_block = want[::1024]
    assert per_block.tolist() == [10 * 8 * 4 * p for p in (2, 3, 4, 1, 2, 3, 4, 1)]   # peer rank + 1
    assert len(want) == 8 * 1024
    plan = hopper.tma_plan(4096, 1 << 30, 132)
    assert plan.stages == 16 and plan.per_block == (1 << 30) // 4096 // 132
    assert plan.bytes == 132 * plan.per_block * 4096 <= 1 << 30
    assert hopper.tma_expected(plan) == plan.per_block * 1024
    assert [hopper.tma_stages(t) for t in hopper.TMA_TILES] == [16, 16, 16, 16, 8, 4, 2]
    assert all(hopper.tma_stages(t) * t <= 128 << 10 for t in hopper.TMA_TILES[3:])
    with pytest.raises(ValueError):
        hopper.tma_plan(3000, 1 << 20, 132)
    assert hopper._ring_end(hopper.DSM_RING) == 0          # a full lap comes back to the start
    src = source("hopper_mem.cu")
    assert f"#define TMA_MAX_STAGES {hopper.TMA_MAX_STAGES}" in src
    assert "__cluster_dims__(CS, 1, 1)" in src and "fence.proxy.async" not in src.split("tma_load")[1]


def test_hopper_probe_skips_below_sm90():
    from types import SimpleNamespace

    from hwprobe.probes.base import ProbeContext
    from hwprobe.probes.memory import hopper
    from hwprobe.timing import NullSampler

    ctx = ProbeContext(target="gpu", device=SimpleNamespace(cc_major=8, cc_minor=0), sampler=NullSampler(),
                       probe_name="gpu.hopper_mem")
    out = list(hopper.run(ctx))
    assert [m.metric for m in out] == ["dsm.latency", "dsm.read", "tma.load"]
    assert all(m.status == "skipped" and "sm_90" in m.reason for m in out)


# ---------------------------------------------------------------- DRAM chases and the gpu.dram plan

def test_sparse_cycles_visit_distinct_slots():
    rng = np.random.default_rng(4)
    o = chase.sparse_random_cycle(1 << 20, 5000, rng)
    assert len(o) == len(set(o.tolist())) == 5000 and o.max() < 1 << 20
    p = chase.sparse_page_local_cycle(64 * 1024, 1024, 3000, 512, rng)
    assert len(set(p.tolist())) == 3000
    pages = p // 1024
    assert np.count_nonzero(np.diff(pages)) == 5               # 6 pages, each once, 512 slots each
    with pytest.raises(ValueError):
        chase.sparse_page_local_cycle(4 * 1024, 1024, 3000, 512, rng)


def test_random_chase_note_says_what_was_measured():
    from hwprobe.measurement import Measurement
    from hwprobe.probes.memory.latency import random_note, random_set

    def m(cyc, size):
        return Measurement(probe="gpu.latency", metric="x", kind="latency", value=1e-7, unit="s",
                           params={"cycles": cyc, "working_set_bytes": size})

    local = m(660.0, 512 * MIB)
    assert "includes TLB misses" in random_note(m(680.0, 8 * GIB), local)
    assert "no TLB-miss cost" in random_note(m(664.0, 2 * GIB), local)
    assert random_set(512 * MIB, 40 * GIB, quick=False) == 8 * GIB
    assert random_set(512 * MIB, 3 * GIB, quick=False) == 3 * GIB
    assert random_set(512 * MIB, 100 * MIB, quick=True) == 512 * MIB


def test_dram_plan_is_pure_and_complete():
    from hwprobe.probes.memory import dram as d

    occ = lambda block, unroll: 2048 // block  # noqa: E731
    for op in ("read", "write", "copy", "scale", "triad"):
        io = d.OP_IO[op]
        first = d.first_stage(op, 132, occ, True)
        assert first and all((v["lh"], v["sh"]) == d.hint_pairs(op)[0] for v in first)
        assert d.first_stage(op, 132, occ, False) == first[:1]
        hints = d.hint_stage(op, first[0])
        assert len(hints) == len(d.hint_pairs(op)) - 1 and all(h["layout"] == first[0]["layout"] for h in hints)
        assert d.stream_bytes(op, GIB) == (len(io.inputs) + (io.output is not None)) * GIB or op == "read"
        assert (io.check is None) == (op == "read")
    tried = [{**{k: i for k in d.VARIANT_KEYS}, "gbps": g} for i, g in enumerate([10.0, 30.0, 20.0])]
    tried.append({**{k: 9 for k in d.VARIANT_KEYS}, "error": "boom"})
    assert [t["block"] for t in d.ranked(tried, 2)] == [1, 2]
    base, sizes = d.dram_sizes(60 * MIB, 140 * GIB, None, False, True)
    assert base == GIB and sizes == [GIB, 2 * GIB, 4 * GIB]
    assert d.dram_sizes(60 * MIB, 140 * GIB, None, True, True) == (240 * MIB, [240 * MIB])
    with pytest.raises(ValueError):
        d.dram_sizes(60 * MIB, GIB, None, False, True)
