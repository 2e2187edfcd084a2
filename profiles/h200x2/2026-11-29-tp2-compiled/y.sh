#!/usr/bin/env bash
# 48th session, call 2, nvidia-h200-x2: where a compiled tp-2 decode step's time goes (.ab/s48/tpdiag.py).
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
t00=$(date +%s)
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
W=/tmp/s48y; mkdir -p $W
DIAG_OUT=$W/tpdiag.json timeout 420 torchrun --nproc-per-node 2 .ab/s48/tpdiag.py > $W/tpdiag.log 2>&1
echo "diag: exit $? at $(( $(date +%s) - t00 )) s"; grep -v Warning $W/tpdiag.log | grep -E "^[a-z]" | cut -c1-1500
tar czf "$OUT/s48y.tgz" -C /tmp s48y
