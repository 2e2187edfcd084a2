#!/usr/bin/env bash
# The L2 pattern experiment on a lent GPU (run from the repo root, OUT set): time every pattern, then read the
# hardware counters of each launch with Nsight Compute (caches and clocks left alone), then tabulate.
set -uo pipefail
OUT=${OUT:-/tmp/l2c}; mkdir -p "$OUT"; export OUT
python3 tools/experiments/l2_counters.py time 2>&1 | tee "$OUT/time.log"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu"; exit 0; }
"$NCU" --version | tail -1
"$NCU" --query-metrics --chip gh100 > "$OUT/ncu_metrics.txt" 2>&1
WANT="gpu__time_duration.sum sm__cycles_elapsed.avg.per_second lts__cycles_elapsed.avg.per_second
lts__t_sectors.sum lts__t_sectors_op_read.sum lts__t_requests_op_read.sum lts__t_sectors_srcunit_tex_op_read.sum
lts__t_requests_srcunit_tex_op_read.sum lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum lts__t_sectors_srcunit_ltcfabric.sum
lts__t_sectors_srcunit_tex.sum lts__t_sectors.sum.peak_sustained lts__t_sectors.avg.pct_of_peak_sustained_elapsed
lts__t_bytes.sum.peak_sustained lts__t_bytes.sum.per_second lts__t_tag_requests.sum
l1tex__m_xbar2l1tex_read_bytes.sum l1tex__m_xbar2l1tex_read_sectors.sum
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum dram__bytes_read.sum lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed"
BASES=$(awk 'NF {print $1}' "$OUT/ncu_metrics.txt" | sort -u)
LIST=""
for m in $WANT; do b=${m%%.*}; grep -qx "$b" <<<"$BASES" && LIST="$LIST,$m" || echo "not on this chip: $m"; done
for b in $(grep -E '^lrc__' <<<"$BASES" | grep -E 'sectors|requests|bytes' | head -16); do LIST="$LIST,$b.sum"; done
LIST=${LIST#,}; echo "metrics: $LIST"
"$NCU" --clock-control none --cache-control none -k 'regex:peer_dbl|l2_region|l2_flat|sweep_read|tma_load' \
  --metrics "$LIST" -f -o "$OUT/l2" python3 tools/experiments/l2_counters.py ncu > "$OUT/ncu.log" 2>&1
tail -5 "$OUT/ncu.log"
"$NCU" --import "$OUT/l2.ncu-rep" --csv --page raw > "$OUT/l2_raw.csv" 2>"$OUT/import.err"; wc -l "$OUT/l2_raw.csv"
