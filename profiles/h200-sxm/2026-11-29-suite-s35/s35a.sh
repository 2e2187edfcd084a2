#!/usr/bin/env bash
# 35th session, call 1: the conv timing phase by stage (idle contexts, cache kept), the pool at 6 and 2 workers;
# the GPU tests of what changed since the last gate (c171859: sparse, gemm_power; the host ceiling's two sizes);
# gpu.host alone, twice.
set -uo pipefail
OUT=${OUT:-/tmp/hwprobe-out}; W=/tmp/s35a; rm -rf "$W"; mkdir -p "$W" "$OUT"; export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install "$W/install.log" || { tail "$W/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > "$W/smi.txt"
s=$(date +%s); timeout 330 python3 .ab/s35_conv.py "$W/conv.json" 8 > "$W/conv.log" 2>&1; echo "conv rc $? $(( $(date +%s) - s )) s" >> "$W/walls.txt"
cp "$W"/*.log "$W"/*.json "$W/walls.txt" "$OUT/" 2>/dev/null
s=$(date +%s); timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_gpu_gemm.py -k "sparse or gemm_power" tests/gpu/test_gpu_memory.py::test_host > "$W/tests.log" 2>&1; echo "tests rc $? $(( $(date +%s) - s )) s" >> "$W/walls.txt"
for i in 1 2; do s=$(date +%s); timeout 40 python3 -m hwprobe run -q --suite .ab/s35_host.toml --out "$W/host$i" > "$W/host$i.log" 2>&1; echo "host$i rc $? $(( $(date +%s) - s )) s" >> "$W/walls.txt"; done
python3 - "$W" > "$W/host.txt" 2>&1 <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/host*/*/measurements.jsonl")):
    for line in open(f):
        r = json.loads(line)
        if r.get("metric", "").startswith("host.") and r.get("metric", "").count(".") >= 2:
            p = r.get("params", {})
            print(f.split("/")[-3], r["metric"], round(r.get("value", 0) / 1e9, 2), p.get("bytes"), p.get("sizes_gbps"), p.get("attempts_gbps"))
PY
cp "$W"/*.log "$W"/*.json "$W"/*.txt "$OUT/" 2>/dev/null
cat "$W/walls.txt"; tail -3 "$W/tests.log"; tail -12 "$W/conv.log"; grep -v "pinned\.[0-9]\|pageable\.[0-9]" "$W/host.txt" | head -30
