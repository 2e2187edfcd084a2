#!/usr/bin/env bash
# 46th session, call 2, one H200: the held-timing branch's GPU tests (held batches, gpu.fma beside a GIL hog);
# if they pass, start the `full` A/B (.ab/old.tar = 9fd4823, old first) and wait.
set -uo pipefail
export PYTHONUNBUFFERED=1
t00=$(date +%s)
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/gpu/test_gpu_hold.py tests/gpu/test_gpu_fma.py \
  > "$OUT/tests.txt" 2>&1; rc=$?; echo "tests: exit $rc in $(( $(date +%s) - t00 )) s"
grep -E "^fp64 dfma|^unheld|passed|failed" "$OUT/tests.txt" | tail -6
if (( rc != 0 )); then echo "no A/B"; exit 1; fi
MODE=start WAIT_S=$(( 575 - ($(date +%s) - t00) )) bash tools/device_suite_ab.sh
