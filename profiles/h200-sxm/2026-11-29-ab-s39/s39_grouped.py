"""Issue 32, 39th session: torch._grouped_mm at synthetic routings against even rows, over the calibration's six
(experts, N, K) shapes (hwprobe.probes.calibration.grids.GROUPED_SHAPES), to test GroupedTable.routed_time's
tile/roofline scaling beyond the qwen3 GEMMs it was derived from. Routings: counts ~ multinomial(T, p), p ~
Dirichlet(alpha) (alpha 1: skewed, 4 and 16: random routers' spread), from seeds of their own; no model's routing.
Timed as gpu.torch_kernels times its grouped points (torch_timing.graph_time: CUDA graph, L2 flushed, median)."""
import json, sys, time
import numpy as np
import torch
from hwprobe.probes.calibration.grids import GROUPED_SHAPES
from hwprobe.probes.calibration.torch_timing import graph_time

out = open(sys.argv[1], "w")
MEANS = (16, 32, 64, 96, 128, 160, 256, 512, 1024)
ALPHAS = (None, 1.0, 4.0, 16.0)
rng = np.random.default_rng(39)
t0 = time.time()
for e, n, k in GROUPED_SHAPES:
    w = torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16).mul_(k ** -0.5)
    wt = w.transpose(-2, -1)
    for mean in MEANS:
        total = e * mean
        x = torch.randn(total, k, device="cuda", dtype=torch.bfloat16)
        for a in ALPHAS:
            if a is None:
                counts = [mean] * e
            else:
                counts = rng.multinomial(total, rng.dirichlet([a] * e)).tolist()
            offs = torch.tensor(np.cumsum(counts), device="cuda", dtype=torch.int32)
            holder = {}
            t, reps = graph_time(torch, lambda: holder.__setitem__("y", torch._grouped_mm(x, wt, offs=offs)))
            g = int(np.argmax(counts)); s = int(np.sum(counts[:g]))
            got = holder["y"][s:s + 2].float(); want = x[s:s + 2].float() @ w[g].float().T
            err = float((got - want).abs().max() / want.abs().max())
            rec = {"experts": e, "n": n, "k": k, "mean": mean, "alpha": a, "counts": counts, "time_s": t,
                   "reps": reps, "rel_err": err}
            out.write(json.dumps(rec) + "\n"); out.flush()
        del x
    del w, wt
    torch.cuda.empty_cache()
    print(f"shape {e}x{n}x{k} done at {time.time() - t0:.1f} s", flush=True)
