#!/usr/bin/env bash
# 46th session, call 3, same hold: wait for the A/B; then the GPU gate if it can start by GATE_BY s into the call.
set -uo pipefail
t0=$(date +%s)
WAIT_S=${WAIT_S:-300} MODE=wait bash tools/device_suite_ab.sh
if [[ -f /tmp/ab/DONE ]] && (( $(date +%s) - t0 < ${GATE_BY:-290} )); then
  echo "gate at $(( $(date +%s) - t0 )) s into the call"; OUT="$OUT" bash tools/gpu_gate.sh; echo "gate: exit $?"
else
  echo "no gate in this call ($(( $(date +%s) - t0 )) s in)"
fi
ls -la "$OUT"
