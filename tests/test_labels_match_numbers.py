"""A label says what its number is (issue 23, item 17): the nsys kernel view's times are totals and say so; a
DRAM ceiling's clock is the memory clock; a level without a bandwidth is no exported ceiling; the CPU's
measured max clock is the same on every call."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from hwprobe.cli import main
from hwprobe.results import records_text
from tests.refs import H200_FULL as H200
from tests.refs import ROOT

NSYS = ROOT / "tests" / "data" / "times" / "nsys_cuda_gpu_kern_sum.csv"


def cli(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_nsys_kernel_view_says_total_and_shows_the_total(capsys):
    """The file's first kernel: 100 instances, Total Time 1823456 ns, Avg 18234.6 ns: the line must name the
    total as a total (1.82 ms), never under a per-instance header alone."""
    rows = list(csv.DictReader(NSYS.read_text().splitlines()))
    first = rows[0]
    total_ms = float(first["Total Time (ns)"]) / 1e6
    code, out, err = cli(["analyze", "resnet50", "--spec", "H200 SXM", "--times", NSYS], capsys)
    line = next(x for x in out.splitlines() if first["Name"][:40] in x and "[" in x)
    shown = re.search(r" - ([\d.]+) (ms|us) total", line)
    assert shown, line
    value = float(shown.group(1)) * (1 if shown.group(2) == "ms" else 1e-3)
    assert value == pytest.approx(total_ms, rel=0.01)
    assert "total time over all its instances" in out


def _export(fmt, capsys, source=H200):
    code, out, err = cli(["export", source, "-f", fmt], capsys)
    assert code in (None, 0), err
    return out


def test_dram_clock_is_the_memory_clock_in_the_export(capsys):
    """The record behind the DRAM ceiling holds NVML's memory clock (clocks.mem_mhz); the export's clock_mhz
    for DRAM must be that, not the SM clock."""
    rows = json.loads(_export("json", capsys))["ceilings"]
    dram = next(r for r in rows if r["kind"] == "memory" and r["level"] == "dram")
    rec = next(json.loads(x) for x in records_text(H200).splitlines()
               if f'"metric": "{dram["metric"]}"' in x and '"status": "ok"' in x)
    assert dram["clock_source"] == "memory"
    assert dram["clock_mhz"] == pytest.approx(rec["clocks"]["mem_mhz"])
    assert dram["clock_mhz"] != pytest.approx(rec["clocks"]["sm_mhz"])


def test_no_empty_memory_rows_in_the_export(capsys):
    rows = json.loads(_export("json", capsys))["ceilings"]
    assert all(r["value"] is not None for r in rows if r["kind"] == "memory")
    assert "l2_far" not in {r["level"] for r in rows}
    table = list(csv.DictReader(io.StringIO(_export("csv", capsys))))
    assert all(r["value"] not in ("", None) for r in table)


def test_a_new_dram_ceiling_carries_the_memory_clock():
    from hwprobe.measurement import ClockSummary, Measurement, Theory
    from hwprobe.profile import Ceiling

    m = Measurement(probe="gpu.dram", metric="dram.triad", kind="memory", value=4.4e12, unit="B/s", level="dram",
                    clocks=ClockSummary(sm_mhz=1980.0, mem_mhz=3201.0),
                    theory=Theory(at_clock=4.81e12, at_max_clock=4.81e12, clock_mhz=3201.0))
    c = Ceiling.of(m)
    assert (c.clock_mhz, c.clock_source) == (3201.0, "memory")
    again = Ceiling.from_dict(c.to_dict())
    assert again.clock_mhz == 3201.0


def test_cpu_max_clock_is_measured_once_per_boot(tmp_path, monkeypatch):
    from hwprobe.device import cpu

    readings = iter([2871.0, 2915.0, 2940.0])
    monkeypatch.setattr(cpu, "measure_mhz", lambda seconds=0.03: next(readings))
    monkeypatch.setattr(cpu, "_read", lambda path: "boot-1\n" if path.endswith("boot_id") else None)
    f = tmp_path / "cpu-clock.json"
    first = cpu.boot_mhz("EPYC", f)
    assert [cpu.boot_mhz("EPYC", f) for _ in range(2)] == [first, first] == [2871.0, 2871.0]
    monkeypatch.setattr(cpu, "_read", lambda path: "boot-2\n" if path.endswith("boot_id") else None)
    assert cpu.boot_mhz("EPYC", f) == 2915.0                 # a new boot measures again


def test_a_higher_clock_read_later_raises_the_boots_max(tmp_path, monkeypatch):
    """The boot's max clock is an upper bound: a first reading taken on a busy machine (low) is raised by a later,
    higher one, never lowered, and only for this boot's model."""
    from hwprobe.device import cpu

    monkeypatch.setattr(cpu, "measure_mhz", lambda seconds=0.03: 2474.0)
    monkeypatch.setattr(cpu, "_read", lambda path: "boot-1\n" if path.endswith("boot_id") else None)
    f = tmp_path / "cpu-clock.json"
    assert cpu.boot_mhz("EPYC", f) == 2474.0
    cpu.raise_boot_mhz("EPYC", 2971.0, f)
    cpu.raise_boot_mhz("EPYC", 2600.0, f)                    # lower: kept as it was
    cpu.raise_boot_mhz("Xeon", 3500.0, f)                    # another model's reading: not this cache's
    assert cpu.boot_mhz("EPYC", f) == 2971.0


def test_cpu_specs_show_the_same_clock_on_every_call(capsys):
    outs = []
    for _ in range(3):
        try:
            main(["specs", "--device", "cpu"])
        except SystemExit as e:
            assert e.code in (None, 0)
        outs.append(re.findall(r"(\d+) MHz", capsys.readouterr().out))
    assert outs[0] and outs[0] == outs[1] == outs[2]
