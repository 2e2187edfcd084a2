"""Print gpu.host's pinned ceiling and sweep records of a results dir."""
import glob, json, sys
for f in glob.glob(f"{sys.argv[1]}/**/*.jsonl", recursive=True):
    for line in open(f):
        r = json.loads(line)
        m = r.get("metric", "")
        if m.startswith("host.") and ("pinned" in m):
            p = r.get("params", {})
            if m.count(".") == 2 or p.get("bytes", 0) >= 16 << 20:
                print(m, round(r["value"] / 1e9, 2), p.get("bytes"), p.get("attempts_gbps", ""), p.get("sizes_gbps", ""),
                      round((r.get("stats") or {}).get("cv", 0) or 0, 4))
