#!/usr/bin/env bash
# 38th session, issue 32: the three MoE configs again, the host-timed runtimes with three rounds each (hf-compiled's
# prefill runs op by op; eager is host-bound): a lent host's disturbances spread over the cases.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
D=tests/data/llm_configs; C="$D/qwen1.5-moe-a2.7b.json,$D/mixtral-8x7b.json,$D/qwen3-30b-a3b.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv > "$OUT/smi-c.txt"
for rt in hf-compiled eager; do
  timeout 270 python3 tools/validate_hf_llm.py --configs "$C" --runtimes $rt --rounds 3 --no-kernels \
    --out "$OUT/hf_moe_$rt.json" > "$OUT/validate-$rt.log" 2>&1
  echo "$rt exit $?"; [[ -f "$OUT/hf_moe_$rt.json" ]] && gzip -f "$OUT/hf_moe_$rt.json"; tail -2 "$OUT/validate-$rt.log"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$OUT/smi-c.txt"
