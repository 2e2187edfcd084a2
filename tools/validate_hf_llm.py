#!/usr/bin/env python3
"""Measure LLM prefill and decode as Hugging Face transformers runs them, for hwprobe's runtimes hf, hf-compiled and
eager (issue 32). Device-side: imports torch and transformers (5.x) inside its functions, never a dependency of
hwprobe; nothing is downloaded: each model is transformers' own class built from a config.json with random BF16
weights made on the GPU (``AutoModelForCausalLM.from_config``, ``attn_implementation="sdpa"``), its layer count cut
to ``--layers`` (said in the output; tools/compare_hf_llm.py prices the same cut config).

Runtimes, as hwprobe.lowering.llm.runtimes defines them:
- hf: a ``StaticCache`` of ``cache_len`` positions (the step's own length), the inputs made by the model's
  ``prepare_inputs_for_generation`` (as ``generate`` makes them: position ids, the 4D masks), one forward captured as
  a CUDA graph (three warm-up calls on a side stream) and replayed. Each layer's device counter
  (``StaticLayer.cumulative_length``) is set back before every call and replay, outside the timed region (a replay
  advances it). Timed on the GPU: a sleep kernel holds the stream while the host launches, so host time is out.
- hf-compiled: decode = ``model.get_compiled_call(None)`` (what generate calls: torch.compile, inductor,
  reduce-overhead, transformers' ``CompileConfig`` defaults), warmed up, timed as hf; prefill = the same
  static-cache forward launched op by op (generate never compiles the prefill), timed with the host in it.
- eager: transformers' ``DynamicCache`` (decode: filled to context - 1, the new position cropped off after each
  step), launched op by op, timed with the host in it. hwprobe's own eager calibration (its bare-op host time per
  op, and transformers' own per kernel of a tiny Llama's eager decode step) runs in the same process before and
  after the models (``host_before``, ``host_after``): the host is part of what eager measures, and each lent
  machine's differs. ``--rounds 3`` measures every case three times, the cases in turn: a lent host's disturbances
  (one case's median once read 5.46 ms where its fastest step took 3.74) spread over the cases. With the eager
  runtime, or hf-compiled (its prefill is launched op by op), the tiny Llama's step is also timed before each model's
  first case and after every case's round: each round of a case carries the mean of the two readings around it, and
  the case the median of its rounds (``host_kernel_s``; the rounds' in ``host_kernel_s_rounds``), as its time is the
  median of its rounds' samples. A lent host's speed moved 1.8x between one model's rounds (2026-11-28), and 2x
  between two rounds of one case, with readings taken once per round of all cases missing it (2026-11-28, the
  hf-compiled run of ``profiles/h200-sxm/2026-11-28-hf-compiled-host``).
Under ``--tp`` the tiny Llama of those readings is sharded by the tp plan as the models are (``host_clock``: "tp"),
so eager and hf-compiled's prefill are priced with the tp hooks' host time; hf-compiled's decode is timed behind a
10M-cycle sleep after a barrier (issuing a compiled step under tp took the host up to 1.6 ms), and the time a step
takes in generate's loop (20 steps queued without a sync: the longer of host and GPU) is kept beside it
(``loop_s_rounds``).
MoE models decode with ``experts_implementation="batched_mm"`` and prefill with transformers' default, as
``generate`` switches them (``_optimize_model_for_decode``). Random weights route unevenly: qwen3-30b-a3b's routers
sent up to 4086 of 4096 prefill tokens to one expert in a layer (2026-11-28), where a trained router is trained
towards balance and hwprobe's lowering assumes uniform routing. ``--routing balanced`` replaces each router's top-k
expert ids (a forward hook on transformers' router modules, after the router's own kernels ran) with token t's
experts (t k + j) mod E, j < k: every expert gets t k / E rows, +-1. The ids are made once per token count, outside
the timed calls, so the step launches what it launched before; the output's ``routing`` says which was measured.
Each case's tokens come from a seed of its own (case_seed), and each MoE prefill case records the rows per expert
its routers chose on those tokens (``routing`` in the case, counted in one eager forward): tools/compare_hf_llm.py
prices the prefill at that routing (hwprobe analyze --routing).

For each model, runtime and phase, torch.profiler records the CUDA kernels of one step (smallest case), by name,
count and time, so the lowering can be compared kernel by kernel (tools/compare_hf_llm.py --kernels).

Usage (one GPU; estimate for the defaults, 7 configs x 4 layers: ~7 min on an H200: hf and eager ~15 s a model,
one Inductor compile per model ~25-40 s):
    python tools/validate_hf_llm.py --out hf_llm_measured.json
    python tools/validate_hf_llm.py --configs tests/data/llm_configs/qwen3-8b.json --runtimes hf --out q.json
    python tools/validate_hf_llm.py --runtimes eager --no-kernels --rounds 3 --out eager.json
    torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --runtimes hf,eager --out tp2.json
      (transformers' tp_plan: each model saved once with random weights, loaded with DistributedConfig(tp_size=2))
Skipped (and said so in "cases" with a reason): cases whose cache and expanded K/V would not fit, and any case
that raises (out of memory, a capture transformers cannot do); the run goes on.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "llm_configs"
DEFAULT_CONFIGS = ",".join(str(DATA / f) for f in (
    "llama-3.2-1b.json", "qwen2.5-7b.json", "qwen3-8b.json", "mistral-7b-v0.3.json", "gemma-2-9b.json",
    "phi-3-mini-4k-instruct.json", "qwen3-30b-a3b.json"))
DEFAULT_PREFILL = "1x512,1x2048,1x4096,8x512,8x2048"
DEFAULT_DECODE = "1x1024,16x1024,64x1024,1x8192,16x8192,64x4096"
DEFAULT_COMPILED_DECODE = "16x2048"
RUNTIMES = ("hf", "hf-compiled", "eager")
TP_COMPILED_HOLD = 10_000_000   # hold_cycles
LOOP_STEPS = 20                 # Bench.loop_s


# --- pure helpers (tests/test_hf_llm_tools.py) -------------------------------------------------------------------
def parse_cases(text: str) -> list[tuple[int, int]]:
    """'1x512,16x1024' -> [(1, 512), (16, 1024)] (batch x length)."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            b, n = (int(x) for x in item.lower().split("x"))
        except ValueError:
            raise ValueError(f"expected BATCHxLENGTH, got {item!r}") from None
        if b < 1 or n < 2:
            raise ValueError(f"batch must be >= 1 and length >= 2: {item!r}")
        out.append((b, n))
    return out


def reduce_config(d: dict, layers: int) -> dict:
    """The config with ``num_hidden_layers`` cut to ``layers`` (never raised): ``layer_types`` and ``mlp_only_layers``
    cut with it, so the cut model keeps the first layers' pattern."""
    out = dict(d)
    n = int(out.get("num_hidden_layers") or out.get("n_layer") or 0)
    if layers and n > layers:
        out["num_hidden_layers"] = layers
        if isinstance(out.get("layer_types"), list):
            out["layer_types"] = out["layer_types"][:layers]
        if isinstance(out.get("mlp_only_layers"), list):
            out["mlp_only_layers"] = [i for i in out["mlp_only_layers"] if i < layers]
    return out


def kv_bytes(d: dict, batch: int, cache_len: int) -> float:
    """The static cache plus one layer's K and V expanded to every query head (repeat_kv), BF16."""
    heads = int(d.get("num_attention_heads", 1))
    kv = int(d.get("num_key_value_heads") or heads)
    hd = int(d.get("head_dim") or int(d.get("hidden_size", 0)) // heads)
    layers = int(d.get("num_hidden_layers", 1))
    return 2 * 2 * batch * cache_len * hd * (layers * kv + heads)


def merge_rounds(rounds: list[list[float]]) -> dict:
    """One case's rounds together: the stats of every call, and each round's median. A host disturbance that lasts
    a round (a lent machine's other tenants) moves that round's median, and the median of all calls only where it
    lasts half of them."""
    return {**stats([t for r in rounds for t in r]), "rounds": len(rounds),
            "round_median_s": [stats(r)["median_s"] for r in rounds]}


def stats(times: list[float]) -> dict[str, float]:
    """Median and the 10th/90th percentiles (nearest rank) of per-call times in seconds."""
    s = sorted(times)

    def q(p: float) -> float:
        return s[min(len(s) - 1, max(0, round(p * (len(s) - 1))))]

    return {"median_s": q(0.5), "p10_s": q(0.1), "p90_s": q(0.9), "min_s": s[0], "reps": len(s)}


def summarize_kernels(events: list[tuple[str, float]]) -> dict:
    """(kernel name, microseconds) pairs -> the total and each name's count and summed time, busiest first."""
    by: dict[str, list[float]] = {}
    for name, us in events:
        e = by.setdefault(name, [0, 0.0])
        e[0] += 1
        e[1] += us
    rows = sorted(({"name": n[:200], "count": c, "us": round(t, 3)} for n, (c, t) in by.items()),
                  key=lambda r: -r["us"])
    return {"total": sum(c for c, _ in by.values()), "us": round(sum(t for _, t in by.values()), 3),
            "by_name": rows}


def balanced_ids(xp, tokens: int, per_token: int, experts: int, **where):
    """[tokens, per_token] expert ids routing token t to experts (t k + j) mod E: distinct per token (k <= E), every
    expert given tokens x k / E rows, +-1. ``xp``: torch (``where``: its device) or numpy."""
    return (xp.arange(tokens * per_token, **where) % experts).reshape(tokens, per_token)


def topk_ids_at(torch, outs: list, k: int) -> int | None:
    """Where a router's output holds its top-k expert ids (an integer [tokens, k] tensor), or None."""
    return next((i for i, t in enumerate(outs) if torch.is_tensor(t) and not t.is_floating_point()
                 and t.dim() == 2 and t.shape[-1] == k), None)


def case_seed(phase: str, batch: int, length: int) -> int:
    """The random seed of one case's tokens: fixed per (phase, batch, length), so every input made for the case (each
    runtime's, and the routing count's) holds the same tokens."""
    return (1 if phase == "prefill" else 2) * 1_000_003 + batch * 100_003 + length


def routing_summary(per_layer: list[list[int]], experts: int) -> dict:
    """Rows each expert got per MoE layer (a bincount of the router's top-k picks) -> what a grouped GEMM's speed
    follows: experts touched, rows per touched expert (min / median / max) and the spread over them."""
    import numpy as np

    layers = []
    for counts in per_layer:
        c = np.asarray(counts, dtype=np.int64)
        hit = c[c > 0]
        layers.append({"rows": int(c.sum()), "touched": int(hit.size),
                       "min": int(hit.min()) if hit.size else 0, "median": float(np.median(hit)) if hit.size else 0.0,
                       "max": int(hit.max()) if hit.size else 0,
                       "cv": float(hit.std() / hit.mean()) if hit.size else 0.0})
    return {"experts": experts, "layers": layers, "counts": [list(map(int, c)) for c in per_layer]}


def plan(runtimes: list[str], prefill: list[tuple[int, int]], decode: list[tuple[int, int]],
         compiled_decode: list[tuple[int, int]]) -> list[tuple[str, str, int, int]]:
    """(runtime, phase, batch, length) in run order: hf-compiled decodes only its own (few) cases, each shape a
    compile."""
    out = []
    for rt in runtimes:
        out += [(rt, "prefill", b, n) for b, n in prefill]
        out += [(rt, "decode", b, n) for b, n in (compiled_decode if rt == "hf-compiled" else decode)]
    return out


def hold_cycles(runtime: str, phase: str, tp: int) -> int:
    """The sleep a GPU-only timing queues first: hf_host's (~1 ms on an H200) covers a graph replay's issue (20-46 us),
    but not a compiled step's under tp, which took the host 0.65-1.6 ms on 2x H200 (2026-11-29; the step read up to
    0.4 ms more behind 2M cycles than behind 10M): there, 10M cycles (~5 ms)."""
    from hwprobe.probes.calibration.hf_host import HOLD_CYCLES

    return TP_COMPILED_HOLD if tp > 1 and runtime == "hf-compiled" and phase == "decode" else HOLD_CYCLES


def host_priced(runtimes: list[str]) -> bool:
    """Whether any phase of these runtimes is priced with the host in it (eager; hf-compiled's prefill, launched op
    by op), so that each case needs the host read around its rounds."""
    from hwprobe.lowering.llm.runtimes import RUNTIMES as LOWERED

    return any(LOWERED[r].pricing(p) == "eager" for r in runtimes if r in LOWERED for p in ("prefill", "decode"))


def clocks() -> dict:
    q = "name,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": str(e)}
    return {f"gpu{i}": dict(zip(q.split(","), (x.strip() for x in line.split(",")), strict=False))
            for i, line in enumerate(out)}


# --- device side -------------------------------------------------------------------------------------------------
def init_tp(torch, tp: int) -> int:
    """Under torchrun (WORLD_SIZE = ``tp``): this rank's GPU and the NCCL group; returns the rank. Before any model."""
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != tp:
        raise SystemExit(f"validate_hf_llm: error: --tp {tp} runs under `torchrun --nproc-per-node {tp}` "
                         f"(WORLD_SIZE is {world})")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    # a case one rank fails leaves the other in a collective: the group's timeout turns that hang into an error
    dist.init_process_group("nccl", device_id=torch.device("cuda", local), timeout=datetime.timedelta(minutes=5))
    return dist.get_rank()


def free_bytes(torch, tp: int) -> int:
    """Free GPU memory, the least over the ranks under tp: every rank must skip the same cases."""
    free = torch.cuda.mem_get_info()[0]
    if tp > 1:
        import torch.distributed as dist

        t = torch.tensor([free], dtype=torch.int64, device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        free = int(t.item())
    return free


class Bench:
    """One model on the GPU and the ways transformers runs a step of it."""

    def __init__(self, d: dict, reps: int, warmup: int, tp: int = 1, routing: str = "model"):
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        self.torch, self.reps, self.warmup, self.tp = torch, reps, warmup, tp
        cfg = AutoConfig.for_model(**d)
        if tp > 1:
            from hwprobe.probes.calibration.hf_host import tp_model

            self.model = tp_model(torch, cfg, tp)
        else:
            with torch.device("cuda"):
                self.model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
        self.model.eval()
        self.cfg = self.model.config
        self.moe = hasattr(self.model, "set_experts_implementation") and any(
            "experts" in n for n, _ in self.model.named_modules())
        self.default_experts = self.model.get_experts_implementation() if self.moe else None
        if self.moe and routing == "balanced":
            self.balance()

    def expert_counts(self) -> tuple[int | None, int | None]:
        """(experts, experts per token) of an MoE's config."""
        cfg = self.cfg
        return (getattr(cfg, "num_experts", None) or getattr(cfg, "num_local_experts", None),
                getattr(cfg, "num_experts_per_tok", None))

    def routers(self) -> list:
        return [m for m in self.model.modules() if "Router" in type(m).__name__]

    def balance(self) -> None:
        """--routing balanced: every router's top-k ids replaced by balanced_ids (the module docstring)."""
        torch = self.torch
        experts, k = self.expert_counts()
        made: dict = {}

        def hook(_mod, _inp, out):
            outs = list(out) if isinstance(out, tuple) else [out]
            i = topk_ids_at(torch, outs, k)
            if i is None:
                return None
            t = outs[i]
            key = (t.shape[0], t.device, t.dtype)
            if key not in made:                  # the warm-up calls make it, before any capture or timed call
                made[key] = balanced_ids(torch, t.shape[0], k, experts, device=t.device).to(t.dtype)
            outs[i] = made[key]
            return tuple(outs) if isinstance(out, tuple) else outs[0]

        routers = self.routers()
        if not routers:
            raise RuntimeError("--routing balanced: no router modules (a type named *Router*) in this model")
        for m in routers:
            m.register_forward_hook(hook)

    # inputs as generate makes them
    def inputs(self, cache, batch: int, length: int, phase: str) -> dict:
        torch = self.torch
        t = length if phase == "prefill" else 1
        # the same tokens whenever a case's inputs are made: an MoE's routing counted in its own forward (routing)
        # is the routing its timed steps ran
        gen = torch.Generator(device="cuda").manual_seed(case_seed(phase, batch, length))
        ids = torch.randint(0, self.cfg.vocab_size, (batch, t), device="cuda", generator=gen)
        mask = torch.ones(batch, length, dtype=torch.long, device="cuda")
        pos = (torch.arange(length - t, length, device="cuda")).unsqueeze(0).expand(batch, -1).contiguous()
        return self.model.prepare_inputs_for_generation(
            ids, past_key_values=cache, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1,
            is_first_iteration=phase == "prefill")

    def static_cache(self, batch: int, cache_len: int, filled: int):
        from transformers import StaticCache

        cache = StaticCache(config=self.cfg, max_cache_len=cache_len)
        heads, hd = self.kv_heads(), getattr(self.cfg, "head_dim", None) or (
            self.cfg.hidden_size // self.cfg.num_attention_heads)
        cache.early_initialization(batch, heads, hd, self.torch.bfloat16, "cuda")
        self.set_counters(cache, filled)
        return cache

    def kv_heads(self) -> int:
        """The K/V heads this rank's cache holds: a tp slice of them (Phi-3 gathers qkv whole: all of them)."""
        from hwprobe.probes.calibration.hf_host import rank_kv_heads

        return rank_kv_heads({"num_key_value_heads": self.cfg.num_key_value_heads,
                              "model_type": self.cfg.model_type}, self.tp)

    @staticmethod
    def set_counters(cache, filled: int) -> None:
        """Every layer's device counter (and a sliding layer's host counter) back to ``filled`` positions."""
        for layer in cache.layers:
            if hasattr(layer, "cumulative_length_int"):
                layer.cumulative_length_int = filled
            if hasattr(layer, "cumulative_length") and not isinstance(layer.cumulative_length, int):
                layer.cumulative_length.fill_(filled)

    def dynamic_cache(self, batch: int, filled: int):
        from transformers import DynamicCache

        torch, cfg = self.torch, self.cfg
        cache = DynamicCache(config=cfg)
        hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        if filled:
            kv = torch.zeros(batch, self.kv_heads(), filled, hd, dtype=torch.bfloat16, device="cuda")
            for i in range(cfg.num_hidden_layers):
                cache.update(kv, kv, i)
        return cache

    def _time(self, fn, before, gpu_only: bool, hold_cycles: int) -> list[float]:
        """Per-call CUDA-event times (hwprobe's hf_host.event_times, as its eager calibration times a step). Under tp
        a GPU-only call starts after a barrier: no rank's interval holds another rank's late start."""
        from hwprobe.probes.calibration.hf_host import event_times

        if gpu_only and self.tp > 1:
            import torch.distributed as dist

            def ready():
                before()
                dist.barrier()
        else:
            ready = before
        return event_times(self.torch, fn, ready, self.reps, self.warmup, gpu_only, hold_cycles)

    def loop_s(self, fn, before, steps: int = LOOP_STEPS) -> float:
        """Seconds a step as generate's loop runs it: ``steps`` calls queued back to back behind one sleep, no sync
        between them, so each step takes the longer of its host issue and its GPU work."""
        from hwprobe.probes.calibration.hf_host import HOLD_CYCLES

        torch = self.torch
        before()
        torch.cuda.synchronize()
        if self.tp > 1:
            import torch.distributed as dist

            dist.barrier()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(HOLD_CYCLES)
        a.record()
        for _ in range(steps):
            before()
            fn()
        b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b) * 1e-3 / steps

    def experts_for(self, phase: str) -> None:
        """An MoE's experts as generate runs them: batched_mm in decode, the model's default (grouped_mm) in the
        prefill."""
        if self.moe:
            self.model.set_experts_implementation("batched_mm" if phase == "decode" else self.default_experts)

    def step(self, runtime: str, phase: str, batch: int, length: int):
        """(call, reset, gpu_only, cache_len) for one case, everything prepared and warmed."""
        torch = self.torch
        self.experts_for(phase)
        filled = 0 if phase == "prefill" else length - 1
        if runtime == "eager":
            cache = self.dynamic_cache(batch, filled)
            args = self.inputs(cache, batch, length, phase)
            snaps = [dict(layer.__dict__) for layer in cache.layers]

            def restore():                       # the cache as it was before the step: host attributes only
                for layer, snap in zip(cache.layers, snaps, strict=True):
                    layer.__dict__.clear()
                    layer.__dict__.update(snap)
            return (lambda: self.model(**args)), restore, False, length
        cache = self.static_cache(batch, length, filled)
        args = self.inputs(cache, batch, length, phase)

        def reset():
            self.set_counters(cache, filled)
        if runtime == "hf-compiled" and phase == "prefill":
            return (lambda: self.model(**args)), reset, False, length
        if runtime == "hf-compiled":
            reset()
            self.model(**args)       # eager first: --routing balanced's ids are made outside the compile (made while
            #                          dynamo traces, they were a CUDA graph's output, overwritten by the next replay)
            fwd = self.model.get_compiled_call(None)
            for _ in range(3):
                reset()
                fwd(**args)
            return (lambda: fwd(**args)), reset, True, length
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                reset()
                self.model(**args)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        reset()
        with torch.cuda.graph(g):
            self.model(**args)
        torch.cuda.synchronize()
        return g.replay, reset, True, length

    def measure(self, runtime: str, phase: str, batch: int, length: int) -> dict:
        """One round of a case: its cache length, what the interval held, and its per-call times."""
        compiled_tp = self.tp > 1 and runtime == "hf-compiled" and phase == "decode"
        with self.torch.inference_mode():
            call, reset, gpu_only, cache_len = self.step(runtime, phase, batch, length)
            times = self._time(call, reset, gpu_only, hold_cycles(runtime, phase, self.tp))
            loop = self.loop_s(call, reset) if compiled_tp else None
        return {"cache_len": cache_len, "timing": "gpu" if gpu_only else "host", "times": times,
                **({"loop_s": loop} if loop is not None else {})}

    def kernels(self, runtime: str, phase: str, batch: int, length: int) -> dict:
        from torch.profiler import ProfilerActivity, profile

        torch = self.torch
        with torch.inference_mode():
            call, reset, _, _ = self.step(runtime, phase, batch, length)
            reset()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                call()
                torch.cuda.synchronize()
        from hwprobe.probes.calibration.hf_host import kernel_events

        out = summarize_kernels(kernel_events(prof))
        out["traced"] = "graph replay" if runtime == "hf" else "call"
        return out

    def routing(self, phase: str, batch: int, length: int) -> dict | None:
        """An MoE's rows per expert at one case: one eager forward of the case's inputs, the top-k picks each
        router returns counted per layer (None for a dense model)."""
        if not self.moe:
            return None
        torch = self.torch
        experts, k = self.expert_counts()
        picks: list = []

        def hook(_mod, _inp, out):
            outs = list(out) if isinstance(out, tuple) else [out]
            i = topk_ids_at(torch, outs, k)
            if i is not None:
                picks.append(torch.bincount(outs[i].reshape(-1), minlength=experts).tolist())
        routers = self.routers()
        handles = [m.register_forward_hook(hook) for m in routers]     # after --routing balanced's: sees its ids
        try:
            with torch.inference_mode():
                call, _, _, _ = self.step("eager", phase, batch, length)     # the case's inputs, eagerly
                call()
        finally:
            for h in handles:
                h.remove()
        if not picks:
            return {"error": f"no router output of top-{k} expert ids ({len(routers)} router modules)"}
        return routing_summary(picks, experts)


def case_routing(bench, batch: int, length: int) -> dict:
    """A prefill case's routing (Bench.routing), or the error that stopped counting it: the case's time stands."""
    try:
        return bench.routing("prefill", batch, length)
    except Exception as e:  # noqa: BLE001 - the count is evidence beside the time, not the time
        return {"error": f"{type(e).__name__}: {e}"[:300]}


def kernel_cases(name: str, args) -> list[tuple[str, str, int, int]]:
    """The (runtime, phase, batch, length) steps whose kernels torch.profiler lists: the first case of each runtime
    and phase, or every case for the models named in --kernels-every-case (a tuned family's batch effects)."""
    every = name in args.kernels_every_case
    out = []
    for rt in args.runtimes:
        for phase, lst in (("prefill", args.prefill), ("decode", args.compiled_decode if rt == "hf-compiled"
                                                       else args.decode)):
            cases = parse_cases(lst)
            out += [(rt, phase, b, n) for b, n in (cases if every else cases[:1])]
    return out


def run_model(name: str, d: dict, args, out: dict, clock: HostClock | None = None) -> None:
    import torch

    t0 = time.perf_counter()
    try:
        bench = Bench(d, args.reps, args.warmup, args.tp, args.routing)
    except Exception as e:  # noqa: BLE001 - a model transformers cannot build is reported, the run goes on
        out["errors"].append({"model": name, "error": f"build: {type(e).__name__}: {e}"[:400]})
        return
    free = free_bytes(torch, args.tp)
    cases = plan(args.runtimes, parse_cases(args.prefill), parse_cases(args.decode),
                 parse_cases(args.compiled_decode))
    rows, times = [], []
    routed: dict = {}                      # (batch, length) -> an MoE prefill's routing: every runtime routes alike
    host = HostRounds(clock.reading()) if clock else None
    for rnd in range(args.rounds):          # the cases in turn, round after round: a disturbance spreads over them
        for i, (rt, phase, b, n) in enumerate(cases):
            if rnd == 0:
                rows.append({"model": name, "runtime": rt, "phase": phase, "batch": b,
                             "prompt" if phase == "prefill" else "context": n, "layers": d.get("num_hidden_layers")})
                times.append([])
                need = kv_bytes(d, b, n)
                if need > 0.6 * free:
                    rows[i]["skipped"] = f"cache + expanded K/V {need / 2**30:.1f} GiB of {free / 2**30:.0f} GiB free"
            if "skipped" in rows[i]:
                continue
            try:
                got = bench.measure(rt, phase, b, n)
                times[i].append(got.pop("times"))
                if "loop_s" in got:
                    rows[i].setdefault("loop_s_rounds", []).append(got.pop("loop_s"))
                rows[i].update(got)
                if rnd == 0 and bench.moe and phase == "prefill":     # on the case's own tokens (case_seed)
                    rows[i]["routing"] = routed.get((b, n)) or case_routing(bench, b, n)
                    routed[(b, n)] = rows[i]["routing"]
            except Exception as e:  # noqa: BLE001 - out of memory, a capture transformers cannot do: said, skipped
                rows[i]["skipped"] = f"{type(e).__name__}: {e}"[:300]
            torch.cuda.empty_cache()
            if host:                           # the host just before and just after this case's round
                host.after(i, clock.reading())
    for i, (row, got) in enumerate(zip(rows, times, strict=True)):
        if "skipped" not in row and got:
            row.update(merge_rounds(got))
            row.update(host.of(i) if host else {})
        out["cases"].append(row)
        what = f"{name} {row['runtime']} {row['phase']} b={row['batch']} n={row.get('prompt') or row.get('context')}"
        if "median_s" in row:
            print(f"{what}: {row['median_s'] * 1e3:.3f} ms ({row['timing']}, {row['rounds']} rounds)", flush=True)
        else:
            print(f"{what}: skipped: {row['skipped']}", flush=True)
    if args.kernels:
        routed: set = set()
        for rt, phase, b, n in kernel_cases(name, args):
            try:
                k = bench.kernels(rt, phase, b, n)
                if bench.moe and (phase, b, n) not in routed:    # once a case: every runtime routes alike
                    routed.add((phase, b, n))
                    k["routing"] = bench.routing(phase, b, n)
            except Exception as e:  # noqa: BLE001
                k = {"error": f"{type(e).__name__}: {e}"[:300]}
            out["kernels"].append({"model": name, "runtime": rt, "phase": phase, "batch": b, "length": n,
                                   "cache_len": n, **k})
    del bench
    torch.cuda.empty_cache()
    out["models"][name]["wall_s"] = round(time.perf_counter() - t0, 1)


def load_configs(spec: str, layers: int) -> dict[str, dict]:
    out = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        p = Path(item)
        if p.exists():
            d = json.loads(p.read_text())
            name = p.stem if p.name != "config.json" else p.parent.name
        else:
            from hwprobe.models.llm import builtin

            key = builtin.find(item)
            if key is None:
                raise ValueError(f"{item!r} is neither a config.json nor a built-in LLM")
            d, name = dict(builtin.CONFIGS[key]), key
        out[name] = {"source": str(item), "layers_original": d.get("num_hidden_layers"),
                     "config": reduce_config(d, layers)}
    return out


def turn_group(tp: int):
    """The gloo group the ranks take turns on (host_calibration), made once a run; None on one GPU."""
    if tp <= 1:
        return None
    import datetime

    import torch.distributed as dist

    return dist.new_group(backend="gloo", timeout=datetime.timedelta(minutes=5))


def host_calibration(torch, turns=None) -> dict:
    """hwprobe's eager calibration on this machine, now: gpu.torch_kernels' bare-op host time per op and, beside it,
    transformers' own host time per kernel of a tiny Llama's eager decode step (hf_host). The eager runtime's
    predictions are priced with them (tools/compare_hf_llm.py), since a lent host's speed differs from the one the
    committed profile was measured on. Under tp (``turns``: the run's gloo group, turn_group) each rank reads it in
    turn, the others asleep on a barrier (hf_host.in_turn), as a one-GPU run issues alone. An error entry where
    hwprobe is not importable."""
    if turns is not None:
        from hwprobe.probes.calibration.hf_host import in_turn

        return in_turn(lambda: host_calibration(torch), turns)
    try:
        import numpy as np

        from hwprobe.probes.calibration.torch_kernels import eager_host_s, transformers_host
    except ImportError as e:
        return {"error": f"{type(e).__name__}: {e}"}
    with torch.inference_mode():
        per = eager_host_s(torch)
    out = {"eager_op_s": float(np.median(list(per.values()))), "per_op_s": per}
    hf, notes = transformers_host(torch)      # as the eager calibration measures it, with its reason where it can't
    if hf:
        out.update(hf_eager_kernel_s=hf["kernel_s"], hf=hf)
    else:
        out["hf_error"] = notes[0]
    return out


class HostClock:
    """transformers' host time per kernel now: hf_host's tiny Llama decode step (built and counted once), timed
    between the rounds of every model's cases, so that each case is priced with the host as it was around it (a lent
    host ran at two speeds, 1.8x apart, within one model's rounds on 2026-11-28). Under ``tp`` the tiny Llama is
    sharded by the tp plan as the models are, so the reading holds the tp hooks' host time: on 2x H200 (2026-11-29)
    its eager step cost 57.6-61.0 us a kernel against 39.1-39.8 unsharded, and llama-3.2-1b's tp-2 eager steps
    13.85-14.17 ms would have been priced -10 to -13% from it, -41% from the unsharded reading."""

    def __init__(self, torch, tp: int = 1):
        import transformers

        from hwprobe.probes.calibration import hf_host

        self.torch, self.hf_host = torch, hf_host
        model = hf_host.tp_model(torch, transformers.AutoConfig.for_model(**hf_host.CONFIG), tp) if tp > 1 else None
        with torch.inference_mode():
            self.step, self.restore = hf_host.decoder(torch, transformers, model=model, tp=tp)
            self.kernels = hf_host.kernels_per_step(torch, self.step, self.restore)

    def reading(self) -> float:
        """Seconds per kernel: the median of one round of hf_host's steps over the step's kernels."""
        with self.torch.inference_mode():
            got = self.hf_host.step_seconds(self.torch, self.step, self.restore, rounds=1)
        return self.hf_host.per_kernel(got, self.kernels)


class HostRounds:
    """The host readings around each case's rounds, taken in run order: the reading after one case's round is the one
    before the next case's. A round's host is the mean of the two around it; a case's the median of its rounds."""

    def __init__(self, first: float):
        self.last, self.rounds = first, {}

    def after(self, case: int, reading: float) -> None:
        self.rounds.setdefault(case, []).append((self.last + reading) / 2)
        self.last = reading

    def of(self, case: int) -> dict:
        got = self.rounds.get(case)
        return {"host_kernel_s": statistics.median(got), "host_kernel_s_rounds": got} if got else {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="comma list of config.json paths or built-in names")
    ap.add_argument("--layers", type=int, default=4, help="num_hidden_layers cut to this (0: the model's own)")
    ap.add_argument("--runtimes", default=",".join(RUNTIMES))
    ap.add_argument("--prefill", default=DEFAULT_PREFILL, help="BATCHxPROMPT cases")
    ap.add_argument("--decode", default=DEFAULT_DECODE, help="BATCHxCONTEXT cases (hf, eager)")
    ap.add_argument("--compiled-decode", default=DEFAULT_COMPILED_DECODE,
                    help="BATCHxCONTEXT cases for hf-compiled (each shape an Inductor compile)")
    ap.add_argument("--reps", type=int, default=20, help="timed calls per case (>= 20)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1, help="times each case is measured, the cases in turn (>= 1; "
                    "3 spreads a lent host's disturbances over the cases instead of one case's median)")
    ap.add_argument("--no-kernels", dest="kernels", action="store_false")
    ap.add_argument("--kernels-every-case", default="", help="comma list of model names (config file stems) whose "
                    "kernels are listed at every case, not only the first")
    ap.add_argument("--tp", type=int, default=1, help="tensor parallel through transformers' tp_plan: run under "
                    "`torchrun --nproc-per-node N` (every runtime; rank 0 writes --out)")
    ap.add_argument("--routing", choices=("model", "balanced"), default="model",
                    help="an MoE's routing: its random router's own (model) or every expert given the same rows "
                    "(balanced, as a trained router aims for; the module docstring says how)")
    ap.add_argument("--out", default="hf_llm_measured.json")
    args = ap.parse_args(argv)
    if args.reps < 20:
        ap.error("--reps must be >= 20")
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    if args.tp < 1:
        ap.error("--tp must be >= 1")
    args.runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    args.kernels_every_case = {m.strip() for m in args.kernels_every_case.split(",") if m.strip()}
    bad = [r for r in args.runtimes if r not in RUNTIMES]
    if bad:
        ap.error(f"unknown runtime(s) {bad}; known: {', '.join(RUNTIMES)}")
    try:
        for text in (args.prefill, args.decode, args.compiled_decode):
            parse_cases(text)
        configs = load_configs(args.configs, args.layers)
    except (ValueError, OSError) as e:
        ap.error(str(e))

    import torch
    import transformers

    rank = init_tp(torch, args.tp) if args.tp > 1 else 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "0")
    t0 = time.perf_counter()
    props = torch.cuda.get_device_properties(0)
    out = {"tool": "tools/validate_hf_llm.py", "torch": torch.__version__, "transformers": transformers.__version__,
           "cuda": torch.version.cuda, "gpu": props.name, "sms": props.multi_processor_count, "dtype": "bf16",
           "attn_implementation": "sdpa", "layers": args.layers, "reps": args.reps, "rounds": args.rounds,
           "tp": args.tp, "routing": args.routing,
           "clocks_before": clocks(),
           "models": {k: {kk: vv for kk, vv in v.items()} for k, v in configs.items()},
           "cases": [], "kernels": [], "errors": []}
    turns = turn_group(args.tp)
    out["host_before"] = host_calibration(torch, turns)
    clock = HostClock(torch, args.tp) if host_priced(args.runtimes) and "hf" in out["host_before"] else None
    out["host_clock"] = "tp" if clock and args.tp > 1 else "one GPU" if clock else None
    for name, c in configs.items():
        run_model(name, c["config"], args, out, clock)
    out["host_after"] = host_calibration(torch, turns)
    out["clocks_after"] = clocks()
    out["wall_s"] = round(time.perf_counter() - t0, 1)
    if rank:                                 # every rank ran every step (their collectives pair up); rank 0 writes
        return 0
    Path(args.out).write_text(json.dumps(out, indent=1))
    done = [c for c in out["cases"] if "median_s" in c]
    print(f"wrote {args.out}: {len(done)} cases timed, {len(out['cases']) - len(done)} skipped, "
          f"{len(out['errors'])} models failed, {out['wall_s']} s")
    return 0 if done and not out["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
