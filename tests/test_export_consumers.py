"""The exports taken by the real consumers, installed from PyPI: llm-analysis imports its gpu_configs folder
with hwprobe's file in it and runs inference and tp_size=2 analysis on it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe.export import export
from hwprobe.profile_build import load_profile
from tests.refs import H200_FULL

H200 = str(H200_FULL / "profile.json")
USER_LINK = {"intra_node_bandwidth_in_GB_per_sec": 450.0, "intra_node_min_message_latency": 8e-6}


def _llm_analysis_dir() -> Path:
    """llm-analysis's package folder: installed in its own step (.ci/run), else the test skips."""
    try:
        import llm_analysis  # noqa: F401
    except ImportError:
        pytest.skip("llm-analysis is not installed (pip install --no-deps llm-analysis 'fire<0.6', as .ci/run does)")
    import importlib.util

    return Path(importlib.util.find_spec("llm_analysis").origin).parent


RUN = """
import json, sys
from llm_analysis import analysis, config
assert "{name}" in config.gpu_configs, sorted(config.gpu_configs)
gpu = config.get_gpu_config_by_name("{name}")
out = {{}}
for tp in (1, 2):
    s = analysis.infer(model_name="facebook_opt-1.3b", gpu_name="{name}", tp_size=tp, seq_len=128,
                       num_tokens_to_generate=8, log_level="ERROR")
    out[tp] = s["total_decode_latency"] if "total_decode_latency" in s else s["total_latency"]
print(json.dumps({{"i4": gpu.peak_i4_TFLOPS, "fp16": gpu.peak_fp16_TFLOPS, "lat": out}}))
"""


def test_llm_analysis_imports_and_runs_on_the_export(tmp_path):
    pkg = _llm_analysis_dir()
    copy = tmp_path / "llm_analysis"
    shutil.copytree(pkg, copy)                    # its own gpu_configs folder, in a copy: the install stays clean
    e = export(load_profile(H200), "llm-analysis", name="h200-hwprobe", overrides=USER_LINK)
    (copy / "gpu_configs" / e.filename).write_text(e.text)
    r = subprocess.run([sys.executable, "-c", RUN.format(name="h200-hwprobe")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    cfg = json.loads(e.text)
    assert got["fp16"] == pytest.approx(cfg["peak_fp16_TFLOPS"])
    assert got["i4"] == pytest.approx(4 * cfg["peak_fp16_TFLOPS"])        # omitted: its own default, warned of
    assert any("peak_i4_TFLOPS" in n for n in e.notes)
    assert got["lat"]["1"] > 0 and got["lat"]["2"] > 0
