"""The 'predict' suite's generic calibration grids (issue 31) and their bookkeeping, on a CPU: what the grids
hold, that every conv case's geometry gives the output it names, what they cost against the suite's budget
(from the committed H200 run's per-point costs), and that the findings the library sweeps write are what the
predictor reads (the sweeps run here with the measurement replaced by a law; the GPU run is still to do)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from hwprobe.probes.calibration import gemm_shapes, grids
from hwprobe.probes.calibration import torch_library as lib

ROOT = Path(__file__).resolve().parents[1]


def test_the_conv_grid_spans_the_families_the_issue_lists():
    cases = grids.conv_cases("fp16")
    body = [c for c in cases if c["cin"] >= 8]
    assert {c["k"] for c in body if c.get("groups", 1) == 1} == {1, 3, 5, 7}
    pow2 = [c for c in body if not c.get("dw") and c["cin"] in grids.C_GROUPED + grids.C3 + grids.C1]
    assert {c["groups"] for c in pow2} == {1, 2, 4, 8, 32}
    # group widths that are not powers of two (RegNet's), each a whole number of times in every channel count
    odd = grids.conv_cases("fp16", families=["grouped_odd"])
    assert {c["cin"] // c["groups"] for c in odd} == {24, 48, 120} and all(c["k"] == 3 for c in odd)
    assert all(c in cases for c in odd) and {c["layout"] for c in odd} == {"nhwc", "nchw"}
    assert [c for c in cases if c.get("groups", 1) > 1 and not c.get("dw") and (c["cin"] // c["groups"]) % 3 == 0] \
        == odd
    with pytest.raises(ValueError, match="unknown convolution families"):
        grids.conv_cases("fp16", families=["grouped_even"])
    assert {c["k"] for c in body if c.get("dw")} == {3, 5, 7}
    assert {c["stride"] for c in body} == {1, 2} and {c["layout"] for c in cases} == {"nhwc", "nchw"}
    assert {c["images"] for c in body} == {1, grids.IMAGES_FEW, grids.IMAGES_MANY}
    few = [c for c in body if c["images"] == grids.IMAGES_FEW]        # depthwise only, every kernel and stride
    assert all(c.get("dw") for c in few) and {(c["k"], c["stride"]) for c in few} == set(grids.DW)
    assert {round((c["m"] / c["images"]) ** 0.5) for c in few} == set(grids.SIDES_FEW)
    stems = {(c["k"], c["stride"]) for c in cases if c["cin"] == 3}
    assert {(32, 32), (16, 16), (14, 14), (8, 8), (4, 4), (7, 2), (3, 2)} <= stems
    assert all(c["precision"] == "fp16" and c["cin"] % c["groups"] == 0 for c in cases)
    keys = [tuple(sorted(c.items())) for c in cases]
    assert len(set(keys)) == len(keys)
    # one grid holds one-image and many-image points: their pixel counts never coincide
    one = {c["m"] for c in body if c["images"] == 1}
    assert not one & {c["m"] for c in body if c["images"] > 1}
    assert min(c["cin"] for c in body) == 16 and max(grids.macs(c) for c in cases) <= grids.MAX_MACS["fp16"]
    assert {c["m"] for c in body if c["k"] == 1 and c["m"] in (1, grids.IMAGES_MANY)} == {1, grids.IMAGES_MANY}


@pytest.mark.parametrize("precision", grids.CONV_PRECISIONS)
def test_every_conv_case_produces_the_output_it_names(precision):
    for c in grids.conv_cases(precision):
        x, w, pad, crop = lib.conv_geometry(c)
        d, kw = c.get("dilation", 1), c.get("kw", c["k"])
        out_h = (x[2] + 2 * pad[0] - d * (c["k"] - 1) - 1) // c["stride"] + 1
        out_w = (x[3] + 2 * pad[1] - d * (kw - 1) - 1) // c["stride"] + 1
        assert x[0] * out_h * out_w == c["m"], c
        assert w == (c["cout"], c["cin"] // c["groups"], c["k"], kw)
        assert crop == 0 or crop - 2 * max(pad) >= 2                        # the checked corner is not empty


def test_every_precision_a_user_can_ask_for_has_points_but_fp64():
    from hwprobe.analysis.roofline import PRECISIONS

    for p in PRECISIONS:
        has = bool(grids.linear_cases(p))
        assert has == (p != "fp64"), p
    assert min(min(grids.linear_axes(p)[1]) for p in grids.PRECISIONS) == 16          # GEMMs down to N, K = 16
    for p in ("int8", "fp8"):                       # torch._int_mm / _scaled_mm: M > 16, N and K multiples of 16
        assert all(c["m"] > 16 and c["n"] % 16 == 0 and c["k"] % 16 == 0 for c in grids.linear_cases(p))
    assert grids.conv_cases("int8") == [] and grids.sdpa_cases("tf32") == []


def _committed_counts() -> dict:
    from hwprobe.profile_build import load_profile

    sec = load_profile(ROOT / "profiles/h200-sxm/2026-11-26-predict-conv").calibration
    return {"conv": len(sec.conv.points), "sdpa": len(sec.sdpa.points),
            "linear": sum(g.points for g in sec.framework_linear.values()),
            "curve": sum(c.points for c in sec.framework.values())}


def test_the_cost_basis_reproduces_the_committed_run():
    """The per-point costs, applied to the committed H200 run's point counts, give its measured 122 s."""
    env = json.loads((ROOT / "profiles/h200-sxm/2026-11-26-predict-conv/environment.json").read_text())
    counts = _committed_counts()
    est = sum(grids.POINT_S[k] * n for k, n in counts.items())
    assert est == pytest.approx(env["probe_seconds"]["gpu.torch_kernels"], rel=0.1)
    assert 2784 * grids.POINT_S["gemm"] == pytest.approx(env["probe_seconds"]["gpu.gemm_shapes"], rel=0.05)


def test_the_suite_stays_within_about_five_to_six_minutes():
    suite = (ROOT / "suites/predict.toml").read_text()
    assert 'precisions = ["fp16", "bf16", "tf32", "fp32", "int8", "fp8"]' in suite
    gemm = 2 * (len(gemm_shapes.M_LIST) * len(gemm_shapes.NK_LIST) ** 2 + 30)
    est = grids.estimate_s(grids.PRECISIONS, gemm)
    # on the 2026-11-26 method's per-point costs (POINT_S): the suite measured 219 s at fab3711 where this basis gave
    # 303 s; the grids of 2026-11-28 (seventeenth session: dilated, non-square, wider depthwise, larger maps) add 21 s
    assert 240 < est["total"] < 380, est
    assert min(gemm_shapes.NK_LIST) == 16


# --- the sweeps' bookkeeping, with a fake torch --------------------------------------------------------------------
def _fake_torch(seen: list):
    flags = types.SimpleNamespace(allow_tf32=False)
    cudnn = types.SimpleNamespace(allow_tf32=False, benchmark=False)
    torch = types.SimpleNamespace(
        __version__="fake", float16="f16", bfloat16="bf16", float32="f32", int8="i8", float8_e4m3fn="f8",
        backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=flags), cudnn=cudnn),
        cuda=types.SimpleNamespace(empty_cache=lambda: None))
    seen.append(torch)
    return torch


def _ctx():
    from hwprobe.probes.base import ProbeContext

    return ProbeContext(target="gpu", device=None, sampler=None, probe_name="gpu.torch_kernels")


def test_the_conv_sweep_writes_points_the_predictor_reads(monkeypatch):
    from hwprobe.predict.calibration import Calibration
    from hwprobe.profile_build import from_measurements

    seen: list = []
    torch = _fake_torch(seen)
    tf32 = {}

    def point(torch_, **c):
        tf32[c["precision"]] = torch.backends.cudnn.allow_tf32
        if (c["k"], c["cin"], c["stride"], c["m"], c["precision"]) == (5, 32, 1, 49, "fp16") and c.get("dw") \
                and not c.get("dilation"):
            raise RuntimeError("cuDNN refused")                     # one failed point: an error record, the rest go on
        return 1e-6 * (1 + grids.macs(c) / 1e9)

    monkeypatch.setattr(lib, "_conv_point", point)
    out = list(lib.convs(_ctx(), torch, ["fp16", "tf32"], quick=False))
    errors = [m for m in out if m.status == "error"]
    table = next(m for m in out if m.metric == "predict.torch.conv")
    assert len(errors) == 2 and "cuDNN refused" in errors[0].reason        # both layouts' m=49 5x5 dw point
    assert tf32 == {"fp16": False, "tf32": True} and torch.backends.cudnn.allow_tf32 is False   # restored
    assert table.params["precisions"] == ["fp16", "tf32"]
    prof = from_measurements({"kind": "gpu"}, out)                          # filed as a run files it
    assert [e["metric"] for e in prof.errors] == [m.metric for m in errors] and prof.findings == []
    assert prof.calibration.conv.precisions == ["fp16", "tf32"] and prof.calibration.conv.probe == "gpu.torch_kernels"
    conv = Calibration.of(prof).conv
    assert conv.only("fp16").grouped(3136, 128, 32, 3)[1]                    # inside the grouped grid
    assert conv.only("fp16").dw_time(3136, 96, 7, 1, "nhwc", 1)[1]           # one-image 7x7 depthwise points
    assert conv.only("fp16").time(49, 3, 768, 32, 32, "nhwc")[1]            # the 32x32/32 stem: measured
    assert conv.only("tf32").layouts() == {"nchw"} and conv.only("fp32") is None


def test_the_linear_sweep_writes_a_grid_per_precision(monkeypatch):
    from hwprobe.predict.calibration import GemmTable

    torch = _fake_torch([])
    monkeypatch.setattr(lib, "_linear_point", lambda torch_, prec, m, n, k: 1e-6 + 2 * m * n * k / 1e14)
    out = list(lib.linears(_ctx(), torch, ["int8", "bf16"], quick=False))
    grids_ = {m.metric: m.params for m in out if m.kind == "info"}
    assert set(grids_) == {"predict.torch.linear.int8", "predict.torch.linear.bf16"}
    tab = GemmTable.from_finding(grids_["predict.torch.linear.bf16"])
    assert tab.covers(16, 16, 16) and tab.time(16, 16, 16) == pytest.approx(1e-6, rel=1e-3)
    assert grids_["predict.torch.linear.int8"]["m"][0] == 32 and grids_["predict.torch.linear.int8"]["api"] == \
        "torch._int_mm"
    torch.float8_e4m3fn = None                                              # a torch without FP8
    skipped = list(lib.linears(_ctx(), torch, ["fp8"], quick=True))
    assert [m.status for m in skipped] == ["skipped"]


def test_the_masked_sdpa_points_cover_the_hf_validation_prefills():
    """Issue 32: BF16 masked points (transformers' additive mask, no is_causal) at every head size of the hf
    validation's default configs, over its default prefill cases (batch x tokens), each a (batch, heads) split of
    ``bh``; FP16 and FP32 keep only the unmasked table, and a quick run keeps a corner of it."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import validate_hf_llm

    from hwprobe.models.llm.config import load

    masked = [c for c in grids.sdpa_cases("bf16") if c.get("masked")]
    dims = {load(f).head_dim for f in validate_hf_llm.DEFAULT_CONFIGS.split(",")}
    assert {c["dim"] for c in masked} == dims == {64, 96, 128, 256}
    prefill = set(validate_hf_llm.parse_cases(validate_hf_llm.DEFAULT_PREFILL))
    for d in dims:
        assert {(c["batch"], c["seq"]) for c in masked if c["dim"] == d} >= prefill, d
    assert all(not c["causal"] and c["bh"] % c["batch"] == 0 for c in masked)
    assert not any(c.get("masked") for p in ("fp16", "fp32") for c in grids.sdpa_cases(p))
    quick = [c for c in grids.sdpa_cases("bf16", quick=True) if c.get("masked")]
    assert 0 < len(quick) < len(masked)


def test_ropes_cat_points_start_at_two_tokens_and_never_repeat_a_size():
    """rotate_cat's curve: one token's q is contiguous (priced as 'cat'), so its points run from two tokens of 32
    heads of 128 up; below that every size would be the same one-token case (the H200 run of 2026-11-29 had two
    points at 16384 B)."""
    from hwprobe.probes.calibration import common
    from hwprobe.probes.calibration import torch_kernels as tk

    sizes = tk._sizes_of("rotate_cat", common.SIZES)
    moved = [4 * b * tk.Q_HEADS * n * tk.HEAD_DIM for b, n in (tk._batch_tokens(s, tk.Q_HEADS, 2 * tk.Q_HEADS)
                                                                for s in sizes)]
    assert sizes[0] == 4 * tk.HEAD_DIM * 2 * tk.Q_HEADS and moved == sizes
