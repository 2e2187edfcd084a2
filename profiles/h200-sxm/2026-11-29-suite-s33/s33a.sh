#!/usr/bin/env bash
# 33rd session, call 1 (nvidia-h200): gpu.sparse alone, four ways, two rounds in rotating order: sweep with the steady
# settle (S, the default), sweep with the fixed 0.25 s (F), the library search steady (L) and fixed (LF).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s33a; rm -rf "$W"; mkdir -p "$W" "$OUT"
export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
t0=$(date +%s); end=$((t0 + ${BUDGET_S:-540}))
for r in 1 2; do
  order="S F L LF"; [[ $r == 2 ]] && order="LF L F S"
  for v in $order; do
    (( $(date +%s) + 45 > end )) && { echo "skip $v-$r: time" >> "$W/walls.txt"; continue; }
    s=$(date +%s.%N)
    python3 -m hwprobe run --device 0 --suite ".ab/s33_$v.toml" --out "$W/runs/$v-$r" -q > "$W/$v-$r.log" 2>&1
    echo "$v-$r: rc $? wall $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" >> "$W/walls.txt"
  done
done
cat "$W/walls.txt"
tar czf "$OUT/s33a.tgz" -C "$W" .
