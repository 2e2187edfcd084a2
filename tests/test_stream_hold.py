"""hwprobe.timing.hold: a held single-call timing leaves the host's stalls out; released whatever happens.

A fake CuPy models the GPU: time passes on it while it idles unless the hold kernel is spinning, and each launch
adds its run time. The host stalls between the start event and the launch (a GIL switch, in the forty-fifth
session's gpu.fma search) are timed unheld and not held."""

import numpy as np
import pytest

from hwprobe.timing import time_cuda_once
from hwprobe.timing.hold import StreamHold


class _Gpu:
    def __init__(self):
        self.t, self.held, self.log = 0.0, False, []
        gpu = self

        class Event:
            def record(self, stream=None):
                self.at = gpu.t
                gpu.log.append("record")

            def synchronize(self):
                gpu.log.append("sync")

        cuda = type("cuda", (), {})()
        cuda.Event = Event
        cuda.get_current_stream = lambda: None
        cuda.get_elapsed_time = lambda a, b: (b.at - a.at) * 1e3
        self.cuda = cuda

    def stall(self, s):            # the host is busy elsewhere; an unheld GPU idles through it on the clock
        if not self.held:
            self.t += s

    def launch(self, s):
        self.t += s
        self.log.append("launch")


class _Flag(np.ndarray):
    """The pinned flag: the host's write of 1 releases the fake GPU."""

    def __setitem__(self, i, v):
        super().__setitem__(i, v)
        self.gpu.held = v == 0 and self.gpu.held
        self.gpu.log.append(f"flag={v}")


class _TimedOut:
    def __init__(self, v=0):
        self.v = v

    def get(self):
        return np.array([self.v], dtype=np.int32)

    def fill(self, v):
        self.v = v


def _hold(gpu, timed_out=0):
    flag = np.zeros(1, dtype=np.int32).view(_Flag)
    flag.gpu = gpu

    def kernel(grid, block, args):
        ptr, timeout_ns, out = args
        assert (grid, block) == ((1,), (1,)) and ptr == np.uint64(0xABC) and timeout_ns == np.int64(5e9)
        gpu.held = True
        gpu.log.append("hold")

    return StreamHold(gpu, kernel, flag, 0xABC, _TimedOut(timed_out), 5.0)


def test_a_held_timing_leaves_the_hosts_stall_out_and_an_unheld_one_keeps_it():
    gpu = _Gpu()

    def call():
        gpu.stall(0.0074)          # what the 7.4-ms trip of s45 was: a stall before the launch
        gpu.launch(0.002)

    assert time_cuda_once(call, cp=gpu) == pytest.approx(0.0094)
    hold = _hold(gpu)
    gpu.log.clear()
    assert time_cuda_once(call, cp=gpu, hold=hold) == pytest.approx(0.002)
    assert gpu.log == ["flag=0", "hold", "record", "launch", "record", "flag=1", "sync"]
    assert hold.timeouts == 0 and not gpu.held


def test_the_hold_is_released_when_the_call_raises():
    gpu = _Gpu()
    hold = _hold(gpu)

    def broken():
        raise RuntimeError("launch failed")

    with pytest.raises(RuntimeError, match="launch failed"):
        hold.time(broken)
    assert gpu.log[-1] == "flag=1" and not gpu.held


def test_a_hold_that_timed_out_is_counted_and_reset():
    gpu = _Gpu()
    hold = _hold(gpu, timed_out=1)
    hold.time(lambda: gpu.launch(0.001))
    assert hold.timeouts == 1 and hold.timed_out.v == 0
    hold.time(lambda: gpu.launch(0.001))
    assert hold.timeouts == 1


def test_the_hold_kernel_spins_on_the_flag_with_a_globaltimer_timeout():
    from hwprobe.kernels import source

    src = source("hold.cu")
    assert "hwp_hold(const volatile int* flag, long long timeout_ns, int* timed_out)" in src
    assert "while (*flag == 0)" in src and "*timed_out = 1" in src


def test_held_samples_queue_in_batches_behind_one_hold_each():
    """time_cuda(hold=): 150 samples behind holds of 64, 64 and 22; the host's stalls stay out of every one."""
    from hwprobe.timing import time_cuda
    from hwprobe.timing.hold import BATCH

    gpu = _Gpu()
    hold = _hold(gpu)

    def call():
        gpu.stall(0.005)           # a GIL switch between two launches
        gpu.launch(0.002)

    assert time_cuda(call, warmup=0, repeats=3, cp=gpu) == [pytest.approx(0.007)] * 3   # unheld: timed
    gpu.log.clear()
    samples = time_cuda(call, warmup=1, repeats=150, hold=hold)
    assert samples == [pytest.approx(0.002)] * 150
    batches = [BATCH, BATCH, 150 - 2 * BATCH]
    want = ["launch"]                                     # the warm-up, unheld
    for n in batches:
        want += ["flag=0", "hold"] + ["record", "launch", "record"] * n + ["flag=1", "sync"]
    assert gpu.log == want and not gpu.held and hold.timeouts == 0


def test_a_probe_measurement_passes_its_hold_to_the_samples():
    """ProbeContext.measure(hold=): every sample held (a GPU probe whose call only launches, gpu.fma)."""
    from hwprobe.probes.base import ProbeContext
    from hwprobe.timing import NullSampler

    gpu = _Gpu()
    hold = _hold(gpu)
    ctx = ProbeContext(target="gpu", device=None, sampler=NullSampler(), probe_name="gpu.fma", warmup=0)

    def call():
        gpu.stall(0.003)
        gpu.launch(0.001)

    m = ctx.measure("fp64.cuda_core.dfma", call, work=1e9, unit="FLOP/s", kind="sweep", repeats=5, hold=hold)
    assert m.samples_s == [pytest.approx(0.001)] * 5 and m.value == pytest.approx(1e12)
