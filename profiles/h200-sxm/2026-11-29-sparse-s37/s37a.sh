#!/usr/bin/env bash
# 37th session, issue 33: is the old method's FP8 2:4 lead a transient at its window's start? gpu.sparse FP8 alone:
# O = 9fd4823; on this tree LF = library search + fixed 0.25-s settle (9fd4823's way), S = sweep + steady settle
# (the default); window 0.4 s (04, the default) or 2.0 s (20). Rotating order, each run its own process, empty JIT caches.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s37a; rm -rf "$W"; mkdir -p "$W/old" "$W/runs" "$OUT"; export PYTHONUNBUFFERED=1
tar xf .ab/old.tar -C "$W/old"; cp .ab/s37_*.toml "$W/"
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
i=0
for v in O LF04 S04 LF20 S20 S20 LF20 S04 LF04 O; do
  i=$((i + 1)); tree=$PWD; [[ $v == O ]] && tree=$W/old; t0=$(date +%s.%N)
  (cd "$tree" && CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 120 python3 -m hwprobe run --device 0 \
    --suite "$W/s37_$v.toml" --out "$W/runs/$i-$v" -q) > "$W/runs/$i-$v.log" 2>&1
  echo "$i-$v: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee -a "$W/walls.txt"
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> "$W/smi.txt"
rm -rf "$W/old"; tar czf "$OUT/s37a.tgz" -C "$W" .
