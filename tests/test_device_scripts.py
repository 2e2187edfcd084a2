"""The device-side shell scripts in tools/: each one parses (bash -n); the suite A/B's pack step, which runs here,
archives the old method's package and suites (issue 33); and the detached job that carries a session over several
device commands runs here too, the A/B's with its GPU tools stubbed."""

from __future__ import annotations

import os
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


def _sh(args, cwd, **env):
    return subprocess.run(["bash", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **{k: str(v) for k, v in env.items()}}, timeout=60)


def test_a_detached_job_outlives_its_call_and_is_waited_for(tmp_path):
    """A device job longer than one command: started detached, refused a second start while it runs, then waited
    for; its output, exit status and DONE mark land in its folder."""
    helper, w = ROOT / "tools/device_detached.sh", tmp_path / "w"
    job = tmp_path / "job.sh"
    job.write_text('sleep 1; echo "ran with $1"; exit 7\n')
    r = _sh([helper, "start", w, job, "ARG"], tmp_path, WAIT_S=0)
    assert r.returncode == 3 and "still running" in r.stdout, r.stderr
    again = _sh([helper, "start", w, job], tmp_path, WAIT_S=0)
    assert again.returncode == 2 and "still runs" in again.stderr
    r = _sh([helper, "wait", w], tmp_path, WAIT_S=20)
    assert r.returncode == 0 and "done, exit 7" in r.stdout
    assert (w / "job.log").read_text() == "ran with ARG\n" and (w / "rc").read_text().strip() == "7"


@pytest.mark.parametrize("args", [[], ["wait"], ["stop", "W"], ["wait", "NOWHERE"], ["start", "W", "NO_JOB.sh"]])
def test_a_detached_job_refuses_bad_use_with_exit_2(tmp_path, args):
    r = _sh([ROOT / "tools/device_detached.sh", *[tmp_path / a if a.isupper() else a for a in args]], tmp_path,
            WAIT_S=0)
    assert r.returncode == 2 and r.stderr.startswith(("usage:", "device_detached:")), (r.stdout, r.stderr)


def test_the_suite_ab_session_runs_detached_and_copies_its_results(tmp_path):
    """The A/B's plumbing without a GPU: python3 and nvidia-smi stubbed, one suite pair; the start call waits,
    sees the session end and packs its folder (not the old tree) under $OUT."""
    repo, stubs = tmp_path / "repo", tmp_path / "bin"
    (repo / "tools").mkdir(parents=True)
    for name in ("device_suite_ab.sh", "device_detached.sh", "device_install.sh"):
        (repo / "tools" / name).write_text((ROOT / "tools" / name).read_text())
    (repo / ".ab").mkdir()
    (repo / "marker").write_text("old method\n")
    with tarfile.open(repo / ".ab/old.tar", "w") as tar:
        tar.add(repo / "marker", arcname="hwprobe/marker")
    stubs.mkdir()
    for tool in ("python3", "nvidia-smi"):
        (stubs / tool).write_text("#!/bin/sh\nexit 0\n")
        (stubs / tool).chmod(0o755)
    (stubs / "python3").write_text('#!/bin/sh\necho "$CUPY_CACHE_DIR ${CUPY_CACHE_SAVE_CUDA_SOURCE:-no}"\nexit 0\n')
    r = _sh([repo / "tools/device_suite_ab.sh"], repo, MODE="start", SUITES="default", WAIT_S=30,
            KEEP_CACHE="old-default", AB_WORK=tmp_path / "ab", OUT=tmp_path / "out", TMPDIR=tmp_path,
            PATH=f"{stubs}:{os.environ['PATH']}")
    assert r.returncode == 0 and "ab: done" in r.stdout, (r.stdout, r.stderr)
    assert "new-default: exit 0" in r.stdout and "old-default: exit 0" in r.stdout
    with tarfile.open(tmp_path / "out/ab.tgz") as tar:
        names = set(tar.getnames())
    assert {"./walls.txt", "./DONE", "./job.log", "./old-default.log", "./old-default.cupy-cache"} <= names
    logs = {n: (tmp_path / "ab" / n).read_text().split() for n in ("old-default.log", "new-default.log")}
    assert logs["old-default.log"] == [str(tmp_path / "ab/old-default.cupy-cache"), "1"]   # kept, with sources
    assert logs["new-default.log"][1] == "no" and str(tmp_path) in logs["new-default.log"][0]
    assert not any(n == "./old" or n.startswith("./old/") for n in names)     # the old tree stays behind


def test_the_h100_session_runs_its_steps_detached_and_copies_each_ones_archive(tmp_path):
    """tools/device_h100.sh's plumbing without a GPU: the gate and validate_hf_llm.py stubbed (python3 writes the
    file --out names), the gate and held-out steps; each step's archive lands under $OUT, its exit in steps.txt."""
    repo, stubs = tmp_path / "repo", tmp_path / "bin"
    (repo / "tools").mkdir(parents=True)
    for name in ("device_h100.sh", "device_detached.sh", "device_install.sh"):
        (repo / "tools" / name).write_text((ROOT / "tools" / name).read_text())
    (repo / "tools/gpu_gate.sh").write_text('mkdir -p "$OUT"; echo "gate: PASS" > "$OUT/gate.md"\n')
    stubs.mkdir()
    (stubs / "python3").write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --out ] && echo "{}" > "$2"; shift; '
                                   'done\nexit 0\n')
    (stubs / "nvidia-smi").write_text("#!/bin/sh\necho 'name, clocks.sm'\n")
    for s in stubs.iterdir():
        s.chmod(0o755)
    r = _sh([repo / "tools/device_h100.sh"], repo, MODE="start", STEPS="gate,heldout", WAIT_S=30,
            H100_WORK=tmp_path / "w", OUT=tmp_path / "out", PATH=f"{stubs}:{os.environ['PATH']}")
    assert r.returncode == 0 and "h100: done" in r.stdout, (r.stdout, r.stderr)
    for step in ("gate", "hf_heldout_moe", "hf_heldout_coder", "hf_heldout_dense"):
        assert f"{step}: exit 0" in r.stdout
    assert "hf_compiled" not in r.stdout and "ab:" not in r.stdout
    out = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert out == ["gate.tgz", "hf_heldout_coder.tgz", "hf_heldout_dense.tgz", "hf_heldout_moe.tgz", "smi.txt"]
    with tarfile.open(tmp_path / "out/hf_heldout_coder.tgz") as tar:
        assert set(tar.getnames()) == {"hf_heldout_coder.json", "hf_heldout_coder.log"}
    with tarfile.open(tmp_path / "out/gate.tgz") as tar:
        assert "gate-out/gate.md" in tar.getnames()
