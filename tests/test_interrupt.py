"""Ctrl-C must end a run even when Python drops the KeyboardInterrupt inside a C callback."""

import ctypes
import os
import signal
import sys

import pytest

from hwprobe import api
from hwprobe.interrupt import guarded

CALLBACK = ctypes.CFUNCTYPE(None)


def sigint_inside_a_c_callback():
    """What numba's LLVM object-cache callback does to a Ctrl-C: the exception is printed and lost."""

    def body():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):   # the handler runs at a bytecode boundary, inside the callback
            pass

    CALLBACK(body)()


def test_a_swallowed_sigint_is_raised_again_at_the_next_check(capsys):
    with guarded() as guard:
        sigint_inside_a_c_callback()        # returns normally: the callback ate the exception
        assert guard.seen
        with pytest.raises(KeyboardInterrupt):
            guard.check()
    assert "Traceback" not in capsys.readouterr().err   # no stray 'Exception ignored' traceback


def test_the_guard_restores_the_handlers():
    before, hook = signal.getsignal(signal.SIGINT), sys.unraisablehook
    with guarded():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before and sys.unraisablehook is hook


def test_a_run_interrupted_inside_a_callback_ends_partial(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('target = "cpu"\n[[probes]]\nprobe = "cpu.fma"\nprecisions = ["fp64", "fp32"]\n')
    seen = []

    def on_measurement(m):
        seen.append(m.metric)
        if len(seen) == 1:
            sigint_inside_a_c_callback()

    r = api.run("cpu", str(suite), tmp_path / "out", quick=True, on_measurement=on_measurement)
    assert r.interrupted and r.profile.partial
    assert len(seen) == 1 and len(r.measurements) == 1
