#!/usr/bin/env bash
# 40th session, call 4, one H200, at the session's final device code (4532258: a rested FP8 window's five samples in
# one batch): FP64 cuBLAS and the FP8 cuBLASLt ceiling alone, N O O N against 9fd4823 (.ab/old.tar), then the GPU gate.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s40c; rm -rf "$W"; mkdir -p "$W/old" "$W/runs" "$OUT"; export PYTHONUNBUFFERED=1
R=$PWD; E=profiles/h200-sxm/2026-11-29-s40
tar xf .ab/old.tar -C "$W/old"
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$W/smi.txt"; }
wall() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
smi; i=0
for v in N O O N; do
  i=$((i + 1)); tree=$PWD; [[ $v == O ]] && tree=$W/old; t0=$(date +%s.%N)
  (cd "$tree" && CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 150 python3 -m hwprobe run --device 0 \
    --suite "$R/$E/s40_abba.toml" --out "$W/runs/$i-$v" -q) > "$W/runs/$i-$v.log" 2>&1
  echo "$i-$v: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
done
smi; t0=$(date +%s.%N)
OUT=$W/gateout bash tools/gpu_gate.sh > "$W/gate.log" 2>&1
echo "gate: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
smi; cp "$W/gateout/gate.tgz" "$W/gateout/gate.md" "$OUT/"; cat "$W/gateout/gate.md"
rm -rf "$W/old" "$W/gateout"; tar czf "$OUT/s40c.tgz" -C "$W" .
