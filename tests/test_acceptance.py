"""Node acceptance (hwprobe.fleet.acceptance, `hwprobe validate` per node): merged MPI runs taken apart by rank,
each rank judged with validate's rules against a golden profile, health verdicts beside, one pass/fail per node
that names the slow or unhealthy node; JSON and JUnit. Runs are written as the MPI merge writes them
(hwprobe.distributed.merge and write_merged), so the judge reads what a real srun job leaves."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hwprobe import distributed as D
from hwprobe.fleet import acceptance
from hwprobe.fleet.validate import Tolerances
from hwprobe.health import HealthVerdict, to_measurement
from hwprobe.measurement import Measurement
from hwprobe.profile_build import from_measurements
from hwprobe.vocab import Verdict

GEMM, DRAM = 700e12, 3.3e12


def _dev(r: int) -> dict:
    return {"kind": "gpu", "name": "H100 SXM", "sms": 132, "arch": "sm_90", "index": r % 2, "uuid": f"GPU-{r}",
            "pci_bus_id": None}


def _records(gemm: float = GEMM, dram: float = DRAM, health: dict | None = None, error: bool = False,
             skip_dram: bool = False) -> list[Measurement]:
    out = [Measurement(probe="gpu.gemm", metric="fp16.tensor_core.cublas", kind="compute", value=gemm,
                       unit="FLOP/s", precision="fp16", exec_unit="tensor_core", path="library")]
    if not skip_dram:
        out.append(Measurement(probe="gpu.dram", metric="dram.triad", kind="memory", value=dram, unit="B/s",
                               level="dram"))
    for check, verdict in {"ecc": "pass", "pcie": "pass", **(health or {})}.items():
        out.append(to_measurement(HealthVerdict(check, Verdict(verdict), f"{check} is {verdict}"), "gpu.health", 0))
    if error:
        out.append(Measurement(probe="gpu.host", metric="gpu.host.error", kind="info", value=0.0, unit="",
                               status="error", reason="gpu.host: RuntimeError: cudaErrorIllegalAddress"))
    return out


def write_job(root: Path, hosts: list[str], per_rank: dict[int, dict] | None = None, world: list | None = None,
              name: str = "job") -> Path:
    """A results directory as rank 0 of an MPI job leaves it: every rank's records merged and tagged."""
    per_rank = per_rank or {}
    outs = []
    for r, h in enumerate(hosts):
        recs = _records(**per_rank.get(r, {}))
        if r == 0:
            recs += world or []
        outs.append(D.RankOutput(r, h, {"index": r % 2}, [m.to_dict() for m in recs], _dev(r)))
    run_dir = root / name
    run_dir.mkdir(parents=True)
    (run_dir / "environment.json").write_text(json.dumps({"host": hosts[0], "suite": "acceptance"}))
    D.write_merged(run_dir, D.merge(outs), D.merged_devices(outs), D.World(0, len(hosts), 0, 2, hosts[0], "slurm"))
    return run_dir


def write_reference(root: Path, gemm: float = GEMM, dram: float = DRAM) -> Path:
    prof = from_measurements(_dev(0), [m for m in _records(gemm, dram) if m.kind != "info"],
                             environment={"host": "golden"})
    (root / "golden").mkdir(parents=True)
    prof.save(root / "golden" / "profile.json")
    return root / "golden"


def run_cli(capsys, args: list[str]) -> tuple[int, str, str]:
    from hwprobe.cli import main

    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def judge(run, ref, **kw):
    return acceptance.judge([str(run)] if not isinstance(run, list) else [str(x) for x in run], str(ref),
                            Tolerances(), **kw)


HOSTS = ["n1", "n1", "n2", "n2", "n3", "n3"]


def test_a_slow_rank_and_an_unhealthy_rank_fail_their_nodes_only(tmp_path):
    run = write_job(tmp_path, HOSTS, {3: {"gemm": GEMM * 0.7}, 4: {"health": {"ecc": "fail"}}})
    a = judge(run, write_reference(tmp_path))
    by = {n.node: n for n in a.nodes}
    assert [n.node for n in a.failed_nodes] == ["n2", "n3"] and by["n1"].passed
    assert by["n2"].ranks == [2, 3]
    assert by["n2"].failures == ["rank3: fp16.tensor_core.library: fail: measured 490 TFLOP/s vs expected 700 "
                                 "TFLOP/s (-30.0%, tolerance -10%)"]
    assert by["n3"].failures == ["rank4: health ecc: ecc is fail"]
    assert a.exit_code == 1
    d = a.to_dict()
    assert d["summary"] == {"nodes": 3, "passed": 1, "failed": 2, "failed_nodes": ["n2", "n3"]}


def test_the_merged_profile_alone_would_hide_the_slow_node(tmp_path):
    """Why ranks are taken apart: the merged profile keeps the best rank's figure in each slot."""
    from hwprobe.fleet.records import load_run
    from hwprobe.fleet.validate import validate

    run = write_job(tmp_path, HOSTS, {3: {"gemm": GEMM * 0.7}})
    ref = write_reference(tmp_path)
    assert not validate(load_run(run), load_run(ref)).failed        # the slot's best: rank 0's figure
    assert [n.node for n in judge(run, ref).failed_nodes] == ["n2"]


def test_a_probe_error_or_a_ceiling_only_other_ranks_measured_fails_the_node(tmp_path):
    run = write_job(tmp_path, HOSTS, {1: {"error": True}, 5: {"skip_dram": True}})
    a = judge(run, write_reference(tmp_path))
    by = {n.node: n for n in a.nodes}
    assert [n.node for n in a.failed_nodes] == ["n1", "n3"]
    assert by["n1"].failures == ["rank1: probe error: gpu.host.error: gpu.host: RuntimeError: cudaErrorIllegalAddress"]
    assert by["n3"].failures == ["rank5: dram.bandwidth: fail: not measured in this run (reference 3.3 TB/s); "
                                 "measured on other ranks, not on this one"]


def test_a_world_verdict_naming_nodes_fails_those_nodes(tmp_path):
    pair = to_measurement(HealthVerdict("nccl_pairs", Verdict.FAIL, "slow pair(s) n2-n3",
                                        {"nodes": ["n2", "n3"]}, "NCCL"), "gpu.nccl_pairs")
    pair.params["scope"] = "world"
    a = judge(write_job(tmp_path, HOSTS, world=[pair]), write_reference(tmp_path))
    assert [n.node for n in a.failed_nodes] == ["n2", "n3"]
    assert all(f == "job: health nccl_pairs: slow pair(s) n2-n3" for n in a.failed_nodes for f in n.failures)


def test_a_rank_slower_than_its_peers_within_tolerance_is_a_warning(tmp_path):
    run = write_job(tmp_path, HOSTS, {2: {"dram": DRAM * 0.92}})
    a = judge(run, write_reference(tmp_path))
    assert not a.failed_nodes
    n2 = next(n for n in a.nodes if n.node == "n2")
    assert n2.warnings == ["rank2: dram.bandwidth 92.0% of the median of its peers (compare's median/MAD rule)"]


def test_one_run_per_node_from_a_prolog_is_one_fleet(tmp_path):
    runs = [write_job(tmp_path / "latest", [h], {0: {"gemm": GEMM * (0.5 if h == "b" else 1)}}, name=h)
            for h in ("a", "b", "c")]
    ref = write_reference(tmp_path)
    for given in (runs, tmp_path / "latest"):            # the runs, or the folder they are in (searched below)
        a = judge(given, ref)
        assert [n.node for n in a.nodes] == ["a", "b", "c"] and [n.node for n in a.failed_nodes] == ["b"]


def test_cli_validate_per_node_json_junit_and_exit_code(tmp_path, capsys, monkeypatch):
    run = write_job(tmp_path, HOSTS, {3: {"gemm": GEMM * 0.7}, 4: {"health": {"pcie": "warn"}}})
    ref = write_reference(tmp_path)
    junit = tmp_path / "acc.xml"
    code, out, _ = run_cli(capsys, ["validate", str(run), "--against", str(ref), "--json", "--junit", str(junit)])
    assert code == 1
    d = json.loads(out)
    assert d["per_node"] and d["summary"]["failed_nodes"] == ["n2"]
    n3 = next(n for n in d["nodes"] if n["node"] == "n3")
    assert n3["passed"] and n3["warnings"] == ["rank4: health pcie: pcie is warn"]
    root = ET.parse(junit).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"n1", "n2", "n3"} and suites["n2"].get("failures") == "1"
    failed = [c.get("name") for c in suites["n2"].iter("testcase") if c.find("failure") is not None]
    assert failed == ["rank3.fp16.tensor_core.library"]
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, ["validate", str(run), "--against", str(ref)])
    assert code == 1 and "FAIL n2: rank3: fp16.tensor_core.library: fail" in out
    assert "FAILED: 1 of 3 node(s): n2" in out
    assert max(len(line) for line in out.splitlines()[:8]) <= 80


def test_a_plain_run_without_health_keeps_the_ceiling_view(tmp_path, capsys):
    ref = write_reference(tmp_path)
    code, out, _ = run_cli(capsys, ["validate", str(ref), "--against", str(ref), "--json"])
    assert code == 0 and "per_node" not in json.loads(out) and json.loads(out)["passed"]


def test_bad_inputs_are_one_line(tmp_path, capsys):
    ref = write_reference(tmp_path)
    code, _, err = run_cli(capsys, ["validate", str(tmp_path / "nope*"), "--against", str(ref)])
    assert code == 2 and "no file matches" in err and "Traceback" not in err


@pytest.mark.parametrize("n", [1, 2])
def test_needs_nodes(tmp_path, n):
    run = write_job(tmp_path, ["a"] * n)
    assert acceptance.needs_nodes([run / "profile.json"])             # health verdicts, or several ranks
    assert not acceptance.needs_nodes([write_reference(tmp_path / "r") / "profile.json"])


def test_compare_per_rank_gives_each_rank_a_row_and_names_the_slow_one(tmp_path, capsys):
    run = write_job(tmp_path, HOSTS, {3: {"gemm": GEMM * 0.7}})
    code, out, _ = run_cli(capsys, ["compare", str(run), "--json"])
    assert code == 0 and len(json.loads(out)["runs"]) == 1             # merged: one row, the best rank's figures
    code, out, _ = run_cli(capsys, ["compare", str(run), "--per-rank", "--json"])
    d = json.loads(out)
    assert code == 1 and [r["run"] for r in d["runs"]] == [f"{h}:rank{r}" for r, h in enumerate(HOSTS)]
    assert [(o["run"], o["key"]) for o in d["outliers"]] == [("n2:rank3", "fp16.tensor_core.library")]


def test_node_ranks_print_as_ranges():
    from hwprobe.fleet.render import ranges

    assert ranges([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11" and ranges([5]) == "5" and ranges([]) == ""
