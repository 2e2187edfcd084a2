"""tools/uncovered_kernels.py on the committed held-out zoo: the op families the predictor prices outside its
calibration, from its own output (no measured kernel list), and bad input as one line with exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("onnx")

import uncovered_kernels as tool  # noqa: E402

ZOO = ROOT / "profiles/h100-sxm/2026-11-27-zoo"
ONNX = ROOT / "profiles/h200-sxm/2026-11-27-zoo/onnx.tgz"              # both GPUs' zoo runs share the exports
PROFILE = ROOT / "profiles/h100-sxm/2026-11-27-predict-generic"


def test_the_zoo_s_uncovered_families_are_listed_by_share(capsys):
    args = ["--cases", str(ZOO / "predictions-cnn.json"), "--onnx", str(ONNX), "--profile", str(PROFILE),
            "--models", "shufflenet_v2_x1_0,unet_small", "--cases-over", "5"]
    assert tool.main(args) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| relayout")]
    # a channels-last ShuffleNet's layout conversions: no curve times them, at both batches, channels-last only
    assert len(rows) == 1 and "framework.permute" in rows[0] and "| 2 |" in rows[0]
    cases = [line for line in out.splitlines() if line.startswith("- ")]
    assert any(c.startswith("- shufflenet_v2_x1_0 b64 nhwc") and "relayout" in c for c in cases)
    assert all(float(c.split(": ")[1].rstrip("%")) > 5 for c in cases)
    assert "unet_small b8 nhwc" not in out                 # inside the calibration since its 160 x 160 points


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text('{"not": "a list"}')
    args = ["--cases", str(bad), "--onnx", str(tmp_path), "--profile", str(PROFILE)]
    assert tool.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("uncovered_kernels: error:")
