#!/usr/bin/env bash
# 43rd session, call 1, one H200: the changed GEMM tests on the GPU; if they pass, start the `full` A/B (detached).
set -uo pipefail
export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
t0=$(date +%s)
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_gemm.py \
  -k "rested or sweep_ceilings or fp64_library" -s > "$OUT/pre.txt" 2>&1; rc=$?
echo "pre-check: exit $rc in $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/pre.txt"
[[ $rc == 0 ]] || exit 3
MODE=start WAIT_S=${WAIT_S:-470} bash tools/device_suite_ab.sh
