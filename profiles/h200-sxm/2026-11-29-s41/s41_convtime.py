"""Where a conv point's timing-phase time goes (issue 33), in one process: every 8th point of the full grid (all
four precisions), searched, then the worker's "time" request replayed step by step with timers. Then the first 60
points timed again with 5 idle processes holding CUDA contexts (as the pool's waiting workers do)."""
import json, sys, time
import multiprocessing as mp
import numpy as np
import torch
from hwprobe.probes.calibration import grids, torch_library as lib, torch_timing as tt, common
from hwprobe.probes.calibration.pruned import point_key, pruned

T = time.perf_counter
KEYS = ["build", "warm", "cap_pilot", "pilot", "cap", "first_replay", "replays", "check", "free"]


def sync():
    torch.cuda.synchronize()


def idle(conn):
    import torch
    torch.cuda.init(); x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
    conn.send("up"); conn.recv()


def time_steps(c):
    r = {}
    with lib.math_mode(torch, c["precision"]):
        t0 = T(); call, check = lib.conv_search(torch, c); sync(); r["build"] = T() - t0
        t0 = T(); tt.warm(torch, call); r["warm"] = T() - t0
        t0 = T(); g = tt.capture(torch, call, common.MIN_REPS); sync(); r["cap_pilot"] = T() - t0
        t0 = T(); g.replay(); p = tt.replay_s(torch, g); r["pilot"] = T() - t0
        reps = common.reps_for_time(p / common.MIN_REPS); r["reps"] = reps
        if reps != common.MIN_REPS:
            t0 = T(); g = tt.capture(torch, call, reps); sync(); r["cap"] = T() - t0
            t0 = T(); g.replay(); sync(); r["first_replay"] = T() - t0
        t0 = T(); s = [tt.replay_s(torch, g) for _ in range(common.point_rule().min_samples)]; r["replays"] = T() - t0
        r["time_s"] = float(np.median(s)) / reps
        t0 = T(); check(); sync(); r["check"] = T() - t0
        t0 = T(); del g, call, check; torch.cuda.empty_cache(); r["free"] = T() - t0
    return r


def summary(rows, what):
    n = len(rows)
    tot = {k: sum(r.get(k, 0) for r in rows) / n * 1e3 for k in KEYS}
    print(what, n, "points; per point ms:", {k: round(v, 2) for k, v in tot.items()},
          "sum", round(sum(tot.values()), 2), flush=True)


def main():
    out = sys.argv[1]
    torch.backends.cudnn.benchmark = True
    cases = [c for p in grids.CONV_PRECISIONS for c in grids.conv_cases(p)]
    cases = [c for c in cases if point_key(c) not in pruned().conv]
    print("points", len(cases), flush=True)
    cases = cases[::8]
    rows = []
    with torch.inference_mode():
        for c in cases:
            with lib.math_mode(torch, c["precision"]):
                t0 = T(); lib.conv_search(torch, c); sync(); s = T() - t0
                torch.cuda.empty_cache()
            r = {**c, "search": s, **time_steps(c)}
            rows.append(r)
        summary(rows, "alone")
        print("search ms/pt", round(sum(r["search"] for r in rows) / len(rows) * 1e3, 1), flush=True)
        ctx = mp.get_context("spawn"); procs = []
        for _ in range(5):
            a, b = ctx.Pipe(); p = ctx.Process(target=idle, args=(b,), daemon=True); p.start(); procs.append((a, p))
        for a, _ in procs:
            a.recv()
        again = [{**c, **time_steps(c)} for c in cases[:60]]
        summary(rows[:60], "alone, first 60")
        summary(again, "beside 5 idle contexts")
        for a, p in procs:
            a.send(None); p.join()
        third = [{**c, **time_steps(c)} for c in cases[:60]]
        summary(third, "alone again")
    json.dump({"rows": rows, "idle5": again, "alone_again": third}, open(out, "w"))


if __name__ == "__main__":
    main()
