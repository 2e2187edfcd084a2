"""Issue 33, 35th session: where a conv point's timing phase goes, and why idle worker processes slow it.

    python3 .ab/s35_conv.py OUT.json [every]

Every ``every``-th conv point the suite measures (FP16 and BF16, pruned points left out). In this process: each
point searched once (untimed), then timed as a worker times it, stage by stage (s28_pointcost's stages), in passes:
  A   no other CUDA context on the GPU, the allocator's cache emptied after each point (as the workers do);
  B   five idle processes holding CUDA contexts (each has run one cuDNN conv, as a worker has), cache emptied;
  C   the five idle, the cache kept;
  D   none idle, the cache kept;
  A2  A again (drift).
Beside each pass, micro timings: a 180-MB allocation and its release, an event round trip, a 128-node graph's
capture and instantiation. Then the real pool (library_workers.measuring) over the same points with 6 and 2 workers.
"""
import json
import multiprocessing as mp
import sys
import time

import numpy as np


def idle(conn):
    import torch

    torch.cuda.set_device(0)
    torch.backends.cudnn.benchmark = True
    x = torch.randn(1, 16, 32, 32, device="cuda", dtype=torch.float16)
    w = torch.randn(16, 16, 3, 3, device="cuda", dtype=torch.float16)
    torch.nn.functional.conv2d(x, w, padding=1)
    torch.cuda.synchronize()
    conn.send("ready")
    conn.recv()


def main():
    import torch

    from hwprobe.probes.calibration import common, grids, library_workers
    from hwprobe.probes.calibration import torch_library as lib
    from hwprobe.probes.calibration import torch_timing as tt
    from hwprobe.probes.calibration.pruned import point_key, pruned

    out, every = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8
    torch.backends.cudnn.benchmark = True
    cases = [c for p in ("fp16", "bf16") for c in grids.conv_cases(p) if point_key(c) not in pruned().conv][::every]
    sync, pc = torch.cuda.synchronize, time.perf_counter
    res = {"points": len(cases), "torch": torch.__version__, "passes": {}, "micro": {}, "pool": {}}
    print(len(cases), "points", flush=True)

    with torch.inference_mode():
        t = pc()
        for c in cases:
            with lib.math_mode(torch, c["precision"]):
                lib.conv_search(torch, c)
            torch.cuda.empty_cache()
        res["search_in_process_s"] = pc() - t
        print("searched", round(res["search_in_process_s"], 1), "s", flush=True)

        def micro():
            m = {}
            sync(); t = pc()
            for _ in range(30):
                a = torch.empty(180 << 20, dtype=torch.uint8, device="cuda")
                a = None
                torch.cuda.empty_cache()
            sync(); m["alloc_free_ms"] = (pc() - t) / 30 * 1e3
            x = torch.ones(1024, device="cuda")
            t = pc()
            for _ in range(300):
                e = torch.cuda.Event()
                x.add_(1)
                e.record()
                e.synchronize()
            m["event_roundtrip_us"] = (pc() - t) / 300 * 1e6
            sync(); t = pc()
            for _ in range(20):
                g = torch.cuda.CUDAGraph()
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    x.add_(1)
                sync()
                with torch.cuda.graph(g):
                    for _ in range(128):
                        x.add_(1)
                g.replay()
                sync()
                g = None
            m["graph128_ms"] = (pc() - t) / 20 * 1e3
            return {k: round(v, 3) for k, v in m.items()}

        def stage_pass(keep):
            rows = []
            for c in cases:
                T = {}
                sync(); t0 = pc()
                with lib.math_mode(torch, c["precision"]):
                    call, check = lib.conv_search(torch, c); sync(); t1 = pc(); T["build"] = t1 - t0
                    tt.warm(torch, call); t2 = pc(); T["warm"] = t2 - t1
                    g = tt.capture(torch, call, common.MIN_REPS); g.replay(); sync(); t3 = pc(); T["cap1"] = t3 - t2
                    reps = common.reps_for_time(tt.replay_s(torch, g) / common.MIN_REPS); t4 = pc()
                    T["pilot"] = t4 - t3
                    if reps != common.MIN_REPS:
                        g = tt.capture(torch, call, reps); g.replay(); sync()
                    t5 = pc(); T["cap2"] = t5 - t4
                    s = float(np.median([tt.replay_s(torch, g) for _ in range(3)])); t6 = pc()
                    T["samples"] = t6 - t5
                    check(); sync(); t7 = pc(); T["check"] = t7 - t6
                del g, call, check
                if not keep:
                    torch.cuda.empty_cache()
                sync(); t8 = pc(); T["empty"] = t8 - t7
                T["total"] = t8 - t0
                rows.append({"reps": reps, "per_call_s": s / reps, **{k: round(v * 1e3, 3) for k, v in T.items()}})
            torch.cuda.empty_cache()
            keys = [k for k in rows[0] if k not in ("reps", "per_call_s")]
            summ = {k: {"median": round(float(np.median([r[k] for r in rows])), 3),
                        "mean": round(float(np.mean([r[k] for r in rows])), 3)} for k in keys}
            return rows, summ

        procs = []

        def start_idle(n):
            ctx = mp.get_context("spawn")
            for _ in range(n):
                a, b = ctx.Pipe()
                p = ctx.Process(target=idle, args=(b,), daemon=True)
                p.start()
                procs.append((a, p))
            for a, _ in procs:
                a.recv()

        def stop_idle():
            for a, p in procs:
                a.send(None)
                p.join(10)
            procs.clear()

        for name, n_idle, keep in (("A", 0, False), ("B", 5, False), ("C", 5, True), ("D", 0, True), ("A2", 0, False)):
            if n_idle:
                start_idle(n_idle)
            res["micro"][name] = micro()
            rows, summ = stage_pass(keep)
            res["passes"][name] = {"idle": n_idle, "keep_cache": keep, "summary": summ, "rows": rows}
            print(name, "idle", n_idle, "keep", keep, "micro", res["micro"][name],
                  "mean ms", {k: v["mean"] for k, v in summ.items()}, flush=True)
            if n_idle:
                stop_idle()

    # the real pool over the same points, fresh workers each time
    for workers in (6, 2):
        with library_workers.measuring(torch, workers) as measured:
            t = pc()
            got = list(measured(cases, "conv"))
            wall = pc() - t
            errs = [str(g) for _, g in got if isinstance(g, BaseException)]
            ph = measured.phases["conv"]
        res["pool"][workers] = {"wall_s": round(wall, 2), **{k: round(v, 2) for k, v in ph.items()},
                                "time_ms_per_point": round(ph["time_s"] / len(cases) * 1e3, 2), "errors": errs[:5],
                                "n_errors": len(errs)}
        print("pool", workers, res["pool"][workers], flush=True)
    json.dump(res, open(out, "w"))


if __name__ == "__main__":
    main()
