"""48th session: where a compiled tp-2 decode step's time goes (run under torchrun, 2 ranks).
Per model (4 layers, 16 x 2048): the step timed as validate_hf_llm times it (a 2M-cycle sleep first), with a
10M-cycle sleep, back to back (20 steps queued, no sync between: generate's loop), and the host's issue time of one
call (perf_counter, no sync) on each rank. Also hf (graph replay) for reference."""
import json
import os
import sys
import time

sys.path.insert(0, "tools")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import validate_hf_llm as v  # noqa: E402

rank = v.init_tp(torch, 2)
torch.backends.cuda.matmul.allow_tf32 = False
D = "tests/data/llm_configs/"
out = {}
for name in ("mistral-7b-v0.3", "qwen2.5-7b", "llama-3.2-1b", "gemma-2-9b"):
    d = v.load_configs(D + name + ".json", 4)[name]["config"]
    b = v.Bench(d, 20, 3, tp=2)
    res = {}
    for rt in ("hf-compiled", "hf"):
        with torch.inference_mode():
            call, reset, _, _ = b.step(rt, "decode", 16, 2048)
            r = {}
            for cyc in (2_000_000, 10_000_000):
                ts = []
                for _ in range(20):
                    reset()
                    dist.barrier()
                    a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda._sleep(cyc)
                    a.record()
                    call()
                    e.record()
                    torch.cuda.synchronize()
                    ts.append(a.elapsed_time(e) * 1e-3)
                r[f"sleep{cyc // 1_000_000}M_med_s"] = sorted(ts)[10]
            host = []
            for _ in range(20):
                reset()
                torch.cuda.synchronize()
                dist.barrier()
                t0 = time.perf_counter()
                call()
                host.append(time.perf_counter() - t0)
                torch.cuda.synchronize()
            r["host_issue_med_s"] = sorted(host)[10]
            reset()
            torch.cuda.synchronize()
            dist.barrier()
            a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(2_000_000)
            a.record()
            for _ in range(20):
                reset()
                call()
            e.record()
            torch.cuda.synchronize()
            r["back_to_back_s"] = a.elapsed_time(e) * 1e-3 / 20
            res[rt] = r
    allr = [None, None]
    dist.all_gather_object(allr, res)
    out[name] = allr
    if rank == 0:
        print(name, json.dumps(allr), flush=True)
    del b
    torch.cuda.empty_cache()
if rank == 0:
    json.dump(out, open(os.environ.get("DIAG_OUT", "/tmp/tpdiag.json"), "w"), indent=1)
dist.destroy_process_group()
