"""GPU tests of gpu.mma_sync and gpu.wgmma (quick mode). Each assertion is a property a wrong figure breaks:

- every point's timed launches are checked (their own output, exact, none inf or NaN) and no point is above
  theory at the max clock;
- the SM clock comes from every CTA's cycles over globaltimer: it lies between 500 MHz and the max clock, and
  a launch without stragglers has the same clock by CUDA-event time (within 3%);
- wgmma: the timed loop issues >= 90% of the per-clock peak (loop cycles, clock-invariant) and the whole
  launch, timed over its span at the kernel clock, reaches >= 85% of theory there and never more than 103%;
- FP16 accumulation stays finite over a launch far longer than the overflow point of the old kernel.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from hwprobe.probes.compute import mma as g

pytestmark = pytest.mark.gpu

# Hopper (sm_90) dense multiply-adds per clock per SM, by Measurement.precision.
HOPPER_FMA_PER_CLK_SM = {"tf32": 1024, "fp16": 2048, "bf16": 2048, "fp8_e4m3": 4096, "fp8_e5m2": 4096,
                         "int8": 4096, "fp64": 128}


def _run(factory, name, func):
    pytest.importorskip("cupy")
    ctx = factory(name, quick=True)
    t0 = time.perf_counter()
    out = list(func(ctx))
    print(f"{name}: {time.perf_counter() - t0:.1f} s")
    for m in out:
        print(f"  {m.metric:40s} {m.value / 1e12:9.1f} T{m.unit} verified={m.verified} flags={m.flags} "
              f"clocks={m.params.get('clocks_mhz')} pct={m.params.get('pct_at_clock')}")
    return ctx.device, out


def _check_points(dev, out, api):
    cc = (dev.cc_major, dev.cc_minor)
    assert sorted(m.metric for m in out) == sorted(v.metric for v in g.variants(api))
    for m in out:
        v = next(x for x in g.VARIANTS if x.metric == m.metric)
        reason = g.variant_skip_reason(v, cc)
        if reason:
            assert m.kind == "info" and m.status == "skipped" and m.reason == reason
            continue
        assert m.kind == "compute", f"{m.metric}: {m.notes}"
        assert m.verified is True, f"{m.metric}: {m.flags}"
        assert any(n.startswith("timed launch's own output checked") and "none inf or NaN" in n for n in m.notes)
        assert not any(f.startswith("sass_mismatch") for f in m.flags), m.flags
        assert m.value > 0 and m.exec_unit == "tensor_core" and m.path == "instruction"
        rate = HOPPER_FMA_PER_CLK_SM.get(m.precision)
        if cc == (9, 0) and rate and dev.sm_clock_max_mhz:
            peak = dev.sms * dev.sm_clock_max_mhz * 1e6 * rate * 2
            assert m.value < 1.03 * peak, f"{m.metric}: {m.value:.3e} above theory {peak:.3e}"
        kernel = float(np.median(m.params["kernel_sm_mhz"]))
        assert 500 <= kernel <= 1.01 * (dev.sm_clock_max_mhz or 1e9), f"{m.metric}: kernel clock {kernel}"
        # the two wall clocks agree (a second wave is lost efficiency, never a clock: issue 23). A launch may run
        # longer than its CTAs only while the clock moves under it (an H200 at its power cap: kernel clock 1750 vs
        # NVML 1980 MHz): then the probe has taken its samples again, and says both.
        if any(f.startswith("timer_disagreement") for f in m.flags):
            assert m.params.get("remeasured") and any(n.startswith("re-measured once") for n in m.notes), m.notes
            assert any(f.startswith("clock_disagreement") for f in m.flags), m.flags
        assert not any(f.startswith("clock_disagreement") and "event" in f for f in m.flags), m.flags
        assert m.params["span_s"] <= 1.001 * m.params["event_s"]          # the span lies inside the event time
        assert 0.3 <= m.params["pct_at_clock"]["kernel"] <= 1.03, m.params["pct_at_clock"]


def test_mma_sync_quick(gpu_ctx_factory):
    dev, out = _run(gpu_ctx_factory, "gpu.mma_sync", g.run_mma_sync)
    _check_points(dev, out, "mma_sync")
    if (dev.cc_major, dev.cc_minor) >= (8, 0):
        fp16 = next(m for m in out if m.metric == "fp16.tensor_core.mma_sync.f32acc")
        assert fp16.params["shape"] == "m16n8k16" and fp16.params["iters"] % 2 == 1


def test_wgmma_quick(gpu_ctx_factory):
    dev, out = _run(gpu_ctx_factory, "gpu.wgmma", g.run_wgmma)
    _check_points(dev, out, "wgmma")
    if (dev.cc_major, dev.cc_minor) != (9, 0):
        return
    for m in out:
        peak_per_clk = HOPPER_FMA_PER_CLK_SM[m.precision] * 2
        loop = m.params["ops_per_clk_per_sm"] / peak_per_clk           # the timed loop alone (loop cycles)
        launch = m.params["span_ops_per_clk_per_sm"] / peak_per_clk    # the whole launch over its span
        print(f"  {m.metric}: loop {loop:.1%}, launch {launch:.1%} of the per-clock peak, form {m.params['form']}")
        assert 0.90 <= loop <= 1.01, f"{m.metric}: loop at {loop:.1%} of peak per SM clock"
        assert 0.85 <= launch <= loop * 1.001, f"{m.metric}: launch at {launch:.1%}, loop {loop:.1%}"
        assert 0.85 <= m.params["pct_at_clock"]["kernel"] <= 1.03, m.params["pct_at_clock"]
    f16 = next(m for m in out if m.metric == "fp16.tensor_core.wgmma.f16acc")
    assert f16.params["timed_output"]["reset_every"] >= 1 and f16.params["iters"] > f16.params["timed_output"][
        "reset_every"]                                     # the timed launch ran past at least one reset


@pytest.mark.parametrize("metric,cfg", [("fp16.tensor_core.wgmma.f16acc", ("ss_sw128", 1)),
                                        ("fp16.tensor_core.mma_sync.f16acc", (256, 1))])
def test_fp16_accumulate_timed_output_stays_finite_and_exact(gpu_ctx_factory, metric, cfg):
    """20001 iterations: the old kernels' FP16 accumulators overflowed after ~6000 (wgmma) / ~1000 (mma.sync)."""
    cp = pytest.importorskip("cupy")
    dev = gpu_ctx_factory.device
    v = next(x for x in g.VARIANTS if x.metric == metric)
    if g.variant_skip_reason(v, (dev.cc_major, dev.cc_minor)):
        pytest.skip(g.variant_skip_reason(v, (dev.cc_major, dev.cc_minor)))
    mod, _ = g._module(v)
    lau = g._Launcher(cp, v, mod, dev.sms)
    launch = lau.make(cfg)
    iters = 20001
    launch(iters)
    cp.cuda.get_current_stream().synchronize()
    got = g.unpack(v, cp.asnumpy(launch.out), launch.units)
    assert np.isfinite(got).all()
    want = g.reference(lau.a, lau.bt, g.timed_count(v, iters, launch.reset))
    assert np.array_equal(got, np.broadcast_to(want, got.shape))
    assert 0 < np.abs(want).max() <= 2048
