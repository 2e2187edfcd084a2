#!/usr/bin/env bash
# Re-price every committed validation set after a change to the predictor or the lowering (CPU only, ~2 min):
# the seen sets (2026-11-26-validation-conv, channels-last and NCHW) and the held-out zoo (2026-11-27-zoo), each
# GPU against its own profile, rewriting their predictions-*.md/json and hwprobe/predict/validation.json.
#   bash tools/reprice_validation.sh        (from the repository root, with hwprobe importable)
set -euo pipefail
PY=${PYTHON:-python3}
SUMMARY=hwprobe/predict/validation.json
SEEN_ONNX=profiles/h200-sxm/2026-11-26-validation-cold/onnx
ZOO_ONNX=profiles/h200-sxm/2026-11-27-zoo/onnx.tgz
cmp() { "$PY" tools/compare_predictions.py --summary "$SUMMARY" "$@" > /dev/null; }
for gpu in h200-sxm h100-sxm; do
  name=$([[ $gpu == h200-sxm ]] && echo "NVIDIA H200" || echo "NVIDIA H100")
  seen=profiles/$gpu/2026-11-26-validation-conv
  cmp --measured "$seen/validate_models.json.gz" --onnx "$SEEN_ONNX" --profile "profiles/$gpu/2026-11-26-predict-conv" \
    --variants bn_folded_nhwc,default --out "$seen/predictions.md" --json "$seen/predictions.json" --where "$seen" \
    --title "Predicted vs measured model time, $name (calibration with NCHW and depthwise conv points)"
  cmp --measured "$seen/validate_models.json.gz" --onnx "$SEEN_ONNX" --profile "profiles/$gpu/2026-11-26-predict-conv" \
    --variants bn_folded --out "$seen/predictions-nchw.md" --json "$seen/predictions-nchw.json" --where "$seen" \
    --title "NCHW (PyTorch's default layout) CNNs, $name: --layout nchw, priced from the NCHW conv points"
  zoo=profiles/$gpu/2026-11-27-zoo
  for fam in cnn transformer; do
    cmp --measured "$zoo/validate_models-$fam.json.gz" --onnx "$ZOO_ONNX" \
      --profile "profiles/$gpu/2026-11-27-predict-generic" --variants bn_folded,bn_folded_nhwc,default \
      --out "$zoo/predictions-$fam.md" --json "$zoo/predictions-$fam.json" --where "$zoo" \
      --title "Held-out zoo ($fam), $gpu, against profiles/$gpu/2026-11-27-predict-generic"
  done
done
"$PY" tools/compare_predictions.py --table "$SUMMARY" --source profiles/ | grep -v "| eager |"
