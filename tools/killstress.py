"""kill -9 at random times into `hwprobe run`: every finished measurement must come back from `hwprobe report`.

    python tools/killstress.py N MAX_SECONDS [--device cpu]
"""
import json
import random
import signal
import subprocess
import sys
import tempfile
import time

n, hi = int(sys.argv[1]), float(sys.argv[2])
device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
rng = random.Random(11)
exe = [sys.executable, "-m", "hwprobe"]
lost = 0
for i in range(n):
    d = tempfile.mkdtemp()
    t = rng.uniform(0.5, hi)
    p = subprocess.Popen([*exe, "run", "--device", device, "--out", d, "-q"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(t)
    p.send_signal(signal.SIGKILL)
    p.wait()
    runs = list(__import__("pathlib").Path(d).glob("*/measurements.jsonl"))
    if not runs:
        print(f"{i} t={t:.2f}: killed before the results directory existed")
        continue
    recorded = [json.loads(x)["metric"] for x in runs[0].read_text().splitlines()[1:] if x.strip().endswith("}")]
    r = subprocess.run([*exe, "report", str(runs[0].parent), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{i} t={t:.2f}: report failed rc={r.returncode}: {r.stderr.strip()[-200:]}")
        lost += 1
        continue
    prof = json.loads(r.stdout)
    back = {c["metric"] for u in prof["compute"].values() for p_ in u.values() for c in p_.values()}
    back |= {m for lvl in prof["memory"].values() for m in (lvl.get("variants") or {})}
    back |= {s["metric"] for s in prof["skipped"] + prof["errors"] + prof["invalid"]}
    back |= {f.get("metric") for f in prof["findings"]}
    missing = [m for m in recorded if m not in back and not m.endswith((".sweep",))]
    print(f"{i} t={t:.2f}: {len(recorded)} recorded, partial={prof['partial']}, missing {missing[:3]}")
    lost += bool(missing)
print("runs with a lost measurement:", lost)
