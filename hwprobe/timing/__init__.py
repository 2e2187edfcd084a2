"""Timing: repeat a callable after warm-up and keep every raw sample.

Host timing uses perf_counter (injectable, so the loop is tested with a mocked clock). Device timing
puts a CUDA event pair around each call, so launch gaps between samples are not counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hwprobe.interrupt import check as check_interrupt
from hwprobe.timing.sampler import ClockSampler, CpuClockSampler, NullSampler

__all__ = [
    "clock_mhz", "sampler_for",
    "time_host", "time_cuda", "time_cuda_once", "time_cuda_issue", "interleaved_medians", "iterations_for",
    "launches_for", "repeat",
    "ClockSampler", "CpuClockSampler", "NullSampler",
]


def time_host(fn: Callable[[], object], *, warmup: int = 1, repeats: int = 5,
              clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds per call of ``fn`` for ``repeats`` calls after ``warmup`` untimed ones."""
    check_interrupt()
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        check_interrupt()
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def time_cuda(fn: Callable[[], object], *, warmup: int = 2, repeats: int = 10, cp=None, hold=None) -> list[float]:
    """Seconds per call of ``fn`` (which launches work on the current stream), timed by CUDA events.

    ``cp`` is the CuPy module (injectable, so callers' timing loops are tested with a fake device clock). ``hold``
    (a hwprobe.timing.hold.StreamHold; only for ``fn`` that never synchronizes) queues the samples before the
    GPU starts them, so a host stall is not timed."""
    if cp is None and hold is not None:
        cp = hold.cp
    if cp is None:
        import cupy as cp

    check_interrupt()
    for _ in range(warmup):
        fn()
    stream = cp.cuda.get_current_stream()
    if repeats <= 0:           # warm-up only
        stream.synchronize()
        return []
    if hold is not None:
        return hold.time_each(fn, repeats)
    return elapsed_s(cp, queue_calls(cp, stream, fn, repeats))


def queue_calls(cp, stream, fn: Callable[[], object], n: int) -> list[tuple[Any, Any]]:
    """``n`` calls of ``fn`` queued on ``stream``, each between two recorded CUDA events: the (start, stop) pairs."""
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(n)]
    for start, stop in events:
        start.record(stream)
        fn()
        stop.record(stream)
    return events


def elapsed_s(cp, events: list[tuple[Any, Any]]) -> list[float]:
    """Seconds between each (start, stop) pair, once the last stop is reached."""
    events[-1][1].synchronize()
    return [cp.cuda.get_elapsed_time(a, b) * 1e-3 for a, b in events]


def time_cuda_once(fn: Callable[[], object], cp=None, hold=None) -> float:
    """Seconds of one call of ``fn`` on the current stream (CUDA events, no warm-up): calibration and search.
    ``hold`` (a hwprobe.timing.hold.StreamHold) keeps the host's stalls between the start event and the launch out."""
    return time_cuda(fn, warmup=0, repeats=1, cp=cp, hold=hold)[0]


def interleaved_medians(calls: dict, rounds: int, cp=None) -> dict:
    """{key: median seconds of one call} of the candidates ``calls`` ({key: fn}, already warmed up), timed in
    ``rounds`` interleaved rounds, one call of each per round: a clock that drops during a library search weighs on
    every candidate alike (cuBLASLt's algorithms, cuSPARSELt's config ids)."""
    import statistics

    times: dict = {k: [] for k in calls}
    for _ in range(rounds):
        for k, fn in calls.items():
            times[k].append(time_cuda_once(fn, cp))
    return {k: float(statistics.median(t)) for k, t in times.items()}


def time_cuda_issue(fn: Callable[[], object], cp=None) -> tuple[float, float]:
    """(GPU seconds, host seconds to issue) of one call of ``fn`` on the current stream: CUDA events around it
    and perf_counter around the issuing, so a launch-bound call shows (the host issues slower than the GPU runs)."""
    if cp is None:
        import cupy as cp

    stream = cp.cuda.get_current_stream()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    t0 = time.perf_counter()
    fn()
    host = time.perf_counter() - t0
    stop.record(stream)
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) * 1e-3, host


def repeat(launch: Callable[[], object], n: int) -> Callable[[], None]:
    """One sample of ``n`` back-to-back calls of ``launch``."""
    def fn() -> None:
        for _ in range(n):
            launch()

    return fn


def launches_for(launch: Callable[[], object], target_s: float, hi: int = 1 << 20, cp=None) -> int:
    """How many back-to-back ``launch`` calls last about ``target_s`` (a rule's sample_s): warm once, then time
    one (the policy's calibrate with no growth: one call is long enough to time)."""
    from hwprobe.timing import policy

    launch()
    return policy.calibrate(lambda n: time_cuda_once(repeat(launch, n), cp=cp), target_s, start=1, hi=hi,
                            reach=0.0).count


def iterations_for(seconds_per_iteration: float, target_s: float, lo: int = 1, hi: int = 1 << 30) -> int:
    """How many iterations make one timed sample last about ``target_s`` (launch overhead under 1%)."""
    if seconds_per_iteration <= 0:
        return hi
    return int(min(hi, max(lo, round(target_s / seconds_per_iteration))))


def clock_mhz(cycles, ns):
    """The SM clock a kernel ran at, from its clock64 cycles and globaltimer nanoseconds (scalars or arrays):
    exact where NVML's sampled reading lags."""
    import numpy as np

    return np.asarray(cycles, dtype=np.float64) / np.asarray(ns, dtype=np.float64) * 1e3


def sampler_for(device):
    """The clock sampler for a device: NVML for a GPU it can see, cpufreq for the CPU, nothing otherwise."""
    if getattr(device, "kind", None) == "gpu":
        from hwprobe.device import nvml

        h = nvml.handle(device)
        return ClockSampler(h) if h is not None else NullSampler()
    return CpuClockSampler()

