"""The one timing policy: how long a timed sample lasts, how a sample is sized, and when sampling stops.

Every probe sizes its samples with ``calibrate`` (grow the work until a timed call is long enough that fixed
costs hardly bias it, then scale linearly to the target) and takes them with ``sample`` under a named
``StoppingRule``. The sample lengths and counts live here, named by what they are for, instead of in each probe:
a probe asks for a rule by name (``rule("screen")``), with parameters where it must (``rule("ceiling",
min_samples=5)``), as nvbench's benchmarks name their stopping criterion.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from hwprobe.interrupt import check as check_interrupt


@dataclass(frozen=True)
class StoppingRule:
    """When to stop taking timed samples: at least ``min_samples`` and ``min_total_s`` of timed work, then
    stop once the spread (coefficient of variation) is at most ``max_cv`` or ``max_samples`` are taken, or
    ``timeout_s`` has passed (whichever first, but never below the minimums unless the timeout ran out)."""

    name: str
    sample_s: float            # the GPU (or CPU) time one timed sample should last
    min_samples: int = 3
    max_samples: int = 10
    min_total_s: float = 0.0   # e.g. >= 1 s so the NVML energy counter can give joules per operation
    max_cv: float = 0.0        # 0: no early stop on low noise (take min_samples, or until min_total_s)
    timeout_s: float = 60.0


# The named rules the probes use (sample lengths keep launch overhead under 1% of a sample).
CEILING = StoppingRule("ceiling", sample_s=0.005, min_samples=10, max_samples=10)
SCREEN = StoppingRule("screen", sample_s=0.002, min_samples=2, max_samples=2)
SWEEP = StoppingRule("sweep", sample_s=0.002, min_samples=3, max_samples=3)
STREAM = StoppingRule("stream", sample_s=0.004, min_samples=3, max_samples=10)
LIBRARY = StoppingRule("library", sample_s=0.005, min_samples=10, max_samples=10)
SUSTAINED = StoppingRule("sustained", sample_s=0.05, min_samples=3, max_samples=4000, min_total_s=2.0,
                         timeout_s=30.0)
ENERGY = StoppingRule("energy", sample_s=0.005, min_samples=10, max_samples=4000, min_total_s=1.2, timeout_s=30.0)
QUICK = StoppingRule("quick", sample_s=0.002, min_samples=3, max_samples=5)
# Rules of one probe family each (the lengths and counts those probes kept apart before, unchanged). Where a
# rule only sizes a call that ctx.measure then times, its counts are the ceiling's and the length is what counts.
STREAM_SIZES = StoppingRule("stream_sizes", sample_s=0.004, min_samples=3, max_samples=3)  # DRAM finalists per size
L2_SCREEN = StoppingRule("l2_screen", sample_s=0.001, min_samples=2, max_samples=2)  # cache: L2 variants screened
TRACE = StoppingRule("trace", sample_s=0.003, min_samples=3, max_samples=3)          # the roofline trace's points
LATENCY = StoppingRule("latency", sample_s=0.0, min_samples=5, max_samples=5)        # chases: fixed steps, 5 times
# mma.sync/wgmma: one launch long against launch overhead, short against power-cap throttling
INSTRUCTION = StoppingRule("instruction", sample_s=0.010, min_samples=10, max_samples=10)
INSTRUCTION_QUICK = StoppingRule("instruction_quick", sample_s=0.004, min_samples=10, max_samples=10)
SEARCH = StoppingRule("search", sample_s=0.003, min_samples=1, max_samples=1)   # one launch per configuration tried
CPU_CEILING = StoppingRule("cpu_ceiling", sample_s=0.2, min_samples=10, max_samples=10)  # one call of all threads
CPU_QUICK = StoppingRule("cpu_quick", sample_s=0.03, min_samples=10, max_samples=10)
# a prediction calibration point: one CUDA-graph replay of back-to-back kernels lasting ~1 ms, three replays
GRAPH_POINT = StoppingRule("graph_point", sample_s=0.001, min_samples=3, max_samples=3)
RULES = {r.name: r for r in (CEILING, SCREEN, SWEEP, STREAM, LIBRARY, SUSTAINED, ENERGY, QUICK, STREAM_SIZES,
                             L2_SCREEN, TRACE, LATENCY, INSTRUCTION, INSTRUCTION_QUICK, SEARCH, CPU_CEILING,
                             CPU_QUICK, GRAPH_POINT)}


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


def done(rule: StoppingRule, samples: list[float], elapsed_s: float) -> bool:
    """Whether ``rule`` says stop, after ``samples`` taken in ``elapsed_s`` of wall time."""
    if elapsed_s >= rule.timeout_s:
        return True
    if len(samples) >= rule.max_samples:
        return True
    if len(samples) < rule.min_samples or sum(samples) < rule.min_total_s:
        return False
    if rule.max_cv <= 0:
        return True
    a = np.asarray(samples)
    return float(a.std(ddof=1) / a.mean()) <= rule.max_cv if a.size > 1 and a.mean() > 0 else True


def sample(timed: Callable[[int], list[float]], rule: StoppingRule, *, clock: Callable[[], float] | None = None,
           batch: int | None = None) -> list[float]:
    """Take timed samples under ``rule``. ``timed(k)`` runs k back-to-back samples and returns their seconds
    (CUDA events around each on a GPU, perf_counter on the CPU); batches keep launch gaps out of the window."""
    import time

    clock = clock or time.perf_counter
    t0 = clock()
    out: list[float] = []
    while not done(rule, out, clock() - t0):
        check_interrupt()
        k = batch or max(1, rule.min_samples - len(out))
        out += timed(min(k, rule.max_samples - len(out)))
    return out
