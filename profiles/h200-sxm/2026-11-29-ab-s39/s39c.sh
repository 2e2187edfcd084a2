#!/usr/bin/env bash
# 39th session, call 4: torch._grouped_mm's time at shifted routings (s39_grouped2.py), then its DRAM / L2 bytes under
# ncu (--clock-control none: clocks left as they are) for a few routings of Mixtral's gate/up shape.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s39c; rm -rf "$W"; mkdir -p "$W" "$OUT"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
t0=$(date +%s.%N)
timeout 240 python3 .ab/s39_grouped2.py "$W/shift.jsonl" > "$W/shift.log" 2>&1
echo "shift: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee -a "$W/walls.txt"
t0=$(date +%s.%N)
MODE=ncu timeout 200 ncu --clock-control none --target-processes all -k regex:"[Gg]emm|cutlass|device_kernel" \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size \
  --csv python3 .ab/s39_grouped2.py > "$W/ncu.csv" 2> "$W/ncu.err"
echo "ncu: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee -a "$W/walls.txt"
tail -3 "$W/ncu.err"; grep -c . "$W/ncu.csv"
tar czf "$OUT/s39c.tgz" -C "$W" .
