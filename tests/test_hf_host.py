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
from hwprobe.profile_build import load_profile

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "profiles/h200-sxm/2026-11-26-predict-conv"
sys.path.insert(0, str(ROOT / "tools"))
import compare_hf_llm as cmp  # noqa: E402

HF = {"kernel_s": 17.0e-6, "kernels_per_step": 150, "step_s": [2.55e-3, 2.6e-3, 2.5e-3], "version": "5.17.0"}


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
    prof = load_profile(H200)
    prof.calibration.eager = replace(prof.calibration.eager, transformers=HF)
    prof.save(tmp_path / "profile.json")                               # the schema takes it
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

    prof = load_profile(H200)
    prof.calibration.eager = replace(prof.calibration.eager, transformers={**HF, "kernel_s": 40e-6})
    prof.save(tmp_path / "profile.json")
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
