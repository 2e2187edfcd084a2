#!/usr/bin/env bash
# 40th session, one H200, detached (tools/device_detached.sh start, then wait): at the session's final device code,
# (1) `full` once, with cupy.matmul FP64 before and after (its wall time and ceilings; not an A/B); (2) issue 33:
# FP64 cuBLAS and the FP8 cuBLASLt ceiling alone, N O O N against 9fd4823 (.ab/old.tar), each its own process with
# empty JIT caches; (3) issue 32: the rotate_cat curve again (points from two tokens: add40.toml); (4) the GPU gate.
set -uo pipefail
W=/tmp/s40b; rm -rf "$W"; mkdir -p "$W/old" "$W/runs"; export PYTHONUNBUFFERED=1
R=$PWD; E=profiles/h200-sxm/2026-11-29-s40
tar xf .ab/old.tar -C "$W/old"
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$W/smi.txt"; }
fp64() { python3 - <<'PY' >> "$W/cupy_fp64.txt"
import cupy as cp
a = cp.random.rand(8192, 8192); b = cp.random.rand(8192, 8192); s, e = cp.cuda.Event(), cp.cuda.Event()
for _ in range(3): a @ b
ts = []
for _ in range(20):
    s.record(); a @ b; e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
ts.sort(); print(f"cupy.matmul fp64 8192: median {2 * 8192 ** 3 / ts[10] / 1e12:.2f} TFLOP/s")
PY
}
wall() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
smi; fp64
t0=$(date +%s.%N)
CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 420 python3 -m hwprobe run --device 0 --suite full \
  --out "$W/full" -q > "$W/full.log" 2>&1
echo "full: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
fp64; smi
i=0
for v in N O O N; do
  i=$((i + 1)); tree=$PWD; [[ $v == O ]] && tree=$W/old; t0=$(date +%s.%N)
  (cd "$tree" && CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 150 python3 -m hwprobe run --device 0 \
    --suite "$R/$E/s40_abba.toml" --out "$W/runs/$i-$v" -q) > "$W/runs/$i-$v.log" 2>&1
  echo "$i-$v: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
done
smi
t0=$(date +%s.%N)
timeout 120 hwprobe run --device 0 --suite profiles/h200-sxm/2026-11-27-predict-generic/add40.toml --out "$W/add40" \
  > "$W/add40.log" 2>&1
echo "add40: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
smi
t0=$(date +%s.%N)
OUT=$W/gateout bash tools/gpu_gate.sh > "$W/gate.log" 2>&1
echo "gate: exit $? wall $(wall $t0) s" | tee -a "$W/walls.txt"
smi
rm -rf "$W/old"
