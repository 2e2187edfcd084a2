"""Issue 33: why the conv searches cap at ~23 a second across worker processes. One configuration per process:
  python3 search_scaling.py OUT_JSONL LABEL N_POINTS WORKERS OFFSET
WORKERS 1: the searches in this process, one by one (conv_search), no pool. A stratified sample of the FP16 grid,
OFFSET picking another sample (no shape searched twice in one lease: the driver's JIT cache persists on disk)."""
import json
import os
import sys
import time

import torch

from hwprobe.probes.calibration import grids, library_workers, torch_library


def serve_private_cache(conn, device):
    os.environ["CUDA_CACHE_PATH"] = f"/tmp/jit-{os.getpid()}"
    library_workers._serve(conn, device)


class Sampler:
    """Every 50 ms: the machine's CPU busy fraction (/proc/stat) and each worker thread's state and wait channel."""

    def __init__(self):
        import collections
        import threading
        self.states, self.stop, self.n = collections.Counter(), threading.Event(), 0
        self.t = threading.Thread(target=self.loop, daemon=True)

    def cpu(self):
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(f), f[3] + f[4]

    def loop(self):
        import multiprocessing as mp
        while not self.stop.wait(0.05):
            self.n += 1
            for p in mp.active_children():
                try:
                    for tid in os.listdir(f"/proc/{p.pid}/task"):
                        st = open(f"/proc/{p.pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()[0]
                        wc = open(f"/proc/{p.pid}/task/{tid}/wchan").read().strip() if st != "R" else ""
                        self.states[f"{st} {wc}"] += 1
                except OSError:
                    pass

    def __enter__(self):
        self.c0 = self.cpu()
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        c1 = self.cpu()
        total, idle = c1[0] - self.c0[0], c1[1] - self.c0[1]
        self.busy = 1 - idle / max(total, 1)


def main():
    out, label, n, workers, offset = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    cases = grids.conv_cases("fp16")
    step = max(1, len(cases) // n)
    sample = cases[offset % step::step][:n]
    torch.backends.cudnn.benchmark = True
    t0 = time.perf_counter()
    rec = {"label": label, "workers": workers, "points": len(sample),
           "env": {k: os.environ.get(k) for k in ("CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH", "CUDA_MODULE_LOADING")}}
    if workers == 1:
        smp = Sampler()
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        per = []
        with torch.inference_mode(), smp:
            for c in sample:
                t = time.perf_counter()
                torch_library.conv_search(torch, c)
                torch.cuda.synchronize()
                per.append(time.perf_counter() - t)
                torch.cuda.empty_cache()
        per.sort()
        rec.update(busy=round(smp.busy, 3), search_s=sum(per), median_ms=1e3 * per[len(per) // 2],
                   p90_ms=1e3 * per[int(0.9 * len(per))])
    else:
        serve = serve_private_cache if label.startswith("private") else None
        with torch.inference_mode(), library_workers.measuring(torch, workers, serve) as run:
            it = run(sample)
            with Sampler() as smp:               # the searches are done once the first point is timed
                first = next(it)
            got = [first] + list(it)
        rec.update(busy=round(smp.busy, 3), samples=smp.n, states=dict(smp.states.most_common(12)))
        rec.update(errors=sum(isinstance(v, BaseException) for _, v in got), **run.phases["conv"])
    rec["wall_s"] = time.perf_counter() - t0
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
