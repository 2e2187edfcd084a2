"""hwprobe validate: committed profiles, scaled references, tolerances, per-clock comparison, spec references,
contended references, JUnit and the exit codes."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from hwprobe.cli import main
from hwprobe.device import jetson
from hwprobe.errors import InputError
from hwprobe.fleet import expect, validate
from hwprobe.fleet.records import ceilings_of, load_run, record_of
from tests.refs import H100_DEFAULT, H200_DEFAULT, ROOT
from tests.refs import H100_FULL as H100
from tests.refs import H200_FULL as H200

FIX = ROOT / "tests" / "fixtures" / "jetson"


def load(path: Path) -> dict:
    return json.loads((path / "profile.json").read_text())


def scaled(d: dict, factor: float, keys: set[str] | None = None) -> dict:
    """A copy of a profile dict with ceilings (all, or ``keys``) multiplied by ``factor``."""
    d = copy.deepcopy(d)
    for prec, units in d["compute"].items():
        for unit, paths in units.items():
            for path, c in paths.items():
                if keys is None or f"{prec}.{unit}.{path}" in keys:
                    c["value"] *= factor
                    c["ratio_at_clock"] = None
    for level, lvl in d["memory"].items():
        if lvl.get("bandwidth") and (keys is None or f"{level}.bandwidth" in keys):
            lvl["bandwidth"]["value"] *= factor
            lvl["bandwidth"]["ratio_at_clock"] = None
    return d


def write(d: dict, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "profile.json").write_text(json.dumps(d))
    return where


def cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(map(str, args)))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


# ------------------------------------------------------------------------------------------------ committed profiles

def test_a_run_validates_against_itself_and_its_other_suite(capsys):
    code, out, _ = cli(capsys, "validate", H200, "--against", H200)
    assert code == 0 and "PASSED" in out and "0 failed" in out
    code, out, _ = cli(capsys, "validate", H200_DEFAULT, "--against", H200)
    assert code == 0, out                                  # the default suite's ceilings are within 10% of full
    assert "not measured" in out                            # full has ceilings the default suite does not run


def test_reference_scaled_up_20_percent_fails_and_names_the_ceilings(tmp_path, capsys):
    ref = write(scaled(load(H200), 1.2), tmp_path / "golden")
    code, out, _ = cli(capsys, "validate", H200, "--against", ref, "--json")
    result = json.loads(out)
    assert code == 1 and result["passed"] is False and result["exit_code"] == 1
    failed = {c["key"] for c in result["checks"] if c["status"] == "fail"}
    assert failed == set(ceilings_of(load(H200)))            # every ceiling is 1/1.2 = 83% < 90% of its reference
    dram = next(c for c in result["checks"] if c["key"] == "dram.bandwidth")
    assert dram["ratio"] == pytest.approx(1 / 1.2) and dram["expected"] == pytest.approx(1.2 * dram["measured"])
    code, text, _ = cli(capsys, "validate", H200, "--against", ref)
    assert code == 1 and "FAILED" in text
    for key in ("fp16.tensor_core.library", "dram.bandwidth", "int8.tensor_core.instruction"):
        assert f"FAIL {key}: fail: measured" in text
    assert "nothing the two runs recorded differs" in text   # same board, same software: no recorded cause


def test_tolerance_and_per_ceiling_toml(tmp_path, capsys):
    d = load(H200)
    ref = write(scaled(d, 1.15), tmp_path / "ref")
    assert cli(capsys, "validate", H200, "--against", ref, "--tolerance", "15%")[0] == 0
    assert cli(capsys, "validate", H200, "--against", ref, "--tolerance", "0.1")[0] == 1
    toml = tmp_path / "tol.toml"
    toml.write_text('default = "20%"\n[ceilings]\n"dram.*" = "5%"\n"fp16.tensor_core.*" = "1%"\n')
    code, out, _ = cli(capsys, "validate", H200, "--against", ref, "--tolerance", toml, "--json")
    failed = {c["key"] for c in json.loads(out)["checks"] if c["status"] == "fail"}
    assert code == 1 and failed == {k for k in ceilings_of(d) if k.startswith(("dram.", "fp16.tensor_core."))}
    bad = tmp_path / "bad.toml"
    bad.write_text('default = "150%"\n')
    code, _, err = cli(capsys, "validate", H200, "--against", ref, "--tolerance", bad)
    assert code == 2 and "between 0 and 100%" in err and "Traceback" not in err



def test_a_reference_brings_its_own_tolerance_file(tmp_path, capsys):
    """Without --tolerance, a measured reference's tolerance.toml applies (the committed 2x H200 and H100 references
    widen host_bidir to 15%, from their node kinds' spread); an explicit --tolerance wins over it."""
    own = validate.parse_tolerance(None, str(ROOT / "profiles/h200x2/2026-11-28-acceptance"))
    assert own.source.endswith("tolerance.toml") and own.for_key("host_bidir.bandwidth") == 0.15
    assert own.for_key("dram.bandwidth") == 0.10
    assert validate.parse_tolerance(None, str(H100 / "profile.json")).for_key("host_bidir.bandwidth") == 0.15
    assert validate.parse_tolerance(None, str(H200)).source == "default"
    d = load(H200)
    ref = write(scaled(d, 1.0 / 0.87, {"host_bidir.bandwidth"}), tmp_path / "ref")     # the run reads 13% below
    assert cli(capsys, "validate", H200, "--against", ref)[0] == 1
    (tmp_path / "ref" / "tolerance.toml").write_text('[ceilings]\n"host_bidir.*" = "15%"\n')
    code, out, _ = cli(capsys, "validate", H200, "--against", ref, "--json")
    assert code == 0 and json.loads(out)["tolerance"]["source"].endswith("tolerance.toml")
    assert cli(capsys, "validate", H200, "--against", ref, "--tolerance", "10%")[0] == 1

def test_junit_xml(tmp_path, capsys):
    ref = write(scaled(load(H200_DEFAULT), 1.2, {"dram.bandwidth"}), tmp_path / "ref")
    junit = tmp_path / "out" / "validate.xml"
    junit.parent.mkdir()
    code, _, _ = cli(capsys, "validate", H200_DEFAULT, "--against", ref, "--junit", junit)
    assert code == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1" and suite.get("tests") == str(len(suite.findall("testcase")))
    failed = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["dram.bandwidth"]
    assert "expected" in failed[0].find("failure").get("message")
    assert failed[0].get("classname").startswith("hwprobe.validate.NVIDIA_H200")


# ------------------------------------------------------------------------------------------------ per clock

def test_power_limited_ceiling_with_other_clocks_compares_per_clock(tmp_path):
    """On the H100's default run: a schema-1 profile, whose ceilings record no per_clock (the per-clock figure is
    value / clock_mhz)."""
    d = load(H100_DEFAULT)
    assert d["compute"]["fp16"]["tensor_core"]["library"].get("per_clock") is None
    key = "fp16.tensor_core.library"
    run, ref = copy.deepcopy(d), copy.deepcopy(d)
    c_run, c_ref = run["compute"]["fp16"]["tensor_core"]["library"], ref["compute"]["fp16"]["tensor_core"]["library"]
    c_ref.update(value=c_run["value"] * 1.2, clock_mhz=c_run["clock_mhz"] * 1.2, throttle_reasons=[])
    c_run["throttle_reasons"] = ["sw_power_cap"]
    v = validate.validate(record_of(run, "run"), record_of(ref, "ref"))
    chk = next(c for c in v.checks if c.key == key)
    assert chk.status == "pass" and chk.compared == "per clock" and chk.ratio == pytest.approx(1.0)
    assert any("the rate itself is -16.7%" in n for n in chk.notes)
    assert any("per_clock not recorded on both sides: value / clock_mhz" in n for n in chk.notes)
    # the same gap without a power-limit flag is a plain failure, with the clock as its cause
    c_run["throttle_reasons"] = []
    v = validate.validate(record_of(run, "run"), record_of(ref, "ref"))
    chk = next(c for c in v.checks if c.key == key)
    assert chk.status == "fail" and chk.compared == "rate"
    assert any(c.startswith("lower SM clock:") for c in chk.causes)
    # power-limited but no clock recorded: falls back to the rate and says so
    c_run.update(throttle_reasons=["sw_power_cap"], clock_mhz=None)
    c_ref["clock_mhz"] = None
    chk = next(c for c in validate.validate(record_of(run, "run"), record_of(ref, "ref")).checks if c.key == key)
    assert chk.compared == "rate" and chk.status == "fail"


def test_recorded_per_clock_is_preferred():
    m = validate.CeilingRec("k", 100.0, "FLOP/s", clock_mhz=1000, throttle=["sw_power_cap"], per_clock=2.0e-7)
    r = validate.CeilingRec("k", 200.0, "FLOP/s", clock_mhz=2000, throttle=[], per_clock=1.0e-7)
    c = validate.check_one("k", m, r, 0.1)
    assert c.compared == "per clock" and c.ratio == pytest.approx(2.0) and "per_clock as recorded" in c.notes[0]


# ------------------------------------------------------------------------------------------------ contended

def test_contended_reference_is_refused(tmp_path, capsys):
    d = load(H200_DEFAULT)
    d["environment"]["contended"] = True
    ref = write(d, tmp_path / "busy")
    code, _, err = cli(capsys, "validate", H200_DEFAULT, "--against", ref)
    assert code == 2 and "contended" in err and "Traceback" not in err
    d = load(H200_DEFAULT)
    d["memory"]["dram"]["bandwidth"].setdefault("flags", []).append("contended")
    with pytest.raises(InputError, match="contended"):
        validate.validate(record_of(load(H200_DEFAULT), "run"), record_of(d, "ref"))
    # a contended run is validated, with a note
    run = load(H200_DEFAULT)
    run["environment"]["contended"] = True
    v = validate.validate(record_of(run, "run"), record_of(load(H200_DEFAULT), "ref"))
    assert v.exit_code == 0 and any("other work probably used the GPU" in n for n in v.notes)


# ------------------------------------------------------------------------------------------------ bad input

def test_bad_inputs_exit_2(tmp_path, capsys):
    code, _, err = cli(capsys, "validate", tmp_path / "nope", "--against", H200)
    assert code == 2 and "does not exist" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "profile.json").write_text('{"schema_version": 1, "device": ')
    code, _, err = cli(capsys, "validate", broken, "--against", H200)
    assert code == 2 and "not valid JSON" in err and "broken" in err
    code, _, err = cli(capsys, "validate", H200, "--against", "H201")
    assert code == 2 and "unknown spec 'H201'" in err
    code, _, err = cli(capsys, "validate", H200, "--against", H100, "--expect", "0.9")
    assert code == 2 and "--expect applies to a spec name" in err
    other = write({**load(H200_DEFAULT), "compute": {}, "memory": {}}, tmp_path / "empty")
    code, _, err = cli(capsys, "validate", other, "--against", H200)
    assert code == 2 and "share no ceiling" in err


def test_require_all_fails_on_unmeasured_ceilings():
    run, ref = load_run(H200_DEFAULT, strict=True), load_run(H200, strict=True)
    assert validate.validate(run, ref).exit_code == 0
    v = validate.validate(run, ref, require_all=True)
    assert v.exit_code == 1 and {c.key for c in v.failed} == set(ref.ceilings) - set(run.ceilings)


def test_a_different_device_is_named_as_the_cause(capsys):
    code, out, _ = cli(capsys, "validate", H100, "--against", H200)
    assert code == 1
    assert "different device: NVIDIA H100 80GB HBM3 (H100 SXM) vs NVIDIA H200 (H200 SXM) in the reference" in out
    assert "FAIL dram.bandwidth: fail: measured 3.08 TB/s vs expected 4.43 TB/s" in out


# ------------------------------------------------------------------------------------------------ spec references

def test_spec_reference_with_expect(capsys):
    code, out, _ = cli(capsys, "validate", H200, "--against", "H200 SXM", "--expect", "75%", "--json")
    result = json.loads(out)
    assert result["reference"]["measured"] is False
    from hwprobe import specs

    theory = specs.sku_theory(specs.find("H200")).compute("fp16", "tensor_core").at_max_clock
    chk = next(c for c in result["checks"] if c["key"] == "fp16.tensor_core.library")
    assert chk["expected"] == pytest.approx(0.75 * theory) and chk["status"] == "pass"
    assert code == 1                                       # the 2:4 sparse ceilings fail (per clock 89%, 88%)
    assert {c["key"] for c in result["checks"] if c["status"] == "fail"} <= {
        "fp64.tensor_core.library", "fp32.cuda_core.library", "int8.cuda_core.library", "l2.bandwidth",
        "host_bidir.bandwidth", "host_d2h.bandwidth", "host_h2d.bandwidth", "fp16.tensor_core.library_sparse24",
        "int8.tensor_core.library_sparse24", "fp8.tensor_core.library_sparse24", "tf32.tensor_core.library"}
    assert any("spec-derived" in n for n in result["notes"])


def jetson_run(mode: str, tree: str, factor: float = 1.0) -> dict:
    """A Jetson run as a profile dict: the spec expectation of ``mode`` x ``factor``, with a fixture's readout."""
    from hwprobe import specs

    d = expect.expectation_profile(specs.find("AGX Orin 64GB"), mode_name=mode)
    d = scaled(d, factor)
    d["device"] = {"kind": "gpu", "name": "Orin", "sms": 16, "jetson": jetson.read(FIX / tree).to_dict()}
    d["environment"] = {"host": "orin-01"}
    return d


def test_jetson_in_a_lower_mode_against_the_maxn_expectation_names_the_mode(tmp_path, capsys):
    run = write(jetson_run("MODE_15W", "agx-orin-15w-jp6", 0.98), tmp_path / "orin-15w")
    ref = ROOT / "profiles" / "jetson" / "agx-orin-64gb" / "spec-derived"
    code, out, _ = cli(capsys, "validate", run, "--against", ref)
    assert code == 1
    assert ("likely cause: power mode MODE_15W vs MAXN in the reference (6 vs 16 SMs live, GPU cap 408 vs 1300.5 "
            "MHz, EMC 2133 vs 3199 MHz)") in out
    # against the spec by name, the expectation follows the mode the run recorded
    code, out, _ = cli(capsys, "validate", run, "--against", "AGX Orin 64GB", "--json")
    result = json.loads(out)
    assert code == 0 and result["reference"]["power_mode"] == "MODE_15W"
    # and 20% below that expectation fails with the reference marked as spec-derived
    slow = write(jetson_run("MODE_15W", "agx-orin-15w-jp6", 0.8), tmp_path / "orin-slow")
    code, out, _ = cli(capsys, "validate", slow, "--against", "AGX Orin 64GB")
    assert code == 1 and "the reference is spec-derived (fractions of theory), not measured" in out


# ------------------------------------------------------------------------------------------ committed expectations

def test_committed_jetson_expectations_are_current_and_marked_not_measured(tmp_path):
    from hwprobe.profile_build import load_profile

    fresh = {p.relative_to(tmp_path): json.loads(p.read_text()) for p in expect.write_jetson_references(tmp_path)}
    assert len(fresh) == len(expect.JETSON_REFERENCES)
    for rel, d in fresh.items():
        committed = ROOT / "profiles" / "jetson" / rel
        assert committed.is_file(), rel
        stored = json.loads(committed.read_text())
        assert ceilings_of(stored).keys() == ceilings_of(d).keys(), rel
        for k, c in ceilings_of(d).items():
            assert ceilings_of(stored)[k].value == pytest.approx(c.value), (rel, k)   # regenerate on a spec change
        prof = load_profile(committed)
        assert prof.environment["measured"] is False and prof.device["measured"] is False
        assert all("not measured" in c.notes[0] for units in prof.compute.values() for paths in units.values()
                   for c in paths.values())
    xavier = load_run(ROOT / "profiles" / "jetson" / "agx-xavier" / "spec-derived")
    assert not xavier.measured and "bf16.tensor_core.library" not in xavier.ceilings      # Volta: no BF16/TF32
    assert xavier.ceilings["int8.tensor_core.library"].value == pytest.approx(0.7 * 22.56e12, rel=1e-3)


def test_a_rate_that_meets_the_reference_passes_whatever_the_clock_readings_say():
    """An H200's FP8 library ceiling: +2.3% on the rate, but its sentinel clock read 1837 MHz against the
    reference's 1485 (per clock -17%): the rate decides, the clocks are the shakier figure."""
    m = validate.CeilingRec("k", 1.51e15, "FLOP/s", clock_mhz=1837, throttle=["sw_power_cap"],
                            per_clock=1.51e15 / 1837e6)
    r = validate.CeilingRec("k", 1.476e15, "FLOP/s", clock_mhz=1485, throttle=["sw_power_cap"],
                            per_clock=1.476e15 / 1485e6)
    c = validate.check_one("k", m, r, 0.10)
    assert c.status == "pass" and c.compared == "rate" and c.ratio == pytest.approx(1.51 / 1.476)


# ------------------------------------------------------------------------------------------------ window edges

AB28 = ROOT / "profiles" / "h200-sxm" / "2026-11-29-suite-s28"


def ab28(which: str) -> dict:
    import gzip

    return json.loads(gzip.decompress((AB28 / f"profile-{which}-full.json.gz").read_bytes()))


def test_a_clock_that_fell_inside_the_window_is_named_from_its_sentinel_edges():
    """The twenty-eighth session's same-lease A/B (two real H200 `full` profiles): the new run's FP64 library window
    started at 1965 MHz and ended at 1797 (its record says 1965, the higher edge); the cause names both edges. The
    same fall on both sides, or a rise, is no cause."""
    new, old = record_of(ab28("new"), "new"), record_of(ab28("old"), "old")
    key = "fp64.tensor_core.library"
    assert new.ceilings[key].edges_mhz == (1964.6, 1797.0) and old.ceilings[key].window_fall is None
    chk = next(c for c in validate.validate(new, old, validate.Tolerances(0.01)).checks if c.key == key)
    assert chk.status == "fail"                                                      # -1.8% at 1%, as the A/B read
    assert "the SM clock fell inside this window: 1965 -> 1797 MHz at its edges (-9%; the record's clock is the " \
           "higher edge)" in chk.causes
    assert any(c.startswith("power-limited here") for c in chk.causes)
    from hwprobe.fleet.causes import clock_causes

    m = new.ceilings[key]
    assert not [c for c in clock_causes(m, m) if "fell" in c]                       # both fell alike: no cause
    assert "the SM clock fell in the reference's window" in clock_causes(old.ceilings[key], m, high=True)[0]
    rise = new.ceilings["fp16.tensor_core.library"]                                # 1710 -> 1830: it rose
    assert rise.edges_mhz == (1710.1, 1830.1) and rise.window_fall is None



AB36 = ROOT / "profiles" / "h200-sxm" / "2026-11-29-ab-s36"


def test_a_power_capped_clock_a_little_lower_is_named_with_the_figure_per_clock():
    """The thirty-fifth session's same-lease A/B (two real H200 `full` profiles): FP8 2:4 read -2.0% at 1290 MHz
    against 1305, both at the power limit, clocks under the 3% that makes a lower clock a cause of its own. Per clock
    it is -0.9%: the limiter's clock is half the gap, and the cause says so. BF16's miss (its best path changed, at
    no power limit here) gets no such line, and a clock higher here explains no shortfall."""
    import gzip

    from hwprobe.fleet.causes import capped_clock_causes

    new, old = (record_of(json.loads(gzip.decompress((AB36 / f"profile-{w}-full.json.gz").read_bytes())), w)
                for w in ("new", "old"))
    fails = {c.key: c for c in validate.validate(new, old, validate.Tolerances(0.01)).checks if c.status == "fail"}
    assert set(fails) == {"fp8.tensor_core.library_sparse24", "bf16.tensor_core.library"}    # as the A/B read
    assert fails["fp8.tensor_core.library_sparse24"].causes == [
        "power-limited on both sides, at a lower SM clock here: 1290 vs 1305 MHz (-1.1%); per clock cycle -0.9%, "
        "by rate -2.0%"]
    assert not any("power-limited" in c for c in fails["bf16.tensor_core.library"].causes)
    m, r = new.ceilings["fp8.tensor_core.library_sparse24"], old.ceilings["fp8.tensor_core.library_sparse24"]
    assert capped_clock_causes(r, m) == []                   # the reference side: higher clock, higher rate
    assert capped_clock_causes(m, replace(r, throttle=[])) == []          # the reference not at the limit

AB42 = ROOT / "profiles" / "h200-sxm" / "2026-11-29-ab-s42"


def test_a_ceiling_taken_at_another_size_names_this_runs_point_at_the_references_size():
    """The forty-second session's same-lease A/B (two real H200 `full` profiles): TF32's library ceiling read -3.2%
    (n=4096 here, n=8192 in the reference). This run's n=8192 point read 0.911x the reference's, and the SM clock
    moved inside both windows: the cause names the size, that point and both windows' clocks, where "nothing the two
    runs recorded differs" stood before. A ceiling of the same size, or a point the run lacks, gets no such line."""
    import gzip

    from hwprobe.fleet.causes import size_causes

    new, old = (record_of(json.loads(gzip.decompress((AB42 / f"profile-{w}-full.json.gz").read_bytes())), w)
                for w in ("new", "old"))
    fails = {c.key: c for c in validate.validate(new, old, validate.Tolerances(0.01)).checks if c.status == "fail"}
    assert set(fails) == {"tf32.tensor_core.library"}                                 # as the A/B read
    assert fails["tf32.tensor_core.library"].causes == [
        "the best size differs: n=4096 here, n=8192 in the reference; this run's n=8192 point read 378 TFLOP/s "
        "(0.911x), and the SM clock moved inside that window (1560 and 1977 MHz at its edges), as in the reference's "
        "(1515 and 1980 MHz): a window's median depends on where in it the clock moved"]
    m, r = new.ceilings["tf32.tensor_core.library"], old.ceilings["tf32.tensor_core.library"]
    assert (m.size, r.size, r.source["metric"]) == (4096, 8192, "tf32.tensor_core.cublas.n8192")
    assert size_causes(r, r) == []                                                    # same size: no line
    assert size_causes(m, replace(r, candidates=[])) == []                            # no sizes recorded
    assert size_causes(replace(m, candidates=[m.source]), r) == [                      # no point at the reference's
        "the best size differs: n=4096 here, n=8192 in the reference"]


def test_the_ceilings_table_names_the_windows_whose_clock_moved():
    """Under the compute table (a line, not a column: the table stays within 160 terminal columns and 1400 px)."""
    import io

    from rich.console import Console

    from hwprobe.profile import Profile, migrate
    from hwprobe.report import terminal
    from hwprobe.report.tables import compute_table, edges_line

    p = Profile.from_dict(migrate(ab28("new")))
    t = compute_table(p)
    rows = {(r["precision"], r["path"]): r for r in t.rows}
    assert rows[("fp64", "library")]["_edges"] == "1965 -> 1797" and rows[("fp64", "library")]["clock"] == 1964.6
    assert rows[("fp16", "library")]["_edges"] == "1710 -> 1830"
    assert rows[("bf16", "library")]["_edges"] is None                            # 1965 -> 1965: within 3%
    assert rows[("fp64", "instr")]["_edges"] is None                              # a kernel's own clock: no edges
    line = edges_line(t)
    assert "fp64 tensor library 1965 -> 1797, " in line and line in t.note and line.endswith(" MHz")
    buf = io.StringIO()
    terminal.render(p, Console(file=buf, width=120, color_system=None))
    assert "fp64 tensor library 1965 -> 1797" in " ".join(buf.getvalue().split())


def test_a_short_host_link_names_the_other_copies_and_the_pcie_link_it_ran_on(capsys):
    """The forty-second session's one-H200 gate (a real acceptance run): both ways read 87.4 GB/s against the
    reference's 102 with every host copy low and the link at Gen5 x16 of Gen5 x16; the acceptance view prints the
    cause under the failure, where "nothing the two runs recorded differs: suspect cooling" stood. A link that
    trained below its maximum, or differs from the reference's, is named as such."""
    from hwprobe.fleet.causes import host_link_causes
    from hwprobe.health import HealthVerdict

    run = AB42 / "acceptance-fail"
    code, out, _ = cli(capsys, "validate", run, "--against", H200)
    text = " ".join(out.split())
    assert code == 1 and "FAIL vm: rank0: host_bidir.bandwidth: fail: measured 87.4 GB/s vs expected 102 GB/s" in text
    assert ("likely cause: PCIe link Gen5 x16 of Gen5 x16 (health): at its full width and speed the link is not the "
            "limit; host memory, CPU load or where the host placed the copy is the likely one; this run's other host "
            "copies against the reference: host to device 51.4 GB/s (0.93x), device to host 55 GB/s (0.99x)") in text
    rec, ref = load_run(run), load_run(H200)
    assert host_link_causes(rec, ref, "dram.bandwidth") == []                          # not a host link
    slow = HealthVerdict("pcie", "warn", "Gen4 x16 of Gen5 x16",
                         {"gen_now": 4, "width_now": 16, "gen_max": 5, "width_max": 16}, "GPU 0")
    rec.health = [{"params": {"health": slow.to_dict()}}]
    assert host_link_causes(rec, ref, "host_bidir.bandwidth")[0].startswith("PCIe link Gen4 x16 of Gen5 x16 (health); ")
    ref.health = [{"params": {"health": {**slow.to_dict(), "reason": "Gen5 x16 of Gen5 x16"}}}]
    assert host_link_causes(rec, ref, "host_bidir.bandwidth")[0].startswith(
        "PCIe link Gen4 x16 of Gen5 x16 here, Gen5 x16 of Gen5 x16 in the reference; ")
