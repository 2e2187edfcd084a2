"""s47: transformers' host time per kernel by family. Per model (4 layers): the real config's hf-compiled prefill at
1x512 and 1x2048 (op by op, host in the interval) and its GPU-only time; a tiny model of the same family (hidden 64,
its traits kept): an eager decode step over a DynamicCache (as hf_host times the tiny Llama) and a static-cache
prefill of 64 tokens; hf_host's tiny Llama read before and after each. Usage: fam_host.py OUT.json [ROUNDS]"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import numpy as np
import torch
import transformers
import validate_hf_llm as v
from hwprobe.probes.calibration import hf_host

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "llm_configs"
MODELS = ["llama-3.2-1b", "qwen2.5-7b", "qwen3-8b", "mistral-7b-v0.3", "gemma-2-9b", "phi-3-mini-4k-instruct",
          "gemma-7b", "qwen2.5-0.5b", "llama-2-7b", "mixtral-8x7b", "qwen1.5-moe-a2.7b", "qwen3-30b-a3b"]
out_path, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2

def tiny(d):
    t = dict(d)
    mha = int(d.get("num_key_value_heads") or d["num_attention_heads"]) == int(d["num_attention_heads"])
    t.update(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=4 if mha else 2,
             head_dim=16, vocab_size=256, max_position_embeddings=4096, num_hidden_layers=4)
    for k in ("layer_types", "mlp_only_layers"):
        t.pop(k, None)
    if "num_experts" in t or "num_local_experts" in t:
        t.update({k: 8 for k in ("num_experts", "num_local_experts") if k in t})
        t["num_experts_per_tok"] = 2
        for k in ("moe_intermediate_size", "shared_expert_intermediate_size"):
            if k in t:
                t[k] = 32
    return t

KCOUNT = {}

def timed(bench, rt, phase, b, n, reps=30, key=None):
    with torch.inference_mode():
        call, reset, gpu_only, _ = bench.step(rt, phase, b, n)
        host = hf_host.event_times(torch, call, reset, reps, 5, False)
        gpu = hf_host.event_times(torch, call, reset, 10, 2, True)
    if key not in KCOUNT:
        KCOUNT[key] = bench.kernels(rt, phase, b, n)
    k = KCOUNT[key]
    return {"host_s": float(np.median(host)), "host_min_s": float(min(host)), "gpu_s": float(np.median(gpu)),
            "kernels": int(k["total"]), "gpu_kernel_us": k["us"]}

with torch.inference_mode():
    lstep, lrestore = hf_host.decoder(torch, transformers)
    lk = hf_host.kernels_per_step(torch, lstep, lrestore)

def llama():
    with torch.inference_mode():
        return hf_host.per_kernel(hf_host.step_seconds(torch, lstep, lrestore, rounds=1), lk)

res = {"transformers": transformers.__version__, "torch": torch.__version__, "llama_kernels": lk, "rows": []}
t0 = time.time()
benches = {}
for rnd in range(rounds):
    for name in MODELS:
        d = json.loads((DATA / f"{name}.json").read_text())
        row = {"round": rnd, "model": name, "family": d.get("model_type"), "llama_before": llama()}
        try:
            tb = v.Bench(tiny(d), 30, 5)
            row["tiny_decode"] = timed(tb, "eager", "decode", 1, 64, key=(name, "td"))
            row["tiny_prefill"] = timed(tb, "hf-compiled", "prefill", 1, 64, key=(name, "tp"))
            del tb
            rb = v.Bench(v.reduce_config(d, 4), 30, 5)
            for b, n in ((1, 512), (1, 2048)):
                row[f"real_prefill_{b}x{n}"] = timed(rb, "hf-compiled", "prefill", b, n, key=(name, b, n))
            del rb
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        torch.cuda.empty_cache()
        row["llama_after"] = llama()
        res["rows"].append(row)
        L = (row["llama_before"] + row["llama_after"]) / 2
        def pk(key):
            x = row.get(key)
            return f"{x['host_s'] / max(x['kernels'], 1) / L:.2f}x({x['kernels']}k,gpu {x['gpu_s']/x['host_s']:.2f})" if x else "-"
        print(rnd, name, f"llama {L*1e6:.1f}us", "tinyD", pk("tiny_decode"), "tinyP", pk("tiny_prefill"),
              "real512", pk("real_prefill_1x512"), "real2048", pk("real_prefill_1x2048"), row.get("error", ""),
              f"{time.time() - t0:.0f}s", flush=True)
        Path(out_path).write_text(json.dumps(res, indent=1))
