#!/usr/bin/env python3
"""Which of a validation set's kernels the predictor priced outside its calibration, by op family: where a grid or
a curve is missing (issue 31). It reads only the predictor's own output for each case's ONNX export (its kernels'
``covered`` flags, sources and notes), never a measured kernel list, so a held-out model stays held out (the rule
in tools/zoo_heldout.py).

    python3 tools/uncovered_kernels.py --cases profiles/h200-sxm/2026-11-27-zoo/predictions-cnn.json \\
        --onnx profiles/h200-sxm/2026-11-27-zoo/onnx.tgz --profile profiles/h200-sxm/2026-11-27-predict-generic \\
        [--runtime graph] [--models resnet50,unet_small] [--top 15] [--cases-over 5]

``--cases``: a tools/compare_predictions.py JSON (its model, batch, layout and runtime per case; the measured
times are not used). Prints, over all cases, the families whose uncovered kernels carry the most predicted time
(the share summed over cases, the cases they appear in, an example shape), then each case whose uncovered share
exceeds ``--cases-over`` percent. Exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@dataclass
class Family:
    """Uncovered kernels of one kind, pricing source and note, over the cases."""
    share_pct: float = 0.0                 # of each case's predicted time, summed over cases
    kernels: int = 0
    cases: set = field(default_factory=set)
    example: str = ""


def family_key(t) -> tuple[str, str, str]:
    """(kind with its kernel size where it has one, the curve or grid that priced it, its note's first clause)."""
    op = t.op
    size = f" {op.conv_kernel}x{op.conv_kernel}" if op.conv_kernel else f" {op.conv_taps}-tap" if op.conv_taps else ""
    return f"{op.kind}{size}", t.source, (t.note or "").split(";")[0][:140] or "past the grid's axes"


def shape_of(op) -> str:
    if op.kind in ("gemm", "conv_dw") and op.m:
        extra = f" x{op.batch} groups" if op.batch > 1 else ""
        return (f"m={op.m} n={op.n} k={op.k}{extra}" + (f" images={op.conv_images}" if op.conv_images else "")
                + (f" stride={op.conv_stride}" if op.conv_stride > 1 else "")
                + (f" dilation={op.conv_dilation}" if op.conv_dilation > 1 else ""))
    return f"{op.bytes / 1e6:.2f} MB"


def uncovered(cases: list[dict], onnx_dir: Path, profile, runtime: str, models: set[str]):
    """(families by key, per case: (label, uncovered share %, its three largest families))."""
    from compare_predictions import onnx_for

    from hwprobe.models import load_model
    from hwprobe.predict.estimate import predict_model

    fams: dict[tuple, Family] = defaultdict(Family)
    per_case = []
    for c in cases:
        if c.get("runtime") != runtime or (models and c["model"] not in models):
            continue
        path = onnx_for(onnx_dir, c["model"], c["batch"])
        if path is None:
            continue
        p = predict_model(load_model(path, c["batch"]), profile, "fp16", runtime, layout=c.get("layout", "nhwc"))
        label = f"{c['model']} b{c['batch']} {c.get('layout', 'nhwc')}"
        mine: dict[tuple, float] = defaultdict(float)
        for t in p.kernels:
            if t.covered and t.covered != "False":
                continue
            key = family_key(t)
            f = fams[key]
            share = t.time_s / p.time_s * 100
            f.share_pct += share
            f.kernels += 1
            f.cases.add(label)
            f.example = f.example or f"{t.op.name}: {shape_of(t.op)}"
            mine[key] += share
        per_case.append((label, p.uncovered_share * 100, sorted(mine.items(), key=lambda x: -x[1])[:3]))
    return fams, per_case


def report(fams, per_case, top: int, over: float) -> str:
    lines = ["| uncovered kernels (kind, priced by, why) | share of predicted time, summed over cases | kernels | "
             "cases | example |", "|---|---:|---:|---:|---|"]
    for (kind, src, note), f in sorted(fams.items(), key=lambda x: -x[1].share_pct)[:top]:
        lines.append(f"| {kind}, {src}{', ' + note if note else ''} | {f.share_pct:.1f}% | {f.kernels} | "
                     f"{len(f.cases)} | {f.example} |")
    lines += ["", f"Cases with more than {over:g}% of their predicted time outside the calibration:", ""]
    for label, share, mine in sorted(per_case, key=lambda x: -x[1]):
        if share > over:
            lines.append(f"- {label}: {share:.1f}%: " + "; ".join(f"{k[0]} ({k[1]}) {v:.1f}%" for k, v in mine))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, required=True)
    ap.add_argument("--onnx", type=Path, required=True)
    ap.add_argument("--profile", type=Path, required=True)
    ap.add_argument("--runtime", default="graph", choices=("graph", "eager", "fused"))
    ap.add_argument("--models", default="", help="comma list: only these models")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--cases-over", type=float, default=5.0)
    a = ap.parse_args(argv)
    from compare_predictions import onnx_dir

    from hwprobe.errors import InputError
    from hwprobe.profile_build import load_profile

    try:
        cases = json.loads(a.cases.read_text())
        if not isinstance(cases, list) or not all(isinstance(c, dict) and "model" in c for c in cases):
            raise InputError(f"{a.cases}: not a tools/compare_predictions.py JSON (a list of cases)")
        if not a.onnx.exists():
            raise InputError(f"{a.onnx}: no such folder or archive")
        profile = load_profile(a.profile)
        with onnx_dir(a.onnx) as where:
            fams, per_case = uncovered(cases, where, profile, a.runtime, {m for m in a.models.split(",") if m})
    except (InputError, OSError, ValueError) as e:
        print(f"uncovered_kernels: error: {e}", file=sys.stderr)
        return 2
    print(report(fams, per_case, a.top, a.cases_over), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
