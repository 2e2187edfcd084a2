"""The one timing policy: how long a timed sample lasts, how a sample is sized, and when sampling stops.

Every probe sizes its samples with ``calibrate`` (grow the work until a timed call is long enough that fixed
costs hardly bias it, then scale linearly to the target) and takes them with ``sample`` under a named
``StoppingRule``. The sample lengths and counts live here, named by what they are for, instead of in each probe:
a probe asks for a rule by name (``rule("screen")``), with parameters where it must (``rule("ceiling",
min_samples=5)``), as nvbench's benchmarks name their stopping criterion.

Stopping adapts to noise in the manner of nvbench's ``stdrel`` criterion (minimum samples, minimum time, a noise
target, a timeout): once a rule's minimum samples and minimum timed seconds are in, sampling stops as soon as the
noise of the samples is at most the rule's target; a noisy stream goes on to the rule's caps (samples, timed
seconds, wall-clock timeout). nvbench's noise is a relative spread of the samples; here it is the relative
standard error of the median, the statistic every figure is computed from (hwprobe.measurement.noise):

    noise = pi/2 x mean(|x - median|) / (sqrt(n) x median)

(sqrt(pi/2) x the mean absolute deviation estimates the standard deviation of normal samples, and sqrt(pi/2) x
sigma / sqrt(n) is the standard error of their median). So a rule stops early only where all its samples agree:
a clock that drops part-way through the samples keeps it going to its caps. Why a rule stopped and the noise it
reached go into the record (``Stats.stop``, ``Stats.noise``; a ceiling's ``stop_reason`` and ``noise``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from hwprobe.interrupt import check as check_interrupt
from hwprobe.measurement import noise
from hwprobe.vocab import StopReason


@dataclass(frozen=True)
class StoppingRule:
    """When to stop taking timed samples (the module docstring gives the order). ``max_noise`` 0: no noise
    target, stop at the minimums (a fixed count when min_samples = max_samples)."""

    name: str
    sample_s: float            # the GPU (or CPU) time one timed sample should last
    min_samples: int = 3
    max_samples: int = 10      # a hard cap
    min_total_s: float = 0.0   # timed seconds at least, e.g. >= 1 s so the NVML energy counter gives J/op
    max_noise: float = 0.0     # target relative standard error of the median (noise()); 0: none
    max_total_s: float = math.inf   # timed seconds at most, once the minimums (samples and time) are in
    timeout_s: float = 60.0    # wall-clock seconds at most, minimums or not
    energy: bool = True        # read the energy counter around the samples (False: windows far under the 1 s
    #                            joules per operation need; each read costs an H200 ~5 ms, twice per figure)

    def __post_init__(self) -> None:
        if not 1 <= self.min_samples <= self.max_samples:
            raise ValueError(f"stopping rule {self.name!r}: need 1 <= min_samples <= max_samples, "
                             f"got {self.min_samples}, {self.max_samples}")
        if self.max_noise < 0 or (self.max_noise > 0 and self.min_samples < 3):
            raise ValueError(f"stopping rule {self.name!r}: a noise target needs min_samples >= 3 and >= 0")


# The named rules the probes use (sample lengths keep launch overhead under 1% of a sample), by family:
# - ceilings (a figure of the profile): at least 5 samples, stop at 0.3% noise, else go on to 10 (the count
#   every ceiling took before the rules adapted, so a noisy ceiling never gets fewer samples than it had). 0.3%,
#   not nvbench's 0.5%: replayed on the 266 ten-sample records of the committed 2026-11-26 full runs (H200, H100),
#   0.5% stops 174 early and moves one median by -1.6% (samples 1-5 ran slower than 6-10); 0.3% stops 144 early,
#   none moved down by more than 0.6% (tools/suite_speed.py replay)
CEILING = StoppingRule("ceiling", sample_s=0.005, min_samples=5, max_samples=10, max_noise=0.003, max_total_s=1.0)
LIBRARY = StoppingRule("library", sample_s=0.005, min_samples=5, max_samples=10,  # not vocab: the rule's name
                       max_noise=0.003, max_total_s=1.0)
CPU_CEILING = StoppingRule("cpu_ceiling", sample_s=0.2, min_samples=5, max_samples=10, max_noise=0.003,
                           max_total_s=4.0)  # one call of all threads
# - energy: the window the NVML energy counter needs (it steps every ~0.1 s) sets the time, and no noise target:
#   its hundreds of samples put the median's noise under 0.2% where the samples agree, and where the power cap
#   drifts them (up to 1.2% on the committed full runs' FP8/INT8 cuBLASLt windows) more samples would only
#   lengthen a window whose length is part of the figure
ENERGY = StoppingRule("energy", sample_s=0.005, min_samples=10, max_samples=4000, min_total_s=1.2, timeout_s=30.0)
# - sustained (gpu.gemm_power): 1.5 s after the limiter settled. On the A/B's two H200 full runs (2026-11-27) the
#   median of each 2-s window's first 1.5 s was within 0.8% of the whole window's (15 of 16 within 0.3%). 1.2 s
#   kept the rates (within 1.1% in the next same-lease A/B) but not the joules per op: the energy counter steps
#   every ~0.1 s, up to 8% of a 1.2-s window, and J/op moved up to 9.6% against the 2-s windows
SUSTAINED = StoppingRule("sustained", sample_s=0.05, min_samples=3, max_samples=4000, min_total_s=1.5,
                         timeout_s=30.0)
# - quick runs and memory streams: looser (1%), never under 3 samples
QUICK = StoppingRule("quick", sample_s=0.002, min_samples=3, max_samples=5, max_noise=0.01)
CPU_QUICK = StoppingRule("cpu_quick", sample_s=0.03, min_samples=3, max_samples=5, max_noise=0.01)
STREAM = StoppingRule("stream", sample_s=0.004, min_samples=3, max_samples=10, max_noise=0.01)
# - sweep and calibration points (a curve, not a ceiling): 3 (a median that one outlier cannot move), more
#   only where they disagree by over 2%
SWEEP = StoppingRule("sweep", sample_s=0.002, min_samples=3, max_samples=3, energy=False)
GRAPH_POINT = StoppingRule("graph_point", sample_s=0.001, min_samples=3, max_samples=5, max_noise=0.02, energy=False)
# ... one CUDA-graph replay of back-to-back kernels lasting ~1 ms (a prediction calibration point)
# - screens and searches: fixed counts (a screen ranks variants; the winner is then measured under a ceiling rule)
SCREEN = StoppingRule("screen", sample_s=0.002, min_samples=2, max_samples=2)
STREAM_SIZES = StoppingRule("stream_sizes", sample_s=0.004, min_samples=3, max_samples=3)  # DRAM finalists per size
L2_SCREEN = StoppingRule("l2_screen", sample_s=0.001, min_samples=2, max_samples=2)  # cache: L2 variants screened
TRACE = StoppingRule("trace", sample_s=0.003, min_samples=3, max_samples=3)          # the roofline trace's points
LATENCY = StoppingRule("latency", sample_s=0.0, min_samples=5, max_samples=5)        # chases: fixed steps, 5 times
SEARCH = StoppingRule("search", sample_s=0.003, min_samples=1, max_samples=1)   # one launch per configuration tried
# - a rested library window (gpu.gemm_fp8's sizes and gpu.gemm's limited ceilings, after the GPU idled; no warm-up:
#   cublas.rest): five samples in one batch, no noise target.
#   Under the power cap the first call after a host sync runs slow, so the ceiling rule's later batches of two each
#   began with one (H200 FP8 at 16384: [1309, 1464, 1454, 1458, 1461 | 1337, 1461 | 1365, 1462 | 1317] TFLOP/s); five
#   calls of 16384^3 last 30 ms, inside the 25-60 ms the rested level holds (profiles/h200-sxm/2026-11-29-s40).
#   No energy read: a compute figure under it is not stretched into an energy window (ProbeContext.measure), whose
#   1.2 s would run at the cap's level; its joules come from a window of their own (cublaslt.measure_matmul)
RESTED = StoppingRule("rested", sample_s=0.005, min_samples=5, max_samples=5,  # not vocab: the rule's name
                      energy=False)
# mma.sync/wgmma: one launch long against launch overhead, short against power-cap throttling (lengths only)
INSTRUCTION = StoppingRule("instruction", sample_s=0.010, min_samples=10, max_samples=10)  # not vocab: the rule's name
INSTRUCTION_QUICK = StoppingRule("instruction_quick", sample_s=0.004, min_samples=10, max_samples=10)
RULES = {r.name: r for r in (CEILING, SCREEN, SWEEP, STREAM, LIBRARY, SUSTAINED, ENERGY, QUICK, STREAM_SIZES,
                             L2_SCREEN, TRACE, LATENCY, INSTRUCTION, INSTRUCTION_QUICK, SEARCH, CPU_CEILING,
                             CPU_QUICK, GRAPH_POINT, RESTED)}


def rule(name: str, /, **params: float) -> StoppingRule:
    """The stopping rule named ``name``, with ``params`` (any StoppingRule field but the name) set for this use."""
    if name not in RULES:
        raise ValueError(f"no stopping rule {name!r}; rules: {', '.join(RULES)}")
    bad = set(params) - {f.name for f in fields(StoppingRule)} - {"name"} or set(params) & {"name"}
    if bad:
        raise ValueError(f"stopping rule {name!r} has no parameter {', '.join(sorted(bad))}")
    return replace(RULES[name], **params) if params else RULES[name]


@dataclass(frozen=True)
class Calibration:
    count: int                 # units of work (iterations, repeats, GEMMs) for one sample of the target length
    unit_s: float              # seconds per unit, from the longest timed call
    timed_count: int           # the last call timed while growing, and its seconds
    timed_s: float


def calibrate(timer: Callable[[int], float], target_s: float, *, start: int = 1, hi: int = 1 << 30,
              reach: float = 0.25, grow: int = 64, max_steps: int = 24) -> Calibration:
    """Size a sample: time ``timer(n)`` (seconds for n units) with n growing from ``start`` until one call lasts
    ``reach`` x ``target_s`` (or n reaches ``hi``), then scale linearly: count = target / seconds per unit."""
    if target_s <= 0 or start < 1 or hi < start:
        raise ValueError(f"calibrate: target_s={target_s}, start={start}, hi={hi}")
    n, t = start, 0.0
    for step in range(max_steps):
        check_interrupt()
        t = timer(n)
        if t >= reach * target_s or n >= hi or step == max_steps - 1:
            break
        factor = int(reach * target_s / t) + 1 if t > 0 else grow
        n = min(hi, n * max(2, min(grow, factor)))
    if t <= 0:
        if n >= hi:                      # too fast to time even at the cap: the cap it is
            return Calibration(hi, 0.0, n, t)
        raise RuntimeError(f"calibrate: a call of {n} units timed as {t} s")
    unit = t / n
    return Calibration(int(min(hi, max(1, round(target_s / unit)))), unit, n, t)


def stop_reason(rule: StoppingRule, samples: list[float], elapsed_s: float) -> StopReason | None:
    """Why ``rule`` says stop after ``samples`` taken in ``elapsed_s`` of wall time, or None to go on."""
    if elapsed_s >= rule.timeout_s:
        return StopReason.TIMEOUT
    n, total = len(samples), float(sum(samples))
    if n >= rule.min_samples and total >= rule.min_total_s:
        if rule.max_noise <= 0:
            return StopReason.MINIMUMS
        x = noise(samples)
        if x is not None and x <= rule.max_noise:
            return StopReason.NOISE
        if total >= rule.max_total_s:
            return StopReason.MAX_TIME
    if n >= rule.max_samples:
        return StopReason.MAX_SAMPLES
    return None


def done(rule: StoppingRule, samples: list[float], elapsed_s: float) -> bool:
    """Whether ``rule`` says stop, after ``samples`` taken in ``elapsed_s`` of wall time."""
    return stop_reason(rule, samples, elapsed_s) is not None


@dataclass
class Sampling:
    """What ``sample`` took: the samples (seconds), why it stopped, and the noise they reached (noise())."""

    samples: list[float]
    stop: StopReason
    noise: float | None
    elapsed_s: float


def sample(timed: Callable[[int], list[float]], rule: StoppingRule, *, clock: Callable[[], float] | None = None,
           batch: int | None = None) -> Sampling:
    """Take timed samples under ``rule``. ``timed(k)`` runs k back-to-back samples and returns their seconds
    (CUDA events around each on a GPU, perf_counter on the CPU); batches keep launch gaps out of the window.
    Up to the minimum count one batch; past it ``batch`` (default: half the minimum) at a time, checking the
    rule after each."""
    import time

    clock = clock or time.perf_counter
    t0 = clock()
    out: list[float] = []
    while (why := stop_reason(rule, out, clock() - t0)) is None:
        check_interrupt()
        k = batch or (rule.min_samples - len(out) if len(out) < rule.min_samples else max(1, rule.min_samples // 2))
        out += timed(max(1, min(k, rule.max_samples - len(out))))
    return Sampling(out, why, noise(out), clock() - t0)
