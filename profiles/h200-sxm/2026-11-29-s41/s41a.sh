#!/usr/bin/env bash
# 41st session, call 1, one H200: gpu.gemm_fp8 alone N O N against 9fd4823 (the variants now rested); the conv
# timing phase's steps (.ab/s41_convtime.py); the GPU gate at this commit.
set -uo pipefail
O=/tmp/s41a-out; W=/tmp/s41a; rm -rf "$W" "$O"; mkdir -p "$W/old" "$W/runs" "$O"; export PYTHONUNBUFFERED=1
R=$PWD
tar xf .ab/old.tar -C "$W/old"
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$W/smi.txt"; }
wall() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
git log --oneline -1 > "$W/head.txt" 2>&1; smi; i=0
for v in N O N; do
  i=$((i + 1)); tree=$PWD; [[ $v == O ]] && tree=$W/old; t0=$(date +%s.%N)
  (cd "$tree" && CUPY_CACHE_DIR=$(mktemp -d) timeout 150 python3 -m hwprobe run --device 0 \
    --suite "$R/.ab/s41_fp8.toml" --out "$W/runs/$i-$v" -q) > "$W/runs/$i-$v.log" 2>&1
  echo "$i-$v: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
done
smi; t0=$(date +%s.%N)
timeout 200 python3 .ab/s41_convtime.py "$W/convtime.json" > "$W/convtime.log" 2>&1
echo "convtime: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"; grep -v "^{" "$W/convtime.log" | tail -8
smi; t0=$(date +%s.%N)
OUT=$W/gateout bash tools/gpu_gate.sh > "$W/gate.log" 2>&1
echo "gate: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
smi; cp "$W/gateout/gate.tgz" "$W/gateout/gate.md" "$O/"; cat "$W/gateout/gate.md"
rm -rf "$W/old" "$W/gateout"; tar czf "$O/s41a.tgz" -C "$W" .
