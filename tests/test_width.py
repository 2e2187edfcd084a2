"""Width (issue 23, item 15): piped output honours $COLUMNS; at 80 columns every line fits, no cell is cut
("…"), and a table that leaves columns out says which and how to see them (--wide)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hwprobe.cli import cli
from tests import refs
from tests.refs import ROOT

H200 = str(refs.H200_FULL)
H100 = str(refs.H100_FULL)
H200_OTHER = str(refs.H200_DEFAULT)         # a second H200 run, of another suite
NSYS = str(ROOT / "tests" / "data" / "times" / "nsys_cuda_gpu_kern_sum.csv")

COMMANDS = {
    "report": ["report", H200],
    "report-multigpu": ["report", str(ROOT / "profiles" / "h200x2" / "2026-11-26-multigpu" / "results-local")],
    "analyze": ["analyze", "resnet50", "--profile", H200],
    "analyze-times": ["analyze", "resnet50", "--profile", H200, "--precision", "fp16", "--times", NSYS],
    "analyze-csv": ["analyze", str(ROOT / "tests" / "data" / "tiny_layers.csv"), "--spec", "H100 SXM"],
    "validate-spec": ["validate", H200, "--against", "H200 SXM"],
    "validate-run": ["validate", H200, "--against", H200_OTHER],
    "compare": ["compare", H200, H100, H200_OTHER],
    "classify": ["classify", "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute",
                 "h884gemm", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"],
    "analyze-times-only": ["analyze", "--profile", H200, "--times", NSYS],
    "list-probes": ["list", "probes"],
    "list-suites": ["list", "suites"],
    "list-models": ["list", "models"],
    "specs-h200": ["specs", "H200 SXM"],
    "specs-orin": ["specs", "AGX Orin 64GB"],
    "specs-cpu": ["specs", "--device", "cpu"],
}


def run(argv, columns: str | None):
    env = {"COLUMNS": columns} if columns else {"COLUMNS": ""}
    r = CliRunner().invoke(cli, argv, env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_fits_80_columns_without_cut_cells(name):
    out = run(COMMANDS[name], "80")
    longest = max(out.splitlines(), key=len)
    assert len(longest) <= 80, f"{name}: {len(longest)} columns: {longest!r}"
    assert "…" not in out, name


def test_columns_left_out_at_80_are_named_with_the_way_to_see_them():
    for argv in (COMMANDS["analyze"], COMMANDS["compare"], COMMANDS["report"]):
        narrow = run(argv, "80")
        assert "more columns (" in narrow and "--wide" in narrow, argv
        wide = run(argv + ["--wide"], "80")
        assert "more columns (" not in wide
        assert max(len(x) for x in wide.splitlines()) > 80          # --wide really is wider


def test_the_analyze_layer_table_keeps_whole_layer_names_at_80():
    out = run(COMMANDS["analyze"], "80")
    for name in ("conv1.conv", "layer1.0.2.conv", "layer2.0.downsample.conv"):
        assert name in out
    assert "bound" in out and "time" in out


def test_piped_output_honours_columns_and_stays_wide_without_it():
    at_120 = run(COMMANDS["report"], "120")
    assert max(len(x) for x in at_120.splitlines()) <= 120
    unset = run(COMMANDS["report"], None)
    assert max(len(x) for x in unset.splitlines()) > 120            # logs keep every column


def test_jetson_mode_table_names_the_columns_it_leaves_out():
    out = run(COMMANDS["specs-orin"], "80")
    assert "power modes" in out and "MODE_15W" in out
    assert "more columns (" in out and "--wide" in out
    wide = run(COMMANDS["specs-orin"] + ["--wide"], "80")
    assert "int8.tensor_core" in wide.split("power modes")[1]


def test_piped_tables_are_as_wide_in_bytes_as_in_columns():
    """Piped output rules its tables with '-', not box-drawing characters (3 bytes each): a width check that counts
    bytes (awk length, cut -c) sees the same 80 columns a terminal shows."""
    import os
    import subprocess
    import sys

    for args in (["report", H200], ["analyze", "llama-3-8b", "--profile", str(refs.H200_PREDICT)]):
        r = subprocess.run([sys.executable, "-m", "hwprobe", *args], capture_output=True, timeout=120,
                           env={**os.environ, "COLUMNS": "80"})
        assert r.returncode == 0, r.stderr
        wide = [line for line in r.stdout.splitlines() if len(line) > 80]
        assert not wide, (args[0], wide[:3])


def _body(out: str) -> tuple[str, list[str]]:
    """The header line of the first table in ``out`` and the lines under its rule."""
    lines = out.splitlines()
    rule = next(i for i, x in enumerate(lines) if x.startswith("----"))
    return lines[rule - 1], lines[rule + 1:]


def test_kernel_names_are_shortened_never_wrapped_mid_word():
    """Issue 35 item 15: at 80 columns the times-only view and classify wrapped kernel names mid-word into 14-17
    character columns. Each name now takes one line, whole or visibly shortened ('..'), said, and --wide shows
    it whole."""
    from hwprobe.analysis.classify import short_name
    from hwprobe.analysis.kernelview import kernel_view
    from hwprobe.analysis.timings import parse

    names = [r.name for r in kernel_view([parse(NSYS)]).rows]
    out = run(COMMANDS["analyze-times-only"], "80")
    header, body = _body(out)
    at = header.index("kernel")
    cells = [x[at:].strip() for x in body[:len(names)]]
    assert cells == [short_name(n, len(c)) for n, c in zip(names, cells, strict=True)]
    assert min(map(len, cells)) >= 20 and any(c.endswith("..") for c in cells)
    assert body[len(names)].startswith("kernel names shortened to fit") and "--wide" in body[len(names)]
    wide = run(COMMANDS["analyze-times-only"] + ["--wide"], "80")
    assert all(any(x.rstrip().endswith(n) for x in wide.splitlines()) for n in names)

    names = COMMANDS["classify"][1:]
    out = run(COMMANDS["classify"], "80")
    header, body = _body(out)
    rows = [x for x in body if x[:1] not in (" ", "") and not x.startswith(("more columns", "kernel names"))]
    assert [x.split()[0] for x in rows] == [short_name(n, len(x.split()[0])) for n, x in zip(names, rows, strict=True)]
    continued = [x for x in body if x.startswith(" ")]
    assert continued and all(len(x) - len(x.lstrip()) >= header.index("why") for x in continued)   # only 'why' wraps
    assert min(len(x.split()[0]) for x in rows if x.split()[0].endswith("..")) >= 20
    wide = run(COMMANDS["classify"] + ["--wide"], "80")
    assert all(any(x.startswith(n + " ") for x in wide.splitlines()) for n in names)
