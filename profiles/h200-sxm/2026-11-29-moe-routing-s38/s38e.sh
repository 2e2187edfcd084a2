#!/usr/bin/env bash
# 38th session: `hwprobe run --suite full` once at this session's device code (3689aa4's, unchanged since), empty
# JIT caches, as tools/device_suite_ab.sh runs it: the session's ceilings against theory, and the suite's wall on this
# lease (issue 33; no old method beside it: not an A/B).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv > "$OUT/smi-e.txt"
W=/tmp/s38e; rm -rf "$W"; mkdir -p "$W"; t0=$(date +%s.%N)
CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 520 python3 -m hwprobe run --device 0 --suite full \
  --out "$W/full" -q > "$W/full.log" 2>&1; rc=$?
echo "full: exit $rc wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee "$OUT/walls-e.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$OUT/smi-e.txt"
R=$(ls -d $W/full/*/ | head -1); gzip -c "$R/measurements.jsonl" > "$OUT/measurements.jsonl.gz"
cp "$R/environment.json" "$OUT/"; gzip -c "$R/profile.json" > "$OUT/profile.json.gz"; tail -3 "$W/full.log"
