"""SIGINT at random times into `hwprobe run --device cpu`: every one must exit 130 (none 0), no traceback."""
import random, subprocess, sys, time, tempfile, collections
n = int(sys.argv[1]); hi = float(sys.argv[2]); sig = sys.argv[3] if len(sys.argv) > 3 else "INT"
import signal
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
codes = collections.Counter(); bad = []
for i in range(n):
    d = tempfile.mkdtemp()
    t = rng.uniform(0, hi)
    p = subprocess.Popen([sys.executable, "-m", "hwprobe", "run", "--device", "cpu", "--out", d, "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(t)
    p.send_signal(getattr(signal, "SIG" + sig))
    t0 = time.time()
    out, err = p.communicate(timeout=300)
    codes[p.returncode] += 1
    if p.returncode != 130 or "Traceback" in err:
        bad.append((round(t, 2), p.returncode, err[-400:]))
    print(f"{i} t={t:.2f} rc={p.returncode} stop={time.time()-t0:.1f}s", flush=True)
print("codes", dict(codes))
for b in bad: print("BAD", b)
