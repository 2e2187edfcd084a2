#!/usr/bin/env bash
# 36th session: the same-lease A/B's two short ceilings (BF16 library, FP8 2:4) alone, new and old methods in
# ABBA order (new, old, old, new), each run its own process with empty CuPy and driver JIT caches.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s36b; rm -rf "$W"; mkdir -p "$W/old" "$OUT"; export PYTHONUNBUFFERED=1
tar xf .ab/old.tar -C "$W/old"; cp .ab/s36b.toml "$W/"
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$W/smi.txt"
i=0
for who in new old old new; do
  i=$((i + 1)); tree=$PWD; [[ $who == old ]] && tree=$W/old; t0=$(date +%s.%N)
  (cd "$tree" && CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 150 python3 -m hwprobe run --device 0 \
    --suite "$W/s36b.toml" --out "$W/$i-$who" -q) > "$W/$i-$who.log" 2>&1
  echo "$i-$who: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee -a "$W/walls.txt"
  python3 - "$W/$i-$who" <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/*/measurements.jsonl"):
    for line in open(f):
        r = json.loads(line)
        if r.get("metric") in ("bf16.tensor_core.cublas", "bf16.tensor_core.cublaslt", "fp8_e4m3.tensor_core.sparse24"):
            c = r.get("clocks") or {}; p = r.get("params") or {}
            print(f"  {r['metric']:34s} {r['value'] / 1e12:8.1f}  n{p.get('n')}  {c.get('sm_mhz')} MHz  {c.get('temp_c')} C"
                  f"  sentinel {p.get('sentinel_sm_mhz')}")
PY
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$W/smi.txt"
rm -rf "$W/old"; tar czf "$OUT/s36b.tgz" -C "$W" .
