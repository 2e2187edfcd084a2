"""50th session: does a process's state move transformers' host under the tp plan? Under torchrun (2 ranks): the
tiny Llama sharded and whole (gpu.tp_host's pair, whole steps a rank at a time) timed fresh, then beside real
models (4 layers, sharded by the plan) whose own decode steps are timed in the same rounds, then with gc frozen,
then after the models are freed. Run: torchrun --nproc-per-node 2 .ab/s50/procstate.py OUT.json"""
import datetime
import gc
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

rank = v.init_tp(torch, 2)
turns = dist.new_group(backend="gloo", timeout=datetime.timedelta(minutes=3))
torch.manual_seed(0)
t0 = time.perf_counter()
sharded, one, check = tp_host.pair(torch, transformers, hf_host.CONFIG, 2, Path("/tmp/ps-tiny"))
with torch.inference_mode():
    k_sh, k_one = hf_host.kernels_per_step(torch, *sharded), hf_host.kernels_per_step(torch, *one)
real: dict = {}
out: dict = {"rank": rank, "check": check, "kernels": {"sharded": k_sh, "one": k_one}, "stages": []}


def stage(tag: str, rounds: int = 6) -> None:
    s, o, r = [], [], {n: [] for n in real}
    with torch.inference_mode():
        for i in range(rounds):
            w = 5 if i == 0 else 0
            s += hf_host.step_seconds(torch, *sharded, 12, 1, w)
            o += hf_host.in_turn(lambda w=w: hf_host.step_seconds(torch, *one, 12, 1, w), turns)
            for n, (st, k) in real.items():
                r[n] += [x / k for x in hf_host.step_seconds(torch, *st, 12, 1, w)]
    sh = [x / k_sh for x in s]
    on = [x / k_one for x in o]
    import numpy as np
    rec = {"stage": tag, "t_s": round(time.perf_counter() - t0, 1), "sharded_us": round(float(np.median(sh)) * 1e6, 2),
           "one_us": round(float(np.median(on)) * 1e6, 2),
           "ratio": round(float(np.median([a / b for a, b in zip(sh, on)])), 3),
           "ratio_rounds": [round(a / b, 3) for a, b in zip(sh, on)],
           "real_us": {n: round(float(np.median(x)) * 1e6, 2) for n, x in r.items()},
           "real_over_tiny_sharded": {n: round(float(np.median([a / b for a, b in zip(x, sh)])), 3) for n, x in r.items()},
           "gc_objects": len(gc.get_objects())}
    out["stages"].append(rec)
    if rank == 0:
        print(json.dumps(rec), flush=True)


stage("fresh")
configs = v.load_configs("tests/data/llm_configs/llama-3.2-1b.json,tests/data/llm_configs/phi-3-mini-4k-instruct.json", 4)
models = {}
for name, c in configs.items():
    d = c["config"]
    cfg = transformers.AutoConfig.for_model(**d)
    models[name] = hf_host.tp_model(torch, cfg, 2, Path("/tmp/ps-" + name))
    with torch.inference_mode():
        st = hf_host.decoder(torch, transformers, d, model=models[name], tp=2)
        real[name] = (st, hf_host.kernels_per_step(torch, *st))
    stage(f"with {', '.join(real)}")
gc.freeze()
stage("gc frozen")
gc.unfreeze()
real.clear()
models.clear()
gc.collect()
torch.cuda.empty_cache()
stage("freed")
stage("freed again")
out["kernels"].update({n: k for n, (_, k) in real.items()})
if rank == 0:
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1))
dist.destroy_process_group()
