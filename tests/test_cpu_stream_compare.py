"""tools/cpu_stream_compare.py: the compiled reference's output, stream.c's table, and bad arguments."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[1]
tool = load_tool("cpu_stream_compare")

# McCalpin's stream.c (5.10) output, as it printed here on 2026-11-26 (gcc -O3 -fopenmp, 2 threads, a busy VM)
STREAM_C_TABLE = """-------------------------------------------------------------
Function    Best Rate MB/s  Avg time     Min time     Max time
Copy:            2305.3     0.158580     0.116444     0.218344
Scale:           4192.8     0.143545     0.064023     0.178253
Add:             2686.7     0.209059     0.149867     0.286129
Triad:           2516.4     0.219996     0.160012     0.311932
-------------------------------------------------------------
"""


def test_stream_c_table_is_read_in_gb_per_s(monkeypatch):
    class Done:
        stdout = STREAM_C_TABLE

    monkeypatch.setattr(tool.subprocess, "run", lambda *a, **k: Done())
    got = tool.run_mccalpin(Path("stream"))
    want = {"copy": 2.3053, "scale": 4.1928, "add": 2.6867, "triad": 2.5164}
    assert {op: pytest.approx(v) for op, v in want.items()} == {op: r["best"] for op, r in got.items()}


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_reference_kernels_build_run_and_check_themselves(tmp_path):
    exe = tool.build(ROOT / "tools" / "stream_ref" / "stream_ref.c", tmp_path / "stream_ref")
    got = tool.run_ref(exe, 1 << 20, 4)
    assert set(got) == {"copy", "scale", "add", "triad"}
    assert all(0 < r["median"] <= r["best"] for r in got.values())


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_gcc_makes_stream_c_copy_a_memcpy(tmp_path):
    """Issue 35: why hwprobe's copy and stream_ref.c's are memcpys. gcc -O3 compiles stream.c's copy loop over its
    static arrays (declared as here) to a call of libc's memcpy, which uses non-temporal stores on large arrays."""
    src = tmp_path / "copy.c"
    src.write_text("#define N 80000000\nstatic double a[N], c[N];\n"
                   "double *pa = a, *pc = c;\n"             # read elsewhere, so the copy is not dead code
                   "void copy(void) {\n#pragma omp parallel for\n  for (long j = 0; j < N; j++) c[j] = a[j];\n}\n")
    subprocess.run(["gcc", "-O3", "-fopenmp", "-S", str(src), "-o", str(tmp_path / "copy.s")], check=True)
    assert re.search(r"\b(call|jmp)\s+memcpy", (tmp_path / "copy.s").read_text())


def test_native_builds_with_march_native(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(tool.shutil, "which", lambda name: "/usr/bin/gcc")
    monkeypatch.setattr(tool.subprocess, "run", lambda cmd, **k: seen.append(cmd))
    tool.build(Path("s.c"), tmp_path / "s", native=True)
    tool.build(Path("s.c"), tmp_path / "s")
    assert "-march=native" in seen[0] and "-march=native" not in seen[1]


def test_bad_arguments_exit_2(capsys, tmp_path):
    assert tool.main(["--elements", "0"]) == 2
    assert "cpu_stream_compare:" in capsys.readouterr().err
    assert tool.main(["--stream-c", str(tmp_path / "missing.c")]) == 2
    assert "no such file" in capsys.readouterr().err
