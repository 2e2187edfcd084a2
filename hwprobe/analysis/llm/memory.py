"""Parameters, KV cache and whether a run fits the device's memory (one rank's share under tensor parallel)."""

from __future__ import annotations

from dataclasses import dataclass

from hwprobe.lowering.llm.graph import A, Case, Quant
from hwprobe.models.llm.config import LLMConfig


@dataclass(frozen=True)
class Params:
    """Parameter counts: ``layer`` = the GEMM weights and biases of the blocks (what quantization stores at low
    precision), ``embedding`` = token (+ position) embeddings, ``lm_head`` = 0 when tied, ``norms``; ``active`` =
    those one token touches (its top-k experts only)."""

    layer: int
    embedding: int
    lm_head: int
    norms: int
    active_layer: int

    @property
    def total(self) -> int:
        return self.layer + self.embedding + self.lm_head + self.norms

    @property
    def active(self) -> int:
        return self.active_layer + self.embedding + self.lm_head + self.norms


def _attn_params(cfg: LLMConfig) -> int:
    h, qd, kvd = cfg.hidden, cfg.q_dim, cfg.kv_dim
    w = h * (qd + 2 * kvd) + qd * h
    if cfg.bias:
        w += qd + 2 * kvd + (h if cfg.family == "gpt2" else 0)       # GPT-2's c_proj has a bias too
    return w


def _mlp_params(cfg: LLMConfig, width: int) -> int:
    h = cfg.hidden
    if cfg.gated:
        return 3 * h * width
    return 2 * h * width + (width + h if cfg.bias else 0)


def params(cfg: LLMConfig) -> Params:
    layer = active = 0
    for i in range(cfg.layers):
        attn = _attn_params(cfg)
        if cfg.is_moe(i):
            expert = _mlp_params(cfg, cfg.expert_ffn)
            shared = _mlp_params(cfg, cfg.shared_ffn) + cfg.hidden if cfg.shared_ffn else 0
            router = cfg.hidden * cfg.experts
            layer += attn + cfg.experts * expert + shared + router
            active += attn + cfg.experts_per_tok * expert + shared + router
        else:
            layer += attn + _mlp_params(cfg, cfg.ffn)
            active += attn + _mlp_params(cfg, cfg.ffn)
    per_norm = cfg.hidden * (2 if cfg.norm == "layer" else 1)
    norms_per_layer = 4 if cfg.sandwich else 2
    norms = cfg.layers * norms_per_layer * per_norm + per_norm
    if cfg.qk_norm:
        norms += cfg.layers * 2 * cfg.head_dim
    embedding = cfg.vocab * cfg.hidden + (cfg.max_positions * cfg.hidden if cfg.learned_positions else 0)
    lm_head = 0 if cfg.tied else cfg.vocab * cfg.hidden
    return Params(layer, embedding, lm_head, norms, active)


def kv_bytes_per_token(cfg: LLMConfig, q: Quant, tp: int = 1) -> float:
    """K and V of one token over every layer: 2 x layers x kv_heads x head_dim x bytes (one rank's heads)."""
    kv_heads = max(1, cfg.kv_heads // tp)
    return 2 * cfg.layers * kv_heads * cfg.head_dim * q.kv_bytes


def kv_cache_bytes(cfg: LLMConfig, q: Quant, batch: int, tokens: int, tp: int = 1) -> float:
    """The cache holding ``tokens`` positions of ``batch`` sequences (a sliding-window layer keeps its window)."""
    kv_heads = max(1, cfg.kv_heads // tp)
    per_layer = sum(cfg.keys(i, tokens) for i in range(cfg.layers))
    return 2 * per_layer * kv_heads * cfg.head_dim * q.kv_bytes * batch


@dataclass
class Fit:
    weights_bytes: float
    kv_cache_bytes: float
    activation_bytes: float
    device_bytes: float | None

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes

    @property
    def fits(self) -> bool | None:
        return None if not self.device_bytes else self.total_bytes <= self.device_bytes

    def to_dict(self) -> dict:
        return {"weights_bytes": self.weights_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "activation_bytes": self.activation_bytes, "total_bytes": self.total_bytes,
                "device_bytes": self.device_bytes, "fits": self.fits}


def weight_bytes(cfg: LLMConfig, q: Quant, tp: int = 1) -> float:
    """One rank's weights: block GEMMs split by tp at the weight precision; the embedding replicated, the lm_head
    split by vocabulary, norms replicated, all in the activation type."""
    p = params(cfg)
    return p.layer / tp * q.weight_bytes + (p.embedding + p.norms) * A + p.lm_head / tp * A


def activation_bytes(cfg: LLMConfig, case: Case) -> float:
    """An estimate of the peak live activations: the residual stream, one layer's widest intermediates (q/k/v or
    the MLP's gate and up outputs) and the logits in FP32."""
    t = case.batch * case.tokens
    width = max(cfg.q_dim + 2 * cfg.kv_dim, 2 * max(cfg.ffn, cfg.expert_ffn * cfg.experts_per_tok)) // case.tp
    rows = case.batch if case.phase == "prefill" else t
    return t * (3 * cfg.hidden + width) * A + rows * cfg.vocab * 4


def fit(cfg: LLMConfig, case: Case, q: Quant, device_bytes: float | None) -> Fit:
    return Fit(weight_bytes(cfg, q, case.tp), kv_cache_bytes(cfg, q, case.batch, case.context, case.tp),
               activation_bytes(cfg, case), device_bytes)
