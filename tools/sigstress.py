"""SIGINT (or SIGTERM) at random times into `hwprobe run`: every one must exit 130 (none 0), with no traceback.

    python tools/sigstress.py N MAX_SECONDS [INT|TERM] [SEED] [DEVICE]

The clock starts once the child runs hwprobe (after its exec: a signal before that reaches the parent's forked
copy, not hwprobe). A run that ended before its signal was sent is counted apart, not as a pass or a failure.
"""
import collections
import random
import signal
import subprocess
import sys
import tempfile
import time

n, hi = int(sys.argv[1]), float(sys.argv[2])
sig = getattr(signal, "SIG" + (sys.argv[3] if len(sys.argv) > 3 else "INT"))
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
codes, bad, ended_first = collections.Counter(), [], 0


def started(pid: int) -> bool:
    try:
        return b"hwprobe" in open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return False


for i in range(n):
    d = tempfile.mkdtemp()
    t = rng.uniform(0, hi)
    p = subprocess.Popen([sys.executable, "-m", "hwprobe", "run", "--device", device, "--out", d, "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not started(p.pid) and p.poll() is None:
        time.sleep(0.001)
    time.sleep(t)
    if p.poll() is not None:
        ended_first += 1
        p.communicate()
        print(f"{i} t={t:.2f}: the run ended before the signal (rc={p.returncode})", flush=True)
        continue
    p.send_signal(sig)
    t0 = time.time()
    out, err = p.communicate(timeout=300)
    codes[p.returncode] += 1
    if p.returncode != 130 or "Traceback" in err:
        bad.append((round(t, 3), p.returncode, err[-300:]))
    print(f"{i} t={t:.2f} rc={p.returncode} stop={time.time() - t0:.1f}s", flush=True)
print("exit codes:", dict(codes), f"; {ended_first} runs ended before their signal")
for b in bad:
    print("BAD", b)
