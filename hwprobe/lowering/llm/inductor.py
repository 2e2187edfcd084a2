"""The decode step of ``generate(cache_implementation="static")`` as ``torch.compile`` runs it: ``generate`` compiles
the model's ``__call__`` with transformers' ``CompileConfig`` (backend inductor, mode reduce-overhead, dynamic None:
the first call is traced with static shapes) and replays it as a CUDA graph (cudagraph trees), after copying the
inputs that have no static address (input ids, position ids, the 4D masks ``prepare_inputs_for_generation`` built)
into the graph's buffers.

What Inductor does to the modules' kernels (hwprobe.lowering.llm.hf lists them): matrix products stay library calls
(``extern_kernels.mm``/``bmm``/``addmm``: cuBLAS; reduce-overhead does not autotune Triton templates), so do SDPA
(the memory-efficient kernel under the mask) and ``topk``; every chain of pointwise ops and the reduction it feeds
becomes one Triton kernel that reads its inputs once and writes its outputs once:

- the embedding gather, Gemma's scale and the first RMSNorm: one reduction kernel (it also writes the residual);
- the rotary table: the FP32 cast of the positions, the K = 1 batched GEMM (cuBLAS), one kernel for cos and sin;
- per layer: q, k, v GEMMs; Qwen3's per-head norm folded into the rotary kernel of q and of k; rotary on q (one
  kernel); rotary on k fused with its ``index_copy_`` into the cache (one scatter kernel); V's ``index_copy_``; the
  counter's ``add_`` (a one-element kernel); ``repeat_kv`` of K and of V (one copy kernel each: SDPA needs them
  materialised); SDPA; ``o_proj``; the residual add fused with the next RMSNorm (Gemma2: post-attention norm, add and
  pre-feed-forward norm in one); gate and up GEMMs; act x up (one kernel); down; the residual add fused with the
  next layer's input norm (the last one with the final norm);
- the boolean mask made additive once per step per mask type (the same ops on the same input in every layer are
  one node after AOTAutograd's common-subexpression pass);
- ``lm_head`` (cuBLAS) and Gemma2's soft-cap (one kernel);
- MoE (``batched_mm``, the decode path): router GEMM, softmax (one kernel with the casts), ``topk``, the
  renormalisation (one kernel), the expanded tokens and the gathered gate_up weights (one kernel each), the batched
  GEMV, act x up, the gathered down weights, the batched GEMV, the weighted sum over k (one kernel).

Under tensor parallel (``from_pretrained(distributed_config=DistributedConfig(tp_size=N))``, then generate's
compiled step; hwprobe.lowering.llm.hf has the tp plans) the step is still one graph: Dynamo traces transformers'
in-place ``dist.all_reduce`` and the gathers as functional collectives, one NCCL kernel each, and Inductor keeps its
fusions around them. One rank's step: its heads and FFN slice; an all-reduce after o_proj and after down_proj; a
tied embedding vocab-parallel (an ids mask, the lookup with the foreign rows zeroed, an all-reduce, then the first
norm on its own); lm_head's vocabulary slice all-gathered, the shards' cat a kernel of its own when the batch is over
one (Gemma2's soft-cap takes it in); Phi-3's qkv and gate_up all-gathered and the inputs of o_proj and down_proj cut
to the rank's columns (a copy each). Phi-3 and Gemma2 are held out: their cats are taken to fuse into the pointwise
kernel that reads them (rope, act x up, the soft-cap) by Inductor's rule, not read from their kernel lists. Rank 0's
kernel list of llama-3.2-1b, 16 x 2048, on 2x H200 (profiles/h200x2/2026-11-29-tp2-compiled): 95 kernels, the
one-GPU 81 plus 9 all-reduces, the all-gather, the logits' cat and the embedding's two. Not modelled (TP_REFUSED):
families with q/k norms, where the tp plan's replicated norm weights split the compiled step into several CUDA graphs
with the host between them, and MoE experts (not measured).

Fusion choices here follow Inductor's scheduler rules (pointwise into their consumer reduction or producer, no
fusion across extern kernels or with mutated buffers); the device run's kernel list (tools/validate_hf_llm.py)
is the check.
"""

from __future__ import annotations

from hwprobe.errors import NotModelled
from hwprobe.lowering.llm.graph import Quant
from hwprobe.lowering.llm.hf import F32, I64, A, Step, _check, collective, rank_dims, split_input, topk_ops
from hwprobe.lowering.ops import KernelOp
from hwprobe.models.llm.config import LLMConfig

TP_REFUSED = ("hf-compiled under tensor parallel is modelled for dense families without q/k norms: transformers 5.17's "
              "tp plan makes Qwen3's q/k norm weights replicated DTensors and generate's compiled step then runs as "
              "several CUDA graphs with the host between them (qwen3-8b, 16 x 2048 on 2x H200: 5.4 ms, where "
              "mistral-7b took 1.6), and MoE experts are not measured: use --runtime hf")


class _Ind:
    def __init__(self, cfg: LLMConfig, step: Step, q: Quant):
        self.cfg, self.step, self.q = cfg, step, q
        self.b = step.case.batch
        self.tp = step.case.tp
        self.h, self.kvh, self.ffn = rank_dims(cfg, self.tp)
        self.ops: list[KernelOp] = []

    def collective(self, name: str, kind: str, width: int) -> None:
        """A functional collective in the graph (one NCCL kernel on one row per sequence); none on one GPU."""
        if self.tp > 1:
            self.ops.append(collective(name, kind, self.b, width, self.tp, self.q.act))

    def k(self, name: str, kind: str, nbytes: float, flops: float = 0.0) -> None:
        self.ops.append(KernelOp(name, kind, precision=self.q.act, bytes=float(nbytes), flops=float(flops)))

    def gemm(self, name: str, m: int, n: int, k: int, batch: int = 1, precision: str | None = None) -> None:
        self.ops.append(KernelOp(name, "gemm", precision=precision or self.q.act, m=m, n=n, k=k, batch=batch))


def _keys(cfg: LLMConfig, step: Step, i: int) -> int:
    return min(cfg.sliding_window, step.cache_len) if cfg.slides(i) else step.cache_len


def _layer(e: _Ind, i: int) -> None:
    cfg, b, tp = e.cfg, e.b, e.tp
    h, kvh, d, hid = e.h, e.kvh, cfg.head_dim, cfg.hidden
    p = f"layers.{i}."
    if cfg.qkv_fused:                  # Phi-3 under tp: its slice of qkv, all-gathered (the cat fuses into rope)
        e.gemm(p + "qkv_proj", b, (h + 2 * kvh) * d // tp, hid)
        e.collective(p + "qkv_gather", "allgather", (h + 2 * kvh) * d)
    else:
        for name, n in (("q_proj", h * d), ("k_proj", kvh * d), ("v_proj", kvh * d)):
            e.gemm(p + name, b, n, hid)
    qx, kx = b * h * d, b * kvh * d
    kind = "norm" if cfg.qk_norm else "elementwise"
    e.k(p + ("q_norm_rope" if cfg.qk_norm else "rope_q"), kind, 2 * qx * A + 2 * b * d * A, 6 * qx)
    keys = _keys(cfg, e.step, i)
    if cfg.slides(i) and e.step.case.context - 1 >= keys:     # StaticSlidingWindowLayer full: roll + index + copy_
        window = b * kvh * keys * d * A
        e.k(p + ("k_norm_rope" if cfg.qk_norm else "rope_k"), kind, 2 * kx * A + 2 * b * d * A, 6 * kx)
        for kv in ("k", "v"):
            e.k(p + f"{kv}_cache_roll_put", "copy", 2 * window)
        for kv in ("k", "v"):
            e.k(p + f"{kv}_cache_copy_back", "copy", 2 * window)
    else:
        e.k(p + ("k_norm_rope_cache" if cfg.qk_norm else "rope_k_cache"), kind, 2 * kx * A + 2 * b * d * A + I64,
            6 * kx)
        e.k(p + "v_cache_index_copy", "copy", 2 * kx * A + I64)
        e.k(p + "cache_counter_add", "elementwise", 16)
    if kvh < h:
        for kv in ("k", "v"):
            e.k(p + f"repeat_kv_{kv}", "copy", b * (kvh + h) * keys * d * A)
    e.ops.append(KernelOp(p + "attention", "attention", precision=e.q.act, batch=b * h, m=1, n=keys, k=d,
                          bytes=float(2 * b * h * d * A + 2 * b * h * keys * d * A + b * keys * A),
                          backend="efficient"))
    e.gemm(p + "o_proj", b, hid, split_input(e, p + "o_proj_split", b, h * d) if cfg.qkv_fused else h * d)
    e.collective(p + "o_proj_allreduce", "allreduce", hid)
    x = b * hid
    if cfg.sandwich:
        e.k(p + "post_attn_norm_add_pre_ffn_norm", "norm", 4 * x * A + 2 * hid * A, 8 * x)
    else:
        e.k(p + "attn_residual_post_attn_norm", "norm", 4 * x * A + hid * A, 5 * x)
    if cfg.is_moe(i):
        _moe(e, p)
    elif cfg.gate_up_fused:
        e.gemm(p + "gate_up_proj", b, 2 * e.ffn // tp, hid)
        e.collective(p + "gate_up_gather", "allgather", 2 * e.ffn)
        e.k(p + "act_mul", "elementwise", 3 * b * e.ffn * A, 9 * b * e.ffn)
        e.gemm(p + "down_proj", b, hid, split_input(e, p + "down_split", b, e.ffn))   # Phi-3's rowwise_split_input
    else:
        e.gemm(p + "gate_proj", b, e.ffn, hid)
        e.gemm(p + "up_proj", b, e.ffn, hid)
        e.k(p + "act_mul", "elementwise", 3 * b * e.ffn * A, 9 * b * e.ffn)
        e.gemm(p + "down_proj", b, hid, e.ffn)
    e.collective(p + "down_allreduce", "allreduce", hid)
    last = i == cfg.layers - 1
    name = "mlp_residual_final_norm" if last else f"mlp_residual_input_norm_{i + 1}"
    extra = 2 * x * A if cfg.sandwich else 0                  # Gemma2: the post-feed-forward norm in the same kernel
    e.k(p + name, "norm", 4 * x * A + hid * A + extra, 5 * x)


def _moe(e: _Ind, p: str) -> None:
    cfg, b = e.cfg, e.b
    E, k, h, w = cfg.experts, cfg.experts_per_tok, cfg.hidden, cfg.expert_ffn
    s = b * k
    if cfg.shared_ffn:
        e.gemm(p + "shared_gate_proj", b, cfg.shared_ffn, h)
        e.gemm(p + "shared_up_proj", b, cfg.shared_ffn, h)
        e.k(p + "shared_act_mul", "elementwise", 3 * b * cfg.shared_ffn * A, 9 * b * cfg.shared_ffn)
        e.gemm(p + "shared_down_proj", b, h, cfg.shared_ffn)
    e.gemm(p + "router", b, E, h)
    e.k(p + "router_softmax", "softmax", b * E * (A + F32), 5 * b * E)
    e.ops += topk_ops(p + "router_topk", b, E, k, e.q.act)
    e.k(p + "router_renorm", "elementwise", 3 * b * k * F32, b * k)
    e.k(p + "experts_repeat", "gather", 2 * s * h * A)
    e.k(p + "experts_gather_gate_up", "gather", 2 * s * 2 * w * h * A)
    e.gemm(p + "experts_gate_up", 1, 2 * w, h, batch=s)
    e.k(p + "experts_act_mul", "elementwise", 3 * s * w * A, 9 * s * w)
    e.k(p + "experts_gather_down", "gather", 2 * s * w * h * A)
    e.gemm(p + "experts_down", 1, h, w, batch=s)
    e.k(p + "experts_weighted_sum", "reduction", s * h * A + s * F32 + b * h * A, 2 * s * h)
    if cfg.shared_ffn:
        e.gemm(p + "shared_gate", b, 1, h)
        e.k(p + "shared_sigmoid_mul_add", "elementwise", 4 * b * h * A, 6 * b * h)


def lower_compiled(cfg: LLMConfig, step: Step, quant: Quant | None = None) -> list[KernelOp]:
    """Every kernel of one compiled decode step, in launch order (see the module docstring)."""
    q = quant or Quant()
    _check(cfg, step, q)
    if step.case.tp > 1 and (cfg.qk_norm or cfg.experts):
        raise NotModelled(TP_REFUSED)
    e = _Ind(cfg, step, q)
    b, hid = e.b, cfg.hidden
    masks = ["full"] if not cfg.sliding_layers else ["sliding"] if len(cfg.sliding_layers) == cfg.layers else [
        "full", "sliding"]
    for name in ["input_ids", "position_ids"] + [f"mask_{m}" for m in masks]:
        e.k(f"cudagraph_input_copy.{name}", "copy", 2 * b * 8)
    if e.tp > 1 and cfg.tied:     # vocab-parallel embedding: ids masked, the lookup with its rows zeroed, all-reduced
        e.k("embed_ids_mask", "elementwise", 16)
        e.k("embed_masked", "embedding", 2 * b * hid * A + b * I64)
        e.collective("embed_allreduce", "allreduce", hid)
        e.k("input_norm_0", "norm", 3 * b * hid * A + hid * A, 5 * b * hid)
    else:
        e.k("embed_input_norm_0", "norm", 4 * b * hid * A + b * I64 + hid * A, 5 * b * hid)
    e.k("rotary_emb.positions_fp32", "copy", b * (I64 + F32))
    e.gemm("rotary_emb.freqs", cfg.head_dim // 2, 1, 1, batch=b, precision="fp32")
    e.k("rotary_emb.cos_sin", "elementwise", b * cfg.head_dim * (F32 + 2 * A), 4 * b * cfg.head_dim)
    for m in masks:
        keys = cfg.sliding_window if m == "sliding" else step.cache_len
        keys = min(keys, step.cache_len)
        e.k(f"mask_{m}_additive", "elementwise", b * keys * (1 + A), b * keys)
    for i in range(cfg.layers):
        _layer(e, i)
    e.gemm("lm_head", b, cfg.vocab // e.tp, hid)
    e.collective("logits_gather", "allgather", cfg.vocab)
    if cfg.logit_softcap:         # the gathered shards' cat fuses into it
        e.k("logit_softcap", "elementwise", 2 * b * cfg.vocab * A, 3 * b * cfg.vocab)
    elif e.tp > 1 and b > 1:      # the shards back along the vocabulary: the graph's output
        e.k("logits_cat", "cat", 2 * b * cfg.vocab * A)
    return e.ops

