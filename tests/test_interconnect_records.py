"""CPU tests of the interconnect records with fake timings: NCCL results merged over ranks as nccl-tests averages
them, busbw/algbw ceilings at the best verified size with the 90% size and theory, wrong elements making a
point invalid, P2P records filed as links of profile schema v2, and the one-GPU skips."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hwprobe.measurement import Measurement
from hwprobe.probes.interconnect import collectives as C
from hwprobe.probes.interconnect import nccl
from hwprobe.probes.interconnect.common import link_params, link_theory, pick_gpus, timed_record
from hwprobe.profile import validate_dict
from hwprobe.profile_build import from_measurements


def nccl_tests_factor(op: str, n: int) -> float:
    """busbw / algbw as nccl-tests' doc/PERFORMANCE.md defines it (typed from the document, not from hwprobe):
    AllReduce 2(n-1)/n; ReduceScatter, AllGather (and AlltoAll) (n-1)/n; Broadcast, Reduce, SendRecv 1."""
    return {"all_reduce": 2 * (n - 1) / n, "reduce_scatter": (n - 1) / n, "all_gather": (n - 1) / n,
            "alltoall": (n - 1) / n}.get(op, 1.0)


def _fake_results(n: int, busbw: float = 340e9, lat: float = 20e-6, wrong_at: int | None = None, samples: int = 3):
    """What merge_ranks returns for every op and size 8 B..4 GiB x4 on a link of ``busbw`` (time = lat + bus/bw),
    the bus bytes from nccl-tests' factors (never hwprobe's own ``bus_factor``)."""
    out = []
    for op in C.OPS:
        f = nccl_tests_factor(op, n)
        for s in C.sizes(8, 4 << 30, 4):
            lay = C.layout(op, n, s)
            if lay is None:
                continue
            t = lat + lay.size_bytes * f / busbw
            out.append({"op": op, "size": lay.size_bytes, "count": lay.count, "iters": 5,
                        "samples": [t * (1 + 0.001 * k) for k in range(samples)], "checked": lay.recv_elems * n,
                        "wrong": 3 if lay.size_bytes == wrong_at else 0, "first_bad": 7 if lay.size_bytes == wrong_at
                        else None})
    out.append({"op": "all_reduce.avg", "size": 1 << 20, "count": 1 << 18, "iters": 5, "samples": [1e-5] * 3,
                "checked": (1 << 18) * n, "wrong": 0, "first_bad": None})
    return out


META = {"endpoints": [{"rank": r, "host": "h", "gpu": r} for r in range(8)], "link_type": "NVLink4 x18 (NVSwitch)",
        "theory_Bps": 450e9, "theory_basis": "18 x NVLink4 x 25 GB/s per direction", "hosts": ["h"],
        "engine": "cupy.cuda.nccl", "nccl_version": "2.28.3", "mode": "process", "notes": ["NCCL_NVLS_ENABLE=0"]}


def test_merge_ranks_averages_time_over_ranks_and_sums_wrong():
    r0 = [{"op": "all_reduce", "size": 64, "count": 16, "iters": 5, "samples": [1.0, 2.0], "wrong": 0, "checked": 16,
           "first_bad": None}]
    r1 = [{**r0[0], "samples": [3.0, 4.0], "wrong": 2, "first_bad": 5}]
    m = nccl.merge_ranks([r0, r1])[0]
    assert m["samples"] == [2.0, 3.0] and m["wrong"] == 2 and m["checked"] == 32 and m["first_bad"] == 5
    assert m["per_rank_median_s"] == [1.5, 3.5]
    with pytest.raises(ValueError, match="rank 1"):
        nccl.merge_ranks([r0, [{**r0[0], "size": 128}]])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_collective_records_ceilings_and_profile(n):
    ms = nccl.records(_fake_results(n), n, {**META, "endpoints": META["endpoints"][:n]})
    sweeps = [m for m in ms if m.kind == "sweep"]
    assert all(m.verified for m in sweeps)
    big = next(m for m in sweeps if m.params["op"] == "all_reduce" and m.params["bytes"] == 4 << 30)
    factor = {2: 1.0, 4: 1.5, 8: 1.75}[n]              # nccl-tests: 2(n-1)/n, worked out by hand
    assert big.value == pytest.approx((4 << 30) / big.stats.median_s * factor)
    assert big.params["algbw"] == pytest.approx((4 << 30) / big.stats.median_s)
    ceil = {m.metric: m for m in ms if m.kind == "memory"}
    assert set(ceil) == {f"nccl.{op}.{k}" for op in C.OPS for k in ("busbw", "algbw")}
    bus, alg = ceil["nccl.all_reduce.busbw"], ceil["nccl.all_reduce.algbw"]
    assert bus.params["bytes"] == 4 << 30 and bus.value == pytest.approx(alg.value * factor)
    # the planted link: 340 GB/s of bus traffic; at 4 GiB the 20 us latency and the samples' 0.1% spread cost < 0.5%
    assert bus.value == pytest.approx(340e9, rel=5e-3)
    for op in ("all_gather", "reduce_scatter", "broadcast"):
        assert ceil[f"nccl.{op}.busbw"].value == pytest.approx(340e9, rel=5e-3), op
    assert bus.link == alg.link == "nccl.all_reduce"
    assert bus.theory.at_clock == 450e9
    assert alg.theory.at_clock == pytest.approx(450e9 / factor)
    at90 = bus.params["size_at_90pct"]
    curve = dict(map(tuple, bus.params["curve"]))
    assert curve[at90] >= 0.9 * max(curve.values()) and all(v < 0.9 * max(curve.values())
                                                           for s, v in curve.items() if s < at90)
    check = next(m for m in ms if m.metric == "nccl.all_reduce.avg.check")
    assert check.kind == "info" and check.verified and "2 ulp" in check.notes[0]
    prof = from_measurements({"name": "H200", "kind": "gpu"}, ms)
    link = prof.links["nccl.all_reduce"]
    assert link.kind == "collective" and len(link.endpoints) == n and link.link_type == META["link_type"]
    assert set(link.ceilings) == {"busbw", "algbw"} and link.ceilings["busbw"].theory_at_clock == 450e9
    assert link.params["busbw.size_at_90pct"] == at90 and link.params["busbw.ranks"] == n
    validate_dict(prof.to_dict(), "test profile")


def test_wrong_elements_make_the_point_invalid_and_never_a_ceiling():
    ms = nccl.records(_fake_results(2, wrong_at=4 << 30), 2, META)
    bad = [m for m in ms if m.kind == "sweep" and m.params["bytes"] == 4 << 30]
    assert bad and all(not m.valid and m.verified is False for m in bad)
    assert "3 of" in bad[0].flags[0] and "first at 7" in bad[0].flags[0]
    assert all(m.params["bytes"] < 4 << 30 for m in ms if m.kind == "memory")
    prof = from_measurements({"name": "H200", "kind": "gpu"}, ms)
    assert any(i["metric"] == bad[0].metric for i in prof.invalid)


def test_one_rank_records_have_no_link():
    ms = nccl.records(_fake_results(1), 1, META)
    assert ms and not any(m.link for m in ms) and not any(m.kind == "memory" for m in ms)
    ar = next(m for m in ms if m.kind == "sweep" and m.params["op"] == "all_reduce")
    assert ar.value > 0 and ar.bytes_counted.startswith("algbw")


def test_judge_keeps_link_theory_and_marks_figures_above_it():
    from hwprobe.judge import judge

    m = timed_record("gpu.p2p", "p2p.ce.uni.0-1", "memory", [1e-3] * 3, work=500e6, unit="B/s",
                     theory=link_theory(450e9, "NVLink4 x18"), link="p2p.0-1",
                     params=link_params("p2p", [0, 1], "NVLink4 x18", "ce.uni"))
    judge(m, None)
    assert m.valid is False and m.flags[0].startswith("above_theory")
    ok = timed_record("gpu.p2p", "p2p.ce.uni.1-0", "memory", [1e-3] * 3, work=397e6, unit="B/s",
                      theory=link_theory(450e9, "NVLink4 x18"), link="p2p.0-1",
                      params=link_params("p2p", [0, 1], "NVLink4 x18", "ce.uni"))
    judge(ok, None)
    assert ok.valid and ok.theory.at_clock == 450e9


def test_p2p_records_file_as_one_link_per_pair():
    def rec(metric, key, value, kind="memory", unit="B/s"):
        m = timed_record("gpu.p2p", metric, kind, [1e-3] * 3, work=value * 1e-3 if kind != "latency" else None,
                         per_sample=1.0, unit=unit, theory=link_theory(450e9 * (2 if ".bi" in key else 1), "x")
                         if kind == "memory" else None, link="p2p.0-1",
                         params=link_params("p2p", [0, 1], "NVLink4 x18", key))
        m.verified = True
        return m

    ms = [rec("p2p.ce.uni.0-1", "ce.uni", 397e9), rec("p2p.ce.uni.1-0", "ce.uni", 395e9),
          rec("p2p.ce.bi.0-1", "ce.bi", 785e9), rec("p2p.sm.read.0-1", "sm.read", 380e9),
          rec("p2p.sm.write.1-0", "sm.write", 390e9),
          rec("p2p.chase.l2.0-1", "chase.l2.0-1", 1e-3, kind="latency", unit="s"),
          rec("p2p.pingpong.0-1", "pingpong", 1e-3, kind="latency", unit="s")]
    prof = from_measurements({"name": "H200", "kind": "gpu"}, ms)
    link = prof.links["p2p.0-1"]
    assert link.kind == "p2p" and link.endpoints == [0, 1] and link.link_type == "NVLink4 x18"
    assert set(link.ceilings) == {"ce.uni", "ce.bi", "sm.read", "sm.write"}
    assert link.ceilings["ce.uni"].value == pytest.approx(397e9)        # the faster direction
    assert link.ceilings["ce.bi"].theory_at_clock == 900e9
    assert set(link.latency_s) == {"chase.l2.0-1", "pingpong"}
    validate_dict(prof.to_dict(), "test profile")


# --- which GPUs, and the skips on one GPU ----------------------------------------------------------------------------

def _gpu(i):
    return SimpleNamespace(kind="gpu", index=i, name="H200", sms=132, uuid=f"GPU-{i}", cc_major=9)


def test_pick_gpus():
    eight = [_gpu(i) for i in range(8)]
    assert pick_gpus([_gpu(0)], eight)[0] == eight                      # the run named one: every visible GPU
    assert [g.index for g in pick_gpus([_gpu(2), _gpu(5)], eight)[0]] == [2, 5]
    assert [g.index for g in pick_gpus([_gpu(2)], eight, "run")[0]] == [2]
    assert pick_gpus([_gpu(2), _gpu(5)], eight, "all")[0] == eight
    with pytest.raises(ValueError):
        pick_gpus([_gpu(0)], eight, "some")


def _ctx():
    from hwprobe.probes import ProbeContext
    from hwprobe.timing import NullSampler

    return ProbeContext(target="gpu", device=_gpu(0), sampler=NullSampler(), probe_name="gpu.p2p")


def test_p2p_on_one_gpu_skips_every_part_with_the_reason(monkeypatch):
    from hwprobe.probes.interconnect import common, p2p

    monkeypatch.setattr(common, "visible_gpus", lambda: [_gpu(0)])
    out = list(p2p.run(_ctx()))
    assert [m.metric for m in out] == [f"p2p.{p}" for p in p2p.PARTS]
    assert all(m.status == "skipped" and "peer-to-peer needs two GPUs" in m.reason and "0 (H200)" in m.reason
               for m in out)


def test_nccl_on_one_gpu_skips_with_the_reason(monkeypatch):
    from hwprobe.errors import Skip
    from hwprobe.probes.interconnect import common

    monkeypatch.setattr(common, "visible_gpus", lambda: [_gpu(0)])
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    with pytest.raises(Skip, match="at least 2"):
        list(nccl.run(_ctx()))
    import os

    assert os.environ["NCCL_NVLS_ENABLE"] == "0"


def test_nvls_guard():
    from hwprobe.probes.interconnect.ncclapi import guard_env, nccl_env

    env = {"NCCL_NVLS_ENABLE": "1", "NCCL_DEBUG": "WARN"}
    notes = guard_env(False, env)
    assert env["NCCL_NVLS_ENABLE"] == "0" and "overridden" in notes[0]
    env = {"NCCL_NVLS_ENABLE": "1"}
    assert "allowed" in guard_env(True, env)[0] and env["NCCL_NVLS_ENABLE"] == "1"
    assert nccl_env({"NCCL_A": "1", "PATH": "x"}) == {"NCCL_A": "1"}


def test_timed_record_latency_and_rate():
    lat = timed_record("p", "m", "latency", [4e-3, 5e-3, 6e-3], per_sample=4000, unit="s")
    assert lat.value == pytest.approx(5e-3 / 4000) and lat.best == pytest.approx(4e-3 / 4000)
    bw = timed_record("p", "m", "memory", [1e-3, 2e-3, 3e-3], work=1e9, unit="B/s")
    assert bw.value == pytest.approx(0.5e12) and isinstance(bw, Measurement)


@pytest.mark.parametrize("ws,lines", [(1 << 20, 1 << 14), (64 << 20, 1 << 16)])
def test_chase_cycle_and_where_a_walk_ends(ws, lines):
    import numpy as np

    from hwprobe.probes.interconnect.p2plat import chase_end, chase_order

    words = chase_order(ws, np.random.default_rng(1), lines)
    assert len(words) == min(lines, ws // 64) and len(set(words.tolist())) == len(words)
    assert (words % 16 == 0).all() and words.max() < ws // 4             # 64-byte lines inside the buffer
    nxt = dict(zip(words.tolist(), np.roll(words, -1).tolist(), strict=True))
    pos, j = 1234, int(words[1234])
    for _ in range(3 * 4096):                                            # what p2p_chase does, launch after launch
        j = nxt[j]
    assert j == chase_end(words, pos, 3 * 4096)


# --- out of place and in place ---------------------------------------------------------------------------------

def _two_variants(n: int, faster_in_place=("all_gather",), wrong_in_place=("alltoall",)):
    """Both variants of every op (nccl-tests' pair); in place 5% faster for ``faster_in_place``, 3% slower for the
    others, and wrong at every size for ``wrong_in_place`` (an undefined in-place result)."""
    out = []
    for r in _fake_results(n):
        if r["op"].endswith(".avg"):
            out.append(r)
            continue
        out.append({**r, "variant": "out_of_place"})
        k = 1 / 1.05 if r["op"] in faster_in_place else 1.03
        bad = r["op"] in wrong_in_place
        out.append({**r, "variant": "in_place", "samples": [t * k for t in r["samples"]],
                    "wrong": 5 if bad else 0, "first_bad": 0 if bad else None})
    return out


@pytest.mark.parametrize("n", [2, 8])
def test_ceiling_is_the_best_verified_variant_and_says_which(n):
    ms = nccl.records(_two_variants(n), n, {**META, "endpoints": META["endpoints"][:n]})
    sweeps = [m for m in ms if m.kind == "sweep"]
    assert {m.params["variant"] for m in sweeps} == set(C.VARIANTS)
    ip = next(m for m in sweeps if m.params["op"] == "all_gather" and m.params["variant"] == "in_place"
              and m.params["bytes"] == C.layout("all_gather", n, 4 << 30).size_bytes)
    assert ip.metric == f"nccl.all_gather.in_place.{ip.params['bytes']}"
    ceil = {m.metric: m for m in ms if m.kind == "memory"}
    ag, ar = ceil["nccl.all_gather.busbw"], ceil["nccl.all_reduce.busbw"]
    assert ag.params["variant"] == "in_place" and ag.value == pytest.approx(ip.value)
    assert ag.params["by_variant"]["out_of_place"]["busbw"] == pytest.approx(ag.value / 1.05)
    assert ar.params["variant"] == "out_of_place"
    assert ar.params["by_variant"]["in_place"]["busbw"] == pytest.approx(ar.value / 1.03)
    assert "in-place" in ag.bytes_counted and any("best of out-of-place and in-place: in-place" in x for x in ag.notes)
    # both curves, verified points only, [bytes, busbw, algbw, time_s, cv], in size order
    cur = ag.params["curves"]
    assert set(cur) == set(C.VARIANTS) and [p[0] for p in cur["in_place"]] == sorted(p[0] for p in cur["in_place"])
    s, bus, alg, t, cv = cur["in_place"][-1]
    assert bus == pytest.approx(s * C.bus_factor("all_gather", n) / t) and alg == pytest.approx(s / t) and cv >= 0
    assert dict(map(tuple, ag.params["curve"]))[s] == pytest.approx(bus)      # the faster variant at each size
    prof = from_measurements({"name": "H200", "kind": "gpu"}, ms)
    assert prof.links["nccl.all_gather"].ceilings["busbw"].params["variant"] == "in_place"
    validate_dict(prof.to_dict(), "test profile")


def test_a_wrong_in_place_result_is_filed_as_wrong_and_never_a_ceiling():
    ms = nccl.records(_two_variants(2, faster_in_place=("alltoall",)), 2, META)
    bad = [m for m in ms if m.kind == "sweep" and m.params["op"] == "alltoall" and m.params["variant"] == "in_place"]
    assert bad and all(m.verified is False and not m.valid for m in bad)
    assert "no defined result" in bad[0].notes[-1] and "N/A" in bad[0].notes[-1]
    a2a = next(m for m in ms if m.metric == "nccl.alltoall.busbw")
    assert a2a.params["variant"] == "out_of_place" and set(a2a.params["by_variant"]) == {"out_of_place"}
    assert set(a2a.params["curves"]) == {"out_of_place"}


def test_every_point_stores_its_spread_and_iterations():
    res = _two_variants(2)
    for r in res:
        r["warmup"] = 5
    ms = nccl.records(res, 2, META)
    p = next(m for m in ms if m.kind == "sweep").params
    assert p["timed_iters"] == p["iters"] * 3 and p["warmup"] == 5
    sp = p["spread"]
    assert sp["samples"] == 3 and sp["min"] < sp["max"] and sp["cv"] > 0
    assert sp["max"] == pytest.approx(p["busbw"] * 1.001, rel=1e-3)     # fastest sample of t, 1.001 t, 1.002 t


def test_merge_ranks_keeps_variants_apart():
    base = {"op": "all_reduce", "size": 64, "count": 16, "iters": 5, "wrong": 0, "checked": 16, "first_bad": None}
    r0 = [{**base, "variant": "out_of_place", "samples": [1.0]}, {**base, "variant": "in_place", "samples": [2.0]}]
    r1 = [{**base, "variant": "out_of_place", "samples": [3.0]}, {**base, "variant": "in_place", "samples": [4.0]}]
    m = nccl.merge_ranks([r0, r1])
    assert [(x["variant"], x["samples"]) for x in m] == [("out_of_place", [2.0]), ("in_place", [3.0])]
    with pytest.raises(ValueError, match="rank 1"):
        nccl.merge_ranks([r0, r1[::-1]])


@pytest.mark.parametrize("size", [8, 1 << 20, 1 << 30, 4 << 30])
@pytest.mark.parametrize("samples", [1, 3, 5])
def test_iteration_rule_meets_nccl_tests_defaults(size, samples):
    tm = C.timing("all_reduce", 2, size, 0.02, samples)
    assert tm.warmup >= C.MIN_WARMUP == 5 and tm.timed >= C.MIN_TIMED == 20
    assert tm.samples >= samples and tm.iters >= 5
    assert tm.iters == C.iterations("all_reduce", 2, size, 0.02)       # each sample ~ target_s by the model
    if size == 4 << 30:
        assert (tm.iters, tm.samples) == (5, max(samples, 4))         # the largest size: 4 samples of 5 at least


def test_the_links_table_says_which_variant_each_ceiling_is():
    from hwprobe.report.tables import links_table

    prof = from_measurements({"name": "H200", "kind": "gpu"}, nccl.records(_two_variants(2), 2, META))
    rows = {(r["link"], r["what"]): r for r in links_table(prof).rows}
    assert rows[("nccl.all_gather", "busbw")]["variant"] == "in-place"
    assert rows[("nccl.all_reduce", "algbw")]["variant"] == "out-of-place"
    assert rows[("nccl.all_reduce", "busbw")]["value"] == prof.links["nccl.all_reduce"].ceilings["busbw"].value
