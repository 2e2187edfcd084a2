"""MoE experts' grouped GEMM (torch._grouped_mm, issue 32): the calibration's grid, its table's pricing by
efficiency against the roofline, the predictor choosing it for transformers' grouped experts only, and the profile
and tool plumbing. The GPU measurement itself is tests/gpu's."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hwprobe import calibration as C
from hwprobe.calibration import CalibrationSection, GroupedPoints
from hwprobe.lowering.ops import KernelOp
from hwprobe.predict.calibration import Calibration, GroupedTable
from hwprobe.predict.model import Predictor
from hwprobe.probes.calibration import grids
from hwprobe.profile_build import load_profile
from hwprobe.vocab import Curve

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "profiles/h200-sxm/2026-11-27-predict-generic"
sys.path.insert(0, str(ROOT / "tools"))
import add_calibration as add  # noqa: E402

PEAK, BW = 800e12, 4.4e12


def _eff(rows: int) -> float:
    """A synthetic grouped GEMM's fraction of its roofline: 0.5 at 8 rows an expert up to 0.8 at 2048."""
    return 0.5 + 0.3 * math.log(rows / 8) / math.log(256)


def _points(shapes=((128, 1536, 2048),), rows=(8, 32, 128, 512, 2048), precision="bf16") -> list[dict]:
    return [{"experts": e, "rows": r, "n": n, "k": k, "precision": precision,
             "time_s": GroupedTable.roof_s(e, r, n, k, PEAK, BW) / _eff(r)} for e, n, k in shapes for r in rows]


def test_the_grid_covers_the_moe_shapes_in_bf16_only():
    full, quick = grids.grouped_cases("bf16"), grids.grouped_cases("bf16", quick=True)
    assert len(full) == len(grids.GROUPED_SHAPES) * len(grids.GROUPED_ROWS) == 54 and len(quick) == 6
    assert {(c["experts"], c["n"], c["k"]) for c in full} == set(grids.GROUPED_SHAPES)
    assert grids.grouped_cases("fp16") == []


def test_a_measured_point_prices_at_its_time_and_between_them_by_efficiency():
    table = GroupedTable(_points())
    t, covered, note = table.time(128, 128, 1536, 2048, PEAK, BW)
    assert t == pytest.approx(_points()[2]["time_s"]) and covered and note == ""
    mid, covered, _ = table.time(128, 64, 1536, 2048, PEAK, BW)           # between 32 and 128 rows
    geo = math.sqrt(_eff(32) * _eff(128))                                  # log efficiency over log rows
    assert covered and mid == pytest.approx(GroupedTable.roof_s(128, 64, 1536, 2048, PEAK, BW) / geo, rel=1e-9)
    far, covered, note = table.time(128, 4096, 1536, 2048, PEAK, BW)       # past the grid: the end's efficiency
    assert not covered and "outside the 8-2048 measured" in note
    assert far == pytest.approx(GroupedTable.roof_s(128, 4096, 1536, 2048, PEAK, BW) / _eff(2048))


def test_a_shape_not_measured_takes_the_nearest_ones_efficiency_and_says_so():
    table = GroupedTable(_points(shapes=((128, 1536, 2048), (8, 28672, 4096))))
    t, covered, note = table.time(64, 256, 2816, 2048, PEAK, BW)
    assert not covered and "no grouped GEMM points at 64 experts x 2816 x 2048" in note and "128 x 1536 x 2048" in note
    geo = math.sqrt(_eff(128) * _eff(512))
    assert t == pytest.approx(GroupedTable.roof_s(64, 256, 2816, 2048, PEAK, BW) / geo)
    assert GroupedTable([]).time(8, 8, 64, 64, PEAK, BW) is None
    assert table.only("fp16") is None and table.only("bf16") is not None


def _op(precision="bf16", backend="grouped_mm") -> KernelOp:
    return KernelOp("experts_gate_up", "gemm", precision=precision, m=128, n=1536, k=2048, batch=128, backend=backend)


def test_the_predictor_prices_transformers_grouped_experts_from_the_table_and_nothing_else():
    prof = load_profile(H200)
    assert Calibration.of(prof).grouped is not None        # the H200 profile's own curve (2026-11-28)
    cal = replace(Calibration.of(prof), grouped=GroupedTable(_points()))
    pred = Predictor(prof, "graph", cal)
    got = pred.time(_op())
    assert got.source == "framework.grouped_mm" and got.covered
    assert got.time_s == pytest.approx(_points()[2]["time_s"] + cal.switch_s, rel=1e-6)
    batched = pred.time(_op(backend=""))                              # a batched GEMM: the GEMM table, as before
    assert batched.source != "framework.grouped_mm"
    plain = Predictor(prof, "graph", replace(cal, grouped=None)).time(_op())  # no grouped points: batched pricing
    assert plain.source == batched.source and plain.time_s == pytest.approx(batched.time_s)
    fp16 = pred.time(_op("fp16"))                                       # the same datapath's points, said so
    assert fp16.source == "framework.grouped_mm" and not fp16.covered and "no fp16 grouped GEMM points" in fp16.note


def test_the_moe_prefill_marks_its_experts_grouped_and_its_decode_does_not():
    from hwprobe.analysis.llm import LLMOptions
    from hwprobe.lowering.llm import lower_runtime
    from hwprobe.lowering.llm.graph import Quant
    from hwprobe.models.llm import load

    cfg = load("qwen3-30b-a3b")
    got = {}
    for phase in ("prefill", "decode"):
        opts = LLMOptions(phase=phase, prompt=2048, context=2048, batch=1, runtime="hf")
        from hwprobe.analysis.llm import cases

        ops = lower_runtime(cfg, cases(opts)[0], Quant("bf16", "bf16"), "hf", 132)
        got[phase] = [o for o in ops if o.backend == "grouped_mm"]
    assert got["prefill"] and {o.name.rsplit(".", 1)[-1] for o in got["prefill"]} == {"experts_gate_up",
                                                                                       "experts_down"}
    assert all(o.batch > 1 and o.m >= 1 for o in got["prefill"]) and not got["decode"]


def test_the_curve_rides_in_the_profile_and_old_sections_write_no_key_for_it(tmp_path):
    assert C.metric(Curve.GROUPED_GEMM) == "predict.torch.grouped_mm" and Curve.GROUPED_GEMM in C.LATER
    assert "grouped_gemm" not in CalibrationSection().to_dict()
    prof = load_profile(H200)
    prof.calibration.grouped_gemm = GroupedPoints(points=_points(), framework="torch 2.11", api="torch._grouped_mm")
    prof.save(tmp_path / "profile.json")                                # the schema takes it
    back = load_profile(tmp_path)
    assert back.calibration.grouped_gemm == prof.calibration.grouped_gemm
    assert Calibration.of(back).grouped.time(128, 128, 1536, 2048, PEAK, BW)[1]
    assert "5 grouped GEMM points" in back.calibration.summary()
    sec = CalibrationSection()
    assert sec.add("predict.torch.grouped_mm", 5, {"points": _points(), "api": "torch._grouped_mm", "wall_s": 2.0})
    assert sec.grouped_gemm.extra == {"wall_s": 2.0}


def test_the_tool_adds_a_whole_curve_and_refuses_a_keyed_or_missing_one(tmp_path):
    run, target = tmp_path / "run", tmp_path / "p"
    for d in (run, target):
        d.mkdir()
    doc = json.loads((H200 / "profile.json").read_text())
    doc["calibration"].pop("grouped_gemm", None)           # a profile without the curve (H200's gained it later)
    (target / "profile.json").write_text(json.dumps(doc))
    src = json.loads(json.dumps(doc))
    src["calibration"]["grouped_gemm"] = {"points": _points(), "framework": "torch 2.11", "api": "torch._grouped_mm",
                                          "probe": "gpu.torch_kernels", "note": "", "extra": {}}
    (run / "profile.json").write_text(json.dumps(src))
    (run / "measurements.jsonl").write_text('{"format": "hwprobe-measurements", "version": 2}\n')
    got = add.merge(run, target, [], [], ["grouped_gemm"])
    assert got["curves"] == 1
    assert load_profile(target).calibration.grouped_gemm.points == _points()
    for bad, why in ((["gemm"], "is no whole curve"), (["sdpa_x"], "is no whole curve")):
        with pytest.raises(SystemExit, match=why):
            add.merge(run, target, [], [], bad)
    (run / "profile.json").write_text(json.dumps(doc))
    with pytest.raises(SystemExit, match="the run has no 'grouped_gemm' curve"):
        add.merge(run, target, [], [], ["grouped_gemm"])
