#!/usr/bin/env bash
# Build gpu-benches' gpu-l2-cache (github.com/te42kyfo/gpu-benches) for tools/peers/gpubenches_l2.sh, on a
# machine with nvcc (no GPU needed), into .ref/stub/gpu-l2-cache/cuda-l2-cache-sm90 (.ref/ is git-ignored; name
# it in the device call's carry). Usage: bash tools/peers/gpubenches_l2_build.sh /path/to/gpu-benches-checkout
# Two departures from its Makefile, neither touching what it measures: -arch=sm_90 (CUDA 13 has no sm_70), and
# gpu-metrics.hpp replaced by a stand-in that defines initMeasureMetric() alone (main.cu calls only that; its
# counter calls are commented out), so the build needs no CUPTI/nvperf. Measured on 2026-11-26 from commit
# 1c36d509ee717dca9215c27135fa1e611bb03ed1.
set -euo pipefail
src=${1:?path to a gpu-benches checkout}
dst=.ref/stub
rm -rf "$dst" && mkdir -p "$dst/gpu-metrics" "$dst/gpu-l2-cache"
cp "$src"/MeasurementSeries.hpp "$src"/dtime.hpp "$src"/gpu-error.h "$dst/"
cp "$src"/gpu-l2-cache/main.cu "$dst/gpu-l2-cache/"
git -C "$src" rev-parse HEAD > "$dst/COMMIT" 2>/dev/null || echo unknown > "$dst/COMMIT"
printf '#pragma once\n// stand-in for gpu-benches gpu-metrics.hpp: main.cu only calls initMeasureMetric()\ninline void initMeasureMetric() {}\n' \
  > "$dst/gpu-metrics/gpu-metrics.hpp"
nvcc -std=c++17 -O3 -arch=sm_90 --compiler-options="-O2 -pipe -fopenmp" -o "$dst/gpu-l2-cache/cuda-l2-cache-sm90" \
  "$dst/gpu-l2-cache/main.cu"
echo "built $dst/gpu-l2-cache/cuda-l2-cache-sm90 from $(cat "$dst/COMMIT")"
