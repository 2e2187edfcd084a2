"""The LLM runtimes (hwprobe.lowering.llm.runtimes): each one's kernels for a Llama step counted by hand from the
transformers 5.17 source, and each family trait's effect on the kernel list, on real config.json files."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from hwprobe.analysis.llm import LLMOptions, analyze
from hwprobe.errors import InputError
from hwprobe.lowering.llm.graph import Case
from hwprobe.lowering.llm.hf import Step, lower_hf
from hwprobe.lowering.llm.inductor import lower_compiled
from hwprobe.lowering.llm.serving import lower_serving
from hwprobe.models.llm.config import load

DATA = Path(__file__).parent / "data" / "llm_configs"
ROOT = Path(__file__).resolve().parents[1]
H200 = Path(__file__).resolve().parents[1] / "profiles/h200-sxm/2026-11-26-predict-conv"


def per_layer(ops, layer: int = 3) -> Counter:
    """Kernel roles of one layer: 'layers.3.input_norm.pow' -> 'input_norm.pow'."""
    p = f"layers.{layer}."
    return Counter(o.name[len(p):] for o in ops if o.name.startswith(p))


def step_level(ops) -> list[str]:
    return [o.name for o in ops if not o.name.startswith("layers.")]


LLAMA = load(str(DATA / "llama-3-8b.json"))


def test_hf_llama_decode_step_kernel_by_kernel():
    """transformers' Llama decode step under a CUDA graph: 47 kernels a layer. RMSNorm 8 x 2, q/k/v 3, rotary 5 x 2,
    StaticLayer.update 5 (arange, + counter, add_, two index_copy_), repeat_kv 2 (GQA under a mask), the mask made
    additive 2, SDPA 1, o_proj, add, gate, act, up, mul, down, add."""
    ops = lower_hf(LLAMA, Step("captured", Case.decode(1, 1024), 1024))
    layer = per_layer(ops)
    assert sum(layer.values()) == 47
    assert sum(k.startswith("input_norm.") for k in layer) == 8
    assert {"repeat_kv_k", "repeat_kv_v", "mask_fill", "mask_where", "k_cache_index_copy", "cache_counter_add"} <= \
        set(layer)
    att = next(o for o in ops if o.name == "layers.3.attention")
    assert (att.backend, att.n, att.batch, att.m) == ("efficient", 1024, 32, 1)       # every head, whole cache
    assert step_level(ops)[:2] == ["embed", "rotary_emb.positions_fp32"]
    assert len(step_level(ops)) == 1 + 9 + 8 + 1                                      # embed, rotary, norm, lm_head
    assert len(ops) == 32 * 47 + 19


def test_the_static_cache_length_not_the_context_prices_hf_decode():
    """A masked SDPA reads every cached position, filled or not: at --cache-len 8192 the step costs the same at
    context 1024 and 8192; the dynamic cache (eager) reads only the context."""
    a = [analyze(LLAMA, str(H200), LLMOptions(phase="decode", context=c, batch=16, cache_len=8192)).tpot_s
         for c in (1024, 8192)]
    assert a[0] == pytest.approx(a[1])
    short = analyze(LLAMA, str(H200), LLMOptions(phase="decode", context=1024, batch=16)).tpot_s
    assert short < 0.5 * a[0]
    e = [analyze(LLAMA, str(H200), LLMOptions(phase="decode", context=c, batch=16, runtime="eager")).tpot_s
         for c in (1024, 8192)]
    assert e[1] > 1.3 * e[0]                   # the host hides part of the longer attention (a queue)


def test_hf_prefill_captured_masks_generate_prefill_does_not():
    """Captured, transformers rebuilds the causal mask inside the graph (is_tracing) and every layer runs the masked
    kernel over the cache; generate's uncaptured prefill drops the mask and runs flash, causal, over the prompt."""
    cap = lower_hf(LLAMA, Step("captured", Case.prefill(1, 512), 1024))
    gen = lower_hf(LLAMA, Step("generate", Case.prefill(1, 512), 1024))
    a_cap = next(o for o in cap if o.name == "layers.0.attention")
    a_gen = next(o for o in gen if o.name == "layers.0.attention")
    assert (a_cap.backend, a_cap.n, a_cap.causal) == ("efficient", 1024, False)
    assert (a_gen.backend, a_gen.n, a_gen.causal) == ("", 512, True)
    assert any(n.startswith("mask.") for n in step_level(cap)) and "repeat_kv_k" in per_layer(cap)
    assert "repeat_kv_k" not in per_layer(gen) and step_level(gen)[1] == "mask.q_offset_eq"


def test_compiled_decode_under_tp_adds_the_collectives_rank_0_launched():
    """generate's compiled step under transformers' tp plan (2x H200, 2026-11-29, rank 0's kernel list of
    llama-3.2-1b, 4 layers, 16 x 2048: 9 all-reduces, 1 all-gather, the logits' cat, the embedding's mask and masked
    lookup beside the one-GPU kernels): one rank's heads and FFN, an all-reduce after o_proj and after down_proj, the
    tied embedding vocab-parallel, lm_head's slice gathered."""
    import gzip
    import json

    cfg = replace(load(str(DATA / "llama-3.2-1b.json")), layers=4)
    one = lower_compiled(cfg, Step("captured", Case.decode(16, 2048), 2048))
    two = lower_compiled(cfg, Step("captured", Case.decode(16, 2048, 2), 2048))
    run = ROOT / "profiles/h200x2/2026-11-29-tp2-compiled/tp2_compiled.json.gz"
    measured = next(k for k in json.loads(gzip.open(run).read())["kernels"]
                    if (k["model"], k["phase"]) == ("llama-3.2-1b", "decode"))
    count = Counter()
    for r in measured["by_name"]:
        count["allreduce" if "AllReduce" in r["name"] else "allgather" if "AllGather" in r["name"] else "x"] += (
            r["count"])
    kinds = Counter(o.kind for o in two)
    assert (kinds["allreduce"], kinds["allgather"]) == (count["allreduce"], count["allgather"]) == (9, 1)
    assert len(two) - len(one) == 9 + 1 + 1 + 2         # the collectives, the logits' cat, the embedding's two
    assert per_layer(two)["o_proj_allreduce"] == per_layer(two)["down_allreduce"] == 1
    gemm = {o.name: o for o in two if o.kind == "gemm"}
    assert gemm["layers.0.q_proj"].n == cfg.heads // 2 * cfg.head_dim and gemm["layers.0.gate_proj"].n == cfg.ffn // 2
    assert gemm["layers.0.o_proj"].k == cfg.heads // 2 * cfg.head_dim and gemm["lm_head"].n == cfg.vocab // 2
    attn = next(o for o in two if o.name == "layers.0.attention")
    assert attn.batch == 16 * cfg.heads // 2


def test_compiled_decode_under_tp_gathers_phi3_and_refuses_q_k_norms():
    """Phi-3's plan gathers qkv and gate_up whole (the cats fuse into rope and act x up) and cuts o_proj's and
    down_proj's inputs to the rank's columns (a copy each); Qwen3's replicated q/k norms split the compiled step into
    several graphs (measured: 5.4 ms against mistral-7b's 1.6 on 2x H200), and MoE experts are not measured: refused."""
    phi = load(str(DATA / "phi-3-mini-4k-instruct.json"))
    layer = per_layer(lower_compiled(phi, Step("captured", Case.decode(16, 2048, 2), 2048)))
    assert layer["qkv_gather"] == layer["gate_up_gather"] == layer["o_proj_split"] == layer["down_split"] == 1
    assert layer["o_proj_allreduce"] == layer["down_allreduce"] == 1
    for name in ("qwen3-8b", "qwen3-30b-a3b"):
        with pytest.raises(InputError, match="dense families without q/k norms"):
            lower_compiled(load(str(DATA / f"{name}.json")), Step("captured", Case.decode(16, 2048, 2), 2048))


def test_compiled_and_eager_and_fused_llama_decode():
    """hf-compiled: 17 kernels a layer (3 GEMMs, rope q, rope k + cache scatter, v scatter, counter, repeat_kv 2,
    SDPA, o_proj, add+norm, gate, up, act*mul, down, add+next norm); eager: 40 (cat, not index_copy_; flash with
    enable_gqa, no repeat_kv, no mask); fused: 10."""
    comp = lower_compiled(LLAMA, Step("captured", Case.decode(16, 2048), 2048))
    assert sum(per_layer(comp).values()) == 17
    eager = lower_hf(LLAMA, Step("dynamic", Case.decode(16, 2048), 2048))
    layer = per_layer(eager)
    assert sum(layer.values()) == 40 and "k_cache_cat" in layer and "repeat_kv_k" not in layer
    assert step_level(eager)[1:4] == ["mask.to_bool", "mask.full.fast_all_sum", "mask.full.fast_all_eq"]
    assert sum(per_layer(lower_serving(LLAMA, Case.decode(16, 2048))).values()) == 10


def test_dynamic_cache_cat_is_the_vectorized_cat_on_the_unary_curve():
    """DynamicLayer.update's cat along the sequence runs PyTorch's vectorized cat (the tuned families' profiler lists,
    eager decode: CatArrayBatchedCopy_vectorized), every element read and written as the unary kernel does: qwen3-8b's
    eight at 64 x 4096 on the H200 (kv heads 8 of 128, as here) took 2156.7 us, 270 us a cat of 1.07 GB. Not the copy
    curve, a device-to-device memcpy, whose 1-GiB point reads 2.6-2.8 TB/s; not the cat curve (rotary's half rows)."""
    from hwprobe.analysis.llm import predictor

    ops = lower_hf(LLAMA, Step("dynamic", Case.decode(64, 4096), 4096))
    cat = next(o for o in ops if o.name == "layers.0.k_cache_cat")
    assert cat.kind == "cat_cache" and cat.bytes == 2 * 64 * 8 * 4095 * 128 * 2 + 2 * 64 * 8 * 128 * 2
    pricer, _ = predictor(str(H200), "eager")
    t = pricer.time(cat)
    assert t.source == "framework.unary" and t.covered
    assert t.time_s == pytest.approx(2156.7e-6 / 8, rel=0.08)
    assert pricer.time(replace(cat, kind="copy")).time_s > 1.3 * t.time_s     # the memcpy's 1-GiB point


def test_ropes_cats_on_transposed_heads_are_rotate_cats():
    """With more than one token q and k are held transposed ([b, heads, t, d] over the projection's [b, t, heads, d]),
    so rotate_half's cat runs the generic 4-D cat (rotate_cat; Phi-3's pass-through cat too); one token's are
    contiguous (cat)."""
    phi = load(str(DATA / "phi-3-mini-4k-instruct.json"))
    for cfg, per in ((LLAMA, 1), (phi, 2)):
        for case, kind in ((Case.prefill(1, 512), "rotate_cat"), (Case.decode(8, 1024), "cat")):
            ops = lower_hf(cfg, Step("captured", case, case.context))
            cats = {o.name.split(".", 2)[2]: o.kind for o in ops
                    if o.name.startswith("layers.0.rope_") and ".cat" in o.name}
            assert set(cats.values()) == {kind} and len(cats) == 2 * per, cats


def test_dynamic_cache_cat_with_a_strided_input_is_the_generic_cat():
    """The H200's eager kernel lists (2026-11-28): every prefill's cache cats, Phi-3's value cat at batch > 1 (a view
    of the fused qkv) and Gemma-2's sliding-window cats once a cat has dropped tokens ran PyTorch's generic 4-D cat
    (0.65 TB/s), the rest the vectorized one. Older profiles price it on the 2-D cat curve, as a stand-in."""
    from hwprobe.analysis.llm import predictor

    def kinds(name, case):
        ops = lower_hf(load(str(DATA / name)), Step("dynamic", case, case.context))
        return {o.name: o.kind for o in ops if o.name.endswith("_cache_cat")}

    pre = kinds("llama-3-8b.json", Case.prefill(1, 512))
    assert set(pre.values()) == {"cat_strided"} and len(pre) == 2 * 32
    phi = "phi-3-mini-4k-instruct.json"
    one, many = kinds(phi, Case.decode(1, 4096)), kinds(phi, Case.decode(64, 4096))
    assert set(one.values()) == {"cat_cache"}
    assert many["layers.0.v_cache_cat"] == "cat_strided" and many["layers.0.k_cache_cat"] == "cat_cache"
    gemma = "gemma-2-9b.json"                    # sliding window 4096 on the even layers
    full = kinds(gemma, Case.decode(16, 8192))
    assert full["layers.0.k_cache_cat"] == full["layers.0.v_cache_cat"] == "cat_strided"
    assert full["layers.1.k_cache_cat"] == "cat_cache"
    assert set(kinds(gemma, Case.decode(64, 4096)).values()) == {"cat_cache"}   # 4095 held: nothing dropped yet
    pricer, _ = predictor(str(H200), "eager")
    op = lower_hf(load(str(DATA / phi)), Step("dynamic", Case.decode(64, 4096), 4096))
    v = next(o for o in op if o.name == "layers.0.v_cache_cat")
    t = pricer.time(v)
    assert t.source == "framework.cat" and not t.covered


def test_family_traits_change_the_kernels():
    dec = Case.decode(1, 2048)

    def hf(name: str, case=dec, cache=2048):
        return lower_hf(load(str(DATA / name)), Step("captured", case, cache))

    # MHA (Phi-3: kv heads = heads): no repeat_kv; fused qkv_proj and gate_up_proj; rotary's extra cat
    phi = per_layer(hf("phi-3-mini-4k-instruct.json"))
    assert "repeat_kv_k" not in phi and {"qkv_proj", "gate_up_proj", "rope_q.cat_pass"} <= set(phi)
    assert "q_proj" not in phi and "up_proj" not in phi
    # qkv bias (Qwen2.5): in the GEMM's epilogue, no kernel of its own
    qwen25 = per_layer(hf("qwen2.5-7b.json"))
    assert sum(qwen25.values()) == 47
    # q/k norm (Qwen3): eight FP32 kernels each on q and k
    qwen3 = per_layer(hf("qwen3-8b.json"))
    assert sum(qwen3.values()) == 47 + 16 and "q_norm.rsqrt" in qwen3
    # head_dim 256, GELU-tanh, Gemma's norms (ten kernels), scaled embedding, sandwich norms, soft-cap, sliding
    gemma2 = hf("gemma-2-9b.json", Case.decode(1, 8192), 8192)
    att = next(o for o in gemma2 if o.name == "layers.1.attention")
    assert att.k == 256 and att.n == 8192
    slide = next(o for o in gemma2 if o.name == "layers.0.attention")
    assert slide.n == 4096                                       # even layers slide (window 4096)
    g0 = per_layer(gemma2, 0)
    assert {"k_cache_roll", "k_cache_copy_back"} <= set(g0)      # the window is full: roll, index_put, copy_
    assert sum(k.startswith("input_norm.") for k in g0) == 10 and "pre_ffn_norm.to_fp32" in g0
    assert [n for n in step_level(gemma2) if "softcap" in n] == ["logit_softcap.div", "logit_softcap.tanh",
                                                                 "logit_softcap.mul"]
    assert step_level(gemma2)[:3] == ["embed", "embed_scale_cast", "embed_scale"]
    a = analyze(load(str(DATA / "gemma-2-9b.json")), opts=LLMOptions(phase="decode", context=512))
    assert any("drops the attention soft-cap" in n for n in a.notes)
    # MoE (Mixtral): router, batched_mm in decode (weights gathered per token-expert pair), grouped_mm in prefill
    mix = per_layer(hf("mixtral-8x7b.json", Case.decode(4, 1024), 1024))
    assert {"router", "router_fp32", "router_topk", "router_div", "experts_gather_gate_up"} <= set(mix)
    up = next(o for o in hf("mixtral-8x7b.json", Case.decode(4, 1024), 1024) if o.name == "layers.0.experts_gate_up")
    assert (up.batch, up.m, up.n) == (4 * 2, 1, 2 * 14336)
    pre = per_layer(hf("mixtral-8x7b.json", Case.prefill(1, 512), 512))
    assert {"experts_histc", "experts_sort"} <= set(pre) and "experts_gather_gate_up" not in pre


def test_the_moe_prefill_lists_every_launch_of_transformers_grouped_experts():
    """What tools/hf_host_syncs.py saw each op of qwen3-30b-a3b's grouped experts launch on an H200
    (profiles/h200-sxm/2026-11-28-hf-moe-ops): the out-of-place masked_fills copy their whole input first, histc
    fills its bins, cumsum is two kernels, act and multiply read chunk views, and torch.sort is one kernel and four
    small launches up to 4096 keys, eleven kernels and a copy above."""
    def experts(case):
        ops = [o for o in lower_hf(load(str(DATA / "qwen3-30b-a3b.json")), Step("captured", case, case.context))
               if o.name.startswith("layers.0.experts_")]
        return {o.name.removeprefix("layers.0.experts_"): o for o in ops}

    small, big = experts(Case.prefill(1, 512)), experts(Case.prefill(8, 2048))   # 4096 and 131072 keys
    s, w, h = 8 * 2048 * 8, 768, 2048
    assert big["mask_up_copy"].kind == big["mask_down_copy"].kind == "copy"
    assert (big["mask_up_copy"].bytes, big["mask_down_copy"].bytes) == (2 * s * 2 * w * 2, 2 * s * h * 2)
    assert big["act"].kind == big["act_mul"].kind == "strided"
    assert {"histc_fill", "cumsum.0", "cumsum.1"} <= set(big)
    sort_launches = lambda ops: sorted(n.split(".")[0] for n in ops if n.startswith("sort_"))   # noqa: E731
    assert sort_launches(small) == ["sort_arange"] + ["sort_copy"] * 3
    assert sort_launches(big) == ["sort_copy"] + ["sort_pass"] * 10
    assert len(big) - len(small) == 11 - 4                        # nothing else depends on the size


def test_sliding_layers_follow_transformers_defaults():
    qwen25 = load(str(DATA / "qwen2.5-7b.json"))                # use_sliding_window false
    assert qwen25.sliding_layers == ()
    gemma2 = load(str(DATA / "gemma-2-9b.json"))                 # Gemma2Config: even layers, window 4096
    assert gemma2.sliding_layers == tuple(range(0, 42, 2)) and gemma2.sliding_window == 4096
    assert load("mistral-7b").sliding_layers == tuple(range(32))
    assert load(str(DATA / "mistral-7b-v0.3.json")).sliding_layers == ()        # "sliding_window": null


def test_refusals_are_one_line():
    for opts, needle in ((LLMOptions(weights="int4"), "needs --runtime fused or graph"),
                         (LLMOptions(tp=3), "--tp 3 does not divide"),
                         (LLMOptions(phase="decode", context=4096, cache_len=1024), "--cache-len 1024 is shorter"),
                         (LLMOptions(runtime="graph", cache_len=1024), "--cache-len applies to"),
                         (LLMOptions(runtime="tensorrt"), "--runtime must be one of")):
        with pytest.raises(InputError, match=needle):
            analyze(LLAMA, opts=opts)
    a = analyze(LLAMA, opts=LLMOptions(tp=2, runtime="hf-compiled", phase="decode"))     # modelled since 2026-11-29
    assert any(n.startswith("hf-compiled with --tp: the decode figure is the GPU's step") for n in a.notes)


def test_masked_attention_streams_its_bytes_at_dram_speed_at_any_batch():
    """SDPA's masked decode kernel (cuDNN's under torch 2.11: the tuned families' profiler lists) reads K, V and the
    mask at the DRAM bandwidth after the SDPA table's fixed cost, at batch 1 as at 16 (llama-3.2-1b, 1 x 8192 on the
    H100: 67 MB in 27.9 us, 2.4 TB/s; it is not confined to 32 of 132 SMs)."""
    from hwprobe.analysis.llm import predictor

    pricer, _ = predictor(str(H200), "graph")
    one, many = (next(o for o in lower_hf(LLAMA, Step("captured", Case.decode(b, 4096), 4096))
                      if o.name == "layers.0.attention") for b in (1, 16))
    t1, t16 = pricer.time(one), pricer.time(many)
    fixed = pricer.cal.sdpa.floor_s() + pricer.cal.switch_s
    assert t1.source == "attention.efficient" and "DRAM bandwidth" in t1.note
    assert t1.time_s == pytest.approx(fixed + one.bytes / pricer.dram_bw)
    assert t16.time_s == pytest.approx(fixed + many.bytes / pricer.dram_bw)


def test_repeat_kv_is_priced_as_a_strided_copy():
    """repeat_kv's expand + reshape runs PyTorch's non-vectorized copy kernel (the tuned families' profiler lists:
    llama-3.2-1b b16 x 1024 on the H100, 78.6 us a copy for 67 MB written, a third of the contiguous copy's speed):
    an ``expand`` of 2 x its output's bytes, on the cat curve (the calibrated strided copy), said in the note and
    outside the calibration."""
    from hwprobe.analysis.llm import predictor
    from hwprobe.lowering.ops import KernelOp

    ops = lower_hf(LLAMA, Step("captured", Case.decode(16, 1024), 1024))
    rk = next(o for o in ops if o.name == "layers.0.repeat_kv_k")
    assert rk.kind == "expand" and rk.bytes == 2 * 16 * 32 * 1024 * 128 * 2
    pricer, _ = predictor(str(H200), "graph")
    t = pricer.time(rk)
    assert t.source == "framework.cat" and not t.covered and "no expand curve: the cat curve" in t.note
    assert t.time_s == pytest.approx(pricer.time(KernelOp("b", "cat", "bf16", bytes=rk.bytes)).time_s)
    assert t.time_s > 2 * pricer.time(KernelOp("c", "copy", "bf16", bytes=rk.bytes)).time_s


def test_a_batched_gemm_reads_every_batch_entrys_weights():
    """transformers' batched_mm gathers one weight matrix per token-expert pair: never faster than those bytes."""
    from hwprobe.analysis.llm import predictor
    from hwprobe.lowering.ops import KernelOp

    pricer, _ = predictor(str(H200), "graph")
    op = KernelOp("x", "gemm", "bf16", m=1, n=2 * 14336, k=4096, batch=64)
    t = pricer.time(op)
    assert t.time_s >= 64 * 2 * 14336 * 4096 * 2 / pricer.dram_bw


def test_kernels_over_rows_picked_or_viewed_take_the_template_pytorch_runs():
    """Which PyTorch template a kernel runs sets its curve: an MoE's expert gathers (index_select, vectorized
    rows) on the unary curve, not the contiguous clone's; the grouped experts' masked_fills (an (S, 1) mask
    broadcast over the features) on the broadcast (bias) template; Phi-3's act and multiply over the chunk views
    of its fused gate_up output as strided kernels, the same non-vectorized template."""
    from hwprobe.analysis.llm import predictor
    from hwprobe.lowering.ops import KernelOp

    def layer0(name: str, case: Case, cache: int) -> dict:
        cfg = LLAMA if name == "llama" else load(str(DATA / f"{name}.json"))
        return {o.name.split(".", 2)[-1]: o.kind for o in lower_hf(cfg, Step("captured", case, cache))
                if o.name.startswith("layers.0.")}

    dec = layer0("qwen3-30b-a3b", Case.decode(16, 1024), 1024)
    assert {dec[n] for n in ("experts_gather_gate_up", "experts_gather_down", "experts_repeat")} == {"gather"}
    # compiled, the same gathers are Triton's fused index kernels, vectorized as the eager ones (the tuned
    # qwen3-30b-a3b's H200 16 x 2048 list: 375 and 188 us a layer where the clone curve priced 583 and 244)
    comp = {o.name.split(".", 2)[-1]: o.kind for o in lower_compiled(load(str(DATA / "qwen3-30b-a3b.json")),
                                                                      Step("captured", Case.decode(16, 2048), 2048))}
    assert {comp[n] for n in ("experts_gather_gate_up", "experts_gather_down", "experts_repeat")} == {"gather"}
    pre = layer0("qwen3-30b-a3b", Case.prefill(1, 512), 512)
    assert {pre[n] for n in ("experts_mask_in", "experts_mask_up", "experts_mask_down")} == {"bias"}
    assert {pre[n] for n in ("experts_gather_tokens", "experts_unpermute")} == {"gather"}
    phi = layer0("phi-3-mini-4k-instruct", Case.prefill(1, 512), 512)
    assert phi["act"] == phi["act_mul"] == "strided"
    llama = layer0("llama", Case.prefill(1, 512), 512)
    assert (llama["act"], llama["act_mul"]) == ("unary", "elementwise")      # separate gate and up: contiguous

    pricer, _ = predictor(str(H200), "graph")
    nbytes = 2e9
    gather, strided = (pricer.time(KernelOp(k, k, "bf16", bytes=nbytes)) for k in ("gather", "strided"))
    assert gather.source == "framework.unary" and strided.source == "framework.bias"
    assert gather.time_s == pytest.approx(pricer.time(KernelOp("u", "unary", "bf16", bytes=nbytes)).time_s)
    assert strided.time_s == pytest.approx(pricer.time(KernelOp("b", "bias", "bf16", bytes=nbytes)).time_s)
    assert strided.time_s > 2 * gather.time_s                                  # non-vectorized: well under half


def test_an_eager_pass_says_what_the_host_costs_it_and_a_graph_pass_does_not():
    e = analyze(LLAMA, str(H200), LLMOptions(phase="decode", context=1024, batch=1, runtime="eager")).phases["decode"]
    assert e.host_note.startswith(f"eager: the host issues each of the {e.kernels} kernels in ")
    wait_us = float(e.host_note.split("the GPU waits for it ")[1].split(" us")[0])
    assert 0 < wait_us * 1e-6 <= e.parts["launch"] + 1e-9                  # the wait is part of the launch share
    g = analyze(LLAMA, str(H200), LLMOptions(phase="decode", context=1024, batch=1)).phases["decode"]
    assert g.host_note == ""


def test_a_sliding_layers_prefill_is_masked_only_once_the_static_cache_reaches_its_window():
    """transformers' ``_ignore_causal_mask_sdpa`` drops a sliding layer's mask while the keys are fewer than the
    window (Gemma-2's window is 4096): a static-cache prefill of 512 or 2048 runs flash with GQA on every layer, one of
    4096 masks its sliding layers (seen with transformers 5.17 on the CPU: create_masks_for_generate's dict holds None
    for both layer types at 512 and 2048, a (1, 1, 4096, 4096) sliding mask at 4096)."""
    gemma2 = load(str(DATA / "gemma-2-9b.json"))
    for mode in ("captured", "generate"):
        for n, masked in ((512, False), (2048, False), (4096, True)):
            ops = {o.name: o for o in lower_hf(gemma2, Step(mode, Case.prefill(1, n), n))
                   if o.name.startswith("layers.0.")}
            assert (ops["layers.0.attention"].backend == "efficient") is masked, (mode, n)
            assert ("layers.0.repeat_kv_k" in ops) is masked, (mode, n)
    dec = {o.name: o for o in lower_hf(gemma2, Step("captured", Case.decode(1, 1024), 1024))}
    assert dec["layers.0.attention"].backend == dec["layers.1.attention"].backend == "efficient"   # decode: always
