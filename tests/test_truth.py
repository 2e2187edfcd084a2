"""Issue 23, "say only what is true": each check reads the committed runs (real H100/H200 records) or a
hand-built case, and the oracle is a number worked out here, never the rule under test re-applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwprobe.probes.compute import mma_clock as mc
from hwprobe.results import records_text
from tests import refs

FULL = {"h100-sxm": refs.H100_FULL, "h200-sxm": refs.H200_FULL}


def _records(run: Path) -> list[dict]:
    return [d for d in map(json.loads, records_text(run).splitlines()) if "probe" in d]


# ---------------------------------------------------------------- 1. mma.sync: the event time is no clock


@pytest.mark.parametrize("gpu", sorted(FULL))
def test_committed_mma_sync_timers_agree_so_no_timer_flag(gpu):
    recs = [r for r in _records(FULL[gpu]) if r["probe"] == "gpu.mma_sync" and r["params"].get("span_s")]
    assert len(recs) >= 6
    multi_wave = 0
    for r in recs:
        span, event = r["params"]["span_s"], r["params"]["event_s"]
        assert abs(event / span - 1) < 0.005                   # the launch overhead: 0.03-0.39% of 10 ms
        assert mc.timer_disagreement([span], [event]) is None
        multi_wave += r["params"]["grid"] > 132                 # 132 SMs: more CTAs than one per SM
    assert multi_wave >= 4      # the records that carried the false flag: 264/528 CTAs on 132 SMs


def test_two_waves_at_full_clock_give_full_share_and_no_flag():
    # 264 CTAs as two 5 ms waves on 132 SMs at 1980 MHz; work = 132 SMs x 4096 FLOP/clk x 1980 MHz x 10 ms
    rows = []
    for i in range(264):
        start = 1_000_000 + (5_000_000 if i >= 132 else 0)
        cyc = 5_000_000 * 1980 // 1000
        rows.append([0, cyc, start, start + 5_000_000, cyc, 5_000_000])
    import numpy as np

    lc = mc.launch_clocks(np.array([rows], dtype=float), [10.003e-3])
    work = 132 * 4096 * 1980e6 * 10e-3
    vd = mc.verdict(lc, work, 1980.0, lambda clk: 132 * 4096 * (clk or 1980.0) * 1e6, ops_per_cta=1.0,
                    ctas_per_sm=1, sms=132)
    assert vd.flags == []
    assert vd.params["pct_at_clock"]["kernel"] == pytest.approx(1.0, abs=1e-3)
    assert lc.busy_share == [pytest.approx(0.5)]


# ---------------------------------------------------------------- 2. no share above 1.03x theory shown as valid


def test_gemm_plot_draws_no_point_above_one_point_oh_three():
    pytest.importorskip("matplotlib")
    from hwprobe.report.plots import gemm
    from hwprobe.report.source import load_run

    for run_dir in FULL.values():
        ser = gemm.series(load_run(run_dir))
        effs = [e for s in ser.values() for pts in s.values() for _, _, e in pts]
        assert len(effs) > 50 and max(effs) <= 1.03, max(effs)


def test_library_row_where_nvml_lags_says_so_not_109_percent():
    from hwprobe.report import tables as tb
    from hwprobe.report.source import load_run

    prof = load_run(FULL["h200-sxm"]).profile
    rows = {(r["precision"], r["path"]): r for r in tb.compute_table(prof).rows}
    c = prof.compute["fp64"]["tensor_core"]["library"]
    # the committed record: 60.24 TFLOP/s with NVML reading 1635 MHz; H200 FP64 tensor theory there is
    # 132 SMs x 256 FLOP/clk x 1635 MHz = 55.25 TFLOP/s: 109.0%, which no hardware does; the sentinel timed 1890 MHz
    assert c.value == pytest.approx(60.24e12, rel=1e-3)
    assert c.value / (132 * 256 * 1635e6) == pytest.approx(1.090, abs=1e-3)
    assert c.params["pct_at"]["nvml"] > 1.03
    assert rows[("fp64", "library")]["pct_nvml"] == "NVML lags"
    for row in rows.values():
        for key in ("pct_clock", "pct_max", "pct_nvml"):
            v = row.get(key)
            assert v is None or isinstance(v, str) or v <= 1.03, (row["precision"], row["path"], key, v)


# ---------------------------------------------------------------- 3. power from the figure's own window


def test_short_window_power_is_not_shown_beside_the_figure():
    from hwprobe.report import tables as tb
    from hwprobe.report.source import load_run

    prof = load_run(FULL["h100-sxm"]).profile
    rows = {(r["precision"], r["path"]): r for r in tb.compute_table(prof).rows}
    # H100 TF32 library 395 TFLOP/s over a window too short for the energy counter; NVML's 1 s average read
    # 124 W (the second before it), not a TF32 GEMM's draw
    assert prof.compute["tf32"]["tensor_core"]["library"].power_w == pytest.approx(123.718)
    assert rows[("tf32", "library")]["power"] is None
    # a window the energy counter timed keeps its power: power x median time / work = J/op
    shown = [r for r in rows.values() if r["power"]]
    assert shown and all(r["energy"] for r in shown)


# ---------------------------------------------------------------- 4. one definition of the ridge point


def test_ridge_table_and_roofline_finding_share_one_definition():
    from hwprobe.probes.compute.roofline import ridge_note
    from hwprobe.report import tables as tb
    from hwprobe.report.source import load_run

    prof = load_run(FULL["h200-sxm"]).profile
    rows = {(r["precision"], r["unit"]): r for r in tb.ridge_table(prof).rows}
    fp16 = rows[("fp16", "CUDA")]
    # H200 by hand: FP16 CUDA-core theory 132 SMs x 256 FMA/clk x 2 x 1980 MHz = 133.8 TFLOP/s; DRAM theory
    # 3201 MHz x 2 x 6016 bit / 8 = 4.814 TB/s -> 27.8 FLOP/B (the roofline finding's theoretical figure)
    assert float(fp16["theory"]) == pytest.approx(132 * 256 * 2 * 1980e6 / (3201e6 * 2 * 6016 / 8), rel=2e-3)
    assert fp16["ridge"].startswith("29.7")                       # 131.6 TFLOP/s measured / 4.43 TB/s measured
    note = ridge_note("fp16", 15.7, 66.6e12, 4.24e12, "FLOP/B", 27.8, "basis")
    assert not note.startswith("measured ridge") and "this kernel's knee 15.7" in note


def test_report_names_the_precision_of_each_roofline_sweep_ridge():
    """Issue 35 item 2: the committed H200 run's finding says "measured ridge 15.5 FLOP/B (roof 66.4 TFLOP/s)
    ... theoretical 27.8" with no precision; it is the FP16 sweep, whose roof is half the table's FP16 CUDA-core
    peak (132). The report tells it again from its numbers, the precision and that peak named."""
    from hwprobe.report import text as tx
    from hwprobe.report.source import load_run

    prof = load_run(FULL["h200-sxm"].parent / "2026-11-26-full").profile
    lines = [i.text for i in tx.finding_items(prof) if "roofline sweep" in i.text]
    assert len(lines) == 4 and not any("measured ridge" in x for x in tx.finding_items(prof) for x in [x.text])
    fp16 = next(x for x in lines if x.startswith("fp16 roofline sweep"))
    assert "knee 15.5 FLOP/B (its roof 66.4 TFLOP/s, 50% of the fp16 CUDA-core peak 132 TFLOP/s" in fp16
    assert "the fp16 CUDA-core ridge, measured peak / measured DRAM bandwidth, is 29.7 FLOP/B" in fp16
    assert "theoretical fp16 CUDA-core ridge" in fp16 and "27.8 FLOP/B (132 SM x 256 FMA/clk/SM" in fp16


# ---------------------------------------------------------------- 9. validate: same SKU, rates beside rates


def test_validate_against_the_spec_of_the_same_part_blames_no_different_device(capsys):
    from hwprobe.cli import main
    from hwprobe.fleet import validate
    from hwprobe.fleet.records import load_run

    run = load_run(FULL["h200-sxm"])
    ref = validate.load_reference("H200 SXM", run, expect=0.99)
    v = validate.validate(run, ref)
    assert len(v.failed) >= 5                        # 99% of theory fails most ceilings: causes are given
    for c in v.failed:
        assert not any("different device" in x for x in c.causes), c.causes
    with pytest.raises(SystemExit):
        main(["validate", str(FULL["h200-sxm"]), "--against", "H200 SXM", "--expect", "0.99"])
    out = capsys.readouterr().out
    assert "FAIL" in out and "different device" not in out and "NVIDIA H200 vs H200 SXM" not in out


def test_validate_rate_column_is_always_a_rate_share(tmp_path, capsys):
    """FP8 library: 1.47 vs 1.93 PFLOP/s is a 76% rate share; a per-clock pass must not print 101.9% there."""
    from hwprobe.fleet.records import CeilingRec
    from hwprobe.fleet.validate import check_one

    m = CeilingRec(key="fp8.tensor_core.library", value=1.47e15, unit="FLOP/s", clock_mhz=1485, per_clock=0.99e6,
                   throttle=["sw_power_cap"])
    r = CeilingRec(key="fp8.tensor_core.library", value=1.93e15, unit="FLOP/s", clock_mhz=1837, per_clock=0.9715e6,
                   throttle=["sw_power_cap"])
    c = check_one(m.key, m, r, 0.10)
    assert c.compared == "per clock" and c.status == "pass"
    assert c.rate_ratio == pytest.approx(1.47 / 1.93)              # 76.2%: what the rate column shows
    assert c.ratio == pytest.approx(0.99 / 0.9715)                 # 101.9%: shown only as "per clock 101.9%"
    from hwprobe.fleet.render import _compared

    assert _compared(c) == "per clock 101.9%"


# ---------------------------------------------------------------- 12. a CPU run against a GPU reference


def test_cpu_run_against_a_gpu_reference_is_refused_in_one_line(tmp_path, capsys):
    from hwprobe.cli import main

    cpu = {"schema_version": 2, "created_utc": "2026-11-26T00:00:00Z", "partial": False, "hwprobe_version": "0",
           "device": {"kind": "cpu", "model": "AMD EPYC", "cores": 2}, "environment": {},
           "compute": {"fp64": {"cpu": {"instruction": {"value": 5e10, "unit": "FLOP/s", "metric": "fp64.cpu.fma",
                                                       "probe": "cpu.fma"}}}},
           "memory": {"dram": {"bandwidth": {"value": 3e10, "unit": "B/s", "metric": "dram.stream.triad",
                                             "probe": "cpu.stream"}}},
           "links": {}, "findings": [], "errors": []}
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "profile.json").write_text(json.dumps(cpu))
    for against in (str(FULL["h200-sxm"]), "H200 SXM"):
        with pytest.raises(SystemExit) as e:
            main(["validate", str(tmp_path / "cpu"), "--against", against])
        err = capsys.readouterr().err.strip()
        assert e.value.code == 2 and len(err.splitlines()) == 1, err
        assert "CPU run" in err and "GPU" in err and "processes" not in err


# ---------------------------------------------------------------- 10. compare --reference across parts


def _scaled_record(d: dict, factor: float, label: str):
    import copy

    from hwprobe.fleet.records import record_of

    d = copy.deepcopy(d)
    for units in d["compute"].values():
        for paths in units.values():
            for c in paths.values():
                c["value"] *= factor
    for lvl in d["memory"].values():
        if lvl.get("bandwidth"):
            lvl["bandwidth"]["value"] *= factor
    return record_of(d, f"/fleet/{label}", label)


def test_compare_reference_of_another_part_says_so_and_outliers_show_the_table_figure(capsys):
    from rich.console import Console

    from hwprobe.fleet import compare
    from hwprobe.fleet.records import load_run
    from hwprobe.fleet.render import render_fleet

    h100 = json.loads((FULL["h100-sxm"] / "profile.json").read_text())
    runs = [_scaled_record(h100, f, f"h100-{i}") for i, f in enumerate((1.0, 1.0, 0.995, 1.003, 0.7))]
    ref = load_run(FULL["h200-sxm"])
    fleet = compare.compare([*runs, ref], reference=ref)
    assert any("the devices differ" in n and "NVIDIA H200" in n for n in fleet.notes), fleet.notes
    low = [o for o in fleet.outliers if o.run == "h100-4"]
    assert low
    for o in low:
        i = list(fleet.table["run"]).index(o.run)
        assert o.normalized == pytest.approx(fleet.normalized[o.key].iat[i])      # the table's own cell
        if o.rule == "reference":
            assert not any("nothing the two runs recorded differs" in c for c in o.causes)
            assert any("different device" in c for c in o.causes), o.causes
    dram = next(o for o in low if o.key == "dram.bandwidth")
    # by hand: 0.7 x the H100's DRAM ceiling over the H200's
    want = 0.7 * h100["memory"]["dram"]["bandwidth"]["value"] / ref.ceilings["dram.bandwidth"].value
    assert dram.normalized == pytest.approx(want, rel=1e-9)
    console = Console(width=400, record=True)
    render_fleet(fleet, console)
    text = console.export_text()
    assert f"{want:.1%}" in text and "70.0% of its group median" in text


# ---------------------------------------------------------------- 12. a rebuilt profile keeps the run's time


def test_rebuilt_profile_keeps_the_runs_creation_time(tmp_path):
    import shutil

    from hwprobe.profile_build import load_profile

    run = tmp_path / "run"
    run.mkdir()
    for name in ("measurements.jsonl.gz", "environment.json"):
        shutil.copy(FULL["h100-sxm"] / name, run / name)
    prof = load_profile(run)                     # no profile.json: rebuilt from the records
    assert prof.partial
    assert prof.created_utc == "2026-11-26T04:47:18Z"       # environment.json's started_utc, typed from the file
    (run / "environment.json").unlink()
    assert load_profile(run).created_utc == ""   # unknown, never today's date


# ---------------------------------------------------------------- 20. causes from what real runs recorded


def test_causes_come_from_what_the_committed_runs_recorded():
    """Not a generator planting the fields the cause finder reads: two committed H200 runs with a second process
    on the GPU (the 'shared' experiments: pid 776 loading the SMs, pid 707 holding 129 GB), against the full run
    of the same card, and the H100 against the H200. The SM hog's run also started warm (51 C, its
    device.nvml.temp_c, against the full run's 35 C): that cause is listed beside the process."""
    from hwprobe.fleet import causes
    from hwprobe.fleet.records import load_run

    ref = load_run(FULL["h200-sxm"])
    smhog = load_run(refs.H200_SHARED_SMHOG)
    memhog = load_run(refs.H200_SHARED_MEMHOG)
    assert (smhog.device["nvml"]["temp_c"], ref.device["nvml"]["temp_c"]) == (51, 35)
    assert causes.explain(smhog, ref, "dram.bandwidth") == [
        "GPU 51 C at the start vs 35 C in the reference (cooling?)",
        "other processes used the GPU during this run: python3 (776)"]
    assert causes.explain(memhog, ref, "dram.bandwidth")[0] == \
        "other processes used the GPU during this run: python3 (707)"
    h100 = load_run(FULL["h100-sxm"])
    got = causes.explain(h100, ref, "dram.bandwidth")
    assert got[0].startswith("different device: NVIDIA H100 80GB HBM3 (H100 SXM) vs NVIDIA H200 (H200 SXM)")
    assert any(c.startswith("different memory size: 79 GiB vs 140 GiB") for c in got), got


# ---------------------------------------------------------------- 8. runs judged under old rules say so


# the SUPERSEDED note of the H200's 2026-11-21 full run, pruned from profiles/ with every other superseded run
OLD_NOTE = """Superseded by 2026-11-25-full on the same kind of card. Its FP8 figures were measured on
nine-valued operands (hwprobe compare flags them at 113-115% of theory), and it was judged under rules since
corrected (issue 23: mma.sync "event clock" flags, NVML's lagging power beside short windows). Kept as history:
take no figure from it.
"""


def test_superseded_runs_say_so_in_report_compare_and_validate(tmp_path, capsys):
    """No kept run is superseded (test_committed_profiles checks that none holds a SUPERSEDED file): the fixture
    is a copy of the H200 default run with the note a pruned run carried."""
    import shutil

    from rich.console import Console

    from hwprobe.cli import main
    from hwprobe.fleet import compare
    from hwprobe.fleet.records import load_run
    from hwprobe.profile_build import load_profile
    from hwprobe.report.terminal import render

    old = tmp_path / "2026-11-21-full"
    shutil.copytree(refs.H200_DEFAULT, old)
    assert not load_profile(old).superseded
    (old / "SUPERSEDED").write_text(OLD_NOTE)
    prof = load_profile(old)
    assert prof.superseded.startswith("Superseded by 2026-11-25-full") and "nine-valued" in prof.superseded
    assert prof.to_dict()["superseded"] == prof.superseded
    assert not load_profile(FULL["h200-sxm"]).superseded                  # the current run is not
    con = Console(width=200, record=True)
    render(prof, console=con)
    assert "SUPERSEDED: Superseded by 2026-11-25-full" in con.export_text()
    rec = load_run(old)
    fleet = compare.compare([rec, load_run(FULL["h200-sxm"])])
    assert any(n.startswith("SUPERSEDED: ") and "nine-valued" in n for n in fleet.notes)
    with pytest.raises(SystemExit):
        main(["validate", str(old), "--against", str(FULL["h200-sxm"])])
    assert "SUPERSEDED run" in capsys.readouterr().out


@pytest.mark.parametrize("gpu,sku", [("h100-sxm", "H100 SXM"), ("h200-sxm", "H200 SXM")])
def test_l2_runs_theory_is_what_todays_judge_gives(gpu, sku):
    """The L2 theory the peer-comparison runs recorded (their memory suite beside gpu-benches, lease 1; the earlier
    L2 runs' SUPERSEDED note said the same of theirs): re-judge the recorded L2 measurement with today's code and
    compare."""
    from hwprobe import specs
    from hwprobe.judge import judge
    from hwprobe.results import read_measurements

    run = {"h100-sxm": refs.H100_L2_GPUBENCHES, "h200-sxm": refs.H200_L2_GPUBENCHES}[gpu] / "lease1" / "memory"
    m = next(x for x in read_measurements(run) if x.metric == "cache.l2.read")
    recorded = m.theory.at_clock
    m.theory, m.flags = None, [f for f in m.flags if not f.startswith("above_")]
    judge(m, specs.sku_theory(specs.find(sku)))
    assert m.theory.at_clock == pytest.approx(recorded) and m.valid
    assert m.params["theory_clock_source"] == "l2_spec" and m.theory.basis.startswith("inferred: ")


# ---------------------------------------------------------------- 6. power-capped library ceilings: both states


def test_power_capped_precisions_settle_and_state_where_they_started():
    from hwprobe.measurement import ClockSummary, Measurement
    from hwprobe.probes.compute import gemm

    def point(prec, metric, value, mhz, temp, throttle, start=None):
        return Measurement(probe="gpu.gemm", metric=metric, kind="sweep", value=value, unit="FLOP/s",
                           precision=prec, params={"start_state": start} if start else {},
                           clocks=ClockSummary(sm_mhz=mhz, temp_c=temp, throttle_reasons=throttle))

    # the committed H100 FP64 top point: 55.6 TFLOP/s at 1695 MHz under sw_power_cap; FP32 was not capped
    sweeps = {"fp64": [point("fp64", "fp64.tensor_core.cublas.n8192", 55.62e12, 1695, 51, ["sw_power_cap"])],
              "fp32": [point("fp32", "fp32.cuda_core.cublas.n8192", 51.6e12, 1980, 45, [])]}
    assert gemm.power_capped(sweeps) == {"fp64"}
    hot = point("fp64", "x", 1, 1695, 54, ["sw_power_cap"], {"temp_c": 52.0, "settled": False})
    assert gemm.start_note(hot) == "started at 52 C (not settled: the GPU was still warm), reached 54 C"
    cool = point("fp64", "x", 1, 1875, 50, ["sw_power_cap"], {"temp_c": 37.0, "settled": True})
    assert gemm.start_note(cool) == "started at 37 C (settled), reached 50 C"


def test_report_shows_no_clock_gap_for_the_retired_event_clock_flag():
    """The committed H100 FP64 mma.sync record (264 CTAs) was flagged by the event clock alone: kernel and NVML
    both read 1980 MHz, so the report's clock check shows nothing for it."""
    from hwprobe.profile import Ceiling
    from hwprobe.report import tables as tb

    rec = next(r for r in _records(FULL["h100-sxm"]) if r["probe"] == "gpu.mma_sync" and r["params"].get("grid") == 264
               and r["precision"] == "fp64")
    assert any("cycles/event time" in f for f in rec["flags"])
    c = Ceiling(value=rec["value"], unit=rec["unit"], metric=rec["metric"], probe=rec["probe"], params=rec["params"],
                flags=rec["flags"])
    assert tb._disagreement(c) is None
    c.params = {**rec["params"], "clocks_mhz": {"kernel": 1800.0, "nvml": 1980.0}}
    assert tb._disagreement(c) == "+10.0%"
