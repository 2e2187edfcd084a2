#!/usr/bin/env bash
# Issue 22 on a 2-GPU machine (offline), in about 5-7 minutes:
#   1. install the carried wheels (.whl/) and hwprobe (pip --no-deps -e .), as tools/gpu_session.sh does;
#   2. build nccl-tests from the carried source (.nccl-tests/, or NCCL_TESTS_SRC) against the image's NCCL wheel
#      (nvidia-nccl-cu13: NCCL_HOME = a folder holding its include/ and a lib/ with a libnccl.so link), sm_90 only;
#   3. every nccl-tests collective at 1 GiB and 4 GiB, out of place and in place, -c 1 -w 5 -n 20, two GPUs in one
#      process (-g 2);
#   4. cudaMemcpyPeerAsync 1 GiB one way and both ways (tools/p2p_reference.py);
#   5. hwprobe run --device 0,1 --suite multigpu, then mpiexec -n 2 hwprobe run --suite multigpu (exit codes kept);
#   6. the comparison tables (tools/multigpu_compare.py), everything packed under $OUT in 4 files:
#      compare.md, compare-mpi.md, status.txt, bundle.tgz (logs, nccl-tests output, both results directories).
# NCCL_NVLS_ENABLE=0 everywhere. Run from the repository root:  bash tools/device_multigpu.sh
# (set RUN_GPU_TESTS=1 to add tests/gpu/test_gpu_interconnect.py if time is left).
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hwprobe-out}; W="$OUT/work"; mkdir -p "$W/nccl-tests"
SRC=${NCCL_TESTS_SRC:-.nccl-tests}
T0=$(date +%s)
log() { echo "== $(date +%T) (+$(( $(date +%s) - T0 )) s) $*" | tee -a "$W/session.log"; }
status() { echo "$1: exit $2${3:+ ($3)}" | tee -a "$OUT/status.txt"; }
: > "$OUT/status.txt"

log "install"
source tools/device_install.sh; device_install "$W/install.log"; status "pip install -e ." $?
nvidia-smi > "$W/nvidia-smi.txt" 2>&1; nvidia-smi topo -m > "$W/topo.txt" 2>&1
python3 -c "import cupy, hwprobe; print('cupy', cupy.__version__, 'hwprobe', hwprobe.__version__)" 2>&1 | tee -a "$W/session.log"

log "NCCL_HOME from the nvidia-nccl wheel"
PKG=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])" 2>>"$W/session.log")
NH=/tmp/nccl-home; mkdir -p "$NH/lib"
ln -sfn "$PKG/include" "$NH/include"
ln -sf "$PKG/lib/libnccl.so.2" "$NH/lib/libnccl.so.2"; ln -sf "$PKG/lib/libnccl.so.2" "$NH/lib/libnccl.so"
export LD_LIBRARY_PATH="$NH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
grep -h "define NCCL_\(MAJOR\|MINOR\|PATCH\) " "$NH/include/nccl.h" | tee -a "$W/session.log"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA_HOME/bin/nvcc" ] || CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
log "build nccl-tests ($(cat "$SRC/VERSION" 2>/dev/null)) with $CUDA_HOME/bin/nvcc"
rm -rf /tmp/nccl-tests && cp -r "$SRC" /tmp/nccl-tests
timeout 300 make -C /tmp/nccl-tests -j16 MPI=0 NCCL_HOME="$NH" CUDA_HOME="$CUDA_HOME" \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > "$W/nccl-tests-build.log" 2>&1
status "build nccl-tests" $?; tail -3 "$W/nccl-tests-build.log"

for op in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
  exe=/tmp/nccl-tests/build/${op}_perf
  [ -x "$exe" ] || { status "nccl-tests $op" 127 "not built"; continue; }
  log "nccl-tests $op"
  timeout 120 "$exe" -b 1G -e 4G -f 4 -g 2 -c 1 -w 5 -n 20 > "$W/nccl-tests/$op.log" 2>&1
  status "nccl-tests $op" $?; grep -E "^ +[0-9]" "$W/nccl-tests/$op.log"
done

log "cudaMemcpyPeerAsync reference"
timeout 120 python3 tools/p2p_reference.py "$W/p2p_ref.json" > "$W/p2p_ref.log" 2>&1; status "p2p_reference" $?
cat "$W/p2p_ref.log"

run_hwprobe() {   # NAME: hwprobe run ..., its exit code and wall time in status.txt
  local name=$1; shift
  log "$name: $*"
  local t=$(date +%s%N)
  timeout 300 "$@" > "$W/run-$name.log" 2>&1; local rc=$?
  status "$name: $*" $rc "wall $(( ($(date +%s%N) - t) / 1000000 )) ms"
  tail -25 "$W/run-$name.log"
}
run_hwprobe local python3 -m hwprobe run --device 0,1 --suite multigpu --out "$W/results-local"
MPIEXEC=$(command -v mpiexec || command -v mpirun)
XS=(); for v in NCCL_NVLS_ENABLE PYTHONPATH LD_LIBRARY_PATH PATH; do [ -n "${!v:-}" ] && XS+=(-x "$v"); done
PY=$(command -v python3)     # the absolute interpreter: mpiexec's own PATH lookup can find another python3
run_hwprobe mpi "$MPIEXEC" -n 2 --allow-run-as-root "${XS[@]}" "$PY" -m hwprobe run --suite multigpu \
  --out "$W/results-mpi"
grep -i "improperly\|finalize" "$W/run-mpi.log" | head -5

for name in local mpi; do
  run=$(ls -d "$W/results-$name"/*/ 2>/dev/null | head -1)
  [ -n "$run" ] || { status "compare $name" 1 "no results directory"; continue; }
  suffix=$([ "$name" = mpi ] && echo "-mpi")
  python3 tools/multigpu_compare.py --nccl-tests "$W/nccl-tests" --results "$run" --p2p-ref "$W/p2p_ref.json" \
    --out "$OUT/compare$suffix.md" > /dev/null 2> "$W/compare-$name.err"; status "compare $name" $?
done
cat "$OUT/compare.md" 2>/dev/null

if [ "${RUN_GPU_TESTS:-0}" = 1 ] && [ $(( $(date +%s) - T0 )) -lt 300 ]; then
  log "pytest -m gpu tests/gpu/test_gpu_interconnect.py"
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_gpu_interconnect.py \
    > "$W/pytest-gpu-interconnect.log" 2>&1; status "pytest gpu interconnect" $?
  tail -5 "$W/pytest-gpu-interconnect.log"
fi

log "done in $(( $(date +%s) - T0 )) s"
cp "$OUT/status.txt" "$W/"
tar czf "$OUT/bundle.tgz" -C "$W" . && rm -rf "$W"
ls -la "$OUT"
