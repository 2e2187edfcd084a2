"""The report: HTML and Markdown of a committed full run hold every section and every plot, work offline and
stay small; terminal tables fit 80 and 120 columns; units follow the precision; each message once."""

from __future__ import annotations

import io
import shutil
import time
from html.parser import HTMLParser

import pytest
from rich.console import Console

from hwprobe.profile import Profile
from hwprobe.profile_build import from_measurements, load_profile
from hwprobe.report import document, gapview, html, markdown, terminal
from hwprobe.report import text as tx
from hwprobe.report.source import load_run
from tests.refs import H100_FULL as H100
from tests.refs import H200_COMPUTE_CLOCKS as COMPUTE_CLOCKS
from tests.refs import H200_FULL as H200

PLOTTED = ("roofline", "gap", "bandwidth", "latency", "gemm", "align", "sparse", "power")


class Page(HTMLParser):
    """What a reader's browser would load: sections, figures with their inline SVG, and any outside reference."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.figures: dict[str, int] = {}
        self.outside: list[str] = []
        self.tags: list[str] = []
        self._figure: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "section":
            self.sections.append(a.get("id", ""))
        if tag == "figure":
            self._figure = a.get("data-kind")
        if tag == "svg" and self._figure:
            self.figures[self._figure] = self.figures.get(self._figure, 0) + 1
        for key in ("src", "href"):
            v = a.get(key) or ""
            if v and not v.startswith("#") and not v.startswith("data:"):
                self.outside.append(f"{tag} {key}={v}")

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None


@pytest.fixture(scope="module")
def h200_html() -> tuple[str, float]:
    t0 = time.perf_counter()
    text = html.render(load_run(H200))
    return text, time.perf_counter() - t0


def test_html_of_a_committed_full_run_has_every_section_and_plot(h200_html):
    text, seconds = h200_html
    page = Page()
    page.feed(text)
    assert page.sections == [sid for sid, _ in document.SECTIONS]
    assert set(page.figures) == set(PLOTTED) and all(n == 1 for n in page.figures.values())
    assert not page.outside, page.outside                      # opens offline: nothing fetched
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert len(text.encode()) < 5e6
    assert seconds < 30, f"HTML took {seconds:.1f} s (target 10 s on a quiet machine)"
    for needle in ("Compute ceilings", "Memory ceilings", "Ridge points", "Gap chain", "power cap", "pJ/op",
                   "theory @max clock", "datasheet", "Skipped", "hwprobe run --device 0 --suite full"):
        assert needle in text, needle


def test_html_of_a_profile_alone_says_what_is_missing(tmp_path):
    shutil.copy(H200 / "profile.json", tmp_path / "profile.json")
    page = Page()
    text = html.render(load_run(tmp_path / "profile.json"))
    page.feed(text)
    assert set(page.figures) == {"roofline", "gap", "latency", "align", "sparse", "power"}
    assert text.count("Not in this run: a profile.json alone holds no") == 2     # bandwidth and GEMM sweeps


def test_markdown_has_the_same_sections_and_its_images_exist(tmp_path):
    out = tmp_path / "r.md"
    text = markdown.render(load_run(H200), out)
    for _, title in document.SECTIONS:
        assert f"## {title}" in text
    images = [line.split("](")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    assert len(images) == len(PLOTTED)
    for rel in images:
        assert (tmp_path / rel).read_text().startswith("<svg")
    assert "| fp16 | tensor | instr | 913 TFLOP/s |" in text


def _terminal(p: Profile, width: int, wide: bool = False, kind: str = "gpu") -> str:
    buf = io.StringIO()
    terminal.render(p, Console(file=buf, width=width, color_system=None), wide=wide, kind=kind)
    return buf.getvalue()


def _table_lines(out: str) -> list[str]:
    """The table rows (not the wrapped prose sections below them)."""
    return out.split("Gap to the datasheet")[0].splitlines()


def test_terminal_tables_fit_80_and_120_columns_without_cut_cells():
    """The full run's compute table has 19 columns (the SM clock's source and the NVML-vs-kernel clock among
    them) and needs 157 to show them all: at 80 and 120 it leaves wide ones out and says so; at 160 it shows
    every one and no such line."""
    p = load_profile(H200)
    narrow = _terminal(p, 80)
    assert max(len(x.rstrip()) for x in _table_lines(narrow)) <= 80 and "…" not in narrow
    assert "measured" in narrow and "SM" in narrow and "throttle" not in narrow.split("more columns")[0]
    assert "more columns (" in narrow and "--wide" in narrow
    mid = _terminal(p, 120)
    assert max(len(x.rstrip()) for x in _table_lines(mid)) <= 120 and "…" not in mid
    assert "@max" in mid and "cycles" in mid and "more columns (throttle, pJ/op, W" in mid
    wide = _terminal(p, 160)
    assert max(len(x.rstrip()) for x in _table_lines(wide)) <= 160 and "…" not in wide
    for header in ("@max", "sheet", "pJ/", "throttle", "cycles", "slope from", "NVML vs kernel", "power cap"):
        assert header in wide, header
    assert "more columns" not in wide
    forced = _terminal(p, 80, wide=True)
    assert "throttle" in forced


def test_units_follow_the_precision():
    out = _terminal(load_profile(H200), 120)
    ridge = out.split("Ridge points")[1].split("Gap to")[0]
    assert "int8       tensor  POP/s" in ridge and "429 OP/B" in ridge and "int32" in ridge
    assert "FLOP/B" not in next(x for x in ridge.splitlines() if x.startswith("int32"))


def test_each_skip_once_and_no_internal_references(tmp_path):
    """No kept run holds a reference to an internal note (profiles written before 2026-11-25 did: the INT8
    alignment finding read "(003: align INT8 channels to 32)"), so the fixture is the full run's profile with its
    finding put back in that older form."""
    p = load_profile(H200)
    out = _terminal(p, 120)
    skipped = out.split("Skipped")[1]
    assert skipped.count("fp8 mma.sync has no native instruction") == 1
    assert "2 measurements" in skipped and "the same at 4113, 4129, 4161" in skipped
    text = (H200 / "profile.json").read_text()
    assert text.count("(align INT8 channels to 32)") == 1
    (tmp_path / "profile.json").write_text(text.replace("(align INT8", "(003: align INT8"))
    flat = " ".join(_terminal(load_profile(tmp_path / "profile.json"), 120).split())
    assert "(003:" not in flat and "seeds 0" not in flat and "; align INT8 channels to 32" in flat


def test_cpu_tables_leave_out_what_a_cpu_does_not_have():
    from hwprobe.measurement import ClockSummary, Measurement, Stats, Theory

    def cpu(metric, value, **kw):
        return Measurement(probe="cpu.x", metric=metric, value=value, samples_s=[0.1], stats=Stats.of([0.1]),
                           clocks=ClockSummary(sm_mhz=3600.0, source="cpufreq"), **kw)

    p = from_measurements({"kind": "cpu", "model": "Test CPU", "cores": 8}, [
        cpu("fp64.cpu.fma", 300e9, kind="compute", unit="FLOP/s", precision="fp64", exec_unit="cpu",
            path="instruction", theory=Theory(at_clock=320e9, at_max_clock=330e9, clock_mhz=3600.0)),
        cpu("dram.stream.triad", 40e9, kind="memory", unit="B/s", level="dram"),
    ])
    out = _terminal(p, 140, kind="cpu")
    tables = out.split("Gap to")[0]
    assert "SM" not in tables and "clock" in tables and "MHz" in tables
    for absent in ("CUDA", "throttle", "pJ", " W ", "datasheet"):
        assert absent not in tables, absent


# the SM clock below NVML's, split out


def test_gap_chain_multiplies_out_to_the_measured_ceiling():
    split = [c for c in gapview.chains(load_run(COMPUTE_CLOCKS).profile)
             if any(s.category == "sm_clock" for s in c.steps)]
    assert split, "the issue-9 profile books the SM clock below the set clock as its own step"
    for ch in gapview.chains(load_profile(H200)) + split:
        value = ch.start.value
        for s in ch.steps:
            if s.category in gapview.CHAIN:
                value *= s.factor
                assert s.value == pytest.approx(value)
        assert ch.measured.value == pytest.approx(value, rel=1e-9), ch.title
    fp16 = next(c for c in gapview.chains(load_profile(H200)) if c.precision == "fp16" and c.unit == "tensor_core")
    assert [s.category for s in fp16.steps] == ["start", "clock", "power", "sm_clock", "path", "measured", "other",
                                                "data"]
    assert fp16.steps[-1].value == pytest.approx(628.9e12, rel=1e-3)                 # sustained on random data


def test_plain_removes_references_to_internal_notes():
    assert tx.plain("rule: multiples of 16 (003: align INT8 channels to 32)") == \
        "rule: multiples of 16; align INT8 channels to 32"
    assert tx.plain("seeds 002: 2666 MT/s x 8 B") == "2666 MT/s x 8 B"


def test_provenance_names_versions_command_and_time():
    run = load_run(H100)
    rows = dict(tx.provenance(run.environment, run.profile))
    assert rows["command"].startswith("hwprobe run") and "--suite full" in rows["command"]
    assert rows["started (UTC)"].startswith("2026-11-26") and "cupy-cuda13x 14.2.0" in rows["libraries"]
    assert rows["CUDA runtime / driver"] == "13.2 / 13.0" and rows["cuBLAS"] == "13.1.0"


def test_report_cli_writes_html_and_markdown(tmp_path):
    from tests.test_cli import hw

    r = hw("report", str(H200 / "profile.json"), "--html", str(tmp_path / "r.html"), "--md", str(tmp_path / "r.md"))
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stderr and (tmp_path / "r.html").stat().st_size > 100_000
    assert "report written in" in r.stderr
    svg = (tmp_path / "r_files" / "roofline.svg").read_text()          # text kept as text (svg.fonttype none)
    assert "NVIDIA H200: measured roofline" in svg and "Tensor Cores" in svg and "INT8 wgmma 1.9 POP/s" in svg


def test_each_probes_wall_time_is_reported_slowest_first(tmp_path):
    """Issue 33: the run's per-probe wall time (environment probe_seconds) in the terminal, fitting 80 columns,
    and in the Markdown/HTML provenance."""
    full = H200
    out = _terminal(load_profile(full), 80)
    table = out[out.index("Probe wall time"):].splitlines()
    assert max(len(x.rstrip()) for x in table) <= 80
    names = [x.split()[0] for x in table if x.startswith("gpu.")]
    assert len(names) == 19 and names[:3] == ["gpu.gemm_shapes", "gpu.gemm_power", "gpu.sparse"]
    md = markdown.render(load_run(full), tmp_path / "r.md")
    assert "### Probe wall time" in md and "| gpu.gemm_shapes | 129 s | 34.8% |" in md
    assert "Probe wall time" not in _terminal(from_measurements({"kind": "gpu"}, load_run(full).measurements[:5]), 80)


def test_the_probe_time_table_shows_the_settle_before_each_probe():
    from hwprobe.report.tables import probe_time_table

    env = {"probe_seconds": {"gpu.gemm": 56.8, "gpu.dram": 2.7}, "settle_seconds": {"gpu.gemm": 1.1}}
    t = probe_time_table(env)
    assert [c.key for c in t.columns] == ["probe", "seconds", "settle", "share"]
    assert t.rows[0] == {"probe": "gpu.gemm", "seconds": 56.8, "settle": 1.1, "share": 56.8 / 59.5}
    assert t.rows[1]["settle"] is None and "1.1 s more letting the GPU settle" in t.note
    p = load_profile(H200)
    p.environment["settle_seconds"] = {"gpu.gemm": 1.1, "gpu.fma": 0.4}
    out = _terminal(p, 80)
    table = out[out.index("Probe wall time"):].splitlines()
    assert max(len(x.rstrip()) for x in table) <= 80 and "settle" in out
    assert "settle before it not counted" in probe_time_table({"probe_seconds": {"gpu.dram": 2.7}}).note
    waited = probe_time_table({"probe_seconds": {"gpu.dram": 10.5, "gpu.fma": 5.8},
                               "compile_wait_seconds": {"gpu.dram": 8.2}})
    assert [c.key for c in waited.columns] == ["probe", "seconds", "compile_wait", "share"]
    assert waited.rows[0]["compile_wait"] == 8.2 and waited.rows[1]["compile_wait"] is None
    assert "8.2 s of the probes' time waiting for kernel compiles" in waited.note
