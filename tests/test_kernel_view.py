"""The times-only view (`hwprobe analyze --times FILE` without a model) on real profiler files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe.analysis.kernelview import kernel_view
from hwprobe.analysis.timings import parse
from tests.refs import H200_PREDICT as PROFILE

REAL = Path(__file__).resolve().parent / "data" / "times" / "real"


def test_nsys_log_kernels_by_time_with_their_roofs():
    from hwprobe.profile_build import load_profile

    v = kernel_view([parse(REAL / "nsys_stats_flashattn.log")], load_profile(PROFILE))
    assert len(v.rows) == 4
    assert [r.total_s for r in v.rows] == sorted((r.total_s for r in v.rows), reverse=True)
    assert sum(r.share for r in v.rows) == pytest.approx(1.0)
    assert sum(v.by_unit.values()) == pytest.approx(1.0)
    transpose = next(r for r in v.rows if r.name.startswith("matrix_transpose"))
    assert transpose.unit == "memory" and transpose.roof.startswith("DRAM")


def test_tensorrt_layer_info_and_profile_join_into_kernel_times():
    v = kernel_view([parse(REAL / "mobilenet_v2_residuals.qat.onnx.engine.graph.json"),
                     parse(REAL / "mobilenet_v2_residuals.qat.onnx.engine.profile.json")])
    assert v.total_s > 0
    assert v.by_unit["tensor_core"] > 0.5          # the INT8 xmma convolutions hold most of the time
    assert any("xmma" in r.name and r.precision == "int8" for r in v.rows)


def _hw(*args):
    return subprocess.run([sys.executable, "-m", "hwprobe", *args], capture_output=True, text=True, timeout=120)


def test_cli_times_only_exit_codes():
    r = _hw("analyze", "--times", str(REAL / "nsys_stats_flashattn.log"), "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["kernels"]) == 4
    for args, needle in ((("analyze",), "--times"),
                         (("analyze", "--times", str(REAL / "mobilenet_v2_residuals.qat.onnx.engine.graph.json")),
                          "no times")):
        r = _hw(*args)
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert r.returncode == 2 and len(lines) == 1 and needle in lines[0], r.stderr
