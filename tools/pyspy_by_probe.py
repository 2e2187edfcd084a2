"""Where a run's time went, per probe, from a py-spy profile of `hwprobe run` (issue 33).

    py-spy record --nonblocking -r 40 -f raw -o full.collapsed -- python3 -m hwprobe run --suite full ...
    python3 tools/pyspy_by_probe.py full.collapsed[.gz] [--probe torch_kernels] [--depth 4] [--rate 40]

py-spy's raw format is one collapsed stack per line with its sample count; by default it samples only threads
on the CPU, so waits (sleeps, a lock, a GPU sync that yields) are missing: a probe's seconds here fall short of its
`probe_seconds` in environment.json by the time it waited. Main-thread samples go to the probe whose function
sits right under `Runner._run_entry`; the compile-ahead worker threads are listed apart.
"""

from __future__ import annotations

import argparse
import collections
import gzip
from pathlib import Path


def stacks(path: Path):
    """(frames, samples) per line of a py-spy raw file (gzip or plain)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack:
                yield stack.split(";"), int(count)


def probe_of(frames: list[str]) -> tuple[str, int] | None:
    """(probe function with its file, index of that frame) for a main-thread stack inside a probe, else None."""
    for i, fr in enumerate(frames[:-1]):
        if fr.startswith("Runner._run_entry"):
            return frames[i + 1].split(":")[0] + ")", i + 1
    return None


def by_probe(path: Path, rate: float, probe: str = "", depth: int = 4):
    """Seconds per probe (main thread), of the worker threads, and, for ``probe``, per stack under it."""
    per_probe: collections.Counter = collections.Counter()
    inside: collections.Counter = collections.Counter()
    for frames, n in stacks(path):
        if frames[0].startswith("Thread._bootstrap"):
            per_probe["(worker threads)"] += n / rate
            continue
        found = probe_of(frames)
        name = found[0] if found else "(outside the probes)"
        per_probe[name] += n / rate
        if found and probe and probe in name:
            i = found[1]
            inside[";".join(f.split(" (")[0] for f in frames[i + 1:i + 1 + depth])] += n / rate
    return per_probe, inside


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", type=Path)
    ap.add_argument("--probe", default="", help="also list the stacks under this probe (a substring of its name)")
    ap.add_argument("--depth", type=int, default=4, help="frames under the probe's function per stack")
    ap.add_argument("--rate", type=float, default=40.0, help="py-spy's sampling rate (-r), samples per second")
    args = ap.parse_args(argv)
    per_probe, inside = by_probe(args.profile, args.rate, args.probe, args.depth)
    for name, s in per_probe.most_common():
        print(f"{s:8.1f} s  {name}")
    if args.probe:
        print(f"\nunder {args.probe}:")
        for stack, s in inside.most_common(20):
            print(f"{s:8.1f} s  {stack}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
