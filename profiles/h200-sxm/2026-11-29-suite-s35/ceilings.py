# The ceilings of several runs side by side (host in GB/s, the rest in T/s), the last against the first and second:
#   python3 ceilings.py NAME PROFILE NAME PROFILE ...
import gzip, json, sys
def load(p):
    return json.load(gzip.open(p) if p.endswith(".gz") else open(p))
def ceilings(d):
    out = {}
    def walk(o):
        if isinstance(o, dict):
            if "metric" in o and "value" in o and isinstance(o.get("value"), (int, float)) and o.get("params", {}).get("ceiling", True) is not False:
                out.setdefault(o["metric"], o["value"])
            for v in o.values(): walk(v)
        elif isinstance(o, list):
            for v in o: walk(v)
    for sec in ("compute", "memory"):
        walk(d.get(sec, {}))
    return out
names = sys.argv[1::2]; paths = sys.argv[2::2]
cs = [ceilings(load(p)) for p in paths]
keys = [k for k in cs[0] if all(k in c for c in cs)]
print("metric".ljust(52), *[n.rjust(10) for n in names], "  last/first  last/2nd")
low = 0
for k in keys:
    v = [c[k] for c in cs]
    r = v[-1] / v[0] if v[0] else float("nan"); r2 = v[-1] / v[1] if v[1] else float("nan")
    flag = " <" if r < 0.99 else ""
    low += r < 0.99
    print(k[:52].ljust(52), *[f"{x/1e9 if k.startswith('host.') else x/1e12:10.2f}" for x in v], f"  {r:8.4f}  {r2:8.4f}{flag}")
print(len(keys), "common;", low, "below 0.99 of the first")
