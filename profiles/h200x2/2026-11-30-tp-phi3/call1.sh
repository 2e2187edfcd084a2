#!/usr/bin/env bash
# 50th session, call 1, nvidia-h200-x2: gpu.tp_host with the one-GPU steps timed a rank at a time (hf_host.in_turn),
# seven short rounds and Phi-3's gathering plan by default: its GPU test; alone twice (spawned ranks) and under
# mpiexec -n 2; inside the multigpu suite; then the tp 2 validation with the host read a rank at a time: eager decode
# (5 models) and hf-compiled prefill 1x512, 1x2048 (3 models).
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
t00=$(date +%s)
W=/tmp/s50a; mkdir -p $W
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-start.txt
lscpu > $W/lscpu.txt 2>&1
echo "install at $(( $(date +%s) - t00 )) s"
timeout 150 python3 -m pytest -m gpu -q -s tests/gpu/test_gpu_interconnect.py -k tp_host > $W/test-tp-host.txt 2>&1
echo "test: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "passed|failed|Error" $W/test-tp-host.txt | tail -4
for i in 1 2; do
  timeout 90 hwprobe run --device all --suite .ab/s50/tp.toml --out $W/alone$i > $W/alone$i.log 2>&1
  echo "alone $i: exit $? at $(( $(date +%s) - t00 )) s"
done
timeout 120 mpiexec -n 2 --allow-run-as-root -x NCCL_NVLS_ENABLE -x PATH -x PYTHONPATH python3 -m hwprobe run --suite .ab/s50/tp.toml --out $W/mpi > $W/mpi.log 2>&1
echo "mpi tp_host: exit $? at $(( $(date +%s) - t00 )) s"; tail -2 $W/mpi.log
timeout 180 hwprobe run --device all --suite multigpu --out $W/multigpu > $W/multigpu.log 2>&1
echo "multigpu: exit $? at $(( $(date +%s) - t00 )) s"
for f in $W/alone1 $W/alone2 $W/mpi $W/multigpu; do zcat -f $f/*/measurements.jsonl* 2>/dev/null | grep tp_host | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); p=r.get('params') or {}
    print('$(basename $f)', r.get('status'), r.get('reason'), {k: p.get(k) for k in ('vs_one_gpu','vs_one_gpu_rounds','wall_s','family_errors')}, [(q['rank'], q['vs_one_gpu'], q.get('one_gpu_kernel_s')) for q in p.get('per_rank') or []], {f: (round(v['vs_llama'],3), round(v['vs_one_gpu'],3)) for f, v in (p.get('families') or {}).items()})"; done
D=tests/data/llm_configs
CFG=$D/llama-3.2-1b.json,$D/mistral-7b-v0.3.json,$D/qwen2.5-7b.json,$D/gemma-2-9b.json,$D/phi-3-mini-4k-instruct.json
left=$(( 560 - ($(date +%s) - t00) ))
timeout $(( left * 55 / 100 )) torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$CFG" --runtimes eager \
  --prefill "" --decode 1x1024,16x1024 --rounds 2 --out $W/tp2_eager.json > $W/e.log 2>&1
echo "eager: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/e.log | tail -3
left=$(( 575 - ($(date +%s) - t00) ))
timeout $left torchrun --nproc-per-node 2 tools/validate_hf_llm.py --tp 2 --configs "$D/phi-3-mini-4k-instruct.json,$D/llama-3.2-1b.json,$D/gemma-2-9b.json" \
  --runtimes hf-compiled --prefill 1x512,1x2048 --compiled-decode "" --rounds 2 --out $W/tp2_prefill.json > $W/p.log 2>&1
echo "prefill: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "wrote|Error" $W/p.log | tail -3
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $W/smi-end.txt
tar czf "$OUT/s50a.tgz" -C /tmp s50a; ls -la "$OUT"
