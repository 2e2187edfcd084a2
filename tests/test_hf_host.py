"""transformers' own host time per kernel of an eager decode step (hwprobe.probes.calibration.hf_host; issue 32):
where it is filed in a profile, how the predictor chooses it for the transformers runtimes and only for them, and
how the validation's comparison prices with a run's own reading. The GPU measurement itself is tests/gpu's."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hwprobe.calibration import CalibrationSection, EagerCost
from hwprobe.errors import InputError
from hwprobe.predict.calibration import Calibration
from hwprobe.predict.model import Predictor
from hwprobe.probes.calibration import hf_host
from hwprobe.profile import validate_dict
from hwprobe.profile_build import load_profile

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "profiles/h200-sxm/2026-11-26-predict-conv"
sys.path.insert(0, str(ROOT / "tools"))
import compare_hf_llm as cmp  # noqa: E402

HF = {"kernel_s": 17.0e-6, "kernels_per_step": 150, "step_s": [2.55e-3, 2.6e-3, 2.5e-3], "version": "5.17.0"}


def with_transformers(folder: Path, hf: dict):
    """The H200 profile with ``hf`` as its transformers record, saved in ``folder`` (made here) and returned."""
    prof = load_profile(H200)
    prof.calibration.eager = replace(prof.calibration.eager, transformers=hf)
    folder.mkdir(parents=True, exist_ok=True)
    prof.save(folder / "profile.json")
    return prof


def test_per_kernel_is_the_median_round_over_the_kernels_and_refuses_nothing_to_divide():
    assert hf_host.per_kernel([3.0e-3, 2.0e-3, 2.5e-3], 125) == pytest.approx(20e-6)
    with pytest.raises(ValueError):
        hf_host.per_kernel([2e-3], 0)
    with pytest.raises(ValueError):
        hf_host.per_kernel([], 100)


def test_the_figure_rides_on_the_eager_curve_and_old_profiles_read_back_as_written(tmp_path):
    plain = EagerCost(seconds=11e-6, per_op_s={"add": 11e-6})
    assert "transformers" not in plain.to_dict()                       # files written before it: unchanged
    got = EagerCost.from_params({"per_op_s": {"add": 11e-6}, "transformers": HF}, value=11e-6)
    assert got.transformers == HF and got.to_dict()["transformers"] == HF
    prof = with_transformers(tmp_path, HF)                             # the schema takes it
    back = load_profile(tmp_path)
    assert back.calibration.eager.transformers == HF
    assert Calibration.of(back).hf_eager_kernel_s == HF["kernel_s"] and Calibration.of(prof).eager_op_s > 0
    assert CalibrationSection.from_dict(json.loads(json.dumps(back.calibration.to_dict()))) == back.calibration


def test_the_transformers_runtimes_paytransformers_host_and_a_cnn_the_frameworks():
    prof = load_profile(H200)
    cal = replace(Calibration.of(prof), hf_eager_kernel_s=HF["kernel_s"])
    hf = Predictor(prof, "eager", cal, host="transformers")
    cnn = Predictor(prof, "eager", cal)
    assert (hf.host_s, hf.host_source) == (HF["kernel_s"], "transformers")
    assert (cnn.host_s, cnn.host_source) == (cal.eager_op_s, "framework")
    assert "transformers' own measured host time" in hf.eager_note(1e-4, 100)
    lacking = Predictor(prof, "eager", Calibration.of(prof), host="transformers")     # the profile has none
    assert lacking.host_source == "framework" and "lacks its figure" in lacking.eager_note(1e-4, 100)
    with pytest.raises(InputError, match="unknown host code"):
        Predictor(prof, "eager", cal, host="vllm")


def test_an_eager_llm_step_is_priced_fromtransformers_host_where_the_profile_has_it(tmp_path):
    from hwprobe.analysis.llm import LLMOptions, analyze

    with_transformers(tmp_path, {**HF, "kernel_s": 40e-6})
    opts = LLMOptions(phase="decode", context=1024, batch=1, runtime="eager")
    slow = analyze("llama-3.2-1b", str(tmp_path), opts).phases["decode"]
    base = analyze("llama-3.2-1b", str(H200), opts).phases["decode"]
    assert slow.time_s > 1.5 * base.time_s                  # host-bound: 40 us a kernel against the bare ops' ~18
    graph = LLMOptions(phase="decode", context=1024, batch=1, runtime="hf")
    assert (analyze("llama-3.2-1b", str(tmp_path), graph).phases["decode"].time_s
            == analyze("llama-3.2-1b", str(H200), graph).phases["decode"].time_s)   # a CUDA graph pays no host


def test_the_comparison_prices_eager_with_the_runs_own_transformers_reading_first():
    doc = {"host_before": {"eager_op_s": 10e-6, "hf_eager_kernel_s": 16e-6},
           "host_after": {"eager_op_s": 12e-6, "hf_eager_kernel_s": 18e-6}}
    assert cmp.run_host_s(doc) == pytest.approx(11e-6)
    assert cmp.run_host_s(doc, "hf_eager_kernel_s") == pytest.approx(17e-6)
    pricers = cmp.run_pricers(H200, 11e-6, 17e-6)
    assert pricers["eager"].host_s == pytest.approx(17e-6) and pricers["eager"].host_source == "transformers"
    assert cmp.run_pricers(H200, 11e-6)["eager"].host_s == pytest.approx(11e-6)     # no transformers reading


def test_the_probe_keeps_the_bare_op_figure_and_says_why_transformers_was_not_measured(monkeypatch):
    from hwprobe.probes.calibration import torch_kernels

    def missing(torch):
        raise ImportError("No module named 'transformers'")

    monkeypatch.setattr(hf_host, "measure", missing)
    got, notes = torch_kernels.transformers_host(None)
    assert got is None and "transformers is not installed" in notes[0]
    monkeypatch.setattr(hf_host, "measure", lambda torch: {**HF, "model": "LlamaForCausalLM"})
    got, notes = torch_kernels.transformers_host(None)
    assert got["kernel_s"] == HF["kernel_s"] and "17.0 us of host per kernel" in notes[0] and "150 kernels" in notes[0]


def test_the_import_ahead_loads_transformers_names_in_a_thread_and_nothing_without_it(monkeypatch):
    import importlib.util
    import types

    asked = []

    class Lazy(types.ModuleType):        # transformers resolves its top-level names lazily, on attribute access
        def __getattr__(self, name):
            asked.append(name)
            return object()

    fake = Lazy("transformers")
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setitem(sys.modules, "transformers.models.llama.modeling_llama", types.ModuleType("modeling_llama"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "transformers" else None)
    thread = hf_host.import_ahead()
    thread.join(timeout=10)
    assert not thread.is_alive() and thread.daemon
    assert asked == ["AutoConfig", "AutoModelForCausalLM", "DynamicCache"]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert hf_host.import_ahead() is None


FAMS = {"gemma2": {"kernel_s": 14e-6, "kernels_per_step": 291, "step_s": [4.1e-3, 4.0e-3, 4.2e-3], "vs_llama": 0.8,
                   "model_type": "gemma2"},
        "qwen3": {"kernel_s": 16e-6, "kernels_per_step": 248, "step_s": [4.0e-3, 3.9e-3, 4.1e-3], "vs_llama": 0.9,
                  "model_type": "qwen3"}}


def test_every_family_the_transformers_runtimes_lower_has_a_tiny_decoder_of_its_own_classes():
    from hwprobe.models.llm.config import FAMILIES as LOWERED
    from hwprobe.predict.calibration import UNSTEADY_FAMILIES

    # gpt2: not lowered for them; the MoEs: their ratios did not repeat
    assert set(hf_host.FAMILIES) == set(LOWERED.values()) - {"llama", "gpt2", *UNSTEADY_FAMILIES}
    for fam in hf_host.FAMILIES:
        cfg = hf_host.family_config(fam)
        assert LOWERED[cfg["model_type"]] == fam
        assert cfg["hidden_size"] == hf_host.CONFIG["hidden_size"] and cfg["num_hidden_layers"] == 4
        assert cfg["pad_token_id"] is None and cfg["eos_token_id"] is None          # Phi-3's default pad id is 32000
        assert cfg.get("head_dim", 16) == 16                                          # Gemma's and Qwen3's default: not
        assert cfg.get("num_experts_per_tok", 2) == 2
    assert "model_type" not in hf_host.CONFIG or hf_host.CONFIG["model_type"] == "llama"


def test_a_familys_ratio_is_the_median_of_its_rounds_against_the_llamas_same_rounds():
    # family 200 kernels, llama 100: per kernel 20/20, 22/20 (a slow round moved both? no: only the family), 18/20
    got = hf_host.vs_llama([4.0e-3, 4.4e-3, 3.6e-3], 200, [2.0e-3, 2.0e-3, 2.0e-3], 100)
    assert got == pytest.approx(1.0)
    # a host twice as slow in round two moves both: the ratio stays
    assert hf_host.vs_llama([3.0e-3, 6.0e-3], 200, [2.0e-3, 4.0e-3], 100) == pytest.approx(0.75)
    with pytest.raises(ValueError):
        hf_host.vs_llama([3.0e-3], 200, [2.0e-3, 4.0e-3], 100)
    with pytest.raises(ValueError):
        hf_host.vs_llama([3.0e-3], 0, [2.0e-3], 100)


def test_the_profile_files_each_familys_ratio_and_the_predictor_scales_transformers_host_by_it(tmp_path):
    prof = with_transformers(tmp_path, {**HF, "families": FAMS})      # the schema takes it
    back = load_profile(tmp_path)
    cal = Calibration.of(back)
    assert cal.hf_family_ratio == {"gemma2": 0.8, "qwen3": 0.9}
    assert Calibration.of(load_profile(H200)).hf_family_ratio == {}    # profiles before it: none
    eager = Predictor(back, "eager", cal, host="transformers")
    gemma2 = eager.for_family("gemma2")
    assert gemma2.host_s == pytest.approx(0.8 * HF["kernel_s"]) and gemma2.host_source == "transformers_family"
    assert eager.host_s == HF["kernel_s"] and eager.for_family("llama") is eager and eager.for_family("phi3") is eager
    assert "(gemma2: 0.80x)" in gemma2.eager_note(1e-4, 100) and "lacks its figure" not in gemma2.eager_note(1e-4, 100)
    cnn = Predictor(back, "eager", cal)                                 # the framework's host: no family scaling
    assert cnn.for_family("gemma2") is cnn
    bad = {**FAMS, "phi3": {"kernel_s": 1e-5, "kernels_per_step": 0, "vs_llama": 1.0}}
    prof.calibration.eager = replace(prof.calibration.eager, transformers={**HF, "families": bad})
    with pytest.raises(InputError, match="calibration/eager"):      # a family of no kernels: refused
        validate_dict(prof.to_dict())


def test_an_llm_step_of_a_measured_family_is_priced_with_its_own_host_and_a_graph_replay_is_not(tmp_path):
    from hwprobe.analysis.llm import LLMOptions, analyze

    with_transformers(tmp_path, {**HF, "families": FAMS})
    plain = tmp_path / "plain"
    with_transformers(plain, HF)
    eager = LLMOptions(phase="decode", context=1024, batch=1, runtime="eager")
    scaled = analyze("gemma2-9b", str(tmp_path), eager).phases["decode"]
    base = analyze("gemma2-9b", str(plain), eager).phases["decode"]
    assert 0.75 * base.time_s < scaled.time_s < 0.9 * base.time_s       # host-bound: 0.8x the host a kernel
    llama = [analyze("llama-3.2-1b", str(p), eager).phases["decode"].time_s for p in (tmp_path, plain)]
    assert llama[0] == llama[1]                                         # no ratio for the Llama's own family
    graph = LLMOptions(phase="decode", context=1024, batch=1, runtime="hf")
    assert (analyze("gemma2-9b", str(tmp_path), graph).phases["decode"].time_s
            == analyze("gemma2-9b", str(plain), graph).phases["decode"].time_s)


def test_the_comparison_takes_the_runs_own_family_ratios_before_the_profiles():
    doc = {"host_before": {"hf_eager_kernel_s": 16e-6, "hf": {**HF, "families": FAMS}},
           "host_after": {"hf_eager_kernel_s": 18e-6, "hf": {**HF, "families": {"gemma2": {**FAMS["gemma2"],
                                                                                          "vs_llama": 0.7}}}}}
    assert cmp.run_family_ratios(doc) == pytest.approx({"gemma2": 0.75, "qwen3": 0.9})
    assert cmp.run_family_ratios({"host_before": {"hf_eager_kernel_s": 16e-6}}) == {}      # runs before it
    pricers = cmp.run_pricers(H200, 11e-6, 17e-6, ratios=cmp.run_family_ratios(doc))
    assert pricers["eager"].for_family("gemma2").host_s == pytest.approx(0.75 * 17e-6)
    assert pricers["graph"].for_family("gemma2").host_s == pricers["graph"].host_s       # not eager: as it was


def test_the_probes_note_lists_each_familys_ratio_and_the_ones_it_could_not_measure(monkeypatch):
    from hwprobe.probes.calibration import torch_kernels

    monkeypatch.setattr(hf_host, "measure", lambda torch: {**HF, "families": FAMS,
                                                           "family_errors": {"phi3": "AssertionError: padding"}})
    _, notes = torch_kernels.transformers_host(None)
    assert "gemma2 0.80x, qwen3 0.90x" in notes[0] and notes[0].endswith("not measured: phi3")


def test_the_comparison_prices_a_family_with_its_ratio_and_without_it_on_request(tmp_path):
    from hwprobe.models.llm import builtin

    cfg = dict(builtin.CONFIGS["gemma2-9b"], num_hidden_layers=4)
    host = {"eager_op_s": 10e-6, "hf_eager_kernel_s": 40e-6, "hf": {**HF, "kernel_s": 40e-6, "families": FAMS}}
    doc = {"layers": 4, "models": {"g": {"config": cfg}}, "host_before": host, "host_after": host,
           "cases": [{"model": "g", "runtime": "eager", "phase": "decode", "batch": 1, "context": 1024,
                      "median_s": 10e-3}]}
    on, off = (cmp.predict(doc, H200, host="run", families=f)[0].predicted_s for f in (True, False))
    assert 0.75 * off < on < 0.9 * off                                  # host-bound at 40 us a kernel: 0.8x of it
    assert "gemma2 0.80x, qwen3 0.90x" in cmp.table(cmp.predict(doc, H200, host="run"), doc, str(H200), "run")
    assert "--no-family-host" in cmp.table([], doc, str(H200), "run", families=False)


def test_the_moe_families_unsteady_ratios_are_neither_timed_nor_priced():
    from hwprobe.predict.calibration import UNSTEADY_FAMILIES, family_ratios

    moe = {f: {"kernel_s": 30e-6, "kernels_per_step": 320, "vs_llama": 1.5} for f in UNSTEADY_FAMILIES}
    assert family_ratios({"families": {**FAMS, **moe}}) == {"gemma2": 0.8, "qwen3": 0.9}
    assert not set(UNSTEADY_FAMILIES) & set(hf_host.FAMILIES)       # not measured: they cost `full` ~1.7 s


def test_which_family_ratios_a_comparison_prices_with():
    doc = {"host_before": {"hf": {**HF, "families": FAMS}}}
    assert cmp.family_host(doc, "case", True) == {"gemma2": 0.8, "qwen3": 0.9} == cmp.family_host(doc, "run", True)
    assert cmp.family_host(doc, "profile", True) is None                    # the profile's own
    assert cmp.family_host({"host_before": {"hf": HF}}, "case", True) is None  # a run before them: the profile's
    assert cmp.family_host(doc, "case", False) == {}                        # --no-family-host: none anywhere


def test_a_familys_failure_is_said_and_dropped_but_the_llamas_raises():
    errors, rounds = {}, {"qwen3": [1.0], "llama": [1.0]}

    def boom():
        raise RuntimeError("no such module")

    assert hf_host.attempt("qwen3", errors, boom, (rounds,)) is None
    assert errors == {"qwen3": "RuntimeError: no such module"} and rounds == {"llama": [1.0]}
    assert hf_host.attempt("qwen2", errors, lambda: 7) == 7 and "qwen2" not in errors
    with pytest.raises(RuntimeError):
        hf_host.attempt("llama", errors, boom, (rounds,))
    assert rounds == {"llama": [1.0]}
