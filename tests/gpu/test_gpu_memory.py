"""GPU tests of the memory probes (quick mode): every measured point is verified, ceilings sit below theory,
levels come out in the right order, capacities match the device within 10%, and each probe keeps to its
time budget."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.gpu


def _run(factory, name: str, func, **params):
    pytest.importorskip("cupy")
    ctx = factory(name, quick=True)
    t0 = time.perf_counter()
    out = list(func(ctx, **params))
    took = time.perf_counter() - t0
    print(f"{name}: {took:.1f} s, {len(out)} measurements")
    for m in out:
        if m.kind != "sweep":
            print(f"  {m.metric:32s} {m.kind:9s} {m.value:.4g} {m.unit} verified={m.verified} "
                  f"level={m.level} params={ {k: v for k, v in m.params.items() if k != 'variants'} } notes={m.notes}")
    return ctx.device, {m.metric: m for m in out}, took


def _dram_theory(dev) -> float:
    return 2 * dev.mem_clock_mhz * 1e6 * dev.bus_width_bits / 8


def _assert_measured(m):
    assert m.kind != "info", f"{m.metric}: {m.notes}"
    assert m.verified is True, f"{m.metric}: {m.flags}"
    assert m.value > 0


def test_dram(gpu_ctx_factory):
    from hwprobe.probes.memory import dram as gpu_dram

    dev, ms, took = _run(gpu_ctx_factory, "gpu.dram", gpu_dram.run)
    theory = _dram_theory(dev)
    for op in ("read", "write", "copy", "scale", "triad", "memcpy_d2d"):
        m = ms[f"dram.{op}"]
        _assert_measured(m)
        assert m.level == "dram" and m.unit == "B/s"
        assert m.value < 1.03 * theory, f"{op}: {m.value:.3e} above theory {theory:.3e}"
        assert m.params["array_bytes"] >= 4 * dev.l2_bytes
        if op != "memcpy_d2d":  # the reported figure is the best full measurement of the search's finalists
            fins = m.params["finalists"]
            assert fins and round(m.value / 1e9, 1) == max(f["measured_gbps"] for f in fins), fins
            assert m.params["search_gbps"] > 0 and m.params["launches_per_sample"] >= 1
    # BabelStream-class results on a data-centre part (H100/H200): read and triad >= 88% of theory
    if dev.cc_major == 9 and not dev.integrated:
        assert ms["dram.read"].value >= 0.88 * theory, ms["dram.read"].params
        assert ms["dram.triad"].value >= 0.85 * theory, ms["dram.triad"].params
    assert ms["dram.memcpy_d2d"].exec_unit == "copy_engine"
    assert took < 30


def test_cache(gpu_ctx_factory):
    from hwprobe.probes.memory import cache as gpu_cache
    from hwprobe.specs import live

    dev, ms, took = _run(gpu_ctx_factory, "gpu.cache", gpu_cache.run)
    sweeps = [m for m in ms.values() if m.kind == "sweep"]
    assert len(sweeps) >= 30 and all(m.verified for m in sweeps)
    for metric in ("cache.l1.read", "cache.l2.read", "cache.shared.read"):
        _assert_measured(ms[metric])
    l1, l2, shared = ms["cache.l1.read"], ms["cache.l2.read"], ms["cache.shared.read"]
    dram = _dram_theory(dev)
    assert l1.value > l2.value > dram, (l1.value, l2.value, dram)
    assert l1.level == "l1" and l2.level == "l2" and shared.level == "shared"
    # the ceiling: the flat-grid pattern at the window's top (ld.global.cg), at or under the L2's theory where the
    # spec table has one; the merge-free floor under it, no faster than its best screened variant; the peer
    # benchmark's median beside them, never a ceiling
    assert "ld.global.cg" in l2.notes[0] and l2.params["working_set_bytes"] <= dev.l2_bytes / 3
    free, peer = ms["cache.l2.read.merge_free"], ms["cache.l2.read.peer_method"]
    for m in (free, peer):
        _assert_measured(m)
        assert m.params["ceiling"] is False and m.level == "l2"
    assert free.notes[1].startswith("pattern:") and "ld.global.cg" in free.notes[1]
    # the peer method is the benchmark's way: plain loads over its own sets (25 in 2-20 MiB on a >= 40 MiB L2)
    from hwprobe.probes.memory import l2plan
    bench = [m for m in sweeps if m.params["scope"] == "peer_method"]
    assert "may hit L1" in peer.params["variant_label"]
    assert len(bench) == len(l2plan.peer_sizes(*l2plan.peer_window(dev.l2_bytes))) >= 3
    screened = [r["median_bps"] for r in free.params["screened"] if r.get("median_bps")]
    assert screened and free.params["sweep_median_bps"] <= 1.10 * max(screened)
    assert free.value <= 1.02 * l2.value, (free.value, l2.value)
    port = live.device_theory(dev).memory("l2")      # L2 slices x 64 B x L2 clock, where the spec table has them
    if port is not None:
        assert l2.value <= 1.01 * port.at_clock and "L2 slices" in port.basis, (l2.value, port)
    if dev.cc_major == 9 and not dev.integrated:  # H100 / H200: >= 85% of the slices' port peak (best seen: 93-94%)
        assert port is not None and l2.value >= 0.85 * port.at_clock, (l2.value, port)
    # shared memory: at most 128 B/clk/SM at the max clock (plus 3%)
    assert shared.value < 1.03 * 128 * dev.sms * dev.sm_clock_max_mhz * 1e6
    assert shared.value > 0.75 * 128 * dev.sms * dev.sm_clock_max_mhz * 1e6, shared.params  # every LDS issued
    # capacities: physical = device-reported; effective (all SMs share the data) never above it
    phys, eff = ms["cache.l2.capacity"], ms["cache.l2.capacity.effective"]
    assert phys.kind == eff.kind == "capacity" and phys.value == dev.l2_bytes and phys.params["primary"]
    assert 0.3 * dev.l2_bytes <= eff.value <= dev.l2_bytes, eff.notes
    cap1 = ms["cache.l1.capacity"]
    assert cap1.kind == "capacity", cap1.notes
    assert cap1.value == pytest.approx(gpu_cache.l1_reported(dev), rel=0.10), cap1.notes
    part = ms["cache.l2.partitions"]
    if dev.cc_major == 9:   # Hopper: the latency-bound curve steps at about half of L2
        assert 0.3 * dev.l2_bytes < part.value < 0.7 * dev.l2_bytes, part.notes
        assert part.params["ratio"] > 1.3
    assert took < 45


def test_latency(gpu_ctx_factory):
    from hwprobe.probes.memory import latency as gpu_latency

    dev, ms, took = _run(gpu_ctx_factory, "gpu.latency", gpu_latency.run)
    l1, l2, dram = ms["latency.l1"], ms["latency.l2"], ms["latency.dram"]
    for m in (l1, l2, dram):
        _assert_measured(m)
        assert m.kind == "latency" and m.unit == "s"
    assert l1.params["cycles"] < l2.params["cycles"] < dram.params["cycles"]
    assert 10 < l1.params["cycles"] < 100
    assert 100e-9 < dram.value < 2e-6
    rnd = ms["latency.dram.random"]
    _assert_measured(rnd)
    # both chases start with L2 flushed, so random (more pages, more TLB misses) is never faster than page-local
    assert rnd.params["l2_flushed"] and dram.params["l2_flushed"]
    assert rnd.params["cycles"] >= 0.99 * dram.params["cycles"], (rnd.params, dram.params)
    assert rnd.params["working_set_bytes"] >= dram.params["working_set_bytes"]
    sh = ms["latency.shared"]
    _assert_measured(sh)
    assert sh.level == "shared" and 15 < sh.params["cycles"] < 60       # Hopper: ~30 cycles published
    cap = ms["latency.l2.capacity"]
    assert cap.kind == "capacity" and cap.value <= dev.l2_bytes and cap.params["consistent"], cap.notes
    curve = ms["latency.l2.sweep"].params["curve"]
    assert len(curve) >= 8 and curve[-1]["bytes"] > dev.l2_bytes
    assert curve[-1]["ns"] > 1.5 * curve[0]["ns"]            # past L2 the chase goes to DRAM
    assert curve[0]["ns"] == pytest.approx(l2.value * 1e9, rel=0.2)
    if "latency.l2_far" in ms:
        far = ms["latency.l2_far"]
        assert far.level == "l2_far" and 1.1 * l2.value < far.value < dram.value
    assert took < 30


def test_host(gpu_ctx_factory):
    from hwprobe.probes.interconnect import host as gpu_host

    dev, ms, took = _run(gpu_ctx_factory, "gpu.host", gpu_host.run)
    for d in ("h2d", "d2h", "bidir"):
        m = ms[f"host.{d}.pinned"]
        _assert_measured(m)
        assert m.level == f"host_{d}" and m.exec_unit == "copy_engine"
        assert m.value > 1e9
    assert ms["host.bidir.pinned"].value > 0.9 * max(ms["host.h2d.pinned"].value, ms["host.d2h.pinned"].value)
    pcie = dev.nvml.get("pcie_gen_max"), dev.nvml.get("pcie_width_max")
    if pcie == (5, 16) and not dev.integrated:
        assert ms["host.h2d.pinned"].value > 0.7 * 63e9
    assert took < 30


def test_roofline(gpu_ctx_factory):
    from hwprobe.probes.compute import roofline as gpu_roofline

    dev, ms, took = _run(gpu_ctx_factory, "gpu.roofline", gpu_roofline.run)
    for prec in ("fp32", "fp64", "fp16", "int32"):
        pts = [m for m in ms.values() if m.kind == "sweep" and m.precision == prec]
        assert len(pts) >= 5 and all(m.verified for m in pts), prec
        ridge = ms[f"roofline.{prec}.ridge"]
        assert ridge.kind == "info" and ridge.value > 0.5
        # low intensity is bandwidth-bound: its rate / intensity is below DRAM theory
        low = min(pts, key=lambda m: m.params["intensity"])
        assert low.value / low.params["intensity"] < 1.03 * _dram_theory(dev)
    assert took < 40


def test_l2map(gpu_ctx_factory):
    from hwprobe.probes.memory import l2map

    dev, ms, took = _run(gpu_ctx_factory, "gpu.l2map", l2map.run)
    m = ms["latency.l2.sm_map"]
    assert m.kind == "map" and m.level == "l2"
    t = m.params["map"]
    assert t["sm"] == list(range(dev.sms))                    # every SM, once
    near = [x for x in t["near_ns"] if x is not None]
    assert len(near) == dev.sms and all(50 < x < 1000 for x in near)
    if dev.cc_major == 9:   # Hopper: two partitions, about half the lines far, far about 1.5-2.5x near
        far = t["far_ns"]
        assert all(x is not None for x in far)
        assert all(1.3 * a < b < 3 * a for a, b in zip(near, far, strict=True))
        assert 0.25 < sorted(t["far_share"])[dev.sms // 2] < 0.75
    assert m.params["launch_s"] < 2 and took < 10
    assert ms["latency.l2.sm_spread"].kind == "info"


def test_hopper_mem(gpu_ctx_factory):
    from hwprobe.probes.memory import hopper

    dev, ms, took = _run(gpu_ctx_factory, "gpu.hopper_mem", hopper.run)
    if dev.cc_major < 9:
        assert all(m.status == "skipped" for m in ms.values())
        return
    local, remote = ms["dsm.latency.local"], ms["dsm.latency.remote"]
    for m in (local, remote):
        _assert_measured(m)
    assert 15 < local.params["cycles"] < 60 and 100 < remote.params["cycles"] < 400
    for cs in hopper.DSM_CLUSTERS:
        m = ms[f"dsm.read.c{cs}"]
        if m.status == "ok":
            _assert_measured(m)
            assert m.level == "dsm" and m.value < 128 * dev.sms * dev.sm_clock_max_mhz * 1e6
    assert ms["dsm.read.c2"].status == "ok"
    for where in ("dram", "l2"):
        m = ms[f"tma.load.{where}"]
        _assert_measured(m)
        assert m.level == where and m.exec_unit == "copy_engine"
    assert ms["tma.load.dram"].value < 1.03 * _dram_theory(dev)
    assert took < 30
