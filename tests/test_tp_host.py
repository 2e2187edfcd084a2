"""transformers' host under its tensor-parallel plan (gpu.tp_host; issue 32): its logits check and record, where a
profile files it, how a multigpu profile lends it to a one-GPU calibration, and how the predictor scales an eager
step under --tp by it (and only then). The GPU measurement itself is tests/gpu/test_gpu_interconnect.py's."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hwprobe.calibration import CalibrationSection, TpHostCost, metric
from hwprobe.errors import InputError, Skip
from hwprobe.predict.calibration import Calibration
from hwprobe.predict.model import Predictor
from hwprobe.probes.calibration import tp_host
from hwprobe.profile import validate_dict
from hwprobe.profile_build import load_profile
from hwprobe.vocab import Curve

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "profiles/h200-sxm/2026-11-26-predict-conv"
X2 = ROOT / "profiles/h200x2/2026-11-28-tp2-hf/multigpu"
HF = {"kernel_s": 17.0e-6, "kernels_per_step": 150, "step_s": [2.55e-3, 2.6e-3, 2.5e-3], "version": "5.17.0"}
RANK = {"kernel_s": 25.5e-6, "vs_one_gpu": 1.5, "vs_one_gpu_rounds": [1.4, 1.5, 1.6],
        "kernels_per_step": 170, "step_s": [4.3e-3, 4.4e-3, 4.3e-3],
        "one_gpu_kernel_s": 17e-6, "one_gpu_kernels_per_step": 150, "one_gpu_step_s": [2.55e-3] * 3,
        "version": "5.17.0", "check": "logits match one GPU's within 0.40% of their scale",
        "families": {"phi3": {"kernel_s": 40e-6, "vs_one_gpu": 2.5, "vs_llama": 1.6, "kernels_per_step": 200,
                              "check": "logits"},
                     "gemma2": {"kernel_s": 20e-6, "vs_one_gpu": 1.25, "vs_llama": 0.8, "kernels_per_step": 300,
                                "check": "logits"}},
        "family_errors": {"qwen3": "ValueError: no plan"}}


def reports() -> list[dict]:
    return [{"ok": True, "rank": r, "gpu": r, **RANK, "kernel_s": RANK["kernel_s"] * (1 + r / 100)} for r in range(2)]


def test_the_sharded_logits_must_match_one_gpus_within_the_tolerance():
    rng = np.random.default_rng(0)
    one = rng.standard_normal((1, 1, 256)).astype(np.float32)
    assert "logits match" in tp_host.check_logits(one + 0.01 * float(np.abs(one).max()), one)
    for bad, why in ((one + 0.2 * float(np.abs(one).max()), "differ"), (one[..., :128], "are \\(1, 1, 128\\)"),
                     (np.full_like(one, np.nan), "not finite")):
        with pytest.raises(AssertionError, match=why):
            tp_host.check_logits(bad, one)


def test_the_record_is_rank_zeros_figures_with_every_ranks_beside_them():
    value, params = tp_host.summary(reports(), 2)
    assert value == RANK["kernel_s"] and params["tp"] == 2 and params["vs_one_gpu"] == 1.5
    assert [r["rank"] for r in params["per_rank"]] == [0, 1] and params["per_rank"][1]["kernel_s"] > value
    assert params["check"].startswith("logits match") and "ok" not in params
    note = tp_host._notes(params)[0]
    assert "1.50x the same weights' step on one GPU" in note and "over the sharded Llama's: gemma2 0.80x" in note
    assert "not measured: qwen3" in note
    assert params["families"]["gemma2"]["vs_one_gpu"] == 1.25 and params["family_errors"] == RANK["family_errors"]


def test_the_curve_is_filed_read_back_and_validated(tmp_path):
    sec = CalibrationSection()
    _, params = tp_host.summary(reports(), 2)
    assert metric(Curve.TP_HOST) == "predict.torch.tp_host"
    assert sec.add("predict.torch.tp_host", RANK["kernel_s"], {**params, "wall_s": 12.0}, "gpu.tp_host")
    got = sec.tp_host
    assert isinstance(got, TpHostCost) and got.seconds == RANK["kernel_s"] and got.vs_one_gpu == 1.5
    assert got.extra["check"].startswith("logits") and got.extra["wall_s"] == 12.0
    assert CalibrationSection.from_dict(json.loads(json.dumps(sec.to_dict()))) == sec
    assert "tp_host" not in CalibrationSection().to_dict()          # files written before it: unchanged
    assert "tensor-parallel host" in sec.summary()
    prof = load_profile(X2)
    prof.calibration.tp_host = got
    validate_dict(prof.to_dict())
    prof.calibration.tp_host = replace(got, vs_one_gpu=0.0)
    with pytest.raises(InputError, match="tp_host"):
        validate_dict(prof.to_dict())


def profiles(tmp_path: Path, ratio: float = 1.5) -> tuple[str, str]:
    """(a one-GPU calibration with transformers' host, a multigpu run with collectives and gpu.tp_host), saved."""
    kern = load_profile(H200)
    kern.calibration.eager = replace(kern.calibration.eager, transformers=HF)
    (tmp_path / "kern").mkdir()
    kern.save(tmp_path / "kern" / "profile.json")
    comm = load_profile(X2)
    comm.calibration.tp_host = TpHostCost(seconds=ratio * 17e-6, tp=2, vs_one_gpu=ratio, probe="gpu.tp_host",
                                          families=RANK["families"])
    (tmp_path / "comm").mkdir()
    comm.save(tmp_path / "comm" / "profile.json")
    return str(tmp_path / "kern"), str(tmp_path / "comm")


def test_the_predictor_scales_transformers_host_under_tp_and_nothing_else(tmp_path):
    from hwprobe.analysis.llm import with_collectives

    kern, comm = profiles(tmp_path)
    both = with_collectives(load_profile(kern), comm)
    assert both.calibration.tp_host.vs_one_gpu == 1.5 and load_profile(kern).calibration.tp_host is None
    cal = Calibration.of(both)
    assert (cal.hf_tp_ratio, cal.hf_tp) == (1.5, 2)
    eager = Predictor(both, "eager", cal, host="transformers")
    sharded = eager.for_tp(2)
    assert sharded.host_s == pytest.approx(1.5 * HF["kernel_s"]) and eager.host_s == HF["kernel_s"]
    assert eager.for_tp(1) is eager and "times 1.50 under the tp plan" in sharded.eager_note(1e-4, 100)
    # a family keeps its one-GPU ratio times the Llama's tp ratio (its own under its plan priced the real models
    # worse), but a gathering plan's family takes its own ratio to the sharded Llama in place of its one-GPU one
    assert cal.hf_tp_family_ratio == {"phi3": 1.6}
    both.calibration.eager = replace(both.calibration.eager, transformers={
        **HF, "families": {"phi3": {"vs_llama": 1.1}, "gemma2": {"vs_llama": 0.9}}})
    cal = Calibration.of(both)
    eager = Predictor(both, "eager", cal, host="transformers")
    gemma2 = eager.for_family("gemma2")
    assert gemma2.for_tp(2, "gemma2").host_s == pytest.approx(0.9 * 1.5 * HF["kernel_s"])
    phi3 = eager.for_family("phi3").for_tp(2, "phi3")
    assert phi3.host_s == pytest.approx(1.6 * 1.5 * HF["kernel_s"]) and phi3.family == ""
    assert "times 1.60 for phi3's gathering plan" in phi3.eager_note(1e-4, 100)
    assert "phi3: 1.10x" not in phi3.eager_note(1e-4, 100)
    assert eager.for_tp(2, "phi3").host_s == phi3.host_s         # with or without its one-GPU ratio before
    cnn = Predictor(both, "eager", cal)                        # the framework's host: never scaled
    assert cnn.for_tp(2) is cnn and not cnn.tp_host_priced
    plain = Predictor(load_profile(kern), "eager", host="transformers")   # no multigpu run: no ratio
    assert plain.for_tp(2) is plain and not plain.tp_host_priced


def test_an_eager_tp_step_is_priced_with_the_tp_host_and_loses_its_floor_note(tmp_path):
    from hwprobe.analysis.llm import LLMOptions, analyze

    kern, comm = profiles(tmp_path)
    decode = LLMOptions(phase="decode", context=1024, batch=1, runtime="eager", tp=2)
    floor = analyze("llama-3.2-1b", kern, decode, comm=str(X2))
    priced = analyze("llama-3.2-1b", kern, decode, comm=comm)
    a, b = floor.phases["decode"], priced.phases["decode"]
    assert a.kernels == b.kernels and 1.3 * a.time_s < b.time_s < 1.5 * a.time_s     # host-bound: ~1.5x
    assert any("read it as a floor" in n for n in floor.notes)
    assert not any("read it as a floor" in n for n in priced.notes)
    assert any("carry that spread" in n for n in priced.notes) and not any("spread" in n for n in floor.notes)
    one = analyze("llama-3.2-1b", kern, replace(decode, tp=1), comm=comm).phases["decode"]
    ref = analyze("llama-3.2-1b", kern, replace(decode, tp=1)).phases["decode"]
    assert one.time_s == ref.time_s                            # one GPU: the ratio never applies
    compiled = LLMOptions(phase="prefill", prompt=512, batch=1, runtime="hf-compiled", tp=2)
    notes = analyze("llama-3.2-1b", kern, compiled, comm=comm).notes
    assert any("priced with their host (gpu.tp_host)" in n for n in notes)
    graph = LLMOptions(phase="decode", context=1024, batch=1, runtime="hf", tp=2)
    assert (analyze("llama-3.2-1b", kern, graph, comm=comm).phases["decode"].time_s
            == analyze("llama-3.2-1b", kern, graph, comm=str(X2)).phases["decode"].time_s)


def test_the_probe_skips_where_it_cannot_run(monkeypatch):
    from hwprobe.probes import ProbeContext

    ctx = ProbeContext(target="gpu", device=None, sampler=None, probe_name="gpu.tp_host")
    monkeypatch.setattr(tp_host, "_prereqs", lambda: "needs PyTorch and transformers (ImportError: no torch)")
    with pytest.raises(Skip, match="needs PyTorch and transformers"):
        list(tp_host.run(ctx))

    class Gpu:
        kind, index = "gpu", 0

    monkeypatch.setattr(tp_host, "_prereqs", lambda: "")
    monkeypatch.setattr("hwprobe.probes.interconnect.common.visible_gpus", lambda: [Gpu()])
    with pytest.raises(Skip, match="tensor parallel 2 needs 2"):
        list(tp_host.run(replace(ctx, devices=[Gpu()])))


def test_the_comparison_applies_the_ratio_to_one_gpu_readings_only(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import compare_hf_llm as cmp

    kern, comm = profiles(tmp_path, ratio=1.4)
    one = cmp.run_pricer(kern, "eager", None, 20e-6, comm)                     # a one-GPU reading: scaled under tp
    read_sharded = cmp.run_pricer(kern, "eager", None, 20e-6, comm, sharded=True)  # already the tp plan's: as read
    assert one.for_tp(2).host_s == pytest.approx(28e-6) and read_sharded.for_tp(2).host_s == pytest.approx(20e-6)
    # a gathering plan's family: the sharded reading times its own ratio to the sharded Llama, scaled no further
    assert read_sharded.for_tp(2, "phi3").host_s == pytest.approx(1.6 * 20e-6)
    assert one.for_tp(2, "phi3").host_s == pytest.approx(1.6 * 28e-6)
    doc = {"tp": 2, "cases": [], "host_clock": "one GPU"}
    assert "scaled by 1.40" in cmp.table([], doc, kern, "run", comm)
    assert "scaled by" not in cmp.table([], {**doc, "host_clock": "tp"}, kern, "case", comm)
    assert "over the sharded Llama's (gpu.tp_host): phi3 1.60x" in cmp.table([], doc, kern, "run", comm)


def test_a_rank_caches_its_share_of_the_kv_heads_but_under_a_gathering_plan_all():
    from hwprobe.probes.calibration import hf_host

    assert hf_host.rank_kv_heads(hf_host.CONFIG, 2) == 1 and hf_host.rank_kv_heads(hf_host.CONFIG, 1) == 2
    assert hf_host.rank_kv_heads(hf_host.family_config("phi3"), 2) == 2
    from hwprobe.lowering.llm.hf import rank_dims
    from hwprobe.models.llm.config import load

    assert hf_host.rank_kv_heads({"model_type": "llama", "num_key_value_heads": 8}, 2) == 4
    phi3, llama = load("tests/data/llm_configs/phi-3-mini-4k-instruct.json"), load("llama-3.2-1b")
    assert rank_dims(phi3, 2) == (phi3.heads, phi3.kv_heads, phi3.ffn)
    assert rank_dims(llama, 2) == (llama.heads // 2, llama.kv_heads // 2, llama.ffn // 2)


def test_a_gathering_familys_ratio_is_read_from_the_record_or_its_rounds():
    from hwprobe.predict.calibration import tp_family_ratios

    old = {"kernel_s": 40e-6, "kernels_per_step": 200, "step_s": [8e-3, 9e-3, 12e-3]}      # before vs_llama
    rec = TpHostCost(seconds=25e-6, tp=2, vs_one_gpu=1.5, kernels_per_step=100, step_s=[2e-3, 3e-3, 2e-3],
                     families={"phi3": old, "gemma2": {**old, "vs_llama": 0.8}})
    assert tp_family_ratios(rec) == {"phi3": pytest.approx(2.0)}   # rounds 2.0, 1.5, 3.0; gemma2 does not gather
    assert tp_family_ratios(replace(rec, families={"phi3": {**old, "vs_llama": 1.7}})) == {"phi3": 1.7}
    assert tp_family_ratios(replace(rec, families={"phi3": {**old, "step_s": [1e-3]}})) == {}


def test_torchruns_variables_are_set_for_the_rank_and_put_back(monkeypatch):
    import os

    monkeypatch.setenv("RANK", "5")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with tp_host.torchrun_env(1, 2, 3, "127.0.0.1", 29500):
        assert (os.environ["RANK"], os.environ["LOCAL_RANK"], os.environ["WORLD_SIZE"]) == ("1", "3", "2")
        assert os.environ["MASTER_PORT"] == "29500"
    assert os.environ["RANK"] == "5" and "LOCAL_RANK" not in os.environ
