"""Issue 32, 39th session, call 4: what sets torch._grouped_mm's time at a routing. (1) shifts: from even rows, d rows
moved from one expert to another (total fixed), the heavy expert first or last; (2) with MODE=ncu, one call of each of
a few routings, for ncu to read DRAM and L2 bytes."""
import json, os, sys
import numpy as np
import torch
from hwprobe.probes.calibration.torch_timing import graph_time

SHAPES = ((8, 28672, 4096), (8, 4096, 14336), (128, 1536, 2048))
def run(e, n, k, counts, w, time=True):
    x = torch.randn(sum(counts), k, device="cuda", dtype=torch.bfloat16)
    offs = torch.tensor(np.cumsum(counts), device="cuda", dtype=torch.int32)
    wt = w.transpose(-2, -1)
    if not time:
        torch._grouped_mm(x, wt, offs=offs); torch.cuda.synchronize(); return None
    h = {}
    t, _ = graph_time(torch, lambda: h.__setitem__("y", torch._grouped_mm(x, wt, offs=offs)))
    return t

if os.environ.get("MODE") == "ncu":
    e, n, k = 8, 28672, 4096
    w = torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16).mul_(k ** -0.5)
    for counts in ([128] * 8, [153, 109, 122, 120, 120, 174, 94, 132], [64] * 8, [96] * 8, [160] * 8,
                   [99, 204, 259, 107, 130, 83, 133, 265], [256] * 8):
        print("routing", counts, flush=True)
        run(e, n, k, counts, w, time=False)
    sys.exit()
out = open(sys.argv[1], "w")
for e, n, k in SHAPES:
    w = torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16).mul_(k ** -0.5)
    for mean in (64, 96, 128, 160, 256, 512):
        for d in (0, 8, 16, 32, 48, 64, 96, 128, 192, 256):
            if d > mean: continue
            for where in ("first", "last"):
                c = [mean] * e
                hi, lo = (0, 1) if where == "first" else (e - 1, e - 2)
                c[hi] += d; c[lo] -= d
                # also: the same extra rows spread, one row-tile's worth (64) on d // 64 experts (only d multiple of 64)
                t = run(e, n, k, c, w)
                out.write(json.dumps({"experts": e, "n": n, "k": k, "mean": mean, "shift": d, "where": where,
                                      "counts": c, "time_s": t}) + "\n"); out.flush()
    for mean in (64, 128, 256):
        for j in range(0, e // 2 + 1, max(1, e // 16)):      # j experts +tile, j experts -tile (same total)
            for tile in (32, 64):
                c = [mean] * e
                for i in range(j):
                    c[i] += tile; c[e - 1 - i] -= tile
                t = run(e, n, k, c, w)
                out.write(json.dumps({"experts": e, "n": n, "k": k, "mean": mean, "pairs": j, "tile_shift": tile,
                                      "counts": c, "time_s": t}) + "\n"); out.flush()
    del w; torch.cuda.empty_cache()
    print("done", e, n, k, flush=True)
