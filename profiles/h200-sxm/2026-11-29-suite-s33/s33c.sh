#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s33c; rm -rf "$W"; mkdir -p "$W" "$OUT"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
t0=$(date +%s); end=$((t0 + ${BUDGET_S:-180}))
for v in P-1 S-1 S-2 P-2; do
  (( $(date +%s) + 44 > end )) && { echo "skip $v: time" >> "$W/walls.txt"; continue; }
  s=$(date +%s.%N)
  python3 .ab/s33c_pad.py "$W/runs/$v" "${v%-*}" > "$W/$v.log" 2>&1
  echo "$v: rc $? wall $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" >> "$W/walls.txt"
  tar czf "$OUT/s33c.tgz" -C "$W" .
done
cat "$W/walls.txt"
