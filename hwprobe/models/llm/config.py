"""A decoder-only transformer's shape, read from a Hugging Face ``config.json`` (or a built-in dict).

Families understood: Llama, Mistral, Qwen2, Qwen3 (per-head q/k norms), Phi-3 (fused qkv_proj and gate_up_proj),
GPT-2 (fused c_attn, LayerNorm, learned positions), Gemma and Gemma2 (GeGLU, scaled embedding, Gemma2's four norms per
layer, alternating sliding window, soft-capping), and the mixture-of-experts Mixtral, Qwen2-MoE (shared expert) and
Qwen3-MoE. Which layers slide follows transformers 5.x: ``layer_types`` where the file gives it, else each family's
configuration default (Mistral/Mixtral/Phi-3: every layer once ``sliding_window`` is set; Qwen2/Qwen3: layers from
``max_window_layers`` on, only with ``use_sliding_window``; Qwen2-MoE: even layers below ``max_window_layers``;
Gemma2: even layers). Fields Hugging Face fills with a
default when a config omits them are defaulted the same way here (``num_key_value_heads`` = heads, ``head_dim`` =
hidden / heads, ``tie_word_embeddings`` per family); a field the shape cannot do without is refused in one line
that names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hwprobe.errors import InputError

# model_type -> family; architectures[0] is tried when model_type is missing.
FAMILIES = {
    "llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gpt2": "gpt2",
    "gemma": "gemma", "gemma2": "gemma2", "mixtral": "mixtral", "qwen2_moe": "qwen2_moe", "qwen3_moe": "qwen3_moe",
    "phi3": "phi3",
}
ARCHITECTURES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3", "GPT2LMHeadModel": "gpt2", "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2", "MixtralForCausalLM": "mixtral", "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe", "Phi3ForCausalLM": "phi3",
}
# Hugging Face's default for tie_word_embeddings where a config leaves it out.
TIED_DEFAULT = {"gpt2": True, "gemma": True, "gemma2": True}
# Families whose transformers tp plan gathers the fused projections whole on every rank (Phi-3: qkv and gate_up
# colwise_gather_output, o and down rowwise_split_input, because the modules split the fused output by a chunk): each
# rank attends over every head and runs the whole activation (hwprobe.lowering.llm.hf.rank_dims), its cache keeps
# every K/V head (hwprobe.probes.calibration.hf_host), and its hooks cost the host more than a Llama's per kernel
# (gpu.tp_host times them: hwprobe.predict.model.Predictor.for_tp).
GATHERED_TP = frozenset({"phi3"})


@dataclass(frozen=True)
class LLMConfig:
    """The shapes the lowering needs. ``ffn`` is the dense MLP width; MoE layers use ``expert_ffn`` for each of
    ``experts`` routed experts (``experts_per_tok`` active per token) and ``shared_ffn`` for a shared expert."""

    name: str
    family: str                  # llama qwen2 qwen3 phi3 gpt2 gemma gemma2 mixtral qwen2_moe qwen3_moe
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    max_positions: int
    tied: bool
    norm: str = "rms"            # rms | layer
    act: str = "silu"            # silu | gelu
    gated: bool = True           # gate and up GEMMs (SwiGLU/GeGLU) vs fc -> act -> proj
    qkv_fused: bool = False      # one GEMM for q, k, v (GPT-2's c_attn, Phi-3's qkv_proj)
    gate_up_fused: bool = False  # one GEMM for gate and up (Phi-3's gate_up_proj)
    bias: bool = False           # GEMM biases (fused into the GEMM's epilogue: no extra kernel)
    rope: bool = True
    learned_positions: bool = False
    qk_norm: bool = False        # Qwen3: RMSNorm over each head of q and k
    sandwich: bool = False       # Gemma2: norms after attention and after the MLP too
    embed_scale: bool = False    # Gemma: embeddings times sqrt(hidden)
    logit_softcap: bool = False  # Gemma2: tanh soft-capping of the final logits
    sliding_window: int = 0      # keys a sliding-window layer attends to (0: full attention)
    sliding_layers: tuple[int, ...] = ()   # the layers that slide (transformers' layer_types == sliding_attention)
    attn_softcap: bool = False   # Gemma2: tanh soft-capping of the attention logits (eager attention only)
    norm_topk: bool = False      # MoE: top-k weights renormalised to sum 1 (Mixtral always; Qwen: norm_topk_prob)
    experts: int = 0
    experts_per_tok: int = 0
    expert_ffn: int = 0
    shared_ffn: int = 0          # Qwen2-MoE's shared expert (with a sigmoid gate)
    moe_layers: tuple[int, ...] = ()
    source: str = ""

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def is_moe(self, layer: int) -> bool:
        return layer in self.moe_layers

    def keys(self, layer: int, context: int) -> int:
        """Keys layer ``layer`` attends to at ``context`` tokens (the window caps sliding layers)."""
        return min(context, self.sliding_window) if self.slides(layer) else context

    def slides(self, layer: int) -> bool:
        return bool(self.sliding_window) and layer in self.sliding_layers


def _family(d: dict[str, Any], src: str) -> tuple[str, str]:
    mt = d.get("model_type")
    if mt is None:
        archs = d.get("architectures") or []
        mt = next((ARCHITECTURES[a] for a in archs if a in ARCHITECTURES), None)
        if mt is None:
            raise InputError(f"{src}: missing field 'model_type' (and no known 'architectures' entry)")
    if mt not in FAMILIES:
        raise InputError(f"{src}: model_type {mt!r} is not one hwprobe lowers; known: {', '.join(FAMILIES)}")
    return mt, FAMILIES[mt]


def _need(d: dict[str, Any], src: str, *names: str) -> int:
    """The first of ``names`` present (GPT-2 and Llama spell fields differently), as a positive int."""
    for n in names:
        v = d.get(n)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{src}: field {n!r} must be a positive integer, got {v!r}")
            return v
    raise InputError(f"{src}: missing field {names[0]!r}")


def _opt(d: dict[str, Any], src: str, name: str, default: int) -> int:
    return _need(d, src, name) if d.get(name) is not None else default


def _moe(d: dict[str, Any], src: str, family: str, layers: int) -> dict[str, Any]:
    """Expert counts; which layers are sparse (Qwen-MoE's decoder_sparse_step and mlp_only_layers)."""
    if family == "mixtral":
        experts, ffn = _need(d, src, "num_local_experts"), _need(d, src, "intermediate_size")
        shared = 0
        ids = tuple(range(layers))
    else:
        experts, ffn = _need(d, src, "num_experts"), _need(d, src, "moe_intermediate_size")
        shared = _opt(d, src, "shared_expert_intermediate_size", 0) if family == "qwen2_moe" else 0
        step = _opt(d, src, "decoder_sparse_step", 1)
        dense = set(d.get("mlp_only_layers") or [])
        ids = tuple(i for i in range(layers) if i not in dense and (i + 1) % step == 0)
    k = _need(d, src, "num_experts_per_tok")
    if k > experts:
        raise InputError(f"{src}: num_experts_per_tok {k} exceeds the {experts} experts")
    return {"experts": experts, "experts_per_tok": k, "expert_ffn": ffn, "shared_ffn": shared, "moe_layers": ids}


def _shape(d: dict[str, Any], src: str, family: str) -> dict[str, Any]:
    gpt2 = family == "gpt2"
    hidden = _need(d, src, "n_embd" if gpt2 else "hidden_size", "hidden_size")
    heads = _need(d, src, "n_head" if gpt2 else "num_attention_heads", "num_attention_heads")
    layers = _need(d, src, "n_layer" if gpt2 else "num_hidden_layers", "num_hidden_layers")
    kv = _opt(d, src, "num_key_value_heads", heads)
    head_dim = _opt(d, src, "head_dim", 0) or hidden // heads
    if not gpt2 and d.get("head_dim") is None and hidden % heads:
        raise InputError(f"{src}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
                         "give 'head_dim'")
    if heads % kv:
        raise InputError(f"{src}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
    if gpt2:
        ffn = d.get("n_inner") or 4 * hidden
    elif family in ("qwen2_moe", "qwen3_moe") or family == "mixtral":
        ffn = _opt(d, src, "intermediate_size", 0)
    else:
        ffn = _need(d, src, "intermediate_size")
    return {"hidden": hidden, "heads": heads, "layers": layers, "kv_heads": kv, "head_dim": head_dim, "ffn": ffn,
            "vocab": _need(d, src, "vocab_size"),
            "max_positions": _opt(d, src, "n_positions" if gpt2 else "max_position_embeddings", 1 << 20)}


def _sliding(d: dict[str, Any], family: str, model_type: str, layers: int) -> dict[str, Any]:
    """The window and the layers that slide, as transformers 5.x decides them (its configuration classes'
    defaults where the file leaves a field out)."""
    default = {"mistral": 4096, "gemma2": 4096}.get(model_type)
    window = d.get("sliding_window", default)
    if not window or family == "gpt2" or family == "gemma":
        return {}
    types = d.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        ids = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    elif family == "gemma2":
        ids = tuple(i for i in range(layers) if (i + 1) % 2)
    elif model_type in ("mistral", "mixtral", "phi3"):
        ids = tuple(range(layers))
    elif not d.get("use_sliding_window", False):
        ids = ()
    elif family in ("qwen2", "qwen3"):
        ids = tuple(range(int(d.get("max_window_layers", 28)), layers))
    elif family == "qwen2_moe":
        ids = tuple(i for i in range(layers) if (i + 1) % 2 and i < int(d.get("max_window_layers", 28)))
    else:
        ids = tuple(range(layers))
    return {"sliding_window": int(window), "sliding_layers": ids} if ids else {}


def _traits(d: dict[str, Any], family: str, model_type: str, layers: int) -> dict[str, Any]:
    """What the family does beyond a Llama block."""
    t: dict[str, Any] = {"tied": bool(d.get("tie_word_embeddings", TIED_DEFAULT.get(family, False)))}
    if family == "gpt2":
        t.update(norm="layer", act="gelu", gated=False, qkv_fused=True, bias=True, rope=False,
                 learned_positions=True)
    elif family in ("gemma", "gemma2"):
        t.update(act="gelu", embed_scale=True)
        if family == "gemma2":       # transformers' Gemma2Config defaults: final 30.0, attention 50.0
            t.update(sandwich=True, logit_softcap=d.get("final_logit_softcapping", 30.0) is not None,
                     attn_softcap=d.get("attn_logit_softcapping", 50.0) is not None)
    else:
        t["bias"] = family in ("qwen2", "qwen2_moe") or bool(d.get("attention_bias"))
        t["qk_norm"] = family in ("qwen3", "qwen3_moe")
        if family == "phi3":
            t.update(qkv_fused=True, gate_up_fused=True)
        if family in ("mixtral", "qwen2_moe", "qwen3_moe"):
            t["norm_topk"] = family == "mixtral" or bool(d.get("norm_topk_prob", False))
    t.update(_sliding(d, family, model_type, layers))
    return t


def parse(d: dict[str, Any], name: str, source: str = "") -> LLMConfig:
    """An LLMConfig from a config.json dict; ``name`` labels it and prefixes every refusal."""
    if not isinstance(d, dict):
        raise InputError(f"{name}: a config.json holds a JSON object, got {type(d).__name__}")
    model_type, family = _family(d, name)
    shape = _shape(d, name, family)
    moe = _moe(d, name, family, shape["layers"]) if family in ("mixtral", "qwen2_moe", "qwen3_moe") else {}
    dense_layers = shape["layers"] - len(moe.get("moe_layers", ()))
    if dense_layers and not shape["ffn"]:
        raise InputError(f"{name}: missing field 'intermediate_size' (the dense layers need it)")
    traits = _traits(d, family, model_type, shape["layers"])
    return LLMConfig(name=name, family=family, source=source, **shape, **moe, **traits)


def load(model: str) -> LLMConfig:
    """A config.json path or a built-in name (hwprobe.models.llm.builtin.CONFIGS)."""
    from hwprobe.models.llm import builtin

    key = builtin.find(model)
    p = Path(model)
    if key and not p.exists():
        return parse(builtin.CONFIGS[key], key, source="built-in")
    if not p.exists():
        raise InputError(f"{model!r} does not exist and is not a built-in LLM ({', '.join(builtin.CONFIGS)})")
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read {model!r}: {e}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{model!r} is not JSON: {e.msg} at line {e.lineno}") from None
    cfg = parse(d, str(p), source=str(p))
    label = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    return replace(cfg, name=str(d.get("_name_or_path") or label))
