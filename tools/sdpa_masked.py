"""SDPA with an additive mask against SDPA without one, as transformers calls it with a static cache (issue 32).

transformers' ``sdpa_attention_forward`` under a static cache expands K and V to every query head (``repeat_kv``)
and passes a (batch, 1, queries, keys) additive mask in the activations' dtype; PyTorch then runs its masked
kernel (cuDNN's fused attention with a bias on Hopper under torch 2.11). The predictor prices that kernel from a
profile's masked SDPA points where it has them, else from the P @ V GEMM rate (hwprobe.predict.model
``_efficient_attention``). This measures, per shape, the masked call
beside the unmasked causal and full (non-causal) calls that gpu.torch_kernels' SDPA table holds, each replayed
in a CUDA graph, and names the kernel each ran (torch.profiler).

Every masked output is checked: with a causal additive mask it must equal the unmasked causal call's output.

    python3 tools/sdpa_masked.py --out DIR        # on the GPU machine; writes DIR/sdpa_masked.jsonl
    python3 tools/sdpa_masked.py --table FILE [--profile P]   # anywhere: a run's rows as a table, with the
                                                  # predictor's price of the masked call on profile P beside them
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

# (batch, heads, queries, keys, head_dim): the prefills of the hf validation (queries = keys) at the families'
# head counts and sizes, and decode steps over a static cache (one query, the cache's keys).
SHAPES = [(b, h, t, t, d) for b in (1, 8) for t in (512, 1024, 2048, 4096) for h, d in ((32, 128), (32, 96), (16, 256))
          if b * t <= 16384] + [(b, 32, 1, keys, 128) for b in (1, 16, 64) for keys in (1024, 4096, 8192)]


def graph_time(fn, reps: int = 20) -> float:
    """Median seconds of one call, its CUDA graph replayed ``reps`` times, each replay timed alone."""
    import torch
    from validate_models import capture_graph  # three warm-up calls on a side stream, then the capture

    g, _ = capture_graph(fn)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return sorted(times)[len(times) // 2]


def kernels_of(fn) -> list[str]:
    """The CUDA kernels one call launches."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})


def measure(b: int, h: int, t: int, keys: int, d: int, dtype) -> dict:
    import torch
    import torch.nn.functional as F

    q = torch.randn(b, h, t, d, device="cuda", dtype=dtype)
    k = torch.randn(b, h, keys, d, device="cuda", dtype=dtype)
    v = torch.randn(b, h, keys, d, device="cuda", dtype=dtype)
    # transformers' mask: 0 where a query may attend, the dtype's min elsewhere; causal over the cache's positions
    pos_q = torch.arange(keys - t, keys, device="cuda")[:, None]
    allowed = torch.arange(keys, device="cuda")[None, :] <= pos_q
    mask = torch.zeros(b, 1, t, keys, device="cuda", dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    calls = {"masked": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
             "full": lambda: F.scaled_dot_product_attention(q, k, v)}
    if t == keys:
        calls["causal"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref = calls["causal"]() if t == keys else F.scaled_dot_product_attention(q, k, v)   # decode: every key allowed
    err = (calls["masked"]().float() - ref.float()).abs().max().item()
    row = {"batch": b, "heads": h, "queries": t, "keys": keys, "dim": d, "dtype": str(dtype).split(".")[-1],
           "max_abs_err_vs_reference": err, "verified": err < 2e-2}
    flops_full = 4.0 * b * h * t * keys * d
    for name, fn in calls.items():
        s = graph_time(fn)
        flops = flops_full / 2 if name == "causal" else flops_full
        row[name] = {"time_s": s, "tflops": flops / s / 1e12, "kernels": kernels_of(fn)}
    return row


def masked_op(r: dict):
    """The masked call as transformers' lowering lists it (hwprobe.lowering.llm.hf ``_attention_kernels``)."""
    from hwprobe.lowering.ops import KernelOp

    b, h, t, keys, d = r["batch"], r["heads"], r["queries"], r["keys"], r["dim"]
    nbytes = 2 * b * h * t * d * 2 + 2 * b * h * keys * d * 2 + b * t * keys * 2
    return KernelOp("attention", "attention", precision="bf16", batch=b * h, m=t, n=keys, k=d, bytes=float(nbytes),
                    backend="efficient")


def table(rows: list[dict], profile=None) -> str:
    """One line per shape: each call's time and rate, the masked call's time over the full one's, the kernels;
    with a profile, the predictor's price of the masked call (graph runtime) and its error."""
    pred = None
    if profile is not None:
        from hwprobe.predict.model import Predictor

        pred = Predictor(profile, "graph")
    out = ["| batch | heads | queries | keys | head dim | masked us | full us | causal us | masked / full | "
           "masked TFLOP/s | full TFLOP/s | same kernel | checked |" + (" priced us | error |" if pred else ""),
           "|" + "---|" * (15 if pred else 13)]
    for r in rows:
        if "error" in r:
            out.append(f"| {' | '.join(map(str, r['shape']))} | {r['error']} |" + " |" * 7)
            continue
        m, f, c = r["masked"], r["full"], r.get("causal")
        us = (lambda x: f"{x['time_s'] * 1e6:.1f}" if x else "-")
        out.append(f"| {r['batch']} | {r['heads']} | {r['queries']} | {r['keys']} | {r['dim']} | {us(m)} | {us(f)} | "
                   f"{us(c)} | {m['time_s'] / f['time_s']:.2f} | {m['tflops']:.0f} | {f['tflops']:.0f} | "
                   f"{'yes' if m['kernels'] == f['kernels'] else 'no'} | {'yes' if r['verified'] else 'NO'} |"
                   + (f" {(p := pred.time(masked_op(r)).time_s) * 1e6:.1f} | {p / m['time_s'] - 1:+.1%} |"
                      if pred else ""))
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--table", type=Path, help="a sdpa_masked.jsonl to print as a table")
    ap.add_argument("--profile", help="with --table: price the masked call on this profile (a run dir or file)")
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    args = ap.parse_args()
    if args.table:
        from hwprobe.profile_build import load_profile

        prof = load_profile(args.profile) if args.profile else None
        print(table([json.loads(line) for line in args.table.read_text().splitlines() if line.strip()], prof))
        return 0
    if not args.out:
        ap.error("--out DIR (or --table FILE)")
    import torch

    dtype = getattr(torch, args.dtype)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "sdpa_masked.jsonl"
    t0 = time.time()
    with path.open("a") as f:
        for shape in SHAPES:
            try:
                row = measure(*shape, dtype)
            except Exception as e:            # one shape's failure (memory) keeps the others
                row = {"shape": shape, "error": f"{type(e).__name__}: {e}"}
            f.write(json.dumps(row) + "\n")
            f.flush()
            m = row.get("masked", {})
            print(shape, f"masked {m.get('tflops', 0):.0f} TFLOP/s", f"full {row.get('full', {}).get('tflops', 0):.0f}",
                  "ok" if row.get("verified") else row.get("error") or "WRONG", flush=True)
            torch.cuda.empty_cache()
    print(f"{len(SHAPES)} shapes in {time.time() - t0:.0f} s -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
