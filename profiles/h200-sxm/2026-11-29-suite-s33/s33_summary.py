"""Summarise gpu.sparse runs: per run, each sparse point's rate, config, settle and its window's sixths."""
import glob
import json
import sys

import numpy as np

root = sys.argv[1]
for run in sorted(glob.glob(f"{root}/runs/*/*/measurements.jsonl"), key=lambda p: (p.split("/")[-3][-1], p)):
    name = run.split("/")[-3]
    for line in open(run):
        r = json.loads(line)
        if "metric" not in r or r.get("kind") != "sweep":
            continue
        m, p = r["metric"], r.get("params", {})
        if ".sparse24.n" not in m and ".dense." not in m:
            continue
        s = np.array(r.get("samples_s") or [0.0])
        six = [np.median(c) * 1e3 for c in np.array_split(s, 6)] if len(s) >= 6 else []
        ch = p.get("settle_chunks_us") or []
        alg = (p.get("cusparselt_alg") or {}).get("config_id", "")
        clk = (r.get("clocks") or {}).get("sm_mhz")
        print(f"{name:5} {m:42} {r['value'] / 1e12:8.1f} cfg {alg!s:3} {clk} MHz stop {p.get('settle_stop')} "
              f"{p.get('settle_ran_s')} s n{len(ch)} spread {p.get('settle_last_spread')} fin {p.get('finalist_rates', '')}")
        if "n16384" in m and ".sparse24" in m:
            print("      chunks ms/launch:", " ".join(f"{c / 1e3:.3f}" for c in ch))
            print("      window sixths ms:", " ".join(f"{x:.3f}" for x in six))
