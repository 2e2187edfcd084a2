"""Issue 33, 28th session: the conv search phase with kind affinity (plan_queues) against the next free worker.
  python3 s28_affinity.py OUT_JSONL LABEL WORKERS STEP [next]
A sample (every STEP-th case of the FP16 and TF32 conv grids, as `full` sweeps them), CHUNK chunks; each worker logs
its searches' seconds; run each config in a fresh process with its own empty CUDA_CACHE_PATH."""
import json
import os
import sys
import time

import torch

from hwprobe.probes.calibration import grids, library_workers, torch_library

LOG = "/tmp/s28aff"


def serve(conn, device):
    import time as _t
    orig = torch_library.FIRST_CALLS["conv"]
    ev = []

    def first(torch_, case):
        t = _t.perf_counter()
        got = orig[0](torch_, case)
        ev.append([repr(torch_library.conv_kind(case)), _t.perf_counter() - t])
        return got

    torch_library.FIRST_CALLS["conv"] = (first, orig[1])
    try:
        library_workers._serve(conn, device)
    finally:
        with open(f"{LOG}/{os.getpid()}.json", "w") as f:
            json.dump(ev, f)


def main():
    out, label, workers, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    nxt = len(sys.argv) > 5
    os.makedirs(LOG, exist_ok=True)
    for f in os.listdir(LOG):
        os.remove(f"{LOG}/{f}")
    sweeps = [grids.conv_cases(p)[::step] for p in ("fp16", "tf32")]
    torch.zeros(1, device="cuda")
    pool = library_workers.Pool(workers, 0, serve)
    t0 = time.perf_counter()
    chunks = []
    for cases in sweeps:
        for s in range(0, len(cases), library_workers.CHUNK):
            chunk = cases[s:s + library_workers.CHUNK]
            kinds = [None if nxt else torch_library.conv_kind(c) for c in chunk]
            t = time.perf_counter()
            owner, failed = pool.search("conv", chunk, kinds=kinds)
            chunks.append({"n": len(chunk), "s": round(time.perf_counter() - t, 2), "failed": len(failed),
                           "workers_used": len(set(owner.values()))})
    total = time.perf_counter() - t0
    pool.close()
    time.sleep(0.5)
    evs = [json.load(open(f"{LOG}/{f}")) for f in sorted(os.listdir(LOG))]
    pairs = sum(len({k for k, _ in ev}) for ev in evs)
    rec = {"label": label, "workers": workers, "points": sum(map(len, sweeps)), "search_s": round(total, 2),
           "chunks": chunks, "worker_search_s": [round(sum(d for _, d in ev), 1) for ev in evs],
           "worker_kind_pairs": pairs, "kinds": len({k for ev in evs for k, _ in ev}), "events": evs}
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print({k: v for k, v in rec.items() if k != "events"}, flush=True)


if __name__ == "__main__":
    main()
