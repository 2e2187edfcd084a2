"""Run progress: time left from the suite's budget then from the pace, one line per finished measurement,
short live lines where the summary repeats a message, nothing with --quiet, plain text off a terminal."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from rich.console import Console

from hwprobe.measurement import Measurement, Theory
from hwprobe.report.progress import Estimate, RunProgress, clock, measurement_line
from hwprobe.suites import Suite, SuiteEntry


def plan(budget=None, n=4, rounds=1, kind="gpu"):
    suite = Suite("t", kind, "", [SuiteEntry(f"p{i}") for i in range(n)], "t.toml", rounds, budget)
    return SimpleNamespace(suite=suite, rounds=rounds, device=SimpleNamespace(kind=kind), notice="",
                           label="GPU 0: Test")


def test_estimate_moves_from_the_budget_to_the_pace():
    e = Estimate(total_s=100.0, probes=4)
    assert e.left(0.0, 0) == 100.0 and e.left(30.0, 0) == 70.0
    assert e.left(50.0, 2) == pytest.approx(0.5 * 50 + 0.5 * 50)       # budget and pace agree
    assert e.left(120.0, 2) == pytest.approx(0.5 * 0 + 0.5 * 120)      # over budget: the pace decides
    assert e.left(10.0, 4) == 0.0
    assert clock(75) == "1:15" and clock(3725) == "1:02:05"


def test_budget_comes_from_the_suite_times_rounds_else_per_probe():
    assert RunProgress(Console(file=io.StringIO()), plan(120, rounds=3)).estimate.total_s == 360
    assert RunProgress(Console(file=io.StringIO()), plan(None, n=5, kind="cpu")).estimate.total_s == 25


def rate(value=66.3e12):
    return Measurement(probe="gpu.fma", metric="fp32.cuda_core.ffma", kind="compute", value=value, unit="FLOP/s",
                       theory=Theory(at_clock=66.9e12, clock_mhz=1980.0))


def test_lines_for_rates_skips_and_findings():
    assert measurement_line(rate(), True) == "fp32.cuda_core.ffma: 66.3 TFLOP/s  (99.1% of 66.9 TFLOP/s @ 1980 MHz)"
    skip = Measurement(probe="gpu.mma_sync", metric="fp8.mma", kind="info", value=0, unit="", status="skipped",
                       reason="no native fp8 mma.sync")
    assert measurement_line(skip, True) == "fp8.mma: skipped (reason in the summary below)"
    assert measurement_line(skip, False) == "fp8.mma: skipped: no native fp8 mma.sync"
    finding = Measurement(probe="gpu.gemm", metric="pitfall", kind="info", value=7, unit="x", notes=["NN is slow"])
    assert "finding" in measurement_line(finding, True) and measurement_line(finding, False) == "pitfall: NN is slow"
    sweep = Measurement(probe="gpu.cache", metric="cache.sweep.x", kind="sweep", value=1, unit="B/s")
    assert measurement_line(sweep, True) is None


def test_plain_lines_off_a_terminal_and_nothing_when_quiet():
    buf = io.StringIO()
    with RunProgress(Console(file=buf, width=200), plan(60)) as p:
        assert not p.live and p._bar is None
        p.on_probe("gpu.fma", 0, 2)
        p.on_measurement(rate())
        p.on_probe("gpu.dram", 1, 2)
    out = buf.getvalue().splitlines()
    assert out[0] == "GPU 0: Test  suite 't' (2 probes, budget 1:00)"
    assert out[1:] == ["[1/2] gpu.fma", "    fp32.cuda_core.ffma: 66.3 TFLOP/s  (99.1% of 66.9 TFLOP/s @ 1980 MHz)",
                       "[2/2] gpu.dram"]
    quiet = io.StringIO()
    with RunProgress(Console(file=quiet), plan(), quiet=True) as p:
        p.on_probe("gpu.fma", 0, 1)
        p.on_measurement(rate())
    assert quiet.getvalue() == ""


def test_live_bar_on_a_terminal_shows_the_probe_and_the_time_left():
    buf = io.StringIO()
    con = Console(file=buf, width=160, force_terminal=True, color_system=None)
    with RunProgress(con, plan(90)) as p:
        assert p.live and p._bar is not None
        p.on_probe("gpu.cache", 0, 4)
        p.on_measurement(rate())
        status = p.status()
        p._bar.refresh()
    assert "elapsed, ~" in status and "left (budget 1:30)" in status
    text = buf.getvalue()
    assert "gpu.cache" in text and "fp32.cuda_core.ffma: 66.3 TFLOP/s" in text and "0/4 probes" in text
