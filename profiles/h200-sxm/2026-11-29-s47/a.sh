#!/usr/bin/env bash
# 47th session, call 1, one H200: host link state and H2D by buffer kind; gpu.host alone; the hold tests; transformers'
# host per kernel by family; then a detached `full` followed by the same host measurements (b.sh waits for it).
set -uo pipefail
export PYTHONUNBUFFERED=1
t00=$(date +%s)
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,pcie.link.gen.current,pcie.link.width.current --format=csv
(nvidia-smi topo -m; lscpu; free -g) > "$OUT/topo.txt" 2>&1
mkdir -p /tmp/s47
timeout 90 python3 .ab/s47/hostlink.py start /tmp/s47/hostlink-start.json > /tmp/s47/hostlink-start.txt 2>&1
echo "hostlink start: exit $? at $(( $(date +%s) - t00 )) s"; cat /tmp/s47/hostlink-start.txt | cut -c1-220
for r in 1 2; do
  timeout 60 python3 -m hwprobe run --device 0 --suite .ab/s47/host.toml --out /tmp/s47/host-start$r -q > /tmp/s47/host-start$r.log 2>&1
  echo "gpu.host start$r: exit $?"; python3 .ab/s47/hostrecs.py /tmp/s47/host-start$r
done
python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/gpu/test_gpu_hold.py tests/gpu/test_gpu_fma.py \
  > /tmp/s47/tests.txt 2>&1; echo "tests: exit $? at $(( $(date +%s) - t00 )) s"; grep -E "passed|failed" /tmp/s47/tests.txt | tail -3
timeout 240 python3 .ab/s47/fam_host.py /tmp/s47/fam_host.json 2 > /tmp/s47/fam_host.txt 2>&1
echo "fam_host: exit $? at $(( $(date +%s) - t00 )) s"; cut -c1-250 /tmp/s47/fam_host.txt | tail -30
cat > /tmp/s47/job.sh <<'JOB'
set -u; cd "$1"; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site
t0=$(date +%s.%N)
python3 -m hwprobe run --device 0 --suite full --out /tmp/s47/full -q > /tmp/s47/full.log 2>&1
echo "full: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" > /tmp/s47/walls.txt
timeout 90 python3 .ab/s47/hostlink.py after /tmp/s47/hostlink-after.json > /tmp/s47/hostlink-after.txt 2>&1
for r in 1 2; do
  timeout 60 python3 -m hwprobe run --device 0 --suite .ab/s47/host.toml --out /tmp/s47/host-after$r -q > /tmp/s47/host-after$r.log 2>&1
done
JOB
WAIT_S=$(( 570 - ($(date +%s) - t00) )) bash tools/device_detached.sh start /tmp/s47/det /tmp/s47/job.sh "$PWD"
tar czf "$OUT/s47a.tgz" -C /tmp s47 2>/dev/null; ls -la "$OUT"
