#!/usr/bin/env bash
# 35th session, the last hold: the GPU gate on HEAD, then `full` alone (cold CuPy and driver JIT caches).
#   MODE=start bash .ab/s35e.sh      then at once, again and again: MODE=wait bash .ab/s35e.sh   until "s35e: done"
set -uo pipefail
MODE=${MODE:-wait}; OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s35e; WAIT_S=${WAIT_S:-570}
mkdir -p "$OUT"
if [[ "$MODE" == start ]]; then
  rm -rf "$W"; mkdir -p "$W"
    cat > "$W/job.sh" <<'JOB'
set -u; cd "$1"; W=/tmp/s35e; export PYTHONUNBUFFERED=1; t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
OUT="$W" bash tools/gpu_gate.sh > "$W/gate.log" 2>&1; echo "gate: rc $? at $(el)" >> "$W/walls.txt"; touch "$W/GATE_DONE"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$W/smi.txt"
t1=$(date +%s.%N)
CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 520 python3 -m hwprobe run --device 0 --suite full --out "$W/full" -q > "$W/full.log" 2>&1
echo "full: exit $? wall $(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" >> "$W/walls.txt"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$W/smi.txt"
python3 tools/suite_speed.py costs "$W"/full/* --top 40 > "$W/costs.txt" 2>&1
touch "$W/DONE"
JOB
  setsid nohup bash "$W/job.sh" "$PWD" > "$W/job.log" 2>&1 < /dev/null &
fi
for _ in $(seq "$WAIT_S"); do [[ -f "$W/DONE" ]] && break; sleep 1; done
cat "$W/walls.txt" 2>/dev/null
[[ -f "$W/GATE_DONE" ]] && cp "$W/gate.tgz" "$W/gate.md" "$OUT/" 2>/dev/null && tail -14 "$W/gate.md"
if [[ -f "$W/DONE" ]]; then
  tar czf "$OUT/full.tgz" -C "$W" full full.log smi.txt costs.txt walls.txt; head -28 "$W/costs.txt"
  echo "s35e: done"
else
  echo "s35e: still running"; tail -3 "$W/job.log" 2>/dev/null
fi
