"""Words a user can place (issue 23, item 18): no internal document numbers ("002's tables"), no "the seeds'", no
pipe jargon or bare level keys in what the CLI, the report and the plots print; a library's refusal of a size is
a skip for FP8 as for INT8; no committed folder is named after an issue."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from hwprobe.cli import cli
from tests.refs import H200_FULL, ROOT

H200 = str(H200_FULL)
JARGON = re.compile(r"\b00[0-9]'s\b|\b00[0-9] (does|divides)\b|\bthe seeds'|\bseeds' |FMA-pipe-only|\b00[0-9]'s advice")


def out(*argv: str) -> str:
    r = CliRunner().invoke(cli, list(argv), env={"COLUMNS": "200"})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.output


@pytest.mark.parametrize("argv", [
    ("report", H200, "--wide"),
    ("analyze", "--help"), ("classify", "--help"), ("report", "--help"),
    ("analyze", "vgg16", "--convention", "seed"),
    ("analyze", "resnet50", "--convention", "seed"),
    ("analyze", "googlenet", "--convention", "seed"),
    ("analyze", str(ROOT / "tests" / "data" / "tiny_layers.csv"), "--spec", "H100 SXM", "--precision", "int8"),
    ("specs", "H200 SXM"),
])
def test_no_internal_words_in_what_users_read(argv):
    text = out(*argv)
    assert text.strip()
    found = JARGON.findall(text)
    assert not JARGON.search(text), (argv, found)


def test_the_report_names_the_cluster_level_in_words():
    text = out("report", H200, "--wide")
    memory = text.split("Memory ceilings")[1].split("Ridge points")[0]
    assert not re.search(r"^dsm\b", memory, re.M)
    assert "SM to SM (cluster)" in memory


def test_the_readme_has_no_internal_words():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        assert not JARGON.search(page.read_text()), page.name


def test_a_library_refusing_a_size_is_a_skip_for_fp8_as_for_int8():
    """nvmath refuses an FP8 size off a multiple of 16 with a ValueError; cuBLAS refuses an odd INT8 size with
    CUBLAS_STATUS_NOT_SUPPORTED. Both are what the library offers, not a failure of the probe."""
    from hwprobe.probes.base import ProbeContext
    from hwprobe.probes.compute.cublas import failure

    ctx = ProbeContext(target="cpu", device=None, devices=[], sampler=None, probe_name="gpu.gemm_align", quick=True,
                       theory=None, energy_window_s=0.0, log=lambda m: None)
    fp8 = failure(ctx, "align.fp8.4113", "FP8 4113^3 (odd size)",
                  ValueError("M=4113 N=4113 K=4113 must be divisible by 16 for FP8 operations"), precision="fp8")
    int8 = failure(ctx, "align.int8.4105", "cuBLAS int8.tn 4105^3 (odd size)",
                   RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED"), precision="int8")
    crash = failure(ctx, "align.fp8.4096", "FP8 4096^3", RuntimeError("illegal memory access"), precision="fp8")
    assert fp8.status == int8.status == "skipped"
    assert crash.status == "error"


def test_committed_fp8_refusals_are_reported_as_skips(tmp_path):
    """Runs of an older hwprobe (the H200's 2026-11-25 full run, since pruned) filed the FP8 refusals as errors; the
    report files them with the INT8 ones, under Skipped. The kept full run files them as skips already, so the
    fixture is its profile with those entries moved back to errors, as the older hwprobe wrote them."""
    import json

    d = json.loads((H200_FULL / "profile.json").read_text())
    fp8 = [s for s in d["skipped"] if "must be divisible by 16" in s["reason"]]
    assert len(fp8) == 4 and not d["errors"]
    d["skipped"] = [s for s in d["skipped"] if s not in fp8]
    d["errors"] = [{"probe": s["probe"], "metric": s["metric"], "error": s["reason"]} for s in fp8]
    (tmp_path / "profile.json").write_text(json.dumps(d))
    text = out("report", str(tmp_path / "profile.json"), "--wide")
    errors = text.split("Errors")[1] if "\nErrors" in text else ""
    skipped = text.split("Skipped")[1].split("Invalid")[0]
    assert "must be divisible by 16" not in errors
    assert "must be divisible by 16" in skipped and "not supported" in skipped.lower()


def test_no_committed_folder_is_named_after_an_issue():
    named = [p for p in (ROOT / "profiles").rglob("*") if p.is_dir() and re.search(r"issue[-_ ]?\d+", p.name, re.I)]
    assert named == []
