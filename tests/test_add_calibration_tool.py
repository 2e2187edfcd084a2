"""tools/add_calibration.py on the committed H100 generic profile and the real later run kept beside it (added/):
taken out of a copy and merged back, the curves and points are the same, and the predictor reads them."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import add_calibration as add  # noqa: E402

PROFILE = ROOT / "profiles/h100-sxm/2026-11-27-predict-generic"
RUNS = sorted((PROFILE / "added").iterdir())            # results directory names: in the order they were measured
RUN = RUNS[0]


def _added(run: Path) -> tuple[list[str], set[str], set[tuple]]:
    """What a run added: its framework curve kinds, its conv families, and (precision, family) of its points."""
    cal = json.loads((run / "profile.json").read_text())["calibration"]
    pts = (cal.get("conv") or {}).get("points", [])
    return sorted(cal.get("framework", {})), {add.conv_family(p) for p in pts}, \
        {(p.get("precision"), add.conv_family(p)) for p in pts}


def test_the_added_runs_merge_back_into_the_profile_they_came_from(tmp_path):
    """The profile without what its added runs measured, then each run merged in the order it was measured (a later
    run's points replace an earlier one's of the same shape), is the committed profile."""
    target = tmp_path / "p"
    target.mkdir()
    full = json.loads((PROFILE / "profile.json").read_text())
    doc = json.loads(json.dumps(full))
    cal = doc["calibration"]
    kinds = {k for r in RUNS for k in _added(r)[0]}
    pairs = set().union(*(_added(r)[2] for r in RUNS))
    cal["framework"] = {k: v for k, v in cal["framework"].items() if k not in kinds}
    cal["conv"]["points"] = [p for p in cal["conv"]["points"] if (p.get("precision"), add.conv_family(p)) not in pairs]
    (target / "profile.json").write_text(json.dumps(doc, indent=2))
    shutil.copy(PROFILE / "measurements.jsonl.gz", target)
    for run in RUNS:
        fw, fams, _ = _added(run)
        got = add.merge(run, target, fw, sorted(fams))
        assert got["curves"] == len(fw) and got["records"] > 0
    merged = json.loads((target / "profile.json").read_text())["calibration"]
    assert {k: merged["framework"][k] for k in kinds} == {k: full["calibration"]["framework"][k] for k in kinds}
    key = lambda p: tuple(sorted(p.items()))                                  # noqa: E731
    assert sorted(map(key, merged["conv"]["points"])) == sorted(map(key, full["calibration"]["conv"]["points"]))
    assert all((target / "added" / r.name / "profile.json").exists() for r in RUNS)
    again = add.merge(RUN, target, ["sort"], ["grouped_odd"])                # a point of the same shape: replaced
    assert again["points"] == 72
    assert len(json.loads((target / "profile.json").read_text())["calibration"]["conv"]["points"]) == len(
        full["calibration"]["conv"]["points"])


def test_the_merged_profile_prices_odd_widths_and_the_sort_from_their_own_points():
    from hwprobe.lowering.ops import KernelOp
    from hwprobe.predict.model import Predictor
    from hwprobe.profile_build import load_profile

    pred = Predictor(load_profile(PROFILE), "graph", layout="nhwc")
    sort = pred.time(KernelOp("s", "sort", bytes=32 * 4096, precision="fp32"))
    assert sort.covered and sort.source == "framework.sort" and 30e-6 < sort.time_s < 50e-6
    assert pred.time(KernelOp("s", "sort", bytes=32 * 4097, precision="fp32")).time_s > 1.8 * sort.time_s
    table = pred.cal.conv.only("fp16")
    t24, covered = table.grouped(3136, 720, 30, 3, "nhwc", 1)                # 30 groups of 24
    t32, _ = table.grouped(3136, 1024, 32, 3, "nhwc", 1)                     # 32 groups of 32: more work
    assert covered and table.has_grouped_odd(3, "nhwc") and t24 > t32


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        add.main([str(tmp_path), str(PROFILE)])
    assert e.value.code == 2 and "holds no profile.json" in capsys.readouterr().err


def test_the_masked_sdpa_points_merge_back_beside_the_unmasked_table(tmp_path):
    """The H200 generic profile without its masked SDPA points, with the real add32 run merged back by
    ``--sdpa-masked``, is the committed profile: the 28 masked points join, the unmasked table stays the profile's own
    (the run's BF16 unmasked points are not merged), and merging again replaces them rather than adding."""
    h200 = ROOT / "profiles/h200-sxm/2026-11-27-predict-generic"
    run = h200 / "added/20261128T151828Z-vm-nvidia-h200"
    target = tmp_path / "p"
    target.mkdir()
    full = json.loads((h200 / "profile.json").read_text())
    doc = json.loads(json.dumps(full))
    doc["calibration"]["sdpa"]["points"] = [p for p in doc["calibration"]["sdpa"]["points"] if not p.get("masked")]
    (target / "profile.json").write_text(json.dumps(doc))
    shutil.copy(h200 / "measurements.jsonl.gz", target)
    for _ in range(2):
        got = add.merge(run, target, [], [], sdpa_masked=True)
        assert got["points"] == 28 and got["records"] > 0
        merged = json.loads((target / "profile.json").read_text())["calibration"]["sdpa"]["points"]
        assert merged == full["calibration"]["sdpa"]["points"]
    with pytest.raises(SystemExit, match="no masked SDPA points"):
        add.merge(RUN, target, [], [], sdpa_masked=True)
