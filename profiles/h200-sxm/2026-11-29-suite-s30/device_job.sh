#!/usr/bin/env bash
# 30th session, one nvidia-h200 hold: the GPU gate on HEAD, then the same-lease A/B against 4667993 (.ab/old.tar; new
# first, new-default under py-spy), then gpu.sparse alone three times per search (sweep, cusparselt), alternating.
#   MODE=start bash .ab/s30.sh      then at once, again and again: MODE=wait bash .ab/s30.sh   until "s30: done"
set -uo pipefail
MODE=${MODE:-wait}; OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s30; WAIT_S=${WAIT_S:-570}
mkdir -p "$OUT"
if [[ "$MODE" == start ]]; then
  rm -rf "$W"; mkdir -p "$W"
  python3 -m pip install -q --no-index --no-deps --target /tmp/spy .ab/py_spy-*.whl > "$W/spy_install.log" 2>&1
  cat > "$W/job.sh" <<'JOB'
set -u; cd "$1"; W=/tmp/s30; export PYTHONUNBUFFERED=1 PATH=/tmp/spy/bin:$PATH; t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
OUT="$W" bash tools/gpu_gate.sh > "$W/gate.log" 2>&1; echo "gate: rc $? at $(el)" >> "$W/walls.txt"; touch "$W/GATE_DONE"
ORDER=new-first SPY=new-default MODE=start WAIT_S=1 OUT="$W/abstart" bash tools/device_suite_ab.sh > "$W/ab_start.log" 2>&1
while [[ ! -f /tmp/ab/DONE ]]; do sleep 2; done
echo "ab: done at $(el)" >> "$W/walls.txt"
export PYTHONPATH=/tmp/site
for i in 1 2 3; do
  for s in sweep library; do
    python3 -m hwprobe run --device 0 --suite ".ab/sparse_$s.toml" --out "$W/sparse/$s-$i" -q > "$W/sparse-$s-$i.log" 2>&1
    echo "sparse $s $i: rc $? at $(el)" >> "$W/walls.txt"
  done
done
touch "$W/DONE"
JOB
  setsid nohup bash "$W/job.sh" "$PWD" > "$W/job.log" 2>&1 < /dev/null &
fi
for _ in $(seq "$WAIT_S"); do [[ -f "$W/DONE" ]] && break; sleep 1; done
cat "$W/walls.txt" /tmp/ab/walls.txt /tmp/ab/cupy_fp64.txt 2>/dev/null
[[ -f "$W/GATE_DONE" ]] && cp "$W/gate.tgz" "$W/gate.md" "$OUT/" 2>/dev/null && tail -14 "$W/gate.md"
[[ -f /tmp/ab/DONE ]] && tar czf "$OUT/ab.tgz" -C /tmp/ab --exclude=old . && echo "ab: copied"
if [[ -f "$W/DONE" ]]; then
  tar czf "$OUT/sparse.tgz" -C "$W" sparse $(cd "$W" && ls sparse-*.log) && echo "s30: done"
else
  echo "s30: still running"; tail -3 "$W/job.log" 2>/dev/null
fi
