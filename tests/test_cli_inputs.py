"""Bad inputs and outputs are one line and exit 2, checked before any work is done (issue 23, items 13-14):
never exit 1 (the code for "validation failed") with a traceback, never a file silently not written."""

from __future__ import annotations

import json
import shutil

import pytest

from hwprobe.cli import main
from tests.refs import H100_FULL as H100
from tests.refs import H200_FULL as H200
from tests.refs import PROFILES


def cli(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def one_line(code, out, err) -> str:
    assert code == 2, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("hwprobe: error: "), err
    return lines[0]


def test_validate_expect_zero_is_refused(capsys):
    code, out, err = cli(["validate", H200, "--against", "H200 SXM", "--expect", "0"], capsys)
    assert "--expect '0' must be above 0" in one_line(code, out, err)
    assert out == ""


def test_validate_junit_into_a_missing_folder_makes_it(tmp_path, capsys):
    xml = tmp_path / "reports" / "ci" / "validate.xml"
    code, out, err = cli(["validate", H200, "--against", "H200 SXM", "--junit", xml], capsys)
    assert code in (0, 1)
    assert xml.read_text().lstrip().startswith("<?xml") and "<testsuite" in xml.read_text()
    assert f"wrote {xml} (made the folder {tmp_path / 'reports'})" in err    # what it wrote, and where, is said


def test_validate_json_with_junit_keeps_stdout_json_and_names_the_file(tmp_path, capsys):
    xml = tmp_path / "v.xml"
    code, out, err = cli(["validate", H200, "--against", "H200 SXM", "--junit", xml, "--json"], capsys)
    assert code in (0, 1) and json.loads(out)
    assert err.strip() == f"wrote {xml}"


def test_validate_junit_that_cannot_be_written_fails_before_the_table(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")                      # a file where the folder should be: the folder cannot be made
    code, out, err = cli(["validate", H200, "--against", "H200 SXM", "--junit", blocker / "v.xml"], capsys)
    assert "--junit" in one_line(code, out, err)
    assert out == ""                            # nothing printed, nothing lost


@pytest.mark.parametrize("argv", [
    ["analyze", "resnet50", "--profile", H200, "--plot", "{tmp}/out.txt"],
    ["compare", H200, H100, "--plot", "{tmp}/out.txt"],
])
def test_plot_with_a_bad_suffix_is_refused(tmp_path, capsys, argv):
    argv = [str(a).replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = cli(argv, capsys)
    assert "must end in .png, .svg or .pdf" in one_line(code, out, err)
    assert not (tmp_path / "out.txt").exists()


def test_report_json_with_html_is_refused(tmp_path, capsys):
    code, out, err = cli(["report", H200, "--json", "--html", tmp_path / "r.html"], capsys)
    assert "does not combine" in one_line(code, out, err)
    assert out == ""


def test_report_html_into_a_new_folder(tmp_path, capsys):
    html = tmp_path / "new" / "r.html"
    code, out, err = cli(["report", H200, "--html", html], capsys)
    assert code is None or code == 0
    assert html.read_text().startswith("<!DOCTYPE html>") or "<html" in html.read_text()[:200]


def test_plot_out_txt_makes_no_folder(tmp_path, capsys):
    target = tmp_path / "out.txt"
    code, out, err = cli(["plot", H200, "-o", target, "--kind", "roofline"], capsys)
    assert "-o" in one_line(code, out, err)
    assert not target.exists()


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("command", [["report"], ["validate", "--against", str(H200)], ["export", "-f", "json"]])
def test_non_finite_numbers_in_a_profile_are_refused(tmp_path, capsys, token, command):
    d = json.loads((H200 / "profile.json").read_text())
    text = json.dumps(d, indent=1)
    peak = d["compute"]["fp64"]["cuda_core"]["instruction"]["value"]
    assert f'"value": {json.dumps(peak)}' in text
    bad = tmp_path / "profile.json"
    bad.write_text(text.replace(f'"value": {json.dumps(peak)}', f'"value": {token}', 1))
    code, out, err = cli([command[0], bad, *command[1:]], capsys)
    line = one_line(code, out, err)
    assert token.lstrip("-") in line and "not a JSON number" in line
    assert "nan%" not in out


@pytest.mark.parametrize("batch", ["1e12", "1000000000000", "0", "-3"])
def test_absurd_batch_sizes_are_refused_with_the_range(capsys, batch):
    code, out, err = cli(["analyze", "resnet50", "--spec", "H200 SXM", "--batch", batch], capsys)
    line = one_line(code, out, err)
    assert "--batch" in line
    if batch.isdigit() and batch != "0":
        assert "1<=x<=1000000" in line


def test_a_profile_with_nan_is_saved_as_valid_json(tmp_path):
    """What hwprobe writes, hwprobe reads: a NaN field is saved as null, never as the bare token NaN."""
    from hwprobe.profile_build import from_measurements
    from tests.helpers import sample_measurements

    ms = sample_measurements()
    ms[0].stats.cv = float("nan")
    ms[0].clocks.power_w = float("inf")
    p = tmp_path / "profile.json"
    from_measurements({"kind": "gpu", "name": "NVIDIA H200"}, ms).save(p)
    found = []
    json.loads(p.read_text(), parse_constant=found.append)
    assert found == []


def test_committed_profiles_hold_no_bare_nan():
    for f in PROFILES.rglob("profile*.json"):
        found = []
        json.loads(f.read_text(), parse_constant=found.append)
        assert found == [], f


def test_export_to_a_missing_folder_is_one_line(tmp_path, capsys):
    shutil.copy(H200 / "profile.json", tmp_path / "profile.json")
    code, out, err = cli(["export", tmp_path / "profile.json", "-f", "json", "-o", tmp_path / "no" / "x.json"],
                         capsys)
    assert "cannot write" in one_line(code, out, err)
