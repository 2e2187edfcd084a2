#!/usr/bin/env bash
# Issue 23 on a GPU: mma.sync clock accounting, library power windows, FP64 library from a cool state.
# Usage (repository root, on the GPU machine): bash tools/issue23/gpu.sh   -> results under $OUT (or results/)
set -euo pipefail
out=${OUT:-results}
python -m hwprobe run --device 0 --suite tools/issue23/gpu.toml --out "$out/issue23" -q
run=$(ls -d "$out"/issue23/*/ | tail -1)
python tools/issue23/summarize.py "$run" | tee "$out/issue23-summary.txt"
