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
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hwprobe.interrupt import check as check_interrupt
from hwprobe.vocab import SettleStop

CHUNK_S = 0.05      # the limiter acts within ~50 ms; one chunk is also far over a sync's cost
SPAN_S = 0.2        # the chunks that must agree: four, so one lucky pair cannot end the settle
EPS = 1e-9          # seconds: a sum of chunk times that rounds under a bound still reaches it
TOL = 0.02          # the swings seen were 7-12% over ~0.2 s; chunk-to-chunk noise at the cap is under 1%


@dataclass(frozen=True)
class Sustain:
    """How a sustained point runs: settled (fixed ``settle_s``, or ``settle_s`` to ``settle_max_s`` until steady),
    then timed samples adding up to ``sustain_s``."""

    settle_s: float
    sustain_s: float
    settle_max_s: float | None = None
    chunk_s: float = CHUNK_S
    span_s: float = SPAN_S
    tol: float = TOL

    def __post_init__(self) -> None:
        if self.settle_s < 0 or self.sustain_s <= 0:
            raise ValueError(f"sustain: need settle_s >= 0 and sustain_s > 0, got {self.settle_s}, {self.sustain_s}")
        if self.settle_max_s is not None and self.settle_max_s < self.settle_s:
            raise ValueError(f"sustain: settle_max_s {self.settle_max_s} is under settle_s {self.settle_s}")

    @property
    def span_chunks(self) -> int:
        """How many of the last chunks must agree: those of ``span_s``, at least two."""
        return max(2, math.ceil(self.span_s / self.chunk_s - 1e-9))

    def params(self) -> dict:
        """The rule, for a record's params (settle_max_s only where the settle is adaptive or capped)."""
        out = {"settle_s": self.settle_s, "sustain_s": self.sustain_s}
        return out if self.settle_max_s is None else {**out, "settle_max_s": self.settle_max_s}

    @property
    def adaptive(self) -> bool:
        return self.settle_max_s is not None and self.settle_max_s > self.settle_s

    def scaled(self, factor: float) -> Sustain:
        """The same rule with every duration times ``factor`` (quick runs)."""
        mx = None if self.settle_max_s is None else self.settle_max_s * factor
        return Sustain(self.settle_s * factor, self.sustain_s * factor, mx, self.chunk_s, self.span_s, self.tol)


@dataclass
class Settled:
    """What a settle did: wall seconds, why it stopped, each timed chunk's seconds per call (in order), and how
    many of the last chunks the rule compared (Sustain.span_chunks)."""

    seconds: float
    stop: SettleStop
    chunks: list[float] = field(default_factory=list)
    span: int = 0

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
