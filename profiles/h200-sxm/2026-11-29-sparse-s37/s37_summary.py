"""Summarise gpu.sparse runs kept as RUN.jsonl.gz: each 16384 sparse point's rate, config, clocks, settle and
windows, its samples in sixths; with --plot PNG, each point's time per launch over its samples (settle chunks left
of zero). python s37_summary.py DIR [--runs GLOB (under DIR; default runs/*.jsonl.gz)] [--plot PNG]"""
import glob
import gzip
import json
import sys

import numpy as np


def points(root, pattern):
    def order(path):   # call 1's runs are "3-S04", call 3's "c3-N": by call, then run
        head = path.split("/")[-1].split("-")[0]
        return head.rstrip("0123456789"), int(head.lstrip("c"))

    for path in sorted(glob.glob(f"{root}/{pattern}"), key=order):
        name = path.split("/")[-1].removesuffix(".jsonl.gz")
        for line in gzip.open(path, "rt"):
            r = json.loads(line)
            if r.get("kind") == "sweep" and r.get("metric", "").endswith("sparse24.n16384"):
                yield name, r


def main(argv):
    root, plot = argv[0], (argv[argv.index("--plot") + 1] if "--plot" in argv else None)
    rows = list(points(root, argv[argv.index("--runs") + 1] if "--runs" in argv else "runs/*.jsonl.gz"))
    for name, r in rows:
        p, c = r["params"], r.get("clocks") or {}
        s = np.array(r["samples_s"]) / p.get("reps", 1)
        six = " ".join(f"{np.median(x) * 1e3:.3f}" for x in np.array_split(s, 6))
        win = p.get("sustain_windows_us")
        print(f"{name:8} {r['metric'].split('.')[0]:9} {r['value'] / 1e12:7.1f} cfg "
              f"{(p.get('cusparselt_alg') or {}).get('config_id', '?')!s:3} NVML {c.get('sm_mhz')} MHz "
              f"sentinel {p.get('sentinel_sm_mhz')} settle {p.get('settle_stop')} {p.get('settle_ran_s')} s"
              + (f" windows ms {[round(w / 1e3, 3) for w in win]} kept {p['sustain_window_kept']} "
                 f"({p['sustain_window_stop']})" if win else ""))
        print(f"         sixths ms/launch: {six}")
    if plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(12, 6))
        for name, r in rows:
            p = r["params"]
            s = np.array(r["samples_s"]) / p.get("reps", 1) * 1e3
            line, = ax.plot(np.cumsum(s) / 1e3, s, lw=0.8, label=f"{name} {r['metric'].split('.')[0]} "
                                                                 f"{r['value'] / 1e12:.0f}")
            ch = [x / 1e3 for x in p.get("settle_chunks_us") or []]
            if ch:
                ax.plot(np.arange(len(ch)) * 0.05 - len(ch) * 0.05, ch, "o", ms=3, color=line.get_color())
        ax.set_xlabel("seconds from the (kept) window's start; dots: the settle's 50-ms chunks")
        ax.set_ylabel("ms per launch, 2:4 at 16384")
        ax.legend(fontsize=7)
        fig.savefig(plot, dpi=90)


if __name__ == "__main__":
    main(sys.argv[1:])
