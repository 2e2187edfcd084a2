"""Health from sysfs trees (CPU: EDAC, cpufreq, thermal, offline cores; Jetson: trip points, live SMs, clock caps),
the health probes through a real run (verdicts filed as findings), and the runner's end-of-run hook."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hwprobe.health import cpu, from_measurement
from hwprobe.health import jetson as hj
from hwprobe.vocab import Verdict

FIX = Path(__file__).resolve().parent / "fixtures" / "jetson"


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def healthy_host(root: Path) -> Path:
    for c in range(2):
        _write(root, f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_max_freq", "3500000\n")
        _write(root, f"sys/devices/system/cpu/cpu{c}/cpufreq/cpuinfo_max_freq", "3500000\n")
        _write(root, f"sys/devices/system/cpu/cpu{c}/thermal_throttle/core_throttle_count", "0\n")
    _write(root, "sys/devices/system/cpu/offline", "\n")
    _write(root, "sys/devices/system/edac/mc/mc0/ce_count", "4\n")
    _write(root, "sys/devices/system/edac/mc/mc0/ue_count", "0\n")
    _write(root, "sys/devices/virtual/thermal/thermal_zone0/type", "x86_pkg_temp\n")
    _write(root, "sys/devices/virtual/thermal/thermal_zone0/temp", "55000\n")
    _write(root, "sys/devices/virtual/thermal/thermal_zone0/trip_point_0_type", "passive\n")
    _write(root, "sys/devices/virtual/thermal/thermal_zone0/trip_point_0_temp", "95000\n")
    return root


def cpu_verdicts(root: Path) -> dict:
    return {v.check: v for v in cpu.verdicts(cpu.read(root))}


def test_a_healthy_host_passes_every_cpu_check(tmp_path):
    got = cpu_verdicts(healthy_host(tmp_path))
    assert {k: v.verdict for k, v in got.items()} == {"memory": Verdict.PASS, "cpufreq": Verdict.PASS,
                                                      "thermal": Verdict.PASS, "cores": Verdict.PASS}
    assert "4 corrected" in got["memory"].reason


@pytest.mark.parametrize("rel,text,check,verdict,words", [
    ("sys/devices/system/edac/mc/mc0/ue_count", "2\n", "memory", Verdict.FAIL, "2 uncorrected"),
    ("sys/devices/system/cpu/cpu1/cpufreq/scaling_max_freq", "1200000\n", "cpufreq", Verdict.FAIL,
     "cpu1: 1200 of 3500 MHz"),
    ("sys/devices/virtual/thermal/thermal_zone0/temp", "96000\n", "thermal", Verdict.FAIL, "96.0 C >= 95.0 C"),
    ("sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", "12\n", "thermal", Verdict.WARN,
     "12 events"),
    ("sys/devices/system/cpu/offline", "2-3\n", "cores", Verdict.WARN, "CPUs offline: 2-3"),
])
def test_each_unhealthy_host_state_gets_its_verdict(tmp_path, rel, text, check, verdict, words):
    root = healthy_host(tmp_path)
    _write(root, rel, text)
    got = cpu_verdicts(root)
    assert got[check].verdict == verdict and words in got[check].reason, got[check].line()
    assert [k for k, v in got.items() if v.verdict in (Verdict.FAIL, Verdict.WARN)] == [check]


def test_a_bare_vm_is_not_available_never_failed(tmp_path):
    got = cpu_verdicts(tmp_path)
    assert {v.verdict for v in got.values()} == {Verdict.NOT_AVAILABLE}
    assert "edac" in got["memory"].reason.lower()


# --- Jetson ---------------------------------------------------------------------------------------------------------

def _jetson(tmp_path, name="agx-orin-15w-jp6"):
    root = tmp_path / name
    shutil.copytree(FIX / name, root, symlinks=True)
    return root


def _jetson_verdicts(root):
    from hwprobe.device import jetson

    readout = jetson.read(root, use_commands=False).to_dict()
    return {v.check: v for v in hj.verdicts(json.loads(json.dumps(readout)), root)}     # as a profile stores it


def test_jetson_in_its_power_mode_passes_and_without_trip_points_thermal_is_not_available(tmp_path):
    got = _jetson_verdicts(_jetson(tmp_path))
    assert got["live_sms"].verdict == Verdict.PASS
    assert "6 of 16 SMs live (power mode MODE_15W)" in got["live_sms"].reason
    assert got["clock_caps"].verdict == Verdict.PASS
    assert got["thermal"].verdict == Verdict.NOT_AVAILABLE and "no trip point" in got["thermal"].reason


def test_jetson_zone_over_its_trip_point_fails(tmp_path):
    root = _jetson(tmp_path)
    z = "sys/devices/virtual/thermal/thermal_zone1"           # gpu-thermal, 46.9 C in the recording
    _write(root, f"{z}/trip_point_0_type", "active\n")
    _write(root, f"{z}/trip_point_0_temp", "30000\n")         # a fan trip: not a throttling one
    _write(root, f"{z}/trip_point_1_type", "passive\n")
    _write(root, f"{z}/trip_point_1_temp", "45000\n")
    got = _jetson_verdicts(root)
    assert got["thermal"].verdict == Verdict.FAIL and "gpu-thermal 46.9 C >= 45.0 C" in got["thermal"].reason


def test_jetson_fewer_live_sms_or_a_lower_clock_cap_than_the_mode_fails(tmp_path):
    root = _jetson(tmp_path)
    gpu = next(root.glob("sys/devices/platform/bus@0/17000000.gpu"))
    (gpu / "tpc_fs_mask").write_text("0x3\n")                 # 2 TPCs live, the mode leaves 3
    (gpu / "devfreq/17000000.gpu/max_freq").write_text("306000000\n")
    got = _jetson_verdicts(root)
    assert got["live_sms"].verdict == Verdict.FAIL
    assert "4 SMs live, power mode MODE_15W leaves 6" in got["live_sms"].reason
    assert got["clock_caps"].verdict == Verdict.FAIL and "306 MHz < the mode's 408 MHz" in got["clock_caps"].reason


# --- the probes through a run ----------------------------------------------------------------------------------------

def test_cpu_health_probe_files_its_verdicts_as_findings(tmp_path):
    from hwprobe import api

    root = healthy_host(tmp_path / "sys-tree")
    _write(root, "sys/devices/system/edac/mc/mc0/ue_count", "1\n")
    suite = tmp_path / "h.toml"
    suite.write_text(f'target = "cpu"\n[[probes]]\nprobe = "cpu.health"\nroot = "{root}"\n')
    res = api.run("cpu", str(suite), tmp_path / "out", quick=True)
    found = {v.check: v for v in (from_measurement(f) for f in res.profile.findings) if v}
    assert found["memory"].verdict == Verdict.FAIL and found["cpufreq"].verdict == Verdict.PASS
    recs = [json.loads(x) for x in (res.results_dir / "measurements.jsonl").read_text().splitlines()[1:]]
    assert {r["metric"] for r in recs} == {"health.memory", "health.cpufreq", "health.thermal", "health.cores"}
    assert not res.failed                      # a failed verdict is not a failed probe


def test_work_registered_for_the_run_end_runs_after_every_probe(tmp_path):
    from hwprobe import api
    from hwprobe.probes.base import _REGISTRY, probe

    order = []

    @probe(name="test.at_end", target="cpu", family="health", summary="test")
    def _p(ctx, tag: str = "a"):
        order.append(f"probe {tag}")

        def later():
            order.append(f"end {tag}")
            yield ctx.derived(f"test.end.{tag}", 1.0, unit="", kind="info")
        ctx.at_end(later)
        yield ctx.derived(f"test.{tag}", 1.0, unit="", kind="info")

    try:
        suite = tmp_path / "e.toml"
        suite.write_text('target = "cpu"\n[[probes]]\nprobe = "test.at_end"\n[[probes]]\nprobe = "cpu.health"\n'
                         f'root = "{tmp_path}"\n')
        res = api.run("cpu", str(suite), tmp_path / "out", quick=True)
    finally:
        _REGISTRY.pop("test.at_end", None)
    assert order == ["probe a", "end a"]
    metrics = [m.metric for m in res.measurements]
    assert metrics.index("test.end.a") == len(metrics) - 1 and metrics.index("health.cores") < metrics.index(
        "test.end.a")
