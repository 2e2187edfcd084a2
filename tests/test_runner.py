"""The run loop: measurements appended as they finish, skips and failures recorded, Ctrl-C keeps a partial profile."""

import json

import pandas as pd
import pytest

from hwprobe import api
from hwprobe.errors import InputError, Skip
from hwprobe.judge import judge
from hwprobe.probes import probe
from hwprobe.profile_build import from_measurements, load_profile
from hwprobe.results import read_measurements


@probe(name="test.two_then_fail", target="cpu", family="compute", summary="test", precisions=("fp64", "fp32"))
def _two_then_fail(ctx, precisions=("fp64", "fp32"), fail=True):
    for p in precisions:
        yield ctx.measure(f"{p}.cpu.test", lambda: sum(range(1000)), work=1e3, unit="FLOP/s", kind="compute",
                          precision=p, exec_unit="cpu", path="instruction", check=lambda: None, repeats=3)
    if fail:
        raise RuntimeError("kernel exploded")


@probe(name="test.skip", target="cpu", family="memory", summary="test")
def _skip(ctx):
    raise Skip("needs a second GPU")
    yield  # pragma: no cover


@probe(name="test.interrupt", target="cpu", family="memory", summary="test")
def _interrupt(ctx):
    yield ctx.derived("dram.test", 1e10, unit="B/s", kind="memory", level="dram")
    raise KeyboardInterrupt


@probe(name="test.bad_output", target="cpu", family="compute", summary="test", precisions=("fp32",))
def _bad_output(ctx):
    def check():
        raise AssertionError("element 7: 3.0 != 4.0")

    yield ctx.measure("fp32.cpu.bad", lambda: None, work=1.0, unit="FLOP/s", kind="compute", precision="fp32",
                      exec_unit="cpu", path="instruction", check=check, repeats=3)


def _suite(tmp_path, *probes_):
    body = 'name = "t"\ntarget = "cpu"\n' + "".join(f'[[probes]]\nprobe = "{p}"\n' for p in probes_)
    f = tmp_path / "t.toml"
    f.write_text(body)
    return str(f)


def test_failures_and_skips_do_not_lose_results(tmp_path):
    res = api.run("cpu", _suite(tmp_path, "test.two_then_fail", "test.skip", "test.bad_output"), tmp_path / "out")
    assert res.failed == ["test.two_then_fail"]
    on_disk = read_measurements(res.results_dir)
    assert [m.metric for m in on_disk][:2] == ["fp64.cpu.test", "fp32.cpu.test"]
    assert all(m.verified for m in on_disk[:2])
    prof = load_profile(res.results_dir / "profile.json")
    assert set(prof.compute) == {"fp64", "fp32"}
    assert prof.skipped[0]["reason"] == "needs a second GPU"
    assert "kernel exploded" in prof.errors[0]["error"]
    assert prof.invalid[0]["metric"] == "fp32.cpu.bad"                      # wrong output: never a ceiling
    table = pd.read_csv(res.results_dir / "measurements.csv")
    assert list(table["metric"]) == [m.metric for m in on_disk]
    env = json.loads((res.results_dir / "environment.json").read_text())
    assert env["device"]["kind"] == "cpu" and env["finished"] is True


def test_ctrl_c_writes_a_partial_profile(tmp_path):
    res = api.run("cpu", _suite(tmp_path, "test.interrupt", "test.two_then_fail"), tmp_path / "out")
    assert res.interrupted
    prof = load_profile(res.results_dir)
    assert prof.partial is True
    assert prof.memory["dram"].bandwidth.value == 1e10
    assert "fp64" not in prof.compute                                        # never started


def test_precision_filter(tmp_path):
    suite = _suite(tmp_path, "test.two_then_fail", "test.skip")
    res = api.run("cpu", suite, tmp_path / "out", precisions=("fp32",))
    assert [m.metric for m in res.measurements if m.kind == "compute"] == ["fp32.cpu.test"]
    with pytest.raises(InputError, match="unknown precision fp99"):
        api.plan("cpu", suite, ("fp99",))


def test_bad_suites(tmp_path):
    with pytest.raises(InputError, match="unknown suite 'nosuch'; suites: .*cpu"):
        api.plan("cpu", "nosuch", None)
    with pytest.raises(InputError, match="unknown probe 'no.such'"):
        api.plan("cpu", _suite(tmp_path, "no.such"), None)
    bad = tmp_path / "bad.toml"
    bad.write_text("target = \n")
    with pytest.raises(InputError, match="not valid TOML"):
        api.plan("cpu", str(bad), None)
    bad.write_text('target = "cpu"\n[[probes]]\nprobe = "test.skip"\nsizes = [1]\n')
    with pytest.raises(InputError, match="has no parameter sizes"):
        api.plan("cpu", str(bad), None)
    with pytest.raises(InputError, match="measures the gpu"):
        api.plan("cpu", "default", None)


def test_unwritable_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot write results"):
        api.run("cpu", _suite(tmp_path, "test.skip"), blocker / "sub")


def test_a_swinging_clock_never_yields_a_profile_that_fails_its_schema(tmp_path):
    """NVML's clock can read low while a probe runs fast (it lags); the profile must still validate."""
    from hwprobe.device import GpuInfo
    from hwprobe.measurement import ClockSummary, Measurement
    from hwprobe.profile import validate_dict
    from hwprobe.specs.live import device_theory

    gpu = GpuInfo(index=0, name="NVIDIA H200", cc_major=9, cc_minor=0, sms=132, l2_bytes=60 << 20,
                  mem_bytes=141 << 30, mem_clock_mhz=3201, bus_width_bits=6016, sm_clock_max_mhz=1980)
    theory = device_theory(gpu)
    ms = []
    for value, med, top in ((126e12, 1470, 1900), (57.6e12, 1620, 1620), (33.4e12, 1980, 1980)):
        m = Measurement(probe="t", metric=f"int8.{value}", kind="compute", value=value, unit="OP/s",
                        precision="int8" if value > 1e14 else "fp64", exec_unit="cuda_core" if value > 1e14
                        else "tensor_core", path="library", clocks=ClockSummary(sm_mhz=med, sm_mhz_max=top))
        judge(m, theory)
        ms.append(m)
    assert all(m.valid for m in ms)
    validate_dict(from_measurements(gpu.to_dict(), ms).to_dict())


@probe(name="test.fast_core", target="cpu", family="compute", summary="test", precisions=("fp64",))
def _fast_core(ctx):
    import time

    time.sleep(0.3)
    yield ctx.measure("fp64.cpu.fast", lambda: sum(range(1000)), work=1e3, unit="FLOP/s", kind="compute",
                      precision="fp64", exec_unit="cpu", path="instruction", check=lambda: None, repeats=3,
                      params={"cpu_mhz_around": [99000.0, 99500.0]})


def test_a_cpu_run_says_the_max_clock_its_cores_reached_and_that_it_overran_its_budget(tmp_path, capsys):
    """Issue 35 item 4: the profile's CPU max clock is the highest the cores were timed at (a VM's discovery read
    2300 MHz, its cores ran at 2935), and a run well over its suite's budget says so (46.9 s against 0:30)."""
    from hwprobe.cli import cli
    from hwprobe.report import text as tx

    suite = tmp_path / "b.toml"
    suite.write_text('name = "b"\ntarget = "cpu"\nbudget_s = 0.1\n[[probes]]\nprobe = "test.fast_core"\n')
    with pytest.raises(SystemExit) as e:
        cli.main(args=["run", "--device", "cpu", "--suite", str(suite), "--out", str(tmp_path / "out"), "--quiet"])
    assert e.value.code in (0, None)
    err = capsys.readouterr().err
    assert "note: this run took" in err and "over the suite's budget of 0.1 s" in err
    run = next((tmp_path / "out").iterdir())
    prof = load_profile(run)
    assert prof.device["max_mhz"] == 99500.0
    env = json.loads((run / "environment.json").read_text())
    assert env["cpu_max_mhz"]["measured"] == 99500.0 and env["cpu_max_mhz"]["discovered"] < 99500.0
    rows = dict(tx.provenance(env, prof))
    assert rows["CPU max clock"].startswith("99500 MHz, timed around a window")
    assert env["host_cpu"]["usable"] >= 1 and rows["host CPU"].startswith(env["host_cpu"]["model"])
    assert rows["suite budget"].startswith("took ")
    c = prof.compute["fp64"]["cpu"]["instruction"]
    assert c.theory_at_max_clock == pytest.approx(c.theory_at_clock)


def test_budget_note_only_for_a_notable_overrun():
    from hwprobe.report.text import budget_note

    assert budget_note({"wall_s": 46.9, "budget_s": 30}) == "took 46.9 s, 56% over the suite's budget of 30 s"
    assert budget_note({"wall_s": 36.0, "budget_s": 30}) is None                  # within 25%
    assert budget_note({"wall_s": 46.9}) is None


@probe(name="test.paced", target="cpu", family="memory", summary="test")
def _paced(ctx):
    import time

    for i, pause in enumerate((0.05, 0.15)):
        time.sleep(pause)
        yield ctx.derived(f"test.paced.{i}", 1.0, unit="B", kind="capacity")


def test_each_record_carries_the_wall_time_it_took(tmp_path):
    """Issue 33: per-record wall time (params wall_s) shows where a probe's time goes beyond its samples."""
    res = api.run("cpu", _suite(tmp_path, "test.paced"), tmp_path / "out")
    a, b = read_measurements(res.results_dir)
    assert 0.05 <= a.params["wall_s"] < 0.15 <= b.params["wall_s"] < 0.3
    total = json.loads((res.results_dir / "environment.json").read_text())["probe_seconds"]["test.paced"]
    assert a.params["wall_s"] + b.params["wall_s"] <= total + 0.01


def test_the_settle_before_each_compute_probe_is_kept_apart_from_its_wall_time(tmp_path, monkeypatch):
    """Issue 33: the GPU's settle before a compute probe is outside the probe's wall time (about 1 s before each on an
    H200, 2026-11-27); the environment keeps it per probe so the summary says where the run's time went."""
    from hwprobe.runner import Runner

    state = {"settled": True, "waited_s": 0.25, "temp_c": 40.0, "power_w": 90.0, "sm_mhz": 1980.0, "rule": "test"}
    monkeypatch.setattr(Runner, "_let_settle", lambda self: dict(state))
    res = api.run("cpu", _suite(tmp_path, "test.two_then_fail", "test.paced"), tmp_path / "out")
    env = json.loads((res.results_dir / "environment.json").read_text())
    assert env["settle_seconds"] == {"test.two_then_fail": 0.25}          # compute probes only
    assert env["settle_states"] == {"test.two_then_fail": state}
    assert set(env["probe_seconds"]) == {"test.two_then_fail", "test.paced"}


@probe(name="test.warm_ok", target="cpu", family="compute", summary="test", cool_start=False)
def _warm_ok(ctx):
    yield ctx.derived("test.warm_ok.x", 1.0, unit="FLOP/s", kind="compute")


def test_a_compute_probe_that_needs_no_cool_start_is_not_waited_for(tmp_path, monkeypatch):
    """Issue 33: gpu.gemm_power and gpu.roofline measured alike from a warm card (their modules say where), so the
    runner's settle, which waited its full 6 s before each on an H200, is not taken for them; the others keep it."""
    from hwprobe.runner import Runner

    calls = []
    monkeypatch.setattr(Runner, "_let_settle", lambda self: calls.append(1) or {"settled": True, "waited_s": 1.0})
    res = api.run("cpu", _suite(tmp_path, "test.warm_ok", "test.two_then_fail"), tmp_path / "out")
    env = json.loads((res.results_dir / "environment.json").read_text())
    assert len(calls) == 1 and set(env["settle_states"]) == {"test.two_then_fail"}
    rec = [m for m in read_measurements(res.results_dir) if m.probe == "test.warm_ok"]
    assert rec and "start_state" not in rec[0].params


def test_gemm_power_and_roofline_are_the_compute_probes_without_a_cool_start():
    from hwprobe.probes import registry

    warm = sorted(p.name for p in registry().values()
                  if p.family == "compute" and not p.cool_start and p.name.startswith("gpu."))
    assert warm == ["gpu.gemm_power", "gpu.roofline"]
