"""A disk that fills mid-run: one line and exit 2, every record that fit kept whole (no torn line, no second
ENOSPC from closing), and every measurement on stdout as JSON. On a real 12 KiB tmpfs where mounting is
permitted (root), and with a simulated ENOSPC everywhere."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from hwprobe.cli import main
from hwprobe.probes import probe
from hwprobe.results import MEASUREMENTS, load_records

ROOT = Path(__file__).resolve().parents[1]
N_RECORDS = 40
NOTE = "x" * 600          # each record ~1 KiB: 40 of them cannot fit 12 KiB


@probe(name="test.many", target="cpu", family="memory", summary="test")
def _many(ctx, n: int = N_RECORDS):
    for i in range(n):
        yield ctx.derived(f"dram.test{i}", 1e10 + i, unit="B/s", kind="memory", level="dram", notes=[NOTE])


def _run(tmp_path, out_root, capsys):
    suite = tmp_path / "many.toml"
    suite.write_text('target = "cpu"\n[[probes]]\nprobe = "test.many"\n')
    with pytest.raises(SystemExit) as e:
        main(["run", "--device", "cpu", "--suite", str(suite), "--out", str(out_root), "--json", "-q"])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def _check(code, out, err, out_root):
    assert code == 2
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("results:")]
    assert len(lines) == 1, err
    assert "No space left on device" in lines[0] and "Traceback" not in err
    figures = json.loads(out)                                  # the promised JSON came, whole
    (run_dir,) = [p for p in out_root.iterdir() if p.is_dir()]
    text = (run_dir / MEASUREMENTS).read_bytes()
    assert text.endswith(b"\n")                                # no torn last line
    rec = load_records(run_dir)
    assert rec.skipped_lines == []
    kept = [m.metric for m in rec.measurements]
    assert 0 < len(kept) < N_RECORDS                           # some fit, not all
    assert kept == [f"dram.test{i}" for i in range(len(kept))]  # every record that fit, in order
    assert [m["metric"] for m in figures][:len(kept) + 1] == [f"dram.test{i}" for i in range(len(kept) + 1)]
    return kept


def _can_mount() -> bool:
    return os.geteuid() == 0 and subprocess.run(["which", "mount"], capture_output=True).returncode == 0


def test_a_real_12k_tmpfs_fills_mid_run(tmp_path, capsys):
    if not _can_mount():
        pytest.skip("mounting a tmpfs needs root and mount(8); the simulated test below covers the logic")
    mnt = tmp_path / f"tiny-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"mount not permitted here: {r.stderr.strip()}")
    try:
        code, out, err = _run(tmp_path, mnt, capsys)
        kept = _check(code, out, err, mnt)
        assert len(kept) >= 4                     # 12 KiB less the environment holds several 1 KiB records
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_a_simulated_enospc_keeps_whole_records(tmp_path, capsys, monkeypatch):
    """os.write takes bytes until a 9000-byte budget is spent, then writes part of a buffer and fails: what a
    filling disk does. Every file the run writes shares the budget."""
    import hwprobe.results as results

    budget = {"left": 9000}
    real_write = os.write

    def write(fd, data):
        n = min(len(data), budget["left"])
        if n == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        budget["left"] -= n
        return real_write(fd, bytes(data[:n]))

    monkeypatch.setattr(results.os, "write", write)
    out_root = tmp_path / "o"
    code, out, err = _run(tmp_path, out_root, capsys)
    _check(code, out, err, out_root)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_report_to_a_full_device_names_the_file(capsys):
    """Issue 35 item 13: report --html /dev/full said "No space left on device (None)"."""
    with pytest.raises(SystemExit) as e:
        main(["report", str(ROOT / "profiles" / "h100-sxm" / "2026-11-26-full"), "--html", "/dev/full"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err == "hwprobe: error: cannot write the report to '/dev/full': No space left on device\n"
