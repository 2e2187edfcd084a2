#!/usr/bin/env bash
# hwprobe's L2 read figures beside gpu-benches' gpu-l2-cache in one lease (the peer check of cache.l2.read.peer_method).
# Interleaved rounds (gpu-benches, hwprobe's gpu.cache, ...; ROUNDS, default 3), the memory suite, then Nsight Compute
# counters of gpu-benches' own kernel at 2, 8 and 19.5 MiB (what its "Eff. bw" counts); then the GPU tests named
# in TESTS, if any.
#
# Needs gpu-benches' gpu-l2-cache built for sm_90 at $GPUBENCH (default .ref/stub/gpu-l2-cache/cuda-l2-cache-sm90).
# Usage (repository root, on the GPU machine): OUT=... bash tools/peers/gpubenches_l2.sh; everything lands in
# $OUT/l2.tgz (the device returns at most 8 files) plus $OUT/session.log.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/l2-gpubenches}; W=$OUT/work; mkdir -p "$W"
GPUBENCH=${GPUBENCH:-.ref/stub/gpu-l2-cache/cuda-l2-cache-sm90}
ROUNDS=${ROUNDS:-3}
T0=$(date +%s)
log() { echo "== $(date +%T) (+$(( $(date +%s) - T0 )) s) $*" | tee -a "$OUT/session.log"; }
smi() { nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader >> "$W/clocks.csv"; }
log "install"
source tools/device_install.sh; device_install "$W/install.log"
nvidia-smi -q > "$W/nvidia-smi-q.txt" 2>&1
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,clocks.mem,power.limit --format=csv >> "$OUT/session.log"
# gpu-benches prints one line per set (blockRun x 512 KiB); stop it once past 21 MiB (it would go on to 5 GB)
gb() { timeout 60 stdbuf -oL "$GPUBENCH" | awk '{print} $3+0 > 21504 {exit}' > "$W/gpubench-$1.txt" 2>&1; }
for r in $(seq 1 "$ROUNDS"); do
  log "round $r: gpu-benches"; smi; gb "$r"; smi
  log "round $r: hwprobe gpu.cache"
  python3 -m hwprobe run --device 0 --suite tools/peers/gpubenches_l2.toml --out "$W/hwprobe-$r" -q > "$W/hwprobe-$r.log" 2>&1
  smi
done
log "memory suite"
python3 -m hwprobe run --device 0 --suite memory --out "$W/memory" -q > "$W/memory.log" 2>&1; smi
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second"
  M="$M,lts__t_sectors.sum.peak_sustained,lrc__lts2lrc_sectors_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum"
  M="$M,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__request_sectors_op_read_coalescable.sum"
  M="$M,lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
  M="$M,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum"
  # launches: 11 per set, sets blockRun = 3,4,...,20,22,24,...; skip to the first launch of blockRun 4, 16, 39
  for br in 4 16 39; do
    skip=$(python3 -c "
i, n = 3, 0
while i != $br: i = int(i + max(1.0, i * 0.1)); n += 1
print(11 * n + 5)")
    log "ncu gpu-benches blockRun $br (skip $skip)"
    "$NCU" --clock-control none --cache-control none -k regex:sumKernel --launch-skip "$skip" --launch-count 1 \
      --kill yes --metrics "$M" --csv --page raw "$GPUBENCH" > "$W/ncu-br$br.csv" 2> "$W/ncu-br$br.err"
  done
else
  log "no ncu on this machine"
fi
if [ -n "${TESTS:-}" ]; then     # e.g. TESTS="tests/gpu/test_gpu_memory.py -k cache"
  log "GPU tests: $TESTS"; timeout "${TESTS_TIMEOUT:-300}" python3 -m pytest -q -m gpu $TESTS > "$W/pytest-gpu.log" 2>&1
  echo "pytest exit $?" | tee -a "$OUT/session.log"
fi
log "done"
tar -czf "$OUT/l2.tgz" -C "$OUT" work
