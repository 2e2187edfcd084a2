#!/usr/bin/env bash
# 36th session, one H200 lease: the GPU gate on HEAD, then issue 33's same-lease A/B against 9fd4823
# (tools/device_suite_ab.sh: default new/old, full old then new, cupy FP64 before and after, validate at 1%).
#   MODE=start bash .ab/s36a.sh      then again and again: MODE=wait bash .ab/s36a.sh   until "s36a: done"
set -uo pipefail
MODE=${MODE:-wait}; OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s36a; WAIT_S=${WAIT_S:-570}
mkdir -p "$OUT"
if [[ "$MODE" == start ]]; then
  rm -rf "$W"; mkdir -p "$W"
  cat > "$W/job.sh" <<'JOB'
set -u; cd "$1"; W=/tmp/s36a; export PYTHONUNBUFFERED=1; t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
OUT="$W" bash tools/gpu_gate.sh > "$W/gate.log" 2>&1; echo "gate: rc $? at $(el)" >> "$W/walls.txt"; touch "$W/GATE_DONE"
MODE=start WAIT_S=1 bash tools/device_suite_ab.sh > "$W/ab-start.log" 2>&1
while [[ ! -f /tmp/ab/DONE ]]; do sleep 2; done; echo "ab: done at $(el)" >> "$W/walls.txt"
python3 tools/suite_speed.py costs /tmp/ab/new-full/* --against /tmp/ab/old-full/* --top 40 > "$W/costs.txt" 2>&1
touch "$W/DONE"
JOB
  setsid nohup bash "$W/job.sh" "$PWD" > "$W/job.log" 2>&1 < /dev/null &
fi
for _ in $(seq "$WAIT_S"); do [[ -f "$W/DONE" ]] && break; sleep 1; done
cat "$W/walls.txt" /tmp/ab/walls.txt /tmp/ab/cupy_fp64.txt 2>/dev/null
[[ -f "$W/GATE_DONE" ]] && cp "$W/gate.tgz" "$W/gate.md" "$OUT/" 2>/dev/null && tail -10 "$W/gate.md"
if [[ -f "$W/DONE" ]]; then
  tar czf "$OUT/ab.tgz" -C /tmp/ab --exclude=old . && cp "$W/costs.txt" "$OUT/"; head -45 "$W/costs.txt"
  echo "s36a: done"
else
  echo "s36a: still running"; tail -3 "$W/job.log" 2>/dev/null
fi
