#!/usr/bin/env bash
# 37th session, issue 33 (s37b.sh without the gate, its runs lacking nvmath): gpu.sparse with the windows until the settle's level
# (N), one bridged window (B) and 9fd4823 (O): FP8 alone in rotating order, then every precision once each (N, O). Each run its own process with
# empty JIT caches.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 1; }
W=/tmp/s37c; rm -rf "$W"; mkdir -p "$W/old" "$W/runs"
tar xf .ab/old.tar -C "$W/old"; cp .ab/s37_N.toml .ab/s37_B.toml .ab/s37_O.toml .ab/s37_all.toml "$W/"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
i=0
for v in N O B B O N all-N all-O; do
  i=$((i + 1)); tree=$PWD; [[ $v == *O ]] && tree=$W/old; suite=$W/s37_$v.toml; [[ $v == all-* ]] && suite=$W/s37_all.toml
  t0=$(date +%s.%N)
  (cd "$tree" && CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 150 python3 -m hwprobe run --device 0 \
    --suite "$suite" --out "$W/runs/$i-$v" -q) > "$W/runs/$i-$v.log" 2>&1
  echo "$i-$v: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee -a "$W/walls.txt"
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> "$W/smi.txt"
rm -rf "$W/old"; tar czf "$OUT/s37c.tgz" -C "$W" .
