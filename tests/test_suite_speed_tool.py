"""tools/suite_speed.py: the ceiling rule replayed on the committed full runs' raw samples keeps every median within
1% below the fixed-count one (the issue's bound), which nvbench's usual 0.5% would not; the calibration points
interpolation predicts within 2% are found, left out, and the predictor puts them back as judged."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hwprobe.timing import policy
from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[1]
RUNS = [ROOT / "profiles/h200-sxm/2026-11-26-full", ROOT / "profiles/h100-sxm/2026-11-26-full"]


def test_replay_counts_early_stops_and_median_moves():
    mod = load_tool("suite_speed")
    ms = 0.005                                                          # 5 ms samples, the rule's length
    quiet = ("quiet", [ms * x for x in [1.0, 1.0005, 0.9995, 1.0, 1.0002] + [1.0] * 5])
    drifting = ("drifting", [ms * x for x in [1.0, 1.001, 0.999, 1.0, 1.0005] + [1.1] * 5])  # slower after five
    noisy = ("noisy", [ms * x for x in [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.1, 0.9, 1.05, 0.95]])
    r = mod.replay([quiet, drifting, noisy], policy.CEILING)
    assert (r.records, r.early) == (3, 2)
    assert r.saved_s == pytest.approx(sum(quiet[1][5:]) + sum(drifting[1][5:]))
    assert r.best > 0.0 and r.worst_metric == ""        # stopping before the drop reads the faster rate


def test_the_ceiling_rule_moves_no_committed_median_down_by_over_one_percent():
    mod = load_tool("suite_speed")
    streams = mod.streams_of(RUNS, 10)
    assert len(streams) > 200
    r = mod.replay(streams, policy.CEILING)
    assert r.worst > -0.01 and r.early > len(streams) // 3
    loose = mod.replay(streams, dataclasses.replace(policy.CEILING, max_noise=0.005))
    assert loose.worst < -0.01                            # why the target is 0.3%, not 0.5%


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    mod = load_tool("suite_speed")
    assert mod.main(["replay", str(tmp_path)]) == 2
    assert mod.main(["replay", str(RUNS[0]), "--rule", "fast"]) == 2
    assert mod.main(["prune", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("suite_speed: ") for e in err)


def test_costs_split_each_probes_wall_time_into_samples_and_the_rest(capsys):
    mod = load_tool("suite_speed")
    probes, slow = mod.costs(RUNS[0])
    top = probes[0]
    assert top.probe == "gpu.gemm_shapes" and top.wall_s == 129.15 and top.records == 2786
    assert 9.0 < top.samples_s < 9.6                       # 1377 x 2 points of three ~1 ms replays: the rest is setup
    assert slow == []                                     # records from before issue 33 carry no wall_s
    assert mod.main(["costs", str(RUNS[0])]) == 0
    assert "gpu.gemm_shapes" in capsys.readouterr().out


def test_costs_against_an_older_run_sets_each_probe_beside_itself(capsys):
    """The A/B table: every probe of either run, the new run's slowest first, a probe one run lacks shown as '-'."""
    mod = load_tool("suite_speed")
    h200, h100 = mod.costs(RUNS[0])[0], mod.costs(RUNS[1])[0]
    rows = mod.compare(h200, h100)
    assert {r[0] for r in rows} == {c.probe for c in h200} | {c.probe for c in h100}
    assert rows[0] == ("gpu.gemm_shapes", {c.probe: c.wall_s for c in h100}["gpu.gemm_shapes"], 129.15)
    assert [r[2] or 0 for r in rows] == sorted((r[2] or 0 for r in rows), reverse=True)
    only_old = mod.compare(h200[1:], h200)
    assert (h200[0].probe, h200[0].wall_s, None) in only_old
    assert mod.main(["costs", str(RUNS[0]), "--against", str(RUNS[0])]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["probe", "old", "s", "new", "s", "new-old"]
    assert out[-1].split()[-1] == "+0.0" and all(line.split()[-1] == "+0.0" for line in out[1:])
    assert mod.main(["costs", str(RUNS[0]), "--against", str(RUNS[0] / "nothing")]) == 2


def test_costs_show_the_settles_and_the_runs_wall_beside_the_probes(tmp_path):
    """The runner's settles are outside every probe's seconds: on the twenty-second session's one-H200 full run two
    of them hit their 6-s cap, 20 s that no probe row shows (its committed environment)."""
    mod = load_tool("suite_speed")
    env = ROOT / "profiles/h200-sxm/2026-11-28-suite-workers/environment-full-new.json"
    (tmp_path / "environment.json").write_text(env.read_text())
    got = mod.outside_probes(mod.environment(tmp_path))
    assert got["settles"] == pytest.approx(20.02) and got["run wall"] == pytest.approx(311.1)
    assert mod.outside_probes(mod.environment(RUNS[0]))["settles"] == 0.0     # a run from before settles were kept
    assert got["compile waits"] == 0.0                                            # and from before compile waits
    env = {**mod.environment(tmp_path), "compile_wait_seconds": {"gpu.dram": 8.25, "gpu.fma": 0.5}}
    assert mod.outside_probes(env)["compile waits"] == pytest.approx(8.75)



def test_costs_show_each_settle_and_the_rule_it_ended_on():
    """The twenty-third session's A/B run records every settle (``settle_states``): seven compute probes, all settled,
    none before gpu.gemm_power or gpu.roofline (they declare no cool start)."""
    import json

    mod = load_tool("suite_speed")
    env = json.loads((ROOT / "profiles/h200-sxm/2026-11-28-suite-ab5/environment-new-full.json").read_text())
    lines = mod.settle_lines(env)
    assert len(lines) == 7 and all(" settled " in line for line in lines)   # gpu.fma's settle waited 0 s
    assert not any("gemm_power" in line or "roofline" in line for line in lines)
    gemm = next(line for line in lines if line.startswith("gpu.gemm "))
    assert "0.90 s" in gemm and "162.7 W" in gemm and "power <= 1.5x 140 W" in gemm
    assert mod.settle_lines({}) == []                                      # a run from before they were kept


def test_costs_show_each_probes_own_settles(capsys):
    """A probe's own settles (the waits before its points, the steady settles of gpu.sparse and gpu.gemm_power) are
    their own column: in a committed H200 `full` (2026-11-29, d720609) gpu.gemm's held 17.3 of its 43.0 s, eleven
    of them before sizes under the top one. The runner's settle before a probe, which its first records carry as
    their start state, is not the probe's (gpu.mma_sync: none of its own)."""
    mod = load_tool("suite_speed")
    run = ROOT / "profiles/h200-sxm/2026-11-29-suite-s35/run-d720609"
    probes = {c.probe: c for c in mod.costs(run)[0]}
    assert probes["gpu.gemm"].settle_s == pytest.approx(17.3, abs=0.05)
    assert probes["gpu.mma_sync"].settle_s == 0.0 and probes["gpu.wgmma"].settle_s == 0.0
    assert probes["gpu.sparse"].settle_s > 5 and probes["gpu.gemm_power"].settle_s > 5
    assert probes["gpu.torch_kernels"].settle_s == 0.0
    assert mod.main(["costs", str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["probe", "wall", "s", "samples", "s", "compile", "s", "settle", "s", "rest", "s",
                              "records"]
    gemm = next(line.split() for line in out if line.startswith("gpu.gemm "))
    assert gemm[1:6] == ["43.0", "7.7", "0.0", "17.3", "18.0"]
    after = {c.probe: c for c in mod.costs(run.with_name("run-4df8e74"))[0]}     # one settle per capped precision
    assert after["gpu.gemm"].settle_s < probes["gpu.gemm"].settle_s - 6
