"""nccl-tests' output read on real published logs (tests/data/nccl_tests/README.md names them), hwprobe's
collectives compared with it, and the device session's comparison tool run end to end on the CPU."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe.fleet import nccltests as NT
from hwprobe.probes.interconnect import nccl
from hwprobe.profile_build import from_measurements
from tests.test_interconnect_records import META, _two_variants

DATA = Path(__file__).parent / "data" / "nccl_tests"
ROOT = Path(__file__).resolve().parents[1]


def test_parse_an_older_log_without_checks():
    rows = NT.parse((DATA / "perfkitbenchmarker_nccl_output.txt").read_text(), test="all_reduce")
    assert len(rows) == 22 and {r.variant for r in rows} == {"out_of_place", "in_place"}
    assert all(r.wrong is None and r.ranks == 2 and r.test == "all_reduce" and r.dtype == "float" for r in rows)
    first_oop, first_ip = rows[0], rows[1]
    assert (first_oop.size, first_oop.count, first_oop.redop, first_oop.root) == (1048576, 262144, "sum", -1)
    assert first_oop.time_s == pytest.approx(2410.0e-6) and first_ip.time_s == pytest.approx(2709.7e-6)
    assert first_oop.busbw == pytest.approx(0.44e9) and first_ip.algbw == pytest.approx(0.39e9)
    assert rows[-1].size == 1 << 30 and rows[-1].time_s == pytest.approx(1.763386)
    assert NT.parse((DATA / "perfkitbenchmarker_nccl_output.txt").read_text())[0].test is None   # never named


def test_parse_a_newer_log_and_its_own_arithmetic():
    """16 ranks: busbw / algbw = 2 x 15 / 16 and algbw = S / time, on the printed (rounded) figures."""
    rows = NT.parse((DATA / "a3mega_all_reduce_16xH100.txt").read_text())
    assert len(rows) == 62 and all(r.test == "all_reduce" and r.ranks == 16 and r.wrong == 0 for r in rows)
    assert [r.size for r in rows[::2]] == [8 << k for k in range(31)]
    for r in rows:
        if r.size >= 1 << 26:
            assert r.busbw / r.algbw == pytest.approx(2 * 15 / 16, rel=2e-3)
            assert r.algbw == pytest.approx(r.size / r.time_s, rel=2e-3)
    top = max(rows, key=lambda r: r.busbw)
    assert (top.size, top.variant, top.busbw) == (8 << 30, "out_of_place", pytest.approx(338.82e9))


def test_parse_open_mpi_tagged_output_and_unchecked_in_place_halves():
    """The same rows as Open MPI's --tag-output prints them, in-place marked N/A (alltoall, sendrecv), two tests
    in one log: each row is filed under the test that printed it."""
    text = (DATA / "a3mega_all_reduce_16xH100.txt").read_text()
    a2a = "# Collective test starting: alltoall_perf\n" + "\n".join(
        re.sub(r"(\s)0\s*$", r"\1N/A", line) if line.strip()[:1].isdigit() else line
        for line in text.splitlines()[8:])
    tagged = "\n".join(f"[1,0]<stdout>:{line}" for line in (text + "\n" + a2a).splitlines())
    rows = NT.parse(tagged)
    assert [r.test for r in rows].count("all_reduce") == 62 and [r.test for r in rows].count("alltoall") == 62
    a = [r for r in rows if r.test == "alltoall"]
    assert all(r.wrong == 0 for r in a if r.variant == "out_of_place")
    assert all(r.wrong is None for r in a if r.variant == "in_place")


def test_compare_takes_each_sides_best_and_says_if_the_reference_was_checked():
    ref = NT.parse((DATA / "a3mega_all_reduce_16xH100.txt").read_text())
    hw = {("all_reduce", 1 << 30): {"out_of_place": 296e9, "in_place": 299e9}}
    c = NT.compare(hw, ref, ["all_reduce", "alltoall"], [1 << 30])
    ar, a2a = c
    assert (ar.hwprobe, ar.hwprobe_variant) == (299e9, "in_place")
    assert (ar.reference, ar.reference_variant, ar.reference_checked) == (pytest.approx(298.82e9), "in_place", True)
    assert ar.reference_out_of_place == pytest.approx(297.86e9) and ar.ratio == pytest.approx(299 / 298.82)
    assert a2a.hwprobe is None and a2a.reference is None and a2a.ratio is None
    md = NT.table(c)
    assert "| all_reduce | 1 GiB | 299.0 (in-place) | 298.8 (in-place, yes) | 297.9 | 1.001 | yes |" in md
    assert "| alltoall | 1 GiB | - | - | - | - | - |" in md


def test_hwprobe_points_keep_verified_process_mode_sweeps_only():
    ms = nccl.records(_two_variants(2), 2, META) + nccl.records(_two_variants(2), 2, META, suffix=".single")
    pts = NT.hwprobe_points([m.to_dict() for m in ms])
    assert set(pts[("alltoall", 4 << 30)]) == {"out_of_place"}              # the wrong in-place points are out
    assert set(pts[("all_gather", 4 << 30)]) == {"out_of_place", "in_place"}
    ag = next(m for m in ms if m.kind == "sweep" and m.params["op"] == "all_gather" and m.params["bytes"] == 4 << 30
              and m.params["variant"] == "in_place")
    assert pts[("all_gather", 4 << 30)]["in_place"] == ag.params["busbw"]
    assert not any(op.endswith(".avg") for op, _ in pts)


def _session(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A device session's outputs, made here: hwprobe's run (records of fake timings: 340 GB/s busbw), nccl-tests
    logs in the real format with this box's figures, the memcpyPeer reference."""
    run = tmp_path / "run"
    run.mkdir()
    ms = nccl.records(_two_variants(2), 2, META)
    prof = from_measurements({"name": "H200", "kind": "gpu"}, ms)
    d = prof.to_dict()
    d["links"]["p2p.0-1"] = {"kind": "p2p", "ceilings": {"ce.uni": {"value": 396.7e9}, "ce.bi": {"value": 782.8e9}}}
    (run / "profile.json").write_text(json.dumps(d))
    (run / "measurements.jsonl").write_text(json.dumps({"format": "x"}) + "\n"
                                            + "\n".join(json.dumps(m.to_dict(), default=str) for m in ms) + "\n")
    logs = tmp_path / "nccl-tests"
    logs.mkdir()
    header = (DATA / "a3mega_all_reduce_16xH100.txt").read_text().splitlines()[27:30]
    for op in ("all_reduce", "alltoall"):
        body = [f"{s:12d} {s // 4:13d}     float     sum      -1  {s / 345e9 * 1e6:7.1f}  {345:6.2f}  {345:6.2f}"
                f"      0  {s / 350e9 * 1e6:7.1f}  {350:6.2f}  {350:6.2f}    {'N/A' if op == 'alltoall' else '  0'}"
                for s in (1 << 30, 4 << 30)]
        (logs / f"{op}.log").write_text("\n".join([f"# Collective test starting: {op}_perf", *header, *body]) + "\n")
    ref = tmp_path / "p2p_ref.json"
    ref.write_text(json.dumps({"uni_Bps": {"0->1": 396.1e9, "1->0": 395.0e9}, "bi_Bps": 778.6e9}))
    return run, logs, ref


def test_the_comparison_tool_end_to_end(tmp_path):
    run, logs, ref = _session(tmp_path)
    out = tmp_path / "compare.md"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "multigpu_compare.py"), "--nccl-tests", str(logs),
                        "--results", str(run), "--p2p-ref", str(ref), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = out.read_text()
    # fake hwprobe: 340 GB/s out of place, all_reduce in place 3% slower; nccl-tests: 345 / 350 (in place)
    hw = 340e9 * (4 << 30) / ((4 << 30) + 20e-6 * 340e9) / 1.001 / 1e9
    assert f"| all_reduce | 4 GiB | {hw:.1f} (out-of-place) | 350.0 (in-place, yes) | 345.0 |" in md
    assert "| alltoall | 4 GiB |" in md and "350.0 (in-place, N/A) | 345.0 |" in md
    assert "| one way (ce.uni) | 396.7 | 396.1 | 1.002 | yes |" in md
    assert "| both ways (ce.bi) | 782.8 | 778.6 | 1.005 | yes |" in md


def test_the_comparison_tool_says_what_is_missing(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "multigpu_compare.py"), "--nccl-tests", str(tmp_path),
                        "--results", str(tmp_path / "nope")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not found" in r.stderr


def test_the_device_script_parses_and_runs_every_collective_without_nvls():
    """tools/device_multigpu.sh (run on the 2-GPU machine only): valid bash, NCCL_NVLS_ENABLE=0, every collective
    hwprobe measures run by nccl-tests with checks on, both hwprobe runs, at most 8 files under $OUT."""
    from hwprobe.probes.interconnect.collectives import OPS

    script = ROOT / "tools" / "device_multigpu.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    text = script.read_text()
    assert "export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0" in text
    assert f"for op in {' '.join(OPS)}; do" in text and "-c 1 -w 5 -n 20" in text and "-b 1G -e 4G -f 4" in text
    assert "--device 0,1 --suite multigpu" in text and "-n 2 --allow-run-as-root" in text
    outs = {"compare.md", "compare$suffix.md", "status.txt", "bundle.tgz"}
    assert all(f'$OUT/{name}' in text for name in outs) and len(outs) <= 8


def test_the_p2p_reference_script_needs_no_gpu_to_explain_itself():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "p2p_reference.py"), "--help"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "cudaMemcpyPeerAsync" in r.stdout
