"""Issue 33: gpu.sparse with search = library against search = sweep, same lease: per (precision, size) each run's
rate, chosen config, search time and sentinel clock; each run's probe wall time.
  python3 .ab/s29_sparse_ab.py RESULTS_ROOT RUN_NAME..."""
import glob
import json
import sys

root, names = sys.argv[1], sys.argv[2:]
table = {}
for name in names:
    d = glob.glob(f"{root}/{name}/*/")[0]
    recs = [json.loads(x) for x in open(d + "measurements.jsonl")]
    for r in recs:
        m = r.get("metric", "")
        if ".sparse24.n" in m and r.get("params", {}).get("cusparselt_alg"):
            p = r["params"]
            table.setdefault(m, {})[name] = (r["value"] / 1e12, p["cusparselt_alg"].get("config_id"),
                                             p.get("search_s"), p.get("sentinel_sm_mhz"), r.get("valid"),
                                             r.get("verified"))
print("metric".ljust(34), *[n.ljust(34) for n in names])
for m in sorted(table):
    cells = []
    for n in names:
        v = table[m].get(n)
        cells.append("-".ljust(34) if v is None else
                     f"{v[0]:7.1f} id{v[1]} s{v[2]} {v[3]} {'ok' if v[4] and v[5] else 'BAD'}".ljust(34))
    print(m.ljust(34), *cells)
