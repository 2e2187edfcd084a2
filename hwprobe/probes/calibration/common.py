"""What the calibration probes share: calibration.cu, a CUDA graph of back-to-back launches, and the size lists.

A calibration point is timed the way a framework replays a model as a CUDA graph: ``reps`` launches of one
kernel captured back to back, the graph replayed, its time divided by ``reps``. So each point's time holds the
kernel's own duration *and* the gap the GPU leaves between two graph nodes: what one kernel of that shape costs
inside a replayed model.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from hwprobe.kernels import compile_ahead

MAX_REPS = 512              # launches captured in one graph at most (a replay's length: timing policy 'graph_point')
MIN_REPS = 4                # ... and at least: only a call of 250 us or more gets fewer than 16, where the ~1 us
#                             gap between two graph nodes and a replay's fixed cost are under 0.5% of a call
KERNELS = ("empty_kernel", "ew_add", "ew_relu", "row_norm", "row_softmax", "row_mean", "transpose2d", "bias_add")
MODULE = ("calibration.cu", (), KERNELS)   # ``load``'s arguments: module() loads it, ahead() compiles it early


def module():
    from hwprobe.kernels import load

    return load(*MODULE)


ahead = compile_ahead(MODULE)   # the calibration probes' compile-ahead hook: calibration.cu


def kernel(name: str):
    return module().get_function(name)


def graph_of(cp, launch: Callable[[], None], reps: int):
    """A CUDA graph of ``reps`` calls of ``launch`` captured on a side stream (after one untimed call)."""
    cp.cuda.Device().synchronize()      # operands filled on the current stream are complete before the side stream
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        launch()
        side.synchronize()
        side.begin_capture()
        err = None
        try:
            for _ in range(reps):
                launch()
        except Exception as e:          # end the capture in every case, then report the first error
            err = e
        graph = side.end_capture()
    side.synchronize()
    if err is not None:
        raise err
    return graph


def point_rule():
    """The timing policy's rule for a calibration point (replay length, replays)."""
    from hwprobe.timing import policy

    return policy.rule("graph_point")


def reps_for_time(per_call_s: float) -> int:
    """Launches per graph so one replay lasts the rule's sample length, within MIN_REPS..MAX_REPS."""
    return int(min(MAX_REPS, max(MIN_REPS, math.ceil(point_rule().sample_s / max(per_call_s, 1e-9)))))


def reps_for(cp, launch: Callable[[], None]) -> int:
    """Launches per graph, sized from a pilot graph of MIN_REPS."""
    from hwprobe.timing import time_cuda

    g = graph_of(cp, launch, MIN_REPS)
    return reps_for_time(min(time_cuda(g.launch, warmup=1, repeats=2, cp=cp)) / MIN_REPS)


REPLAY_NODES = (1, 16, 64, 256)   # graph sizes whose replay times give the fixed cost of one replay
REPLAY_SAMPLES, REPLAY_WARM = 24, 3  # replays timed per size, the first ones dropped


def replay_fit(medians: list[float]) -> tuple[float, float]:
    """(fixed seconds per replay, seconds per node): the least-squares line of replay time against REPLAY_NODES
    (the intercept held at 0 or above)."""
    import numpy as np

    slope, intercept = np.polyfit(np.asarray(REPLAY_NODES, float), np.asarray(medians), 1)
    return max(0.0, float(intercept)), float(slope)


def geometric(lo: int, hi: int, step: int = 2) -> list[int]:
    """lo, lo*step, ... up to hi (inclusive)."""
    out, x = [], lo
    while x <= hi:
        out.append(x)
        x *= step
    return out


SIZES = geometric(1 << 13, 1 << 30, 2)          # bytes moved per memory-bound kernel: 8 KiB .. 1 GiB
QUICK_SIZES = geometric(1 << 13, 1 << 26, 8)


def curve_sizes(ctx, curve: str, sizes: list[int]) -> list[int]:
    """``sizes`` less those of ``curve`` ("memory.<kind>", "torch.<kind>") that interpolation between their
    neighbours predicts within 2% (hwprobe.predict.prune; all of them in quick runs)."""
    from hwprobe.probes.calibration.pruned import pruned

    return sizes if ctx.quick else [s for s in sizes if not pruned().curve_point(curve, s)]
