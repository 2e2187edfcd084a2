"""Ctrl-C that stops a run cleanly, between samples.

Python's default SIGINT handler raises KeyboardInterrupt wherever the main thread is. Inside a JIT compile
(numba/llvmlite) that leaves LLVM objects half-built: the exception is dropped in a ctypes callback and
the run goes on, or the process dies later with a segfault. So during a run the first Ctrl-C only sets a
flag, and the run stops at the next timed sample, measurement or probe boundary (each calls ``check``),
keeping everything measured so far. A second Ctrl-C raises at once, for a probe that never returns.
SIGTERM (a scheduler's or `kill`'s polite stop) is handled the same way. While the run writes its final files
(``deferred``), a signal only sets the flag: the write finishes first.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

NOTICE = "\nhwprobe: stopping at the next sample (Ctrl-C again to stop now)\n"


class InterruptGuard:
    def __init__(self) -> None:
        self.seen = False
        self.deferring = False

    def _handler(self, signum, frame):
        if self.seen and not self.deferring:
            raise KeyboardInterrupt
        if not self.seen:
            sys.stderr.write(NOTICE if not self.deferring else "\nhwprobe: finishing the results files first\n")
            sys.stderr.flush()
        self.seen = True

    @contextmanager
    def deferred(self):
        """Signals in this block only set the flag, even a second one: the final writes are not cut short."""
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = False

    def unraisable(self, previous):
        """An unraisable hook that drops a KeyboardInterrupt already remembered (a second Ctrl-C that landed
        in a C callback): the flag stops the run; the traceback would only confuse."""

        def hook(u):
            if not (self.seen and isinstance(u.exc_value, KeyboardInterrupt)):
                previous(u)

        return hook

    def check(self) -> None:
        """Raise KeyboardInterrupt if Ctrl-C was pressed."""
        if self.seen:
            raise KeyboardInterrupt


_active: InterruptGuard | None = None


def check() -> None:
    """For timing loops: stop here if Ctrl-C was pressed during the run."""
    if _active is not None:
        _active.check()


@contextmanager
def guarded():
    """Install the deferring SIGINT handler for the block (main thread only; elsewhere a no-op)."""
    guard = InterruptGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous, previous_hook = signal.signal(signal.SIGINT, guard._handler), sys.unraisablehook
    previous_term = signal.signal(signal.SIGTERM, guard._handler)
    sys.unraisablehook = guard.unraisable(previous_hook)
    global _active
    _active = guard
    try:
        yield guard
    finally:
        _active = None
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
        sys.unraisablehook = previous_hook
