#!/usr/bin/env bash
# 49th session, call 3, nvidia-h200-x2: gpu.tp_host with Phi-3's tiny decoder (the kv heads a gathering plan keeps),
# its GPU test, the multigpu suite, then phi-3 (and llama, the reference) under tp 2: eager decode, hf-compiled prefill.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
t00=$(date +%s)
W=/tmp/s49c; mkdir -p $W
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-start.txt
timeout 120 python3 -m pytest -m gpu -q -s tests/gpu/test_gpu_interconnect.py -k tp_host > $W/test-tp-host.txt 2>&1
echo "test: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "passed|failed|Error" $W/test-tp-host.txt | tail -4
timeout 150 hwprobe run --device all --suite multigpu --out $W/multigpu > $W/multigpu.log 2>&1
echo "multigpu: exit $? at $(( $(date +%s) - t00 )) s"
cat $W/multigpu/*/measurements.jsonl | grep tp_host | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); p=r.get('params') or {}
    print(r['metric'], r.get('status'), r.get('reason'), r['value'], {k: p.get(k) for k in ('vs_one_gpu','kernels_per_step','one_gpu_kernel_s','check','wall_s','family_errors')}, {f: (round(v['vs_one_gpu'],3), v['kernels_per_step'], v['one_gpu_kernels_per_step'], v['check']) for f, v in (p.get('families') or {}).items()})"
D=tests/data/llm_configs
CFG=$D/phi-3-mini-4k-instruct.json,$D/llama-3.2-1b.json
timeout 120 torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$CFG" --runtimes eager \
  --prefill "" --decode 1x1024,16x1024 --rounds 2 --out $W/tp2_eager.json > $W/e.log 2>&1
echo "eager: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/e.log | tail -3
timeout 120 torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$CFG" --runtimes hf-compiled \
  --prefill 1x512,1x2048 --compiled-decode "" --rounds 2 --out $W/tp2_prefill.json > $W/p.log 2>&1
echo "prefill: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/p.log | tail -3
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-end.txt
tar czf "$OUT/s49c.tgz" -C /tmp s49c; ls -la "$OUT"
