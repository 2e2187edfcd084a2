"""Calibration points the predictor does not need (hwprobe.predict.prune, issue 33): a point interpolation from its
neighbours predicts within 2% is left out of the probes' grids, and the predictor puts it back as it was judged."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from hwprobe.predict import prune
from hwprobe.predict.calibration import GemmTable, interpolations
from hwprobe.probes.calibration import pruned as pg
from hwprobe.vocab import Curve
from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[1]
CONV = [ROOT / "profiles/h200-sxm/2026-11-26-predict-conv", ROOT / "profiles/h100-sxm/2026-11-26-predict-conv"]
GENERIC = [ROOT / "profiles/h200-sxm/2026-11-27-predict-generic", ROOT / "profiles/h100-sxm/2026-11-27-predict-generic"]


def _law(m, n, k):
    return 1e-6 * m ** 0.5 * n ** 0.7 * k ** 0.3


def test_a_straight_curve_loses_its_inner_points_and_a_kink_keeps_its_neighbours():
    x = [2.0 ** i for i in range(9)]
    t = [1e-6 * v for v in x]
    t[4] *= 1.3                                       # a step: no line through its neighbours predicts it
    left = prune.prunable([np.log(np.asarray(t))], [x])
    assert left == {(1,), (2,), (6,), (7,)}           # the ends, the kink and the points either side of it stay


def test_a_point_must_be_predicted_on_every_table():
    x = [1.0, 2.0, 4.0, 8.0]
    a = np.log([1.0, 2.0, 4.0, 8.0])
    b = np.log([1.0, 2.0, 6.0, 8.0])                  # the same axis on another GPU: its third point stands out
    assert prune.prunable([a], [x]) == {(1,), (2,)}   # the second out, the third still on the line from 1 to 8
    assert prune.prunable([a, b], [x]) == set()       # on b, (1,) interpolates to 2.45 against a measured 2.0


def test_a_point_goes_only_while_the_points_already_out_stay_within_2_percent():
    x = [2.0 ** i for i in range(5)]
    bend = np.log(np.array(x) * np.exp(0.01 * np.arange(5) ** 2))     # 1% off each chord of one step
    left = prune.prunable([bend], [x])
    assert left == {(1,), (3,)}       # with (1,) out, (2,) out too would put both 2.02% off the chord from 0 to 3
    measured = np.ones(5, bool)
    for (i,) in left:
        measured[i] = False
    for (i,) in left:                                 # each as the predictor fills it, from what stays
        got = np.mean(interpolations(bend, [np.log(x)], (i,), measured))
        assert abs(np.exp(got - bend[i]) - 1) <= prune.TOL


def test_gemm_points_left_out_come_back_from_the_table_as_judged():
    """Time bends in log-log along M (as a library's efficiency does): a left-out point is within 2% of the line
    between its neighbours but 3% off the line through two neighbours on one side, the fill the table used before."""
    ms, ns = [1, 4, 16, 64, 256], [64, 4096]
    bend = lambda m: np.exp(0.0078 * np.log(m) ** 2)                     # curvature 1.5% per step of 4x
    t = np.array([[[_law(m, n, k) * bend(m) for k in ns] for n in ns] for m in ms])
    left = prune.prunable([np.log(t)], [ms, ns, ns])
    assert len(left) >= 4 and all(0 < i < 4 for i, _, _ in left)       # interior M only: N, K have no inside
    holed = [[[None if (i, j, q) in left else float(t[i, j, q]) for q in range(2)] for j in range(2)]
             for i in range(5)]
    tab = GemmTable.from_finding({"precision": "fp16", "m": ms, "n": ns, "k": ns, "time_s": holed})
    for i, j, q in left:
        assert tab.time(ms[i], ns[j], ns[q]) == pytest.approx(t[i, j, q], rel=0.02)
        assert tab.time(ms[i], ns[j], ns[q]) > t[i, j, q]                   # above: the chord of a convex bend


def _rel(dirs) -> list[str]:
    return [str(d.relative_to(ROOT)) for d in dirs]


def test_the_committed_pruned_grid_is_what_the_tool_finds_in_the_committed_profiles():
    """GEMM and curve points judged on the 2026-11-26 profiles (the generic profiles were measured without them);
    convolution points on the generic profiles, whose points carry today's keys (precision, stride, groups)."""
    from hwprobe.probes.calibration.common import SIZES
    from hwprobe.profile_build import load_profile

    tool = load_tool("suite_speed")
    old = tool.prune_profiles([load_profile(d) for d in CONV], SIZES)
    new = tool.prune_profiles([load_profile(d) for d in GENERIC], SIZES)
    want = new.as_json(_rel(GENERIC), ("conv",), old.as_json(_rel(CONV)))
    assert json.loads(pg.PRUNED_FILE.read_text()) == json.loads(tool.compact_json(want))
    assert old.worst <= prune.TOL and old.gemm_points > 100 and old.curve_points > 50
    assert new.worst <= prune.TOL and new.conv_points > 20


def test_the_predictor_prices_each_left_out_point_within_2_percent_of_its_measurement():
    from hwprobe.predict.calibration import Calibration
    from hwprobe.probes.calibration.common import SIZES
    from hwprobe.profile_build import load_profile

    tool = load_tool("suite_speed")
    done = pg.pruned()
    for d in CONV:
        full = load_profile(d)
        p = tool.Pruned({k: sorted(v) for k, v in done.gemm.items()}, 0, {k: sorted(v) for k, v in done.curves.items()},
                        0, [], 0, 0.0)
        cal = Calibration.of(tool.pruned_profile(full, p, SIZES))
        sec = full.calibration
        for prec, pts in done.gemm.items():
            grid = sec.gemm[prec]
            pos = [{v: i for i, v in enumerate(axis)} for axis in (grid.m, grid.n, grid.k)]
            for m, n, k in pts:
                measured = grid.time_s[pos[0][m]][pos[1][n]][pos[2][k]]
                assert cal.gemm[prec].time(m, n, k) == pytest.approx(measured, rel=prune.TOL), (d.name, m, n, k)
        curves = tool.kernel_curves(sec)
        for curve, sizes in done.curves.items():
            kind, key, meas = curves[curve]
            table = cal.memory if kind == Curve.MEMORY else cal.framework
            for s in sizes:
                i = SIZES.index(s)
                got = table[key].time(meas.bytes[i])
                assert got == pytest.approx(meas.time_s[i], rel=prune.TOL), (d.name, curve, s)
    for d in GENERIC:                  # each convolution left out, priced as the predictor reads its table
        full = load_profile(d)
        cal = Calibration.of(tool.pruned_profile(full, tool.Pruned({}, 0, {}, 0, [dict(c) for c in done.conv], 0,
                                                                   0.0), SIZES))
        conv = {pg.point_key(q): q for q in full.calibration.conv.points}
        assert len(done.conv) > 20
        for key in done.conv:
            q = conv[key]
            assert tool.conv_price(cal, q) == pytest.approx(q["time_s"], rel=prune.TOL), (d.name, q)


def test_gemm_shapes_skips_the_left_out_points_and_says_so(monkeypatch):
    from hwprobe.measurement import Measurement
    from hwprobe.probes.calibration import gemm_shapes as gs

    ms, nks = [1, 2, 4], [64, 128, 256]
    monkeypatch.setattr(pg, "pruned", lambda: pg.Pruned(gemm={"fp16": frozenset({(2, 128, 128)})}))
    seen = []

    def point(ctx, env, v, m, n, k, metric):
        seen.append((m, n, k))
        return Measurement(probe="gpu.gemm_shapes", metric=metric, kind="sweep", value=2.0 * m * n * k / 1e-5,
                           unit="FLOP/s")

    monkeypatch.setattr(gs, "_point", point)
    for quick, skipped in ((False, True), (True, False)):
        seen.clear()
        ctx = SimpleNamespace(quick=quick, derived=lambda metric, value, **kw: SimpleNamespace(value=value, **kw))
        out = list(gs._grid(ctx, None, SimpleNamespace(key="fp16.f32acc"), "fp16", ms, nks))
        assert ((2, 128, 128) not in seen) is skipped and len(seen) == 27 - skipped
        finding = out[-1]
        assert finding.value == 27 - skipped and finding.params["pruned"] == ([[2, 128, 128]] if skipped else [])
        assert (finding.params["time_s"][1][1][1] is None) is skipped


def test_curve_and_convolution_sweeps_leave_out_their_pruned_points(monkeypatch):
    from hwprobe.probes.calibration import common

    pr = pg.Pruned(curves={"memory.norm": frozenset({1 << 20})},
                   conv=frozenset({pg.point_key({"k": 1, "cin": 64, "cout": 64, "m": 196, "layout": "nhwc",
                                                    "images": 1})}))
    monkeypatch.setattr(pg, "pruned", lambda: pr)
    sizes = [1 << 19, 1 << 20, 1 << 21]
    assert common.curve_sizes(SimpleNamespace(quick=False), "memory.norm", sizes) == [1 << 19, 1 << 21]
    assert common.curve_sizes(SimpleNamespace(quick=False), "torch.norm", sizes) == sizes
    assert common.curve_sizes(SimpleNamespace(quick=True), "memory.norm", sizes) == sizes

    from hwprobe.probes.calibration import torch_timing as tk

    cases = [{"k": 1, "cin": 64, "cout": 64, "m": m, "layout": "nhwc", "images": 1} for m in (49, 196, 784)]
    timed, rows = [], []
    torch = SimpleNamespace(cuda=SimpleNamespace(empty_cache=lambda: None))
    list(tk.sweep(SimpleNamespace(quick=False), torch, cases, lambda **c: timed.append(c["m"]) or 1e-5,
                  "predict.torch.conv", "conv", rows))
    assert timed == [49, 784] and [r["m"] for r in rows] == [49, 784]


def test_prune_cli_writes_the_profile_the_probes_would_now_make(tmp_path):
    """The whole file from the 2026-11-26 profiles, then its conv part alone from the generic ones (--only): the
    committed file; and the profile the probes would now make, its pruned points left out."""
    from hwprobe.profile_build import load_profile

    tool = load_tool("suite_speed")
    g = tmp_path / "g.json"
    assert tool.main(["prune", *map(str, CONV), "--write", str(g), "--profile-out", str(tmp_path / "p")]) == 0
    sec = load_profile(tmp_path / "p").calibration
    cells = [c for plane in sec.gemm["fp16"].time_s for row in plane for c in row]
    assert cells.count(None) == len(pg.pruned().gemm["fp16"])
    assert tool.main(["prune", *map(str, GENERIC), "--write", str(g), "--only", "conv"]) == 0
    assert json.loads(g.read_text()) == json.loads(pg.PRUNED_FILE.read_text()) | {
        "sources": {"gemm": [str(d) for d in CONV], "curves": [str(d) for d in CONV],
                    "conv": [str(d) for d in GENERIC]}}
    assert tool.main(["prune", *map(str, GENERIC), "--write", str(g), "--only", "convs"]) == 2


def test_convolution_families_keep_precisions_groups_and_strides_apart():
    """The generic grid's points: each precision, grouped kernel, stride and image regime is its own table, as the
    predictor reads them (a 2% judgement across two precisions' times would prune nothing real)."""
    from hwprobe.probes.calibration import grids

    fam = load_tool("suite_speed").conv_family
    cases = {p: grids.conv_cases(p) for p in ("fp16", "fp32")}
    one = {fam(c) for c in cases["fp16"]}
    assert not one & {fam(c) for c in cases["fp32"]}
    kinds = {f[0] for f in one}
    assert kinds == {"dense1", "dense", "grouped", "dw", "stem"}
    g = next(c for c in cases["fp16"] if c["groups"] == 4 and c["cin"] == 256 and c["layout"] == "nhwc")
    assert fam(g)[0] == "grouped" and fam({**g, "groups": 8}) == fam(g) and fam({**g, "stride": 2}) != fam(g)
    d = next(c for c in cases["fp16"] if c["k"] == 1 and c["layout"] == "nchw" and c["images"] > 1)
    assert fam(d) != fam({**d, "images": 1, "m": 49}) and fam({**d, "layout": "nhwc"}) == fam({**d, "layout":
                                                                                                "nhwc", "images": 1})
