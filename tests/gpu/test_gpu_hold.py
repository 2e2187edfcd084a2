"""hwprobe.timing.hold on a real GPU: a host stall before the launch is timed unheld and not held; a held stream
that the host synchronizes gives up after its timeout and says so; held samples in batches leave stalls longer
than a launch out; gpu.fma's FP64 search keeps its best config and its samples their rate while a Python thread
holds the GIL (the forty-fifth session's import thread kept a config 8% slower; in the forty-sixth, held search and
unheld samples read 64.5% of the peak)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

SPIN_US = 1000.0


def _spin(cp):
    """A launch that runs SPIN_US on the GPU (the clock sentinel's spin, one block)."""
    from hwprobe.kernels import load

    k = load("sentinel.cu").get_function("hwp_clock_sentinel")
    out = cp.zeros(4, dtype=cp.uint64)
    return lambda: k((1,), (32,), (out, np.int64(SPIN_US * 1e3)))


def test_a_held_timing_leaves_a_host_stall_out():
    cp = pytest.importorskip("cupy")
    from hwprobe.timing import time_cuda_once
    from hwprobe.timing.hold import StreamHold

    spin = _spin(cp)
    spin()

    def stalled():
        time.sleep(0.02)                       # the host elsewhere, after the start event, before the launch
        spin()

    hold = StreamHold.make(cp)
    held = [time_cuda_once(stalled, cp, hold=hold) for _ in range(5)]
    unheld = [time_cuda_once(stalled, cp) for _ in range(5)]
    print(f"held {held}, unheld {unheld}")
    assert max(held) < SPIN_US * 1e-6 * 1.2 and min(held) > SPIN_US * 1e-6 * 0.95
    assert min(unheld) > 0.02
    assert hold.timeouts == 0


def test_a_held_stream_the_host_synchronizes_times_out_and_is_counted():
    cp = pytest.importorskip("cupy")
    from hwprobe.timing.hold import StreamHold

    hold = StreamHold.make(cp, timeout_s=0.05)
    spin = _spin(cp)
    t0 = time.perf_counter()
    t = hold.time(lambda: (spin(), cp.cuda.get_current_stream().synchronize()))
    waited = time.perf_counter() - t0
    assert hold.timeouts == 1 and 0.04 < waited < 1.0, (hold.timeouts, waited)
    assert t >= SPIN_US * 1e-6 * 0.95
    hold.time(spin)
    assert hold.timeouts == 1                  # reset: the next timing is clean


def test_held_samples_leave_stalls_longer_than_a_launch_out():
    """Unheld, a 3-ms host stall between 1-ms launches drains the queue and lands in every sample; 100 samples held
    in batches read the launch alone."""
    cp = pytest.importorskip("cupy")
    from hwprobe.timing import time_cuda
    from hwprobe.timing.hold import BATCH, StreamHold

    spin = _spin(cp)

    def stalled():
        time.sleep(0.003)
        spin()

    hold = StreamHold.make(cp)
    unheld = float(np.median(time_cuda(stalled, warmup=1, repeats=10, cp=cp)))
    held = time_cuda(stalled, warmup=1, repeats=100, cp=cp, hold=hold)
    print(f"unheld {unheld * 1e3:.2f} ms, held median {np.median(held) * 1e3:.3f} max {max(held) * 1e3:.3f} ms "
          f"({BATCH} a hold)")
    assert len(held) == 100 and hold.timeouts == 0
    assert unheld > 2.5e-3
    assert max(held) < 1.2 * SPIN_US * 1e-6, held


def test_fma_fp64_keeps_its_best_config_and_rate_beside_a_thread_holding_the_gil(gpu_ctx_factory):
    pytest.importorskip("cupy")
    from hwprobe.probes.compute import fma as g
    from hwprobe.specs import theory

    stop = threading.Event()

    def hog():                                 # pure Python: takes the GIL whenever the main thread lets it go
        while not stop.is_set():
            sum(range(10_000))

    t = threading.Thread(target=hog, daemon=True)
    t.start()
    try:
        ctx = gpu_ctx_factory("gpu.fma", quick=False)
        out = [m for m in g.run(ctx, precisions=("fp64",), experiments=False) if m.metric == "fp64.cuda_core.dfma"]
    finally:
        stop.set()
        t.join()
    m = out[0]
    dev = ctx.device
    clock = m.clocks.sm_mhz if m.clocks and m.clocks.sm_mhz else dev.sm_clock_max_mhz
    peak = theory.peak_ops(theory.rates(dev.arch, "fp64", "cuda_core"), dev.sms, clock)
    print(f"fp64 dfma {m.value:.4g} at {clock} MHz, {m.value / peak:.1%} of peak; "
          f"c{m.params['chains']} x {m.params['blocks_per_sm']}, {m.params['timing']}, "
          f"search {m.params['search']}")
    assert m.params["timing"] == "held" and m.verified and "hold_timeouts" not in m.params
    assert m.value >= 0.97 * peak, f"{m.value / peak:.1%} of peak at {clock} MHz"
