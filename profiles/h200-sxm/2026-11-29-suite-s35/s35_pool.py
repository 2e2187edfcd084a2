"""Issue 33, 35th session: the conv pool's timing phase per point, with the check in the search (library_workers
.answer, new) against without (the loop as it was), on every ``every``-th point the suite measures, 6 workers.

    python3 .ab/s35_pool.py OUT.json [every]

Runs new, old, new with a driver JIT cache per worker, new: each on an empty driver JIT cache (CUDA_CACHE_PATH
fresh; shared by the workers but in the third run). Per point: the parent's wall from asking a worker to time it to its answer, the worker, and
whether it was that worker's first point of its search kind in the timing phase."""
import json
import sys
import time

import numpy as np


def old_serve(conn, device):
    """library_workers._serve as it was at 058236d: a search makes the first call only."""
    import signal

    import torch

    from hwprobe.probes.calibration import torch_library as lib

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.backends.cudnn.version()
    msg = conn.recv()
    if msg is None:
        return
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True
    with torch.inference_mode():
        while msg is not None:
            op, family, case = msg
            fam = lib.SEARCH_FAMILIES[family]
            try:
                searched = fam.search(torch, case)
                conn.send(("ok", None if op == "search" else fam.time(torch, case, searched)))
            except Exception as e:
                conn.send(("error", RuntimeError(f"{type(e).__name__}: {e}")))
            finally:
                searched = None
                torch.cuda.empty_cache()
            msg = conn.recv()


def perworker_serve(conn, device):
    """library_workers._serve with this worker's own driver JIT cache (a lock on a shared one would cap searches)."""
    import os

    os.environ["CUDA_CACHE_PATH"] = os.path.join(os.environ["CUDA_CACHE_PATH"], str(os.getpid()))
    from hwprobe.probes.calibration import library_workers

    library_workers._serve(conn, device)


def main():
    import os

    import torch

    from hwprobe.probes.calibration import grids, library_workers
    from hwprobe.probes.calibration.pruned import point_key, pruned

    out, every = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cases = [c for p in ("fp16", "bf16") for c in grids.conv_cases(p) if point_key(c) not in pruned().conv][::every]
    print(len(cases), "points", flush=True)
    log = []
    ask0, answer0 = library_workers.Pool.ask, library_workers.Pool.answer

    def ask(self, i, msg):
        if msg and msg[0] == "time":
            log.append({"w": i, "t0": time.perf_counter(), "kind": str(library_workers.search_kind("conv", msg[2]))})
        return ask0(self, i, msg)

    def answer(self, i):
        got = answer0(self, i)
        if log and "t1" not in log[-1] and log[-1]["w"] == i:
            log[-1]["t1"] = time.perf_counter()
        return got

    library_workers.Pool.ask, library_workers.Pool.answer = ask, answer
    res = {"points": len(cases), "runs": []}
    runs = (("new", library_workers._serve), ("old", old_serve), ("new_jit_per_worker", perworker_serve),
            ("new", library_workers._serve))
    for n, (name, serve) in enumerate(runs):
        log.clear()
        os.environ["CUDA_CACHE_PATH"] = f"/tmp/s35_jit/{n}"
        os.makedirs(os.environ["CUDA_CACHE_PATH"], exist_ok=True)
        t = time.perf_counter()
        with library_workers.measuring(torch, 6, serve) as measured:
            got = list(measured(cases, "conv"))
            ph = dict(measured.phases["conv"])
        wall = time.perf_counter() - t
        seen, rows = set(), []
        for r in log:
            first = (r["w"], r["kind"]) not in seen
            seen.add((r["w"], r["kind"]))
            rows.append({"w": r["w"], "ms": round((r["t1"] - r["t0"]) * 1e3, 3), "first_of_kind": first})
        ms = np.array([r["ms"] for r in rows])
        fk = np.array([r["first_of_kind"] for r in rows])
        summ = {"name": name, "wall_s": round(wall, 2), **{k: round(v, 2) for k, v in ph.items()},
                "ms_per_point": round(ph["time_s"] / len(cases) * 1e3, 2), "median_ms": round(float(np.median(ms)), 2),
                "first_of_kind_n": int(fk.sum()), "first_of_kind_ms_sum": round(float(ms[fk].sum()), 1),
                "first_of_kind_median": round(float(np.median(ms[fk])), 2) if fk.any() else None,
                "rest_median": round(float(np.median(ms[~fk])), 2), "rest_mean": round(float(ms[~fk].mean()), 2),
                "top10_ms": sorted(ms.tolist())[-10:],
                "errors": sum(isinstance(g, BaseException) for _, g in got)}
        print(summ, flush=True)
        res["runs"].append({**summ, "rows": rows})
        json.dump(res, open(out, "w"))


if __name__ == "__main__":
    main()
