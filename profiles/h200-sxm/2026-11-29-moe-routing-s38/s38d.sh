#!/usr/bin/env bash
# 38th session, issue 32: the `hf` runtime over the 7 default configs and the two held-out MoE configs, every MoE
# prefill case with the routing it ran (so the README's H200 row prices the MoE at its own routing).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
D=tests/data/llm_configs
C=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import validate_hf_llm as v; print(v.DEFAULT_CONFIGS)")
C="$C,$D/mixtral-8x7b.json,$D/qwen1.5-moe-a2.7b.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv > "$OUT/smi-d.txt"
timeout 420 python3 tools/validate_hf_llm.py --configs "$C" --runtimes hf --no-kernels --out "$OUT/hf_all.json" \
  > "$OUT/validate-hf-all.log" 2>&1
echo "exit $?"; [[ -f "$OUT/hf_all.json" ]] && gzip -f "$OUT/hf_all.json"; tail -2 "$OUT/validate-hf-all.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$OUT/smi-d.txt"
