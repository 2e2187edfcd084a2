"""The pytest plugin, run with pytester: machine_info gets the profile's identity, the fixture's extra_info the
achieved rate, intensity, attainable rate and % of the measured roof."""

import json
from importlib import metadata

import pytest

pytest.importorskip("pytest_benchmark")

from hwprobe import roofline  # noqa: E402
from hwprobe.profile_build import load_profile  # noqa: E402
from tests.refs import H200_FULL  # noqa: E402

pytest_plugins = ["pytester"]
H200 = str(H200_FULL / "profile.json")

BENCH = """
import time

def work():
    time.sleep(0.002)

def test_memory_bound(benchmark, hwprobe_roofline):
    hwprobe_roofline(ops=1e6, bytes=4e6, precision="FP16", unit="cuda_core")
    benchmark.pedantic(work, rounds=3, iterations=1)

def test_compute_bound(benchmark, hwprobe_roofline):
    benchmark.pedantic(work, rounds=3, iterations=1)
    hwprobe_roofline(ops=2e12, bytes=1e6, precision="fp16", unit="tensor_core", path="library")
"""


def test_registered_as_pytest11_entry_point():
    eps = [e for e in metadata.entry_points(group="pytest11") if e.name == "hwprobe"]
    assert eps and eps[0].value == "hwprobe.pytest_plugin"


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """The inner pytest is a plain run: under xdist it would inherit the worker's variables, and pytest-benchmark
    then disables its benchmarks (no stats, no JSON)."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def _run(pytester, *args):
    pytester.makepyfile(test_bench=BENCH)
    out = pytester.path / "bench.json"
    res = pytester.runpytest_subprocess(f"--benchmark-json={out}", "-p", "no:cacheprovider", *args)
    return res, (json.loads(out.read_text()) if out.exists() else None)


def test_extra_info_against_the_measured_roof(pytester):
    res, data = _run(pytester, "--hwprobe-profile", H200)
    res.assert_outcomes(passed=2)
    prof = load_profile(H200)
    hw = data["machine_info"]["hwprobe"]
    assert hw["device"] == "NVIDIA H200" and hw["profile"] == H200 and hw["profile_created_utc"] == prof.created_utc
    b = {x["name"]: x for x in data["benchmarks"]}
    mem = b["test_memory_bound"]["extra_info"]
    median = b["test_memory_bound"]["stats"]["median"]
    assert mem["hwprobe_intensity"] == pytest.approx(0.25)
    assert mem["hwprobe_achieved_ops_per_s"] == pytest.approx(1e6 / median)
    assert mem["hwprobe_attainable_ops_per_s"] == pytest.approx(0.25 * roofline.bandwidth(prof))
    assert mem["hwprobe_pct_of_roof"] == pytest.approx(100 * (1e6 / median) / (0.25 * roofline.bandwidth(prof)))
    assert mem["hwprobe_bound"] == "memory" and mem["hwprobe_precision"] == "fp16"
    comp = b["test_compute_bound"]["extra_info"]                # declared after the benchmark ran: also fine
    peak = roofline.peak(prof, "fp16", "tensor_core", "library")
    assert comp["hwprobe_attainable_ops_per_s"] == pytest.approx(peak.value) and comp["hwprobe_bound"] == "compute"
    assert peak.metric in comp["hwprobe_ceiling"]
    res.stdout.fnmatch_lines(["*hwprobe: benchmarks on the measured roofline*", "*test_memory_bound*% of*"])


def test_without_a_profile_only_the_achieved_rate(pytester):
    res, data = _run(pytester)
    res.assert_outcomes(passed=2)
    assert "hwprobe" not in data["machine_info"]
    info = data["benchmarks"][0]["extra_info"]
    assert "hwprobe_achieved_ops_per_s" in info and "hwprobe_attainable_ops_per_s" not in info
    assert "no --hwprobe-profile" in info["hwprobe_note"]


def test_bad_profile_is_a_usage_error(pytester, tmp_path):
    res, _ = _run(pytester, "--hwprobe-profile", str(tmp_path / "none.json"))
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--hwprobe-profile*does not exist*"])


def test_bad_declaration_fails_the_test(pytester):
    pytester.makepyfile(test_bad="""
def test_x(benchmark, hwprobe_roofline):
    hwprobe_roofline(ops=-1, bytes=10, precision="fp16")
""")
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*ops must be a positive number*"])


def test_precision_the_profile_lacks(pytester):
    pytester.makepyfile(test_fp4="""
def test_x(benchmark, hwprobe_roofline):
    hwprobe_roofline(ops=1e6, bytes=10, precision="int4", unit="tensor_core")
    benchmark.pedantic(lambda: None, rounds=2)
""")
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hwprobe-profile", H200)
    res.assert_outcomes(passed=1, errors=1)
    res.stdout.fnmatch_lines(["*no measured int4 ceiling*"])
