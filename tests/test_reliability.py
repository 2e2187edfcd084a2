"""Reliability: nothing lost to kill -9, a full disk, a hung probe or a shared device; bad files answered in
one line with exit 2 (hypothesis generates them)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tests.test_runner  # noqa: F401  (registers the test probes)
from hwprobe import api
from hwprobe.cli import main
from hwprobe.contention import bimodal, flag_contention
from hwprobe.errors import InputError
from hwprobe.measurement import Measurement, Stats, Theory
from hwprobe.probes import probe
from hwprobe.profile_build import load_profile
from hwprobe.results import MEASUREMENTS
from tests.refs import H200_DEFAULT


@probe(name="test.slow", target="cpu", family="memory", summary="test")
def _slow(ctx, seconds: float = 5.0):
    yield ctx.derived("dram.slow", 1e10, unit="B/s", kind="memory", level="dram")
    t0 = time.time()
    while time.time() - t0 < seconds:       # a probe that runs far past its budget, in Python
        time.sleep(0.01)


def _suite(tmp_path, body, name="s.toml"):
    f = tmp_path / name
    f.write_text('target = "cpu"\n' + body)
    return str(f)


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_watchdog_stops_a_probe_past_its_budget_and_the_run_goes_on(tmp_path):
    suite = _suite(tmp_path, '[[probes]]\nprobe = "test.slow"\ntimeout_s = 0.5\n'
                             '[[probes]]\nprobe = "test.two_then_fail"\nfail = false\n')
    t0 = time.time()
    res = api.run("cpu", suite, tmp_path / "out")
    assert time.time() - t0 < 4.0
    assert res.failed == ["test.slow"]
    assert "ran past its budget of 0 s" in res.profile.errors[0]["error"] or "budget" in res.profile.errors[0]["error"]
    assert res.profile.memory["dram"].bandwidth.value == 1e10           # measured before the watchdog fired
    assert "fp64" in res.profile.compute                                   # the next probe ran


def test_watchdog_last_resort_runs_when_python_never_gets_control(monkeypatch):
    from hwprobe import watchdog

    seen = []
    wd = watchdog.Watchdog("test.hung", 0.1, on_stuck=lambda p, s: seen.append((p, s)), grace_s=0.1)
    monkeypatch.setattr(wd, "_raise", lambda *a: None)     # as if blocked in C: the handler never raises
    with wd:
        time.sleep(0.6)
    assert seen == [("test.hung", pytest.approx(0.2))]


def test_a_killed_run_is_rebuilt_from_its_records(tmp_path, capsys):
    """kill -9 after some measurements: `hwprobe report DIR` rebuilds a partial profile from the lines."""
    suite = _suite(tmp_path, '[[probes]]\nprobe = "cpu.fma"\nprecisions = ["fp64", "fp32"]\n'
                             '[[probes]]\nprobe = "cpu.stream"\nops = ["triad"]\nmin_bytes_per_array = 1500000000\n')
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "hwprobe", "run", "--device", "cpu", "--suite", suite,
                             "--out", str(out), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 180
    while time.time() < deadline:
        files = list(out.glob(f"*/{MEASUREMENTS}"))
        if files and files[0].read_text().count("\n") >= 3:          # header + 2 records
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run_dir = files[0].parent
    kept = [json.loads(x) for x in files[0].read_text().splitlines()[1:] if x.strip()]
    with open(files[0], "a") as fh:
        fh.write('{"probe": "cpu.stream", "metric": "dram.tr')              # as if killed mid-line
    assert not (run_dir / "profile.json").exists()
    prof = load_profile(run_dir)
    assert prof.partial is True and prof.findings[0]["metric"] == "rebuilt"
    assert "skipped 1 unreadable line" in prof.findings[0]["text"]
    assert {c.metric for u in prof.compute.values() for p in u.values() for c in p.values()} >= {
        m["metric"] for m in kept if m["kind"] == "compute" and m["status"] == "ok"}


def test_resume_measures_only_what_is_missing(tmp_path):
    suite = _suite(tmp_path, '[[probes]]\nprobe = "test.two_then_fail"\nfail = false\n'
                             '[[probes]]\nprobe = "test.interrupt"\n[[probes]]\nprobe = "test.skip"\n')
    first = api.run("cpu", suite, tmp_path / "out")
    assert first.interrupted
    env = json.loads((first.results_dir / "environment.json").read_text())
    assert env["completed"] == ["test.two_then_fail#1"]
    # the interrupting probe is fixed; resume the same directory
    fixed = tmp_path / "fixed.toml"
    fixed.write_text(open(suite).read().replace("test.interrupt", "test.skip"))
    env["suite_path"] = str(fixed)
    (first.results_dir / "environment.json").write_text(json.dumps(env))
    plan = api.resume_plan(first.results_dir)
    second = api.run(plan, resume=first.results_dir)
    metrics = [m.metric for m in second.measurements]
    assert metrics.count("fp64.cpu.test") == 1                     # not measured again
    assert not second.interrupted and "fp64" in second.profile.compute
    assert list(first.results_dir.glob(f"{MEASUREMENTS}.before-resume-*"))    # the old file is kept


def test_a_full_disk_gets_one_line_exit_2_and_the_figures_on_stdout(tmp_path, capsys, monkeypatch):
    from hwprobe import results

    real = results.ResultsWriter.append
    calls = {"n": 0}

    def append(self, m):
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(28, "No space left on device")
        real(self, m)

    monkeypatch.setattr(results.ResultsWriter, "append", append)
    suite = _suite(tmp_path, '[[probes]]\nprobe = "test.two_then_fail"\nfail = false\n')
    code, out, err = _cli(["run", "--device", "cpu", "--suite", suite, "--out", str(tmp_path / "o"), "-q"], capsys)
    assert code == 2
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "No space left on device" in lines[0] and "Traceback" not in err
    figures = json.loads(out)
    assert [m["metric"] for m in figures] == ["fp64.cpu.test", "fp32.cpu.test"]   # the unwritten one too


def _m(value, theory, samples, exec_unit="cuda_core"):
    return Measurement(probe="p", metric="fp32.cuda_core.ffma", kind="compute", value=value, unit="FLOP/s",
                       precision="fp32", exec_unit=exec_unit, path="instruction", samples_s=samples,
                       stats=Stats.of(samples), theory=Theory(at_clock=theory))


def test_contention_from_the_figures_themselves():
    busy = _m(31.6e12, 66.9e12, [0.01] * 10)                     # FFMA at 47% of theory: seen on an H100
    flag_contention(busy)
    assert busy.flags and busy.flags[0].startswith("contended: 47% of theory")
    split = _m(60e12, 66.9e12, [0.010, 0.0101, 0.0102, 0.0100, 0.020, 0.0201, 0.0199])
    flag_contention(split)
    assert split.flags and "split 4/3" in split.flags[0]
    quiet = _m(66e12, 66.9e12, [0.010, 0.0101, 0.0102, 0.0100, 0.0101, 0.0103])
    flag_contention(quiet)
    assert quiet.flags == [] and bimodal(quiet.samples_s) is None
    dp2a = _m(66.8e12, 133.7e12, [0.01] * 5)                        # DP2A runs at half the DP4A peak by design
    dp2a.metric = "int8.cuda_core.dp2a"
    flag_contention(dp2a)
    assert dp2a.flags == []
    lib = _m(381e12, 990e12, [0.01] * 5, exec_unit="tensor_core")  # a library path may sit low for other reasons
    flag_contention(lib)
    assert lib.flags == []


# --- bad files: one line, exit 2, never a traceback -------------------------------------------------------

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=20)


def _mutated_profile(draw_value, key):
    base = json.loads((H200_DEFAULT / "profile.json").read_text())
    base[key] = draw_value
    return base


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=200).map(lambda b: ("bytes", b)),
                      _json.map(lambda j: ("json", j)),
                      st.tuples(st.sampled_from(["schema_version", "device", "compute", "memory", "partial",
                                                 "links", "findings"]), _json).map(lambda kv: ("field", kv))))
def test_fuzzed_profiles_get_one_line_and_exit_2(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("p")
    f = d / "profile.json"
    kind, v = data
    if kind == "bytes":
        f.write_bytes(v)
    elif kind == "json":
        f.write_text(json.dumps(v))
    else:
        f.write_text(json.dumps(_mutated_profile(v[1], v[0])))
    try:
        load_profile(f)
    except InputError as e:
        assert "\n" not in str(e) and str(f) in str(e)
        return
    # what loads must be a real profile (the mutation happened to be valid)
    assert kind == "field"


_toml_value = st.one_of(st.integers(-10, 10), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
                        st.booleans(), st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=5)), max_size=3))


@settings(max_examples=1000, deadline=None)
@given(target=st.sampled_from(["cpu", "gpu", "tpu", 3]), rounds=st.one_of(st.none(), _toml_value),
       probe_name=st.sampled_from(["cpu.fma", "cpu.stream", "gpu.dram", "gpu.fma", "nope", 7]),
       params=st.dictionaries(st.sampled_from(["ops", "llc_multiple", "threads", "precisions", "min_bytes_per_array",
                                               "bogus", "timeout_s"]), _toml_value, max_size=3))
def test_fuzzed_suites_plan_or_fail_in_one_line(target, rounds, probe_name, params):
    from hwprobe import suites

    data = {"target": target, "probes": [{"probe": probe_name, **params}]}
    if rounds is not None:
        data["rounds"] = rounds
    try:
        s = suites.parse(data, "fuzz.toml")
        suites.validate(s)
    except InputError as e:
        assert "\n" not in str(e) and "fuzz.toml" in str(e)


@pytest.mark.parametrize("content", [os.urandom(4096), b"\xff\xfe garbage", b'{"schema_version": 1, "memory": 3}',
                                     b"[1, 2]", b'{"schema_version": 99}', b""])
def test_report_on_a_bad_profile_is_one_line_and_exit_2(tmp_path, capsys, content):
    f = tmp_path / "garbage.json"
    f.write_bytes(content)
    code, out, err = _cli(["report", str(f)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("hwprobe: error:")
    assert "Traceback" not in err
