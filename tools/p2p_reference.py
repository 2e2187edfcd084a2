"""cudaMemcpyPeerAsync between GPUs 0 and 1: the reference for hwprobe's copy-engine P2P ceilings (device only).

    python3 tools/p2p_reference.py OUT.json [--mib 1024] [--reps 10] [--samples 5]

One way (0->1 and 1->0, each alone) and both ways at once (one stream per GPU, started together), each sample
``reps`` copies of ``mib`` MiB timed by CUDA events after two warm-up copies; the figure is the median sample
(as hwprobe's). Writes {"uni_Bps": {"0->1", "1->0"}, "bi_Bps", "samples", "bytes", "reps"}; bi counts both
directions' bytes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys


def _peer(cp, a: int, b: int) -> None:
    rt = cp.cuda.runtime
    with cp.cuda.Device(a):
        try:
            rt.deviceEnablePeerAccess(b)
        except rt.CUDARuntimeError as e:
            if "AlreadyEnabled" not in str(e) and getattr(e, "status", None) != 704:
                raise


def _copies(cp, st, dst, dd, src, sd, n: int, reps: int) -> None:
    for _ in range(reps):
        cp.cuda.runtime.memcpyPeerAsync(dst.data.ptr, dd, src.data.ptr, sd, n, st.ptr)


def one_way(cp, bufs, streams, a: int, b: int, n: int, reps: int) -> float:
    """Seconds for ``reps`` copies a -> b on a's stream."""
    with cp.cuda.Device(a):
        st = streams[a]
        _copies(cp, st, bufs[b], b, bufs[a], a, n, 2)
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(st)
        _copies(cp, st, bufs[b], b, bufs[a], a, n, reps)
        e.record(st)
        e.synchronize()
        return cp.cuda.get_elapsed_time(s, e) * 1e-3


def both_ways(cp, bufs, back, streams, n: int, reps: int) -> float:
    """Seconds for ``reps`` copies each way at once: 0 -> 1 on GPU 0's stream, 1 -> 0 on GPU 1's, a common start."""
    with cp.cuda.Device(0):
        go, end = cp.cuda.Event(), cp.cuda.Event()
        go.record(streams[0])
    with cp.cuda.Device(1):
        streams[1].wait_event(go)
        _copies(cp, streams[1], back[0], 0, bufs[1], 1, n, reps)
        done1 = cp.cuda.Event(disable_timing=True)
        done1.record(streams[1])
    with cp.cuda.Device(0):
        _copies(cp, streams[0], back[1], 1, bufs[0], 0, n, reps)
        streams[0].wait_event(done1)
        end.record(streams[0])
        end.synchronize()
        return cp.cuda.get_elapsed_time(go, end) * 1e-3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--samples", type=int, default=5)
    a = ap.parse_args(argv)
    import cupy as cp

    if cp.cuda.runtime.getDeviceCount() < 2:
        print("p2p_reference: error: needs two GPUs", file=sys.stderr)
        return 2
    n = a.mib << 20
    _peer(cp, 0, 1)
    _peer(cp, 1, 0)
    bufs, back, streams = {}, {}, {}
    for d in (0, 1):
        with cp.cuda.Device(d):
            bufs[d], back[d] = cp.ones(n, cp.uint8), cp.zeros(n, cp.uint8)
            streams[d] = cp.cuda.Stream(non_blocking=True)
    samples = {"0->1": [], "1->0": [], "bi": []}
    for _ in range(a.samples):
        samples["0->1"].append(n * a.reps / one_way(cp, bufs, streams, 0, 1, n, a.reps))
        samples["1->0"].append(n * a.reps / one_way(cp, bufs, streams, 1, 0, n, a.reps))
        samples["bi"].append(2 * n * a.reps / both_ways(cp, bufs, back, streams, n, a.reps))
    with cp.cuda.Device(1):
        ok = bool((back[1][:: 1 << 20] == 1).all())          # what GPU 0 sent arrived (spot check)
    res = {"uni_Bps": {k: statistics.median(samples[k]) for k in ("0->1", "1->0")},
           "bi_Bps": statistics.median(samples["bi"]), "samples": samples, "bytes": n, "reps": a.reps,
           "checked": ok, "api": "cudaMemcpyPeerAsync"}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps({k: v for k, v in res.items() if k != "samples"}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
