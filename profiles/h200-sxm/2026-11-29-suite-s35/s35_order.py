"""Issue 33, 35th session: the conv pool's timing phase with each worker's points timed together
(library_workers.timing_order) against the sweep's order (a process switch at nearly every point), 6 workers, on
every ``every``-th point the suite measures. Runs grouped, sweep, grouped, sweep, each with fresh workers.

    python3 .ab/s35_order.py OUT.json [every]

Per run: the timing phase's seconds, the parent's wall per point; per point the time measured (to see whether the
order changes what is measured)."""
import json
import sys
import time

import numpy as np


def main():
    import torch

    from hwprobe.probes.calibration import grids, library_workers
    from hwprobe.probes.calibration.pruned import point_key, pruned

    out, every = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cases = [c for p in ("fp16", "bf16") for c in grids.conv_cases(p) if point_key(c) not in pruned().conv][::every]
    print(len(cases), "points", flush=True)
    grouped = library_workers.timing_order
    res = {"points": len(cases), "runs": []}
    for name in ("grouped", "sweep", "grouped", "sweep"):
        library_workers.timing_order = grouped if name == "grouped" else (lambda owner: sorted(owner))
        t = time.perf_counter()
        with library_workers.measuring(torch, 6) as measured:
            got = list(measured(cases, "conv"))
            ph = dict(measured.phases["conv"])
        wall = time.perf_counter() - t
        assert [c for c, _ in got] == cases
        times = [None if isinstance(g, BaseException) else g for _, g in got]
        summ = {"name": name, "wall_s": round(wall, 2), **{k: round(v, 2) for k, v in ph.items()},
                "ms_per_point": round(ph["time_s"] / len(cases) * 1e3, 2),
                "errors": sum(t is None for t in times)}
        print(summ, flush=True)
        res["runs"].append({**summ, "times": times})
        json.dump(res, open(out, "w"))
    g = np.array([[t or np.nan for t in r["times"]] for r in res["runs"]])
    ratio = (g[0] + g[2]) / (g[1] + g[3])
    same = g[2] / g[0]
    print("grouped / sweep per point: median %.4f, p10 %.4f, p90 %.4f; grouped run 2 / run 1: median %.4f, p10 %.4f,"
          " p90 %.4f" % (np.nanmedian(ratio), np.nanpercentile(ratio, 10), np.nanpercentile(ratio, 90),
                         np.nanmedian(same), np.nanpercentile(same, 10), np.nanpercentile(same, 90)), flush=True)


if __name__ == "__main__":
    main()
