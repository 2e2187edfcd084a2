"""gpu.launch: the per-kernel floors a model pays whatever its shapes.

- graph node: an empty kernel replayed back to back in a CUDA graph; the time per node is the least one kernel
  costs inside a replayed model (the launch-dependency gap the GPU leaves between two nodes);
- stream: the same kernels launched one by one from the host into one stream; per launch, the host's issue time
  and the GPU's time between kernels (the larger bounds an eager runtime whose host does nothing else);
- round trip: one launch and a synchronize, the latency of a small kernel seen from the host.

Results: findings ``predict.launch.graph_node_s``, ``predict.launch.host_issue_s``, ``predict.launch.stream_s``
and ``predict.launch.round_trip_s`` (seconds), each from the median of repeated samples.
"""

from __future__ import annotations

import statistics
import time

from hwprobe.probes.base import probe
from hwprobe.probes.calibration import common

NODES = 1000            # kernels per graph / per host loop
ROUNDS = 7              # repeated samples of each figure


def _graph_node_s(cp, k) -> list[float]:
    from hwprobe.timing import time_cuda

    g = common.graph_of(cp, lambda: k((1,), (32,), ()), NODES)
    return [t / NODES for t in time_cuda(g.launch, warmup=2, repeats=ROUNDS, cp=cp)]


def _stream_s(cp, k) -> tuple[list[float], list[float]]:
    """(host issue seconds per launch, GPU seconds per launch) over NODES launches into one stream."""
    stream = cp.cuda.get_current_stream()
    host, gpu = [], []
    for _ in range(ROUNDS + 1):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        t0 = time.perf_counter()
        for _ in range(NODES):
            k((1,), (32,), ())
        host.append((time.perf_counter() - t0) / NODES)
        stop.record(stream)
        stop.synchronize()
        gpu.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3 / NODES)
    return host[1:], gpu[1:]           # the first round warms the launch path


def _round_trip_s(cp, k) -> list[float]:
    stream = cp.cuda.get_current_stream()
    out = []
    for i in range(20 * ROUNDS + 5):
        t0 = time.perf_counter()
        k((1,), (32,), ())
        stream.synchronize()
        if i >= 5:
            out.append(time.perf_counter() - t0)
    return out


def _finding(ctx, name: str, samples: list[float], text: str):
    med = statistics.median(samples)
    return ctx.derived(f"predict.launch.{name}", med, unit="s", kind="info",
                       params={"samples_s": samples, "median_s": med, "min_s": min(samples), "nodes": NODES},
                       notes=[text])


@probe(name="gpu.launch", target="gpu", family="calibration",
       summary="Prediction calibration: per-kernel floors (CUDA graph node, host launch into a stream, round trip)")
def run(ctx):
    import cupy as cp

    try:
        k = common.kernel("empty_kernel")
        k((1,), (32,), ())
        cp.cuda.get_current_stream().synchronize()
        node = _graph_node_s(cp, k)
        host, gpu = _stream_s(cp, k)
        trip = _round_trip_s(cp, k)
    except Exception as e:
        yield ctx.error("predict.launch", "empty-kernel launches", e)
        return
    yield _finding(ctx, "graph_node_s", node, f"an empty kernel replayed back to back in a CUDA graph of {NODES}: "
                   "seconds per node")
    yield _finding(ctx, "host_issue_s", host, f"host time to issue one launch (CuPy RawKernel, {NODES} in a loop)")
    yield _finding(ctx, "stream_s", gpu, f"GPU time per kernel of {NODES} empty kernels launched one by one into a "
                   "stream (bounded by the host's issue rate)")
    yield _finding(ctx, "round_trip_s", trip, "one empty-kernel launch and a stream synchronize, seen from the host")
