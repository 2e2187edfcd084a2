"""Where each probe of a suite spends its host time (issue 33): the suite run in this process through
hwprobe.api.run, one cProfile per probe entry.

Not `python -m cProfile -m hwprobe run ...`: the `hwprobe` command ends with os._exit (hwprobe.cli), so cProfile
never writes its file (the forty-fourth session lost a device call to that).

    python3 tools/profile_suite.py --suite .ab/x.toml --device 0 --out DIR [--top 25] [--quick]

Writes DIR/results/<run>/ (the run, as `hwprobe run` writes it) and DIR/<k>-<probe>.prof (pstats files, one per
probe entry, in run order; the last one also holds the run's end: the profile's build and the report), and prints
each probe's top functions by cumulative time, then by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path


class PerProbe:
    """The api.run ``on_probe`` hook: a new profiler at each probe's start, the previous one dumped."""

    def __init__(self, out: Path) -> None:
        self.out, self.prof, self.files = out, None, []

    def __call__(self, probe: str, index: int, total: int) -> None:
        self.stop()
        self.files.append(self.out / f"{index + 1:02d}-{probe}.prof")
        self.prof = cProfile.Profile()
        self.prof.enable()

    def stop(self) -> None:
        if self.prof is not None:
            self.prof.disable()
            self.prof.dump_stats(self.files[-1])
            self.prof = None


def top(path: Path, n: int) -> str:
    """The ``n`` functions of one profile with the most cumulative time, then with the most own time."""
    buf = io.StringIO()
    st = pstats.Stats(str(path), stream=buf).strip_dirs()
    for key in ("cumulative", "tottime"):
        buf.write(f"-- {path.name}, by {key}\n")
        st.sort_stats(key).print_stats(n)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    from hwprobe import api

    a.out.mkdir(parents=True, exist_ok=True)
    hook = PerProbe(a.out)
    try:
        res = api.run(a.device, a.suite, a.out / "results", quick=a.quick, on_probe=hook)
    finally:
        hook.stop()
    for f in hook.files:
        print(top(f, a.top))
    print(f"results: {res.results_dir}; profiles: {', '.join(f.name for f in hook.files)}")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
