#!/usr/bin/env bash
# 35th session, call 3: the conv pool timed grouped by worker against the sweep order (s35_order.py).
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s35c; rm -rf "$W"; mkdir -p "$W" "$OUT"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
s=$(date +%s); timeout 420 python3 .ab/s35_order.py "$W/order.json" 3 > "$W/order.log" 2>&1; echo "pool rc $? $(( $(date +%s) - s )) s" >> "$W/walls.txt"
cp "$W"/*.log "$W"/*.json "$W/walls.txt" "$OUT/" 2>/dev/null
cat "$W/walls.txt"; cat "$W/order.log" | cut -c1-900
