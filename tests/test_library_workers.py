"""The library worker pool's bookkeeping on a CPU (hwprobe.probes.calibration.library_workers): real spawned
processes running a stand-in for the CUDA worker loop. The GPU run (tests/gpu) times real points with it."""

from __future__ import annotations

import os

from hwprobe.probes.calibration import library_workers


def fake_serve(conn, device: int) -> None:
    """Answers like library_workers._serve: a point's 'time' is its m x 1e-9 plus, in whole seconds, how many points
    this worker had searched, plus 1e-3 for an "sdpa" point; m == 13 fails its search, m == 17 its check, m == 19
    kills the worker in the middle of its search, m == 5 searches for 1 s."""
    import time

    searched = 0
    while (msg := conn.recv()) is not None:
        op, family, case = msg
        if op == "search":
            if case["m"] == 19:
                os._exit(3)
            if case["m"] == 5:
                time.sleep(1.0)
            searched += 1
            conn.send(("error", RuntimeError("no engine")) if case["m"] == 13 else ("ok", None))
        elif case["m"] == 17:
            conn.send(("error", AssertionError("max relative error 0.5 > 0.02")))
        else:
            conn.send(("ok", case["m"] * 1e-9 + searched + device + (1e-3 if family == "sdpa" else 0.0)))


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
    with library_workers.measuring(_Torch, 3, fake_serve) as run:
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
    with library_workers.measuring(_Torch, 3, fake_serve) as run:
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
    with library_workers.measuring(_Torch, 3, fake_serve) as run:
        got = dict((c["m"], t) for c, t in run(cases))
    searched_by_slow = int(got[5])
    assert searched_by_slow <= 3 and max(int(t) for t in got.values()) >= 4


def test_no_workers_below_two_or_for_a_small_grid():
    with library_workers.measuring(_Torch, 1) as run:
        assert run is None
    assert library_workers.count(library_workers.MIN_POINTS - 1) == 0
    n = library_workers.count(10_000)
    assert n == 0 or 2 <= n <= library_workers.WORKERS
