#!/usr/bin/env bash
# Re-price every committed transformers comparison after a change to the LLM lowering or the predictor (CPU only,
# about a minute): each comparison*.md is rewritten as its README says it was made, against the profile it names.
# compare_hf_llm.py exits 1 when a case misses its target; that is a finding, not a failure here.
#   bash tools/reprice_hf.sh        (from the repository root, with hwprobe importable; PYTHON to choose one)
#   OUT=DIR bash tools/reprice_hf.sh    (the comparisons written under DIR, same paths: tests/test_reprice_hf.py
#                                        checks that the committed ones are current)
set -uo pipefail
PY=${PYTHON:-python3}
cmp() {   # cmp DIR OUT MEASURED ARGS...: DIR/OUT from DIR/MEASURED
  local dir=$1 out=$2 measured=$3; shift 3
  mkdir -p "${OUT:-.}/$dir"
  "$PY" tools/compare_hf_llm.py "$dir/$measured" "$@" --out "${OUT:-.}/$dir/$out" > /dev/null
  [[ $? -le 1 ]] || { echo "reprice_hf: $dir/$out failed" >&2; exit 2; }
}
# What the lowering and the predictor were tuned on, by model (every comparison marks the rest held out). Since the
# 39th session the 7 default configs: the rope cats' rows of their `hf` prefill kernel lists were read before the rope
# cats moved to the strided-cat curve; and mixtral-8x7b and qwen1.5-moe-a2.7b, whose errors were read under both
# grouped GEMM prices before the tile-pair one was kept. Held out: Mixtral-8x22B and Qwen3-Coder-480B-A35B
# (profiles/h200-sxm/2026-11-29-heldout-moe-s39); Gemma-7B, Llama-2-7B and Qwen2.5-0.5B (2026-11-29-s40) but in eager.
tuned=llama-3.2-1b,qwen2.5-7b,qwen3-8b,mistral-7b-v0.3,gemma-2-9b,phi-3-mini-4k-instruct,qwen3-30b-a3b
tuned=$tuned,mixtral-8x7b,qwen1.5-moe-a2.7b
for gpu in h200-sxm h100-sxm; do
  gen=profiles/$gpu/2026-11-27-predict-generic
  cmp "profiles/$gpu/2026-11-27-hf-llm" comparison.md hf_llm_measured.json.gz --profile "$gen" --tuned $tuned
  cmp "profiles/$gpu/2026-11-28-hf-eager" comparison.md hf_eager_measured.json.gz --profile "$gen" \
    --tuned $tuned
done
gen=profiles/h200-sxm/2026-11-27-predict-generic
d=profiles/h200-sxm/2026-11-28-hf-eager-host
cmp $d comparison.md hf_eager_measured.json.gz --profile $gen --tuned $tuned
cmp $d comparison-kernels.md hf_eager_kernels.json.gz --profile $gen --tuned $tuned
d=profiles/h200-sxm/2026-11-28-hf-eager-kv          # (comparison-before.md is the old lowering's, kept as it was)
cmp $d comparison.md hf_eager_measured.json.gz --profile $gen --tuned $tuned --host case
cmp $d comparison-moe.md hf_moe_kernels.json.gz --profile $gen --tuned $tuned --host case
cmp profiles/h200-sxm/2026-11-28-hf-moe-balanced comparison.md hf_moe_balanced.json.gz --profile $gen \
  --tuned $tuned --host case
d=profiles/h200-sxm/2026-11-28-hf-compiled-host
cmp $d comparison.md hf_compiled_measured.json.gz --profile $gen --tuned $tuned --host case
cmp $d comparison-2.md hf_compiled_measured-2.json.gz --profile $gen --tuned $tuned --host case
cmp $d comparison-moe-balanced.md hf_moe_balanced.json.gz --profile $gen --tuned $tuned --host case
cmp $d comparison-moe-balanced-decode.md hf_moe_balanced_decode.json --profile $gen --tuned $tuned --host case
d=profiles/h200-sxm/2026-11-29-moe-routing-s38     # MoE prefills at the routing each case counted, and uniform
full=profiles/h200-sxm/2026-11-29-sparse-s37/profile-new-full.json.gz
for p in "generic $gen" "full $full"; do
  set -- $p
  cmp $d comparison-$1.md hf_moe_routed.json.gz --profile "$2" --tuned $tuned --host case
  cmp $d comparison-$1-uniform.md hf_moe_routed.json.gz --profile "$2" --tuned $tuned --host case \
    --uniform-routing
  for rt in hf-compiled eager; do
    cmp $d comparison-$rt-$1.md hf_moe_$rt.json.gz --profile "$2" --tuned $tuned --host case
  done
  cmp $d comparison-hf-all-$1.md hf_all.json.gz --profile "$2" --tuned $tuned --host case
done
d=profiles/h200-sxm/2026-11-29-heldout-moe-s39   # two MoE models held out from the tile-pair grouped price
for rt in hf hf-compiled; do
  for p in "generic $gen" "full profiles/h200-sxm/2026-11-29-ab-s39/profile-new-full.json.gz"; do
    set -- $p
    cmp $d comparison-$rt-$1.md hf_heldout_$rt.json.gz --profile "$2" --host case \
      --tuned $tuned
  done
done
cmp $d comparison-gemma-phi-hf-compiled-generic.md hf_compiled_gemma_phi.json.gz --profile $gen --tuned $tuned \
  --host case
d=profiles/h200-sxm/2026-11-29-s40        # three dense models held out from every change before their run; their
for rt in hf hf-compiled; do               # eager errors drew the look at the cache cats (cat_cache): seen there
  cmp $d comparison-$rt.md hf_dense_$rt.json.gz --profile $gen --tuned $tuned --host case
done
cmp $d comparison-eager.md hf_dense_eager.json.gz --profile $gen --tuned $tuned,gemma-7b,llama-2-7b,qwen2.5-0.5b \
  --host case
d=profiles/h200-sxm/2026-11-29-s47      # each family's host ratio (hf_host.FAMILIES), and without it; gemma-2b,
for rt in hf_compiled hf_eager; do        # llama-3.2-3b, mixtral-8x22b and qwen3-coder held out from that change
  cmp $d comparison-${rt//_/-}.md $rt.json.gz --profile $gen --tuned $tuned --host case
  cmp $d comparison-${rt//_/-}-no-family.md $rt.json.gz --profile $gen --tuned $tuned --host case --no-family-host
done
d=profiles/h200x2/2026-11-28-tp2-hf
cmp $d comparison.md hf_tp2_measured.json.gz --profile $gen --comm-profile $d/multigpu \
  --tuned $tuned
cmp $d comparison-no-collectives.md hf_tp2_measured.json.gz --profile $gen --tuned $tuned
# generate's compiled decode under tp: its tp part written from llama-3.2-1b's and qwen3-8b's rank-0 kernel lists
d=profiles/h200x2/2026-11-29-tp2-compiled
cmp $d comparison.md tp2_compiled.json.gz --profile $gen --comm-profile $d/multigpu --tuned llama-3.2-1b,qwen3-8b
# tp 2 with the sharded host clock (case) and the profile's way (run: one GPU's reading times gpu.tp_host's ratio)
d=profiles/h200x2/2026-11-30-tp-host
for spec in 1:eager:2 1:compiled:2 2:eager:2 2:prefill:2 3:eager:3 3:prefill:3; do
  IFS=: read -r n rt m <<< "$spec"
  for host in case run; do
    cmp $d comparison-call$n-$rt-$host.md call$n-tp2_$rt.json.gz --profile $gen --comm-profile $d/call$m-multigpu \
      --tuned llama-3.2-1b,qwen3-8b --host $host
  done
done
# tp 2 with gpu.tp_host's one-GPU steps a rank at a time and Phi-3's gathering plan priced from its own tiny decoder
d=profiles/h200x2/2026-11-30-tp-phi3
for rt in eager prefill; do
  for host in case run; do
    cmp $d comparison-call1-$rt-$host.md call1-tp2_$rt.json.gz --profile $gen --comm-profile $d/call1-multigpu \
      --tuned llama-3.2-1b,qwen3-8b --host $host
  done
done
[[ -n "${OUT:-}" ]] || git status --short -- profiles | grep comparison || true
