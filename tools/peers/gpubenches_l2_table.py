"""Tabulate one lease of tools/peers/gpubenches_l2.sh: gpu-benches' gpu-l2-cache figure (median of its sets in
2-20 MiB) beside hwprobe's cache.l2.read and cache.l2.read.peer_method from the same lease, and what Nsight
Compute counted on the benchmark's own kernel (L1 hits, requests the L2 coalescer merged, bytes the L2 slices
sent). Exit 1 when hwprobe's peer_method is more than 0.5% below the benchmark's median.

    python tools/peers/gpubenches_l2_table.py profiles/h100-sxm/2026-11-26-l2-gpubenches/lease2
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from hwprobe.results import records_file, records_text  # noqa: E402

MIB = 1 << 20
FIGURES = ("cache.l2.read", "cache.l2.read.peer_method", "cache.l2.read.merge_free")
# gpu-benches' sumKernel<64, 1024>: 200000 blocks x 1024 threads x 64 doubles requested per launch
BENCH_BYTES = 200000 * 1024 * 64 * 8
NCU_METRICS = ("gpu__time_duration.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
               "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum",
               "lrc__request_sectors_op_read_coalescable.sum", "lrc__lts2lrc_sectors_op_read.sum",
               "lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed")


def bench_curve(path: Path) -> dict[int, float]:
    """gpu-benches' printout: set (bytes) -> its 'Eff. bw' in B/s."""
    out = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) > 6 and f[1] == f[3] == "kB" and f[7] == "GB/s":
            out[int(f[2]) * 1024] = float(f[6]) * 1e9
    return out


def bench_median(curve: dict[int, float], lo: float = 2 * MIB, hi: float = 20 * MIB) -> float:
    return statistics.median(v for s, v in curve.items() if lo <= s <= hi)


def hwprobe_figures(run: Path) -> dict[str, dict]:
    recs = [json.loads(x) for x in records_text(run).splitlines() if x.strip()]
    return {r["metric"]: r for r in recs if r.get("metric") in FIGURES}


def ncu_row(path: Path) -> dict[str, float]:
    """One profiled launch of the benchmark (ncu --csv --page raw, mixed into the program's own printout)."""
    text = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
    head, units, row = list(csv.reader(io.StringIO("".join(x + "\n" for x in text.splitlines()
                                                               if x.startswith('"')))))[:3]
    cells, unit = dict(zip(head, row, strict=True)), dict(zip(head, units, strict=True))
    val = {k: float(cells[k].replace(",", "")) for k in NCU_METRICS}
    t = val["gpu__time_duration.sum"] * {"ns": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
                                         "nsecond": 1e-9}[unit["gpu__time_duration.sum"]]
    ld = val["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    return {"requested": BENCH_BYTES / t,
            "l1_hit": val["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] / ld,
            "merged": val["lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum"]
            / val["lrc__request_sectors_op_read_coalescable.sum"],
            "sent": val["lrc__lts2lrc_sectors_op_read.sum"] * 32 / t,
            "ports": val["lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed"] / 100}


def main(lease: str) -> int:
    d = Path(lease)
    tb = 1e12
    benches = {p.stem: bench_median(bench_curve(p)) for p in sorted(d.glob("gpubench-*.txt"))}
    print(f"{d}: gpu-benches gpu-l2-cache, median of its sets in 2-20 MiB (TB/s): "
          + ", ".join(f"{k.split('-')[1]} {v / tb:.3f}" for k, v in benches.items()))
    ref = statistics.median(benches.values())
    worst = 1.0
    print(f"{'hwprobe run':14s} {'l2.read':>8s} {'peer_method':>11s} {'/ bench':>7s} {'merge_free':>10s}  (TB/s)")
    for run in sorted(p for p in d.iterdir() if records_file(p) is not None):
        f = hwprobe_figures(run)
        peer = f["cache.l2.read.peer_method"]["value"]
        worst = min(worst, peer / ref)
        print(f"{run.name:14s} {f['cache.l2.read']['value'] / tb:8.3f} {peer / tb:11.3f} {peer / ref:7.3f} "
              f"{f['cache.l2.read.merge_free']['value'] / tb:10.3f}")
    rows = sorted(d.glob("ncu-br*.csv*"), key=lambda p: int(p.name[6:].split(".")[0]))
    if rows:
        print("Nsight Compute on gpu-benches' own kernel (one launch per set):")
        print(f"{'set MiB':>8s} {'requested':>9s} {'L1 hits':>7s} {'merged':>6s} {'L2 sent':>7s} {'ports':>6s}")
        for p in rows:
            r = ncu_row(p)
            print(f"{int(p.name[6:].split('.')[0]) * 0.5:8.1f} {r['requested'] / tb:9.3f} {r['l1_hit']:7.2%} "
                  f"{r['merged']:6.1%} {r['sent'] / tb:7.3f} {r['ports']:6.1%}")
    print(f"peer_method / gpu-benches: worst {worst:.3f}")
    return 0 if worst >= 0.995 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
