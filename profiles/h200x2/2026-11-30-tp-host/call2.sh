#!/usr/bin/env bash
# 49th session, call 2, nvidia-h200-x2: gpu.tp_host with its families (GPU test; alone under mpiexec -n 2; in the
# multigpu suite), then the tp 2 eager decode (5 models) and hf-compiled 1x512 prefills with kernel lists.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
t00=$(date +%s)
W=/tmp/s49b; mkdir -p $W
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-start.txt
echo "install at $(( $(date +%s) - t00 )) s"
timeout 150 python3 -m pytest -m gpu -q -s tests/gpu/test_gpu_interconnect.py -k tp_host > $W/test-tp-host.txt 2>&1
echo "test: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "passed|failed|Error" $W/test-tp-host.txt | tail -4
timeout 120 mpiexec -n 2 --allow-run-as-root -x NCCL_NVLS_ENABLE -x PATH python3 -m hwprobe run --suite .ab/s49/tp.toml --out $W/mpi > $W/mpi.log 2>&1
echo "mpi tp_host: exit $? at $(( $(date +%s) - t00 )) s"; tail -3 $W/mpi.log
timeout 180 hwprobe run --device all --suite multigpu --out $W/multigpu > $W/multigpu.log 2>&1
echo "multigpu: exit $? at $(( $(date +%s) - t00 )) s"
cat $W/multigpu/*/measurements.jsonl $W/mpi/*/measurements.jsonl 2>/dev/null | grep tp_host | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); p=r.get('params') or {}
    print(r['metric'], r.get('status'), r.get('reason'), r['value'], {k: p.get(k) for k in ('vs_one_gpu','kernels_per_step','one_gpu_kernel_s','one_gpu_kernels_per_step','check','wall_s','family_errors')}, {f: (round(v['vs_one_gpu'],3), v['kernels_per_step'], v['one_gpu_kernels_per_step']) for f, v in (p.get('families') or {}).items()})"
D=tests/data/llm_configs
CFG=$D/llama-3.2-1b.json,$D/mistral-7b-v0.3.json,$D/qwen2.5-7b.json,$D/gemma-2-9b.json,$D/phi-3-mini-4k-instruct.json
left=$(( 570 - ($(date +%s) - t00) ))
timeout $(( left * 6 / 10 )) torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$CFG" --runtimes eager \
  --prefill "" --decode 1x1024,16x1024 --rounds 2 --out $W/tp2_eager.json > $W/e.log 2>&1
echo "eager: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/e.log | tail -3
left=$(( 575 - ($(date +%s) - t00) ))
timeout $left torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$D/gemma-2-9b.json,$D/phi-3-mini-4k-instruct.json,$D/llama-3.2-1b.json" \
  --runtimes hf-compiled --prefill 1x512 --compiled-decode "" --rounds 2 --out $W/tp2_prefill.json > $W/p.log 2>&1
echo "prefill: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/p.log | tail -3
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-end.txt
tar czf "$OUT/s49b.tgz" -C /tmp s49b; ls -la "$OUT"
