"""GPU tests of gpu.mma_sync and gpu.wgmma (quick mode): every point measured is verified, positive, and
below 1.03 x the Hopper dense peak at the max clock; wgmma reaches most of the peak at the measured clock."""

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
        print(f"  {m.metric:40s} {m.value / 1e12:9.1f} T{m.unit} verified={m.verified} "
              f"clock={m.clocks.sm_mhz if m.clocks else None} params={m.params.get('search')} notes={m.notes}")
    return ctx.device, out


def _check_points(dev, out, api):
    cc = (dev.cc_major, dev.cc_minor)
    assert sorted(m.metric for m in out) == sorted(v.metric for v in g.variants(api))
    for m in out:
        v = next(x for x in g.VARIANTS if x.metric == m.metric)
        reason = g.variant_skip_reason(v, cc)
        if reason:
            assert m.kind == "info" and m.notes == [f"skipped: {reason}"]
            continue
        assert m.kind == "compute", f"{m.metric}: {m.notes}"
        assert m.verified is True, f"{m.metric}: {m.flags}"
        assert not any(f.startswith("sass_mismatch") for f in m.flags), m.flags
        assert m.value > 0 and m.exec_unit == "tensor_core" and m.path == "instruction"
        rate = HOPPER_FMA_PER_CLK_SM.get(m.precision)
        if cc == (9, 0) and rate and dev.sm_clock_max_mhz:
            peak = dev.sms * dev.sm_clock_max_mhz * 1e6 * rate * 2
            assert m.value < 1.03 * peak, f"{m.metric}: {m.value:.3e} above theory {peak:.3e}"


def test_mma_sync_quick(gpu_ctx_factory):
    dev, out = _run(gpu_ctx_factory, "gpu.mma_sync", g.run_mma_sync)
    _check_points(dev, out, "mma_sync")
    if (dev.cc_major, dev.cc_minor) >= (8, 0):
        fp16 = next(m for m in out if m.metric == "fp16.tensor_core.mma_sync.f32acc")
        assert fp16.params["shape"] == "m16n8k16" and fp16.params["iters"] >= 1


def test_wgmma_quick(gpu_ctx_factory):
    dev, out = _run(gpu_ctx_factory, "gpu.wgmma", g.run_wgmma)
    _check_points(dev, out, "wgmma")
    if (dev.cc_major, dev.cc_minor) != (9, 0):
        return
    for m in out:
        clock = m.clocks.sm_mhz if m.clocks else None
        peak_per_clk = HOPPER_FMA_PER_CLK_SM[m.precision] * 2
        # clock-invariant: operations per SM clock from the kernel's own clock64 (target >= 93%)
        per_clk = m.params["ops_per_clk_per_sm"] / peak_per_clk
        print(f"  {m.metric}: {per_clk:.1%} of peak per SM clock, form {m.params['form']}, "
              f"{m.params['blocks_per_sm']} CTA/SM, kernel clock {m.params['kernel_sm_mhz']}")
        assert 0.90 <= per_clk <= 1.01, f"{m.metric}: {per_clk:.1%} of peak per SM clock"
        kernel_mhz = [x for x in m.params["kernel_sm_mhz"] if x > 0]
        if m.precision in ("fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8") and kernel_mhz:
            # the target: >= 90% of peak x the measured clock (the kernel's own; NVML's lags ~100 ms)
            clock = float(np.median(kernel_mhz))
            at_clock = dev.sms * clock * 1e6 * peak_per_clk
            assert m.value >= 0.90 * at_clock, f"{m.metric}: {m.value / at_clock:.0%} of peak at {clock} MHz"
