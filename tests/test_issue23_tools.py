"""tools/issue23: the GPU suite loads and validates, and the summary fails the committed 2026-11-25 run that
carries the retired event-clock flags and NVML's lagging power beside short windows (what it must catch)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_suite_loads_and_validates():
    from hwprobe import suites

    s = suites.load(str(ROOT / "tools" / "issue23" / "gpu.toml"))
    suites.validate(s)
    assert [e.probe for e in s.entries] == ["gpu.mma_sync", "gpu.gemm"]
    assert s.entries[1].params["frameworks"] == ("cupy",)


def test_summary_fails_the_old_records(capsys):
    spec = importlib.util.spec_from_file_location("summ", ROOT / "tools" / "issue23" / "summarize.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(ROOT / "profiles" / "h100-sxm" / "2026-11-25-full") == 1
    out = capsys.readouterr().out
    assert "FAIL 1 fp64.tensor_core.mma_sync" in out          # 264 CTAs: the event clock's false flag
    assert "FAIL 3 fp16.tensor_core.cublas.f32acc" in out     # 123 W from NVML beside a 50 ms window
    assert "info 6 fp64.tensor_core.cublas.n8192" in out
