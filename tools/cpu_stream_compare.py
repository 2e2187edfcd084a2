"""hwprobe's CPU STREAM beside a compiled STREAM on the same machine, in the same run (issue 23 item 7).

Builds tools/stream_ref/stream_ref.c (the four STREAM kernels as McCalpin's stream.c times them: OpenMP static
split, best of N) with ``gcc -O3 -fopenmp`` (``--native`` adds ``-march=native``) and, with ``--stream-c PATH``,
McCalpin's own stream.c too, then runs hwprobe's cpu.stream, alternating the programs ``--rounds`` times. It
prints every figure in GB/s (best and median where the program gives both) and the ratio of hwprobe's to the
compiled one's best.

    python tools/cpu_stream_compare.py [--elements N] [--rounds 3] [--stream-c /path/to/stream.c] [--native] [--json]

Both report the best pass (STREAM's convention; hwprobe keeps the median in params["median_Bps"]). gcc -O3 makes
the copy loop of both compiled programs a memcpy, as numba makes hwprobe's; ``--native`` is the build issue 35
compared against.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPS = ("copy", "scale", "add", "triad")


def build(src: Path, out: Path, defines: tuple[str, ...] = (), native: bool = False) -> Path:
    if not shutil.which("gcc"):
        sys.exit("cpu_stream_compare: gcc not found (apt-get install gcc)")
    march = ["-march=native"] if native else []
    subprocess.run(["gcc", "-O3", *march, "-fopenmp", *defines, str(src), "-o", str(out)], check=True)
    return out


def run_ref(exe: Path, elements: int, ntimes: int) -> dict[str, dict[str, float]]:
    out = subprocess.run([str(exe), str(elements), str(ntimes)], check=True, capture_output=True, text=True).stdout
    return {op: {"best": float(b), "median": float(m)} for op, b, m in (ln.split() for ln in out.splitlines())}


def run_mccalpin(exe: Path) -> dict[str, dict[str, float]]:
    """stream.c's table: 'Copy:  <best MB/s>  <avg s> <min s> <max s>'."""
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    rows = re.findall(r"^(Copy|Scale|Add|Triad):\s+([\d.]+)", out, re.M)
    return {op.lower(): {"best": float(mb) / 1e3} for op, mb in rows}


def run_hwprobe(elements: int) -> dict[str, dict[str, float]]:
    import hwprobe.probes.cpu.stream  # noqa: F401  (registers cpu.stream)
    from hwprobe.device.cpu import discover
    from hwprobe.probes.base import _REGISTRY, ProbeContext
    from hwprobe.timing.sampler import CpuClockSampler

    ctx = ProbeContext(target="cpu", device=discover(), sampler=CpuClockSampler(), quick=False)
    ctx.probe_name = "cpu.stream"
    out = {}
    for m in _REGISTRY["cpu.stream"].func(ctx, min_bytes_per_array=elements * 8, llc_multiple=1):
        out[m.metric.rsplit(".", 1)[-1]] = {"best": m.best / 1e9, "median": m.params.get("median_Bps", m.value) / 1e9,
                                            "bytes_per_array": m.params["bytes_per_array"]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=20_000_000, help="doubles per array (default 20M: 160 MB)")
    ap.add_argument("--ntimes", type=int, default=20, help="passes per compiled run (best of these)")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the programs")
    ap.add_argument("--stream-c", type=Path, help="McCalpin's stream.c, built with the same array size")
    ap.add_argument("--native", action="store_true", help="build the compiled programs with -march=native")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.elements <= 0 or a.ntimes < 2 or a.rounds < 1:
        print("cpu_stream_compare: --elements > 0, --ntimes >= 2, --rounds >= 1", file=sys.stderr)
        return 2
    if a.stream_c and not a.stream_c.is_file():
        print(f"cpu_stream_compare: --stream-c {a.stream_c}: no such file", file=sys.stderr)
        return 2
    results: dict[str, list] = {"stream_ref": [], "hwprobe": [], "stream.c": []}
    with tempfile.TemporaryDirectory() as tmp:
        ref = build(HERE / "stream_ref" / "stream_ref.c", Path(tmp) / "stream_ref", native=a.native)
        mcc = build(a.stream_c, Path(tmp) / "stream", (f"-DSTREAM_ARRAY_SIZE={a.elements}",
                                                       f"-DNTIMES={a.ntimes}"), a.native) if a.stream_c else None
        for _ in range(a.rounds):
            results["stream_ref"].append(run_ref(ref, a.elements, a.ntimes))
            if mcc:
                results["stream.c"].append(run_mccalpin(mcc))
            results["hwprobe"].append(run_hwprobe(a.elements))
    if a.json:
        print(json.dumps(results, indent=1))
        return 0
    for op in OPS:
        best = {k: max(r[op]["best"] for r in v) for k, v in results.items() if v}
        line = "  ".join(f"{k} {b:6.2f}" for k, b in best.items())
        ratio = best["hwprobe"] / max(v for k, v in best.items() if k != "hwprobe")
        med = max(r[op]["median"] for r in results["hwprobe"])
        print(f"{op:6s} best GB/s: {line}  (hwprobe median {med:.2f}; hwprobe best / compiled best {ratio:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
