"""The README says what is true (issue 23, item 19): its example output is what `hwprobe report` prints for the
committed run it names, and the documented defaults are the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hwprobe.cli import cli
from tests.refs import H200_FULL

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
COMMANDS = DOCS["commands.md"]


EXAMPLE = re.compile(r"```\n\$ COLUMNS=(\d+) hwprobe report (\S+) \| head -(\d+)\n(.*?)```", re.S)


@pytest.mark.parametrize("page", ["README.md", "measuring.md"])
def test_the_example_block_is_the_named_committed_run(page):
    m = EXAMPLE.search(README if page == "README.md" else DOCS[page])
    assert m, f"{page}'s example names the command that prints it"
    columns, run, lines, block = m.group(1), m.group(2), int(m.group(3)), m.group(4)
    assert (ROOT / run / "profile.json").exists(), f"{run} is committed"
    r = CliRunner().invoke(cli, ["report", str(ROOT / run)], env={"COLUMNS": columns})
    assert r.exit_code == 0, r.output
    printed = [x.rstrip() for x in r.output.splitlines()[:lines]]
    assert block.rstrip("\n").splitlines() == printed, f"regenerate {page}'s example with the command it names"


def test_readme_is_a_quick_start_that_links_every_docs_page():
    assert len(README.encode()) < 12_000
    for name in DOCS:
        assert f"(docs/{name})" in README, f"README does not link docs/{name}"
    for link in re.findall(r"\]\((docs/[^)]+)\)", README):
        assert (ROOT / link).exists(), link


def test_profile_attainable_default_path_is_as_documented():
    import hwprobe

    p = hwprobe.load_profile(H200_FULL)
    best = p.attainable(1e9, "fp16") / 1e12
    library = p.attainable(1e9, "fp16", path="library") / 1e12
    assert round(best) == 913 and round(library) == 799
    assert p.compute["fp16"]["tensor_core"]["library"].metric.startswith("fp16.tensor_core.cublas.")
    assert "wgmma` at 913 TFLOP/s" in README and "cuBLAS (`gemmEx`)\nreaches 799" in README


def test_readme_documents_the_models_extra_the_probe_key_and_the_test_time():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "models" in extras and "'.[models]'" in README
    assert 'probe = "gpu.gemm"' in COMMANDS
    assert "about 4 minutes on 2 cores" in README


def test_layer_csv_m_is_one_side_and_a_pixel_count_is_refused(tmp_path):
    """56 for a 56x56 map; 3136 (= 56 x 56) would be priced as a 3136x3136 map and is refused in one line."""
    from hwprobe.errors import InputError
    from hwprobe.models.csvfile import load_csv

    side = tmp_path / "side.csv"
    side.write_text("name,op,m,k,cin,cout,groups\nc,conv,56,3,64,64,1\n")
    layer = load_csv(side, 1).layers[0]
    assert layer.macs == 56 * 56 * 3 * 3 * 64 * 64                      # independent count: pixels x k^2 x cin x cout
    pixels = tmp_path / "pixels.csv"
    pixels.write_text("name,op,m,k,cin,cout,groups\nc,conv,3136,3,64,64,1\n")
    try:
        load_csv(pixels, 1)
    except InputError as e:
        assert "pixel count (56 x 56)" in str(e) and "56 for 56x56" in str(e)
    else:
        raise AssertionError("a pixel count given as m was accepted")
    wide = tmp_path / "wide.csv"
    wide.write_text("name,op,m,k,cin,cout,groups\nc,conv,3136x3136,1,1,1,1\n")
    assert load_csv(wide, 1).layers[0].macs == 3136 * 3136


def test_suite_times_and_contents_agree_between_docs_and_suites():
    """Issue 35 item 17: the docs and `hwprobe list suites` once gave the predict suite ~4 min and about 5 minutes,
    the default suite 15-30 s and under a minute, and `full` without its power and calibration probes."""
    from hwprobe.suites import load

    default, predict, full = (load(n).description for n in ("default", "predict", "full"))
    assert "15-30 s" in default and "`default` (a first look in 15-30 s)" in COMMANDS
    assert "about 5 minutes" in predict and "about 5 minutes" in DOCS["predicting.md"]
    assert "~4 min" not in COMMANDS and "about 5 minutes on an H200 or H100" in COMMANDS
    assert "power" in full and "calibration" in full
