"""Errors with a meaning for the CLI's exit code."""


class InputError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class Skip(Exception):
    """A probe (or one of its points) can't run here; the message is the reason. The run goes on."""


class VerificationError(Exception):
    """A kernel's output did not match its reference: the measurement is marked invalid."""


class ResultsWriteError(InputError):
    """The results directory stopped taking writes mid-run (disk full, made read-only): exit code 2, and the
    CLI prints what was measured as JSON on stdout so nothing is lost."""

    def __init__(self, message: str, measurements: list | None = None):
        super().__init__(message)
        self.measurements = measurements or []


class ProbeTimeout(Exception):
    """A probe ran past its watchdog budget (raised in the main thread by the watchdog)."""
