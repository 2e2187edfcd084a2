"""tools/validate_llm.py's case parsing and statistics (no torch needed) and tools/compare_llm.py's table, priced
with a fake predictor on a made-up measurement file."""

from __future__ import annotations

import json

import pytest

from tests.helpers import load_tool
from tests.test_llm import FakePricer


def test_validate_llm_imports_without_torch_and_parses_cases():
    v = load_tool("validate_llm")
    assert v.parse_cases("1x512, 16x4096", "decode") == [("decode", 1, 512), ("decode", 16, 4096)]
    assert v.parse_cases("prefill:1x1024,decode:16x1024") == [("prefill", 1, 1024), ("decode", 16, 1024)]
    for bad in ("0x512", "train:1x4"):
        with pytest.raises(ValueError):
            v.parse_cases(bad, None if ":" in bad else "decode")
    s = v.stats([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s["median_s"], s["p10_s"], s["p90_s"], s["min_s"], s["reps"]) == (3.0, 1.0, 5.0, 1.0, 5)


def test_validate_llm_shapes_are_hwprobe_builtins():
    """The measured models are hwprobe's built-ins field for field (compare_llm refuses a mismatch)."""
    from hwprobe.models.llm.config import load

    v = load_tool("validate_llm")
    for name, shape in v.MODELS.items():
        if name == "tiny":
            continue
        cfg = load(name)
        assert {k: getattr(cfg, k) for k in shape} == shape


def _doc():
    return {"gpu": "FAKE", "torch": "0", "attention_backend": "flash", "models": {"llama-3.2-1b": {"hidden": 2048}},
            "cases": [
                {"model": "llama-3.2-1b", "phase": "decode", "batch": 1, "context": 1024, "runtime": "graph",
                 "median_s": 1e-3, "p10_s": 0.9e-3, "p90_s": 1.1e-3},
                {"model": "llama-3.2-1b", "phase": "prefill", "batch": 1, "prompt": 512, "runtime": "graph",
                 "median_s": 5e-3, "p10_s": 4.9e-3, "p90_s": 5.1e-3}],
            "kernel_counts": [{"model": "llama-3.2-1b", "phase": "decode", "kernels": 430}]}


def test_compare_llm_table_with_a_fake_predictor():
    c = load_tool("compare_llm")
    doc = _doc()
    c.check_shapes(doc)
    rows = c.predict(doc, pricer=FakePricer())
    assert [r.phase for r in rows] == ["decode", "prefill"]
    for r, case in zip(rows, doc["cases"], strict=True):
        assert r.error == pytest.approx(r.predicted_s / case["median_s"] - 1)
    md = c.table(rows, doc, "fake.json")
    assert md.count("| llama-3.2-1b |") == 2 and "430 kernels measured, 421 lowered" in md
    assert "decode (CUDA graph): 1 cases" in md


def test_compare_llm_refuses_a_shape_mismatch_and_bad_files(tmp_path):
    from hwprobe.errors import InputError

    c = load_tool("compare_llm")
    doc = _doc()
    doc["models"]["llama-3.2-1b"]["hidden"] = 4096
    with pytest.raises(InputError, match="measured hidden=4096"):
        c.check_shapes(doc)
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"x": 1}))
    assert c.main([str(p), "--profile", "nothing.json"]) == 2


def test_compare_llm_marks_missing_communication():
    c = load_tool("compare_llm")
    doc = _doc()
    doc["cases"] = [{"model": "llama-3-8b", "phase": "decode", "batch": 1, "context": 512, "runtime": "graph",
                     "tp": 2, "median_s": 5e-3, "p10_s": 4.9e-3, "p90_s": 5.1e-3}]
    rows = c.predict(doc, pricer=FakePricer(links=False))
    assert rows[0].missing and not rows[0].ok
    assert "communication missing" in c.table(rows, doc, "fake.json")


def test_compare_llm_leaves_the_hand_written_models_eager_runs_unpriced():
    """`--runtime eager` prices transformers' dynamic cache since 2026-11-27; the hand-written model's eager rows
    (tp 2 among them, which the transformers runtimes refuse) are shown measured, not priced, and out of the
    summary."""
    c = load_tool("compare_llm")
    doc = _doc()
    doc["cases"].append({"model": "llama-3.2-1b", "phase": "decode", "batch": 1, "context": 512, "runtime": "eager",
                         "tp": 2, "median_s": 5e-3, "p10_s": 4.9e-3, "p90_s": 5.1e-3})
    rows = c.predict(doc, pricer=FakePricer())
    eager = rows[-1]
    assert eager.runtime == "eager" and eager.predicted_s is None and eager.error is None
    md = c.table(rows, doc, "fake.json")
    assert "not priced: `--runtime eager` is transformers' dynamic cache" in md
    assert "decode (CUDA graph): 1 cases" in md and "eager (no target)" not in md
