#!/usr/bin/env bash
# 39th session, call 3: (1) issue 33's two short ceilings alone, ABBA (new, old, old, new), each its own process with
# empty JIT caches; (2) issue 32: torch._grouped_mm at synthetic routings (s39_grouped.py).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s39b; rm -rf "$W"; mkdir -p "$W/old" "$W/runs" "$OUT"; export PYTHONUNBUFFERED=1
tar xf .ab/old.tar -C "$W/old"; cp .ab/s39_abba.toml "$W/"
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
i=0
for v in N O O N; do
  i=$((i + 1)); tree=$PWD; [[ $v == O ]] && tree=$W/old; t0=$(date +%s.%N)
  (cd "$tree" && CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 150 python3 -m hwprobe run --device 0 \
    --suite "$W/s39_abba.toml" --out "$W/runs/$i-$v" -q) > "$W/runs/$i-$v.log" 2>&1
  echo "$i-$v: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee -a "$W/walls.txt"
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> "$W/smi.txt"
t0=$(date +%s.%N)
timeout 200 python3 .ab/s39_grouped.py "$W/grouped.jsonl" > "$W/grouped.log" 2>&1
echo "grouped: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee -a "$W/walls.txt"
tail -3 "$W/grouped.log"
rm -rf "$W/old"; tar czf "$OUT/s39b.tgz" -C "$W" .
