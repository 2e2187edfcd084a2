#!/usr/bin/env bash
# Issue 33's same-lease A/B on one GPU (offline): this checkout's `default` and `full` suites against an older
# method's, in one lease, with cupy.matmul's FP64 rate before and after; then `hwprobe validate` of the new `full`
# against the old one at 1% (every ceiling within 1%, or higher). The two `full` runs together outlast one device
# command, so the session runs detached and a second command waits for it:
#   here:    bash tools/device_suite_ab.sh pack [COMMIT [TAR]] # .ab/old.tar: the old method's package (default 9fd4823)
#   device:  MODE=start bash tools/device_suite_ab.sh          # starts the session, waits up to WAIT_S (570 s)
#            (ORDER=new-first runs the new full before the old one: the second run meets a warmer GPU;
#             SUITES="predict" pairs other suites than the default "default full": the 2026-11-27 predict A/B
#             was `pack fadb379`, then SUITES=predict ORDER=new-first)
#   device:  MODE=wait bash tools/device_suite_ab.sh           # waits again, then copies the results under $OUT
# (carry [".whl", ".ab/old.tar"]; tools/device_detached.sh runs it in AB_WORK (/tmp/ab): AB_WORK/DONE at its end).
# SPY=new-default (any run's name) records that run with py-spy where it is on PATH (for a wall time to explain).
# KEEP_CACHE=new-full (any run's name) keeps that run's CuPy kernel cache, sources saved, as NAME.cupy-cache/ in the
# results: each file's mtime says when its kernel compiled, against the records' times (which probe paid for it).
set -uo pipefail
MODE=${MODE:-${1:-wait}}; OUT=${OUT:-/tmp/hwprobe-out}; WAIT_S=${WAIT_S:-570}
WORK=${AB_WORK:-/tmp/ab}; export AB_WORK=$WORK      # the session's folder, the job's too
if [[ "$MODE" == pack ]]; then
  tar=${3:-.ab/old.tar}; mkdir -p "$(dirname "$tar")"
  git archive -o "$tar" "${2:-9fd4823}" hwprobe suites && echo "wrote $tar (${2:-9fd4823})"
  exit 0
fi
if [[ "$MODE" == start ]]; then
  rm -rf "$WORK"; mkdir -p "$WORK/old"; tar xf .ab/old.tar -C "$WORK/old" || exit 2
  cat > "$WORK/job.sh" <<'EOF'
set -u; cd "$1"; W=$AB_WORK; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log"
fp64() { python3 tools/cupy_fp64.py >> "$W/cupy_fp64.txt"; }
run() {   # run NAME TREE SUITE: one suite from one tree, its wall time beside it, with an empty CuPy kernel
  local t0 rc; t0=$(date +%s.%N)   # cache and an empty driver JIT cache each (every run compiles its kernels, and
  # the driver cuDNN's runtime-compiled engines, as a first run on a new box does: the second run of a pair would
  # otherwise find the first's engines in ~/.nv/ComputeCache; profiles/h200-sxm/2026-11-28-suite-s27)
  local spy=()   # SPY=NAME: that run under py-spy (on PATH), sampled without pausing it, into $W/NAME.spy.raw
  [[ "${SPY:-}" == "$1" ]] && command -v py-spy > /dev/null && \
    spy=(py-spy record --nonblocking --idle --threads -r 100 -f raw -o "$W/$1.spy.raw" --)
  local cache keep=()
  cache=$(mktemp -d)
  [[ "${KEEP_CACHE:-}" == "$1" ]] && cache="$W/$1.cupy-cache" && mkdir -p "$cache" && keep=(CUPY_CACHE_SAVE_CUDA_SOURCE=1)
  (cd "$2" && env "${keep[@]}" CUPY_CACHE_DIR="$cache" CUDA_CACHE_PATH=$(mktemp -d) "${spy[@]}" python3 -m hwprobe \
    run --device 0 --suite "$3" --out "$W/$1" -q) \
    > "$W/$1.log" 2>&1; rc=$?
  echo "$1: exit $rc wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" >> "$W/walls.txt"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
fp64
for s in ${SUITES:-default full}; do   # each suite's pair: default always new first, the others as ORDER says
  if [[ "$s" == default || "${ORDER:-old-first}" == new-first ]]; then
    run "new-$s" "$PWD" "$s"; run "old-$s" "$W/old" "$s"
  else
    run "old-$s" "$W/old" "$s"; run "new-$s" "$PWD" "$s"
  fi
done
fp64
if [[ " ${SUITES:-default full} " == *" full "* ]]; then
  python3 -m hwprobe validate "$(ls -d $W/new-full/*/ | head -1)" --against "$(ls -d $W/old-full/*/ | head -1)" \
    --tolerance 1% --json > "$W/validate.json" 2> "$W/validate.err"; echo "validate: exit $?" >> "$W/walls.txt"
fi
EOF
  ORDER=${ORDER:-old-first} SUITES=${SUITES:-default full} SPY=${SPY:-} KEEP_CACHE=${KEEP_CACHE:-} WAIT_S=0 \
    bash tools/device_detached.sh start "$WORK" "$WORK/job.sh" "$PWD" > /dev/null
  [[ -f "$WORK/PID" ]] || exit 2
fi
WAIT_S=$WAIT_S bash tools/device_detached.sh wait "$WORK" > /dev/null
cat "$WORK/walls.txt" "$WORK/cupy_fp64.txt" 2>/dev/null
if [[ -f "$WORK/DONE" ]]; then
  mkdir -p "$OUT" && tar czf "$OUT/ab.tgz" -C "$WORK" --exclude=old . && echo "ab: done, $OUT/ab.tgz"
else
  echo "ab: still running (call again with MODE=wait)"
fi
