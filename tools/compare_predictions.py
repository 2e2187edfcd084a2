#!/usr/bin/env python3
"""Predicted vs measured model times: hwprobe's prediction (hwprobe analyze's, from a profile with the
'predict' calibration) for every case tools/validate_models.py measured on the device, beside the measured
median, with the error of each case. Writes a Markdown table and a JSON summary.

    python3 tools/compare_predictions.py --measured validate_models.json --onnx DIR --profile RUN \\
        --out profiles/.../predictions.md [--summary hwprobe/predict/validation.json]

A case is compared where its ONNX export exists at its batch (the exports are the same model as timed:
BN folded, FP16). Runtimes: cuda_graph -> hwprobe's graph, eager -> eager.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

RUNTIME = {"cuda_graph": "graph", "eager": "eager"}


def read_json(path: Path) -> dict:
    """A JSON file, gzipped or not (committed validation runs keep validate_models.json gzipped)."""
    import gzip

    raw = Path(path).read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def onnx_for(onnx_dir: Path, model: str, batch: int) -> Path | None:
    for name in (f"{model}-b{batch}.onnx", f"{model}-b{batch}-dynamo.onnx"):
        if (onnx_dir / name).exists():
            return onnx_dir / name
    return None


def compare(measured: dict, onnx_dir: Path, profile, variants: set[str]) -> list[dict]:
    from hwprobe.models import load_model
    from hwprobe.predict.estimate import predict_model

    rows = []
    for c in measured["cases"]:
        if c.get("error") or c.get("variant") not in variants:
            continue
        path = onnx_for(onnx_dir, c["model"], c["batch"])
        if path is None:
            continue
        model = load_model(path, c["batch"])
        for key, rt in RUNTIME.items():
            meas = (c.get(key) or {}).get("median_ms")
            if not meas:
                continue
            p = predict_model(model, profile, "fp16", rt, layout="nhwc" if c["variant"].endswith("_nhwc") else "nchw")
            kg = c.get("kernels_graph") or {}
            rows.append({"model": c["model"], "variant": c["variant"], "batch": c["batch"], "runtime": rt,
                         "onnx": path.name, "measured_ms": meas, "predicted_ms": p.time_s * 1e3,
                         "roofline_ms": p.roofline_s * 1e3, "ratio": p.time_s * 1e3 / meas,
                         "error_pct": (p.time_s * 1e3 / meas - 1) * 100, "kernels_predicted": len(p.kernels),
                         "kernels_measured": kg.get("count"), "parts": {k: v * 1e3 for k, v in p.parts().items()}})
    return rows


def markdown(rows: list[dict], title: str) -> str:
    out = [f"# {title}", "", "| model | layout/variant | batch | runtime | measured | predicted | error | roofline "
           "bound | kernels (pred / measured) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['model']} | {r['variant']} | {r['batch']} | {r['runtime']} | {r['measured_ms']:.3f} ms | "
                   f"{r['predicted_ms']:.3f} ms | {r['error_pct']:+.1f}% | {r['roofline_ms']:.3f} ms | "
                   f"{r['kernels_predicted']} / {r['kernels_measured']} |")
    out.append("")
    for rt in sorted({r["runtime"] for r in rows}):
        errs = [abs(r["error_pct"]) for r in rows if r["runtime"] == rt]
        out.append(f"- {rt}: {len(errs)} cases, median |error| {statistics.median(errs):.1f}%, worst "
                   f"{max(errs):.1f}%, within 20%: {sum(e <= 20 for e in errs)} of {len(errs)}")
    return "\n".join(out) + "\n"


def summary(rows: list[dict], where: str, suffix: str = "", old: dict | None = None) -> dict:
    """The error per runtime (key: runtime + ``suffix``, e.g. graph_nchw), merged into ``old``'s runtimes."""
    out = dict((old or {}).get("runtimes") or {})
    for rt in sorted({r["runtime"] for r in rows}):
        errs = [abs(r["error_pct"]) for r in rows if r["runtime"] == rt]
        out[rt + suffix] = {"cases": len(errs), "median_abs_pct": statistics.median(errs), "max_abs_pct": max(errs),
                            "where": where}
    return {"runtimes": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measured", required=True)
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--variants", default="bn_folded_nhwc,default")
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", default=None)
    ap.add_argument("--summary", default=None, help="write the error summary hwprobe shows beside predictions")
    ap.add_argument("--where", default="")
    ap.add_argument("--summary-suffix", default="", help="appended to each runtime's key (e.g. _nchw); the summary "
                    "file's other keys are kept")
    ap.add_argument("--title", default="Predicted vs measured model time")
    a = ap.parse_args()
    from hwprobe.profile_build import load_profile

    rows = compare(read_json(Path(a.measured)), Path(a.onnx), load_profile(a.profile),
                   set(a.variants.split(",")))
    Path(a.out).write_text(markdown(rows, a.title))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    if a.summary:
        old = read_json(Path(a.summary)) if a.summary_suffix and Path(a.summary).exists() else None
        Path(a.summary).write_text(json.dumps(summary(rows, a.where, a.summary_suffix, old), indent=1) + "\n")
    print(markdown(rows, a.title))


if __name__ == "__main__":
    main()
