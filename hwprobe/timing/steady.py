"""Settling a sustained load until its launch time stops moving, with a cap.

A sustained point (gpu.sparse's dense and sparse points; gpu.gemm_power keeps a fixed settle) runs its own work
untimed before its samples, so that they sit at the clock the power limiter gives that work. A fixed settle ends
wherever the limiter happens to be. On an H200 (issue 33, profiles/h200-sxm/2026-11-29-sparse-s31), after 0.25 s
the FP8 2:4 launches at 16384 went on slowing by 7-12% in the middle of the 0.4-s window and then recovered, after
one search; after another they drifted 3-6%. So what ran before the point moved the figure.

The rule here: run the work in timed chunks of ``chunk_s``; stop once ``settle_s`` has passed and the chunks of
the last ``span_s`` agree (slowest over fastest, minus one, at most ``tol``), or at ``settle_max_s`` whatever
they do. The record keeps why it stopped and every chunk's time per call, so a window that starts mid-swing says
so. ``settle_max_s`` None is the fixed settle (no chunks timed). In one H200 lease it raised gpu.sparse's FP16 and
FP8 2:4 figures by 0.1-1.8% over the fixed 0.25 s, and the sweep's FP8 then read as the library search's
(profiles/h200-sxm/2026-11-29-suite-s33).

Settled is not the end of it. Under the power cap an H200's limiter then moves the clock between two levels about
4% apart, staying 0.3-0.5 s on each (gpu.sparse FP8 2:4 at 16384: 4.58 and 4.78 ms a launch over 2-s windows,
profiles/h200-sxm/2026-11-29-sparse-s37), so one 0.4-s window reads either level by chance: across leases
1841-1925 TFLOP/s for the default method of 2f75c75, 1884-1944 for 9fd4823's. ``best_window`` times windows of
``sustain_s`` back to back until one runs at the settle's level (within ``tol``), at most ``sustain_max_s`` in all,
and keeps the fastest; the record keeps every window's time per call and why it stopped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median
from typing import Generic, TypeVar

from hwprobe.interrupt import check as check_interrupt
from hwprobe.vocab import SettleStop, WindowStop

CHUNK_S = 0.05      # the limiter acts within ~50 ms; one chunk is also far over a sync's cost
SPAN_S = 0.2        # the chunks that must agree: four, so one lucky pair cannot end the settle
EPS = 1e-9          # seconds: a sum of chunk times that rounds under a bound still reaches it
TOL = 0.02          # the swings seen were 7-12% over ~0.2 s; chunk-to-chunk noise at the cap is under 1%


@dataclass(frozen=True)
class Sustain:
    """How a sustained point runs: settled (fixed ``settle_s``, or ``settle_s`` to ``settle_max_s`` until steady),
    then timed samples adding up to ``sustain_s``: one window, or (``sustain_max_s``, after a settle until steady)
    windows back to back until one runs at the settle's level, ``sustain_max_s`` of them in all at most."""

    settle_s: float
    sustain_s: float
    settle_max_s: float | None = None
    chunk_s: float = CHUNK_S
    span_s: float = SPAN_S
    tol: float = TOL
    sustain_max_s: float | None = None

    def __post_init__(self) -> None:
        if self.settle_s < 0 or self.sustain_s <= 0:
            raise ValueError(f"sustain: need settle_s >= 0 and sustain_s > 0, got {self.settle_s}, {self.sustain_s}")
        if self.settle_max_s is not None and self.settle_max_s < self.settle_s:
            raise ValueError(f"sustain: settle_max_s {self.settle_max_s} is under settle_s {self.settle_s}")
        if self.sustain_max_s is not None and self.sustain_max_s < self.sustain_s:
            raise ValueError(f"sustain: sustain_max_s {self.sustain_max_s} is under sustain_s {self.sustain_s}")

    @property
    def max_windows(self) -> int:
        """How many windows of sustain_s a point may take (1 without sustain_max_s)."""
        return 1 if self.sustain_max_s is None else max(1, math.floor(self.sustain_max_s / self.sustain_s + 1e-9))

    def calls_per_chunk(self, per_call_s: float) -> int:
        """Calls of ``per_call_s`` seconds that fill one chunk of ``chunk_s`` (at least one): a settle's timed
        chunk, and the bridge queued before each window."""
        return max(1, math.ceil(self.chunk_s / per_call_s))

    @property
    def span_chunks(self) -> int:
        """How many of the last chunks must agree: those of ``span_s``, at least two."""
        return max(2, math.ceil(self.span_s / self.chunk_s - 1e-9))

    def params(self) -> dict:
        """The rule, for a record's params (settle_max_s only where the settle is adaptive or capped)."""
        out = {"settle_s": self.settle_s, "sustain_s": self.sustain_s}
        if self.settle_max_s is not None:
            out["settle_max_s"] = self.settle_max_s
        if self.sustain_max_s is not None:
            out["sustain_max_s"] = self.sustain_max_s
        return out

    @property
    def adaptive(self) -> bool:
        return self.settle_max_s is not None and self.settle_max_s > self.settle_s

    def scaled(self, factor: float) -> Sustain:
        """The same rule with every duration times ``factor`` (quick runs)."""
        mx = None if self.settle_max_s is None else self.settle_max_s * factor
        smx = None if self.sustain_max_s is None else self.sustain_max_s * factor
        return Sustain(self.settle_s * factor, self.sustain_s * factor, mx, self.chunk_s, self.span_s, self.tol, smx)


@dataclass
class Settled:
    """What a settle did: wall seconds, why it stopped, each timed chunk's seconds per call (in order), and how
    many of the last chunks the rule compared (Sustain.span_chunks; timed chunks need at least two)."""

    seconds: float
    stop: SettleStop
    chunks: list[float] = field(default_factory=list)
    span: int = 0

    def __post_init__(self) -> None:
        if self.chunks and self.span < 2:
            raise ValueError(f"settled: {len(self.chunks)} timed chunks need a span of at least 2, got {self.span}")

    @property
    def level(self) -> float | None:
        """Seconds per call the settle ended on (the median of its last span of chunks); None for a fixed settle."""
        return median(self.chunks[-self.span:]) if self.chunks else None

    def params(self) -> dict:
        out = {"settle_ran_s": round(self.seconds, 3), "settle_stop": str(self.stop)}
        if self.chunks:
            out["settle_chunks_us"] = [round(c * 1e6, 2) for c in self.chunks]
            out["settle_last_spread"] = round(spread(self.chunks[-self.span:]), 4)
        return out


def spread(xs: list[float]) -> float:
    """Slowest over fastest, minus one (0 for fewer than two)."""
    return max(xs) / min(xs) - 1 if len(xs) > 1 and min(xs) > 0 else 0.0


def steady(chunks: list[float], rule: Sustain) -> bool:
    """Whether the chunks of the last ``span_s`` agree within ``tol``."""
    k = rule.span_chunks
    return len(chunks) >= k and spread(chunks[-k:]) <= rule.tol


def settle(run_chunk: Callable[[], tuple[float, float]], run_fixed: Callable[[], None], rule: Sustain,
           clock: Callable[[], float] = time.perf_counter) -> Settled:
    """Settle under ``rule``. ``run_chunk()`` runs about ``chunk_s`` of the work and returns (its device seconds,
    seconds per call), and the settle's length is the sum of the chunks' device seconds; ``run_fixed()`` runs
    ``settle_s`` of it untimed (the fixed settle, its length the host's clock)."""
    if not rule.adaptive:
        t0 = clock()
        run_fixed()
        return Settled(clock() - t0, SettleStop.FIXED)
    chunks: list[float] = []
    ran = 0.0
    while True:
        check_interrupt()
        seconds, per_call = run_chunk()
        ran += seconds
        chunks.append(per_call)
        if ran >= rule.settle_s - EPS and steady(chunks, rule):
            return Settled(ran, SettleStop.STEADY, chunks, rule.span_chunks)
        if ran >= rule.settle_max_s - EPS:
            return Settled(ran, SettleStop.CAP, chunks, rule.span_chunks)


T = TypeVar("T")


@dataclass
class Windows(Generic[T]):
    """What ``best_window`` did under ``rule``: the fastest window's result, every window's seconds per call (in
    order), which was kept, and why it stopped."""

    kept: T
    per_call_s: list[float]
    kept_index: int
    stop: WindowStop
    rule: Sustain

    def params(self) -> dict:
        """The rule and the windows, for the kept record's params."""
        return {**self.rule.params(), "sustain_windows_us": [round(t * 1e6, 2) for t in self.per_call_s],
                "sustain_window_kept": self.kept_index, "sustain_window_stop": str(self.stop)}

    def note(self) -> str | None:
        if len(self.per_call_s) < 2:
            return None
        return (f"fastest of {len(self.per_call_s)} back-to-back windows of {self.rule.sustain_s:g} s (window "
                f"{self.kept_index + 1} kept): under the power cap the clock moved between levels "
                f"(hwprobe.timing.steady)")


def best_window(measure: Callable[[], tuple[T, float]], level: float | None, rule: Sustain) -> Windows[T]:
    """Time windows back to back (``measure()`` times one of ``rule.sustain_s`` and returns (its result, seconds
    per call)) until one runs within ``rule.tol`` of ``level`` (the settle's seconds per call) or
    ``rule.max_windows`` have run; keep the fastest. Without a level (a fixed settle) one window."""
    got: list[tuple[T, float]] = []
    while True:
        check_interrupt()
        got.append(measure())
        if level is None or rule.max_windows == 1:
            stop = WindowStop.ONE
        elif got[-1][1] <= level * (1 + rule.tol):
            stop = WindowStop.LEVEL
        elif len(got) >= rule.max_windows:
            stop = WindowStop.CAP
        else:
            continue
        i = min(range(len(got)), key=lambda j: got[j][1])
        return Windows(got[i][0], [t for _, t in got], i, stop, rule)
