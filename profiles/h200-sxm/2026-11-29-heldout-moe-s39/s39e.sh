#!/usr/bin/env bash
# 39th session, issue 32: the two held-out hf-compiled misses of 2026-11-28 (gemma-2-9b 1 x 512 +20%, phi-3 1 x 2048
# -16%) measured again, three rounds each (their prefills run op by op: host-bound; a lent host moves).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
D=tests/data/llm_configs; C="$D/gemma-2-9b.json,$D/phi-3-mini-4k-instruct.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv > "$OUT/smi-e.txt"
t0=$(date +%s)
timeout ${T:-240} python3 tools/validate_hf_llm.py --configs "$C" --runtimes hf-compiled --rounds 3 --no-kernels \
  --out "$OUT/hf_compiled_gemma_phi.json" > "$OUT/validate-e.log" 2>&1
echo "exit $? wall $(( $(date +%s) - t0 )) s"; [[ -f "$OUT/hf_compiled_gemma_phi.json" ]] && gzip -f "$OUT/hf_compiled_gemma_phi.json"
tail -2 "$OUT/validate-e.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$OUT/smi-e.txt"
