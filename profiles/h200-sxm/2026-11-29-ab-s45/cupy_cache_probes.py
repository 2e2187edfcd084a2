"""Which probe paid for each CuPy compile of a run with an empty cache (s45, KEEP_CACHE=new-full).

Usage: python cupy_cache_probes.py RUN_DIR CACHE_DIR > cupy_compiles_new_full.txt
Each cubin's mtime (whole seconds as they came back) is placed in the probe windows rebuilt from environment.json's
probe_seconds and settle_seconds, laid end to end back from the environment file's own mtime (its last write, at
the run's end). The kernel's name is read from the saved source (CUPY_CACHE_SAVE_CUDA_SOURCE=1)."""

import collections
import datetime
import glob
import json
import os
import re
import sys

run, cache = sys.argv[1], sys.argv[2]
env_path = os.path.join(run, "environment.json")
env = json.load(open(env_path))
t0 = datetime.datetime.fromisoformat(env["started_utc"].replace("Z", "+00:00")).timestamp()
probe_s, settle_s = env["probe_seconds"], env.get("settle_seconds", {})
t = os.path.getmtime(env_path) - sum(probe_s.values()) - sum(settle_s.values())
windows = []
for name, s in probe_s.items():
    t += settle_s.get(name, 0.0)
    windows.append((name, t, t + s))
    t += s
rows, count = [], collections.Counter()
for f in sorted(glob.glob(os.path.join(cache, "*.cubin")), key=os.path.getmtime):
    m = os.path.getmtime(f)
    who = next((n for n, a, b in windows if a <= m <= b), "before the probes" if m < windows[0][1] else "after")
    src = open(f + ".cu").read() if os.path.exists(f + ".cu") else ""
    names = re.findall(r"__global__\s+void\s+(\w+)", src)
    count[who] += 1
    rows.append(f"{m - t0:7.1f} s  {who:18s} {names[0] if names else '(no __global__ name)'}")
print(f"# {len(rows)} CuPy compiles in {run}; per probe: " + ", ".join(f"{n} {c}" for n, c in count.most_common()))
print("# seconds from the run's start, probe window, kernel")
print("\n".join(rows))
