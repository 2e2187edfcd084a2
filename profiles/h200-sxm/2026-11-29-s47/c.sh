#!/usr/bin/env bash
# 47th session, call 2, one H200: the family host ratios' GPU test, then tools/validate_hf_llm.py with the family
# readings in its host_before/after: hf-compiled prefill (op by op, host in it) and eager decode, three rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
t00=$(date +%s)
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
mkdir -p /tmp/s47c
python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/gpu/test_gpu_calibration.py -k transformers_host \
  > /tmp/s47c/tests.txt 2>&1; echo "test: exit $? at $(( $(date +%s) - t00 )) s"; tail -3 /tmp/s47c/tests.txt
D=tests/data/llm_configs
CFG=$D/llama-3.2-1b.json,$D/qwen2.5-7b.json,$D/qwen3-8b.json,$D/mistral-7b-v0.3.json,$D/gemma-2-9b.json,$D/phi-3-mini-4k-instruct.json,$D/qwen3-30b-a3b.json,gemma-2b,llama-3.2-3b
timeout 270 python3 tools/validate_hf_llm.py --configs "$CFG,$D/mixtral-8x22b.json,$D/qwen3-coder-480b-a35b.json" \
  --runtimes hf-compiled --compiled-decode "" --prefill 1x512,1x2048,8x512 --rounds 3 --no-kernels --out /tmp/s47c/hf_compiled.json > /tmp/s47c/hf_compiled.log 2>&1
echo "hf-compiled: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" /tmp/s47c/hf_compiled.log | tail -3
left=$(( 585 - ($(date +%s) - t00) ))
timeout $left python3 tools/validate_hf_llm.py --configs "$CFG" --runtimes eager --prefill "" --rounds 3 --no-kernels \
  --out /tmp/s47c/eager.json > /tmp/s47c/eager.log 2>&1
echo "eager: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" /tmp/s47c/eager.log | tail -3
tar czf "$OUT/s47c.tgz" -C /tmp s47c; ls -la "$OUT"
