#!/usr/bin/env bash
# 43rd session, call 5, one H200: gpu.gemm alone, three rounds (how far the library ceilings move, rested).
set -uo pipefail
export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
t0=$(date +%s)
timeout 170 python3 -m hwprobe run --device 0 --suite .ab/s43_gemm.toml --rounds 3 --out /tmp/g -q > /tmp/g.log 2>&1
echo "gemm x3: exit $? in $(( $(date +%s) - t0 )) s"
tar czf "$OUT/gemm3.tgz" -C /tmp g /tmp/g.log 2>/dev/null; ls -la "$OUT"
