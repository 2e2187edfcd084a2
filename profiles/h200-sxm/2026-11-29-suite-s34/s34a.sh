#!/usr/bin/env bash
# 34th session, call 1: wgmma forms under the cap, then cuSPARSELt split-k mode by energy per op.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s34a; rm -rf "$W"; mkdir -p "$W" "$OUT"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
s=$(date +%s); timeout 300 python3 .ab/s34_forms.py "$W/forms.json" > "$W/forms.log" 2>&1; echo "forms rc $? $(( $(date +%s) - s )) s" >> "$W/walls.txt"
cp "$W"/*.log "$W"/*.json "$W/walls.txt" "$OUT/" 2>/dev/null
s=$(date +%s); timeout 200 python3 .ab/s34_splitk.py "$W/splitk.json" > "$W/splitk.log" 2>&1; echo "splitk rc $? $(( $(date +%s) - s )) s" >> "$W/walls.txt"
cp "$W"/*.log "$W"/*.json "$W/walls.txt" "$W/smi.txt" "$OUT/" 2>/dev/null
cat "$W/walls.txt"; tail -5 "$W/forms.log" "$W/splitk.log"
