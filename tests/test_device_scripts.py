"""The device-side shell scripts in tools/: each one parses (bash -n), and the suite A/B's pack step, which runs
here, archives the old method's package and suites (issue 33)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", sorted((ROOT / "tools").rglob("*.sh")), ids=lambda p: p.name)
def test_every_device_script_parses(script):
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_suite_ab_packs_the_old_methods_package_and_suites(tmp_path):
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", "9fd4823^{commit}"], capture_output=True).returncode:
        pytest.skip("a shallow clone: commit 9fd4823 is not here")
    out = tmp_path / "old.tar"       # never the checkout's .ab/old.tar: a session's packed A/B baseline
    r = subprocess.run(["bash", str(ROOT / "tools/device_suite_ab.sh"), "pack", "9fd4823", str(out)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0 and f"wrote {out} (9fd4823)" in r.stdout, r.stderr
    with tarfile.open(out) as tar:
        names = set(tar.getnames())
    assert {"hwprobe/suites.py", "suites/full.toml", "suites/default.toml"} <= names
    assert not any(n.startswith(("profiles/", "tests/")) for n in names)


def test_calib_point_cost_refuses_in_one_line_without_cuda_torch_or_a_bad_step(capsys, monkeypatch):
    """Exit 2 and one line, no traceback: here without PyTorch (or without a GPU), and for --every 0."""
    import builtins

    from tests.helpers import load_tool

    tool = load_tool("calib_point_cost")
    real_import = builtins.__import__

    def no_torch(name, *a, **k):
        if name == "torch":
            raise ImportError("No module named 'torch'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert tool.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["calib_point_cost: needs PyTorch with CUDA (No module named 'torch')"]
    assert tool.main(["--every", "0"]) == 2
    assert capsys.readouterr().err.strip() == "calib_point_cost: --every must be 1 or more"
