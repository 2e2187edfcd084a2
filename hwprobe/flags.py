"""A measurement's flags as (code, text): code is what code tests, text what a reader is told.

In JSON a flag stays the string every profile has stored ("clock_disagreement: kernel 1980 MHz vs NVML 1755
MHz", or the bare code), so old profiles load unchanged; ``Flag`` is that string with its code and text apart,
and ``has`` tests a list of flags by code, never by a prefix of the text.
"""

from __future__ import annotations

from collections.abc import Iterable

from hwprobe.vocab import _Words


class Code(_Words):
    """The flag codes that code reads (others are only shown)."""

    ABOVE_THEORY = "above_theory"
    BEST_ABOVE_THEORY = "best_above_theory"
    CLOCK_DISAGREEMENT = "clock_disagreement"
    CLOCK_LAG = "clock_lag"
    THEORY_CLOCK_MOVED = "theory_clock_moved"
    CONTENDED = "contended"
    SASS_MISMATCH = "sass_mismatch"
    VERIFICATION_FAILED = "verification_failed"


class Flag(str):
    """``Flag(code, text)``: the string "code: text" (or "code" alone), with ``.code`` and ``.text``."""

    def __new__(cls, code: str, text: str = "") -> Flag:
        return super().__new__(cls, f"{code}: {text}" if text else str(code))

    @property
    def code(self) -> str:
        return code_of(self)

    @property
    def text(self) -> str:
        return self.partition(":")[2].strip()


def code_of(flag: str) -> str:
    """The code of a stored flag string: what stands before its first colon (all of it without one)."""
    return str(flag).partition(":")[0].strip()


def has(flags: Iterable[str], code: str) -> bool:
    """Whether any flag in ``flags`` (Flag or stored string) carries ``code``."""
    return any(code_of(f) == code for f in flags)


def first(flags: Iterable[str], code: str) -> str | None:
    """The first flag with ``code``, or None."""
    return next((str(f) for f in flags if code_of(f) == code), None)
