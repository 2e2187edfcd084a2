"""LLM lowering and analysis (hwprobe.lowering.llm, hwprobe.analysis.llm): real config.json files, parameter counts
against the published figures, the kernels of prefill and decode against hand counts, tensor parallel, memory fit,
pricing with a fake predictor, refusals and the CLI. The fake pricer lives here only: the real one is
hwprobe.predict.model.Predictor."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe.analysis.llm import LLMOptions, analyze, to_dict
from hwprobe.analysis.llm.memory import fit, kv_bytes_per_token, kv_cache_bytes, params
from hwprobe.errors import InputError
from hwprobe.lowering.llm.graph import Case, Quant, experts_touched, lower
from hwprobe.lowering.ops import COMM_KINDS, KernelOp
from hwprobe.models.llm import builtin
from hwprobe.models.llm.config import load, parse
from hwprobe.predict.ops import OpTime

DATA = Path(__file__).parent / "data" / "llm_configs"


class FakePricer:
    """flops / peak vs bytes / bandwidth, plus a per-kernel floor; collectives from a latency + bandwidth line,
    or refused like a profile without links."""

    PEAK, BW, FLOOR, LINK = 800e12, 4e12, 3e-6, 300e9

    def __init__(self, links: bool = True):
        self.links, self.calls = links, 0

    def time(self, op: KernelOp) -> OpTime:
        self.calls += 1
        if op.kind in COMM_KINDS:
            if not self.links:
                raise LookupError("the profile has no measured links")
            t = 8e-6 + op.bytes / self.LINK
            return OpTime(op, t, comm_s=t, bound="comm", roofline_s=op.bytes / self.LINK)
        nbytes = op.bytes or op.batch * 2 * (op.m * op.k + op.k * op.n + op.m * op.n)
        c, m = op.total_flops / self.PEAK, nbytes / self.BW
        t = max(c, m, self.FLOOR)
        bound = "launch" if t == self.FLOOR else ("compute" if c >= m else "memory")
        return OpTime(op, t, compute_s=c, memory_s=m, launch_s=self.FLOOR, bound=bound, roofline_s=max(c, m))


# ---------------------------------------------------------------- config.json files
@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.stem)
def test_every_real_config_parses_and_matches_its_builtin(path):
    cfg = load(str(path))
    assert cfg.layers > 0 and cfg.hidden % 64 == 0 and cfg.heads % cfg.kv_heads == 0
    key = builtin.find(path.stem)
    if key:
        ours = dataclasses.replace(load(key), name="", source="")
        assert dataclasses.replace(cfg, name="", source="") == ours


def test_family_traits_from_the_real_files():
    gpt2 = load(str(DATA / "gpt2.json"))
    assert (gpt2.family, gpt2.norm, gpt2.qkv_fused, gpt2.gated, gpt2.tied, gpt2.ffn) == ("gpt2", "layer", True,
                                                                                      False, True, 3072)
    one_b = load(str(DATA / "llama-3.2-1b.json"))
    assert (one_b.head_dim, one_b.kv_heads, one_b.tied) == (64, 8, True)
    qwen3 = load(str(DATA / "qwen3-8b.json"))
    assert qwen3.qk_norm and not qwen3.bias and qwen3.head_dim == 128
    qwen25 = load(str(DATA / "qwen2.5-7b.json"))
    assert qwen25.bias and qwen25.sliding_window == 0          # use_sliding_window: false
    moe = load(str(DATA / "qwen3-30b-a3b.json"))
    assert (moe.experts, moe.experts_per_tok, moe.expert_ffn, len(moe.moe_layers)) == (128, 8, 768, 48)
    mix = load(str(DATA / "mixtral-8x7b.json"))
    assert (mix.experts, mix.experts_per_tok, mix.expert_ffn) == (8, 2, 14336)


# ---------------------------------------------------------------- parameters: the published counts
@pytest.mark.parametrize("name,total,active", [
    ("llama-3-8b", 8_030_261_248, None),          # Meta-Llama-3-8B's safetensors parameter count
    ("llama-3-70b", 70_553_706_496, None),
    ("llama-3.2-1b", 1_235_814_400, None),
    ("gpt2", 124_439_808, None),
    ("mixtral-8x7b", 46_702_792_704, 12.9e9),     # Mixtral paper: 46.7B total, 12.9B active
    ("qwen3-30b-a3b", 30.5e9, 3.3e9),             # Qwen3 model card: 30.5B total, 3.3B activated
    (str(DATA / "mixtral-8x22b.json"), 141e9, 39e9),            # Mistral's card: 141B total, 39B active
    (str(DATA / "qwen3-coder-480b-a35b.json"), 480e9, 35e9),    # Qwen3-Coder's card: 480B total, 35B activated
    (str(DATA / "gemma-7b.json"), 8_537_680_896, None),         # the hub's safetensors counts
    (str(DATA / "llama-2-7b.json"), 6_738_415_616, None),
    (str(DATA / "qwen2.5-0.5b.json"), 494_032_768, None),       # tied embeddings: counted once
])
def test_parameter_counts(name, total, active):
    p = params(load(name))
    assert p.total == pytest.approx(total, rel=2e-3 if total < 100e9 else 5e-3)
    if active:      # the figures are given to 0.1 B (to 1 B for the two largest)
        assert p.active == pytest.approx(active, abs=0.055e9 if active < 30e9 else 0.55e9)


def _gemm_weights(ops):
    return sum(o.batch * o.k * o.n for o in ops if o.kind == "gemm")


def test_lowered_gemm_weights_plus_embedding_are_the_parameters_llama3_8b():
    ops = lower(load("llama-3-8b"), Case.decode(1, 1024))
    embedding, norms = 128256 * 4096, 32 * 2 * 4096 + 4096
    assert _gemm_weights(ops) + embedding + norms == 8_030_261_248


def test_lowered_active_experts_mixtral_decode_batch1():
    ops = lower(load("mixtral-8x7b"), Case.decode(1, 512))
    experts = [o for o in ops if o.name.endswith("experts_gate")]
    assert len(experts) == 32 and all(o.batch == 2 and o.m == 1 for o in experts)
    embedding, norms = 32000 * 4096, 32 * 2 * 4096 + 4096
    assert _gemm_weights(ops) + embedding + norms == pytest.approx(12.9e9, rel=1e-2)


def test_experts_touched_by_a_batch():
    assert experts_touched(8, 2, 1) == 2
    assert experts_touched(8, 2, 16) == 8                    # 8 (1 - 0.75^16) = 7.92
    assert experts_touched(128, 8, 4) == round(128 * (1 - (1 - 8 / 128) ** 4))


# ---------------------------------------------------------------- kernels against hand counts
def test_decode_flops_are_two_per_weight_plus_attention():
    cfg = load("llama-3-8b")
    ops = lower(cfg, Case.decode(1, 1024))
    non_embedding = 8_030_261_248 - 128256 * 4096 - (32 * 2 + 1) * 4096
    attention = 4 * 32 * 1024 * 128 * 32                      # q.K and p.V, 32 heads, 32 layers
    gemm = sum(o.total_flops for o in ops if o.kind in ("gemm", "attention"))
    assert gemm == 2 * non_embedding + attention


def test_kv_cache_bytes_per_token_hand_count():
    cfg = load("llama-3-8b")
    assert kv_bytes_per_token(cfg, Quant()) == 2 * 32 * 8 * 128 * 2 == 131072
    assert kv_bytes_per_token(cfg, Quant(kv="fp8")) == 65536
    assert kv_bytes_per_token(cfg, Quant(), tp=2) == 65536
    assert kv_cache_bytes(cfg, Quant(), 16, 4096) == 16 * 4096 * 131072


def test_llama_layer_kernels_and_prefill_shapes():
    ops = lower(load("llama-3.2-1b"), Case.prefill(2, 512))
    layer0 = [o for o in ops if o.name.startswith("layers.0.")]
    assert len(layer0) == 26                                   # what tools/validate_llm.py's layer launches
    assert len(ops) == 16 * 26 + 1 + 2 + 2                     # embed, cos/sin gathers, final norm, lm_head
    att = next(o for o in layer0 if o.kind == "attention")
    assert (att.batch, att.m, att.n, att.k, att.causal) == (2 * 32, 512, 512, 64, True)
    assert att.bytes == 2 * (2 * 512 * 32 * 64 * 2) + 2 * (2 * 8 * 512 * 64 * 2)    # Q, O; K, V by KV heads
    q = next(o for o in layer0 if o.name.endswith("q_proj"))
    k = next(o for o in layer0 if o.name.endswith("k_proj"))
    assert (q.m, q.n, q.k) == (1024, 2048, 2048) and (k.n, k.k) == (512, 2048)
    head = next(o for o in ops if o.name == "lm_head")
    assert (head.m, head.n, head.k) == (2, 128256, 2048)       # the last token of each sequence only


def test_attention_grows_with_context():
    cfg = load("llama-3-8b")
    a1 = next(o for o in lower(cfg, Case.decode(1, 1024)) if o.kind == "attention")
    a4 = next(o for o in lower(cfg, Case.decode(1, 4096)) if o.kind == "attention")
    assert a4.total_flops == 4 * a1.total_flops and a4.bytes > 3.9 * a1.bytes
    assert a1.causal is False and a1.m == 1 and a1.n == 1024


def test_gpt2_fused_qkv_and_plain_mlp():
    ops = lower(load("gpt2"), Case.decode(1, 100))
    names = {o.name.split(".", 2)[2] for o in ops if o.name.startswith("layers.0.")}
    assert {"qkv_proj", "fc", "proj", "act"} <= names and not names & {"q_proj", "gate_proj", "rope_q.add"}
    qkv = next(o for o in ops if o.name == "layers.0.qkv_proj")
    assert (qkv.n, qkv.k) == (3 * 768, 768)
    assert any(o.name == "pos_embed" for o in ops)


def test_sliding_window_caps_the_keys():
    cfg = load("mistral-7b")
    att = [o for o in lower(cfg, Case.decode(1, 8192)) if o.kind == "attention"]
    assert {o.n for o in att} == {4096}
    g2 = [o for o in lower(load("gemma2-9b"), Case.decode(1, 8000)) if o.kind == "attention"]
    assert [o.n for o in g2[:4]] == [4096, 8000, 4096, 8000]   # Gemma2 slides on even layers


def test_weight_precisions():
    cfg = load("llama-3-8b")
    int4 = lower(cfg, Case.decode(1, 512), Quant("int4"))
    q = next(o for o in int4 if o.name.endswith("q_proj"))
    assert (q.precision, q.weight_bits) == ("bf16", 4)
    head = next(o for o in int4 if o.name == "lm_head")
    assert head.weight_bits is None and head.precision == "bf16"
    fp8 = lower(cfg, Case.decode(1, 512), Quant("fp8"))
    assert next(o for o in fp8 if o.name.endswith("q_proj")).precision == "fp8"
    assert sum(o.name.endswith("_quantize") for o in fp8) == 32 * 4
    assert len(lower(cfg, Case.decode(1, 512))) == len(fp8) - 32 * 4


# ---------------------------------------------------------------- tensor parallel
def test_tensor_parallel_splits_and_allreduces():
    ops = lower(load("llama-3-8b"), Case.prefill(2, 256, tp=2))
    q = next(o for o in ops if o.name == "layers.0.q_proj")
    o_proj = next(o for o in ops if o.name == "layers.0.o_proj")
    down = next(o for o in ops if o.name == "layers.0.down_proj")
    assert (q.n, o_proj.k, down.k) == (2048, 2048, 7168)
    ar = [o for o in ops if o.kind == "allreduce"]
    assert len(ar) == 2 * 32 and all(o.ranks == 2 and o.bytes == 2 * 256 * 4096 * 2 for o in ar)
    att = next(o for o in ops if o.kind == "attention")
    assert att.batch == 2 * 16
    gather = [o for o in ops if o.kind == "allgather"]
    assert len(gather) == 1 and gather[0].bytes == 2 * 128256 * 2


def test_tensor_parallel_that_does_not_divide_is_refused():
    with pytest.raises(InputError, match="--tp 3 does not divide .*num_attention_heads 32"):
        lower(load("llama-3-8b"), Case.decode(1, 128, tp=3))


# ---------------------------------------------------------------- memory fit
def test_memory_fit():
    h200, h100 = 150_109_880_320, 85_520_809_984
    assert fit(load("llama-3-8b"), Case.decode(16, 4096), Quant(), h200).fits is True
    assert fit(load("llama-3-70b"), Case.decode(1, 1024), Quant(), h100).fits is False
    f = fit(load("llama-3-70b"), Case.decode(1, 1024), Quant("int4"), h100)
    assert f.fits is True and f.weights_bytes < 40e9
    assert fit(load("llama-3-8b"), Case.decode(1, 1024), Quant(), None).fits is None
    half = fit(load("llama-3-70b"), Case.decode(1, 1024, tp=2), Quant(), h100)
    emb, norms = 128256 * 8192, (80 * 2 + 1) * 8192              # replicated on each rank; lm_head split
    layer = 70_553_706_496 - 2 * emb - norms
    assert half.weights_bytes == 2 * (layer / 2 + emb + emb / 2 + norms)


# ---------------------------------------------------------------- pricing
def test_pricing_sums_and_parts():
    pricer = FakePricer()
    a = analyze("llama-3.2-1b", opts=LLMOptions(batch=1, prompt=512, context=512, runtime="graph"), pricer=pricer)
    for r in a.phases.values():
        ops = lower(load("llama-3.2-1b"), Case.prefill(1, 512) if r.phase == "prefill" else Case.decode(1, 512))
        expected = sum(FakePricer().time(o).time_s for o in ops)
        assert r.time_s == pytest.approx(expected, rel=1e-12)
        assert sum(r.parts.values()) == pytest.approx(r.time_s, rel=1e-12)
        assert r.roofline_s < r.time_s
    assert a.ttft_s > a.tpot_s > 0
    assert pricer.calls < 2 * 421                               # identical layers priced once
    d = to_dict(a)
    assert d["phases"]["decode"]["tokens_per_s"] == pytest.approx(1 / a.tpot_s)
    assert abs(sum(x["share"] for x in d["phases"]["decode"]["ops"]) - 1) < 1e-9


def test_communication_missing_when_the_profile_has_no_links():
    opts = LLMOptions(phase="decode", context=256, tp=2, runtime="graph")
    with_links = analyze("llama-3-8b", opts=opts, pricer=FakePricer())
    without = analyze("llama-3-8b", opts=opts, pricer=FakePricer(links=False))
    r = without.phases["decode"]
    assert r.missing and "no measured links" in r.missing[0] and r.parts["comm"] == 0
    assert with_links.phases["decode"].parts["comm"] > 0
    assert r.time_s == pytest.approx(with_links.phases["decode"].time_s - with_links.phases["decode"].parts["comm"])
    d = to_dict(without)["phases"]["decode"]
    assert d["communication_missing"] is True
    assert next(x for x in d["ops"] if x["op"] == "attn_allreduce")["bound"] == "missing"


def test_non_finite_collective_time_is_missing_too():
    class NaNComm(FakePricer):
        def time(self, op):
            if op.kind in COMM_KINDS:
                return OpTime(op, math.nan, note="no NCCL curve for 2 ranks")
            return super().time(op)

    r = analyze("llama-3-8b", opts=LLMOptions(phase="decode", tp=2, runtime="graph"), pricer=NaNComm()).phases["decode"]
    assert r.missing and "no NCCL curve" in r.missing[0] and math.isfinite(r.time_s)


# ---------------------------------------------------------------- refusals
def _write(tmp_path, d) -> str:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(d))
    return str(p)


def test_missing_field_is_named(tmp_path):
    d = json.loads((DATA / "llama-3.2-1b.json").read_text())
    del d["num_attention_heads"]
    with pytest.raises(InputError, match="missing field 'num_attention_heads'"):
        load(_write(tmp_path, d))
    d = json.loads((DATA / "mixtral-8x7b.json").read_text())
    del d["num_experts_per_tok"]
    with pytest.raises(InputError, match="missing field 'num_experts_per_tok'"):
        load(_write(tmp_path, d))


def test_unknown_architecture_and_bad_values_are_refused(tmp_path):
    with pytest.raises(InputError, match="model_type 'falcon' is not one hwprobe lowers"):
        parse({"model_type": "falcon"}, "x")
    with pytest.raises(InputError, match="missing field 'model_type'"):
        parse({"hidden_size": 8}, "x")
    with pytest.raises(InputError, match="'hidden_size' must be a positive integer"):
        parse({"model_type": "llama", "hidden_size": -1}, "x")
    with pytest.raises(InputError, match="not a multiple of num_key_value_heads"):
        parse({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3,
               "num_hidden_layers": 1, "intermediate_size": 64, "vocab_size": 10}, "x")
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(InputError, match="is not JSON"):
        load(str(p))


def test_option_ranges():
    for kw, needle in ((dict(prompt=0), "--prompt"), (dict(batch=100000), "--batch"), (dict(tp=0), "--tp"),
                       (dict(weights="fp4"), "--weights"), (dict(phase="train"), "--phase")):
        with pytest.raises(InputError, match=needle):
            analyze("gpt2", opts=LLMOptions(**kw))
    with pytest.raises(InputError, match="exceeds gpt2's max_position_embeddings 1024"):
        analyze("gpt2", opts=LLMOptions(context=2048, runtime="graph"))


# ---------------------------------------------------------------- CLI
def hw(*args):
    return subprocess.run([sys.executable, "-m", "hwprobe", *args], capture_output=True, text=True, timeout=120)


def test_cli_counts_only_json():
    r = hw("analyze", "llama-3-8b", "--json", "--phase", "decode", "--context", "2048", "--batch", "4")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["params"]["total"] == 8_030_261_248 and d["kv_cache_bytes_per_token"] == 131072
    assert d["memory"]["decode"]["kv_cache_bytes"] == 4 * 2048 * 131072 and d["memory"]["decode"]["fits"] is None
    assert d["phases"]["decode"]["time_s"] is None and d["tpot_s"] is None


def test_cli_config_json_text():
    r = hw("analyze", str(DATA / "mixtral-8x7b.json"), "--phase", "prefill", "--prompt", "128")
    assert r.returncode == 0, r.stderr
    assert "8 experts (2 active)" in r.stdout and "experts_gate" in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["analyze", "llama-3-8b", "--prompt", "0"], "--prompt must be between 1 and"),
    (["analyze", "llama-3-8b", "--tp", "3", "--runtime", "graph"], "--tp 3 does not divide"),
    (["analyze", "mixtral-8x7b", "--tp", "2"], "tensor parallel under transformers is modelled for the tp plans"),
    (["analyze", "qwen3-8b", "--tp", "2", "--runtime", "hf-compiled"], "modelled for dense families without q/k"),
    (["analyze", "llama-3-8b", "--cache-len", "10", "--phase", "decode"], "--cache-len 10 is shorter than"),
    (["analyze", "llama-3-8b", "--cache-len", "2048", "--runtime", "fused"], "--cache-len applies to"),
    (["analyze", "llama-3-8b", "--weights", "int4"], "needs --runtime fused or graph"),
    (["analyze", "resnet50", "--runtime", "hf"], "--runtime hf applies to an LLM"),
    (["analyze", "llama-3-8b", "--weights", "fp4"], "Invalid value for '--weights'"),
    (["analyze", "llama-3-8b", "--precision", "fp16"], "--precision does not apply to an LLM (use --weights)"),
    (["analyze", "llama-3-8b", "--spec", "H100 SXM"], "give --profile, not --spec"),
    (["analyze", "resnet50", "--tp", "2"], "--tp applies to an LLM"),
    (["analyze", "resnet50", "--tp", "2", "--phase", "decode"], "--phase, --tp apply to an LLM"),
    (["analyze", "llama-3-8b", "--layout", "nchw"], "--layout does not apply to an LLM"),
    (["analyze", "llama-3-8b", "--dim", "sequence=128"], "--dim does not apply to an LLM"),
    (["analyze", "llama-3-8b", "--dim", "sequence=128", "--layout", "nchw", "--times", "x.csv", "-p", "fp16"],
     "--precision, --times, --dim, --layout do not apply to an LLM (use --weights)"),
    (["analyze", "nothere.json"], "does not exist"),
])
def test_cli_bad_input_is_one_line(args, needle):
    r = hw(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr


def test_cli_missing_field_config(tmp_path):
    d = json.loads((DATA / "qwen2.5-7b.json").read_text())
    del d["vocab_size"]
    r = hw("analyze", _write(tmp_path, d))
    assert r.returncode == 2 and "missing field 'vocab_size'" in r.stderr


def test_cli_with_a_predictor(monkeypatch, capsys):
    """The profile's predictor swapped for the fake one: the text output carries TTFT, TPOT and the parts."""
    import hwprobe.analysis.llm as llm
    from hwprobe.cli import cli

    monkeypatch.setattr(llm, "predictor",
                        lambda profile, runtime, host="framework", comm=None: (FakePricer(links=False), None))
    cli.main(args=["analyze", "llama-3-8b", "--profile", "x", "--tp", "2", "--batch", "2", "--runtime", "graph"],
             standalone_mode=False)
    out = capsys.readouterr().out
    for text in ("time to first token", "time per output token", "communication missing", "time by bound",
                 "attn_allreduce"):
        assert text in out, text


def test_the_predictors_missing_note_and_latency_bound():
    """hwprobe.predict.model answers a collective it cannot price with time 0 and a note 'missing: ...', and a
    kernel held by its floor with bound 'latency' (counted as launch)."""

    class Like(FakePricer):
        def time(self, op):
            if op.kind in COMM_KINDS:
                return OpTime(op, 0.0, bound="comm", covered=False, note="missing: no measured collective curve")
            t = super().time(op)
            return dataclasses.replace(t, bound="latency") if t.bound == "launch" else t

    r = analyze("llama-3-8b", opts=LLMOptions(phase="decode", tp=2, runtime="graph"), pricer=Like()).phases["decode"]
    assert r.missing and "no measured collective curve" in r.missing[0]
    assert r.parts["launch"] > 0 and sum(r.parts.values()) == pytest.approx(r.time_s)


def test_fused_runtime_is_the_serving_plan():
    """A serving engine's step: per layer add+norm, one QKV GEMM, rotary, the paged cache write, flash attention,
    o_proj, add+norm, one gate/up GEMM, act-and-mul, down = 10 kernels (Llama-3.2-1B: 16 layers), around them the
    embedding, the final add+norm and the lm_head."""
    from hwprobe.lowering.llm.serving import lower_serving

    ops = lower_serving(load("llama-3.2-1b"), Case.decode(1, 512))
    assert len(ops) == 16 * 10 + 3
    assert sum(o.kind == "gemm" for o in ops) == 16 * 4 + 1
    assert not any(o.name.endswith(("rope_q.add", "act_mul", "mlp_residual")) for o in ops)
    a = analyze("llama-3.2-1b", opts=LLMOptions(phase="decode", context=512, runtime="fused"), pricer=FakePricer())
    assert a.phases["decode"].kernels == len(ops)
    assert any("NOT validated" in n for n in a.notes)


def test_flash_split_kv_combine_where_flash_attention_splits():
    """FlashAttention-2's heuristic, checked against the kernels torch.profiler counted on an H200 (132 SMs,
    profiles/h200-sxm/2026-11-26-validation-cold/llm_measured.json): decode at batch 1 launches a split-KV kernel and
    a combine kernel per layer; prefill at 512 tokens and decode at batch 16 one flash kernel."""
    from hwprobe.lowering.llm.graph import flash_splits

    assert flash_splits(32, 1, 1024, 64, 132) > 1
    assert flash_splits(16 * 32, 1, 1024, 64, 132) == 1
    assert flash_splits(32, 512, 512, 64, 132) == 1
    cfg = load("llama-3.2-1b")
    decode = lower(cfg, Case.decode(1, 1024), sms=132)
    assert sum(o.name.endswith("attention_combine") for o in decode) == 16 and len(decode) == 421 + 16
    assert len(lower(cfg, Case.prefill(1, 512), sms=132)) == 421
    assert len(lower(cfg, Case.decode(16, 1024), sms=132)) == 421
    assert len(lower(cfg, Case.decode(1, 1024))) == 421                # SM count unknown: no split assumed


H200_CONV = Path(__file__).resolve().parents[1] / "profiles/h200-sxm/2026-11-26-predict-conv"


def test_large_slow_kernels_are_bound_by_their_roof_not_latency():
    """Issue 35 item 1: a 268 MB RoPE multiply or norm (batch-16 prefill) and a 235 MB BF16 GEMM (70B decode, TP 2)
    run well below DRAM speed but far above any kernel's fixed cost: memory-bound, not "latency", and not counted
    as launch. A kernel of a few kB stays latency-bound; the predicted times do not move."""
    graph = LLMOptions(phase="prefill", batch=16, runtime="graph")
    pre = analyze("llama-3-8b", str(H200_CONV), graph).phases["prefill"]
    rows = {r.group: r for r in pre.rows}
    for g in ("rope_q.mul_cos", "input_norm", "rope_q.cat"):
        assert rows[g].bound == "memory", (g, rows[g].bound, rows[g].time_s)
    assert pre.parts["launch"] < 0.01 * pre.time_s
    # FP8 weights have no calibration points in this profile (refused since); BF16 weights are 2x the bytes
    dec = analyze("llama-3-70b", str(H200_CONV),
                  LLMOptions(phase="decode", tp=2, weights="bf16", kv="bf16", runtime="graph")).phases["decode"]
    rows = {r.group: r for r in dec.rows}
    assert rows["down_proj"].bytes / rows["down_proj"].count > 100e6
    for g in ("down_proj", "gate_proj", "up_proj", "q_proj", "o_proj"):
        assert rows[g].bound == "memory", (g, rows[g].bound)
    assert rows["rope_k.mul_cos"].bound == "latency"          # 2 kB: its time is the kernel's fixed cost
    assert dec.parts["launch"] < 0.3 * dec.time_s
