"""Typed outcomes: every kind of record lands in its profile list and the exit code follows errors alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hwprobe import api
from hwprobe.measurement import Measurement
from hwprobe.probes import ProbeContext, probe
from hwprobe.profile_build import from_measurements
from hwprobe.results import load_records, migrate_record


def _ctx():
    from hwprobe.timing import NullSampler

    return ProbeContext(target="cpu", device=None, sampler=NullSampler(), probe_name="test.kinds")


@probe(name="test.every_kind", target="cpu", family="compute", summary="test", precisions=("fp32",))
def _every_kind(ctx, fail: bool = False):
    yield ctx.measure("fp32.cpu.ok", lambda: sum(range(100)), work=1e2, unit="FLOP/s", kind="compute",
                      precision="fp32", exec_unit="cpu", path="instruction", check=lambda: None, repeats=3)
    yield ctx.skip("fp8.cpu.none", "no FP8 here")
    yield ctx.error("int8.cpu.broken", "int8 kernel", RuntimeError("boom"))
    bad = ctx.derived("fp64.cpu.wrong", 1.0, unit="FLOP/s", kind="compute", precision="fp64", exec_unit="cpu",
                      path="instruction")
    bad.valid = False
    bad.flags.append("verification_failed: element 3")
    yield bad
    yield ctx.derived("finding.x", 2.0, unit="x", kind="info", notes=["INT8 is 2x slower"])


def test_each_kind_of_record_goes_to_its_list():
    ms = list(_every_kind(_ctx()))
    assert [m.status for m in ms] == ["ok", "skipped", "error", "ok", "ok"]
    prof = from_measurements({"kind": "cpu"}, ms)
    assert [m.status for m in ms] == ["ok", "skipped", "error", "invalid", "ok"]   # settled while filed
    assert set(prof.compute) == {"fp32"}
    assert prof.skipped == [{"probe": "test.kinds", "metric": "fp8.cpu.none", "reason": "no FP8 here"}]
    assert prof.errors == [{"probe": "test.kinds", "metric": "int8.cpu.broken",
                            "error": "int8 kernel: RuntimeError: boom"}]
    assert prof.invalid[0]["metric"] == "fp64.cpu.wrong" and "element 3" in prof.invalid[0]["reason"]
    assert [f["metric"] for f in prof.findings] == ["finding.x"]          # no error or skip filed as a finding


def test_an_error_record_sets_the_exit_code(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('target = "cpu"\n[[probes]]\nprobe = "test.every_kind"\n')
    res = api.run("cpu", str(suite), tmp_path / "out")
    assert res.failed == ["test.every_kind"]                 # an error record, not an exception, failed it
    code = ("import sys, tests.test_outcomes; from hwprobe.cli import main; "
            f"main(['run', '--device', 'cpu', '--suite', {str(suite)!r}, '--out', {str(tmp_path / 'o2')!r}, '-q'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "probes that failed while measuring: test.every_kind" in r.stderr


@pytest.mark.parametrize("legacy, status, reason", [
    ({"flags": ["error"], "notes": ["error: RuntimeError: nvrtc"], "valid": False}, "error", "RuntimeError: nvrtc"),
    ({"flags": ["error"], "notes": ["CompileError: x"], "valid": False}, "error", "CompileError: x"),   # gpu.fma
    ({"flags": [], "notes": ["error: RuntimeError: boom"]}, "error", "RuntimeError: boom"),              # mma
    ({"flags": ["error: ValueError: v"], "notes": ["Traceback ..."]}, "error", "ValueError: v"),         # runner
    ({"flags": [], "notes": ["skipped: no FP8"]}, "skipped", "no FP8"),
    ({"flags": ["above_theory: 140%"], "notes": [], "valid": False}, "invalid", "above_theory: 140%"),
    ({"flags": [], "notes": ["a finding"]}, "ok", ""),
])
def test_version_1_records_migrate_to_typed_status(legacy, status, reason):
    d = migrate_record({"probe": "p", "metric": "m", "kind": "info", "value": 0.0, "unit": "", **legacy})
    m = Measurement.from_dict(d)
    assert (m.status, m.reason) == (status, reason)


def test_records_file_is_versioned_and_keeps_unknown_keys(tmp_path):
    from hwprobe.results import ResultsWriter

    w = ResultsWriter(tmp_path)
    m = list(_every_kind(_ctx()))[1]
    m.extra["from_the_future"] = {"a": 1}
    w.append(m)
    w.close()
    lines = (tmp_path / "measurements.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "hwprobe-measurements", "version": 2}
    with open(tmp_path / "measurements.jsonl", "a") as fh:
        fh.write('{"probe": "p", "metric": "torn", "ki')              # a killed run's last line
    rec = load_records(tmp_path)
    assert rec.version == 2 and len(rec.measurements) == 1 and len(rec.skipped_lines) == 1
    assert rec.measurements[0].extra == {"from_the_future": {"a": 1}}
    assert json.loads(json.dumps(rec.measurements[0].to_dict()))["from_the_future"] == {"a": 1}


def test_a_future_records_format_is_refused(tmp_path):
    from hwprobe.errors import InputError

    (tmp_path / "measurements.jsonl").write_text('{"format": "hwprobe-measurements", "version": 9}\n')
    with pytest.raises(InputError, match="newer than this hwprobe"):
        load_records(tmp_path)


def test_a_legacy_file_without_header_loads_through_the_migration(tmp_path):
    legacy = {"probe": "gpu.fma", "metric": "fp64.cuda_core.dfma", "kind": "info", "value": 0.0, "unit": "",
              "flags": ["error"], "notes": ["nvrtc failed"], "valid": False}
    (tmp_path / "measurements.jsonl").write_text(json.dumps(legacy) + "\n")
    rec = load_records(tmp_path)
    assert rec.version == 1 and rec.measurements[0].status == "error"
    prof = from_measurements({"kind": "gpu"}, rec.measurements)
    assert prof.errors and not prof.findings               # the old bug: this error was filed as a finding
