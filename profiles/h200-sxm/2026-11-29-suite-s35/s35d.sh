#!/usr/bin/env bash
# 35th session, call 4: `full` of d720609 (check in the search, host ceiling at two sizes) alone (cold CuPy and driver JIT caches, as the A/B's runs).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s35d; rm -rf "$W"; mkdir -p "$W" "$OUT"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$W/smi.txt"
t0=$(date +%s.%N)
CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 520 python3 -m hwprobe run --device 0 --suite full --out "$W/full" -q > "$W/full.log" 2>&1
echo "full: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" > "$W/walls.txt"
tar czf "$OUT/full.tgz" -C "$W" . ; cat "$W/walls.txt"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$W/smi.txt"; python3 tools/suite_speed.py costs "$W"/full/* --top 40 > "$OUT/costs.txt" 2>&1; head -30 "$OUT/costs.txt"
cp "$W/smi.txt" "$OUT/"
