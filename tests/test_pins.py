"""The pinned answers of the LLM lowering and memory counts, the predictor's pricing and the ONNX import
(tests/pins.py; issue 35's mutation run found these branches unwatched), each with spot checks by hand."""

from __future__ import annotations

import math

import pytest

from tests import pins


def _diff(want, got, path="") -> str | None:
    """The first place two JSON trees differ (floats to 1e-12 relative), or None."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(want) != set(got):
            return f"{path}: keys {sorted(set(want) ^ set(got))[:5]} differ"
        return next((d for k in want if (d := _diff(want[k], got[k], f"{path}/{k}"))), None)
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{path}: {len(want)} items pinned, {len(got)} now"
        return next((d for i, (a, b) in enumerate(zip(want, got, strict=True)) if (d := _diff(a, b, f"{path}[{i}]"))),
                    None)
    if isinstance(want, float) or isinstance(got, float):
        if type(want) is not type(got) or not math.isclose(want, got, rel_tol=1e-12, abs_tol=0):
            return f"{path}: pinned {want!r}, now {got!r}"
        return None
    return None if want == got and type(want) is type(got) else f"{path}: pinned {want!r}, now {got!r}"


@pytest.mark.parametrize("name", sorted(pins.BUILDERS))
def test_answers_match_their_pins(name):
    if name == "onnx":
        pytest.importorskip("onnx")
    d = _diff(pins.load(name), pins.fresh(name))
    assert d is None, f"{d} (after an intended change: python -m tests.pins, and review the diff)"


def test_the_diff_sees_a_changed_figure():
    assert _diff({"a": [1.0, {"b": 2}]}, {"a": [1.0, {"b": 2}]}) is None
    assert _diff({"a": [1.0]}, {"a": [1.0 + 1e-9]}) == "/a[0]: pinned 1.0, now 1.000000001"
    assert _diff({"a": 1}, {"a": 1.0}) and _diff({"a": True}, {"a": 1}) and _diff([1], [1, 2])


def test_mixtral_moe_kernels_by_hand():
    """Mixtral 8x7B prefill, 2 x 128 tokens: t = 256 rows route to 2 of 8 experts each; all 8 are touched
    (8 (1 - (3/4)^256) rounds to 8), so each expert GEMM is a batch of 8 with 256 x 2 / 8 = 64 rows."""
    ops = {o["name"]: o for o in pins.load("llm")["mixtral-8x7b"]["cases"]["prefill b2 p128"]["ops"]}
    t, h, w, e, k = 256, 4096, 14336, 8, 2
    assert (ops["layers.0.router"]["m"], ops["layers.0.router"]["n"], ops["layers.0.router"]["k"]) == (t, e, h)
    gate = ops["layers.0.experts_gate"]
    assert (gate["m"], gate["n"], gate["k"], gate["batch"]) == (64, w, h, 8)
    down = ops["layers.0.experts_down"]
    assert (down["m"], down["n"], down["k"], down["batch"]) == (64, h, w, 8)
    assert ops["layers.0.permute"]["bytes"] == 2 * t * k * h * 2                  # read and write, BF16
    soft = ops["layers.0.router_softmax"]
    assert soft["bytes"] == 2 * t * e * 4 and soft["flops"] == 5 * t * e
    assert ops["layers.0.combine"]["bytes"] == (t * k * h + t * h) * 2 + t * k * 4


def test_tensor_parallel_decode_by_hand():
    """Llama 3 8B decode, 4 sequences at 1024 keys, tensor parallel 2: 16 of 32 heads and 4 of 8 KV heads per
    rank, an all-reduce of 4 x 4096 BF16 after attention and after the MLP, logits gathered over the vocabulary."""
    case = pins.load("llm")["llama-3-8b"]["cases"]["decode b4 c1024 tp2"]
    ops = {o["name"]: o for o in case["ops"]}
    assert (ops["layers.0.q_proj"]["m"], ops["layers.0.q_proj"]["n"], ops["layers.0.q_proj"]["k"]) == (4, 2048, 4096)
    assert ops["layers.0.k_proj"]["n"] == 4 * 128 and ops["layers.0.o_proj"]["k"] == 2048
    assert ops["layers.0.attn_allreduce"] == {"name": "layers.0.attn_allreduce", "kind": "allreduce",
                                              "precision": "bf16", "bytes": 4 * 4096 * 2.0, "ranks": 2}
    assert ops["lm_head"]["n"] == 128256 // 2 and ops["logits_allgather"]["bytes"] == 4 * 128256 * 2


def test_predictor_spot_checks():
    p = pins.load("predict")
    odd = p["graph nhwc"]["gemm_odd_n"]
    assert odd["note"].startswith("n=4100 not a multiple of 8: x") and odd["source"] == "framework.linear"
    assert p["graph nhwc"]["allreduce_1"] == {"op": "allreduce_1", "extra": {}, "bound": "comm", "comm_s": 0.0,
                                              "compute_s": 0.0, "covered": True, "launch_s": 0.0, "memory_s": 0.0,
                                              "note": "", "roofline_s": 0.0, "source": "collective", "time_s": 0.0}
    assert p["graph nhwc"]["allreduce"]["note"].startswith("missing: ")      # the H200 run measured no collective
    ar = p["2x H200 graph"]["allreduce"]
    assert ar["covered"] and ar["time_s"] == ar["comm_s"] == ar["roofline_s"] > 0
    assert p["eager nhwc"]["gemm_small"]["time_s"] >= p["graph nhwc"]["gemm_small"]["time_s"]   # host floor
    assert p["overhead"]["fused"] == {} and set(p["overhead"]["graph"]) == {"replay", "switches"}


def test_onnx_counts_by_hand():
    """ResNet-18 (exported at a fixed batch of 1, which the asked batch does not change): the 7x7 stride-2 stem is
    64 x 112 x 112 outputs x 3 x 49 taps; 49 layers."""
    r18 = pins.load("onnx")["resnet18-b1.onnx"]
    assert r18["layers"] == 49
    stem = next(d["first"] for d in r18["distinct"] if d["first"]["op"] == "conv")
    assert stem["macs"] == 64 * 112 * 112 * 3 * 49 and stem["kernel"] == [7, 7]


def test_curve_readers_by_hand():
    """The seeded staircase (30, 9, 4.7 TB/s, steps after 256 KiB and 64 MiB, +-3% noise): three plateaus at
    those levels, a knee in each step's bracket, the L1 exit between 256 and 512 KiB."""
    c = pins.load("curves")["seed 0"]
    plateaus, knees = c["knees"]
    assert [p["level"] for p in plateaus] == pytest.approx([30e12, 9e12, 4.7e12], rel=0.03)
    assert [k["bracket"] for k in knees] == [[2.0**18, 2.0**19], [2.0**26, 2.0**27]]
    assert 2**18 < c["exit"]["size"] < 2**19 and c["capacity"]["clamped"] and c["capacity"]["value"] == 2**18
    fit = c["roofline"]
    assert fit["roof"] == pytest.approx(60e12, rel=0.1) and fit["bandwidth"] == pytest.approx(4e12, rel=0.1)


def test_flash_splits_and_experts_touched_by_hand():
    """Decode of 8 heads over 512 keys (64-wide heads: 256-key blocks, so 2 blocks): 8 of 264 slots busy, and
    2 splits double that; 256 sequence-heads fill the GPU: no split. 8 experts, 2 per token: one token touches
    2, 256 tokens all 8; 128 experts, 8 per token, 64 tokens: 128 (1 - (15/16)^64) = 126."""
    p = pins.load("llm")
    assert p["flash_splits"]["8 1 512 64"] == 2 and p["flash_splits"]["256 1 4096 128"] == 1
    assert p["experts_touched"]["8 2 1"] == 2 and p["experts_touched"]["128 8 64"] == round(128 * (1 - (15 / 16) ** 64))
    assert p["refused"]["tp 3"].startswith("InputError: --tp 3 does not divide llama-3-8b's num_attention_heads 32")
    assert p["refused"]["tp 16 kv"] == "accepted"                   # 8 KV heads, replicated over 16 ranks


def test_qwen_moe_with_a_shared_expert_by_its_model_card():
    """Qwen1.5-MoE-A2.7B's card: 14.3B parameters, 2.7B active (4 of 60 routed experts plus the shared one)."""
    special = pins.load("llm")["special"]
    p = special["qwen2-moe prefill"]["params"]
    assert p["total"] == pytest.approx(14.3e9, rel=0.005) and p["active"] == pytest.approx(2.7e9, rel=0.01)
    ops = {o["name"]: o for o in special["qwen2-moe prefill"]["ops"]}
    assert (ops["layers.0.shared_gate"]["n"], ops["layers.0.shared_gate"]["k"]) == (1, 2048)
    assert ops["layers.0.shared_gate_proj"]["n"] == 5632                 # the shared expert's own FFN width
    assert special["llama tp16 decode"]["kv per token"] == 32 * 2 * 1 * 128 * 2     # one KV head per rank, K and V
