"""Pinned figures of the modules that decide what a figure means (issue 35: mutation testing found many of their
branches where no test looked). Each pin is the module's answer for a fixed set of inputs, committed in
tests/data/pins/*.json; tests/test_pins.py checks the answers still match, and spot-checks some by hand formulas.

After an intended change to one of these answers, regenerate and review the diff:

    python -m tests.pins            (writes tests/data/pins/*.json)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "tests" / "data" / "pins"
PREDICT = ROOT / "profiles" / "h200-sxm" / "2026-11-26-predict-cold"
MULTI = ROOT / "profiles" / "h200x2" / "2026-11-26-multigpu" / "results-local"
LLMS = ("llama-3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt2", "qwen2.5-7b", "gemma-2b", "gemma2-9b")
# Qwen1.5-MoE-A2.7B as its config.json has it: a shared expert beside 60 routed ones (Qwen2-MoE)
QWEN2_MOE = {"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
             "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
             "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_attention_heads": 16,
             "num_key_value_heads": 16, "vocab_size": 151936, "max_position_embeddings": 8192,
             "decoder_sparse_step": 1, "mlp_only_layers": []}
ONNX = ROOT / "profiles" / "h200-sxm" / "2026-11-26-validation-cold" / "onnx"


def _op(op) -> dict:
    """The fields that differ from the dataclass's defaults (a None where a default number stood is kept)."""
    defaults = {f.name: f.default for f in dataclasses.fields(op)}
    return {k: v for k, v in dataclasses.asdict(op).items()
            if k in ("name", "kind") or not (type(v) is type(defaults[k]) and v == defaults[k])}


def llm_cases():
    from hwprobe.lowering.llm.graph import Case, Quant
    return [("prefill b2 p128", Case.prefill(2, 128), Quant()),
            ("decode b4 c1024 tp2", Case.decode(4, 1024, tp=2), Quant()),
            ("prefill b1 p64 fp8", Case.prefill(1, 64), Quant(weights="fp8", kv="fp8")),
            ("decode b1 c512 int4", Case.decode(1, 512), Quant(weights="int4"))]


def llm() -> dict:
    """Per model and case: layer 0's kernels and those outside the layers (every layer runs the same code), the
    kernel count, and the parameter and memory counts."""
    from hwprobe.analysis.llm import memory
    from hwprobe.lowering.llm.graph import experts_touched, flash_splits, lower
    from hwprobe.models.llm.config import load

    out = {}
    for name in LLMS:
        cfg = load(name)
        p = memory.params(cfg)
        entry = {"params": dataclasses.asdict(p) | {"total": p.total, "active": p.active}, "cases": {}}
        for label, case, q in llm_cases():
            ops = lower(cfg, case, q, sms=132)
            fit = memory.fit(cfg, case, q, 141e9)
            entry["cases"][label] = {
                "count": len(ops),
                "ops": [_op(o) for o in ops if not o.name.startswith("layers.") or o.name.startswith("layers.0.")],
                "fit": fit.to_dict(),
                "activation_bytes": memory.activation_bytes(cfg, case),
            }
        out[name] = entry
    out["special"] = _llm_special()
    out["refused"] = _llm_refusals()
    out["flash_splits"] = {f"{bh} {m} {keys} {hd}": flash_splits(bh, m, keys, hd, 132)
                           for bh in (8, 32, 256) for m in (1, 16, 128) for keys in (512, 4096, 32768)
                           for hd in (64, 128, 256)}
    out["experts_touched"] = {f"{e} {k} {t}": experts_touched(e, k, t) for e in (8, 64, 128) for k in (1, 2, 8)
                              for t in (1, 4, 64, 1024) if k <= e}
    return out


def _llm_special() -> dict:
    """A shared expert (Qwen2-MoE; with every second layer sparse), and prompts longer than a sliding window
    (Mistral's 4096; Gemma 2's on alternate layers): layers 0 and 1."""
    from hwprobe.lowering.llm.graph import Case, Quant, lower
    from hwprobe.models.llm.config import load, parse

    cases = {"qwen2-moe prefill": (parse(QWEN2_MOE, "qwen1.5-moe-a2.7b"), Case.prefill(2, 64)),
             "qwen2-moe step 2 decode tp2": (parse({**QWEN2_MOE, "decoder_sparse_step": 2}, "step2"),
                                            Case.decode(2, 256, tp=2)),
             "mistral prefill 8192": (load("mistral-7b"), Case.prefill(1, 8192)),
             "gemma2 prefill 8192": (load("gemma2-9b"), Case.prefill(1, 8192)),
             "gemma2 decode tp2": (load("gemma2-9b"), Case.decode(2, 8000, tp=2))}
    cases["llama tp16 decode"] = (load("llama-3-8b"), Case.decode(2, 512, tp=16))   # 8 KV heads over 16 ranks
    from hwprobe.analysis.llm import memory

    out = {}
    for key, (cfg, case) in cases.items():
        ops = lower(cfg, case, Quant(), sms=132)
        p = memory.params(cfg)
        out[key] = {"count": len(ops), "ops": [_op(o) for o in ops if not o.name.startswith("layers.")
                                               or o.name.startswith(("layers.0.", "layers.1."))],
                    "params": dataclasses.asdict(p) | {"total": p.total, "active": p.active},
                    "fit": memory.fit(cfg, case, Quant(), 80e9).to_dict(),
                    "kv per token": memory.kv_bytes_per_token(cfg, Quant(), case.tp),
                    "activation_bytes": memory.activation_bytes(cfg, case)}
    return out


def _llm_refusals() -> dict:
    """The message of each case lowering refuses."""
    from hwprobe.lowering.llm.graph import Case, Quant, lower
    from hwprobe.models.llm.config import load, parse

    cases = {"phase": ("llama-3-8b", Case("train", 1, 1, 1), Quant()),
             "batch": ("llama-3-8b", Case.prefill(0, 8), Quant()),
             "tokens": ("llama-3-8b", Case.prefill(1, 0), Quant()),
             "tp 0": ("llama-3-8b", Case.prefill(1, 8, tp=0), Quant()),
             "context": ("gpt2", Case.decode(1, 5000), Quant()),
             "tp 3": ("llama-3-8b", Case.prefill(1, 8, tp=3), Quant()),
             "tp 16 kv": ("llama-3-8b", Case.prefill(1, 8, tp=16), Quant()),
             "tp 5 moe": ("qwen3-30b-a3b", Case.prefill(1, 8, tp=5), Quant()),
             "context 0": ("llama-3-8b", Case("decode", 1, 1, 0), Quant()),
             "tp 2 odd": ({**QWEN2_MOE, "num_attention_heads": 15, "num_key_value_heads": 15, "head_dim": 128,
                           "shared_expert_intermediate_size": 5633}, Case.prefill(1, 8, tp=2), Quant()),
             "weights": ("llama-3-8b", Case.prefill(1, 8), Quant(weights="fp4")),
             "kv": ("llama-3-8b", Case.prefill(1, 8), Quant(kv="int2"))}
    out = {}
    for key, (name, case, q) in cases.items():
        try:
            lower(parse(name, "odd") if isinstance(name, dict) else load(name), case, q)
            out[key] = "accepted"
        except Exception as e:                                   # noqa: BLE001 (the message is the answer)
            out[key] = f"{type(e).__name__}: {e}"
    return out


def predict_ops():
    from hwprobe.lowering.ops import MEMORY_KINDS, KernelOp
    ops = [KernelOp("gemm", "gemm", m=4096, n=4096, k=4096),
           KernelOp("gemm_odd_n", "gemm", m=2048, n=4100, k=4096),
           KernelOp("gemm_odd_k", "gemm", m=512, n=4096, k=4098),
           KernelOp("gemm_k_odd", "gemm", m=64, n=4096, k=4097),
           KernelOp("gemm_small", "gemm", m=8, n=128, k=64),
           KernelOp("gemm_big", "gemm", m=65536, n=16384, k=16384),
           KernelOp("gemm_batched", "gemm", m=128, n=1024, k=1024, batch=8),
           KernelOp("gemm_bf16", "gemm", precision="bf16", m=1024, n=1024, k=1024),
           KernelOp("gemm_fp8", "gemm", precision="fp8", m=2048, n=2048, k=2048),
           KernelOp("gemm_int8", "gemm", precision="int8", m=2048, n=2048, k=2048),
           KernelOp("gemm_tf32", "gemm", precision="tf32", m=1024, n=1024, k=1024),
           KernelOp("gemm_fp32", "gemm", precision="fp32", m=1024, n=1024, k=1024),
           KernelOp("gemm_fp64", "gemm", precision="fp64", m=1024, n=1024, k=1024),
           KernelOp("attn_fp32", "attention", precision="fp32", m=256, n=256, k=64, batch=16),
           KernelOp("conv3x3_fp32", "gemm", precision="fp32", m=3136, n=64, k=576, conv_kernel=3, conv_images=1),
           KernelOp("conv_stem", "gemm", m=12544, n=64, k=27, conv_kernel=3, conv_stride=2, conv_images=1),
           KernelOp("gemm_w4", "gemm", precision="bf16", m=16, n=4096, k=4096, weight_bits=4),
           KernelOp("gemm_w8", "gemm", precision="bf16", m=4096, n=4096, k=4096, weight_bits=8),
           KernelOp("conv3x3", "gemm", m=50176, n=64, k=576, conv_kernel=3, conv_input_bytes=6.4e6, conv_images=8),
           KernelOp("conv1x1", "gemm", m=12544, n=256, k=64, conv_kernel=1, conv_input_bytes=1.6e6, conv_images=8),
           KernelOp("conv7x7s2", "gemm", m=100352, n=64, k=147, conv_kernel=7, conv_input_bytes=2.4e6,
                    conv_stride=2, conv_images=8),
           KernelOp("attn_prefill", "attention", m=1024, n=1024, k=128, batch=64, causal=True),
           KernelOp("attn_prefill_full", "attention", m=512, n=512, k=64, batch=32),
           KernelOp("attn_decode", "attention", m=1, n=4096, k=128, batch=256),
           KernelOp("attn_bytes", "attention", m=16, n=2048, k=128, batch=32, bytes=3e7),
           KernelOp("conv_dw", "conv_dw", m=12544, n=144, bytes=1.2e7, flops=3e7, conv_kernel=3, conv_images=8),
           KernelOp("conv_dw_s2", "conv_dw", m=3136, n=144, bytes=4e6, flops=8e6, conv_kernel=3, conv_stride=2,
                    conv_images=8),
           KernelOp("allreduce", "allreduce", bytes=64e6, ranks=2),
           KernelOp("allgather", "allgather", bytes=8e6, ranks=2),
           KernelOp("allreduce_1", "allreduce", bytes=64e6, ranks=1),
           KernelOp("conv3x3_b2", "gemm", m=3136, n=64, k=576, batch=2, conv_kernel=3, conv_images=1),
           KernelOp("conv3x3_cin_odd", "gemm", m=3136, n=64, k=27 * 9, conv_kernel=3, conv_images=4),
           KernelOp("conv_dw_no_shape", "conv_dw", bytes=1e6, flops=1e6, conv_kernel=3)]
    ops += [KernelOp(f"{kind}_{nb:g}", kind, bytes=nb, flops=nb / 4) for kind in MEMORY_KINDS
            for nb in (4e3, 2e6, 5e8)]
    return ops


def _time(t) -> dict:
    return {"op": t.op.name, "extra": t.extra, "time_s": t.time_s, "compute_s": t.compute_s, "memory_s": t.memory_s,
            "launch_s": t.launch_s, "comm_s": t.comm_s, "bound": t.bound, "roofline_s": t.roofline_s,
            "covered": t.covered, "source": t.source, "note": t.note}


def _priced(pr, op) -> dict:
    """The op's price, or the one-line refusal of a precision the calibration has no points for."""
    from hwprobe.predict.calibration import Uncalibrated

    try:
        return _time(pr.time(op))
    except Uncalibrated as e:
        return {"refused": str(e)}


def predict() -> dict:
    """Each op priced on the H200 predict run (every runtime and NCHW) and, for collectives, on the 2x H200 run;
    the power-cap ratio and adjustment per precision."""
    from hwprobe.predict.calibration import Uncalibrated
    from hwprobe.predict.model import Predictor
    from hwprobe.profile_build import load_profile

    prof, multi = load_profile(PREDICT), load_profile(MULTI)
    out: dict = {}
    for runtime in ("eager", "graph", "fused"):
        for layout in ("nhwc", "nchw"):
            pr = Predictor(prof, runtime, layout=layout)
            out[f"{runtime} {layout}"] = {op.name: _priced(pr, op) for op in predict_ops()}
    from hwprobe.predict.calibration import Calibration

    pr = Predictor(multi, "graph", cal=Calibration.of(prof))      # the 2x H200 run's collectives, H200's curves
    out["2x H200 graph"] = {op.name: _priced(pr, op) for op in predict_ops() if op.kind in ("allreduce",
                                                                                                 "allgather")}
    for run in ("h100-sxm/2026-11-26-full", "h200-sxm/2026-11-26-predict-conv"):   # other calibrations
        older = load_profile(ROOT / "profiles" / run)
        for runtime in ("eager", "graph"):
            pr = Predictor(older, runtime)
            out[f"{run} {runtime}"] = {op.name: _priced(pr, op) for op in predict_ops()}
    pr = Predictor(prof, "graph")
    out["power"] = {}
    for prec in ("fp16", "bf16", "fp8", "int8", "tf32"):
        times = []
        for op in predict_ops():
            if op.kind in ("gemm", "attention", "elementwise"):
                try:
                    times.append(pr.time(op))
                except Uncalibrated:                 # a precision without points of its own is refused
                    pass
        out["power"][prec] = {"ratio": list(pr.power_ratio(prec)), "note": pr.power_note(times, prec),
                              "times": [t.time_s for t in times]}
    out["overhead"] = {rt: Predictor(prof, rt).run_overhead(predict_ops()) for rt in ("eager", "graph", "fused")}
    out["refused"] = {}
    for key, make in {"runtime": lambda: Predictor(prof, "jit"), "layout": lambda: Predictor(prof, layout="nchwc"),
                      "no calibration": lambda: Predictor(multi)}.items():
        try:
            make()
            out["refused"][key] = "accepted"
        except Exception as e:                                   # noqa: BLE001 (the message is the answer)
            out["refused"][key] = f"{type(e).__name__}: {e}"
    return out


def onnx() -> dict:
    """Every distinct layer ONNX import reads from five committed validation models (weights stripped: a CNN, a
    depthwise CNN, a GQA Llama, BERT, and GPT-2 through TorchScript with its shape arithmetic; batch 2 asked,
    which the batch-1 exports keep at 1): each with its first name and how many layers share it (tensor names
    aside)."""
    from hwprobe.models import load_model

    out = {}
    for name in ("resnet18-b1.onnx", "mobilenet_v2-b1.onnx", "llama_prefill_gqa-b1-dynamo.onnx",
                 "bert_base-b1-dynamo.onnx", "gpt2-b1-torchscript.onnx"):
        m = load_model(ONNX / name, 2)
        seen: dict[str, dict] = {}
        for x in m.layers:
            d = _op(x)
            key = json.dumps({k: v for k, v in d.items() if k not in ("name", "extra")}, sort_keys=True, default=str)
            seen.setdefault(key, {"first": d, "count": 0})["count"] += 1
        out[name] = {"notes": list(m.notes), "layers": len(m.layers), "distinct": list(seen.values())}
    return out


def _plain(x):
    if dataclasses.is_dataclass(x):
        return {k: _plain(v) for k, v in dataclasses.asdict(x).items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return float(x) if hasattr(x, "dtype") else x


def curves() -> dict:
    """The curve readers on seeded noisy staircases: a bandwidth curve with three levels and a gradual step, a
    latency curve with a near/far step inside the L2, a roofline sweep; each at its defaults and one variation."""
    import numpy as np

    from hwprobe import curves as C

    out = {}
    sizes = 2.0 ** np.arange(10, 31)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        bw = np.where(sizes <= 2**18, 30e12, np.where(sizes <= 2**26, 9e12, 4.7e12))
        bw[9] = 18e12                                           # a point on the way down
        bw = bw * rng.uniform(0.97, 1.03, sizes.size)
        lat = np.where(sizes <= 2**17, 30.0, np.where(sizes <= 2**24, 140.0, np.where(sizes <= 2**25, 260.0, 350.0)))
        lat = lat * rng.uniform(0.98, 1.02, sizes.size)
        inten = 2.0 ** np.arange(-3, 11)
        perf = np.minimum(60e12, 4e12 * inten) * rng.uniform(0.9, 1.0, inten.size)
        out[f"seed {seed}"] = {
            "plateaus": _plain(C.find_plateaus(sizes, bw)),
            "plateaus narrow": _plain(C.find_plateaus(sizes, bw, band=0.05, min_points=2, min_step=1.5)),
            "knees": _plain(C.find_knees(sizes, bw)),
            "knees frac": _plain(C.find_knees(sizes, bw, frac=0.5, min_points=2)),
            "latency knees": _plain(C.find_knees(sizes, 1e3 / lat)),          # a rate: 1 / latency
            "step inside": _plain(C.step_inside(sizes, lat, 2.0**26)),
            "step inside bw": _plain(C.step_inside(sizes, bw, 2.0**27, min_points=4, plateau_points=2)),
            "exit": _plain(C.plateau_exit(sizes, bw, 2**10, 2**20)),
            "exit l2": _plain(C.plateau_exit(sizes, bw, 2**19, 2**29, drop=0.2, confirm=1)),
            "capacity": _plain(C.effective_capacity(sizes, bw, 2**10, 2**20, 2**18)),
            "level exit": _plain(C.level_exit(sizes, lat, 2**18)),
            "level exit far": _plain(C.level_exit(sizes, lat, 2**25, rise=0.05)),
            "roofline": _plain(C.fit_roofline(inten, perf)),
            "roofline reach": _plain(C.fit_roofline(inten, perf, mem_fraction=0.3, reach_fraction=0.95)),
        }
    fine = [1.0, 1.25, 1.5, 1.75, 2.0]
    edges = {
        "exit bad shape": lambda: C.plateau_exit([1, 2, 3], [1, 2], 1, 2),
        "exit 2-D": lambda: C.plateau_exit([[1, 2]], [[1, 2]], 1, 2),
        "exit not increasing": lambda: C.plateau_exit([1, 3, 2], [1, 1, 1], 1, 2),
        "exit zero value": lambda: C.plateau_exit([1, 2, 3], [1, 0, 1], 1, 2),
        "exit fine sizes": lambda: C.plateau_exit(fine, [10, 10, 10, 5, 5], 1, 1.5),
        "exit at the threshold": lambda: C.plateau_exit([1, 2, 4, 8], [10, 10, 9, 9], 1, 2),
        "exit one dip": lambda: C.plateau_exit([1, 2, 4, 8, 16], [10, 10, 5, 10, 10], 1, 2),
        "exit confirm 1": lambda: C.plateau_exit([1, 2, 4, 8, 16], [10, 10, 5, 10, 10], 1, 2, confirm=1),
        "exit flat step": lambda: C.plateau_exit([1, 2, 4, 8], [10, 10, 5, 5], 4, 8),
        "exit empty window": lambda: C.plateau_exit([1, 2, 4], [1, 1, 1], 8, 16),
        "exit never": lambda: C.plateau_exit([1, 2, 4], [1, 1, 1], 1, 2),
        "exit from the window's start": lambda: C.plateau_exit([1, 2, 4, 8, 16], [1, 1, 10, 10, 1], 4, 8),
        "level exit past the end": lambda: C.level_exit([1, 2, 4], [1, 1, 1], 8),
        "level exit at the last point": lambda: C.level_exit([1, 2, 4, 8], [1, 1, 1, 2], 1),
        "level exit exactly 10% up": lambda: C.level_exit([1, 2, 4, 8, 16], [10, 10, 11, 20, 20], 1),
        "level exit fine": lambda: C.level_exit(fine, [1, 1, 1, 3, 3], 1),
        "fit 1 point": lambda: C.fit_roofline([1], [1]),
        "fit 2 points": lambda: C.fit_roofline([1, 2], [1, 4]),
        "fit zero intensity": lambda: C.fit_roofline([0, 1, 2], [1, 2, 3]),
        "fit zero rate": lambda: C.fit_roofline([1, 2, 3], [1, 0, 3]),
        "fit rate below 1": lambda: C.fit_roofline([1, 2, 3], [0.5, 1, 1]),
        "fit no memory points": lambda: C.fit_roofline([1, 2, 4], [9, 10, 10]),
        "fit at mem_fraction": lambda: C.fit_roofline([1, 2, 4, 8], [5, 10, 10, 10]),
        "fit reach at first": lambda: C.fit_roofline([2, 1, 4], [10, 9.5, 10]),
        "fit reach at fraction": lambda: C.fit_roofline([1, 2, 4], [2, 9, 10]),
        "fit flat to roof": lambda: C.fit_roofline([1, 2, 4, 8], [1, 1, 10, 10], reach_fraction=0.1),
        "plateaus at min_step": lambda: C.find_plateaus([1, 2, 4, 8, 16, 32], [23, 23, 23, 20, 20, 20], min_step=1.15),
        "plateaus merge": lambda: C.find_plateaus(2.0 ** np.arange(9), [10, 10, 10, 9.5, 9.5, 9.5, 5, 5, 5]),
        "plateaus band edge": lambda: C.find_plateaus([1, 2, 4, 8], [1.0, 1.15, 1.0, 1.15], band=0.15),
        "plateaus 2 points": lambda: C.find_plateaus([1, 2, 4, 8], [1, 1, 5, 5], min_points=2),
        "knees rising": lambda: C.find_knees(2.0 ** np.arange(6), [1, 1, 1, 5, 5, 5]),
        "knees sharp": lambda: C.find_knees(2.0 ** np.arange(8), [9, 9, 9, 9, 3, 3, 3, 3]),
        "knees frac 1": lambda: C.find_knees(2.0 ** np.arange(8), [9, 9, 9, 6, 3, 3, 3, 3], frac=1.0),
        "knees band": lambda: C.find_knees(2.0 ** np.arange(8), [9, 9, 9, 6, 3, 3, 3, 3], band=0.5),
        "step inside too few": lambda: C.step_inside([1, 2, 4], [1, 1, 1], 8),
        "step inside edge": lambda: C.step_inside(2.0 ** np.arange(12), [9] * 5 + [3] * 7, 2.0**12, lo_frac=0.0,
                                                  min_points=12, plateau_points=2),
    }
    out["edges"] = {}
    for key, call in edges.items():
        try:
            out["edges"][key] = _plain(call())
        except Exception as e:                                   # noqa: BLE001 (the message is the answer)
            out["edges"][key] = f"{type(e).__name__}: {e}"
    return out


def roofline() -> dict:
    """hwprobe.roofline's answers on the committed H200 full run, for each precision, unit, path and level."""
    from hwprobe import roofline as R
    from hwprobe.profile_build import load_profile

    prof = load_profile(ROOT / "profiles" / "h200-sxm" / "2026-11-26-full")
    out: dict = {"measured": R.is_measured(prof), "bandwidth": {}, "roofs": {}}
    for level in ("dram", "l2", "l1", "shared", "HBM", "nope"):
        try:
            out["bandwidth"][level] = R.bandwidth(prof, level)
        except Exception as e:                                   # noqa: BLE001 (the message is the answer)
            out["bandwidth"][level] = f"{type(e).__name__}: {e}"
    for prec in ("fp64", "FP32", "tf32", "fp16", "bf16", "fp8_e4m3", "int8", "fp4"):
        for unit in (None, "tensor_core", "cuda-core"):
            for path in ("best", "library", "instruction"):
                key = f"{prec} {unit} {path}"
                try:
                    r = R.roof(prof, prec, unit, path)
                    ds = R.datasheet_roof(prof, prec, unit, path)
                    out["roofs"][key] = {"roof": _plain(r), "ridge": r.ridge, "bound_1": r.bound(1.0),
                                         "bound_1e4": r.bound(1e4), "attainable_8": R.attainable(prof, 8, prec, "dram",
                                                                                                unit, path),
                                         "ridge_point": R.ridge_point(prof, prec, "l2", unit, path),
                                         "datasheet": _plain(ds), "ds_ridge": ds.ridge if ds else None}
                except Exception as e:                           # noqa: BLE001
                    out["roofs"][key] = f"{type(e).__name__}: {e}"
    calls = {"precision None": lambda: R.norm_precision(None), "precision blank": lambda: R.norm_precision("  "),
             "unit 3": lambda: R.norm_unit(3), "unit space": lambda: R.norm_unit("tensor core"),
             "unit bad": lambda: R.norm_unit("npu"), "path bad": lambda: R.norm_path("jit"),
             "path blank": lambda: R.norm_path(""), "level bad": lambda: R.norm_level("l4"),
             "level blank": lambda: R.norm_level(""), "ridge 0": lambda: R.ridge(0, 1),
             "ridge bw 0": lambda: R.ridge(1, 0),
             "ridge small": lambda: R.ridge(0.5, 0.25), "ridge negative": lambda: R.ridge(-1, 1),
             "intensity 0": lambda: R.check_intensity(0), "at the ridge": lambda: (
                 lambda r: [r.bound(r.ridge), r.bound(r.ridge * 0.999)])(R.roof(prof, "fp16")),
             "error text": lambda: str(R.RooflineError()), "peak fp4": lambda: R.peak(prof, "fp4"),
             "peak fp64 tc lib": lambda: R.peak(prof, "fp64", "tensor_core", "library").value,
             "intensity negative": lambda: R.check_intensity(-1), "intensity nan": lambda: R.check_intensity("x")}
    out["calls"] = {}
    for key, call in calls.items():
        try:
            out["calls"][key] = _plain(call())
        except Exception as e:                                   # noqa: BLE001
            out["calls"][key] = f"{type(e).__name__}: {e}"
    out["measured by run"] = {str(f.parent.relative_to(ROOT / "profiles")): R.is_measured(load_profile(f.parent))
                              for f in sorted((ROOT / "profiles").rglob("profile.json"))}
    return out


BUILDERS = {"llm": llm, "predict": predict, "onnx": onnx, "curves": curves, "roofline": roofline}


def load(name: str) -> dict:
    return json.loads((PINS / f"{name}.json").read_text())


def fresh(name: str) -> dict:
    """The module's answers now, through JSON (tuples become lists, as in the committed file)."""
    return json.loads(json.dumps(BUILDERS[name](), default=str))


def main() -> int:
    PINS.mkdir(parents=True, exist_ok=True)
    for name, build in BUILDERS.items():
        (PINS / f"{name}.json").write_text(json.dumps(build(), indent=0, sort_keys=True, default=str) + "\n")
        print(f"wrote {PINS / name}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
