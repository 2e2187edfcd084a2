"""gpu.launch: the per-kernel floors a model pays whatever its shapes.

- graph node: an empty kernel replayed back to back in a CUDA graph; the time per node is the least one kernel
  costs inside a replayed model (the launch-dependency gap the GPU leaves between two nodes);
- stream: the same kernels launched one by one from the host into one stream; per launch, the host's issue time
  and the GPU's time between kernels (the larger bounds an eager runtime whose host does nothing else);
- round trip: one launch and a synchronize, the latency of a small kernel seen from the host.

- graph replay: graphs of 1 to 256 empty kernels, each replay timed alone (events around the launch): the fixed
  cost of one replay (host graph launch and start) beside the per-node slope; a model timed one replay at a time
  pays it once.

Results: the profile's calibration curves (hwprobe.calibration) ``launch`` (graph node, host issue, stream and
round trip, in seconds, each the median of repeated samples) and ``launch_replay`` (the fixed cost of a replay).
"""

from __future__ import annotations

import statistics

from hwprobe import calibration as C
from hwprobe.probes.base import probe
from hwprobe.probes.calibration import common
from hwprobe.vocab import Curve

NODES = 1000            # kernels per graph / per host loop
ROUNDS = 7              # repeated samples of each figure


def _graph_node_s(cp, k) -> list[float]:
    from hwprobe.timing import time_cuda

    g = common.graph_of(cp, lambda: k((1,), (32,), ()), NODES)
    return [t / NODES for t in time_cuda(g.launch, warmup=2, repeats=ROUNDS, cp=cp)]


def _graph_replay_s(cp, k) -> tuple[float, float, list[float]]:
    """(fixed seconds per replay, seconds per node, median replay time per size): graphs of 1..256 empty kernels,
    each replay timed alone between two events and synchronized, as a model's replay is timed (the host's graph
    launch is inside the window); a least-squares line through the medians."""
    from hwprobe.timing import time_cuda_once

    stream = cp.cuda.get_current_stream()
    med = []
    for n in common.REPLAY_NODES:
        g = common.graph_of(cp, lambda: k((1,), (32,), ()), n)
        samples = [time_cuda_once(lambda g=g: g.launch(stream), cp) for _ in range(common.REPLAY_SAMPLES)]
        med.append(statistics.median(samples[common.REPLAY_WARM:]))
    return (*common.replay_fit(med), med)


def _stream_s(cp, k) -> tuple[list[float], list[float]]:
    """(host issue seconds per launch, GPU seconds per launch) over NODES launches into one stream."""
    from hwprobe.timing import time_cuda_issue

    def launches() -> None:
        for _ in range(NODES):
            k((1,), (32,), ())

    rounds = [time_cuda_issue(launches, cp) for _ in range(ROUNDS + 1)][1:]   # the first warms the launch path
    return [h / NODES for _, h in rounds], [g / NODES for g, _ in rounds]


def _round_trip_s(cp, k) -> list[float]:
    from hwprobe.timing import time_host

    stream = cp.cuda.get_current_stream()
    return time_host(lambda: (k((1,), (32,), ()), stream.synchronize()), warmup=5, repeats=20 * ROUNDS)


def _finding(ctx, name: str, samples: list[float], text: str):
    med = statistics.median(samples)
    return ctx.derived(C.metric(Curve.LAUNCH, name), med, unit="s", kind="info",
                       params={"samples_s": samples, "median_s": med, "min_s": min(samples), "nodes": NODES},
                       notes=[text])


@probe(name="gpu.launch", target="gpu", family="calibration", ahead=common.ahead,
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
        replay, per_node, replay_med = _graph_replay_s(cp, k)
    except Exception as e:
        yield ctx.error(C.family(Curve.LAUNCH), "empty-kernel launches", e)
        return
    yield _finding(ctx, C.GRAPH_NODE_S, node, f"an empty kernel replayed back to back in a CUDA graph of {NODES}: "
                   "seconds per node")
    yield ctx.derived(C.metric(Curve.LAUNCH_REPLAY), replay, unit="s", kind="info",
                      params={"nodes": list(common.REPLAY_NODES), "replay_s": replay_med, "per_node_s": per_node,
                              "median_s": replay},
                      notes=["fixed cost of one CUDA-graph replay timed alone (events around the launch, then a "
                             "synchronize): the intercept of replay time against node count, 1-256 empty kernels"])
    yield _finding(ctx, C.HOST_ISSUE_S, host, f"host time to issue one launch (CuPy RawKernel, {NODES} in a loop)")
    yield _finding(ctx, C.STREAM_S, gpu, f"GPU time per kernel of {NODES} empty kernels launched one by one into a "
                   "stream (bounded by the host's issue rate)")
    yield _finding(ctx, C.ROUND_TRIP_S, trip, "one empty-kernel launch and a stream synchronize, seen from the host")
