#!/usr/bin/env bash
# 38th session, issue 33: the FP64 library ceiling against cupy.matmul in one lease, at the final commit's device
# code: cupy, hwprobe's gpu.gemm FP64, cupy again (the sandwich of earlier sessions).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
cupy_fp64() { python3 - <<'PY' >> "$OUT/cupy_fp64.txt"
import cupy as cp
a = cp.random.rand(8192, 8192); b = cp.random.rand(8192, 8192); s, e = cp.cuda.Event(), cp.cuda.Event()
for _ in range(3): a @ b
ts = []
for _ in range(20):
    s.record(); a @ b; e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
ts.sort(); print(f"cupy.matmul fp64 8192: median {2 * 8192 ** 3 / ts[10] / 1e12:.2f} TFLOP/s")
PY
}
cupy_fp64
CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 200 python3 -m hwprobe run --device 0 \
  --suite profiles/h200-sxm/2026-11-29-moe-routing-s38/s38f_gemm.toml --precision fp64 --out /tmp/s38f -q \
  > "$OUT/gemm-fp64.log" 2>&1; echo "gemm exit $?"
cupy_fp64; cat "$OUT/cupy_fp64.txt"
R=$(ls -d /tmp/s38f/*/ | head -1); gzip -c "$R/measurements.jsonl" > "$OUT/gemm-fp64.jsonl.gz"; cp "$R/environment.json" "$OUT/"
