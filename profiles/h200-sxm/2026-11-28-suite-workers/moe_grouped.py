"""Issue 32: torch._grouped_mm at the routing the MoE validation measured (qwen3-30b-a3b, hf prefill cases of
profiles/h200-sxm/2026-11-28-hf-eager-kv/hf_moe_kernels.json.gz: rows per expert per layer), against the same rows
spread evenly over the experts the uniform model expects. gate_up (128 x 1536 x 2048) and down (128 x 2048 x 768)
per layer, timed as graph_time times a calibration point; each output checked against FP32 on two rows of the
largest group.
  python3 .ab/moe_grouped.py OUT_JSONL"""
import gzip
import json
import math
import sys

import torch

from hwprobe.probes.calibration.torch_timing import graph_time

SRC = "profiles/h200-sxm/2026-11-28-hf-eager-kv/hf_moe_kernels.json.gz"
SHAPES = {"gate_up": (1536, 2048), "down": (2048, 768)}


def timed(wt, w, counts, k):
    e = len(counts)
    s = sum(counts)
    x = torch.randn(s, k, device="cuda", dtype=torch.bfloat16)
    offs = torch.tensor(counts, device="cuda", dtype=torch.int64).cumsum(0).to(torch.int32)
    holder = {}
    t, reps = graph_time(torch, lambda: holder.__setitem__("y", torch._grouped_mm(x, wt, offs=offs)))
    g = max(range(e), key=lambda i: counts[i])
    lo = sum(counts[:g])
    ref = x[lo:lo + 2].float() @ w[g].float().T
    err = float((holder["y"][lo:lo + 2].float() - ref).abs().max() / ref.abs().max())
    return t, reps, err


def main():
    doc = json.load(gzip.open(SRC))
    out = open(sys.argv[1], "w")
    ws = {}
    with torch.inference_mode():
        for name, (n, k) in SHAPES.items():
            w = torch.randn(128, n, k, device="cuda", dtype=torch.bfloat16).div_(k ** 0.5)
            ws[name] = (w, w.transpose(-2, -1), k)
        for case in doc["kernels"]:
            r = case.get("routing")
            if case["runtime"] != "hf" or case["phase"] != "prefill" or not r:
                continue
            for li, counts in enumerate(r["counts"]):
                s, e = sum(counts), len(counts)
                used = e * (1 - (1 - 8 / e) ** (s // 8))
                touched = sum(1 for c in counts if c)
                per = math.ceil(s / e)
                even = [per] * (s // per) + ([s % per] if s % per else [])
                even += [0] * (e - len(even))
                for name, (w, wt, k) in ws.items():
                    for kind, cs in (("measured", counts), ("even", even)):
                        t, reps, err = timed(wt, w, cs, k)
                        row = {"batch": case["batch"], "length": case["length"], "layer": li, "proj": name,
                               "routing": kind, "rows": s, "touched": sum(1 for c in cs if c),
                               "max_rows": max(cs), "expected_used": used, "time_s": t, "reps": reps,
                               "max_rel_err": err, "measured_touched": touched}
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        print(row, flush=True)


if __name__ == "__main__":
    main()
