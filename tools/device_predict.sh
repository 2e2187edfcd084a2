#!/usr/bin/env bash
# Predictions on one GPU (offline), in about 7 minutes: install the carried wheels (.whl/) and hwprobe, then
#   1. hwprobe run --suite predict (the prediction calibration; ~4-5 min),
#   2. tools/validate_models.py --no-export (the real models timed: eager, CUDA graph, kernels with start times),
#   3. tools/validate_llm.py (Llama-3.2-1B / Llama-3-8B shapes, prefill and decode in CUDA graphs; ~30 s),
#   4. the calibration GPU tests (STEPS may name a subset: predict,validate,llm,tests).
# Everything lands under $OUT: status.txt, session.log and one folder per step.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/hwprobe-out}; mkdir -p "$OUT"
STEPS=${STEPS:-predict,validate,llm,tests}
T0=$(date +%s)
log() { echo "== $(date +%T) (+$(( $(date +%s) - T0 )) s) $*" | tee -a "$OUT/session.log"; }
status() { echo "$1: exit $2" | tee -a "$OUT/status.txt"; }
want() { [[ ",$STEPS," == *",$1,"* ]]; }
: > "$OUT/status.txt"
log "install"
source tools/device_install.sh; device_install "$OUT/install.log"; status install $?
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv >> "$OUT/session.log"
if want predict; then
  log "predict suite"; python3 -m hwprobe run --device 0 --suite predict --out "$OUT/predict" -q > "$OUT/predict.log" 2>&1
  status predict $?
fi
if want validate; then
  log "validate models"
  python3 tools/validate_models.py --out "$OUT/validate" --no-export > "$OUT/validate.log" 2>&1; status validate $?
fi
if want llm; then
  log "validate LLM"
  mkdir -p "$OUT/validate"; python3 tools/validate_llm.py --out "$OUT/validate/llm_measured.json" > "$OUT/llm.log" 2>&1
  status llm $?
fi
if want tests; then
  log "GPU tests"; python3 -m pytest -q -m gpu tests/gpu/test_gpu_calibration.py > "$OUT/pytest-gpu.log" 2>&1
  status tests $?
fi
log "pack"          # the device returns at most 8 files: the result folders go back as one archive
tar czf "$OUT/bundle.tgz" -C "$OUT" $(cd "$OUT" && ls -d predict validate 2>/dev/null) && rm -rf "$OUT"/predict \
  "$OUT"/validate
status pack $?
log "done"
