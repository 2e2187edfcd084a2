#!/usr/bin/env bash
# 39th session, issue 32: two MoE models no predictor change has seen (Mixtral-8x22B, Qwen3-Coder-480B-A35B, cut to
# 4 layers), as users run them (hf, then hf-compiled), each prefill case's routing counted on its own tokens; run after
# fd8bbcc (the tile-pair grouped price) was committed. No kernel lists (--no-kernels): they stay held out.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
D=tests/data/llm_configs; C="$D/mixtral-8x22b.json,$D/qwen3-coder-480b-a35b.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv > "$OUT/smi-d.txt"
for rt in hf hf-compiled; do
  t0=$(date +%s)
  timeout ${T:-250} python3 tools/validate_hf_llm.py --configs "$C" --runtimes $rt --no-kernels \
    --out "$OUT/hf_heldout_$rt.json" > "$OUT/validate-$rt.log" 2>&1
  echo "$rt exit $? wall $(( $(date +%s) - t0 )) s"; [[ -f "$OUT/hf_heldout_$rt.json" ]] && gzip -f "$OUT/hf_heldout_$rt.json"
  tail -2 "$OUT/validate-$rt.log"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$OUT/smi-d.txt"
