"""tools/profile_suite.py on the CPU suite for real: one pstats file per probe entry, each holding that probe's own
code (the `hwprobe` command's os._exit would have left cProfile no file at all)."""

import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import profile_suite as tool  # noqa: E402


def _functions(path: Path) -> set[tuple[str, str]]:
    return {(Path(f).name, fn) for f, _, fn in pstats.Stats(str(path)).stats}


def test_each_probe_gets_its_own_profile(tmp_path, capsys):
    rc = tool.main(["--suite", "cpu", "--quick", "--out", str(tmp_path), "--top", "3"])
    assert rc == 0
    fma, stream = tmp_path / "01-cpu.fma.prof", tmp_path / "02-cpu.stream.prof"
    assert sorted(p.name for p in tmp_path.glob("*.prof")) == [fma.name, stream.name]
    assert ("stream.py", "run") in _functions(stream) and ("stream.py", "run") not in _functions(fma)
    assert ("compute.py", "run") in _functions(fma)
    assert list((tmp_path / "results").glob("*/measurements.jsonl"))
    out = capsys.readouterr().out
    assert "-- 01-cpu.fma.prof, by cumulative" in out and "-- 02-cpu.stream.prof, by tottime" in out
