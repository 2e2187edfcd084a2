#!/usr/bin/env bash
# 45th session, call 2, same hold: wait for the A/B; once it is done and time is left in this call, the GPU gate.
set -uo pipefail
t0=$(date +%s)
WAIT_S=${WAIT_S:-420} MODE=wait bash tools/device_suite_ab.sh
if [[ -f /tmp/ab/DONE ]] && (( $(date +%s) - t0 < ${GATE_BY:-330} )); then
  echo "gate at $(( $(date +%s) - t0 )) s into the call"; OUT="$OUT" bash tools/gpu_gate.sh; echo "gate: exit $?"
else
  echo "no gate in this call ($(( $(date +%s) - t0 )) s in)"
fi
ls -la "$OUT"
