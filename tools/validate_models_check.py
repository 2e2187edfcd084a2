"""Read a tools/validate_models.py bundle back with hwprobe (on any machine, no GPU, no torch): every exported
ONNX file through `hwprobe analyze --json`, the layers hwprobe could not shape ("shape not inferred") or does not
model, and hwprobe's time for the model beside the measured CUDA-graph and eager medians of the same case.

    .venv/bin/python tools/validate_models_check.py validate_models.tar.gz --spec "H200 SXM" [--precision fp16]
    .venv/bin/python tools/validate_models_check.py validate_models.tar.gz --profile profiles/h200-sxm/<run> --json

The ratio column is hwprobe's time / the measured CUDA-graph median of the primary case (BN-folded NCHW for CNNs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path


def analyze(path: Path, args: argparse.Namespace) -> dict:
    """hwprobe analyze's JSON for one file, or {'error': ...}."""
    cmd = [sys.executable, "-m", "hwprobe", "analyze", str(path), "--precision", args.precision, "--json"]
    cmd += ["--profile", args.profile] if args.profile else ["--spec", args.spec]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]}
    return json.loads(r.stdout)


def summarize(name: str, doc: dict, measured: dict) -> dict:
    """One row: layer counts, the ops of the layers not shaped or not modelled, times."""
    row: dict = {"file": name}
    if "error" in doc:
        return row | {"error": doc["error"]}
    layers = doc.get("layers", [])
    not_inferred = Counter(x.get("source_op") for x in layers if "shape not inferred" in (x.get("note") or ""))
    not_modelled = Counter(x.get("source_op") for x in layers
                           if not x.get("modelled", True) and "shape not inferred" not in (x.get("note") or ""))
    t = doc.get("totals", {}).get("time_s")
    row.update({"layers": len(layers), "not_inferred": dict(not_inferred), "not_modelled": dict(not_modelled),
                "hwprobe_ms": t * 1e3 if isinstance(t, (int, float)) else None})
    row.update(measured)
    if row["hwprobe_ms"] and row.get("graph_ms"):
        row["ratio"] = row["hwprobe_ms"] / row["graph_ms"]
    return row


def measured_times(results: dict) -> dict[tuple[str, int], dict]:
    """(model, batch) -> the primary case's CUDA-graph and eager medians (ms) and kernel count."""
    out = {}
    for c in results.get("cases", []):
        if c.get("primary") and "error" not in c:
            out[(c["model"], c["batch"])] = {"graph_ms": c.get("cuda_graph", {}).get("median_ms"),
                                             "eager_ms": c.get("eager", {}).get("median_ms"),
                                             "kernels": c.get("kernels_eager", {}).get("count")}
    return out


def _fmt(v, spec: str = ".3f") -> str:
    return "-" if v is None else format(v, spec)


def print_table(rows: list[dict]) -> None:
    print(f"{'file':34s} {'layers':>6s} {'hwprobe ms':>10s} {'graph ms':>9s} {'eager ms':>9s} {'ratio':>6s}  "
          "not inferred / not modelled")
    for r in rows:
        if "error" in r:
            print(f"{r['file']:34s} ERROR {r['error']}")
            continue
        ni = ", ".join(f"{k} x{v}" for k, v in sorted(r["not_inferred"].items())) or "-"
        nm = ", ".join(f"{k} x{v}" for k, v in sorted(r["not_modelled"].items())) or "-"
        print(f"{r['file']:34s} {r['layers']:6d} {_fmt(r['hwprobe_ms']):>10s} {_fmt(r.get('graph_ms')):>9s} "
              f"{_fmt(r.get('eager_ms')):>9s} {_fmt(r.get('ratio'), '.2f'):>6s}  {ni} / {nm}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", help="validate_models.tar.gz")
    ap.add_argument("--spec", default="H200 SXM")
    ap.add_argument("--profile", default=None, help="a measured profile instead of --spec")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory() as d, tarfile.open(args.bundle) as tar:
            tar.extractall(d, filter="data")
            results = json.loads((Path(d) / "validate_models.json").read_text())
            times = measured_times(results)
            rows = []
            for f in sorted((Path(d) / "onnx").glob("*.onnx")):
                model, _, rest = f.stem.rpartition("-b")
                batch = int(rest.split("-")[0])
                rows.append(summarize(f.name, analyze(f, args), times.get((model, batch), {})))
    except (OSError, tarfile.TarError, ValueError, KeyError) as e:
        print(f"validate_models_check: cannot read {args.bundle!r}: {(str(e).splitlines() or [type(e).__name__])[0]}",
              file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
