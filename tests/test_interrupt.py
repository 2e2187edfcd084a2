"""Ctrl-C during a run: the first one stops the run at the next sample, a second one at once."""

import ctypes
import os
import signal
import sys

import pytest

from hwprobe import api
from hwprobe.interrupt import guarded

CALLBACK = ctypes.CFUNCTYPE(None)


def sigint(spin: int = 1000) -> None:
    """Send SIGINT to this process and give the handler bytecode boundaries to run at."""
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(spin):
        pass


def test_the_first_ctrl_c_is_deferred_to_the_next_check(capsys):
    with guarded() as guard:
        sigint()                            # no exception here: a JIT compile in progress finishes
        assert guard.seen
        with pytest.raises(KeyboardInterrupt):
            guard.check()
    assert "stopping at the next sample" in capsys.readouterr().err


def test_a_second_ctrl_c_raises_at_once():
    with guarded():
        sigint()
        with pytest.raises(KeyboardInterrupt):
            sigint()


def test_a_second_ctrl_c_dropped_in_a_c_callback_still_stops_without_a_traceback(capsys):
    with guarded() as guard:
        sigint()
        CALLBACK(sigint)()                  # ctypes drops the KeyboardInterrupt raised in the callback
        with pytest.raises(KeyboardInterrupt):
            guard.check()
    assert "Traceback" not in capsys.readouterr().err


def test_the_guard_restores_the_handlers():
    before, hook = signal.getsignal(signal.SIGINT), sys.unraisablehook
    with guarded():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before and sys.unraisablehook is hook


def test_a_run_interrupted_after_its_first_measurement_ends_partial(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('target = "cpu"\n[[probes]]\nprobe = "cpu.fma"\nprecisions = ["fp64", "fp32"]\n')
    seen = []

    def on_measurement(m):
        seen.append(m.metric)
        if len(seen) == 1:
            sigint()

    r = api.run("cpu", str(suite), tmp_path / "out", quick=True, on_measurement=on_measurement)
    assert r.interrupted and r.profile.partial
    assert len(seen) == 1 and len(r.measurements) == 1
