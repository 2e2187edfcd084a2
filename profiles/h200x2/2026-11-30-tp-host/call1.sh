#!/usr/bin/env bash
# 49th session, call 1, nvidia-h200-x2: gpu.tp_host (its GPU test, then in the multigpu suite), then the tp 2
# validation with the tp host clock (next/tp-host): hf-compiled prefill and decode, eager decode.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
t00=$(date +%s)
W=/tmp/s49; mkdir -p $W
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-start.txt
echo "install at $(( $(date +%s) - t00 )) s"
timeout 120 python3 -m pytest -m gpu -q -s tests/gpu/test_gpu_interconnect.py -k tp_host > $W/test-tp-host.txt 2>&1
echo "test: exit $? at $(( $(date +%s) - t00 )) s"; tail -3 $W/test-tp-host.txt
timeout 150 hwprobe run --device all --suite multigpu --out $W/multigpu > $W/multigpu.log 2>&1
echo "multigpu: exit $? at $(( $(date +%s) - t00 )) s"
grep -h tp_host $W/multigpu/*/measurements.jsonl | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); p=r.get('params') or {}
    print(r['metric'], r.get('status'), r.get('reason'), r['value'], {k: p.get(k) for k in ('vs_one_gpu','kernels_per_step','one_gpu_kernel_s','one_gpu_kernels_per_step','check','wall_s')})"
D=tests/data/llm_configs
CFG=$D/llama-3.2-1b.json,$D/mistral-7b-v0.3.json,$D/qwen2.5-7b.json,$D/gemma-2-9b.json,$D/phi-3-mini-4k-instruct.json
left=$(( 560 - ($(date +%s) - t00) ))
timeout $(( left / 2 + 40 )) torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$CFG" --runtimes hf-compiled \
  --prefill 1x512,8x2048 --compiled-decode 16x2048 --rounds 2 --no-kernels --out $W/tp2_compiled.json > $W/c.log 2>&1
echo "compiled: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/c.log | tail -3
left=$(( 575 - ($(date +%s) - t00) ))
timeout $left torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$CFG" --runtimes eager \
  --prefill "" --decode 1x1024,16x1024 --rounds 2 --no-kernels --out $W/tp2_eager.json > $W/e.log 2>&1
echo "eager: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/e.log | tail -3
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-end.txt
rm -rf $W/multigpu/*/raw 2>/dev/null
tar czf "$OUT/s49.tgz" -C /tmp s49; ls -la "$OUT"
