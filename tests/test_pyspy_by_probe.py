"""tools/pyspy_by_probe.py on the committed py-spy profile of a full run (H200, 2026-11-27, issue 33)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "profiles/h200-sxm/2026-11-27-suite-pyspy/full.collapsed.gz"


def _tool():
    spec = importlib.util.spec_from_file_location("pyspy_by_probe", ROOT / "tools/pyspy_by_probe.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_samples_go_to_the_probe_under_the_runner_and_the_workers_apart():
    per_probe, inside = _tool().by_probe(PROFILE, 40.0, "torch_kernels", 4)
    top = per_probe.most_common(1)[0]
    assert top[0] == "run (hwprobe/probes/calibration/torch_kernels.py)" and 100 < top[1] < 110
    assert 30 < per_probe["(worker threads)"] < 40            # the compile-ahead threads' NVRTC
    assert per_probe["(outside the probes)"] < 5
    assert abs(sum(per_probe.values()) - 13524 / 40) < 1       # every sample py-spy wrote, once
    conv = sum(s for stack, s in inside.items() if stack.startswith("convs;"))
    assert 80 < conv < 90                                      # cuDNN's conv points: most of the calibration


def test_the_cli_prints_seconds_per_probe(capsys):
    assert _tool().main([str(PROFILE), "--probe", "sparse"]) == 0
    out = capsys.readouterr().out
    assert "run_sparse (hwprobe/probes/compute/sparse.py)" in out and "SparseGemm._setup" in out
