#!/usr/bin/env bash
# Issues 32 and 33's H100 halves on a lent H100 (offline): one detached job over several device calls
# (tools/device_detached.sh). Each step's results are tarred into the job folder as the step ends, and every call
# copies what has finished to $OUT, so a call that ends early keeps it. STEPS picks steps, in this order:
#   gate      bash tools/gpu_gate.sh: the gate at this tree (~260 s on an H200)
#   ab        issue 33's `full` A/B against the old method (.ab/old.tar, made here by `bash tools/device_suite_ab.sh
#             pack`), tools/device_suite_ab.sh's job run to its end (~900 s on an H200)
#   compiled  issue 32: the 7 default configs under hf-compiled, three rounds, the host read around each case (the
#             H100's hf-compiled of 2026-11-27 had no host readings: 18 of 42 host-bound prefills missed; ~400 s)
#   eager     the same under eager (2026-11-28-hf-eager has no host readings of transformers' own, so it is priced
#             from the bare ops' 12.6 us a kernel, where transformers' runs 1.3-1.6x that: phi-3's decodes read
#             -41 to -58%; ~300 s)
#   heldout   issue 32's held-out models, no kernel lists (they stay held out):
#             - Mixtral-8x22B and Qwen3-Coder-480B-A35B under hf and hf-compiled. At 4 layers, Qwen3-Coder is 60 GB
#               of an H100's 80, so it runs at 2.
#             - Gemma-7B, Llama-2-7B and Qwen2.5-0.5B under hf, hf-compiled and eager, three rounds (~500 s).
# The default STEPS (gate,compiled,eager,heldout) fits one session's device time with the starts (~1500 s); `ab`
# takes a session of its own with a gate.
#   device, first call:  MODE=start bash tools/device_h100.sh   (carry [".whl", ".ab/old.tar"]; waits WAIT_S, 560)
#   device, later calls: MODE=wait bash tools/device_h100.sh    (within the machine's 30-s idle time)
# Then here: tools/compare_hf_llm.py per measured file, against profiles/h100-sxm/2026-11-27-predict-generic
# (--tuned as tools/reprice_hf.sh lists the tuned models; --host case).
set -uo pipefail
MODE=${MODE:-${1:-wait}}; OUT=${OUT:-/tmp/hwprobe-out}; WAIT_S=${WAIT_S:-560}
W=${H100_WORK:-/tmp/h100}
if [[ "$MODE" == start ]]; then
  rm -rf "$W"; mkdir -p "$W"
  cat > "$W/job.sh" <<'EOF'
set -u; cd "$1"; W=$2; STEPS=$3; export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
source tools/device_install.sh; device_install "$W/install.log"
want() { [[ ",$STEPS," == *",$1,"* ]]; }
step() {   # step NAME CMD...: the command's output in W/NAME.log, its exit and wall in W/steps.txt
  local t0 rc; t0=$(date +%s); "${@:2}" > "$W/$1.log" 2>&1; rc=$?
  echo "$1: exit $rc in $(( $(date +%s) - t0 )) s" >> "$W/steps.txt"
}
hf() {     # hf NAME ARGS...: tools/validate_hf_llm.py into W/NAME.json, then W/NAME.tgz
  step "$1" python3 tools/validate_hf_llm.py --out "$W/$1.json" "${@:2}"
  tar czf "$W/$1.tgz" -C "$W" "$1.json" "$1.log" 2>/dev/null
}
D=tests/data/llm_configs
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
if want gate; then
  step gate env OUT="$W/gate-out" bash tools/gpu_gate.sh
  tar czf "$W/gate.tgz" -C "$W" gate-out gate.log 2>/dev/null
fi
if want ab; then
  step ab env OUT="$W/ab-out" MODE=start WAIT_S=3600 bash tools/device_suite_ab.sh   # to its end: no step overlaps it
  tar czf "$W/ab.tgz" -C "$W" ab-out ab.log 2>/dev/null
fi
if want compiled; then
  hf hf_compiled --runtimes hf-compiled --rounds 3
fi
if want eager; then
  hf hf_eager --runtimes eager --rounds 3 --no-kernels
fi
if want heldout; then
  hf hf_heldout_moe --configs "$D/mixtral-8x22b.json" --runtimes hf,hf-compiled --no-kernels
  hf hf_heldout_coder --configs "$D/qwen3-coder-480b-a35b.json" --layers 2 --runtimes hf,hf-compiled --no-kernels
  hf hf_heldout_dense --configs "$D/gemma-7b.json,$D/llama-2-7b.json,$D/qwen2.5-0.5b.json" \
    --runtimes hf,hf-compiled,eager --rounds 3 --no-kernels
fi
EOF
  WAIT_S=0 bash tools/device_detached.sh start "$W" "$W/job.sh" "$PWD" "$W" "${STEPS:-gate,compiled,eager,heldout}" \
    > /dev/null
  [[ -f "$W/PID" ]] || exit 2
fi
WAIT_S=$WAIT_S bash tools/device_detached.sh wait "$W" > /dev/null; done=$?
cat "$W/steps.txt" 2>/dev/null
mkdir -p "$OUT" && cp "$W"/*.tgz "$W/smi.txt" "$OUT/" 2>/dev/null
if (( done == 0 )); then echo "h100: done"; else echo "h100: still running (call again with MODE=wait)"; fi
ls "$OUT"
