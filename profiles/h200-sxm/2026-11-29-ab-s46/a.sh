#!/usr/bin/env bash
# 46th session, call 1, one H200: the held-timing branch's GPU tests; FP8 2:4's library pick and a split-k scan;
# gpu.sparse FP8 16384 by sweep and by library search, alternating.
set -uo pipefail
export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
t0=$(date +%s)
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_hold.py tests/gpu/test_gpu_fma.py \
  > "$OUT/tests.txt" 2>&1; echo "tests: exit $? in $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/tests.txt"
t0=$(date +%s)
timeout 150 python3 .ab/s46/fp8_splitk.py 16384 "$OUT/fp8_splitk.json" > "$OUT/fp8_splitk.txt" 2>&1
echo "scan: exit $? in $(( $(date +%s) - t0 )) s"; cat "$OUT/fp8_splitk.txt" | tail -40
mkdir -p /tmp/sp
for r in 1 2; do for s in sweep cusparselt; do
  t0=$(date +%s)
  timeout 60 python3 -m hwprobe run --device 0 --suite .ab/s46/sp_$s.toml --out /tmp/sp/$s$r -q > /tmp/sp/$s$r.log 2>&1
  echo "$s round $r: exit $? in $(( $(date +%s) - t0 )) s"
  python3 - "$s$r" <<'PY'
import json, glob, sys
for f in glob.glob(f"/tmp/sp/{sys.argv[1]}/*/*.jsonl"):
    for line in open(f):
        r = json.loads(line)
        if "sparse24" in r.get("metric", ""):
            p = r.get("params", {})
            print(r["metric"], round(r["value"] / 1e12, 1), p.get("cusparselt_alg"), p.get("finalist_rates"),
                  (r.get("clocks") or {}).get("sm_mhz"))
PY
done; done
tar czf "$OUT/sp.tgz" -C /tmp sp; ls -la "$OUT"
