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

Each family's modules cost the host differently per kernel: Gemma-2 issues more small kernels per module call than
Llama, so each costs less. The fastest step of host-bound 1 x 512 prefills of 4-layer models (2026-11-29, H200), per
kernel over the tiny Llama's figure, read 0.78-0.92x for gemma-2-9b and 0.85-0.91x for qwen3-8b, where the
Llama-family models read 0.95-1.04x; the family's own tiny decode step read 0.74-0.85x and 0.79-0.86x
(profiles/h200-sxm/2026-11-29-s47). So the same tiny decoder is also built in each other family's own classes
(FAMILIES) and timed in turn with the Llama, round by round: its per-kernel time over the Llama's in the same round
(``vs_llama``, the median over rounds) prices that family's steps. The MoE families are not timed: their
ratios did not repeat (hwprobe.predict.calibration.UNSTEADY_FAMILIES).
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
FAMILY_STEPS, FAMILY_WARM = 15, 3     # per round of each other family: ~2 s for the five in an H200 `full`
# The dense families transformers' LLM runtimes lower (hwprobe.models.llm.config; Mistral's classes are Llama's),
# each as CONFIG in its own classes: head_dim 16 where the family's default is another. The special token ids are
# cleared (Phi-3's default pad id is beyond the tiny vocabulary). The MoE families' tiny decoders were timed too until
# 2026-11-29: their ratios did not repeat (qwen3_moe 0.86-1.53 over five readings; the predictor never priced them,
# hwprobe.predict.calibration.UNSTEADY_FAMILIES), and they cost `full` ~1.7 s of the families' 3.7.
FAMILIES: dict[str, dict[str, Any]] = {
    "qwen2": {"model_type": "qwen2"},
    "qwen3": {"model_type": "qwen3", "head_dim": 16},
    "phi3": {"model_type": "phi3"},
    "gemma": {"model_type": "gemma", "head_dim": 16},
    "gemma2": {"model_type": "gemma2", "head_dim": 16},
}


def family_config(family: str) -> dict[str, Any]:
    """CONFIG in ``family``'s own classes (FAMILIES)."""
    return {**CONFIG, "bos_token_id": None, "eos_token_id": None, "pad_token_id": None, **FAMILIES[family]}


def import_ahead():
    """Import transformers and its Llama modules on a daemon thread (None where transformers is not installed): the
    import takes seconds of Python that the conv search's wait in this process can hide (gpu.torch_kernels starts it
    there). ``measure``'s own import then finds the modules loaded, or waits on the import lock for the rest."""
    from hwprobe.probes.imports import import_ahead as start

    return start("transformers", "transformers.models.llama.modeling_llama",
                 touch=("AutoConfig", "AutoModelForCausalLM", "DynamicCache"))


def rank_kv_heads(config: dict[str, Any], tp: int) -> int:
    """The K/V heads one rank caches under transformers' tp plan over ``tp`` GPUs (every one where the plan gathers
    the fused qkv: hwprobe.models.llm.config.GATHERED_TP)."""
    from hwprobe.models.llm.config import FAMILIES as MODEL_FAMILIES
    from hwprobe.models.llm.config import GATHERED_TP

    n = int(config["num_key_value_heads"])
    return n if tp == 1 or MODEL_FAMILIES.get(str(config.get("model_type"))) in GATHERED_TP else n // tp


def in_turn(fn, group) -> Any:
    """``fn()`` on each rank of the torch.distributed group in turn, the others waiting on ``group``'s barrier (a gloo
    group, whose wait sleeps on a socket where an NCCL barrier's synchronize spins a core): one process issues at a
    time, as a one-GPU run's does. A rank's failure is raised after its turn's barrier (no rank left waiting)."""
    import torch.distributed as dist

    out, err = None, None
    for r in range(dist.get_world_size()):
        if dist.get_rank() == r:
            try:
                out = fn()
            except Exception as e:  # noqa: BLE001 - raised below, once the others are released
                err = e
        dist.barrier(group=group)
    if err is not None:
        raise err
    return out


def decoder(torch, transformers, config: dict[str, Any] | None = None, model=None, tp: int = 1) -> tuple[Any, Any]:
    """(step, restore): one eager decode step of the tiny decoder (``config``, CONFIG's Llama by default) over a
    DynamicCache of FILLED positions, with its inputs as ``generate`` prepares them, and the cache put back as it was
    (DynamicCache grows by a cat). ``model``: that decoder already built (tools/validate_hf_llm.py loads it sharded by
    transformers' tp plan over ``tp`` ranks: each rank caches its share of the K/V heads)."""
    config = config or CONFIG
    if model is None:
        cfg = transformers.AutoConfig.for_model(**config)
        with torch.inference_mode(False), torch.device("cuda"):    # parameters as a user's model has them
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16,
                                                                  attn_implementation="sdpa")
    model.eval()
    cache = transformers.DynamicCache(config=model.config)
    head_dim = getattr(model.config, "head_dim", None) or config["hidden_size"] // config["num_attention_heads"]
    kv = torch.zeros(1, rank_kv_heads(config, tp), FILLED, head_dim, dtype=torch.bfloat16, device="cuda")
    for layer in range(config["num_hidden_layers"]):
        cache.update(kv, kv, layer)
    ids = torch.full((1, 1), 7, device="cuda")     # one token id on every rank of a tp group (its step is collective)
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


def tp_model(torch, cfg, tp: int, where=None):
    """``cfg``'s model sharded by transformers' own tp plan over the ``tp`` ranks of the torch.distributed group, as a
    user loads it: random BF16 weights saved once by rank 0 (``from_config`` takes no distributed config; under
    ``where``, else a folder of the temporary directory named by the config), then ``from_pretrained(
    distributed_config=DistributedConfig(tp_size=tp))`` on every rank."""
    import hashlib
    import tempfile
    from pathlib import Path

    import torch.distributed as dist
    from transformers import AutoModelForCausalLM, DistributedConfig

    if where is None:
        key = hashlib.sha1(cfg.to_json_string().encode()).hexdigest()[:12]
        where = Path(tempfile.gettempdir()) / "hwprobe-hf-tp" / key
    where = Path(where)
    if dist.get_rank() == 0 and not (where / "config.json").exists():
        with torch.inference_mode(False), torch.device("cuda"):
            m = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        m.save_pretrained(where)
        del m
        torch.cuda.empty_cache()
    dist.barrier()
    with torch.inference_mode(False):
        return AutoModelForCausalLM.from_pretrained(where, dtype=torch.bfloat16, attn_implementation="sdpa",
                                                    distributed_config=DistributedConfig(tp_size=tp))


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


HOLD_CYCLES = 2_000_000     # gpu_only's sleep kernel, ~1 ms on an H200: longer than a graph replay's issue


def event_times(torch, fn, before, calls: int, warmup: int = 0, gpu_only: bool = False,
                hold_cycles: int = HOLD_CYCLES) -> list[float]:
    """Seconds of each of ``calls`` calls of ``fn`` between two CUDA events, after ``warmup`` untimed ones; ``before``
    (resetting a cache or counters) runs outside each timed pair. The host's issuing is in the interval unless
    ``gpu_only`` queues a sleep kernel of ``hold_cycles`` first (then the interval holds the GPU's work alone, where
    the host issues the call within the sleep). This calibration and tools/validate_hf_llm.py time a step alike."""
    for _ in range(warmup):
        before()
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(calls):
        before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if gpu_only:
            torch.cuda._sleep(hold_cycles)
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


def vs_llama(family_s: list[float], family_kernels: int, llama_s: list[float], llama_kernels: int) -> float:
    """A family's host time per kernel over the Llama's: the median over rounds of the two rounds' ratio (timed in
    turn, so a host that changes speed between rounds moves both)."""
    if family_kernels <= 0 or llama_kernels <= 0 or not family_s or len(family_s) != len(llama_s):
        raise ValueError(f"no ratio from {len(family_s)} and {len(llama_s)} rounds of {family_kernels} and "
                         f"{llama_kernels} kernels")
    pairs = zip(family_s, llama_s, strict=True)
    return float(np.median([(f / family_kernels) / (llama / llama_kernels) for f, llama in pairs]))


def attempt(name: str, errors: dict[str, str], fn, drop: tuple[dict, ...] = ()) -> Any:
    """``fn()`` for decoder ``name``. The Llama's failure raises (no figure without it); another family's is said in
    ``errors``, drops ``name`` from each of ``drop`` and gives None, the others measured."""
    try:
        return fn()
    except Exception as e:
        if name == "llama":
            raise
        errors[name] = f"{type(e).__name__}: {e}"[:200]
        for d in drop:
            d.pop(name, None)
        return None


def measure(torch, families: tuple[str, ...] = tuple(FAMILIES)) -> dict[str, Any]:
    """transformers' host seconds per kernel of an eager decode step on this machine, with what it came from, and
    each of ``families``' per kernel against it (``families``; a family its transformers cannot build or run is
    listed under ``family_errors``); raises ImportError where transformers is not installed."""
    import transformers

    steps, errors = {}, {}
    with torch.inference_mode():
        steps["llama"] = decoder(torch, transformers)
        for fam in families:
            built = attempt(fam, errors, lambda fam=fam: decoder(torch, transformers, family_config(fam)))
            if built is not None:
                steps[fam] = built
        rounds: dict[str, list[float]] = {name: [] for name in steps}
        kernels: dict[str, int] = {}
        for r in range(ROUNDS):             # every decoder in turn, round after round: a host's drift moves them alike
            for name in list(rounds):
                step, restore = steps[name]
                n, warm = (STEPS, WARM) if name == "llama" else (FAMILY_STEPS, FAMILY_WARM)
                got = attempt(name, errors, lambda s=step, z=restore, n=n, w=warm if r == 0 else 0:
                              step_seconds(torch, s, z, n, 1, w), (rounds,))
                if got is not None:
                    rounds[name] += got
        for name in list(rounds):           # after the timing: the profiler's hooks stay out of it
            got = attempt(name, errors, lambda name=name: kernels_per_step(torch, *steps[name]), (rounds,))
            if got is not None:
                kernels[name] = got
    llama_s, llama_k = rounds.pop("llama"), kernels["llama"]
    fams = {name: {"kernel_s": per_kernel(got, kernels[name]), "kernels_per_step": kernels[name], "step_s": got,
                   "vs_llama": vs_llama(got, kernels[name], llama_s, llama_k),
                   "model_type": FAMILIES[name]["model_type"]}
            for name, got in rounds.items()}
    out = {"kernel_s": per_kernel(llama_s, llama_k), "kernels_per_step": llama_k, "step_s": llama_s,
           "version": transformers.__version__, "model": "LlamaForCausalLM", "config": dict(CONFIG),
           "filled": FILLED, "cache": "DynamicCache", "families": fams}
    if errors:
        out["family_errors"] = errors
    return out
