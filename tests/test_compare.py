"""hwprobe compare: synthetic fleets built from a committed profile, with known weak units; inputs, outputs,
exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from hwprobe.cli import main
from hwprobe.errors import InputError
from hwprobe.fleet import causes, compare
from hwprobe.fleet.records import expand, labels_for, load_many, record_of
from hwprobe.fleet.synthetic import make_fleet, write_fleet
from tests.figures import outside_limits, saved_figures
from tests.refs import H100_FULL as H100
from tests.refs import H200_FULL as H200
from tests.refs import ROOT

FAULTS = {3: "power_cap", 11: "thermal", 17: "driver", 22: "memory"}


def base(path: Path = H200) -> dict:
    return json.loads((path / "profile.json").read_text())


def records(profiles: list[dict]):
    return [record_of(d, d["environment"]["host"], d["environment"]["host"]) for d in profiles]


def cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(map(str, args)))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


@pytest.fixture(scope="module")
def fleet30():
    return make_fleet(base(), 30, FAULTS, seed=1)


def test_weak_units_are_found_with_their_causes(fleet30):
    f = compare.compare(records(fleet30))
    flagged = {(o.run, o.key) for o in f.outliers}
    assert {run for run, _ in flagged} == {"node-0003", "node-0011", "node-0017", "node-0022"}
    lib = {k for k in f.keys if ".tensor_core.library" in k and k.split(".")[0] in ("fp16", "bf16", "fp8", "int8")}
    for unit in ("node-0003", "node-0011", "node-0017"):
        assert lib <= {k for run, k in flagged if run == unit}, unit
    assert {k for run, k in flagged if run == "node-0022"} == {"dram.bandwidth"}
    assert all(o.direction == "low" and o.rule == "median/MAD" and o.z < -3.5 for o in f.outliers)
    why = {o.run: " | ".join(o.causes) for o in f.outliers}
    assert "power limit 500 W vs 700 W" in why["node-0003"] and "throttle: sw_power_cap" in why["node-0003"]
    assert "thermal throttling during this ceiling: hw_thermal_slowdown" in why["node-0011"]
    assert "GPU 86 C at the start" in why["node-0011"]
    assert "driver 550.54.15 vs 580.159.04" in why["node-0017"] and "cuBLAS 120400 vs 130100" in why["node-0017"]
    assert why["node-0022"].startswith("nothing the two runs recorded differs")
    typical = {o.typical for o in f.outliers}
    assert not typical & {"node-0003", "node-0011", "node-0017", "node-0022"}


def test_normalized_to_the_median_and_to_a_reference(fleet30):
    recs = records(fleet30)
    f = compare.compare(recs)
    med = f.table["dram.bandwidth"].median()
    assert f.normalized["dram.bandwidth"].tolist() == pytest.approx((f.table["dram.bandwidth"] / med).tolist())
    ref = recs[5]
    g = compare.compare(recs, reference=ref, min_gap=0.05)
    assert g.basis == "reference node-0005"
    assert g.normalized["dram.bandwidth"].iat[5] == pytest.approx(1.0)
    assert ("node-0022", "dram.bandwidth") in {(o.run, o.key) for o in g.outliers}


def test_min_gap_guards_a_tight_fleet():
    fleet = make_fleet(base(), 20, noise=0.0005, seed=2)
    d = fleet[4]["memory"]["dram"]["bandwidth"]
    d["value"] *= 0.97                                  # 3% low: huge robust z in a 0.05%-noise fleet
    assert not [o for o in compare.compare(records(fleet)).outliers if o.key == "dram.bandwidth"]
    hit = compare.compare(records(fleet), min_gap=0.02).outliers
    assert [(o.run, o.key) for o in hit if o.key == "dram.bandwidth"] == [("node-0004", "dram.bandwidth")]


def test_groups_keep_devices_and_power_modes_apart():
    fleet = make_fleet(base(H200), 8, seed=3) + make_fleet(base(H100), 8, seed=4)
    for i, d in enumerate(fleet[8:]):
        d["environment"]["host"] = f"h100-{i}"
    f = compare.compare(records(fleet))
    assert not f.outliers                               # H100s are not weak H200s
    flat = compare.compare(records(fleet), group_by="none", min_gap=0.05)
    assert flat.basis == "the fleet median"
    small = compare.compare(records(fleet[:2]))
    assert not small.outliers and "fewer than 3 runs" in small.notes[0]


def test_cli_outputs_and_exit_codes(tmp_path, capsys, fleet30):
    write_fleet(fleet30, tmp_path / "fleet")
    csv, png = tmp_path / "fleet.csv", tmp_path / "fleet.png"
    with saved_figures() as figs:
        code, out, _ = cli(capsys, "compare", tmp_path / "fleet", "--csv", csv, "--plot", png)
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("OUTLIER node-0003"))
    assert line.startswith("OUTLIER node-0003 (low, vs its group median):") and "fp16 tc lib 6" in out
    assert "likely cause: power limit 500 W vs 700 W" in out
    assert png.stat().st_size > 20_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import pandas as pd

    table = pd.read_csv(csv)
    assert len(table) == 30 and "dram.bandwidth" in table and "dram.bandwidth (norm)" in table
    # the plot draws the table: one column of 30 dots per ceiling (the first 12), each dot a unit's value over the
    # median, the outliers ringed in red and named, every dot inside the axes
    (fig,) = figs
    ax = fig.axes[0]
    assert ax.get_title() == "30 runs, 12 of 30 ceilings, 4 run(s) with outliers"
    assert ax.get_ylabel() == "value / the median of each device group" and not outside_limits(ax).size
    norm = [c for c in table.columns if c.endswith(" (norm)")][:12]
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()][:2] == ["fp16 tc lib", "bf16 tc lib"]
    dots = [c for c in ax.collections if len(c.get_offsets()) == 30]
    rings = [c for c in ax.collections if c.get_facecolor().size == 0 or not c.get_facecolor()[:, 3].any()]
    assert len(dots) == 12 and len(rings) == 12
    for col, d in zip(norm, dots, strict=True):
        xs, ys = np.asarray(d.get_offsets()).T
        assert sorted(ys) == pytest.approx(sorted(table[col]))
        assert (np.abs(xs - np.round(xs.mean())) <= 0.28).all()           # one column per ceiling
    assert sum(len(r.get_offsets()) for r in rings) == len(ax.texts) == 16         # each ringed dot is named
    assert tuple(rings[0].get_edgecolor()[0]) == (1, 0, 0, 1)
    assert {t.get_text() for t in ax.texts} == {"node-0003", "node-0011", "node-0017", "node-0022"}
    code, out, _ = cli(capsys, "compare", str(tmp_path / "fleet" / "*" / "profile.json"), "--json",
                       "--ceilings", "dram.*,fp16.tensor_core.library")
    result = json.loads(out)
    assert code == 1 and result["keys"] == ["fp16.tensor_core.library", "dram.bandwidth"]
    assert len(result["runs"]) == 30 and {o["run"] for o in result["outliers"]} == {
        "node-0003", "node-0011", "node-0017", "node-0022"}
    healthy = make_fleet(base(), 12, seed=5)
    write_fleet(healthy, tmp_path / "healthy")
    code, out, _ = cli(capsys, "compare", tmp_path / "healthy")
    assert code == 0 and "no outliers" in out and "node-0011" in out     # a small fleet prints every run


def test_bad_inputs(tmp_path, capsys):
    code, _, err = cli(capsys, "compare", tmp_path / "none")
    assert code == 2 and "does not exist" in err
    (tmp_path / "empty").mkdir()
    code, _, err = cli(capsys, "compare", tmp_path / "empty")
    assert code == 2 and "no profile.json in or below" in err
    code, _, err = cli(capsys, "compare", str(tmp_path / "nothing-*"))
    assert code == 2 and "no file matches" in err
    bad = tmp_path / "bad" / "run1"
    bad.mkdir(parents=True)
    (bad / "profile.json").write_text("[1, 2]")
    code, _, err = cli(capsys, "compare", tmp_path / "bad")
    assert code == 2 and "not a JSON object" in err and "run1" in err
    code, _, err = cli(capsys, "compare", H200, "--ceilings", "nope.*")
    assert code == 2 and "no ceiling matches nope.*" in err
    code, _, err = cli(capsys, "compare", H200, "--reference", "somewhere")
    assert code == 2 and "neither a path nor the label" in err


def test_inputs_dirs_files_and_labels(tmp_path):
    runs = write_fleet(make_fleet(base(), 3, seed=6), tmp_path / "site-a")
    paths = expand([str(tmp_path / "site-a"), str(runs[0]), str(H200)])
    assert len(paths) == 4 and paths[0].name == "profile.json"          # duplicates dropped, dirs searched
    assert labels_for([Path("/x/a/run/profile.json"), Path("/x/b/run/profile.json")]) == ["a/run", "b/run"]
    recs = load_many([str(tmp_path / "site-a")])
    assert [r.label for r in recs] == ["node-0000", "node-0001", "node-0002"]
    with pytest.raises(InputError, match="does not exist"):
        expand([str(tmp_path / "missing")])


def test_jetson_fleet_groups_by_power_mode():
    from hwprobe import specs
    from hwprobe.device import jetson
    from hwprobe.fleet import expect

    fix = ROOT / "tests" / "fixtures" / "jetson"
    boards = []
    for i, (mode, tree, factor) in enumerate([("MAXN", "agx-orin-maxn-jp5", 1.0)] * 6 + [
            ("MODE_15W", "agx-orin-15w-jp6", 1.0)] * 4 + [("MAXN", "agx-orin-maxn-jp5", 0.8)]):
        d = expect.expectation_profile(specs.find("AGX Orin 64GB"), mode_name=mode)
        d = copy.deepcopy(d)
        for units in d["compute"].values():
            for paths in units.values():
                for c in paths.values():
                    c["value"] *= factor * (1 + 0.002 * i)
        d["memory"]["dram"]["bandwidth"]["value"] *= factor * (1 + 0.002 * i)
        d["device"] = {"kind": "gpu", "name": "Orin", "sms": 16, "jetson": jetson.read(fix / tree).to_dict()}
        d["environment"] = {"host": f"orin-{i:02d}", "measured": True}
        boards.append(d)
    f = compare.compare(records(boards))
    assert {o.run for o in f.outliers} == {"orin-10"}    # the 15 W boards form their own group
    assert set(compare.group_column(f.table, "device")) == {"Jetson AGX Orin 64GB / MAXN",
                                                            "Jetson AGX Orin 64GB / MODE_15W"}


# ---------------------------------------------------------------- issue 35 item 5: what compare says is true


PROFILES = ROOT / "profiles"
JETSONS = sorted(str(p.parent) for p in (PROFILES / "jetson").glob("*/spec-derived/profile.json"))


def test_a_ceiling_no_run_of_a_group_has_is_a_dash_not_nan(capsys):
    """The Jetson Nano and TX2 have no Tensor Cores: their groups' medians read "nan FLOP/s"."""
    code, out, _ = cli(capsys, "compare", *JETSONS, PROFILES / "h200-sxm" / "2026-11-26-full", "--wide")
    assert code == 0 and " nan " not in out and "nan FLOP" not in out
    nano = next(x for x in out.splitlines() if x.startswith("Jetson Nano / MAXN"))
    assert nano.split()[4:6] == ["1", "-"]                           # runs, then fp16 tc lib: none


def test_labels_carry_only_the_parts_that_tell_runs_apart():
    """Two copies of one run in two clones need the clone's name; the other runs do not carry it."""
    paths = [Path("/home/u/main/profiles/h200-sxm/2026-11-26-full/profile.json"),
             Path("/home/u/wt/h35a/profiles/h200-sxm/2026-11-26-full/profile.json"),
             Path("/home/u/wt/h35a/profiles/h100-sxm/2026-11-26-full/profile.json"),
             Path("/home/u/wt/h35a/profiles/jetson/agx-xavier/spec-derived/profile.json"),
             Path("/home/u/wt/h35a/profiles/jetson/jetson-nano/spec-derived/profile.json")]
    assert labels_for(paths) == ["main/profiles/h200-sxm/2026-11-26-full", "h35a/profiles/h200-sxm/2026-11-26-full",
                                 "h100-sxm/2026-11-26-full", "agx-xavier/spec-derived", "jetson-nano/spec-derived"]


def test_a_high_dram_outlier_is_not_blamed_on_a_lower_clock_of_another_kind(capsys):
    """The 2026-11-21 H100 default run's DRAM figure (dram.write, 3.30 TB/s) sits 7% above its group's (dram.triad,
    3.08); the cause finder gave "lower clock 1980 vs 2619 MHz" (the old run's SM clock against the typical run's
    memory clock) for a figure that is high, not low."""
    runs = [PROFILES / "h200-sxm" / d for d in ("2026-11-25-default", "2026-11-25-stability", "2026-11-26-full")]
    runs += [PROFILES / "h100-sxm" / d for d in ("2026-11-21-default", "2026-11-25-stability", "2026-11-26-full")]
    recs = load_many([str(r) for r in runs])
    clocks = {r.label: (r.ceilings["dram.bandwidth"].clock_mhz, causes.clock_kind(r.ceilings["dram.bandwidth"]))
              for r in recs}
    assert clocks["h100-sxm/2026-11-26-full"] == (2619.0, "memory")     # read as the profile reads it
    assert clocks["h100-sxm/2026-11-21-default"] == (1980.0, "SM")       # stored before DRAM had its own clock
    f = compare.compare(recs)
    dram = [o for o in f.outliers if o.key == "dram.bandwidth"]
    assert {o.run for o in dram} == {"h100-sxm/2026-11-21-default"}
    for o in dram:
        assert o.direction == "high"
        assert not any("lower" in c or "MHz" in c for c in o.causes), o.causes
        assert any(c.startswith("the best path differs: dram.write here, dram.triad") for c in o.causes)


def test_clock_causes_compare_one_kind_of_clock_in_the_gap_s_direction():
    from hwprobe.fleet.records import CeilingRec

    old = CeilingRec("dram.bandwidth", 3.3e12, "B/s", "dram.write", clock_mhz=1980.0)
    new = CeilingRec("dram.bandwidth", 3.08e12, "B/s", "dram.triad", clock_mhz=2619.0, clock_source="memory")
    assert causes.clock_causes(old, new) == []                          # SM against memory clock: no cause
    slow = CeilingRec("fp16.tensor_core.library", 6e14, "FLOP/s", clock_mhz=1500.0, throttle=["sw_power_cap"])
    fast = CeilingRec("fp16.tensor_core.library", 8e14, "FLOP/s", clock_mhz=1900.0)
    assert causes.clock_causes(slow, fast) == ["lower SM clock: 1500 vs 1900 MHz (-21%) (throttle: sw_power_cap)"]
    assert causes.clock_causes(slow, fast, high=True) == []             # a lower clock never explains a high one
    assert causes.clock_causes(fast, slow, high=True) == ["higher SM clock: 1900 vs 1500 MHz (+27%)"]


def test_the_text_and_the_plot_show_the_same_ceilings(tmp_path, capsys):
    """The text said "showing 8 of 30 ceilings", the plot's title "12 of 30"."""
    from hwprobe.fleet.render import draw as strip_plot

    runs = [PROFILES / "h200-sxm" / "2026-11-26-full", PROFILES / "h100-sxm" / "2026-11-26-full"]
    code, out, _ = cli(capsys, "compare", *runs)
    f = compare.compare(load_many([str(r) for r in runs]))
    assert len(f.keys) > compare.SHOWN
    assert f"showing {compare.SHOWN} of {len(f.keys)} ceilings, as the plot does" in out
    import matplotlib.pyplot as plt

    titles = []
    real_savefig = plt.Figure.savefig

    def keep_title(fig, *a, **k):
        titles.append(fig.axes[0].get_title())
        return real_savefig(fig, *a, **k)

    plt.Figure.savefig = keep_title
    try:
        strip_plot(f, tmp_path / "c.png")
    finally:
        plt.Figure.savefig = real_savefig
    assert f"{compare.SHOWN} of {len(f.keys)} ceilings" in titles[0]


def _site_with_a_logs_only_folder(tmp_path: Path) -> Path:
    """Two runs with a profile, one killed before it wrote one (its records only), one folder of logs."""
    import shutil

    site = tmp_path / "site"
    for name, src in (("a-run", H200), ("b-run", H100)):
        (site / name).mkdir(parents=True)
        shutil.copy(src / "profile.json", site / name / "profile.json")
    killed = site / "c-killed"
    killed.mkdir()
    from hwprobe.results import records_file

    for f in (records_file(H200), H200 / "environment.json"):      # the committed records are gzipped
        shutil.copy(f, killed / f.name)
    (site / "d-logs").mkdir()
    (site / "d-logs" / "pytest-gpu.log").write_text("collected 0 items\n")
    return site


def test_a_folder_without_runs_is_skipped_and_said_whether_the_shell_or_hwprobe_globs(tmp_path, capsys):
    """Issue 35 item 12: `compare site/*/` (the shell's glob) stopped at a logs-only folder while
    `compare 'site/*/'` skipped it without a word."""
    site = _site_with_a_logs_only_folder(tmp_path)
    shell = sorted(str(p) + "/" for p in site.iterdir())
    results = [cli(capsys, "compare", *shell, "--json"), cli(capsys, "compare", f"{site}/*/", "--json")]
    for code, out, err in results:
        assert code in (0, 1), err
        assert [r["run"] for r in json.loads(out)["runs"]] == ["a-run", "b-run", "c-killed"]
        assert f"skipped {site / 'd-logs'}: no profile.json or measurements.jsonl in or below it" in err
        assert "c-killed: no profile.json; rebuilt from its measurements.jsonl (partial)" in err
    assert results[0][1] == results[1][1]
    code, _, err = cli(capsys, "compare", site / "d-logs")
    assert code == 2 and "no profile.json in or below" in err and err.count("\n") == 1   # nothing left: refused
