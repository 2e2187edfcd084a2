"""The library worker pool's bookkeeping on a CPU (hwprobe.probes.calibration.library_workers): real spawned
processes running a stand-in for the CUDA worker loop. The GPU run (tests/gpu) times real points with it."""

from __future__ import annotations

import os

import pytest

from hwprobe.probes.calibration import library_workers


def fake_serve(conn, device: int) -> None:
    """Answers like library_workers._serve: a point's 'time' is its m x 1e-9 plus, in whole seconds, how many points
    this worker had searched, plus 1e-3 for an "sdpa" point; m == 13 fails its search, m == 17 its check, m == 19
    kills the worker in the middle of its search, m == 5 searches for 1 s. A case's "kind" seen for the first time by
    this worker costs its search 0.2 s (a compile); its answer to "time" then adds the worker's pid x 1e3."""
    import time

    searched, kinds = 0, set()
    while (msg := conn.recv()) is not None:
        op, family, case = msg
        if op == "search":
            if case["m"] == 19:
                os._exit(3)
            if case["m"] == 5:
                time.sleep(1.0)
            if case.get("kind") is not None and case["kind"] not in kinds:
                kinds.add(case["kind"])
                time.sleep(0.2)
            searched += 1
            conn.send(("error", RuntimeError("no engine")) if case["m"] == 13 else ("ok", None))
        elif case["m"] == 17:
            conn.send(("error", AssertionError("max relative error 0.5 > 0.02")))
        elif "kind" in case:
            conn.send(("ok", os.getpid() * 1e3))
        else:
            conn.send(("ok", case["m"] * 1e-9 + searched + device + (1e-3 if family == "sdpa" else 0.0)))


def no_kind(family: str, case: dict):
    return case.get("kind")


class _Cuda:
    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        pass

    @staticmethod
    def current_device():
        return 0


class _Torch:
    cuda = _Cuda


def test_every_case_comes_back_in_order_with_its_time_or_its_error():
    cases = [{"m": m} for m in range(1, 24)]
    with library_workers.measuring(_Torch, 3, fake_serve, no_kind) as run:
        got = list(run(cases))
        again = list(run(cases[:4]))                    # the same workers serve a later sweep (another precision)
    assert [c for c, _ in got] == cases and [c for c, _ in again] == cases[:4]
    times = {c["m"]: t for c, t in got}
    assert all(abs(times[m] % 1 - m * 1e-9) < 1e-12 for m in range(1, 24) if m not in (13, 17, 19))
    assert str(times[13]) == "no engine" and isinstance(times[17], AssertionError)
    assert isinstance(times[19], RuntimeError) and "library worker exited (3)" in str(times[19])
    assert times[20] % 1 > 0                             # the worker that died was replaced
    assert set(run.phases) == {"conv"} and set(run.phases["conv"]) == {"start_s", "search_s", "time_s"}
    assert run.phases["conv"]["search_s"] >= 1.0


def test_a_second_family_is_searched_and_timed_by_the_same_workers():
    """SDPA points after the convolutions: the running workers search and time them as SDPA points (no second
    start), and the phases are kept per family."""
    cases = [{"m": m} for m in (1, 2, 3, 4, 6, 7)]
    with library_workers.measuring(_Torch, 3, fake_serve, no_kind) as run:
        convs = list(run(cases))
        sdpa = list(run(cases, "sdpa"))
    assert not any(isinstance(t, BaseException) for _, t in convs + sdpa), convs + sdpa
    assert all(abs(t % 1 - c["m"] * 1e-9 - 1e-3) < 1e-9 for c, t in sdpa)
    assert set(run.phases) == {"conv", "sdpa"}
    assert run.phases["conv"]["start_s"] > 0 and run.phases["sdpa"]["start_s"] == 0


def test_a_free_worker_takes_the_next_search():
    """A slow search (1 s) holds its worker only: the two others search the rest meanwhile, so the slow point's
    worker had searched few points when the timing began (each time says how many its worker had searched)."""
    cases = [{"m": m} for m in range(1, 13) if m != 13]
    with library_workers.measuring(_Torch, 3, fake_serve, no_kind) as run:
        got = dict((c["m"], t) for c, t in run(cases))
    searched_by_slow = int(got[5])
    assert searched_by_slow <= 3 and max(int(t) for t in got.values()) >= 4


def test_no_workers_below_two_or_for_a_small_grid():
    with library_workers.measuring(_Torch, 1) as run:
        assert run is None
    assert library_workers.count(library_workers.MIN_POINTS - 1) == 0
    n = library_workers.count(10_000)
    assert n == 0 or 2 <= n <= library_workers.WORKERS


def test_each_search_kind_stays_on_one_worker():
    """Cases of three kinds, interleaved, on three workers: every case of a kind is searched and timed by one
    worker (its compile paid once), and each comes back in its place."""
    cases = [{"m": m, "kind": "abc"[m % 3]} for m in range(20, 38)]       # none of fake_serve's failing m
    with library_workers.measuring(_Torch, 3, fake_serve, no_kind) as run:
        got = list(run(cases))
    assert [c for c, _ in got] == cases
    by_kind: dict = {}
    for c, pid in got:
        by_kind.setdefault(c["kind"], set()).add(pid)
    assert all(len(pids) == 1 for pids in by_kind.values()) and len(set().union(*by_kind.values())) == 3


def test_plan_queues_groups_kinds_splits_only_the_large_and_honours_home():
    plan = library_workers.plan_queues
    kinds = ["a", "b", None, "a", "c", "b", "a", None, "c"]
    queues = plan(kinds, 3)
    assert sorted(i for q in queues for i in q) == [i for i, k in enumerate(kinds) if k is not None]
    assert sorted(sorted({kinds[i] for i in q}) for q in queues) == [["a"], ["b"], ["c"]]
    assert list(next(q for q in queues if kinds[q[0]] == "a")) == [0, 3, 6]          # in the cases' order
    assert all(not q for q in plan([None, None], 2))
    big = plan(["a"] * 100 + ["b"] * 5, 4)                   # "a" alone outweighs a worker's share: split in order
    loads = [len(q) for q in big]
    assert sum(loads) == 105 and max(loads) - min(loads) <= library_workers.FIRST_SEARCH + 5
    assert all(list(q) == sorted(q) for q in big) and sum("b" in {(["a"] * 100 + ["b"] * 5)[i] for i in q}
                                                             for q in big) == 1
    homed = plan(["a"] * 4 + ["b"] * 4, 3, home={"b": 2, "z": 7})
    assert list(homed[2]) == [4, 5, 6, 7]


def test_steal_takes_a_kind_already_searched_then_only_a_long_queue():
    from collections import deque

    steal, n = library_workers.steal, library_workers.FIRST_SEARCH
    kinds = ["a"] * 3 + ["b"] * (n + 2)
    queues = [deque([0, 1, 2]), deque(range(3, n + 5)), deque()]
    assert steal(queues, kinds, {"a"}) == 2 and list(queues[0]) == [0, 1]        # no compile: taken at once
    assert steal(queues, kinds, set()) == n + 4                                  # the longest, from its tail
    short = [deque([0, 1]), deque()]
    assert steal(short, kinds, set()) is None                                    # its owner finishes sooner
    assert steal(short, kinds, set(), force=True) == 1


def test_the_conv_grid_plan_is_balanced_and_compiles_each_kind_about_once():
    """On the full FP16 convolution grid in CHUNK chunks of six workers: no worker holds more than its share by more
    than a tenth, and the (worker, kind) pairs, each a compile, stay within the kinds plus what splitting costs."""
    from hwprobe.probes.calibration import grids, torch_library

    cases = grids.conv_cases("fp16")
    home: dict = {}
    for start in range(0, len(cases), library_workers.CHUNK):
        kinds = [torch_library.conv_kind(c) for c in cases[start:start + library_workers.CHUNK]]
        queues = library_workers.plan_queues(kinds, library_workers.WORKERS, home)
        share = (len(kinds) + library_workers.FIRST_SEARCH * len(set(kinds))) / library_workers.WORKERS
        loads = [len(q) + library_workers.FIRST_SEARCH * len({kinds[i] for i in q}) for q in queues]
        assert max(loads) <= 1.1 * share + library_workers.FIRST_SEARCH, (loads, share)
        pairs = {(w, kinds[i]) for w, q in enumerate(queues) for i in q}
        assert len(pairs) <= len(set(kinds)) + library_workers.WORKERS, (len(pairs), len(set(kinds)))
        for w, k in pairs:
            home.setdefault(k, w)


def test_search_kinds_separate_what_a_process_compiles_apart():
    from hwprobe.probes.calibration import grids, torch_library

    kind = library_workers.search_kind
    dense = grids._conv("fp16", 3, 64, 64, 1, 14, "nhwc")
    assert kind("conv", dense) == kind("conv", grids._conv("fp16", 3, 256, 256, 32, 7, "nhwc"))   # other shapes
    others = [grids._conv("fp16", 3, 64, 64, 1, 14, "nchw"), grids._conv("tf32", 3, 64, 64, 1, 14, "nhwc"),
              grids._conv("fp16", 3, 64, 64, 1, 14, "nhwc", groups=64), grids._conv("fp16", 3, 64, 64, 1, 14,
                                                                                  "nhwc", groups=4),
              grids._conv("fp16", 3, 64, 64, 1, 14, "nhwc", stride=2), grids._conv("fp16", 3, 64, 64, 1, 14,
                                                                                  "nhwc", dilation=2),
              grids._conv("fp16", 3, 64, 64, 1, 14, "nhwc", kw=1), grids._conv("fp16", 3, 3, 64, 1, 14, "nhwc")]
    assert len({kind("conv", c) for c in [dense, *others]}) == 1 + len(others)
    plain = {"bh": 8, "seq": 512, "dim": 64, "causal": True, "precision": "bf16"}
    masked = {**plain, "causal": False, "masked": True, "batch": 2}
    assert kind("sdpa", plain) == kind("sdpa", {**plain, "seq": 2048}) != kind("sdpa", masked)
    assert kind("sdpa", plain) == torch_library.sdpa_kind(plain) and kind("linear", plain) is None


def test_a_search_checks_its_output_and_a_timing_leaves_the_check_to_the_family():
    """library_workers.answer with torch_library's SearchFamily: the search's first call is checked there (the
    reference's first use falls in the parallel phase), a wrong output fails the search, and "time" does not check
    twice (the family's time checks after its timed replays)."""
    from hwprobe.probes.calibration.torch_library import SearchFamily

    log = []

    def search(torch, case):
        log.append(("call", case["m"]))

        def check():
            log.append(("check", case["m"]))
            if case["m"] == 17:
                raise AssertionError("max relative error 0.5 > 0.02")
        return (lambda: None), check

    def time_(torch, case, searched):
        log.append(("time", case["m"]))
        return case["m"] * 1e-6

    fam = SearchFamily(search, time_, lambda case: None)
    assert library_workers.answer(None, fam, "search", {"m": 4}) is None
    assert log == [("call", 4), ("check", 4)]
    log.clear()
    assert library_workers.answer(None, fam, "time", {"m": 4}) == 4e-6
    assert log == [("call", 4), ("time", 4)]
    with pytest.raises(AssertionError, match="relative error"):
        library_workers.answer(None, fam, "search", {"m": 17})


def test_a_worker_keeps_its_cache_until_it_holds_more_than_keep_bytes():
    class Cuda:
        held, freed = 0, []

        @classmethod
        def memory_reserved(cls):
            return cls.held

        @classmethod
        def empty_cache(cls):
            cls.freed.append(cls.held)

    for held in (library_workers.KEEP_BYTES, library_workers.KEEP_BYTES + 1, 0):    # at the limit: kept
        Cuda.held = held
        library_workers.trim(type("Torch", (), {"cuda": Cuda}))
    assert Cuda.freed == [library_workers.KEEP_BYTES + 1]
