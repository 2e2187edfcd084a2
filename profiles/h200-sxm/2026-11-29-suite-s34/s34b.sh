#!/usr/bin/env bash
# 34th session, one nvidia-h200 hold: the GPU gate on HEAD, then the same-lease A/B against 9fd4823 (.ab/old.tar; old first).
#   MODE=start bash .ab/s34b.sh      then at once, again and again: MODE=wait bash .ab/s34b.sh   until "s34b: done"
set -uo pipefail
MODE=${MODE:-wait}; OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s34b; WAIT_S=${WAIT_S:-570}
mkdir -p "$OUT"
if [[ "$MODE" == start ]]; then
  rm -rf "$W"; mkdir -p "$W"
    cat > "$W/job.sh" <<'JOB'
set -u; cd "$1"; W=/tmp/s34b; export PYTHONUNBUFFERED=1; t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
OUT="$W" bash tools/gpu_gate.sh > "$W/gate.log" 2>&1; echo "gate: rc $? at $(el)" >> "$W/walls.txt"; touch "$W/GATE_DONE"
MODE=start WAIT_S=1 OUT="$W/abstart" bash tools/device_suite_ab.sh > "$W/ab_start.log" 2>&1
while [[ ! -f /tmp/ab/DONE ]]; do sleep 2; done
echo "ab: done at $(el)" >> "$W/walls.txt"
touch "$W/DONE"
JOB
  setsid nohup bash "$W/job.sh" "$PWD" > "$W/job.log" 2>&1 < /dev/null &
fi
for _ in $(seq "$WAIT_S"); do [[ -f "$W/DONE" ]] && break; sleep 1; done
cat "$W/walls.txt" /tmp/ab/walls.txt /tmp/ab/cupy_fp64.txt 2>/dev/null
[[ -f "$W/GATE_DONE" ]] && cp "$W/gate.tgz" "$W/gate.md" "$OUT/" 2>/dev/null && tail -14 "$W/gate.md"
[[ -f /tmp/ab/DONE ]] && tar czf "$OUT/ab.tgz" -C /tmp/ab --exclude=old . && echo "ab: copied"
if [[ -f "$W/DONE" ]]; then
  echo "s34b: done"
else
  echo "s34b: still running"; tail -3 "$W/job.log" 2>/dev/null
fi
