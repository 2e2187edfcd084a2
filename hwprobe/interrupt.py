"""Ctrl-C that is never lost.

Python turns SIGINT into KeyboardInterrupt wherever the main thread happens to be. When that is a
ctypes callback (numba's LLVM object cache, during a JIT compile) the exception is printed and
dropped, and the run would go on as if nothing happened. The guard remembers the signal so the run
raises it again at the next timed sample, measurement or probe boundary.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager


class InterruptGuard:
    def __init__(self) -> None:
        self.seen = False

    def _handler(self, signum, frame):
        self.seen = True
        raise KeyboardInterrupt

    def unraisable(self, previous):
        """An unraisable hook that drops the KeyboardInterrupt it already remembers (no stray traceback)."""

        def hook(u):
            if not (self.seen and isinstance(u.exc_value, KeyboardInterrupt)):
                previous(u)

        return hook

    def check(self) -> None:
        """Raise KeyboardInterrupt if a SIGINT arrived and was swallowed on its way up."""
        if self.seen:
            raise KeyboardInterrupt


_active: InterruptGuard | None = None


def check() -> None:
    """For timing loops: raise a remembered Ctrl-C now rather than after the whole measurement."""
    if _active is not None:
        _active.check()


@contextmanager
def guarded():
    """Install the remembering SIGINT handler for the block (main thread only; elsewhere a no-op)."""
    guard = InterruptGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous, previous_hook = signal.signal(signal.SIGINT, guard._handler), sys.unraisablehook
    sys.unraisablehook = guard.unraisable(previous_hook)
    global _active
    _active = guard
    try:
        yield guard
    finally:
        _active = None
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook
