"""The multi-GPU comparison table of a device session (tools/device_multigpu.sh writes its inputs):

    python3 tools/multigpu_compare.py --nccl-tests DIR --results RUN_DIR [--p2p-ref p2p_ref.json] [--out compare.md]

- collectives: hwprobe's busbw (best verified of out-of-place and in-place, from RUN_DIR/measurements.jsonl) beside
  nccl-tests' best (DIR/<op>.log, both halves of each row) at 1 GiB and 4 GiB, and the ratio (done at >= 0.98);
- P2P: hwprobe's copy-engine ceilings (profile links, ce.uni / ce.bi) beside cudaMemcpyPeerAsync
  (tools/p2p_reference.py's JSON).
Bad input: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hwprobe.fleet import nccltests as NT  # noqa: E402

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")
SIZES = (1 << 30, 4 << 30)


def _records(run: Path) -> list[dict]:
    from hwprobe.results import records_text

    lines = records_text(run).splitlines()
    return [json.loads(x) for x in lines[1:] if x.strip()]


def _reference(folder: Path) -> list[NT.Row]:
    rows: list[NT.Row] = []
    for op in OPS:
        f = folder / f"{op}.log"
        if f.exists():
            rows += NT.parse(f.read_text(errors="replace"), test=op)
    return rows


def _p2p_pairs(profile: dict, ref: dict | None) -> dict[str, tuple[float | None, float | None]]:
    """(hwprobe's best ce.uni / ce.bi over its pairs, memcpyPeer's best one-way / both-ways figure) by key."""
    best: dict[str, float] = {}
    for link in (profile.get("links") or {}).values():
        if link.get("kind") != "p2p":
            continue
        for key in ("ce.uni", "ce.bi"):
            c = (link.get("ceilings") or {}).get(key)
            if c:
                best[key] = max(best.get(key, 0.0), float(c["value"]))
    uni = list(((ref or {}).get("uni_Bps") or {}).values())
    want = {"ce.uni": max(uni) if uni else None, "ce.bi": (ref or {}).get("bi_Bps")}
    return {k: (best.get(k), want[k]) for k in ("ce.uni", "ce.bi")}


def p2p_ratios(profile: dict, ref: dict | None) -> dict[str, float | None]:
    """hwprobe's copy-engine ceiling over cudaMemcpyPeerAsync's, one way and both ways (None where one is missing)."""
    return {k: (hw / rf if hw and rf else None) for k, (hw, rf) in _p2p_pairs(profile, ref).items()}


def p2p_table(profile: dict, ref: dict | None, need: float = 0.98) -> str:
    """hwprobe's best ce.uni / ce.bi over its pairs against memcpyPeer's best one-way / both-ways figure."""
    pairs, ratios = _p2p_pairs(profile, ref), p2p_ratios(profile, ref)
    out = [f"| P2P | hwprobe GB/s | cudaMemcpyPeerAsync GB/s | ratio | >= {need:.0%} |", "|---|---|---|---|---|"]
    for key, label in (("ce.uni", "one way"), ("ce.bi", "both ways")):
        (hw, rf), ratio = pairs[key], ratios[key]
        cells = [f"{label} ({key})", _gb(hw), _gb(rf), f"{ratio:.3f}" if ratio else "-",
                 "-" if ratio is None else ("yes" if ratio >= need else "**no**")]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _gb(v: float | None) -> str:
    return f"{v / 1e9:.1f}" if v else "-"


def build(nccl_dir: Path, run: Path, p2p_ref: Path | None) -> str:
    profile = json.loads((run / "profile.json").read_text())
    rows = NT.compare(NT.hwprobe_points(_records(run)), _reference(nccl_dir), OPS, SIZES)
    ref = json.loads(p2p_ref.read_text()) if p2p_ref and p2p_ref.exists() else None
    text = [f"# hwprobe against nccl-tests and cudaMemcpyPeerAsync ({run.name})", "",
            "busbw as nccl-tests defines it; each side's best of out-of-place and in-place (nccl-tests' in-place "
            "alltoall/sendrecv rows are not checked: N/A).", "", NT.table(rows), p2p_table(profile, ref)]
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nccl-tests", required=True, type=Path, help="folder of <op>.log files")
    ap.add_argument("--results", required=True, type=Path, help="an hwprobe results directory")
    ap.add_argument("--p2p-ref", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    for p, what in ((a.nccl_tests, "nccl-tests folder"), (a.results, "results directory"),
                    (a.results / "profile.json", "results directory")):
        if not p.exists():
            print(f"multigpu_compare: error: {what} {str(p)!r} not found", file=sys.stderr)
            return 2
    text = build(a.nccl_tests, a.results, a.p2p_ref)
    if a.out:
        a.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
