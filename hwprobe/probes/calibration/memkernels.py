"""gpu.mem_kernels: what a memory-bound kernel costs against the bytes it moves, L2-resident to DRAM-sized.

Models spend much of their time between GEMMs in kernels that move bytes and do little arithmetic:
elementwise ops (vectorised, and the generic broadcast path a framework takes for a per-channel bias),
normalisations, softmax, pooling (row reductions) and layout transposes. Their time is not
bytes over the DRAM slope: small tensors sit in L2 and are bound by the kernel's own latency and the gap
between launches; large ones reach the DRAM bandwidth only past a few MiB. Each point is one kernel replayed
back to back in a CUDA graph (hwprobe.probes.calibration.common), so its time is what one such kernel costs
inside a replayed model. Every point's output is checked against CuPy's own arithmetic.

Result: one calibration curve per kernel kind (hwprobe.calibration: the profile's ``calibration.memory``), bytes
moved against seconds per kernel; the predictor interpolates it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hwprobe import calibration as C
from hwprobe import keys as K
from hwprobe.probes.base import probe
from hwprobe.probes.calibration import common
from hwprobe.vocab import Curve

KINDS = ("elementwise", "unary", "bias", "norm", "softmax", "reduction", "transpose")
BIAS_CHANNELS = 256                  # bias: channels of the broadcast vector
ROW_COLS = 1024                      # row kernels: a hidden size of 1024 halves per row
POOL_COLS = 196                      # row_mean: a 14 x 14 map per channel
SIZES, QUICK_SIZES = common.SIZES, common.QUICK_SIZES     # bytes moved per kernel: 8 KiB .. 1 GiB


@dataclass
class Point:
    """One kernel at one size: its launch, its byte count and its output check."""

    launch: Callable[[], None]
    bytes: int
    check: Callable[[], None]
    shape: str


def _close(cp, got, want, what: str, tol: float = 2e-2) -> None:
    got, want = got.astype(cp.float32), want.astype(cp.float32)
    err = float(cp.max(cp.abs(got - want)) / max(float(cp.max(cp.abs(want))), 1e-6))
    if not np.isfinite(err) or err > tol:
        raise AssertionError(f"{what}: max relative error {err:.3g} > {tol}")


def _rand(cp, n: int, seed: int):
    return (cp.random.default_rng(seed).random(n, dtype=cp.float32) * 2 - 1).astype(cp.float16)


def _elementwise(cp, nbytes: int, unary: bool) -> Point:
    streams = 2 if unary else 3
    n = max(4, nbytes // (2 * streams) // 1024 * 1024)
    a, c = _rand(cp, n, 1), cp.empty(n, dtype=cp.float16)
    grid = ((n // 4 + 255) // 256,)
    if unary:
        k = common.kernel("ew_relu")
        launch = lambda: k(grid, (256,), (a, c, np.uint64(n // 4)))
        check = lambda: _close(cp, c, cp.maximum(a, 0), "ew_relu", 0.0)
        return Point(launch, 4 * n, check, f"{n} halves")
    b = _rand(cp, n, 2)
    k = common.kernel("ew_add")
    launch = lambda: k(grid, (256,), (a, b, c, np.uint64(n // 4)))
    check = lambda: _close(cp, c, a.astype(cp.float32) + b.astype(cp.float32), "ew_add")
    return Point(launch, 6 * n, check, f"{n} halves")


def _bias(cp, nbytes: int) -> Point:
    n = max(BIAS_CHANNELS, nbytes // 4 // BIAS_CHANNELS * BIAS_CHANNELS)
    x, b = _rand(cp, n, 5), _rand(cp, BIAS_CHANNELS, 6)
    y = cp.empty(n, dtype=cp.float16)
    k = common.kernel("bias_add")
    launch = lambda: k(((n + 511) // 512,), (128,), (x, b, y, np.uint64(n), np.int32(BIAS_CHANNELS)))
    check = lambda: _close(cp, y, (x.reshape(-1, BIAS_CHANNELS).astype(cp.float32) + b.astype(cp.float32)).ravel(),
                           "bias_add")
    return Point(launch, 4 * n, check, f"{n // BIAS_CHANNELS} x {BIAS_CHANNELS}")


def _rows(cp, nbytes: int, kind: str) -> Point:
    cols = POOL_COLS if kind == "reduction" else ROW_COLS
    rows = max(1, nbytes // (4 * cols) if kind != "reduction" else nbytes // (2 * cols))
    x = _rand(cp, rows * cols, 3).reshape(rows, cols)
    if kind == "reduction":
        y = cp.empty(rows, dtype=cp.float16)
        k = common.kernel("row_mean")
        launch = lambda: k(((rows * 32 + 255) // 256,), (256,), (x, y, np.uint64(rows), np.int32(cols)))
        check = lambda: _close(cp, y, x.astype(cp.float32).mean(axis=1), "row_mean")
        return Point(launch, 2 * rows * cols + 2 * rows, check, f"{rows} x {cols}")
    y = cp.empty_like(x)
    k = common.kernel("row_norm" if kind == "norm" else "row_softmax")
    launch = lambda: k((rows,), (256,), (x, y, np.int32(cols)))

    def check() -> None:
        xf = x.astype(cp.float32)
        if kind == "norm":
            want = (xf - xf.mean(axis=1, keepdims=True)) / cp.sqrt(xf.var(axis=1, keepdims=True) + 1e-5)
        else:
            e = cp.exp(xf - xf.max(axis=1, keepdims=True))
            want = e / e.sum(axis=1, keepdims=True)
        _close(cp, y, want, kind)

    return Point(launch, 4 * rows * cols, check, f"{rows} x {cols}")


def _transpose(cp, nbytes: int) -> Point:
    side = max(32, int(np.sqrt(nbytes / 4)) // 32 * 32)
    rows, cols = side, side
    x = _rand(cp, rows * cols, 4).reshape(rows, cols)
    y = cp.empty((cols, rows), dtype=cp.float16)
    k = common.kernel("transpose2d")
    launch = lambda: k((cols // 32, rows // 32), (32, 8), (x, y, np.int32(rows), np.int32(cols)))
    check = lambda: _close(cp, y, x.T, "transpose2d", 0.0)
    return Point(launch, 4 * rows * cols, check, f"{rows} x {cols}")


def make_point(cp, kind: str, nbytes: int) -> Point:
    if kind in ("elementwise", "unary"):
        return _elementwise(cp, nbytes, kind == "unary")
    if kind == "transpose":
        return _transpose(cp, nbytes)
    if kind == "bias":
        return _bias(cp, nbytes)
    return _rows(cp, nbytes, kind)


def curve_finding(ctx, kind: str, points: list[tuple[int, float, str]], clocks: list[float]):
    """The curve the predictor reads: bytes moved and seconds per kernel, in size order."""
    pts = sorted(points)
    return ctx.derived(
        C.metric(Curve.MEMORY, kind), len(pts), unit="points", kind="info",
        params={"kind": kind, K.BYTES: [p[0] for p in pts], "time_s": [p[1] for p in pts],
                "shapes": [p[2] for p in pts], "dtype": "float16", "runtime": "cuda_graph",
                "sm_mhz_median": float(np.median(clocks)) if clocks else None},
        notes=[f"{kind} kernel: seconds per kernel against bytes moved (read + written), replayed back to back in "
               f"a CUDA graph; {len(pts)} sizes from {pts[0][0]} to {pts[-1][0]} B" if pts else "no points"])


@probe(name="gpu.mem_kernels", target="gpu", family="calibration", ahead=common.ahead,
       summary="Prediction calibration: elementwise, norm, softmax, reduction and transpose kernels, time vs bytes "
               "(L2-resident to DRAM) in CUDA graphs",
       choices={"kinds": KINDS})
def run(ctx, kinds: list[str] | None = None, max_bytes: int = 1 << 30):
    import cupy as cp

    from hwprobe.probes.memory.common import release

    sizes = [s for s in (QUICK_SIZES if ctx.quick else SIZES) if s <= max_bytes]
    for kind in kinds or KINDS:
        points, clocks = [], []
        for nbytes in common.curve_sizes(ctx, C.curve_id(Curve.MEMORY, kind), sizes):
            metric = C.point_metric(C.metric(Curve.MEMORY, kind), b=nbytes)
            try:
                pt = make_point(cp, kind, nbytes)
                reps = common.reps_for(cp, pt.launch)
                g = common.graph_of(cp, pt.launch, reps)
                m = ctx.measure(metric, g.launch, work=float(pt.bytes * reps), unit="B/s", kind="sweep",
                                check=pt.check, warmup=1, rule=common.point_rule().name,
                                bytes_counted="read + write",
                                params={"kernel": kind, K.BYTES: pt.bytes, "shape": pt.shape, "reps": reps,
                                        "cuda_graph": True})
                yield m
                if m.valid:
                    points.append((pt.bytes, pt.bytes / m.value, pt.shape))
                    if m.clocks and m.clocks.sm_mhz:
                        clocks.append(m.clocks.sm_mhz)
            except Exception as e:
                yield ctx.error(metric, f"{kind} kernel at {nbytes} B", e)
            finally:
                release()
        if points:
            yield curve_finding(ctx, kind, points, clocks)
