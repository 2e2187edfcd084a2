#!/usr/bin/env python3
"""Add what a later, narrower 'predict' run measured to a committed calibration profile, without touching the rest:
framework curves of the kinds named (a new kind, e.g. ``sort``), convolution points of the families named
(e.g. ``grouped_odd``: group widths that are not powers of two) and whole curves of one table each, named as the
calibration section names them (e.g. ``grouped_gemm``: MoE grouped GEMMs; ``eager``: the host times), and the SDPA
table's masked points (transformers' masked call) beside the profile's unmasked ones. Those curves
and points go into profile.json's ``calibration`` (a point of the same shape already there is replaced); the run
itself (its profile.json and all its records) is kept beside the profile's own as added/RUN/ (the profile's
measurements.jsonl.gz stays the run that made it). Say in the profile's README which lease and commit measured
them: they come from another lease.

    python tools/add_calibration.py RUN_DIR PROFILE_DIR --framework sort --conv grouped_odd --curve grouped_gemm
    python tools/add_calibration.py RUN_DIR PROFILE_DIR --sdpa-masked
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hwprobe.probes.calibration.grids import conv_family, shape_key  # noqa: E402
from hwprobe.probes.calibration.pruned import point_key  # noqa: E402
from hwprobe.results import records_text  # noqa: E402


def merge(run: Path, profile: Path, framework: list[str], conv: list[str], curves: list[str] = (),
          sdpa_masked: bool = False) -> dict[str, int]:
    """Merge into ``profile`` in place; returns how many curves, points and records were added."""
    from hwprobe.calibration import KEYED
    from hwprobe.vocab import Curve

    src = json.loads((run / "profile.json").read_text())["calibration"]
    doc = json.loads((profile / "profile.json").read_text())
    cal = doc["calibration"]
    added = {"curves": 0, "points": 0, "records": 0}
    whole = {c.value for c in Curve if c not in KEYED}
    for name in curves:
        if name not in whole:
            raise SystemExit(f"add_calibration: error: {name!r} is no whole curve; those: {', '.join(sorted(whole))}")
        if not src.get(name):
            raise SystemExit(f"add_calibration: error: the run has no {name!r} curve")
        cal[name] = src[name]
        added["curves"] += 1
    for kind in framework:
        if kind not in src.get("framework", {}):
            raise SystemExit(f"add_calibration: error: the run has no framework curve {kind!r}")
        cal.setdefault("framework", {})[kind] = src["framework"][kind]
        added["curves"] += 1
    new = [p for p in (src.get("conv") or {}).get("points", []) if conv_family(p) in conv]
    if conv and not new:
        raise SystemExit(f"add_calibration: error: the run has no conv points of {conv}")
    if new:
        keys = {(p.get("precision"), shape_key(p)) for p in new}
        cal["conv"]["points"] = [p for p in cal["conv"]["points"]
                                 if (p.get("precision"), shape_key(p)) not in keys] + new
        added["points"] = len(new)
    if sdpa_masked:
        new = [p for p in (src.get("sdpa") or {}).get("points", []) if p.get("masked")]
        if not new or not cal.get("sdpa"):
            raise SystemExit("add_calibration: error: the run has no masked SDPA points, or the profile no SDPA "
                             "table to add them to")
        keys = {point_key(p) for p in new}
        cal["sdpa"]["points"] = [p for p in cal["sdpa"]["points"] if point_key(p) not in keys] + new
        added["points"] += len(new)
    dest = profile / "added" / run.name
    if dest.resolve() != run.resolve():
        dest.mkdir(parents=True, exist_ok=True)
        text = records_text(run)             # the run's records as written, header line included
        with gzip.open(dest / "measurements.jsonl.gz", "wt") as fh:
            fh.write(text)
        (dest / "profile.json").write_text((run / "profile.json").read_text())
        added["records"] = sum(1 for line in text.splitlines() if line.strip())
    (profile / "profile.json").write_text(json.dumps(doc, indent=2) + "\n")
    return added


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("profile", type=Path)
    ap.add_argument("--framework", default="", help="comma list of framework curve kinds to add")
    ap.add_argument("--conv", default="", help="comma list of conv grid families whose points to add")
    ap.add_argument("--curve", default="", help="comma list of whole curves to add (grouped_gemm, eager, ...)")
    ap.add_argument("--sdpa-masked", action="store_true", help="add the run's masked SDPA points")
    args = ap.parse_args(argv)
    for d in (args.run, args.profile):
        if not (d / "profile.json").exists():
            ap.error(f"{d} holds no profile.json")
    got = merge(args.run, args.profile, [x for x in args.framework.split(",") if x],
                [x for x in args.conv.split(",") if x], [x for x in args.curve.split(",") if x], args.sdpa_masked)
    print(f"added to {args.profile}: {got}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
