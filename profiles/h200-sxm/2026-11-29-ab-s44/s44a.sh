#!/usr/bin/env bash
# 44th session, call 1, one H200: the merged gpu.gemm rest commits' GPU tests, then gpu.gemm, gpu.sparse and
# gpu.gemm_power in one process under cProfile (where their "rest" seconds go).
set -uo pipefail
export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
t0=$(date +%s)
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_gemm.py \
  -k "rested or sweep_ceilings or fp64_library or gemm_power" > "$OUT/pre.txt" 2>&1; echo "tests: exit $? in $(( $(date +%s) - t0 )) s"
tail -3 "$OUT/pre.txt"
mkdir -p /tmp/p; t0=$(date +%s)
timeout 200 python3 -m cProfile -o /tmp/p/prof.out -m hwprobe run --device 0 --suite .ab/s44_sp.toml --out /tmp/p/run -q \
  > /tmp/p.log 2>&1 || true
echo "prof run: $(( $(date +%s) - t0 )) s"; tail -5 /tmp/p.log
python3 -m hwprobe report "$(ls -d /tmp/p/run/*/ | head -1)" 2>/dev/null | grep -A25 "Probe wall time"
tar czf "$OUT/prof.tgz" -C /tmp p p.log; ls -la "$OUT"
