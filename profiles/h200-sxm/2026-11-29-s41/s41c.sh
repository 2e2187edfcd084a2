#!/usr/bin/env bash
# 41st session, call 4, one H200, at the final device code (a383a29: the FP8 variants rested): `full` once (its wall
# time and ceilings; not an A/B), cupy.matmul FP64 before and after (tools/cupy_fp64.py), each with empty JIT caches.
O=/tmp/s41c-out; W=/tmp/s41c; rm -rf "$W" "$O"; mkdir -p "$W" "$O"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$W/smi.txt"; }
wall() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
nproc > "$W/host.txt"; smi; python3 tools/cupy_fp64.py >> "$W/cupy_fp64.txt"
t0=$(date +%s.%N)
CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 420 python3 -m hwprobe run --device 0 --suite full \
  --out "$W/full" -q > "$W/full.log" 2>&1
echo "full: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
python3 tools/cupy_fp64.py >> "$W/cupy_fp64.txt"; smi; cat "$W/cupy_fp64.txt"
d=$(ls -d "$W"/full/*/ | head -1); hwprobe report "$d" > "$W/report-full.txt" 2>&1
tar czf "$O/s41c.tgz" -C "$W" .
