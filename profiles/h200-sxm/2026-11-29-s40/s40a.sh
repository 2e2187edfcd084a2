#!/usr/bin/env bash
# 40th session, one H200 (detached: tools/device_detached.sh). (1) issue 33: gpu.gemm_fp8's ceiling windows, every
# call timed (s40_fp8.py); (2) issue 32: the rotate_cat curve for the generic profile (add40.toml); (3) issue 32: three
# dense models no predictor change has seen (Gemma-7B: Gemma 1's family, never run; Llama-2-7B: MHA; Qwen2.5-0.5B:
# tied, 14 heads of 64), cut to 4 layers, hf / hf-compiled / eager, three rounds where the host is in the time, no
# kernel lists (--no-kernels): they stay held out. Run before the rotate_cat curve joins the profile.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$OUT/install.log" || { cat "$OUT/install.log"; exit 1; }
E=profiles/h200-sxm/2026-11-29-s40
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$OUT/smi.txt"; }
smi
t0=$(date +%s); timeout 200 python3 $E/s40_fp8.py "$OUT/fp8_windows.jsonl" > "$OUT/fp8.log" 2>&1
echo "fp8 exit $? wall $(( $(date +%s) - t0 )) s"; smi
t0=$(date +%s); timeout 120 hwprobe run --device 0 --suite profiles/h200-sxm/2026-11-27-predict-generic/add40.toml \
  --out "$OUT/add40" > "$OUT/add40.log" 2>&1
echo "add40 exit $? wall $(( $(date +%s) - t0 )) s"; smi
D=tests/data/llm_configs; C="$D/gemma-7b.json,$D/llama-2-7b.json,$D/qwen2.5-0.5b.json"
for rt in hf hf-compiled eager; do
  r=3; [[ $rt == hf ]] && r=1
  t0=$(date +%s)
  timeout 330 python3 tools/validate_hf_llm.py --configs "$C" --runtimes $rt --rounds $r --no-kernels \
    --out "$OUT/hf_dense_$rt.json" > "$OUT/validate-$rt.log" 2>&1
  echo "$rt exit $? wall $(( $(date +%s) - t0 )) s"; [[ -f "$OUT/hf_dense_$rt.json" ]] && gzip -f "$OUT/hf_dense_$rt.json"
  tail -2 "$OUT/validate-$rt.log"; smi
done
