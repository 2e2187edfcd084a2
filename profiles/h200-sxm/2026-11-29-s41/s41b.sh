#!/usr/bin/env bash
# 41st session, call 2, one H200: the conv pool's search against the driver's JIT cache size. gpu.torch_kernels' conv
# grid alone, three runs, each its own process: (1) an empty cache at the default size (256 MiB); (2) an empty cache
# with CUDA_CACHE_MAXSIZE 4 GiB; (3) that cache again, full. The cache's size on disk after each.
O=/tmp/s41b-out; W=/tmp/s41b; rm -rf "$W" "$O"; mkdir -p "$W/runs" "$O"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$W/smi.txt"; }
wall() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
git log --oneline -1 > "$W/head.txt" 2>&1; nproc >> "$W/head.txt"; smi
C1=$(mktemp -d); C2=$(mktemp -d)
run() {  # name cache maxsize
  local t0; t0=$(date +%s.%N)
  if [[ -n "$3" ]]; then export CUDA_CACHE_MAXSIZE=$3; else unset CUDA_CACHE_MAXSIZE; fi
  CUDA_CACHE_PATH=$2 timeout 170 python3 -m hwprobe run --device 0 --suite .ab/s41_conv.toml --out "$W/runs/$1" -q \
    > "$W/runs/$1.log" 2>&1
  echo "$1: exit $? wall $(wall $t0) s cache $(du -sm "$2" | cut -f1) MiB files $(find "$2" -type f | wc -l)" | tee -a "$W/walls.txt"
  smi
}
run 1-default "$C1" ""
run 2-big "$C2" 4294967296
run 3-big-full "$C2" 4294967296
tar czf "$O/s41b.tgz" -C "$W" .
