#!/usr/bin/env bash
# 42nd session, call 2, one H200: wait for the `full` A/B (call 1 started it), then the GPU gate at this commit.
set -uo pipefail
export PYTHONUNBUFFERED=1
wall() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
WAIT_S=${WAIT_S:-330} MODE=wait bash tools/device_suite_ab.sh
[[ -f /tmp/ab/DONE ]] || { echo "A/B not done: no gate"; exit 3; }
t0=$(date +%s.%N)
OUT=/tmp/s42gate bash tools/gpu_gate.sh > /tmp/s42gate.log 2>&1
echo "gate: exit $? wall $(wall $t0) s"
cp /tmp/s42gate/gate.tgz /tmp/s42gate/gate.md "$OUT/" 2>/dev/null; cat /tmp/s42gate/gate.md
tail -5 /tmp/s42gate.log > "$OUT/gate-log-tail.txt"
