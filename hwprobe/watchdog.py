"""A per-probe watchdog: a probe that runs past its budget is stopped and recorded as failed.

At the budget the watchdog raises ``ProbeTimeout`` in the main thread (through SIGUSR1's handler): a probe
looping in Python stops there, is recorded as an error, and the run goes on. A probe stuck inside a call that
never returns (a hung kernel: Python never runs the handler) gets a grace period, then ``on_stuck`` runs from
the watchdog's thread: it writes what was measured as a partial profile and ends the process.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from hwprobe.errors import ProbeTimeout

DEFAULT_TIMEOUT_S = 900.0      # a probe of the shipped suites takes 2-90 s; a suite entry may set timeout_s
GRACE_S = 30.0


class Watchdog:
    def __init__(self, probe: str, timeout_s: float | None, on_stuck: Callable[[str, float], None],
                 grace_s: float = GRACE_S):
        self.probe, self.timeout_s, self.on_stuck, self.grace_s = probe, timeout_s, on_stuck, grace_s
        self._done = threading.Event()
        self._fired = False
        self._main = threading.main_thread()
        self._prev = None

    def _raise(self, signum, frame):
        if self._fired and not self._done.is_set():
            raise ProbeTimeout(f"{self.probe} ran past its budget of {self.timeout_s:.0f} s (watchdog)")

    def _watch(self) -> None:
        if self._done.wait(self.timeout_s):
            return
        self._fired = True
        signal.pthread_kill(self._main.ident, signal.SIGUSR1)
        if not self._done.wait(self.grace_s):
            self.on_stuck(self.probe, self.timeout_s + self.grace_s)

    def __enter__(self) -> Watchdog:
        usable = (self.timeout_s and self.timeout_s > 0 and hasattr(signal, "pthread_kill")
                  and threading.current_thread() is self._main)
        if usable:
            self._prev = signal.signal(signal.SIGUSR1, self._raise)
            threading.Thread(target=self._watch, name=f"hwprobe-watchdog-{self.probe}", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._prev is not None:
            signal.signal(signal.SIGUSR1, self._prev)
