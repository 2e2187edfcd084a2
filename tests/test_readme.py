"""The README says what is true (issue 23, item 19): its example output is what `hwprobe report` prints for the
committed run it names, and the documented defaults are the code's."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from hwprobe.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_example_block_is_the_named_committed_run():
    m = re.search(r"```\n\$ COLUMNS=(\d+) hwprobe report (\S+) \| head -(\d+)\n(.*?)```", README, re.S)
    assert m, "the README's example names the command that prints it"
    columns, run, lines, block = m.group(1), m.group(2), int(m.group(3)), m.group(4)
    assert (ROOT / run / "profile.json").exists(), f"{run} is committed"
    r = CliRunner().invoke(cli, ["report", str(ROOT / run)], env={"COLUMNS": columns})
    assert r.exit_code == 0, r.output
    printed = [x.rstrip() for x in r.output.splitlines()[:lines]]
    assert block.rstrip("\n").splitlines() == printed, "regenerate the README example with the command it names"


def test_profile_attainable_default_path_is_as_documented():
    import hwprobe

    p = hwprobe.load_profile(ROOT / "profiles" / "h200-sxm" / "2026-11-25-full")
    best = p.attainable(1e9, "fp16") / 1e12
    library = p.attainable(1e9, "fp16", path="library") / 1e12
    assert round(best) == 922 and round(library) == 786
    assert "wgmma` at 922 TFLOP/s" in README and "cuBLASLt reaches\n786" in README


def test_readme_documents_the_models_extra_the_probe_key_and_the_test_time():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "models" in extras and "'.[models]'" in README
    assert 'probe = "gpu.gemm"' in README
    assert "about 6 minutes on 2 cores" in README


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
