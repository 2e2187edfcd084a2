"""The convolution worker pool's bookkeeping on a CPU (hwprobe.probes.calibration.conv_workers): real spawned
processes running a stand-in for the CUDA worker loop. The GPU run (tests/gpu) times real points with it."""

from __future__ import annotations

import os

from hwprobe.probes.calibration import conv_workers


def fake_serve(conn, device: int) -> None:
    """Answers like conv_workers._serve: a point's 'time' is its m x 1e-9; m == 13 fails its search, m == 17 its
    check, m == 19 kills the worker in the middle of its search."""
    held = None
    while (msg := conn.recv()) is not None:
        op, case = msg
        if op == "search":
            if case["m"] == 19:
                os._exit(3)
            if case["m"] == 13:
                conn.send(("error", RuntimeError("no engine")))
                continue
            held = case
            conn.send(("ok", None))
        elif held["m"] == 17:
            conn.send(("error", AssertionError("max relative error 0.5 > 0.02")))
        else:
            conn.send(("ok", held["m"] * 1e-9 + device))


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
    with conv_workers.measuring(_Torch, 3, fake_serve) as run:
        got = list(run(cases))
        again = list(run(cases[:4]))                    # the same workers serve a later sweep (another precision)
    assert [c for c, _ in got] == cases and [c for c, _ in again] == cases[:4]
    times = {c["m"]: t for c, t in got}
    assert all(times[m] == m * 1e-9 for m in range(1, 24) if m not in (13, 17, 19))
    assert str(times[13]) == "no engine" and isinstance(times[17], AssertionError)
    assert isinstance(times[19], RuntimeError) and "conv worker exited (3)" in str(times[19])
    assert times[20] == 20e-9                            # the worker that died was replaced


def test_no_workers_below_two_or_for_a_small_grid():
    with conv_workers.measuring(_Torch, 1) as run:
        assert run is None
    assert conv_workers.count(conv_workers.MIN_POINTS - 1) == 0
    n = conv_workers.count(10_000)
    assert n == 0 or 2 <= n <= conv_workers.WORKERS
