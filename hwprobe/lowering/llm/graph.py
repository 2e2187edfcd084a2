"""The ``graph`` runtime: a decoder-only LLM lowered to the kernels of the minimal hand-written static-cache model
(tools/validate_llm.py launches exactly these for Llama, replayed as a CUDA graph): the least PyTorch launches for
the model, not what transformers runs (hwprobe.lowering.llm.hf) nor a serving engine (hwprobe.lowering.llm.serving).

One KernelOp per kernel, in launch order:

- model: token embedding (a gather); GPT-2 adds a position embedding (a gather and an add); Gemma scales by
  sqrt(hidden) (one multiply); rotary models gather cos and sin for the positions (two gathers).
- per layer, attention half: the input norm (one fused RMSNorm/LayerNorm kernel); q, k and v projections (three
  GEMMs as HF Llama does; one c_attn GEMM for GPT-2; biases ride in the GEMM's epilogue); Qwen3's per-head q and k
  RMSNorms; rotary embedding on q and on k as HF computes it, ``q*cos + rotate_half(q)*sin`` = five elementwise
  kernels each (mul, neg, cat, mul, add); the KV-cache write (one copy each for K and V, at the cache's
  precision); attention as one fused (flash) kernel: batch = sequences x heads, m = new tokens, n = keys, k = head
  size, causal in prefill, K/V bytes by the KV heads (GQA) at the cache's precision (plus FlashAttention-2's
  split-KV combine kernel where its heuristic splits the keys: decode at small batch, given the SM count);
  o_proj; with tensor parallel an all-reduce; Gemma2's post-attention norm; the residual add.
- per layer, MLP half: the post-attention norm (Gemma2: pre- and post-feed-forward norms); gate and up GEMMs, the
  activation (SiLU or tanh-GELU) and the multiply, down GEMM (GPT-2: fc, GELU, proj); with tensor parallel an
  all-reduce; the residual add. Mixture of experts: router GEMM, softmax, top-k, weight renormalisation, token
  permutation (a gather), the experts as grouped GEMMs (one batched GEMM per projection over the experts the batch
  touches, expected count under uniform routing: E (1 - (1 - k/E)^tokens)), activation, multiply, and a weighted
  combine; Qwen2-MoE adds its shared expert and its sigmoid gate.
- head: the final norm over every token; lm_head on the LAST token only in prefill (what generation needs; HF's
  generate asks for the last position's logits), on each sequence's one token in decode; Gemma2's logit
  soft-capping (one kernel). With tensor parallel the lm_head is split by vocabulary and the logits all-gathered.

Precision: ``weights`` fp16/bf16 (math in that type), fp8 (W8A8: math in FP8 after a quantize kernel per GEMM
input), int8/int4 (weight-only: math in BF16, the weight read at 8 or 4 bits: KernelOp.weight_bits). Embedding,
router and lm_head stay in the activation type. ``kv`` sets the bytes of each cached K/V element.
Tensor parallel N: heads, KV heads (replicated when fewer than N) and the FFN (each expert's too) are split over N
ranks (GEMM n for q/k/v/gate/up, GEMM k for o_proj/down); each rank's kernels are listed. Norms, residual adds and
the embedding are replicated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwprobe.errors import InputError
from hwprobe.lowering.llm.routing import Routing
from hwprobe.lowering.ops import KernelOp
from hwprobe.models.llm.config import LLMConfig
from hwprobe.vocab import Precision

WEIGHTS = (Precision.FP16, Precision.BF16, Precision.FP8, Precision.INT8, Precision.INT4)
KV = (Precision.FP16, Precision.BF16, Precision.FP8, Precision.INT8)
PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class Quant:
    """Storage and math precisions of a run."""

    weights: str = "bf16"
    kv: str = "bf16"

    @property
    def act(self) -> str:
        """Activations between kernels (and attention's math): FP16 with FP16 weights, else BF16."""
        return "fp16" if self.weights == "fp16" else "bf16"

    @property
    def math(self) -> str:
        return "fp8" if self.weights == "fp8" else self.act

    @property
    def weight_bits(self) -> int | None:
        return {"int8": 8, "int4": 4}.get(self.weights)

    @property
    def kv_bytes(self) -> int:
        return 1 if self.kv in (Precision.FP8, Precision.INT8) else 2

    @property
    def weight_bytes(self) -> float:
        """Bytes per layer weight in memory: int4 carries an FP16 scale per group of 128 weights."""
        return {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5 + 2 / 128}[self.weights]


@dataclass(frozen=True)
class Case:
    """One forward pass: ``tokens`` new tokens per sequence (the prompt in prefill, 1 in decode) attending to
    ``context`` keys (the prompt in prefill; the cached tokens plus the new one in decode). ``routing``: an MoE
    prefill's rows per expert per layer (None: uniform routing)."""

    phase: str
    batch: int
    tokens: int
    context: int
    tp: int = 1
    routing: Routing | None = None

    @classmethod
    def prefill(cls, batch: int, prompt: int, tp: int = 1, routing: Routing | None = None) -> Case:
        return cls("prefill", batch, prompt, prompt, tp, routing)

    @classmethod
    def decode(cls, batch: int, context: int, tp: int = 1) -> Case:
        return cls("decode", batch, 1, context, tp)


A = 2  # bytes of an activation element (FP16/BF16)


class _Emit:
    """Collects the kernels of one forward pass with the run's sizes at hand."""

    def __init__(self, cfg: LLMConfig, case: Case, q: Quant, sms: int | None = None):
        self.cfg, self.case, self.q, self.sms = cfg, case, q, sms
        self.ops: list[KernelOp] = []
        n = case.tp
        self.t = case.batch * case.tokens                    # token rows in this pass
        self.heads = cfg.heads // n
        self.kv_heads = max(1, cfg.kv_heads // n)
        self.ffn = cfg.ffn // n
        self.expert_ffn = cfg.expert_ffn // n
        self.shared_ffn = cfg.shared_ffn // n

    def gemm(self, name: str, m: int, n: int, k: int, batch: int = 1, weight: bool = True, quant: bool = True):
        prec = self.q.math if quant else self.q.act
        bits = self.q.weight_bits if (weight and quant) else None
        self.ops.append(KernelOp(name, "gemm", precision=prec, m=m, n=n, k=k, batch=batch, weight_bits=bits))

    def mem(self, name: str, kind: str, nbytes: float, flops: float = 0.0):
        self.ops.append(KernelOp(name, kind, precision=self.q.act, bytes=float(nbytes), flops=float(flops)))

    def quantize(self, name: str, elems: int):
        """FP8 GEMMs read their input in FP8: one quantize kernel (read BF16, write FP8)."""
        if self.q.weights == "fp8":
            self.mem(name, "elementwise", elems * (A + 1), elems)

    def allreduce(self, name: str, elems: int):
        if self.case.tp > 1:
            self.ops.append(KernelOp(name, "allreduce", precision=self.q.act, bytes=float(elems * A),
                                     ranks=self.case.tp))

    def norm(self, name: str, elems: int, width: int):
        self.mem(name, "norm", 2 * elems * A + width * A, 4 * elems)


def _check(cfg: LLMConfig, case: Case) -> None:
    if case.phase not in PHASES:
        raise InputError(f"phase must be one of {', '.join(PHASES)}, got {case.phase!r}")
    for what, v in (("batch", case.batch), ("tokens", case.tokens), ("context", case.context), ("tp", case.tp)):
        if v < 1:
            raise InputError(f"{what} must be >= 1, got {v}")
    if case.context > cfg.max_positions:
        raise InputError(f"context {case.context} exceeds {cfg.name}'s max_position_embeddings {cfg.max_positions}")
    n = case.tp
    if n > 1:
        bad = [f"{f} {v}" for f, v in (("num_attention_heads", cfg.heads), ("intermediate_size", cfg.ffn),
                                       ("expert intermediate_size", cfg.expert_ffn),
                                       ("shared_expert_intermediate_size", cfg.shared_ffn)) if v % n]
        if cfg.kv_heads % n and n % cfg.kv_heads:
            bad.append(f"num_key_value_heads {cfg.kv_heads}")
        if bad:
            raise InputError(f"--tp {n} does not divide {cfg.name}'s {', '.join(bad)}")


def flash_splits(batch_heads: int, m: int, keys: int, head_dim: int, sms: int) -> int:
    """How many key splits FlashAttention-2 (PyTorch's flash backend) runs: its num_splits_heuristic over
    2 x SMs, with 64-row query blocks and 256/128/64-key blocks by head size. More than 1 launches a split-KV
    kernel and a combine kernel (decode at small batch)."""
    n_blocks = math.ceil(keys / (256 if head_dim <= 64 else 128 if head_dim <= 128 else 64))
    work, slots = batch_heads * math.ceil(m / 64), 2 * sms
    if work >= 0.8 * slots:
        return 1
    top = min(128, slots, n_blocks)

    def eligible(s: int) -> bool:
        return s == 1 or math.ceil(n_blocks / s) != math.ceil(n_blocks / (s - 1))

    eff = {s: (work * s / slots) / math.ceil(work * s / slots) for s in range(1, top + 1) if eligible(s)}
    best = max(eff.values(), default=0.0)
    return next((s for s, x in eff.items() if x >= 0.85 * best), 1)


def _embed(e: _Emit) -> None:
    cfg, t = e.cfg, e.t
    e.mem("embed", "embedding", 2 * t * cfg.hidden * A + 8 * t)
    if cfg.learned_positions:
        e.mem("pos_embed", "embedding", 2 * t * cfg.hidden * A + 8 * t)
        e.mem("embed_add", "elementwise", 3 * t * cfg.hidden * A, t * cfg.hidden)
    if cfg.embed_scale:
        e.mem("embed_scale", "elementwise", 2 * t * cfg.hidden * A, t * cfg.hidden)
    if cfg.rope:
        for part in ("cos", "sin"):
            e.mem(f"rope_{part}", "copy", 2 * t * cfg.head_dim * A + 8 * t)


def _rope(e: _Emit, p: str, which: str, heads: int) -> None:
    """HF's q*cos + rotate_half(q)*sin: mul, neg (of the second half), cat, mul, add. The two multiplies broadcast
    cos/sin over the heads (PyTorch's non-vectorized broadcast kernel: the 'bias' kind); the concatenation is a
    strided copy of its own ('cat')."""
    x = e.t * heads * e.cfg.head_dim
    for step, kind, nbytes in (("mul_cos", "bias", 2 * x), ("neg", "elementwise", x), ("cat", "cat", 2 * x),
                               ("mul_sin", "bias", 2 * x), ("add", "elementwise", 3 * x)):
        e.mem(f"{p}rope_{which}.{step}", kind, nbytes * A, x)


def _attention(e: _Emit, i: int) -> None:
    cfg, case, t, p = e.cfg, e.case, e.t, f"layers.{i}."
    qd, kvd = e.heads * cfg.head_dim, e.kv_heads * cfg.head_dim
    e.norm(p + "input_norm", t * cfg.hidden, cfg.hidden)
    e.quantize(p + "qkv_quantize", t * cfg.hidden)
    if cfg.qkv_fused:
        e.gemm(p + "qkv_proj", t, qd + 2 * kvd, cfg.hidden)
    else:
        for name, n in (("q_proj", qd), ("k_proj", kvd), ("v_proj", kvd)):
            e.gemm(p + name, t, n, cfg.hidden)
    if cfg.qk_norm:
        e.norm(p + "q_norm", t * qd, cfg.head_dim)
        e.norm(p + "k_norm", t * kvd, cfg.head_dim)
    if cfg.rope:
        _rope(e, p, "q", e.heads)
        _rope(e, p, "k", e.kv_heads)
    for name in ("k_cache_write", "v_cache_write"):
        e.mem(p + name, "copy", t * kvd * (A + e.q.kv_bytes))
    keys = cfg.keys(i, case.context)
    banded = case.phase == "prefill" and keys < case.context       # sliding window shorter than the prompt
    kv_bytes = 2 * case.batch * e.kv_heads * keys * cfg.head_dim * e.q.kv_bytes
    e.ops.append(KernelOp(p + "attention", "attention", precision=e.q.act, batch=case.batch * e.heads,
                          m=case.tokens, n=keys, k=cfg.head_dim, causal=case.phase == "prefill" and not banded,
                          bytes=float(2 * t * qd * A + kv_bytes)))
    splits = flash_splits(case.batch * e.heads, case.tokens, keys, cfg.head_dim, e.sms) if e.sms else 1
    if splits > 1:                                  # split-KV partials (FP32 outputs and log-sum-exps) combined
        rows = case.batch * e.heads * case.tokens
        e.mem(p + "attention_combine", "reduction", splits * rows * (cfg.head_dim + 1) * 4 + rows * cfg.head_dim * A)
    e.quantize(p + "o_quantize", t * qd)
    e.gemm(p + "o_proj", t, cfg.hidden, qd)
    e.allreduce(p + "attn_allreduce", t * cfg.hidden)
    if cfg.sandwich:
        e.norm(p + "post_attn_norm", t * cfg.hidden, cfg.hidden)
    e.mem(p + "attn_residual", "elementwise", 3 * t * cfg.hidden * A, t * cfg.hidden)


def _dense_mlp(e: _Emit, p: str, width: int, tag: str = "") -> None:
    cfg, t = e.cfg, e.t
    e.quantize(f"{p}{tag}up_quantize", t * cfg.hidden)
    if cfg.gated:
        e.gemm(f"{p}{tag}gate_proj", t, width, cfg.hidden)
        e.gemm(f"{p}{tag}up_proj", t, width, cfg.hidden)
        e.mem(f"{p}{tag}act", "elementwise", 2 * t * width * A, 8 * t * width)
        e.mem(f"{p}{tag}act_mul", "elementwise", 3 * t * width * A, t * width)
    else:
        e.gemm(f"{p}{tag}fc", t, width, cfg.hidden)
        e.mem(f"{p}{tag}act", "elementwise", 2 * t * width * A, 8 * t * width)
    e.quantize(f"{p}{tag}down_quantize", t * width)
    e.gemm(f"{p}{tag}down_proj" if cfg.gated else f"{p}{tag}proj", t, cfg.hidden, width)


def experts_touched(experts: int, per_token: int, tokens: int) -> int:
    """Expected number of distinct experts ``tokens`` tokens route to, each picking ``per_token`` of ``experts``
    uniformly: E (1 - (1 - k/E)^tokens), rounded, at least k."""
    used = experts * (1.0 - (1.0 - per_token / experts) ** tokens)
    return max(per_token, min(experts, round(used)))


def _moe_mlp(e: _Emit, p: str) -> None:
    cfg, t = e.cfg, e.t
    E, k, h = cfg.experts, cfg.experts_per_tok, cfg.hidden
    e.gemm(p + "router", t, E, h, quant=False)
    e.mem(p + "router_softmax", "softmax", 2 * t * E * 4, 5 * t * E)
    e.mem(p + "router_topk", "reduction", t * E * 4 + t * k * 12, t * E)
    e.mem(p + "router_renorm", "elementwise", 3 * t * k * 4, t * k)
    e.mem(p + "permute", "copy", 2 * t * k * h * A)
    used = experts_touched(E, k, t)
    rows = math.ceil(t * k / used)
    w = e.expert_ffn
    e.quantize(p + "experts_up_quantize", t * k * h)
    e.gemm(p + "experts_gate", rows, w, h, batch=used)
    e.gemm(p + "experts_up", rows, w, h, batch=used)
    e.mem(p + "experts_act", "elementwise", 2 * t * k * w * A, 8 * t * k * w)
    e.mem(p + "experts_act_mul", "elementwise", 3 * t * k * w * A, t * k * w)
    e.quantize(p + "experts_down_quantize", t * k * w)
    e.gemm(p + "experts_down", rows, h, w, batch=used)
    e.mem(p + "combine", "elementwise", (t * k * h + t * h) * A + t * k * 4, 2 * t * k * h)
    if cfg.shared_ffn:
        _dense_mlp(e, p, e.shared_ffn, tag="shared_")
        e.gemm(p + "shared_gate", t, 1, h, quant=False)
        e.mem(p + "shared_sigmoid_mul", "elementwise", 3 * t * h * A, 4 * t * h)
        e.mem(p + "shared_add", "elementwise", 3 * t * h * A, t * h)


def _mlp(e: _Emit, i: int) -> None:
    cfg, t, p = e.cfg, e.t, f"layers.{i}."
    e.norm(p + ("pre_ffn_norm" if cfg.sandwich else "post_attn_norm"), t * cfg.hidden, cfg.hidden)
    if cfg.is_moe(i):
        _moe_mlp(e, p)
    else:
        _dense_mlp(e, p, e.ffn)
    e.allreduce(p + "mlp_allreduce", t * cfg.hidden)
    if cfg.sandwich:
        e.norm(p + "post_ffn_norm", t * cfg.hidden, cfg.hidden)
    e.mem(p + "mlp_residual", "elementwise", 3 * t * cfg.hidden * A, t * cfg.hidden)


def _head(e: _Emit) -> None:
    e.norm("final_norm", e.t * e.cfg.hidden, e.cfg.hidden)
    lm_head(e)


def lm_head(e: _Emit) -> None:
    """The logits of the tokens a step samples from (prefill: the last token of each sequence), gathered across
    tensor-parallel ranks, soft-capped where the family does."""
    cfg, case = e.cfg, e.case
    rows = case.batch if case.phase == "prefill" else e.t           # prefill: the last token of each sequence
    vocab = cfg.vocab // case.tp if case.tp > 1 else cfg.vocab
    e.gemm("lm_head", rows, vocab, cfg.hidden, quant=False)
    if case.tp > 1:
        e.ops.append(KernelOp("logits_allgather", "allgather", precision=e.q.act, bytes=float(rows * cfg.vocab * A),
                              ranks=case.tp))
    if cfg.logit_softcap:
        e.mem("logit_softcap", "elementwise", 2 * rows * cfg.vocab * A, 3 * rows * cfg.vocab)


def lower(cfg: LLMConfig, case: Case, quant: Quant | None = None, sms: int | None = None) -> list[KernelOp]:
    """Every kernel of one forward pass (one rank's under tensor parallel), in launch order. ``sms``: the device's
    SM count, which decides FlashAttention's split-KV (None: no split assumed)."""
    q = quant or Quant()
    if q.weights not in WEIGHTS or q.kv not in KV:
        raise InputError(f"weights must be one of {', '.join(WEIGHTS)} and kv one of {', '.join(KV)}")
    _check(cfg, case)
    e = _Emit(cfg, case, q, sms)
    _embed(e)
    for i in range(cfg.layers):
        _attention(e, i)
        _mlp(e, i)
    _head(e)
    return e.ops


def group(name: str) -> str:
    """The op's role without its layer index: 'layers.3.q_proj' -> 'q_proj'."""
    if name.startswith("layers."):
        return name.split(".", 2)[2]
    return name
