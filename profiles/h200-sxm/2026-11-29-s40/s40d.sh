#!/usr/bin/env bash
# 40th session, call 5, nvidia-h200-x2, at the final device code (4532258), with the 387 s of device time left: the
# gate's multi-GPU steps (default, multigpu, p2p, mpi, acceptance) and the interconnect GPU tests; the whole pytest -m
# gpu ran on one H200 at the same code (call 4), and on x2 it takes ~260 s, more than was left.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s40d; rm -rf "$W"; mkdir -p "$W/gate" "$OUT"
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi > "$W/gate/nvidia-smi.txt" 2>&1; nvidia-smi topo -m > "$W/gate/topo.txt" 2>&1
t0=$(date +%s); python3 tools/gpu_gate.py --out "$W/gate" --steps default,multigpu,p2p,mpi,acceptance > "$W/gate.log" 2>&1
echo "gate steps: exit $? wall $(( $(date +%s) - t0 )) s"; cat "$W/gate/gate.md"
t0=$(date +%s); timeout 200 python3 -m pytest -m gpu -q tests/gpu/test_gpu_interconnect.py > "$W/pytest-interconnect.log" 2>&1
echo "interconnect tests: exit $? wall $(( $(date +%s) - t0 )) s"; tail -2 "$W/pytest-interconnect.log"
cp "$W/gate/gate.md" "$OUT/"; tar czf "$OUT/s40d.tgz" -C "$W" .
