"""How gpu.torch_kernels times and checks a PyTorch kernel (shared by its curves and its library half,
hwprobe.probes.calibration.torch_library): replayed back to back in a CUDA graph, each replay after L2 was filled
with other data and timed alone, each launch on its own parameters; the output checked against FP32."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from hwprobe.probes.calibration import common

_FLUSH: dict = {}


def _l2_bytes(torch) -> int:
    return int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)) or 50 << 20


def _flush(torch) -> None:
    """Write 3 x L2 of other data, as the rest of a model's forward does between two uses of one layer: every timed
    replay starts with L2 full of someone else's (dirty) lines and no parameter of the chain in it."""
    if "buf" not in _FLUSH:
        _FLUSH["buf"] = torch.empty(3 * _l2_bytes(torch), dtype=torch.uint8, device="cuda")
    _FLUSH["buf"].fill_(1)


def copy_count(torch, nbytes: int) -> int:
    """Copies of a layer's parameters so that one pass over them moves 3 x L2 (none L2-resident when it comes
    round again), at most one per launch of a replay."""
    from hwprobe.probes.compute.gemm_common import rotation_sets

    return rotation_sets(max(int(nbytes), 1), _l2_bytes(torch), 3.0, cap=common.MAX_REPS)


def param_copies(torch, shape: tuple, fill, dtype, channels_last: bool = False):
    """A callable giving a different copy of a layer's parameter (weights, bias, norm scale) of ``shape`` on each
    call, as each layer of a model reads its own: copy_count copies cut from one ``fill`` (gemm_common.
    aligned_copies), each aligned as its own allocation would be. ``dtype``: what ``fill`` makes (its element size
    sets the alignment). ``channels_last``: 4-D weights in PyTorch's channels-last strides."""
    import itertools
    import math

    from hwprobe.probes.compute.gemm_common import aligned_copies

    esize = dtype.itemsize
    count = copy_count(torch, math.prod(shape) * esize)
    if channels_last:
        o, i, kh, kw = shape
        views = [w.permute(0, 3, 1, 2) for w in aligned_copies(fill, (o, kh, kw, i), count, esize)]
    else:
        views = aligned_copies(fill, tuple(shape), count, esize)
    it = itertools.cycle(views)
    return lambda: next(it)


@contextmanager
def reference_mode(torch):
    """FP32 arithmetic for a check's reference (no TF32), outside cuDNN: PyTorch's own im2col-and-GEMM and depthwise
    kernels, so a cuDNN convolution is checked against other code, with no algorithm search or plan built for a
    shape the timing never runs (the reference took a conv point 30 ms with cuDNN on, on an H200)."""
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    old = matmul.allow_tf32, cudnn.allow_tf32, cudnn.enabled
    matmul.allow_tf32 = cudnn.allow_tf32 = cudnn.enabled = False
    try:
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32, cudnn.enabled = old


def warm(torch, fn, calls: int = 2) -> None:
    """Run ``fn`` on a side stream first (allocations and library handles settle before a capture)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(calls):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


def capture(torch, fn, n: int):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    return g


def replay_s(torch, g, flush: bool = True) -> float:
    """Seconds of one replay of ``g`` timed alone between two events (after an L2 flush, outside the window)."""
    if flush:
        _flush(torch)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e-3


def graph_time(torch, fn, reps: int | None = None) -> tuple[float, int]:
    """Seconds per call of ``fn`` replayed ``reps`` times back to back in a CUDA graph (median of the rule's
    replays), each replay after a flush of L2 (_flush) and timed alone, as a model's replay is."""
    warm(torch, fn)
    g = None
    if reps is None:                 # a pilot of MIN_REPS sizes the replay; a long call's pilot is the replay
        g = capture(torch, fn, common.MIN_REPS)
        g.replay()
        reps = common.reps_for_time(replay_s(torch, g) / common.MIN_REPS)
        g = g if reps == common.MIN_REPS else None
    if g is None:
        g = capture(torch, fn, reps)
        g.replay()
    return float(np.median([replay_s(torch, g) for _ in range(common.point_rule().min_samples)])) / reps, reps


def check_close(got_want, what: str, tol: float = 2e-2) -> None:
    got, want = got_want
    err = float((got - want).abs().max() / want.abs().max().clamp_min(1e-6))
    if not np.isfinite(err) or err > tol:
        raise AssertionError(f"{what}: max relative error {err:.3g} > {tol}")


def sweep(ctx, torch, cases: list[dict], measure, metric: str, what: str, rows: list[dict], measured=None):
    """Time every case (``measure(**case)``) into ``rows``; a case that fails is an error record, the rest go on.
    Cases interpolation predicts within 2% (hwprobe.predict.prune) are left out, not in quick runs. ``measured``:
    a function of the cases giving (case, seconds or the exception it raised) in their place (library_workers)."""
    from hwprobe.calibration import point_metric
    from hwprobe.probes.calibration.pruned import point_key, pruned

    if not ctx.quick:
        cases = [c for c in cases if point_key(c) not in pruned().conv]
    for case, got in (measured or (lambda cs: _one_by_one(torch, cs, measure)))(cases):
        if isinstance(got, BaseException):
            yield ctx.error(point_metric(metric, **case), what, got)
        else:
            rows.append({**case, "time_s": got})


def _one_by_one(torch, cases: list[dict], measure):
    for case in cases:
        try:
            got = measure(**case)
        except Exception as e:
            got = e
        finally:
            torch.cuda.empty_cache()
        yield case, got
