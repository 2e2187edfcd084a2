#!/usr/bin/env bash
# 38th session, issue 32: transformers' MoE models as users run them (hf, hf-compiled), each prefill case's routing
# counted on its own tokens, for the routed grouped-GEMM price. qwen3-30b-a3b is tuned (its GEMMs built the price);
# mixtral-8x7b and qwen1.5-moe-a2.7b are held out (never run under transformers before this call).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
D=tests/data/llm_configs
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv > "$OUT/smi.txt"
timeout 540 python3 tools/validate_hf_llm.py --configs "$D/qwen1.5-moe-a2.7b.json,$D/mixtral-8x7b.json,$D/qwen3-30b-a3b.json" \
  --runtimes hf,hf-compiled --no-kernels --out "$OUT/hf_moe_routed.json" > "$OUT/validate.log" 2>&1
echo "validate exit $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$OUT/smi.txt"
gzip -f "$OUT/hf_moe_routed.json"; tail -5 "$OUT/validate.log"
