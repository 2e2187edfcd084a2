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
    """``immediate`` (outside measuring): the first signal raises at once. Inside a run (``immediate`` off) the
    first only sets the flag, a second raises. While ``deferring`` (the final writes) none raises. A raise that
    Python drops (inside a C callback) is never lost: the flag stays set and the next ``check`` raises."""

    def __init__(self, immediate: bool = False) -> None:
        self.seen = False
        self.deferring = False
        self.immediate = immediate

    def _handler(self, signum, frame):
        first = not self.seen
        self.seen = True
        if self.deferring:
            if first:
                sys.stderr.write("\nhwprobe: finishing the results files first\n")
            return
        if self.immediate or not first:
            raise KeyboardInterrupt
        sys.stderr.write(NOTICE)
        sys.stderr.flush()

    @contextmanager
    def deferred(self):
        """Signals in this block only set the flag, even a second one: the final writes are not cut short."""
        before, self.deferring = self.deferring, True
        try:
            yield
        finally:
            self.deferring = before

    def unraisable(self, previous):
        """An unraisable hook that drops a KeyboardInterrupt already remembered (a Ctrl-C that landed in a C
        callback): the flag stops the run; the traceback would only confuse."""

        def hook(u):
            if not (self.seen and isinstance(u.exc_value, KeyboardInterrupt)):
                previous(u)

        return hook

    def check(self) -> None:
        """Raise KeyboardInterrupt if Ctrl-C (or SIGTERM) came."""
        if self.seen:
            raise KeyboardInterrupt


_active: InterruptGuard | None = None


def check() -> None:
    """For timing loops: stop here if Ctrl-C was pressed during the run."""
    if _active is not None:
        _active.check()


@contextmanager
def guarded(immediate: bool = False):
    """SIGINT/SIGTERM handling for the block (main thread only; elsewhere a no-op). Nested: the outer guard
    (the CLI's, from its first instruction) is reused, switched to this block's mode, so no signal that came
    before is forgotten."""
    global _active
    if _active is not None:
        guard, before = _active, _active.immediate
        guard.immediate = immediate
        try:
            yield guard
        finally:
            guard.immediate = before
        return
    guard = InterruptGuard(immediate)
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous, previous_hook = signal.signal(signal.SIGINT, guard._handler), sys.unraisablehook
    previous_term = signal.signal(signal.SIGTERM, guard._handler)
    sys.unraisablehook = guard.unraisable(previous_hook)
    _active = guard
    try:
        yield guard
    finally:
        _active = None
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
        sys.unraisablehook = previous_hook
