#!/usr/bin/env bash
# The held-out model zoo on one GPU (offline), in about 6 minutes on an H200: install the carried wheels and
# hwprobe, time every held-out model (tools/zoo_heldout.py: FP16, eager and CUDA graph, kernel lists; CNNs BN-folded
# in both layouts), then, with EXPORT=1, export them to ONNX in parallel processes that time nothing (the ONNX
# graph does not depend on the GPU: one GPU's exports serve the other's timings). One archive comes back.
#   OUT=... [EXPORT=1] [TIME_S=420] [ONLY=name,name] bash tools/device_zoo.sh
# Each timing run is saved after every model, so a run cut at TIME_S keeps the models it finished.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/hwprobe-out}; mkdir -p "$OUT/zoo"
EXPORT=${EXPORT:-1}; TIME_S=${TIME_S:-420}; ONLY=${ONLY:-}
T0=$(date +%s)
log() { echo "== $(date +%T) (+$(( $(date +%s) - T0 )) s) $*" | tee -a "$OUT/session.log"; }
status() { echo "$1: exit $2" | tee -a "$OUT/status.txt"; }
: > "$OUT/status.txt"
log "install"
source tools/device_install.sh; device_install "$OUT/install.log"; status install $?
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv >> "$OUT/session.log"
only=(); [[ -n "$ONLY" ]] && only=(--only "$ONLY")
log "time cnn"
timeout "$TIME_S" python3 tools/zoo_heldout.py --family cnn "${only[@]}" --out "$OUT/zoo/time-cnn" \
  --no-export --cnn-variants bn_folded,bn_folded_nhwc > "$OUT/zoo/time-cnn.log" 2>&1
status time-cnn $?
# Transformers one process each: a CUDA-graph capture that fails (OPT's mask) leaves the CUDA generator in
# capture state, and every model built after it in the same process fails ("Offset increment outside graph capture").
log "time transformer"
for m in $(python3 tools/zoo_heldout.py --list | awk '$2 == "transformer" && $3 == "held_out" {print $1}'); do
  [[ -n "$ONLY" && ",$ONLY," != *",$m,"* ]] && continue
  timeout "$TIME_S" python3 tools/zoo_heldout.py --only "$m" --out "$OUT/zoo/time-transformer/$m" --no-export \
    >> "$OUT/zoo/time-transformer.log" 2>&1
  status "time-$m" $?
done
if [[ "$EXPORT" == 1 ]]; then
  log "export (6 processes)"
  for s in 1/4 2/4 3/4 4/4; do
    python3 tools/zoo_heldout.py --family cnn --shard "$s" "${only[@]}" --out "$OUT/zoo/export-cnn-${s%/*}" \
      --no-timing --budget-s 400 --cnn-variants bn_folded > "$OUT/zoo/export-cnn-${s%/*}.log" 2>&1 &
  done
  for s in 1/2 2/2; do
    python3 tools/zoo_heldout.py --family transformer --shard "$s" "${only[@]}" --out "$OUT/zoo/export-tf-${s%/*}" \
      --no-timing --budget-s 400 > "$OUT/zoo/export-tf-${s%/*}.log" 2>&1 &
  done
  wait; status export $?
fi
log "pack"
tar czf "$OUT/zoo.tgz" -C "$OUT" zoo && rm -rf "$OUT/zoo"; status pack $?
log "done"
