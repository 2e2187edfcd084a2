"""Hugging Face transformers' own host time per kernel of an eager decode step, where transformers is installed.

The eager LLM runtimes (``--runtime eager``, and ``hf-compiled``'s prefill) are issued kernel by kernel by
transformers' Python code, and for a decode step the host is the bound: the GPU finishes each small kernel before
the next is issued. gpu.torch_kernels' bare-op loop (one F.relu, add, layer_norm ... after another) reads 10-15 us a
kernel on the lent H100 and H200 hosts, but transformers' modules cost 1.3-1.6x that per kernel: the fastest of
twenty decode steps of seven families (4 layers each, 2026-11-28) came to 14.6-17.4 us a kernel on an H200 and
14.7-18.8 on an H100, within about 10% of each other, where the bare ops read 10.8-12.5 and 10.1-15.2 us. So where
transformers is importable this times its own code: a tiny Llama (GQA, 4 layers, hidden 64: each kernel's GPU time
a few microseconds, under the host's) decoding one token over a ``DynamicCache``, as tools/validate_hf_llm.py times
the eager runtime. Its seconds per step over its kernels per step (torch.profiler's count) is the figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The tiny decoder: Llama's modules (RMSNorm, rotary, GQA attention through SDPA, SwiGLU MLP), BF16 on the GPU,
# random weights. hidden 64 keeps every kernel's GPU time at a few microseconds.
CONFIG: dict[str, Any] = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
                          "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
                          "vocab_size": 256, "max_position_embeddings": 1024}
FILLED = 63                 # cached positions before the step (the step decodes position 63)
STEPS, ROUNDS, WARM = 30, 3, 5


def import_ahead():
    """Import transformers and its Llama modules on a daemon thread (None where transformers is not installed): the
    import takes seconds of Python that the conv search's wait in this process can hide (gpu.torch_kernels starts it
    there). ``measure``'s own import then finds the modules loaded, or waits on the import lock for the rest."""
    from hwprobe.probes.imports import import_ahead as start

    return start("transformers", "transformers.models.llama.modeling_llama",
                 touch=("AutoConfig", "AutoModelForCausalLM", "DynamicCache"))


def decoder(torch, transformers) -> tuple[Any, Any]:
    """(step, restore): one eager decode step of the tiny Llama over a DynamicCache of FILLED positions, with its
    inputs as ``generate`` prepares them, and the cache put back as it was (DynamicCache grows by a cat)."""
    cfg = transformers.AutoConfig.for_model(**CONFIG)
    with torch.inference_mode(False), torch.device("cuda"):    # parameters as a user's model has them, whoever calls
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    cache = transformers.DynamicCache(config=model.config)
    head_dim = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    kv = torch.zeros(1, CONFIG["num_key_value_heads"], FILLED, head_dim, dtype=torch.bfloat16, device="cuda")
    for layer in range(CONFIG["num_hidden_layers"]):
        cache.update(kv, kv, layer)
    ids = torch.randint(0, CONFIG["vocab_size"], (1, 1), device="cuda")
    mask = torch.ones(1, FILLED + 1, dtype=torch.long, device="cuda")
    pos = torch.arange(FILLED, FILLED + 1, device="cuda").unsqueeze(0)
    args = model.prepare_inputs_for_generation(ids, past_key_values=cache, attention_mask=mask, position_ids=pos,
                                               use_cache=True, logits_to_keep=1, is_first_iteration=False)
    snaps = [dict(layer.__dict__) for layer in cache.layers]

    def restore() -> None:
        for layer, snap in zip(cache.layers, snaps, strict=True):
            layer.__dict__.clear()
            layer.__dict__.update(snap)

    return (lambda: model(**args)), restore


def kernel_events(prof) -> list[tuple[str, float]]:
    """(name, GPU microseconds) of every CUDA kernel a torch.profiler run saw (launches, memsets and graph events
    left out): how this calibration and tools/validate_hf_llm.py count a step's kernels alike."""
    return [(e.name, float(getattr(e, "device_time", 0.0) or getattr(e, "cuda_time", 0.0) or 0.0))
            for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")
            and not e.name.startswith(("cudaLaunch", "Memset", "cudaGraph"))]


def kernels_per_step(torch, step, restore) -> int:
    """The CUDA kernels one step launches, as torch.profiler lists them."""
    from torch.profiler import ProfilerActivity, profile

    restore()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    return len(kernel_events(prof))


def event_times(torch, fn, before, calls: int, warmup: int = 0, gpu_only: bool = False) -> list[float]:
    """Seconds of each of ``calls`` calls of ``fn`` between two CUDA events, after ``warmup`` untimed ones; ``before``
    (resetting a cache or counters) runs outside each timed pair. The host's issuing is in the interval unless
    ``gpu_only`` queues a sleep kernel first (then the interval holds the GPU's work alone). This calibration and
    tools/validate_hf_llm.py time a step alike."""
    for _ in range(warmup):
        before()
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(calls):
        before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if gpu_only:
            torch.cuda._sleep(2_000_000)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1e-3)
    return out


def step_seconds(torch, step, restore, steps: int = STEPS, rounds: int = ROUNDS, warm: int = WARM) -> list[float]:
    """The median seconds of a step per round (event_times, the host's issuing in the interval)."""
    return [float(np.median(event_times(torch, step, restore, steps, warm if r == 0 else 0))) for r in range(rounds)]


def per_kernel(step_s: list[float], kernels: int) -> float:
    """Host seconds per kernel: the median round's step over its kernels."""
    if kernels <= 0 or not step_s:
        raise ValueError(f"no kernel time from {kernels} kernels and {len(step_s)} rounds")
    return float(np.median(step_s)) / kernels


def measure(torch) -> dict[str, Any]:
    """transformers' host seconds per kernel of an eager decode step on this machine, with what it came from;
    raises ImportError where transformers is not installed."""
    import transformers

    with torch.inference_mode():
        step, restore = decoder(torch, transformers)
        rounds = step_seconds(torch, step, restore)
        kernels = kernels_per_step(torch, step, restore)    # after the timing: the profiler's hooks stay out of it
    return {"kernel_s": per_kernel(rounds, kernels), "kernels_per_step": kernels, "step_s": rounds,
            "version": transformers.__version__, "model": "LlamaForCausalLM", "config": dict(CONFIG),
            "filled": FILLED, "cache": "DynamicCache"}
