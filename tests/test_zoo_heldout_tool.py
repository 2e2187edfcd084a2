"""tools/zoo_heldout.py's torch-free parts: the catalogue (at least 30 held-out models across the families issue
31 names), the seen/held-out rule, the choice of models and shards, and its hand-over to validate_models.py's
machinery with its own catalogue. Timing and export run on the device."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[1]
zoo = load_tool("zoo_heldout")


def test_the_catalogue_holds_at_least_30_held_out_models_across_families():
    held = zoo.held_out()
    assert len(held) >= 30 and len({e.name for e in held}) == len(held)
    cnn = [e for e in held if e.family == "cnn"]
    tr = [e for e in held if e.family == "transformer"]
    assert len(cnn) >= 15 and len(tr) >= 10
    text = " ".join(e.exercises for e in held).lower()
    assert "depthwise 7x7" in " ".join(e.exercises for e in zoo.CATALOGUE).lower()   # convnext_tiny: seen since
    for what in ("grouped", "5x5", "squeeze-excitation", "bn before conv", "concat", "fpn",
                 "upsample", "windowed", "gqa", "explicit attention", "32x32/32 patch"):
        assert what in text, what
    assert {e.source.split("(")[0].split(" ")[0].rsplit(".", 1)[0] for e in held} >= {
        "torchvision.models", "torchvision.models.segmentation", "transformers"}
    assert all(e.batches[0] == 1 and len(e.batches) >= 2 for e in held)      # one image/sequence and many


def test_seen_models_are_never_in_the_held_out_set():
    assert zoo.split_of("resnet50") == "seen" and zoo.split_of("swin_t") == "held_out"
    assert not {e.name for e in zoo.held_out()} & zoo.SEEN
    vm = load_tool("validate_models")
    assert {s.name for s in vm.model_specs()} <= zoo.SEEN                   # the predictor was built on them
    assert "per-kernel numbers" in zoo.__doc__ and "moves to SEEN" in zoo.__doc__


def test_choose_filters_shards_and_refuses_bad_input():
    cnn = zoo.choose(family="cnn")
    assert cnn and all(e.family == "cnn" for e in cnn)
    shards = [zoo.choose(family="cnn", shard=f"{i}/3") for i in (1, 2, 3)]
    assert sorted(e.name for s in shards for e in s) == sorted(e.name for e in cnn)
    assert [e.name for e in zoo.choose(only="swin_t,alexnet")] == ["alexnet", "swin_t"]
    for kw in ({"only": "nope"}, {"only": "resnet50"}, {"family": "rnn"}, {"shard": "4/3"}, {"shard": "x"}):
        with pytest.raises(ValueError):
            zoo.choose(**kw)


def test_list_runs_without_torch_and_bad_input_is_one_line():
    r = subprocess.run([sys.executable, str(ROOT / "tools/zoo_heldout.py"), "--list"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == len(zoo.CATALOGUE)
    bad = subprocess.run([sys.executable, str(ROOT / "tools/zoo_heldout.py"), "--out", "x", "--only", "resnet50"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "is seen" in bad.stderr


def test_validate_models_takes_another_catalogue():
    vm = load_tool("validate_models")
    specs = [vm.ModelSpec("a", "cnn", (1,), lambda: None, lambda b: (), "x")]
    assert [s.name for s in vm.select("", lambda: specs)] == ["a"]
    with pytest.raises(ValueError):
        vm.select("resnet50", lambda: specs)
