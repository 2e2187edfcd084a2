"""Time the field-validation targets: `hwprobe validate` on a stored run (< 1 s) and `hwprobe compare` over
1,000 result files (< 10 s), as a user runs them (a fresh process, Python start-up included).

    .venv/bin/python tools/bench_fleet.py [--n 1000] [--repeat 3]

The fleet is synthetic: the committed H200 full profile (154 kB, 30 ceilings) copied N times with noise and four
faulty units (hwprobe.fleet.synthetic), written to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "profiles" / "h200-sxm" / "2026-11-26-full"
REF = ROOT / "profiles" / "h200-sxm" / "2026-11-25-default"


def timed(cmd: list[str], repeat: int) -> tuple[float, int]:
    best, code = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode
        best = min(best, time.perf_counter() - t0)
    return best, code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from hwprobe.fleet.synthetic import make_fleet, write_fleet

    exe = [sys.executable, "-m", "hwprobe"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = json.loads((RUN / "profile.json").read_text())
        t0 = time.perf_counter()
        write_fleet(make_fleet(base, args.n, {7: "power_cap", 123: "thermal", 456: "driver", 789: "memory"}), tmp)
        print(f"wrote {args.n} profiles ({sum(p.stat().st_size for p in Path(tmp).rglob('*.json')) / 1e6:.0f} MB) "
              f"in {time.perf_counter() - t0:.1f} s")
        rows.append(("hwprobe --help (start-up)", *timed([*exe, "--help"], args.repeat), None))
        rows.append(("validate full vs default", *timed([*exe, "validate", str(RUN), "--against", str(REF)],
                                                          args.repeat), 1.0))
        rows.append(("validate --json --junit", *timed([*exe, "validate", str(RUN), "--against", str(REF), "--json",
                                                         "--junit", str(Path(tmp) / "v.xml")], args.repeat), 1.0))
        rows.append((f"compare {args.n} files (text)", *timed([*exe, "compare", tmp], args.repeat), 10.0))
        rows.append((f"compare {args.n} files --json", *timed([*exe, "compare", tmp, "--json"], args.repeat), 10.0))
        rows.append((f"compare {args.n} files --csv --plot", *timed(
            [*exe, "compare", tmp, "--csv", str(Path(tmp) / "f.csv"), "--plot", str(Path(tmp) / "f.png")],
            args.repeat), 10.0))
    print(f"{'command':<36} {'best of ' + str(args.repeat):>10} {'exit':>5} {'target':>8}")
    for name, secs, code, target in rows:
        verdict = "" if target is None else ("ok" if secs < target else "SLOW")
        print(f"{name:<36} {secs:>9.2f}s {code:>5} {f'< {target:g} s' if target else '':>8} {verdict}")


if __name__ == "__main__":
    main()
