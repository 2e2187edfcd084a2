"""The ``fused`` runtime: what a serving engine (vLLM, TensorRT-LLM) launches for one step, as their model code
describes it. NOT validated against either engine: a plan, said so wherever it is priced.

Per layer: RMSNorm fused with the residual add (``fused_add_rms_norm``; the first layer's plain ``rms_norm``); one
QKV GEMM (``QKVParallelLinear``, bias in the epilogue); Qwen3's q/k norms (one kernel each); rotary in place on q
and k (one kernel); the K/V write into the paged cache (``reshape_and_cache_flash``); flash attention over the
cache (varlen / paged; decode splits the keys as FlashAttention's heuristic does, then a combine kernel); ``o_proj``;
with tensor parallel an all-reduce; ``fused_add_rms_norm``; one gate/up GEMM (``MergedColumnParallelLinear``);
``silu_and_mul``/``gelu_tanh_and_mul`` (one kernel); down; all-reduce. Mixture of experts: router GEMM,
``topk_softmax``, ``moe_align_block_size``, the fused expert GEMMs (one per projection over the experts touched),
act-and-mul, ``moe_sum``; Qwen2-MoE's shared expert beside it. Around the layers: the embedding (Gemma's
normaliser multiply), the final ``fused_add_rms_norm``, the lm_head on the last token, Gemma2's soft-cap. FP8
weights add a quantize kernel per GEMM input; tensor parallel splits heads and the FFN as hwprobe.lowering.llm.graph
does.
"""

from __future__ import annotations

import math

from hwprobe.lowering.llm.graph import A, Case, Quant, _check, _Emit, experts_touched, flash_splits, lm_head
from hwprobe.lowering.ops import KernelOp
from hwprobe.models.llm.config import LLMConfig


def _norm(e: _Emit, name: str, first: bool) -> None:
    t, h = e.t, e.cfg.hidden
    e.mem(name, "norm", (2 if first else 4) * t * h * A + h * A, 5 * t * h)


def _attention(e: _Emit, i: int) -> None:
    cfg, case, t, p = e.cfg, e.case, e.t, f"layers.{i}."
    d = cfg.head_dim
    qd, kvd = e.heads * d, e.kv_heads * d
    _norm(e, p + ("input_norm" if i == 0 else "add_input_norm"), i == 0)
    e.quantize(p + "qkv_quantize", t * cfg.hidden)
    e.gemm(p + "qkv_proj", t, qd + 2 * kvd, cfg.hidden)
    if cfg.qk_norm:
        e.norm(p + "q_norm", t * qd, d)
        e.norm(p + "k_norm", t * kvd, d)
    e.mem(p + "rotary", "elementwise", 2 * t * (qd + kvd) * A, 6 * t * (qd + kvd))
    e.mem(p + "cache_write", "copy", t * kvd * 2 * (A + e.q.kv_bytes))
    keys = cfg.keys(i, case.context)
    e.ops.append(_flash(e, p, keys))
    splits = flash_splits(case.batch * e.heads, case.tokens, keys, d, e.sms) if e.sms else 1
    if splits > 1:
        rows = case.batch * e.heads * case.tokens
        e.mem(p + "attention_combine", "reduction", splits * rows * (d + 1) * 4 + rows * d * A)
    e.quantize(p + "o_quantize", t * qd)
    e.gemm(p + "o_proj", t, cfg.hidden, qd)
    e.allreduce(p + "attn_allreduce", t * cfg.hidden)


def _flash(e: _Emit, p: str, keys: int) -> KernelOp:
    case, d = e.case, e.cfg.head_dim
    kv_bytes = 2 * case.batch * e.kv_heads * keys * d * e.q.kv_bytes
    return KernelOp(p + "attention", "attention", precision=e.q.act, batch=case.batch * e.heads, m=case.tokens,
                    n=keys, k=d, causal=case.phase == "prefill",
                    bytes=float(2 * e.t * e.heads * d * A + kv_bytes))


def _mlp(e: _Emit, i: int) -> None:
    cfg, t, p = e.cfg, e.t, f"layers.{i}."
    _norm(e, p + "add_post_attn_norm", False)
    if cfg.is_moe(i):
        _moe(e, p)
    else:
        e.quantize(p + "gate_up_quantize", t * cfg.hidden)
        e.gemm(p + "gate_up_proj", t, 2 * e.ffn, cfg.hidden)
        e.mem(p + "act_and_mul", "elementwise", 3 * t * e.ffn * A, 9 * t * e.ffn)
        e.quantize(p + "down_quantize", t * e.ffn)
        e.gemm(p + "down_proj", t, cfg.hidden, e.ffn)
    e.allreduce(p + "mlp_allreduce", t * cfg.hidden)


def _moe(e: _Emit, p: str) -> None:
    cfg, t = e.cfg, e.t
    E, k, h, w = cfg.experts, cfg.experts_per_tok, cfg.hidden, e.expert_ffn
    e.gemm(p + "router", t, E, h, quant=False)
    e.mem(p + "topk_softmax", "softmax", t * E * A + t * k * 8, 5 * t * E)
    e.mem(p + "moe_align_block_size", "reduction", t * k * 8 + E * 8)
    used = experts_touched(E, k, t)
    rows = math.ceil(t * k / used)
    e.quantize(p + "experts_quantize", t * h)
    e.gemm(p + "experts_gate_up", rows, 2 * w, h, batch=used)
    e.mem(p + "experts_act_and_mul", "elementwise", 3 * t * k * w * A, 9 * t * k * w)
    e.gemm(p + "experts_down", rows, h, w, batch=used)
    e.mem(p + "moe_sum", "reduction", t * k * h * A + t * h * A, t * k * h)
    if cfg.shared_ffn:
        e.gemm(p + "shared_gate_up_proj", t, 2 * e.shared_ffn, h)
        e.mem(p + "shared_act_and_mul", "elementwise", 3 * t * e.shared_ffn * A, 9 * t * e.shared_ffn)
        e.gemm(p + "shared_down_proj", t, h, e.shared_ffn)
        e.gemm(p + "shared_gate", t, 1, h, quant=False)
        e.mem(p + "shared_sigmoid_mul_add", "elementwise", 4 * t * h * A, 6 * t * h)


def lower_serving(cfg: LLMConfig, case: Case, quant: Quant | None = None,
                  sms: int | None = None) -> list[KernelOp]:
    """Every kernel of one serving-engine step (one rank's under tensor parallel), in launch order."""
    q = quant or Quant()
    _check(cfg, case)
    e = _Emit(cfg, case, q, sms)
    e.mem("embed", "embedding", 2 * e.t * cfg.hidden * A + 8 * e.t)
    if cfg.embed_scale:
        e.mem("embed_scale", "elementwise", 2 * e.t * cfg.hidden * A, e.t * cfg.hidden)
    for i in range(cfg.layers):
        _attention(e, i)
        _mlp(e, i)
    _norm(e, "add_final_norm", False)
    lm_head(e)
    return e.ops
