#!/usr/bin/env bash
# The GPU gate on a lent GPU machine (offline), from the repository root: install the carried wheels (.whl/) and
# hwprobe (editable, no deps), then tools/gpu_gate.py with any arguments it takes. Logs and results go to $OUT.
#   bash tools/gpu_gate.sh [--steps tests,default,multigpu,p2p,mpi,acceptance]
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hwprobe-gate}; mkdir -p "$OUT/gate"
source tools/device_install.sh
device_install "$OUT/gate/install.log" || { cat "$OUT/gate/install.log"; echo "gpu_gate: install failed"; exit 1; }
nvidia-smi > "$OUT/gate/nvidia-smi.txt" 2>&1; nvidia-smi topo -m > "$OUT/gate/topo.txt" 2>&1
python3 tools/gpu_gate.py --out "$OUT/gate" "$@"; rc=$?
cp "$OUT/gate/gate.md" "$OUT/" 2>/dev/null
tar czf "$OUT/gate.tgz" -C "$OUT" gate && rm -rf "$OUT/gate"
exit $rc
