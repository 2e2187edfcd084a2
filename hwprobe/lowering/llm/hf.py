"""A decoder LLM lowered to the kernels Hugging Face transformers 5.x launches for one forward step (read from the
transformers 5.17 source; each recipe below names the function it follows). Three ways of running it:

- ``captured`` (runtime ``hf``): a ``StaticCache``, the inputs prepared by ``generate``'s
  ``prepare_inputs_for_generation`` (position ids, and for a static cache the 4D masks built outside the step by
  ``masking_utils.create_masks_for_generate``), the forward captured as a CUDA graph. While a stream captures,
  ``utils.import_utils.is_tracing`` is true, so ``masking_utils._ignore_causal_mask_sdpa`` never drops a mask: a mask
  the step builds itself is built inside the graph, and every attention that has a mask runs SDPA's masked kernel.
- ``generate`` (the prefill of runtime ``hf-compiled``: generate never compiles the prefill): the same static-cache
  forward launched op by op. Not tracing, the full-attention mask is dropped (``q_offset == 0``: the cache is
  empty), and SDPA runs flash, causal, over the prompt (``integrations.sdpa_attention.sdpa_attention_forward``
  slices the static K/V to the prompt).
- ``dynamic`` (runtime ``eager``): transformers' default ``DynamicCache``: each layer's ``DynamicLayer.update`` is a
  ``torch.cat`` of the whole cache with the new token; the full-attention mask is dropped after
  ``masking_utils.fast_all`` checks the 2D mask (a sum, a compare and a host sync), so SDPA runs flash with
  ``enable_gqa`` over the filled context.

The kernels, per step: the embedding (``nn.Embedding``; Gemma's ``*ScaledWordEmbedding`` adds a cast of its scale and
a multiply); the rotary table (``LlamaRotaryEmbedding.forward``: position ids to FP32, a batched GEMM by
``inv_freq``, ``cat``, ``cos``, ``sin``, the two ``* attention_scaling`` multiplies, two casts to BF16 = 9 kernels,
computed every step, not cached); per layer ``LlamaRMSNorm`` as its eight FP32 kernels (``to(float32)``, ``pow``,
``mean``, ``+ eps``, ``rsqrt``, multiply, ``to(bf16)``, ``* weight``; Gemma's ten: it also casts ``1 + weight``);
q/k/v as ``nn.Linear`` (one GEMM each, a bias in cuBLASLt's epilogue; Phi-3 one ``qkv_proj``); Qwen3's q/k
``RMSNorm`` per head (eight kernels each); ``apply_rotary_pos_emb`` as q*cos, neg, cat, *sin, add on q and on k
(Phi-3 adds the ``cat`` with the pass-through part); the cache write (``StaticLayer.update``: ``arange`` + the
layer's device counter, the counter's ``add_``, ``index_copy_`` of K and of V; ``StaticSlidingWindowLayer`` once
its window is full: ``roll``, ``index_put`` and ``copy_`` back of K and of V; ``DynamicLayer.update``: ``cat`` of K
and of V); attention (``sdpa_attention_forward``): with a mask, ``repeat_kv`` copies K and V to every query head
over the whole cache (``use_gqa_in_sdpa`` is false under a mask; ``expand`` + ``reshape`` of the cache: PyTorch's
non-vectorized copy kernel, the ``expand`` kind), ``convert_boolean_attn_mask`` turns the boolean mask into an
additive one (a fill and a ``where``) and SDPA runs its masked kernel (cuDNN's fused attention on Hopper under torch
2.11, the memory-efficient one where cuDNN is not picked) over every cached position, masked or not; without one,
flash with ``enable_gqa``; ``o_proj``; the residual add; the MLP
(``LlamaMLP``: gate, act, up, multiply, down; Phi-3's ``gate_up_proj`` then act and multiply; Gemma's act is
``gelu_pytorch_tanh``, one kernel); the residual add; the final norm; ``lm_head`` on the last position only
(``logits_to_keep=1``, which generate sets); Gemma2's final soft-cap (divide, ``tanh``, multiply). Gemma2 under
sdpa: ``sdpa_attention_forward`` ignores the ``softcap`` argument, so the attention soft-cap is not applied (eager
attention would apply it). Mixture of experts (``integrations.moe``): the router (``*TopKRouter``: GEMM, softmax in
FP32, ``topk``, the renormalisation), the experts as generate runs them: ``grouped_mm`` in the prefill (sort,
gathers, ``histc``, ``cumsum``, two grouped GEMMs, masks, the weighted sum) and ``batched_mm`` in decode
(``_optimize_model_for_decode``: each token-expert pair's weights gathered, then a batched GEMV per projection).

Tensor parallel (``Case.tp``; ``from_pretrained(distributed_config=DistributedConfig(tp_size=N))``) follows the
families' 5.17 ``base_model_tp_plan`` and ``integrations.tensor_parallel``'s inference path (TP_FAMILIES): one
rank's kernels, its heads and FFN slice; ``RowwiseParallel``'s in-place ``dist.all_reduce`` after o_proj and
down_proj (and after qwen3_moe's experts); the lm_head gathered; tied embeddings vocab-parallel; Phi-3's gathered
qkv and gate_up. Read from the source; checked against rank 0's kernel lists on 2x H200 (2026-11-28,
profiles/h200x2/2026-11-28-tp2-hf: prefill counts within 5 for every family, hf steps a median 4.4% off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwprobe.errors import InputError, NotModelled
from hwprobe.lowering.llm.graph import Case, Quant, experts_touched, flash_splits
from hwprobe.lowering.ops import KernelOp
from hwprobe.models.llm.config import GATHERED_TP, LLMConfig
from hwprobe.vocab import Precision

A, F32, I64 = 2, 4, 8        # bytes of a BF16/FP16, an FP32 and an int64 element
MODES = ("captured", "generate", "dynamic")
SMALL_SORT = 4096      # torch.sort sorts up to this many keys in place (one kernel), more with cub's radix sort
DICT_MASK_FAMILIES = ("qwen2", "qwen3", "qwen2_moe", "gemma2")   # configs with layer_types: a mask per layer type
# Families whose transformers 5.17 tp plan is modelled (base_model_tp_plan: q/k/v, gate/up colwise, o/down rowwise;
# Phi-3's qkv and gate_up colwise_gather_output, o and down rowwise_split_input; qwen3_moe's experts sliced, not
# spread; lm_head colwise_gather_output; tied embeddings vocab-parallel).
TP_FAMILIES = ("llama", "qwen2", "qwen3", "gemma2", "phi3", "qwen3_moe")


def rank_dims(cfg: LLMConfig, tp: int) -> tuple[int, int, int]:
    """One rank's (heads, kv heads, FFN width) under transformers' tp_plan: a 1/tp slice of each, but Phi-3 gathers
    qkv and gate_up whole, so its attention and activation run on every head and column on each rank."""
    if tp == 1 or cfg.family in GATHERED_TP:
        return cfg.heads, cfg.kv_heads, cfg.ffn
    return cfg.heads // tp, cfg.kv_heads // tp, cfg.ffn // tp


def collective(name: str, kind: str, rows: int, width: int, tp: int, act: str) -> KernelOp:
    """An all-reduce or all-gather of ``rows`` x ``width`` activations over ``tp`` ranks (one NCCL kernel)."""
    return KernelOp(name, kind, precision=act, bytes=float(rows * width * A), ranks=tp)


def split_input(e, name: str, rows: int, width: int) -> int:
    """``rowwise_split_input`` (Phi-3's o_proj and down_proj under tp): a replicated input chunked to this rank's
    columns and cloned, one copy kernel through ``e.k`` (either lowering's emitter, whose ``tp`` it reads); returns
    the columns this rank's GEMM reads."""
    if e.tp > 1:
        e.k(name, "copy", 2 * rows * (width // e.tp) * A)
    return width // e.tp


def tiny_op(name: str, act: str) -> KernelOp:
    """A kernel on a handful of elements (an ``arange``, a counter's ``add_``, a 0-d fill, a sort's extra launch)."""
    return KernelOp(name, "elementwise", precision=act, bytes=16.0)


@dataclass(frozen=True)
class Step:
    """One forward step as transformers runs it: ``cache_len`` is the StaticCache's ``max_cache_len`` (a dynamic
    cache holds exactly the context)."""

    mode: str
    case: Case
    cache_len: int

    @property
    def static(self) -> bool:
        return self.mode != "dynamic"


class _HF:
    """Collects one step's kernels with its sizes at hand."""

    def __init__(self, cfg: LLMConfig, step: Step, q: Quant, sms: int | None):
        self.cfg, self.step, self.case, self.q, self.sms = cfg, step, step.case, q, sms
        self.ops: list[KernelOp] = []
        self.b, self.t = step.case.batch, step.case.tokens
        self.rows = self.b * self.t                  # token rows of this step
        self.act = q.act
        n = self.tp = step.case.tp                   # one rank's share under transformers' tp_plan (see _check)
        self.h, self.kvh, self.ffn = rank_dims(cfg, n)
        self.expert_ffn = cfg.expert_ffn // n        # qwen3_moe: every rank holds every expert, a slice of each
        # q, k and v are ``view(b, t, heads, d).transpose(1, 2)``: not contiguous with more than one token, so a cat
        # of them (RoPE's rotate_half, a DynamicCache update) runs PyTorch's generic 4-D cat
        self.heads_strided = self.t > 1

    # --- primitives -----------------------------------------------------------------------------------------------
    def k(self, name: str, kind: str, nbytes: float, flops: float = 0.0, precision: str | None = None,
          l2_bytes: float = 0.0) -> None:
        self.ops.append(KernelOp(name, kind, precision=precision or self.act, bytes=float(nbytes),
                                 flops=float(flops), l2_bytes=float(l2_bytes)))

    def tiny(self, name: str, n: int = 1) -> None:
        for i in range(n):
            self.ops.append(tiny_op(name if n == 1 else f"{name}.{i}", self.act))

    def gemm(self, name: str, m: int, n: int, k: int, batch: int = 1, precision: str | None = None,
             backend: str = "", groups: tuple[int, ...] = ()) -> None:
        self.ops.append(KernelOp(name, "gemm", precision=precision or self.act, m=m, n=n, k=k, batch=batch,
                                 backend=backend, groups=groups))

    def all_reduce(self, name: str, rows: int, width: int) -> None:
        """``RowwiseParallel``'s ``dist.all_reduce`` of a rank's partial sums, in place (eager c10d: one NCCL
        kernel)."""
        if self.tp > 1:
            self.ops.append(collective(name, "allreduce", rows, width, self.tp, self.act))

    def all_gather(self, name: str, rows: int, width: int) -> None:
        """``colwise_gather_output``: the shards along the last dim all-gathered (funcol, gathered along dim 0), then
        ``cat(chunk(...), -1)`` back in place: a copy unless the leading dims are all 1."""
        if self.tp > 1:
            self.ops.append(collective(name, "allgather", rows, width, self.tp, self.act))
            if rows > 1:
                self.k(f"{name}_cat", "cat", 2 * rows * width * A)

    # --- recipes ----------------------------------------------------------------------------------------------------
    def rms_norm(self, name: str, rows: int, width: int) -> None:
        """``LlamaRMSNorm.forward`` (Qwen2/3, Mistral, Mixtral, Phi-3 alike): eight kernels, the middle six in FP32;
        ``GemmaRMSNorm``/``Gemma2RMSNorm``: ``x.float()``, the same four, then ``1.0 + weight.float()`` (two kernels
        over the weight), the multiply and ``type_as``."""
        x = rows * width
        gemma = self.cfg.family in ("gemma", "gemma2")
        self.k(f"{name}.to_fp32", "copy", x * (A + F32), precision="fp32")
        self.k(f"{name}.pow", "unary", 2 * x * F32, x, "fp32")
        self.k(f"{name}.mean", "reduction", x * F32 + rows * F32, x, "fp32")
        self.k(f"{name}.add_eps", "elementwise", 2 * rows * F32, rows, "fp32")
        self.k(f"{name}.rsqrt", "unary", 2 * rows * F32, rows, "fp32")
        self.k(f"{name}.mul_rsqrt", "bias", 2 * x * F32 + rows * F32, x, "fp32")
        if gemma:
            self.k(f"{name}.weight_fp32", "copy", width * (A + F32), precision="fp32")
            self.k(f"{name}.one_plus_weight", "unary", 2 * width * F32, width, "fp32")
            self.k(f"{name}.mul_weight", "bias", 2 * x * F32 + width * F32, x, "fp32")
            self.k(f"{name}.to_act", "copy", x * (F32 + A))
        else:
            self.k(f"{name}.to_act", "copy", x * (F32 + A))
            self.k(f"{name}.mul_weight", "bias", 2 * x * A + width * A, x)

    def rotary_table(self, name: str = "rotary_emb") -> None:
        """``LlamaRotaryEmbedding.forward``: ``position_ids.float()``, ``inv_freq @ positions`` (a batched FP32 GEMM
        with K = 1), ``cat((freqs, freqs))``, ``cos``, ``* attention_scaling``, ``sin``, ``* attention_scaling``,
        ``cos.to(dtype)``, ``sin.to(dtype)``. Phi-3 rotates ``partial_rotary_factor`` of the head only (the table is
        that wide)."""
        d = self.cfg.head_dim
        n = self.rows * d
        self.k(f"{name}.positions_fp32", "copy", self.rows * (I64 + F32), precision="fp32")
        self.gemm(f"{name}.freqs", d // 2, self.t, 1, batch=self.b, precision="fp32")
        self.k(f"{name}.cat", "cat", 2 * n * F32, precision="fp32")
        for f in ("cos", "sin"):
            self.k(f"{name}.{f}", "unary", 2 * n * F32, n, "fp32")
            self.k(f"{name}.{f}_scale", "unary", 2 * n * F32, n, "fp32")
        for f in ("cos", "sin"):
            self.k(f"{name}.{f}_to_act", "copy", n * (F32 + A))

    def rope(self, p: str, which: str, heads: int) -> None:
        """``apply_rotary_pos_emb`` on q or k: ``q * cos`` (broadcast over the heads), ``-x2`` (half the head),
        ``cat((-x2, x1))``, ``rotate_half(q) * sin``, the add; Phi-3's version then ``cat``s the pass-through part.
        With more than one token the cats' inputs are not contiguous (``heads_strided``) and PyTorch runs its
        generic 4-D cat ('rotate_cat', its own curve; profiles before it: the cache cats' 'cat_strided'): in the
        H200's `hf` prefill kernel lists of llama-3.2-1b and qwen3-30b-a3b (2026-11-27) the rope cats moved 0.52 and
        0.68 TB/s, where the 'cat' curve (rows of 128, sliced) reads about 1.2."""
        x = self.rows * heads * self.cfg.head_dim
        cs = self.rows * self.cfg.head_dim * A
        cat = "rotate_cat" if self.heads_strided else "cat"
        self.k(f"{p}rope_{which}.mul_cos", "bias", 2 * x * A + cs, x)
        self.k(f"{p}rope_{which}.neg", "unary", x * A, x // 2)
        self.k(f"{p}rope_{which}.cat", cat, 2 * x * A)
        self.k(f"{p}rope_{which}.mul_sin", "bias", 2 * x * A + cs, x)
        self.k(f"{p}rope_{which}.add", "elementwise", 3 * x * A, x)
        if self.cfg.family == "phi3":
            self.k(f"{p}rope_{which}.cat_pass", cat, 2 * x * A)


def _check(cfg: LLMConfig, step: Step, q: Quant) -> None:
    case = step.case
    if q.weights not in (Precision.BF16, Precision.FP16) or q.kv != q.act:
        raise InputError(f"transformers' runtimes are modelled with BF16/FP16 weights and cache; --weights "
                         f"{q.weights} --kv {q.kv} needs --runtime fused or graph")
    if case.tp > 1:
        if cfg.family not in TP_FAMILIES:
            raise NotModelled(f"tensor parallel under transformers is modelled for the tp plans of "
                             f"{', '.join(TP_FAMILIES)} (transformers 5.17), not {cfg.family}: use --runtime fused or "
                             "graph")
        n = case.tp
        bad = [f"{f} {v}" for f, v in (("num_attention_heads", cfg.heads), ("num_key_value_heads", cfg.kv_heads),
                                       ("intermediate_size", cfg.ffn), ("moe_intermediate_size", cfg.expert_ffn),
                                       ("vocab_size", cfg.vocab)) if v % n]
        if bad:
            raise InputError(f"--tp {n} does not divide {cfg.name}'s {', '.join(bad)} (transformers shards them "
                             "evenly)")
    if cfg.family == "gpt2":
        raise InputError("GPT-2 is not lowered for transformers' runtimes (learned positions, no static-cache "
                         "rotary path): use --runtime graph or fused")
    if step.static and step.cache_len < case.context:
        raise InputError(f"--cache-len {step.cache_len} is shorter than the {case.context} tokens the step needs")
    if case.routing is not None:
        if not cfg.experts:
            raise InputError(f"--routing gives an MoE's rows per expert; {cfg.name} has no experts")
        case.routing.check(cfg.experts, len(cfg.moe_layers), cfg.experts_per_tok, case.batch * case.tokens)


def _masked(e: _HF, i: int, keys: int) -> bool:
    """Does layer ``i``'s SDPA get a mask in this step (see the module docstring)?"""
    cfg, step = e.cfg, e.step
    sliding = cfg.slides(i)
    if step.mode == "dynamic":              # mask kept for a window once the keys reach it
        return sliding and keys >= cfg.sliding_window
    if step.case.phase == "decode":
        return True                         # a static cache's decode masks always
    if sliding:                             # a sliding layer's prefill: masked once the cache reaches the window
        return step.cache_len >= cfg.sliding_window     # (_ignore_causal_mask_sdpa drops it while kv < window)
    if step.mode == "generate":
        return False                        # the empty-cache prefill drops the full-attention mask
    return cfg.family not in DICT_MASK_FAMILIES   # captured: rebuilt (and kept) in the step unless a dict came in


def _cache_write(e: _HF, p: str, i: int) -> int:
    """The cache update of layer ``i``; returns the keys its attention reads."""
    cfg, case, step = e.cfg, e.case, e.step
    kvh, d = e.kvh, cfg.head_dim
    new = e.b * kvh * e.t * d * A
    if not step.static:                     # DynamicLayer / DynamicSlidingWindowLayer.update: cat
        keys = cfg.keys(i, case.context)
        held = keys - e.t if not cfg.slides(i) else min(case.context - e.t, cfg.sliding_window - 1)
        for kv in ("k", "v"):
            kind = "cat_strided" if _strided_cat(e, i, kv) else "cat_cache"
            e.k(f"{p}{kv}_cache_cat", kind, 2 * e.b * kvh * held * d * A + 2 * new)
        return keys if not cfg.slides(i) else held + e.t
    length = min(cfg.sliding_window, step.cache_len) if cfg.slides(i) else step.cache_len
    start = case.context - e.t                  # positions already in the cache
    if cfg.slides(i) and start >= length:       # StaticSlidingWindowLayer, full: roll, index_put, copy_ back
        window = e.b * kvh * length * d * A
        for kv in ("k", "v"):
            e.k(f"{p}{kv}_cache_roll", "copy", 2 * window)
        for kv in ("k", "v"):
            e.k(f"{p}{kv}_cache_index_put", "copy", 2 * new + 8)
        for kv in ("k", "v"):
            e.k(f"{p}{kv}_cache_copy_back", "copy", 2 * window)
        return length
    if cfg.slides(i) and start + e.t > length:  # becoming full (a prefill longer than the window): copy_ the tail
        for kv in ("k", "v"):
            e.k(f"{p}{kv}_cache_copy", "copy", 2 * e.b * kvh * length * d * A)
        return start + e.t
    e.tiny(f"{p}cache_position", 2)             # arange + the layer's counter
    e.tiny(f"{p}cache_counter_add")             # cumulative_length.add_
    for kv in ("k", "v"):
        e.k(f"{p}{kv}_cache_index_copy", "copy", 2 * new + e.t * I64)
    return length


def _strided_cat(e: _HF, i: int, kv: str) -> bool:
    """Does layer ``i``'s DynamicCache cat of ``kv`` have an input that is not contiguous? PyTorch's vectorized cat
    (a contiguous copy's speed) needs every input contiguous; otherwise its generic 4-D cat runs, about a sixth of
    that speed. Not contiguous: the new K and V of a prefill (``view(b, t, heads, d).transpose(1, 2)`` with t > 1,
    cat onto the empty cache), Phi-3's values at batch > 1 (a slice of the fused qkv output: its batch stride is the
    whole qkv row), and a sliding window's held K and V once a cat has dropped tokens (``full[:, :, -window + 1:]``,
    a slice unless batch x kv heads is 1). Seen in the H200's eager kernel lists of 2026-11-28: every prefill's 8
    cache cats generic; Phi-3 at 16 and 64 x 1024-8192 one generic cat a layer (the values); Gemma-2 at 1 and
    16 x 8192 two a sliding layer, and none at 64 x 4096 (the prefill held 4095 tokens, within its window)."""
    cfg, case = e.cfg, e.case
    if e.heads_strided:
        return True
    if cfg.slides(i) and case.context - e.t >= cfg.sliding_window and e.b * e.kvh > 1:
        return True
    return kv == "v" and cfg.qkv_fused and e.b > 1


def _attention_kernels(e: _HF, p: str, i: int, keys: int) -> None:
    """``sdpa_attention_forward``: masked -> repeat_kv, the mask made additive, SDPA's masked kernel over
    ``keys``; else flash (causal in the prefill, ``enable_gqa``), split over the keys where FlashAttention-2's
    heuristic splits (decode at small batch)."""
    cfg, case = e.cfg, e.case
    h, kvh, d = e.h, e.kvh, cfg.head_dim
    q_bytes = 2 * e.b * h * e.t * d * A                  # Q read, O written
    if _masked(e, i, keys):
        if kvh < h:
            for kv in ("k", "v"):         # expand + reshape of a strided view: PyTorch's non-vectorized copy
                e.k(f"{p}repeat_kv_{kv}", "expand", 2 * e.b * h * keys * d * A)
        mask = e.b * e.t * keys
        e.tiny(f"{p}mask_fill")
        e.k(f"{p}mask_where", "elementwise", mask * (1 + A), mask)
        if keys % 16:
            e.k(f"{p}mask_pad", "copy", 2 * e.b * e.t * (keys + 16) * A)
        e.ops.append(KernelOp(f"{p}attention", "attention", precision=e.act, batch=e.b * h, m=e.t, n=keys, k=d,
                              bytes=float(q_bytes + 2 * e.b * h * keys * d * A + mask * A), backend="efficient"))
        return
    n = keys if case.phase == "decode" or e.step.mode == "dynamic" else e.t
    causal = case.phase == "prefill"
    e.ops.append(KernelOp(f"{p}attention", "attention", precision=e.act, batch=e.b * h, m=e.t, n=n, k=d,
                          causal=causal, bytes=float(q_bytes + 2 * e.b * kvh * n * d * A)))
    splits = flash_splits(e.b * h, e.t, n, d, e.sms) if e.sms else 1
    if splits > 1:
        r = e.b * h * e.t
        e.k(f"{p}attention_combine", "reduction", splits * r * (d + 1) * F32 + r * d * A, precision="fp32")


def _attention(e: _HF, i: int) -> None:
    cfg, p = e.cfg, f"layers.{i}."
    h, kvh, d, hid = e.h, e.kvh, cfg.head_dim, cfg.hidden
    e.rms_norm(p + "input_norm", e.rows, hid)
    if cfg.qkv_fused:                     # Phi-3: each rank's slice of qkv, gathered whole
        e.gemm(p + "qkv_proj", e.rows, (h + 2 * kvh) * d // e.tp, hid)
        e.all_gather(p + "qkv_gather", e.rows, (h + 2 * kvh) * d)
    else:
        for name, n in (("q_proj", h * d), ("k_proj", kvh * d), ("v_proj", kvh * d)):
            e.gemm(p + name, e.rows, n, hid)
    if cfg.qk_norm:
        e.rms_norm(p + "q_norm", e.rows * h, d)
        e.rms_norm(p + "k_norm", e.rows * kvh, d)
    e.rope(p, "q", h)
    e.rope(p, "k", kvh)
    keys = _cache_write(e, p, i)
    _attention_kernels(e, p, i, keys)
    k = split_input(e, p + "o_proj_split", e.rows, h * d) if cfg.qkv_fused else h * d
    e.gemm(p + "o_proj", e.rows, hid, k)
    e.all_reduce(p + "o_proj_allreduce", e.rows, hid)
    if cfg.sandwich:
        e.rms_norm(p + "post_attn_norm", e.rows, hid)
    e.k(p + "attn_residual", "elementwise", 3 * e.rows * hid * A, e.rows * hid)


def _dense_mlp(e: _HF, p: str, width: int, tag: str = "") -> None:
    """``LlamaMLP``: down(act(gate(x)) * up(x)) in that launch order; ``Phi3MLP``: gate_up, chunk (a view), act,
    multiply, down."""
    cfg, r, fused = e.cfg, e.rows, e.cfg.gate_up_fused
    if fused:                 # act and multiply then read the two halves of gate_up's output as strided views
        e.gemm(f"{p}{tag}gate_up_proj", r, 2 * width // e.tp, cfg.hidden)
        e.all_gather(f"{p}{tag}gate_up_gather", r, 2 * width)
    else:
        e.gemm(f"{p}{tag}gate_proj", r, width, cfg.hidden)
    e.k(f"{p}{tag}act", "strided" if fused else "unary", 2 * r * width * A, 8 * r * width)
    if not fused:
        e.gemm(f"{p}{tag}up_proj", r, width, cfg.hidden)
    e.k(f"{p}{tag}act_mul", "strided" if fused else "elementwise", 3 * r * width * A, r * width)
    k = split_input(e, f"{p}{tag}down_split", r, width) if fused else width
    e.gemm(f"{p}{tag}down_proj", r, cfg.hidden, k)
    e.all_reduce(f"{p}{tag}down_allreduce", r, cfg.hidden)


def topk_ops(name: str, rows: int, cols: int, k: int, act: str) -> list[KernelOp]:
    """``torch.topk(scores, k, dim=-1)`` over FP32 router scores of ``rows`` x ``cols`` as PyTorch runs it, eagerly
    and under Inductor (which leaves it to aten): a radix select per row (``gatherTopK``), then for k > 1 a sort
    of the k picked (``bitonicSortKVInPlace``). The topk curve times the whole call (on an H200 a router's topk
    over 512 x 128 took 14 us and over 16384 x 128 120 us, where one reduction over its bytes priced 10), so the
    sort's launch is listed as a tiny kernel, for the count and the host."""
    ops = [KernelOp(name, "topk", precision="fp32", bytes=float(rows * cols * F32 + rows * k * (F32 + I64)),
                    flops=float(rows * cols))]
    if k > 1:
        ops.append(tiny_op(name + "_sort", act))
    return ops


def _router(e: _HF, p: str) -> None:
    """``MixtralTopKRouter``/``Qwen*MoeTopKRouter``: GEMM; Mixtral ``.float()`` then softmax, Qwen softmax with
    ``dtype=float`` (one kernel); ``topk`` (select and sort); the renormalisation (sum, divide); Qwen casts the
    weights back."""
    cfg, r, E, k = e.cfg, e.rows, e.cfg.experts, e.cfg.experts_per_tok
    e.gemm(p + "router", r, E, cfg.hidden)
    if cfg.family == "mixtral":
        e.k(p + "router_fp32", "copy", r * E * (A + F32), precision="fp32")
    e.k(p + "router_softmax", "softmax", r * E * (A + F32), 5 * r * E, "fp32")
    e.ops += topk_ops(p + "router_topk", r, E, k, e.act)
    if cfg.norm_topk:
        e.k(p + "router_sum", "reduction", r * k * F32 + r * F32, precision="fp32")
        e.k(p + "router_div", "bias", 2 * r * k * F32 + r * F32, precision="fp32")
    if cfg.family != "mixtral":
        e.k(p + "router_to_act", "copy", r * k * (F32 + A))


def _experts_batched(e: _HF, p: str) -> None:
    """``moe.batched_mm_experts_forward`` (decode): ``repeat_interleave`` of the tokens (index build, gather),
    ``clamp``, the selected experts' gate_up weights gathered (S = tokens x k copies), a batched GEMV, act, multiply,
    the down weights gathered, a batched GEMV, the routing-weight multiply, the sum over k, the cast back.

    A gather writes every copy but reads each distinct source row from DRAM once: PyTorch's
    ``vectorized_gather_kernel`` runs a block per (copy, 4 KB chunk) with the copies fastest, so the copies of one
    expert read the same chunk at about the same time and all but the first hit L2 (IndexKernelUtils.cu). The tuned
    qwen3-30b-a3b's H200 decode kernel lists (profiles/h200-sxm/2026-11-28-hf-eager-kv) read 3.7, 4.6 and 5.2 TB/s
    over all copies' bytes at batch 1, 16 and 64 (2, 4 and 4 copies an expert): above the DRAM roof once experts
    repeat. So the DRAM bytes are the experts the tokens touch (uniform routing) read once and every copy written,
    and the repeats are L2 reads."""
    cfg, r, k, h, w = e.cfg, e.rows, e.cfg.experts_per_tok, e.cfg.hidden, e.expert_ffn
    s = r * k
    used = min(s, experts_touched(cfg.experts, k, r))

    def gather(name: str, rows: int, width: int) -> None:      # ``rows`` distinct sources, s copies of ``width``
        e.k(p + name, "gather", (rows + s) * width * A, l2_bytes=(s - rows) * width * A)

    e.tiny(p + "experts_repeat_index", 2)
    gather("experts_repeat", r, h)
    e.tiny(p + "experts_clamp")
    gather("experts_gather_gate_up", used, 2 * w * h)
    e.gemm(p + "experts_gate_up", 1, 2 * w, h, batch=s)
    e.k(p + "experts_act", "unary", 2 * s * w * A, 8 * s * w)
    e.k(p + "experts_act_mul", "elementwise", 3 * s * w * A, s * w)
    gather("experts_gather_down", used, w * h)
    e.gemm(p + "experts_down", 1, h, w, batch=s)
    out = F32 if cfg.family == "mixtral" else A           # Mixtral's routing weights stay FP32
    e.k(p + "experts_weight", "bias", s * h * (A + out) + s * out, s * h)
    e.k(p + "experts_sum", "reduction", s * h * out + r * h * out, s * h)
    if out != A:
        e.k(p + "experts_to_act", "copy", r * h * (out + A))


def _experts_grouped(e: _HF, p: str, i: int) -> None:
    """``moe.grouped_mm_experts_forward`` (the prefill): sort the pairs by expert, gather the tokens and weights,
    ``histc`` + ``cumsum`` for the offsets, the sentinel mask, two grouped GEMMs (over the experts the tokens touch)
    each followed by a ``masked_fill``, act, multiply, the routing weights, the inverse permutation, the sum. The
    masked_fills take the sentinel mask as (S, 1), broadcast over the features: PyTorch's non-vectorized broadcast
    template, the bias curve's kernel (the tuned qwen3-30b-a3b's H200 1 x 512 list: 12 of them, 207 us, where the
    vectorized elementwise curve priced 64 us).

    Which op launches what (tools/hf_host_syncs.py's op launches, the tuned qwen3-30b-a3b on an H200,
    ``profiles/h200-sxm/2026-11-28-hf-moe-ops``): the two ``masked_fill`` after the GEMMs are out of place, a device
    copy of the whole output (a DtoD memcpy, 4.2-4.3 TB/s at 131072 rows) and then the fill in place; ``histc``
    zero-fills its bins first and ``cumsum`` is two cub kernels; act and multiply read the two halves of gate_up's
    output, ``chunk`` views, with the non-vectorized template (270 us each at 131072 x 768, where the contiguous
    curves priced 100 and 140). ``torch.sort`` sorts up to 4096 keys in place (one kernel, three small copies and an
    ``arange``) and more with cub's radix sort (eleven kernels and a copy): the sort curve times the whole call, so
    its other launches are listed as tiny kernels, for the count and the host."""
    cfg, r, k, h, w = e.cfg, e.rows, e.cfg.experts_per_tok, e.cfg.hidden, e.expert_ffn
    s = r * k
    e.k(p + "experts_sort", "sort", 4 * s * I64)
    if s <= SMALL_SORT:
        e.tiny(p + "experts_sort_copy", 3)
        e.tiny(p + "experts_sort_arange")
    else:
        e.tiny(p + "experts_sort_pass", 10)
        e.tiny(p + "experts_sort_copy")
    e.tiny(p + "experts_perm_div")
    e.k(p + "experts_gather_tokens", "gather", 2 * s * h * A)
    e.k(p + "experts_gather_weights", "gather", 2 * s * F32)
    e.tiny(p + "experts_ids_int")
    e.tiny(p + "experts_histc_fill")
    e.k(p + "experts_histc", "reduction", s * 4 + cfg.experts * 4)
    e.tiny(p + "experts_cumsum", 2)
    e.tiny(p + "experts_sentinel", 2)
    e.k(p + "experts_mask_in", "bias", 2 * s * h * A + s)
    routed = e.case.routing.layer(cfg.moe_layers.index(i)) if e.case.routing else ()
    used = sum(1 for c in routed if c) if routed else experts_touched(cfg.experts, k, r)
    rows = math.ceil(s / used)
    e.gemm(p + "experts_gate_up", rows, 2 * w, h, batch=used, backend="grouped_mm", groups=routed)
    e.k(p + "experts_mask_up_copy", "copy", 4 * s * w * A)
    e.k(p + "experts_mask_up", "bias", 4 * s * w * A + s)
    e.k(p + "experts_act", "strided", 2 * s * w * A, 8 * s * w)
    e.k(p + "experts_act_mul", "strided", 3 * s * w * A, s * w)
    e.gemm(p + "experts_down", rows, h, w, batch=used, backend="grouped_mm", groups=routed)
    e.k(p + "experts_mask_down_copy", "copy", 2 * s * h * A)
    e.k(p + "experts_mask_down", "bias", 2 * s * h * A + s)
    e.k(p + "experts_weight", "bias", 2 * s * h * A + s * F32, s * h)
    e.tiny(p + "experts_inv_perm", 2)
    e.k(p + "experts_unpermute", "gather", 2 * s * h * A)
    e.k(p + "experts_sum", "reduction", s * h * A + r * h * A, s * h)


def _moe(e: _HF, p: str, i: int) -> None:
    cfg, r, h = e.cfg, e.rows, e.cfg.hidden
    if cfg.shared_ffn:            # Qwen2MoeSparseMoeBlock: the shared expert first, then the router
        _dense_mlp(e, p, cfg.shared_ffn, tag="shared_")
    _router(e, p)                 # replicated under tp: every rank routes every token
    if e.case.phase == "decode":
        _experts_batched(e, p)
    else:
        _experts_grouped(e, p, i)
    e.all_reduce(p + "experts_allreduce", r, h)     # moe_tp_experts' post-hook: each rank's slice of every expert
    if cfg.shared_ffn:
        e.gemm(p + "shared_gate", r, 1, h)
        e.k(p + "shared_sigmoid", "unary", 4 * r * A, r)
        e.k(p + "shared_mul", "bias", 2 * r * h * A + r * A, r * h)
        e.k(p + "shared_add", "elementwise", 3 * r * h * A, r * h)


def _mlp(e: _HF, i: int) -> None:
    cfg, p = e.cfg, f"layers.{i}."
    e.rms_norm(p + ("pre_ffn_norm" if cfg.sandwich else "post_attn_norm"), e.rows, cfg.hidden)
    if cfg.is_moe(i):
        _moe(e, p, i)
    else:
        _dense_mlp(e, p, e.ffn)
    if cfg.sandwich:
        e.rms_norm(p + "post_ffn_norm", e.rows, cfg.hidden)
    e.k(p + "mlp_residual", "elementwise", 3 * e.rows * cfg.hidden * A, e.rows * cfg.hidden)


def _mask_build(e: _HF) -> None:
    """Masks the step builds itself. ``masking_utils.sdpa_mask`` (non-vmap): aranges over batch, head, queries
    (+ the query offset) and keys (+ the key offset), the causal compare (a sliding window adds a subtract, a
    compare and the ``&`` of ``and_masks`` with its ``new_ones``). Captured: the single-mask families rebuild the
    mask generate dropped. Dynamic: the 2D mask's cast to bool and, per mask type, ``fast_all`` (sum, compare) or
    the build where a window keeps it."""
    cfg, step, case = e.cfg, e.step, e.case
    sliding = bool(cfg.sliding_layers and cfg.sliding_window)
    full = len(cfg.sliding_layers) < cfg.layers

    def build(name: str, window: bool) -> None:
        e.tiny(f"{name}.aranges", 6)
        e.k(f"{name}.causal", "elementwise", e.b * e.t * step.cache_len + 16)
        if window:
            e.tiny(f"{name}.and_ones")
            e.tiny(f"{name}.window_sub")
            e.k(f"{name}.window_gt", "elementwise", e.b * e.t * step.cache_len + 16)
            e.k(f"{name}.and", "elementwise", 3 * e.b * e.t * step.cache_len)

    if step.mode == "captured" and case.phase == "prefill" and cfg.family not in DICT_MASK_FAMILIES:
        if not sliding or min(cfg.sliding_window, step.cache_len) < cfg.sliding_window:
            build("mask", sliding)
    elif step.mode == "generate" and case.phase == "prefill" and cfg.family not in DICT_MASK_FAMILIES:
        e.tiny("mask.q_offset_eq")                  # `q_offset == 0` on the static cache's counter (a sync)
    elif step.mode == "dynamic":
        e.k("mask.to_bool", "copy", e.b * case.context * (I64 + 1))
        for kind, window in (("full", False), ("sliding", True)) if sliding else (("full", False),):
            if kind == "full" and not full:
                continue
            keeps = window and cfg.keys(cfg.sliding_layers[0], case.context) >= cfg.sliding_window
            if keeps:
                build(f"mask.{kind}", True)
            else:
                e.k(f"mask.{kind}.fast_all_sum", "reduction", e.b * case.context + 8)
                e.tiny(f"mask.{kind}.fast_all_eq")


def _embed(e: _HF) -> None:
    """``nn.Embedding``; under tp a tied embedding is vocab-parallel (``embedding_rowwise``, through DTensor): the ids
    outside this rank's rows masked and shifted (compares, or, subtract, fill), the lookup, the masked rows zeroed,
    then a functional all-reduce (a clone and the NCCL kernel). An untied one stays whole on every rank."""
    cfg = e.cfg
    vocab_parallel = e.tp > 1 and cfg.tied
    if vocab_parallel:
        e.tiny("embed_ids_mask", 5)
    e.k("embed", "embedding", 2 * e.rows * cfg.hidden * A + e.rows * I64)
    if vocab_parallel:
        e.k("embed_zero_masked", "bias", 2 * e.rows * cfg.hidden * A + e.rows, e.rows * cfg.hidden)
        e.k("embed_allreduce_clone", "copy", 2 * e.rows * cfg.hidden * A)
        e.all_reduce("embed_allreduce", e.rows, cfg.hidden)
    if cfg.embed_scale:            # *TextScaledWordEmbedding: embed_scale.to(dtype), then the multiply
        e.tiny("embed_scale_cast")
        e.k("embed_scale", "bias", 2 * e.rows * cfg.hidden * A, e.rows * cfg.hidden)


def _head(e: _HF) -> None:
    cfg = e.cfg
    e.rms_norm("final_norm", e.rows, cfg.hidden)
    e.gemm("lm_head", e.b, cfg.vocab // e.tp, cfg.hidden)    # logits_to_keep=1: the last position of each sequence
    e.all_gather("logits_gather", e.b, cfg.vocab)             # colwise_gather_output under tp
    if cfg.logit_softcap:                                    # Gemma2ForCausalLM: / cap, tanh, * cap
        v = e.b * cfg.vocab
        for step in ("div", "tanh", "mul"):
            e.k(f"logit_softcap.{step}", "unary", 2 * v * A, v)


def lower_hf(cfg: LLMConfig, step: Step, quant: Quant | None = None, sms: int | None = None) -> list[KernelOp]:
    """Every kernel of one transformers forward step, in launch order (``sms`` decides flash's split-KV)."""
    q = quant or Quant()
    if step.mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}, got {step.mode!r}")
    _check(cfg, step, q)
    e = _HF(cfg, step, q, sms)
    _embed(e)
    _mask_build(e)
    e.rotary_table()
    for i in range(cfg.layers):
        _attention(e, i)
        _mlp(e, i)
    _head(e)
    return e.ops
