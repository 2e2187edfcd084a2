#!/usr/bin/env python3
"""Predicted vs measured model times: hwprobe's prediction (hwprobe analyze's, from a profile with the
'predict' calibration) for every case tools/validate_models.py or tools/zoo_heldout.py measured on the device,
beside the measured median, with the error of each case. Writes a Markdown table and, with --summary, merges
the cases into the validation file hwprobe prints its error bar from.

    python3 tools/compare_predictions.py --measured validate_models.json --onnx DIR --profile RUN \\
        --out profiles/.../predictions.md [--summary hwprobe/predict/validation.json --where RUN-DIR]

A case is compared where its ONNX export exists at its batch (the exports are the same model as timed:
BN folded, FP16). Runtimes: cuda_graph -> hwprobe's graph, eager -> eager. Each case in the summary keeps its
model family (from the prediction's kernels), layout, GPU, source and split: seen or held_out by the rule in
tools/zoo_heldout.py (a model whose per-kernel numbers were looked at while changing the predictor is seen);
an earlier case of the same source, model, batch, runtime and layout is replaced.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path

RUNTIME = {"cuda_graph": "graph", "eager": "eager"}


def read_json(path: Path) -> dict:
    """A JSON file, gzipped or not (committed validation runs keep validate_models.json gzipped), through hwprobe's
    one reader of JSON objects (hwprobe.profile.read_json_object): bad input is one line of InputError."""
    from hwprobe.profile import read_json_object

    return read_json_object(Path(path), repr(str(path)), "a validation or summary JSON object")


def onnx_for(onnx_dir: Path, model: str, batch: int) -> Path | None:
    for name in (f"{model}-b{batch}.onnx", f"{model}-b{batch}-dynamo.onnx"):
        if (onnx_dir / name).exists():
            return onnx_dir / name
    return None


@contextmanager
def onnx_dir(path: Path):
    """The folder of ONNX exports: ``path`` itself, or a committed archive of it (``onnx.tgz``, whose ``onnx/``
    folder is unpacked into a temporary folder for the run)."""
    if path.is_dir():
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="hwprobe-onnx-") as tmp, tarfile.open(path) as tar:
        tar.extractall(tmp, filter="data")
        yield Path(tmp) / "onnx"


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
            layout = "nhwc" if c["variant"].endswith("_nhwc") else "nchw"
            p = predict_model(model, profile, "fp16", rt, layout=layout)
            kg = c.get("kernels_graph") or {}
            rows.append({"model": c["model"], "variant": c["variant"], "batch": c["batch"], "runtime": rt,
                         "layout": layout, "family": p.family, "uncovered_pct": p.uncovered_share * 100,
                         "gpu": (measured.get("env") or {}).get("gpu", "?"),
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


def split_rule():
    """tools/zoo_heldout.py's split_of (model name -> 'seen' or 'held_out'), loaded beside this file."""
    path = Path(__file__).with_name("zoo_heldout.py")
    spec = importlib.util.spec_from_file_location("zoo_heldout", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("zoo_heldout", mod)        # its dataclasses look their module up while it executes
    spec.loader.exec_module(mod)
    return mod.split_of


def summary(rows: list[dict], where: str, old: dict | None = None, split_of=None) -> dict:
    """The validation file (schema 2): ``old``'s cases, and these rows as cases of ``where`` (each with its family,
    runtime, layout, GPU, error and split), replacing an old case of the same source, model, batch, runtime and
    layout."""
    split_of = split_of or split_rule()
    new = [{"model": r["model"], "family": r["family"], "runtime": r["runtime"], "layout": r["layout"],
            "batch": r["batch"], "error_pct": round(r["error_pct"], 2), "uncovered_pct": round(r["uncovered_pct"], 1),
            "gpu": r["gpu"], "source": where, "split": split_of(r["model"])} for r in rows]
    key = lambda c: (c.get("source"), c["model"], c["batch"], c["runtime"], c.get("layout"))  # noqa: E731
    replaced = {key(c) for c in new}
    keep = [c for c in (old or {}).get("cases") or [] if key(c) not in replaced]
    return {"schema": 2, "rule": "split: tools/zoo_heldout.py (a model whose per-kernel numbers were looked at "
                                 "while changing the predictor is seen; the rest are held out)",
            "cases": keep + new}


def dump_summary(doc: dict) -> str:
    """The validation file as JSON with one case per line (diffs show which cases changed)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, indent=1)[:-2]
    cases = ",\n".join("  " + json.dumps(c) for c in doc["cases"])
    return f'{head},\n "cases": [\n{cases}\n ]\n}}\n'


def split_table(doc: dict, source_prefix: str = "") -> str:
    """The validation file summed up as Markdown: per GPU, split, family, runtime and layout, the cases, the median
    and worst |error| and how many are within 20% (only cases filed under ``source_prefix``, when given)."""
    import pandas as pd

    df = pd.DataFrame([c for c in doc["cases"] if str(c.get("source", "")).startswith(source_prefix)])
    if df.empty:
        return "(no cases)\n"
    df["abs"] = df["error_pct"].abs()
    g = df.groupby(["gpu", "split", "family", "runtime", "layout"])["abs"]
    out = g.agg(cases="count", median="median", worst="max",
                within_20=lambda e: int((e <= 20).sum())).reset_index()
    lines = ["| GPU | split | family | runtime | layout | cases | median |error| | worst | within 20% |",
             "|---|---|---|---|---|---:|---:|---:|---:|"]
    for r in out.itertuples(index=False):
        lines.append(f"| {r.gpu} | {r.split} | {r.family} | {r.runtime} | {r.layout} | {r.cases} | "
                     f"{r.median:.1f}% | {r.worst:.1f}% | {r.within_20} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measured")
    ap.add_argument("--onnx")
    ap.add_argument("--profile")
    ap.add_argument("--variants", default="bn_folded_nhwc,default")
    ap.add_argument("--out")
    ap.add_argument("--json", default=None)
    ap.add_argument("--summary", default=None, help="write the error summary hwprobe shows beside predictions")
    ap.add_argument("--where", default="", help="the source these cases are filed under in the summary (the "
                    "committed validation run's directory); its earlier cases there are replaced")
    ap.add_argument("--title", default="Predicted vs measured model time")
    ap.add_argument("--table", metavar="VALIDATION_JSON", help="only print the split table of a validation file")
    ap.add_argument("--source", default="", help="with --table: only cases filed under this source prefix")
    a = ap.parse_args()
    if a.table:
        print(split_table(read_json(Path(a.table)), a.source), end="")
        return
    missing = [f"--{k}" for k in ("measured", "onnx", "profile", "out") if not getattr(a, k)]
    if missing:
        ap.error(f"the following arguments are required: {', '.join(missing)}")
    from hwprobe.profile_build import load_profile

    with onnx_dir(Path(a.onnx)) as where:
        rows = compare(read_json(Path(a.measured)), where, load_profile(a.profile), set(a.variants.split(",")))
    Path(a.out).write_text(markdown(rows, a.title))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    if a.summary:
        old = read_json(Path(a.summary)) if Path(a.summary).exists() else None
        Path(a.summary).write_text(dump_summary(summary(rows, a.where, old)))
    print(markdown(rows, a.title))


if __name__ == "__main__":
    main()
