#!/usr/bin/env bash
# 47th session, call 5, one H200: `full` at the final device code (the family host ratios in gpu.torch_kernels).
set -uo pipefail
export PYTHONUNBUFFERED=1
source tools/device_install.sh; device_install /tmp/install.log || { tail /tmp/install.log; exit 2; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
t0=$(date +%s.%N)
timeout 320 python3 -m hwprobe run --device 0 --suite full --out /tmp/s47d/full -q > /tmp/s47d.log 2>&1
echo "full: exit $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s" | tee /tmp/walls-d.txt
python3 - <<'PY'
import glob, json
for f in glob.glob("/tmp/s47d/full/*/measurements.jsonl"):
    for line in open(f):
        r = json.loads(line)
        hf = (r.get("params") or {}).get("transformers")
        if hf:
            print(r["metric"], round(hf["kernel_s"] * 1e6, 1), {k: round(v["vs_llama"], 3) for k, v in hf.get("families", {}).items()}, hf.get("family_errors"))
PY
python3 -m hwprobe report /tmp/s47d/full/*/ 2>/dev/null | grep -E "^gpu\.torch_kernels|^gpu\.sparse|^gpu\.fma"
mkdir -p /tmp/s47dd; cp /tmp/walls-d.txt /tmp/s47dd/; cp /tmp/s47d/full/*/profile.json /tmp/s47dd/ 2>/dev/null
python3 -m hwprobe report /tmp/s47d/full/*/ > /tmp/s47dd/report.txt 2>&1
tar czf "$OUT/s47d.tgz" -C /tmp s47dd; ls -la "$OUT"
