"""The CPU acceptance suite under a real Slurm `srun` (two tasks, one host), merged into one run and judged per node.

Needs a running Slurm (slurmctld and slurmd) with the PMIx plugin, and mpi4py in this interpreter: `bash .ci/slurm`
starts a one-host cluster from Debian's packages (CI runs it first). Skips with the reason where Slurm is absent (a
developer's machine); where .ci/slurm set this machine up (its marker file) and the cluster does not answer, fails.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

MARK = Path("/etc/slurm/hwprobe-ci")           # written by .ci/slurm


def _slurm_or_skip() -> None:
    missing = [c for c in ("srun", "sinfo", "scontrol") if not shutil.which(c)]
    if missing:
        if MARK.exists():
            pytest.fail(f".ci/slurm set Slurm up here, but {', '.join(missing)} is gone")
        pytest.skip(f"no Slurm here ({', '.join(missing)} not found): `bash .ci/slurm` starts a one-host cluster")
    up = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    if up.returncode or not any(s.startswith(("idle", "mixed", "alloc")) for s in up.stdout.split()):
        why = f"Slurm does not answer or has no usable node: {(up.stderr or up.stdout).strip()[:200]}"
        if MARK.exists():
            pytest.fail(why + " (`bash .ci/slurm` starts it)")
        pytest.skip(why)
    if subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True).returncode:
        pytest.skip(f"{sys.executable} has no mpi4py (the test extra installs it)")


def _hwprobe() -> str:
    exe = Path(sys.executable).parent / "hwprobe"
    assert exe.exists(), f"no hwprobe command beside {sys.executable}"
    return str(exe)


def _scaled_reference(run: Path, where: Path, factor: float) -> Path:
    """A golden profile from the run's merged profile: every ceiling x ``factor``, the contention marks dropped
    (two tasks on a 2-core VM share the cores; a reference must not be contended)."""
    d = json.loads((run / "profile.json").read_text())
    ref = copy.deepcopy(d)
    ceilings = [c for units in ref["compute"].values() for paths in units.values() for c in paths.values()]
    ceilings += [lvl["bandwidth"] for lvl in ref["memory"].values() if lvl.get("bandwidth")]
    for c in ceilings:
        c["value"] *= factor
        c["flags"] = [f for f in c.get("flags") or [] if not f.startswith("contended")]
    ref["environment"].pop("contended", None)
    ref["findings"] = []
    where.mkdir(parents=True)
    (where / "profile.json").write_text(json.dumps(ref))
    return where


def test_srun_two_tasks_run_the_cpu_acceptance_suite_into_one_merged_run_judged_per_node(tmp_path):
    _slurm_or_skip()
    out = tmp_path / "out"
    cmd = ["srun", "-n", "2", "--overcommit", "--mpi=pmix", "--time=5", "--job-name=hwprobe-ci-acceptance",
           _hwprobe(), "run", "--suite", "acceptance", "--device", "cpu", "--quick", "-q", "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMIX_", "PMI_"))}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs                               # rank 1 wrote nothing of its own
    run = runs[0]
    prof = json.loads((run / "profile.json").read_text())
    world = prof["environment"]["world"]
    assert world["size"] == 2 and world["launcher"] == "slurm" and len(world["hosts"]) == 1
    assert [d["rank"] for d in prof["devices"]] == [0, 1]
    assert prof["environment"]["suite"] == "acceptance-cpu"
    verdicts = [(f["params"]["rank"], f["params"]["health"]["check"]) for f in prof["findings"]
                if "health" in (f.get("params") or {})]
    assert sorted(verdicts) == sorted((r, c) for r in (0, 1) for c in ("memory", "cpufreq", "thermal", "cores"))
    recs = [json.loads(x) for x in (run / "measurements.jsonl").read_text().splitlines()[1:]]
    assert {x["params"]["rank"] for x in recs if x["metric"].endswith("cpu.fma")} == {0, 1}

    host = world["hosts"][0]
    for factor, code, passed in ((0.01, 0, True), (3.0, 1, False)):
        ref = _scaled_reference(run, tmp_path / f"ref-{factor}", factor)
        junit = tmp_path / f"acc-{factor}.xml"
        v = subprocess.run([_hwprobe(), "validate", str(run), "--against", str(ref), "--json", "--junit",
                            str(junit)], capture_output=True, text=True, timeout=120)
        assert v.returncode == code, v.stdout[-2000:] + v.stderr[-2000:]
        acc = json.loads(v.stdout)
        assert [(n["node"], n["ranks"], n["passed"]) for n in acc["nodes"]] == [(host, [0, 1], passed)]
        suite = ET.parse(junit).getroot().find("testsuite")
        assert suite.get("name") == host and (suite.get("failures") == "0") == passed
        if not passed:                                        # every rank's every ceiling, named by rank
            fails = acc["nodes"][0]["failures"]
            assert {f.split(":")[0] for f in fails} == {"rank0", "rank1"}
            assert any("fp64.cpu.instruction" in f for f in fails) and any("dram.bandwidth" in f for f in fails)
