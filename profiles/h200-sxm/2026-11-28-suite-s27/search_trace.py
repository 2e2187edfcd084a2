"""Issue 33: each conv worker's timeline (import, CUDA init, every search) on one sample, a fresh JIT cache.
  python3 search_trace.py OUT_JSONL N_POINTS WORKERS OFFSET [warm]"""
import json
import os
import sys
import time

T0 = time.time()
import torch  # noqa: E402

T_TORCH = time.time()
from hwprobe.probes.calibration import grids, library_workers, torch_library  # noqa: E402

LOG = "/tmp/s27trace"


def serve(conn, device):
    ev = [("import0", T0), ("torch", T_TORCH)]
    orig = torch_library.FIRST_CALLS["conv"]

    def first(torch_, case):
        t = time.time()
        got = orig[0](torch_, case)
        ev.append(("search", t, time.time()))
        return got

    torch_library.FIRST_CALLS["conv"] = (first, orig[1])
    torch.cuda.set_device(device)
    torch.zeros(1, device="cuda")
    ev.append(("cuda", time.time()))
    if os.environ.get("S27_WARM"):
        torch.backends.cudnn.benchmark = True
        with torch.inference_mode():
            for lay in ("nchw", "nhwc"):
                for k, g in ((1, 1), (3, 1), (3, 32)):
                    c = {"k": k, "cin": 32, "cout": 32, "m": 64, "layout": lay, "images": 1, "stride": 1,
                         "groups": g, "precision": "fp16", **({"dw": True} if g == 32 else {})}
                    t = time.time()
                    torch_library.conv_search(torch, c)
                    ev.append(("warm", t, time.time()))
    try:
        library_workers._serve(conn, device)
    finally:
        with open(f"{LOG}/{os.getpid()}.json", "w") as f:
            json.dump(ev, f)


def main():
    out, n, workers, offset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if len(sys.argv) > 5:
        os.environ["S27_WARM"] = "1"
    os.makedirs(LOG, exist_ok=True)
    for f in os.listdir(LOG):
        os.remove(f"{LOG}/{f}")
    cases = grids.conv_cases("fp16")
    step = max(1, len(cases) // n)
    sample = cases[offset % step::step][:n]
    t_start = time.time()
    with torch.inference_mode(), library_workers.measuring(torch, workers, serve) as run:
        got = list(run(sample))
    wall = time.time() - t_start
    time.sleep(1)
    traces = [json.load(open(f"{LOG}/{f}")) for f in sorted(os.listdir(LOG))]
    rec = {"workers": workers, "warm": len(sys.argv) > 5, "t_start": t_start, "wall": wall, **run.phases["conv"],
           "errors": sum(isinstance(v, BaseException) for _, v in got), "traces": traces,
           "keys": [[c["k"], c.get("kw"), c["stride"], c["groups"], c["layout"], c.get("dilation")] for c in sample]}
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print({k: v for k, v in rec.items() if k not in ("traces", "keys")}, flush=True)
    for tr in traces:
        s = [e for e in tr if e[0] == "search"]
        cuda = [e for e in tr if e[0] == 'cuda'][0][1]
        print(f"  torch import {tr[1][1] - tr[0][1]:.1f} s; cuda +{cuda - tr[1][1]:.1f}"
              f"; start->first search {s[0][1] - t_start:.1f}; searches {len(s)}: first three "
              f"{[round(e[2] - e[1], 2) for e in s[:3]]}, sum {sum(e[2] - e[1] for e in s):.1f}, "
              f"last end {s[-1][2] - t_start:.1f}", flush=True)


if __name__ == "__main__":
    main()
