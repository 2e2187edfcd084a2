#!/usr/bin/env python3
"""Measure LLM prefill and decode on the GPU: a random-weight Llama of real shape in plain PyTorch (BF16), with a
preallocated static KV cache, each case replayed as a CUDA graph (and a subset eager). Not part of hwprobe's
package: it imports torch and runs on the device machine; tools/compare_llm.py prices the same cases with hwprobe.

The model launches the kernels hwprobe.lowering.llm.graph describes for Llama (per layer: RMSNorm, q/k/v GEMMs,
HF-style rotary on q and k = mul, neg, cat, mul, add each, two KV-cache copies, one SDPA flash kernel with GQA,
o_proj, residual add, RMSNorm, gate and up GEMMs, SiLU, multiply, down GEMM, residual add; the embedding, two
cos/sin gathers, final norm and lm_head (prefill: last token only) around them). The kernels one eager step
really launches are counted with torch.profiler and written beside the timings, so a mismatch shows.

Usage (one GPU, ~1-2 minutes on an H100/H200 for the defaults):
    python tools/validate_llm.py --out llm_measured.json
Tensor parallel 2 (two GPUs of one host; NCCL_NVLS_ENABLE=0 is set here):
    torchrun --nproc-per-node 2 tools/validate_llm.py --tp 2 --out llm_measured_tp2.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

# The fields of the models' config.json that the shape needs (meta-llama/Llama-3.2-1B, meta-llama/Meta-Llama-3-8B).
MODELS = {
    "llama-3.2-1b": dict(hidden=2048, ffn=8192, layers=16, heads=32, kv_heads=8, head_dim=64, vocab=128256,
                         tied=True),
    "llama-3-8b": dict(hidden=4096, ffn=14336, layers=32, heads=32, kv_heads=8, head_dim=128, vocab=128256,
                       tied=False),
    # A toy shape for a CPU smoke test of this script (--device cpu --models tiny), never a measurement.
    "tiny": dict(hidden=256, ffn=512, layers=2, heads=4, kv_heads=2, head_dim=64, vocab=1000, tied=True),
}
DEFAULT_PREFILL = "1x512,1x1024,1x2048,1x4096,16x512"
DEFAULT_DECODE = "1x512,1x1024,1x2048,1x4096,16x512,16x1024,16x2048,16x4096"
DEFAULT_EAGER = "prefill:1x1024,decode:1x1024,decode:16x1024"


def parse_cases(text: str, phase: str | None = None) -> list[tuple[str, int, int]]:
    """'1x512,16x1024' -> [(phase, 1, 512), (phase, 16, 1024)]; with phase None each item is 'phase:BxL'."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        ph, spec = (phase, item) if phase else item.split(":", 1)
        if ph not in ("prefill", "decode"):
            raise ValueError(f"phase must be prefill or decode: {item!r}")
        b, n = spec.lower().split("x")
        if int(b) < 1 or int(n) < 1:
            raise ValueError(f"batch and length must be >= 1: {item!r}")
        out.append((ph, int(b), int(n)))
    return out


def stats(times: list[float]) -> dict[str, float]:
    """Median and the 10th/90th percentiles (nearest rank) of per-replay times in seconds."""
    s = sorted(times)

    def q(p: float) -> float:
        return s[min(len(s) - 1, max(0, round(p * (len(s) - 1))))]

    return {"median_s": q(0.5), "p10_s": q(0.1), "p90_s": q(0.9), "min_s": s[0], "reps": len(s)}


def clocks() -> dict[str, str]:
    q = "name,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": str(e)}
    keys = q.split(",")
    return {f"gpu{i}": dict(zip(keys, (x.strip() for x in line.split(",")), strict=False))
            for i, line in enumerate(out)}


class Llama:
    """A minimal Llama with random BF16 weights; ``tp``/``rank`` shard heads, FFN and the lm_head's vocabulary."""

    def __init__(self, cfg: dict, max_batch: int, max_len: int, tp: int = 1, rank: int = 0, device="cuda"):
        import torch

        self.torch, self.cfg, self.tp, self.device = torch, cfg, tp, device
        d, dt = device, torch.bfloat16
        h, hd = cfg["hidden"], cfg["head_dim"]
        self.H, self.Hkv, self.D = cfg["heads"] // tp, max(1, cfg["kv_heads"] // tp), hd
        ffn, self.V = cfg["ffn"] // tp, cfg["vocab"] // tp
        g = torch.Generator(device=d).manual_seed(1234 + rank)

        def w(*shape, std=0.02):
            return (torch.randn(*shape, generator=g, device=d, dtype=torch.float32) * std).to(dt)

        self.emb = w(cfg["vocab"], h, std=1.0)
        self.lm_head = w(self.V, h) if not (cfg["tied"] and tp == 1) else self.emb
        self.layers = []
        for _ in range(cfg["layers"]):
            self.layers.append(dict(ln1=torch.ones(h, device=d, dtype=dt), ln2=torch.ones(h, device=d, dtype=dt),
                                    wq=w(self.H * hd, h), wk=w(self.Hkv * hd, h), wv=w(self.Hkv * hd, h),
                                    wo=w(h, self.H * hd), wg=w(ffn, h), wu=w(ffn, h), wd=w(h, ffn),
                                    kc=torch.zeros(max_batch, self.Hkv, max_len, hd, device=d, dtype=dt),
                                    vc=torch.zeros(max_batch, self.Hkv, max_len, hd, device=d, dtype=dt)))
        self.lnf = torch.ones(h, device=d, dtype=dt)
        inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, device=d, dtype=torch.float32) / hd))
        ang = torch.outer(torch.arange(max_len, device=d, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.cos_tab, self.sin_tab = ang.cos().to(dt), ang.sin().to(dt)

    def _rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        rot = self.torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rot * sin

    def _allreduce(self, x):
        if self.tp > 1:
            self.torch.distributed.all_reduce(x)
        return x

    def forward(self, ids, pos, start: int, attn):
        """ids (B, T); pos (T,) the positions start..start+T-1; keys attended: start + T."""
        torch, F = self.torch, self.torch.nn.functional
        B, T = ids.shape
        C = start + T
        x = F.embedding(ids, self.emb)
        cos, sin = self.cos_tab[pos].view(1, T, 1, self.D), self.sin_tab[pos].view(1, T, 1, self.D)
        eps = 1e-5
        for L in self.layers:
            a = F.rms_norm(x, (x.shape[-1],), L["ln1"], eps)
            q = F.linear(a, L["wq"]).view(B, T, self.H, self.D)
            k = F.linear(a, L["wk"]).view(B, T, self.Hkv, self.D)
            v = F.linear(a, L["wv"]).view(B, T, self.Hkv, self.D)
            q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
            L["kc"][:B, :, start:C] = k.transpose(1, 2)
            L["vc"][:B, :, start:C] = v.transpose(1, 2)
            o = attn(q.transpose(1, 2), L["kc"][:B, :, :C], L["vc"][:B, :, :C], T > 1)
            x = x + self._allreduce(F.linear(o.transpose(1, 2).reshape(B, T, self.H * self.D), L["wo"]))
            a = F.rms_norm(x, (x.shape[-1],), L["ln2"], eps)
            x = x + self._allreduce(F.linear(F.silu(F.linear(a, L["wg"])) * F.linear(a, L["wu"]), L["wd"]))
        x = F.rms_norm(x, (x.shape[-1],), self.lnf, eps)
        logits = F.linear(x[:, -1:] if T > 1 else x, self.lm_head)
        if self.tp > 1:
            full = torch.empty(self.tp, *logits.shape, device=logits.device, dtype=logits.dtype)
            torch.distributed.all_gather_into_tensor(full, logits)
            logits = full
        return logits


def attention_fn(torch, device: str = "cuda"):
    """SDPA with GQA on the flash backend where this torch has it; the name of what was used."""
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def flash(q, k, v, causal):
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

    def any_backend(q, k, v, causal):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

    if device != "cuda":
        return any_backend, f"default SDPA backend on {device} (enable_gqa)"
    q = torch.randn(1, 8, 4, 64, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(1, 2, 4, 64, device="cuda", dtype=torch.bfloat16)
    try:
        flash(q, kv, kv, True)
        return flash, "flash (enable_gqa)"
    except RuntimeError:
        return any_backend, "default SDPA backend (enable_gqa)"


def time_replays(fn, reps: int, warmup: int, torch) -> list[float]:
    for _ in range(warmup):
        fn()
    if not torch.cuda.is_available():
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return times
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) / 1e3 for a, b in ev]


def inputs(model: Llama, phase: str, batch: int, length: int):
    """Static inputs: prefill of ``length`` tokens from 0; decode of one token at position length-1."""
    torch = model.torch
    T, start = (length, 0) if phase == "prefill" else (1, length - 1)
    ids = torch.randint(0, model.cfg["vocab"], (batch, T), device=model.device)
    pos = torch.arange(start, start + T, device=model.device)
    return ids, pos, start


def run_case(model: Llama, attn, phase, batch, length, runtime, reps, warmup) -> dict:
    torch = model.torch
    ids, pos, start = inputs(model, phase, batch, length)
    out = {}

    def step():
        out["logits"] = model.forward(ids, pos, start, attn)

    if runtime == "graph":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from validate_models import capture_graph  # three warm-up steps on a side stream, then one captured

        g, _ = capture_graph(step)
        times = time_replays(g.replay, reps, warmup, torch)
    else:
        times = time_replays(step, reps, warmup, torch)
    finite = bool(torch.isfinite(out.pop("logits").float()).all().item())
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return {"phase": phase, "batch": batch, "prompt" if phase == "prefill" else "context": length,
            "runtime": runtime, "finite": finite, **stats(times)}


def count_kernels(model: Llama, attn, phase: str, batch: int, length: int) -> dict:
    """The CUDA kernels one eager step launches (torch.profiler), by name."""
    torch = model.torch
    from torch.profiler import ProfilerActivity, profile

    ids, pos, start = inputs(model, phase, batch, length)
    model.forward(ids, pos, start, attn)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        model.forward(ids, pos, start, attn)
        torch.cuda.synchronize()
    names: dict[str, int] = {}
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA") and not e.name.startswith(("cudaLaunch", "Memcpy")):
            names[e.name] = names.get(e.name, 0) + 1
    top = sorted(names.items(), key=lambda kv: -kv[1])[:40]
    return {"phase": phase, "batch": batch, "length": length, "kernels": sum(names.values()),
            "top": [{"name": n[:160], "count": c} for n, c in top]}


def measure_model(name, cfg, args, tp, rank, attn) -> tuple[list[dict], list[dict]]:
    pre = parse_cases(args.prefill, "prefill")
    dec = parse_cases(args.decode, "decode")
    eager = parse_cases(args.eager) if args.eager else []
    every = pre + dec + eager
    max_b = max(b for _, b, _ in every)
    max_len = max(n for _, _, n in every)
    model = Llama(cfg, max_b, max_len, tp, rank, args.device)
    rows, kernels = [], []
    timed = (("graph", pre + dec), ("eager", eager)) if args.device == "cuda" else (("eager", pre + dec + eager),)
    for runtime, group in timed:
        for phase, b, n in group:
            t0 = time.perf_counter()
            r = run_case(model, attn, phase, b, n, runtime, args.reps, args.warmup)
            r.update(model=name, tp=tp, wall_s=round(time.perf_counter() - t0, 2))
            rows.append(r)
            if rank == 0:
                print(f"{name} {phase} {runtime} b={b} len={n}: median {r['median_s'] * 1e3:.3f} ms "
                      f"(p10 {r['p10_s'] * 1e3:.3f}, p90 {r['p90_s'] * 1e3:.3f}) finite={r['finite']}", flush=True)
    if args.count_kernels and args.device == "cuda":
        kernels = [dict(count_kernels(model, attn, "prefill", 1, pre[0][2] if pre else 512), model=name),
                   dict(count_kernels(model, attn, "decode", 1, dec[0][2] if dec else 512), model=name)]
    torch = model.torch
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return rows, kernels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="llama-3.2-1b,llama-3-8b", help=f"comma list of {', '.join(MODELS)}")
    ap.add_argument("--prefill", default=DEFAULT_PREFILL, help="BATCHxPROMPT cases, CUDA graph")
    ap.add_argument("--decode", default=DEFAULT_DECODE, help="BATCHxCONTEXT cases, CUDA graph")
    ap.add_argument("--eager", default=DEFAULT_EAGER, help="phase:BATCHxLEN cases timed eager too")
    ap.add_argument("--reps", type=int, default=30, help="timed replays per case (>= 20)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--tp", type=int, default=1, help="tensor parallel ranks (run under torchrun)")
    ap.add_argument("--no-count-kernels", dest="count_kernels", action="store_false")
    ap.add_argument("--device", default="cuda", help="cuda; cpu only for a smoke test of this script (eager)")
    ap.add_argument("--out", default="llm_measured.json")
    args = ap.parse_args(argv)
    if args.reps < 20:
        ap.error("--reps must be >= 20")
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    parse_cases(args.prefill, "prefill"), parse_cases(args.decode, "decode"), parse_cases(args.eager or "")

    import torch

    rank = 0
    if args.tp > 1:
        torch.distributed.init_process_group("nccl")
        rank = torch.distributed.get_rank()
        if torch.distributed.get_world_size() != args.tp:
            ap.error(f"--tp {args.tp} but the world size is {torch.distributed.get_world_size()}")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    attn, backend = attention_fn(torch, args.device)
    before = clocks()
    t0 = time.perf_counter()
    rows, kernels = [], []
    with torch.inference_mode():
        for name in names:
            r, k = measure_model(name, MODELS[name], args, args.tp, rank, attn)
            rows += r
            kernels += k
    if rank == 0:
        gpu = torch.cuda.get_device_name() if args.device == "cuda" else args.device
        doc = {"tool": "tools/validate_llm.py", "torch": torch.__version__, "cuda": torch.version.cuda,
               "gpu": gpu, "tp": args.tp, "dtype": "bf16", "attention_backend": backend,
               "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"), "clocks_before": before,
               "clocks_after": clocks(), "wall_s": round(time.perf_counter() - t0, 1), "models": {
                   n: MODELS[n] for n in names}, "cases": rows, "kernel_counts": kernels}
        with open(args.out, "w") as fh:
            json.dump(doc, fh, indent=1)
        bad = [r for r in rows if not r["finite"]]
        print(f"wrote {args.out}: {len(rows)} cases in {doc['wall_s']} s; non-finite outputs: {len(bad)}")
    if args.tp > 1:
        torch.distributed.destroy_process_group()
    return 0 if all(r["finite"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
