"""Tabulate one l2_counters run (its l2_raw.csv[.gz] from Nsight Compute and the launch manifest): per pattern and
set, the bytes the loads requested, what the L2 slices sent (lrc__lts2lrc_sectors_op_read), what reached the SMs
(l1tex__m_xbar2l1tex_read_sectors), the share of requests the coalescer merged, and how busy the slices' ports to
the crossbar were (lts__lts2xbar_cycles_active)."""
import csv
import gzip
import io
import json
import os
import sys


def rows(d: str):
    path = os.path.join(d, "l2_raw.csv")
    text = gzip.open(path + ".gz", "rt").read() if os.path.exists(path + ".gz") else open(path).read()
    table = list(csv.reader(io.StringIO(text)))
    hdr, data = table[0], table[2:]
    idx = {h: i for i, h in enumerate(hdr)}
    man = json.load(open(os.path.join(d, "l2_counters_manifest.json")))
    for r, m in zip(data, man, strict=True):
        yield m, (lambda k, r=r: float(r[idx[k]].replace(",", "")))


def main(d: str) -> None:
    first = True
    for m, f in rows(d):
        if first:
            slices, clk = f("lts__t_sectors.sum.peak_sustained") / 3, f("lts__cycles_elapsed.avg.per_second")
            port = slices * 64 * clk / 1e3
            print(f"L2: {slices:.0f} slices, L2 clock {clk:.4f} GHz; ports 64 B/clk -> {port:.2f} TB/s")
            print(f"{'pattern':20s} {'MiB':>6s} {'requested':>9s} {'served':>7s} {'to SMs':>7s} {'merged':>6s} "
                  f"{'ports':>6s}  (TB/s; merged = share of requests coalesced; ports = lts2xbar busy)")
            first = False
        if m["rep"] != 1:
            continue
        t = f("gpu__time_duration.sum") * 1e-3                      # ms -> s
        merged = f("lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum") / max(
            1.0, f("lrc__request_sectors_op_read_coalescable.sum"))
        print(f"{m['pattern']:20s} {m['set'] / 2**20:6.2f} {m['bytes'] / t / 1e12:9.2f} "
              f"{f('lrc__lts2lrc_sectors_op_read.sum') * 32 / t / 1e12:7.2f} "
              f"{f('l1tex__m_xbar2l1tex_read_sectors.sum') * 32 / t / 1e12:7.2f} {merged:6.1%} "
              f"{f('lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed'):5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1])
