"""Issue 33, next session: why 12 conv workers searched no faster than 8 (2026-11-28 A/B: 1660 points, search
phase 45.2 s with 12 workers, 327 ms of worker time a search against 157 ms alone). A stratified sample of the FP16
grid searched and timed by conv_workers.measuring with N workers, N in argv; per run the phase seconds.
  python3 .ab/pool_scaling.py OUT_JSONL SAMPLE N1 [N2 ...]
  (under py-spy: py-spy record --subprocesses --native -r 50 -f raw -o pool.collapsed -- python3 ...)"""
import json
import sys
import time

import torch

from hwprobe.probes.calibration import conv_workers, grids


def main():
    out, n_sample, counts = open(sys.argv[1], "w"), int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
    cases = grids.conv_cases("fp16")
    step = max(1, len(cases) // n_sample)
    for k, n in enumerate(counts):
        sample = cases[k % step::step][:n_sample]           # another sample per run: no shape is searched twice
        t0 = time.perf_counter()
        with torch.inference_mode(), conv_workers.measuring(torch, n) as run:
            got = list(run(sample))
        errors = sum(isinstance(v, BaseException) for _, v in got)
        out.write(json.dumps({"workers": n, "points": len(sample), "wall_s": time.perf_counter() - t0,
                              "errors": errors, **run.phases}) + "\n")
        out.flush()
        print(n, len(sample), round(time.perf_counter() - t0, 1), run.phases, errors, flush=True)


if __name__ == "__main__":      # spawned workers import this file again
    main()
