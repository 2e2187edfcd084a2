"""gpu.fma on a real GPU: every measurement verified, positive, at most 1.03 x the arch table's peak at the
max clock, the SASS what was intended; on Hopper the easy instructions reach most of their peak."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hwprobe.errors import VerificationError
from hwprobe.probes.compute import fma as g
from hwprobe.probes.compute import launch_search as S
from hwprobe.specs import theory

pytestmark = pytest.mark.gpu


def _run(factory, quick=True, **params):
    pytest.importorskip("cupy")
    ctx = factory("gpu.fma", quick=quick)
    t0 = time.perf_counter()
    out = list(g.run(ctx, **params))
    elapsed = time.perf_counter() - t0
    print(f"gpu.fma quick={quick} {params}: {elapsed:.1f} s")
    for m in out:
        clock = m.clocks.sm_mhz if m.clocks else None
        cfg = {k: m.params.get(k) for k in ("chains", "blocks_per_sm", "iterations")}
        print(f"  {m.metric:44s} {m.value:12.4g} {m.unit:20s} verified={m.verified} clock={clock} {cfg} "
              f"flags={m.flags} notes={m.notes}")
    return ctx.device, out, elapsed


def _upper_bound(dev, m) -> float | None:
    rate = theory.rates(dev.arch, m.precision, "cuda_core")
    if not rate or not dev.sm_clock_max_mhz:
        return None
    return 1.03 * theory.peak_ops(rate, dev.sms, dev.sm_clock_max_mhz)


def _check(dev, out):
    cc = (dev.cc_major, dev.cc_minor)
    errors = [f"{m.metric}: {m.notes}" for m in out if m.kind == "info" and "error" in m.flags]
    assert not errors, errors
    got = {m.metric: m for m in out}
    for fam in g.FAMILIES + g.EXPERIMENTS:
        m = got[fam.metric]
        if cc < fam.min_cc:
            assert m.kind == "info" and m.status == "skipped"
            continue
        assert m.kind == ("sweep" if fam.experiment else "compute"), m.metric
        assert m.verified and m.valid and m.value > 0, (m.metric, m.flags)
        assert m.stats.median_s > 1e-3, (m.metric, m.stats.median_s)       # a sample is not launch-bound
        assert {"chains", "threads_per_block", "blocks_per_sm", "iterations", "search"} <= set(m.params)
        assert m.params["search"] and m.params["search"][0]["rate"] >= m.params["search"][-1]["rate"]
        assert any(" steps: all " in n for n in m.notes), m.notes               # the check's summary
        if not fam.experiment:
            bound = _upper_bound(dev, m)
            if bound:
                assert m.value <= bound, f"{m.metric}: {m.value:.4g} above 1.03 x peak at max clock ({bound:.4g})"
        if g.sass.once_of(g.KERNEL_FILE, g._Family.sass_options_for(fam, dev)):
            assert not any(f.startswith("sass_mismatch") for f in m.flags), m.notes
            assert any(n.startswith("SASS sm_") for n in m.notes), m.notes
        ipc = got.get(fam.metric + ".ipc")
        assert ipc is not None and 0 < ipc.value <= 1.03, (fam.metric, ipc and ipc.value)  # <= 1 instr/clk/SMSP
    return got


def test_fma_quick(gpu_ctx_factory):
    dev, out, _ = _run(gpu_ctx_factory)
    _check(dev, out)


def test_fma_one_known_good_config(gpu_ctx_factory):
    dev, out, _ = _run(gpu_ctx_factory, precisions=("fp32",), search=False, experiments=False)
    assert [m.metric for m in out] == ["fp32.cuda_core.ffma"]
    m = out[0]
    assert m.verified and len(m.params["search"]) == 1 and m.params["chains"] == 8


def test_fma_full_search_fits_the_budget_and_reaches_peak_on_hopper(gpu_ctx_factory):
    dev, out, elapsed = _run(gpu_ctx_factory, quick=False)
    got = _check(dev, out)
    assert elapsed < 30, f"full gpu.fma took {elapsed:.1f} s (target ~15 s on an H100)"
    if (dev.cc_major, dev.cc_minor) != (9, 0):
        return
    for metric in ("fp64.cuda_core.dfma", "fp32.cuda_core.ffma", "int32.cuda_core.imad", "int8.cuda_core.dp4a"):
        m = got[metric]
        clock = m.clocks.sm_mhz if m.clocks else None
        if clock:
            at_clock = theory.peak_ops(theory.rates(dev.arch, m.precision, "cuda_core"), dev.sms, clock)
            # target >= 97%; 90% leaves room for the sampler's median clock
            assert m.value >= 0.90 * at_clock, f"{metric}: {m.value / at_clock:.1%} of peak at {clock:.0f} MHz"


def test_check_catches_a_corrupted_output(gpu_ctx_factory):
    import cupy as cp

    dev = gpu_ctx_factory.device
    for fam in (g.FAMILIES[1], g.FAMILIES[2], g.FAMILIES[5]):        # ffma, hfma2, dp4a
        if (dev.cc_major, dev.cc_minor) < fam.min_cc:
            continue
        fd = g._Family(cp, fam, dev)
        cfg = S.Config(fam.chains[0], 1)
        outs = fd.outputs(cfg)
        fd.launch(cfg, 3, outs)
        assert fd.check(cfg, 3, outs)                                   # correct as launched
        outs[0][5] = outs[0][5] ^ np.asarray(1 << 3, dtype=fam.a.raw).item()
        with pytest.raises(VerificationError):
            fd.check(cfg, 3, outs)
        outs = fd.outputs(cfg)
        fd.launch(cfg, 2, outs)                                         # ran 2 trips, checked as 1
        with pytest.raises(VerificationError):
            fd.check(cfg, 1, outs)


def test_device_sass_matches_intent(gpu_ctx_factory):
    from hwprobe.kernels import sass

    if not sass.can_disassemble():
        pytest.skip("no cuobjdump/nvdisasm on this machine: SASS evidence is not recorded here")
    dev = gpu_ctx_factory.device
    for fam in g.FAMILIES + g.EXPERIMENTS:
        if (dev.cc_major, dev.cc_minor) < fam.min_cc:
            continue
        text = g.sass.once_of(g.KERNEL_FILE, g._Family.sass_options_for(fam, dev))
        assert text, f"{fam.metric}: NVRTC gave no cubin"
        for c in fam.chains:
            assert g.sass_counts(text, f"hwp_fma_c{c}", fam) == g.expected_sass(fam, c), fam.metric
