"""50th session, call 6: the lent host's two speeds under tp. Under torchrun (2 ranks), hf_host's tiny Llama
sharded by the plan and whole (gpu.tp_host's pair); every step timed (CUDA events around the host's issue, as
hf_host.event_times) with the CPU the rank ran on (sched_getcpu) at its start and end:
  A  whole step, rank 0 alone (rank 1 asleep on a gloo barrier), 300 steps, then rank 1 alone
  B  whole step, both ranks at once, 300 steps
  C  sharded step, both ranks, 300 steps
  D  gpu.tp_host's pattern: sharded 12, whole 12 a rank at a time, ten rounds
Run: torchrun --nproc-per-node 2 .ab/s50/twospeed.py OUT.json"""
import ctypes
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, "tools")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402
import validate_hf_llm as v  # noqa: E402

from hwprobe.probes.calibration import hf_host, tp_host  # noqa: E402

libc = ctypes.CDLL("libc.so.6")
rank = v.init_tp(torch, 2)
turns = dist.new_group(backend="gloo", timeout=datetime.timedelta(minutes=3))
sharded, one, check = tp_host.pair(torch, transformers, hf_host.CONFIG, 2, Path("/tmp/ts-tiny"))
with torch.inference_mode():
    k = {"sharded": hf_host.kernels_per_step(torch, *sharded), "one": hf_host.kernels_per_step(torch, *one)}
t0 = time.perf_counter()


def steps(which: str, n: int) -> list:
    step, restore = sharded if which == "sharded" else one
    out = []
    with torch.inference_mode():
        for _ in range(3):
            restore()
            step()
        torch.cuda.synchronize()
        for _ in range(n):
            restore()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            c0, w0 = libc.sched_getcpu(), time.perf_counter() - t0
            a.record()
            step()
            b.record()
            torch.cuda.synchronize()
            out.append([round(w0, 4), c0, libc.sched_getcpu(), round(a.elapsed_time(b) * 1e3 / k[which], 2)])
    return out


res = {"rank": rank, "kernels": k, "check": check, "threads": torch.get_num_threads()}
res["A"] = hf_host.in_turn(lambda: steps("one", 300), turns)
dist.barrier(group=turns)
res["B"] = steps("one", 300)
dist.barrier(group=turns)
res["C"] = steps("sharded", 300)
dist.barrier(group=turns)
res["D"] = []
for r in range(10):
    res["D"].append({"sharded": steps("sharded", 12), "one": hf_host.in_turn(lambda: steps("one", 12), turns)})
objs = [None] * 2
dist.all_gather_object(objs, res, group=turns)
if rank == 0:
    Path(sys.argv[1]).write_text(json.dumps(objs))
    import numpy as np
    for r in objs:
        for key in "ABC":
            x = np.array([s[3] for s in r[key]])
            cpus = sorted({s[1] for s in r[key]})
            print(r["rank"], key, "us/kernel p10 %.1f p50 %.1f p90 %.1f" % tuple(np.percentile(x, [10, 50, 90])),
                  "cpus", cpus[:12], flush=True)
dist.destroy_process_group()
