"""The measured NCCL curve through the profile API: points per variant, log-log interpolation at the real message
size (checked against a power law, which log-log interpolation reproduces exactly), sizes outside the measured
range said so, old profiles (busbw-only curves) still read, and a profile built from gpu.nccl's records."""

from __future__ import annotations

import pytest

from hwprobe.collective import collective_curve, collective_time
from hwprobe.probes.interconnect import collectives as C
from hwprobe.probes.interconnect import nccl
from hwprobe.profile import SCHEMA_VERSION, Profile
from hwprobe.profile_build import from_measurements
from hwprobe.roofline import RooflineError
from tests.refs import H200X2_MULTIGPU
from tests.test_interconnect_records import META, _fake_results, _two_variants

MiB = 1 << 20


def power_law(s: float) -> float:
    """t = 2e-9 s^0.8: a time curve that log-log interpolation between any two of its points reproduces exactly."""
    return 2e-9 * s ** 0.8


def _synthetic(in_place_faster_above: int = 8 * MiB, ranks: int = 2) -> Profile:
    f = C.bus_factor("all_reduce", ranks)
    sizes = [MiB, 4 * MiB, 16 * MiB, 64 * MiB]

    def pt(s, t):
        return [s, s * f / t, s / t, t, 0.001]

    curves = {"out_of_place": [pt(s, power_law(s)) for s in sizes],
              "in_place": [pt(s, power_law(s) * (0.9 if s > in_place_faster_above else 1.1)) for s in sizes]}
    best = [[s, max(c[1] for v in curves.values() for c in v if c[0] == s)] for s in sizes]
    d = {"schema_version": SCHEMA_VERSION, "device": {"name": "H200", "kind": "gpu"},
         "links": {"nccl.all_reduce": {"kind": "collective", "endpoints": [0, 1], "link_type": "NVLink4 x18",
                                       "ceilings": {"busbw": {"value": best[-1][1], "unit": "B/s",
                                                              "metric": "nccl.all_reduce.busbw", "probe": "gpu.nccl",
                                                              "params": {"op": "all_reduce", "ranks": ranks,
                                                                         "curve": best, "curves": curves}}}}}}
    return Profile.from_dict(d)


def test_curve_points_per_variant_and_best():
    prof = _synthetic()
    oop = prof.collective_curve("all_reduce", 2, "out_of_place")
    assert [p.bytes for p in oop] == [MiB, 4 * MiB, 16 * MiB, 64 * MiB]
    assert all(p.time_s == pytest.approx(power_law(p.bytes)) and p.variant == "out_of_place" for p in oop)
    assert all(p.busbw == pytest.approx(p.algbw * 2 * (2 - 1) / 2) for p in oop)
    best = collective_curve(prof, "allreduce")                      # name variants; ranks: the only count there
    assert [p.variant for p in best] == ["out_of_place", "out_of_place", "in_place", "in_place"]
    assert [p.time_s for p in best] == [min(a.time_s, b.time_s) for a, b in
                                        zip(oop, prof.collective_curve("all_reduce", 2, "in_place"), strict=True)]


@pytest.mark.parametrize("nbytes", [MiB, 1.5 * MiB, 2 * MiB, 3 * MiB + 17, 4 * MiB, 10 * MiB, 64 * MiB])
def test_time_interpolates_log_log_inside_the_range(nbytes):
    t = collective_time(_synthetic(), "all_reduce", nbytes, variant="out_of_place")
    assert t.in_range and t.seconds == pytest.approx(power_law(nbytes), rel=1e-12)
    assert t.algbw == pytest.approx(nbytes / power_law(nbytes)) and t.ranks == 2 and t.op == "all_reduce"


def test_time_outside_the_range_is_said_so():
    prof = _synthetic()
    small = prof.collective_time("all_reduce", 1024, variant="out_of_place")
    assert not small.in_range and small.seconds == pytest.approx(power_law(MiB)) and "below" in small.how
    big = prof.collective_time("all_reduce", 1 << 30, variant="out_of_place")
    last_algbw = 64 * MiB / power_law(64 * MiB)
    assert not big.in_range and big.seconds == pytest.approx((1 << 30) / last_algbw) and "above" in big.how


def test_bad_queries_raise_one_clear_error():
    prof = _synthetic()
    with pytest.raises(RooflineError, match="unknown collective"):
        prof.collective_curve("all-reduce-ish")
    with pytest.raises(RooflineError, match="over 8 ranks.*measured over 2"):
        prof.collective_curve("all_reduce", ranks=8)
    with pytest.raises(RooflineError, match="no measured all_gather"):
        prof.collective_time("all_gather", MiB)
    with pytest.raises(RooflineError, match="positive"):
        prof.collective_time("all_reduce", 0)
    with pytest.raises(RooflineError, match="variant"):
        prof.collective_curve("all_reduce", variant="fastest")


def test_an_older_profile_with_a_busbw_curve_only_reads_as_out_of_place():
    d = _synthetic().to_dict()
    params = d["links"]["nccl.all_reduce"]["ceilings"]["busbw"]["params"]
    del params["curves"]
    params["curve"] = [[s, s * 1.0 / power_law(s)] for s in (MiB, 4 * MiB)]     # busbw = algbw x 1 on 2 ranks
    pts = Profile.from_dict(d).collective_curve("all_reduce")
    assert [p.variant for p in pts] == ["out_of_place"] * 2
    assert [p.time_s for p in pts] == pytest.approx([power_law(MiB), power_law(4 * MiB)])


@pytest.mark.parametrize("n", [2, 8])
def test_curve_from_a_profile_built_from_records(n):
    """gpu.nccl's records (fake timings t = 20 us + S x factor / 340 GB/s, median sample 1.001 t) through the
    profile and back from JSON: every measured point's time is the model's."""
    ms = nccl.records(_fake_results(n), n, {**META, "endpoints": META["endpoints"][:n]})
    prof = Profile.from_dict(from_measurements({"name": "H200", "kind": "gpu"}, ms).to_dict())
    f = C.bus_factor("all_reduce", n)
    pts = prof.collective_curve("all_reduce", n)
    want = {C.layout("all_reduce", n, s).size_bytes for s in C.sizes(8, 4 << 30, 4)}
    assert {p.bytes for p in pts} == want
    for p in pts:
        assert p.time_s == pytest.approx((20e-6 + p.bytes * f / 340e9) * 1.001, rel=1e-9)
        assert p.busbw == pytest.approx(p.bytes * f / p.time_s)
    t = prof.collective_time("all_reduce", 32 * MiB, n)       # measured: 8 B x 4^k
    assert t.in_range and t.seconds == pytest.approx((20e-6 + 32 * MiB * f / 340e9) * 1.001)
    mid = prof.collective_time("all_reduce", 16 * MiB, n)     # between the measured 8 MiB and 32 MiB
    lo, hi = (next(p for p in pts if p.bytes == s) for s in (8 * MiB, 32 * MiB))
    assert lo.time_s < mid.seconds < hi.time_s and "log-log" in mid.how


def test_best_curve_from_records_takes_the_faster_variant():
    ms = nccl.records(_two_variants(2), 2, META)
    prof = from_measurements({"name": "H200", "kind": "gpu"}, ms)
    assert {p.variant for p in prof.collective_curve("all_gather")} == {"in_place"}       # 5% faster in place
    assert {p.variant for p in prof.collective_curve("all_reduce")} == {"out_of_place"}   # 3% slower in place
    assert {p.variant for p in prof.collective_curve("alltoall")} == {"out_of_place"}     # in place was wrong
    with pytest.raises(RooflineError, match="no verified in-place"):
        prof.collective_curve("alltoall", variant="in_place")


def test_the_predictor_prices_an_allreduce_on_the_measured_curve():
    """hwprobe.predict's comm kernels read profile.collective_time(kind, bytes, ranks) as (seconds, covered, note)."""
    from types import SimpleNamespace

    from hwprobe.lowering.ops import KernelOp
    from hwprobe.predict.model import Predictor

    prof = _synthetic()
    seconds, covered, how = prof.collective_time("allreduce", 2 * MiB, 2)
    assert seconds == pytest.approx(power_law(2 * MiB), rel=1e-9) and covered and "log-log" in how
    op = KernelOp("tp.allreduce", "allreduce", bytes=2 * MiB, ranks=2)
    got = Predictor._comm(SimpleNamespace(profile=prof), op)
    assert got.time_s == seconds and got.covered and got.bound == "comm"
    far = Predictor._comm(SimpleNamespace(profile=prof), KernelOp("tp.allreduce", "allreduce", bytes=1e12, ranks=2))
    assert not far.covered and far.time_s > 0
    none = Predictor._comm(SimpleNamespace(profile=prof), KernelOp("x", "allreduce", bytes=MiB, ranks=8))
    assert none.time_s == 0.0 and not none.covered and "over 8 ranks" in none.note


H200X2 = H200X2_MULTIGPU / "results-local"


def test_the_committed_2x_h200_profile():
    """The measured curves of the committed 2x H200 run: 8 B .. 4 GiB, each ceiling the top of its best curve, the
    variant it names; in-place alltoall (wrong at large sizes, NCCL leaves it undefined) never on the curve there."""
    from hwprobe.profile_build import load_profile

    prof = load_profile(H200X2 / "profile.json")
    for op in C.OPS:
        pts = prof.collective_curve(op, 2)
        busbw = prof.links[f"nccl.{op}"].ceilings["busbw"]
        assert pts[0].bytes <= 16 and pts[-1].bytes == 4 << 30
        top = max(pts, key=lambda p: p.busbw)
        assert top.busbw == pytest.approx(busbw.value) and top.variant == busbw.params["variant"]
        t = prof.collective_time(op, 4 << 30, 2)
        assert t.in_range and t.seconds == pts[-1].time_s and "measured at" in t.how
    assert prof.collective_curve("alltoall", 2)[-1].variant == "out_of_place"
    big_ip = [p.bytes for p in prof.collective_curve("alltoall", 2, "in_place")]
    assert (4 << 30) not in big_ip
    tp = prof.collective_time("all_reduce", 3 << 20, 2)          # a tensor-parallel all-reduce of 3 MiB
    lo, hi = (next(p for p in prof.collective_curve("all_reduce", 2) if p.bytes == s) for s in (2 << 20, 4 << 20))
    assert lo.time_s < tp.seconds < hi.time_s and tp.in_range
