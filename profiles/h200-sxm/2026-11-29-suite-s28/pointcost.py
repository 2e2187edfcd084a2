"""Issue 33, 28th session: where a conv point's timing phase goes (in one process, as a worker times it)."""
import json
import sys
import time

import numpy as np
import torch

from hwprobe.probes.calibration import common, grids, torch_library as lib, torch_timing as tt

out, step = sys.argv[1], int(sys.argv[2])
torch.backends.cudnn.benchmark = True
cases = grids.conv_cases("fp16")[::step]
rows = []
with torch.inference_mode():
    for c in cases:
        T = {}
        t = time.perf_counter(); lib.conv_search(torch, c); T["search"] = time.perf_counter() - t
        torch.cuda.empty_cache()
        t0 = time.perf_counter()
        with lib.math_mode(torch, c["precision"]):
            call, check = lib.conv_search(torch, c); t1 = time.perf_counter(); T["build"] = t1 - t0
            tt.warm(torch, call); t2 = time.perf_counter(); T["warm"] = t2 - t1
            g = tt.capture(torch, call, common.MIN_REPS); g.replay(); t3 = time.perf_counter(); T["cap1"] = t3 - t2
            reps = common.reps_for_time(tt.replay_s(torch, g) / common.MIN_REPS); t4 = time.perf_counter()
            T["pilot"] = t4 - t3
            if reps != common.MIN_REPS:
                g = tt.capture(torch, call, reps); g.replay()
            t5 = time.perf_counter(); T["cap2"] = t5 - t4
            s = float(np.median([tt.replay_s(torch, g) for _ in range(3)])); t6 = time.perf_counter()
            T["samples"] = t6 - t5
            check(); t7 = time.perf_counter(); T["check"] = t7 - t6
        del g, call, check
        torch.cuda.empty_cache(); t8 = time.perf_counter(); T["empty"] = t8 - t7
        T["total"] = t8 - t0
        rows.append({"case": c, "reps": reps, "per_call_s": s / reps, **{k: round(v * 1e3, 3) for k, v in T.items()}})
json.dump(rows, open(out, "w"))
keys = [k for k in rows[0] if k not in ("case", "reps", "per_call_s")]
print(len(rows), "points; median ms:", {k: round(float(np.median([r[k] for r in rows])), 2) for k in keys})
print("mean ms:", {k: round(float(np.mean([r[k] for r in rows])), 2) for k in keys})
