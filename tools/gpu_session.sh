#!/usr/bin/env bash
# One batched session on a lent GPU machine (offline): install carried wheels and hwprobe, then run the
# steps named on the command line, logging everything, and pack the results into $OUT/bundle.tgz.
#   bash tools/gpu_session.sh env tests run:default run:full sigint:compute:25 py:tools/X.py
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hwprobe-out}; mkdir -p "$OUT/work"
log() { echo "== $(date +%T) $*"; }
source tools/device_install.sh; device_install "$OUT/work/install.log" || cat "$OUT/work/install.log"
for step in "$@"; do
  case "$step" in
    env)
      log env; nvidia-smi | tee "$OUT/work/nvidia-smi.txt"
      nvidia-smi -q -d CLOCK,POWER,PERFORMANCE > "$OUT/work/nvidia-smi-q.txt" 2>&1
      python3 -c "import cupy, numpy, numba, pynvml; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'numba', numba.__version__)"
      python3 -c "import nvmath; print('nvmath', nvmath.__version__)" 2>&1 | tail -1
      python3 -m hwprobe list devices; python3 -m hwprobe specs ;;
    tests)
      log "pytest -m gpu"; timeout ${TEST_TIMEOUT:-300} python3 -m pytest -m gpu -q -p no:cacheprovider tests 2>&1 | tee "$OUT/work/pytest-gpu.log" | tail -40 ;;
    tests:*)    # tests:PATH: the GPU tests of one file
      f=${step#tests:}; log "pytest -m gpu $f"; timeout ${TEST_TIMEOUT:-300} python3 -m pytest -m gpu -q -p no:cacheprovider "$f" 2>&1 | tee "$OUT/work/pytest-gpu-$(basename "$f" .py).log" | tail -30 ;;
    run:*)
      s=${step#run:}; log "hwprobe run --suite $s"
      start=$(date +%s%N)
      timeout ${RUN_TIMEOUT:-400} python3 -m hwprobe run --device 0 --suite "$s" --out "$OUT/work/results" 2>&1 | tee "$OUT/work/run-$s.log"
      echo "wall: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/work/run-$s.log" ;;
    sigint:*)   # sigint:SUITE:SECONDS: Ctrl-C a run after SECONDS; it must exit 130 with a partial profile
      a=${step#sigint:}; s=${a%%:*}; secs=${a#*:}; log "hwprobe run --suite $s, SIGINT after $secs s"
      python3 -m hwprobe run --device 0 --suite "$s" --out "$OUT/work/sigint" > "$OUT/work/sigint.out" 2> "$OUT/work/sigint.err" &
      pid=$!; sleep "$secs"; kill -INT $pid; t0=$(date +%s%N); wait $pid; rc=$?
      echo "exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms after SIGINT; $(cat "$OUT"/work/sigint/*/measurements.jsonl | wc -l) measurements kept"
      tail -2 "$OUT/work/sigint.err"
      python3 -c "import json,glob; p=json.load(open(glob.glob('$OUT/work/sigint/*/profile.json')[0])); print('profile partial:', p['partial'])" ;;
    memhog:*|smhog:*)   # memhog:SUITE / smhog:SUITE: run the suite while another process holds 90% of memory / the SMs
      kind=${step%%:*}; s=${step#*:}; log "$kind: hwprobe run --suite $s beside a second process"
      if [ "$kind" = memhog ]; then python3 tools/gpu_hog.py mem 0.9 & else python3 tools/gpu_hog.py sm & fi
      hog=$!; sleep 8
      timeout ${RUN_TIMEOUT:-400} python3 -m hwprobe run --device 0 --suite "$s" --out "$OUT/work/$kind" 2>&1 | tee "$OUT/work/$kind-$s.log" | grep -v "^\s*$" | tail -40
      echo "exit ${PIPESTATUS[0]}"; kill $hog; wait $hog 2>/dev/null ;;
    sigints:*)  # sigints:SUITE:N:MAX: N SIGINTs at random times in 0..MAX s of a run: each must exit 130
      a=${step#sigints:}; s=${a%%:*}; b=${a#*:}; n=${b%%:*}; mx=${b#*:}; log "$n SIGINTs into --suite $s"
      for i in $(seq 1 "$n"); do
        d=$(python3 -c "import random; print(round(random.uniform(0, $mx), 2))")
        python3 -m hwprobe run --device 0 --suite "$s" --out "$OUT/work/sigints" -q > /dev/null 2> "$OUT/work/sigint-$i.err" &
        pid=$!; sleep "$d"; kill -INT $pid; t0=$(date +%s%N); wait $pid; rc=$?
        echo "sigint $i at ${d}s: exit $rc after $(( ($(date +%s%N) - t0) / 1000000 )) ms; traceback: $(grep -c Traceback "$OUT/work/sigint-$i.err")"
      done ;;
    validate:*) # validate:REF: the newest run against a committed reference profile
      ref=${step#validate:}; latest=$(ls -dt "$OUT"/work/results/*/ | head -1); log "validate $latest against $ref"
      python3 -m hwprobe validate "$latest" --against "$ref"; echo "exit $?" ;;
    py:*)
      f=${step#py:}; log "python3 $f"; timeout 400 python3 "$f" 2>&1 | tee "$OUT/work/$(basename "$f").log" ;;
    *) log "unknown step $step" ;;
  esac
done
tar czf "$OUT/bundle.tgz" -C "$OUT/work" . && rm -rf "$OUT/work"
