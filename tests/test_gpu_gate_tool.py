"""The GPU gate's verdicts (tools/gpu_gate.py), on the CPU: its JUnit reading, its profile checks on the
committed 2-GPU runs (local and MPI-merged), the P2P ratio against cudaMemcpyPeerAsync, and its table."""

import json
import shutil

import pytest

from hwprobe.results import records_file
from tests.helpers import load_tool
from tests.refs import H200X2_MULTIGPU as MULTI
from tests.refs import ROOT

gate = load_tool("gpu_gate")

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1"
skipped="2" tests="5"><testcase classname="tests.gpu.test_gpu_interconnect" name="test_p2p_loopback_self_test">
<failure message="TypeError">'StoppingRule' object is not subscriptable</failure></testcase>
<testcase classname="tests.gpu.test_gpu_fma" name="test_fp32"/></testsuite></testsuites>"""


def test_junit_counts_and_failures(tmp_path):
    f = tmp_path / "j.xml"
    f.write_text(JUNIT)
    assert gate.junit_counts(f) == {"tests": 5, "failures": 1, "errors": 0, "skipped": 2}
    assert gate.failed_tests(f) == ["test_gpu_interconnect::test_p2p_loopback_self_test"]


def _copy_run(src, dst):
    dst.mkdir(parents=True)
    for f in (src / "profile.json", records_file(src)):          # the committed records are gzipped
        shutil.copy(f, dst / f.name)


def test_profile_check_on_the_committed_mpi_run(tmp_path):
    _copy_run(MULTI / "results-mpi", tmp_path / "run")
    ok, text = gate.profile_check(tmp_path, ranks=2, links=True)
    assert ok, text
    assert "2 ranks merged" in text and "0 errors" in text
    ok1, text1 = gate.profile_check(tmp_path, ranks=4)
    assert not ok1 and "2 ranks merged" in text1


def test_profile_check_refuses_two_profiles_errors_and_partial_runs(tmp_path):
    _copy_run(MULTI / "results-mpi", tmp_path / "a")
    _copy_run(MULTI / "results-mpi", tmp_path / "b")
    ok, text = gate.profile_check(tmp_path)
    assert not ok and "found 2" in text
    shutil.rmtree(tmp_path / "b")
    p = json.loads((tmp_path / "a" / "profile.json").read_text())
    p["errors"] = [{"metric": "p2p.ce.uni.0-1", "error": "TypeError: 'StoppingRule' object is not subscriptable"}]
    (tmp_path / "a" / "profile.json").write_text(json.dumps(p))
    ok, text = gate.profile_check(tmp_path)
    assert not ok and "1 errors" in text and "StoppingRule" in text
    p["errors"], p["partial"] = [], True
    (tmp_path / "a" / "profile.json").write_text(json.dumps(p))
    assert not gate.profile_check(tmp_path)[0]


def test_p2p_ratio_of_the_committed_lease():
    mg = load_tool("multigpu_compare")
    prof = json.loads((MULTI / "results-local" / "profile.json").read_text())
    ref = json.loads((MULTI / "p2p_ref.json").read_text())
    r = mg.p2p_ratios(prof, ref)
    assert set(r) == {"ce.uni", "ce.bi"}
    assert all(0.9 < v < 1.1 for v in r.values()), r
    assert mg.p2p_ratios(prof, None) == {"ce.uni": None, "ce.bi": None}


def test_table_fails_on_any_failed_step_and_not_on_steps_that_do_not_apply():
    rows = [gate.Row("tests", "pytest -m gpu", 0, 90.0, True, "37 passed"),
            gate.Row("mpi", "-", None, 0.0, None, "not applicable: 1 GPU")]
    t = gate.table(rows, "# head")
    assert t.rstrip().endswith("gate: PASS") and "| mpi | `-` | - | 0 | n/a |" in t
    rows.append(gate.Row("multigpu", "hwprobe run", 1, 20.0, False, "3 errors"))
    assert gate.table(rows, "# head").rstrip().endswith("gate: FAIL")


def test_gate_without_a_gpu_marks_multi_gpu_steps_not_applicable(tmp_path, monkeypatch):
    monkeypatch.setattr(gate, "gpu_count", lambda: 1)
    assert gate.main(["--out", str(tmp_path), "--steps", "multigpu,p2p,mpi"]) == 0
    text = (tmp_path / "gate.md").read_text()
    assert text.count("not applicable: 1 GPU") == 3 and "gate: PASS" in text


def test_gate_refuses_unknown_steps(tmp_path, capsys):
    assert gate.main(["--out", str(tmp_path), "--steps", "tests,nope"]) == 2
    assert "unknown steps ['nope']" in capsys.readouterr().err


@pytest.mark.parametrize("step", ["default", "multigpu", "mpi"])
def test_a_run_that_leaves_no_results_fails(tmp_path, monkeypatch, step):
    monkeypatch.setattr(gate, "run", lambda cmd, log, timeout: (1, 0.5))
    args = {"default": ["--suite", "default"], "multigpu": ["--suite", "multigpu"], "mpi": ["--suite", "multigpu"]}
    row = gate.step_hwprobe(tmp_path, step, args[step], ranks=2 if step == "mpi" else None)
    assert row.ok is False and row.exit == 1 and row.result == "no results directory"


def test_acceptance_reference_is_the_committed_run_of_the_same_node_kind():
    assert gate.golden_for("NVIDIA H200") == "profiles/h200-sxm/2026-11-26-full"
    assert gate.golden_for("NVIDIA H100 80GB HBM3") == "profiles/h100-sxm/2026-11-26-full"
    assert gate.golden_for("NVIDIA H200", 2) == "profiles/h200x2/2026-11-28-acceptance"
    assert gate.golden_for("NVIDIA H100 80GB HBM3", 2) is None       # no 2x H100 node reference yet
    assert gate.golden_for("NVIDIA A100-SXM4-80GB") is None
    for ref in gate.GOLDEN.values():
        assert (ROOT / ref / "profile.json").exists(), ref


def test_the_two_gpu_reference_covers_the_node_links_and_its_own_host_link():
    """The 2x H200 node's reference is an acceptance run of that node (2 ranks, merged): it has NCCL and P2P
    ceilings the single-GPU reference lacks, and its host bidirectional ceiling is the node's, not the single
    node's 101.6 GB/s."""
    from hwprobe.results import read_measurements

    ref = read_measurements(ROOT / gate.golden_for("NVIDIA H200", 2))
    metrics = {m.metric for m in ref}
    assert "nccl.all_reduce.busbw" in metrics and any(m.startswith("rank1.") for m in metrics)
    bidir = [m.value for m in ref if m.metric == "host.bidir.pinned"]
    assert bidir and 85e9 < bidir[0] < 100e9


def test_acceptance_fails_past_its_time_or_a_failed_validate(tmp_path, monkeypatch):
    _copy_run(MULTI / "results-mpi", tmp_path / "results-acceptance" / "run")
    monkeypatch.setattr(gate, "gpu_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(gate, "step_hwprobe", lambda out, name, args, **kw: gate.Row(name, "hwprobe run", 0, 70.0,
                                                                                     True, "ok"))
    monkeypatch.setattr(gate, "run", lambda cmd, log, timeout: (0, 1.0))
    row = gate.step_acceptance(tmp_path, 2)
    assert row.ok is False and "70 s (need <= 60)" in row.result
    monkeypatch.setattr(gate, "step_hwprobe", lambda out, name, args, **kw: gate.Row(name, "hwprobe run", 0, 40.0,
                                                                                     True, "ok"))
    assert gate.step_acceptance(tmp_path, 2).ok is True
    monkeypatch.setattr(gate, "run", lambda cmd, log, timeout: (1, 1.0))
    row = gate.step_acceptance(tmp_path, 2)
    assert row.ok is False and "exit 1" in row.result


def test_failed_cases_become_node_ids_of_their_files(tmp_path):
    f = tmp_path / "j.xml"
    name = "test_coll_check_kernel_agrees_with_numpy[2]"
    f.write_text(JUNIT.replace('name="test_p2p_loopback_self_test"', f'name="{name}"'))
    assert gate.failed_ids(f) == ["tests/gpu/test_gpu_interconnect.py::test_coll_check_kernel_agrees_with_numpy[2]"]


def _junit(failed: list[tuple[str, str]], passed: int) -> str:
    cases = "".join(f'<testcase classname="{c}" name="{n}"><failure message="x">x</failure></testcase>'
                    for c, n in failed)
    return (f'<?xml version="1.0"?><testsuites><testsuite name="pytest" errors="0" failures="{len(failed)}" '
            f'skipped="0" tests="{len(failed) + passed}">{cases}</testsuite></testsuites>')


@pytest.mark.parametrize("again_ok", [True, False])
def test_a_few_failed_tests_run_again_alone_and_decide_the_step(tmp_path, monkeypatch, again_ok):
    calls = []

    def fake(cmd, log, timeout):
        calls.append(cmd)
        xml = tmp_path / ("pytest-gpu-rerun.xml" if "pytest-gpu-rerun" in str(log) else "pytest-gpu.xml")
        if len(calls) == 1:
            xml.write_text(_junit([("tests.gpu.test_gpu_memory", "test_host")], 53))
            return 1, 200.0
        xml.write_text(_junit([] if again_ok else [("tests.gpu.test_gpu_memory", "test_host")], 1 if again_ok else 0))
        return (0 if again_ok else 1), 3.0

    monkeypatch.setattr(gate, "run", fake)
    row = gate.step_tests(tmp_path)
    assert calls[1][-2] == "tests/gpu/test_gpu_memory.py::test_host"
    assert row.ok is again_ok and row.exit == (0 if again_ok else 1) and row.wall_s == 203.0
    assert row.result.startswith("53 passed, 1 failed, 0 skipped: test_gpu_memory::test_host; re-run alone: ")
    assert row.result.endswith("(first run exit 1)")
    assert ("1 passed, 0 failed" in row.result) is again_ok


def test_many_failed_tests_are_not_run_again(tmp_path, monkeypatch):
    calls = []

    def fake(cmd, log, timeout):
        calls.append(cmd)
        failed = [("tests.gpu.test_gpu_memory", f"test_{i}") for i in range(gate.RERUN_MAX + 1)]
        (tmp_path / "pytest-gpu.xml").write_text(_junit(failed, 10))
        return 1, 100.0

    monkeypatch.setattr(gate, "run", fake)
    row = gate.step_tests(tmp_path)
    assert len(calls) == 1 and row.ok is False and "re-run" not in row.result
