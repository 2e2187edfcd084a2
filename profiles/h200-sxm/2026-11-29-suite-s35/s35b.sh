#!/usr/bin/env bash
# 35th session, call 2: the conv pool's timing phase with the check in the search against without; a driver JIT
# cache per worker (s35_pool.py).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s35b; rm -rf "$W"; mkdir -p "$W" "$OUT"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
s=$(date +%s); timeout 420 python3 .ab/s35_pool.py "$W/pool.json" 3 > "$W/pool.log" 2>&1; echo "pool rc $? $(( $(date +%s) - s )) s" >> "$W/walls.txt"
du -sh /tmp/s35_jit/* >> "$W/walls.txt" 2>&1
cp "$W"/*.log "$W"/*.json "$W/walls.txt" "$OUT/" 2>/dev/null
cat "$W/walls.txt"; cat "$W/pool.log" | cut -c1-900
