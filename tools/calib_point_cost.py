#!/usr/bin/env python3
"""Where a calibration point of gpu.torch_kernels' library half spends its wall time (issue 33), on the GPU.

    python3 tools/calib_point_cost.py [--every 12] [--json OUT.json]

Times a sample of the conv, linear and SDPA grids (every ``--every``-th point the suite would measure, FP16 and
FP32) through the probe's own code, with each step wrapped in a synchronized timer: the weight copies, the first
call (cuDNN's or cuBLAS's algorithm search), the rest of the warm-up, the graph captures, the timed replays, the
FP32 reference and its check, and the allocator's cache release. ``other`` is the point's wall time less those.
It imports hwprobe from sys.path, so PYTHONPATH picks which tree's method is profiled. Exit 2 without CUDA torch.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
import time
from pathlib import Path

PHASES = ("copies", "first_call", "warm_rest", "capture", "replays", "reference", "empty_cache", "other")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=12, help="profile every n-th point of each grid (default 12)")
    ap.add_argument("--json", type=Path, help="write the per-family table here")
    ap.add_argument("--keep-cache", action="store_true",
                    help="do not release the allocator's cache between points (what that release costs)")
    a = ap.parse_args(argv)
    if a.every < 1:
        print("calib_point_cost: --every must be 1 or more", file=sys.stderr)
        return 2
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no CUDA device")
    except ImportError as e:
        print(f"calib_point_cost: needs PyTorch with CUDA ({e})", file=sys.stderr)
        return 2
    from hwprobe.probes.calibration import grids
    from hwprobe.probes.calibration import torch_library as L
    from hwprobe.probes.calibration import torch_timing as T
    from hwprobe.probes.calibration.pruned import point_key, pruned

    acc: dict[str, float] = collections.defaultdict(float)

    def timed(name, fn):
        def wrapper(*args, **kw):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                torch.cuda.synchronize()
                acc[name] += time.perf_counter() - t0
        return wrapper

    warm = T.warm

    def warm_split(torch_, fn, calls: int = 2):
        timed("first_call", fn)()
        timed("warm_rest", warm)(torch_, fn, max(1, calls - 1))

    T.warm = warm_split
    T.capture = timed("capture", T.capture)
    T.replay_s = timed("replays", T.replay_s)
    L.param_copies = timed("copies", L.param_copies)
    precision_mode = L.math_mode

    @contextlib.contextmanager
    def reference_timer(*_args):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with (getattr(T, "reference_mode", None) or (lambda t: precision_mode(t, "fp32")))(torch):
            yield
        torch.cuda.synchronize()
        acc["reference"] += time.perf_counter() - t0

    L.reference_mode = L.math_mode = reference_timer   # the old tree checks under math_mode(torch, "fp32")
    torch.backends.cudnn.benchmark = True
    families = {
        "conv": [(p, c) for p in ("fp16", "fp32") for c in grids.conv_cases(p) if point_key(c) not in pruned().conv],
        "linear": [(p, c) for p in ("fp16", "fp32") for c in grids.linear_cases(p)
                   if point_key(c) not in pruned().conv],
        "sdpa": [(p, c) for p in ("fp16", "fp32") for c in grids.sdpa_cases(p) if point_key(c) not in pruned().conv],
    }
    measure = {"conv": lambda p, c: L._conv_point(torch, **c),
               "linear": lambda p, c: L._linear_point(torch, p, **c),
               "sdpa": lambda p, c: L._sdpa_point(torch, **c)}
    table = {}
    for fam, cases in families.items():
        sample = cases[::a.every]
        acc.clear()
        wall, times = 0.0, []
        for prec, case in sample:
            t0 = time.perf_counter()
            with precision_mode(torch, prec):
                times.append(measure[fam](prec, case))
            if not a.keep_cache:
                timed("empty_cache", torch.cuda.empty_cache)()
            wall += time.perf_counter() - t0
        n = max(1, len(sample))
        row = {ph: 1e3 * acc.get(ph, 0.0) / n for ph in PHASES[:-1]}
        row["other"] = 1e3 * wall / n - sum(row.values())
        table[fam] = {"points_sampled": len(sample), "points_in_grid": len(cases), "ms_per_point": row,
                      "wall_ms_per_point": 1e3 * wall / n, "point_times_s": times}
        print(f"{fam:7s} {len(sample):4d} of {len(cases):5d} points, {1e3 * wall / n:7.1f} ms/point: "
              + " ".join(f"{k} {v:.1f}" for k, v in row.items()), flush=True)
    if a.json:
        a.json.write_text(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                                      "every": a.every, "keep_cache": a.keep_cache, "families": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
