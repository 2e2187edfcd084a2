"""Errors with a meaning for the CLI's exit code."""


class InputError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class NotModelled(InputError):
    """A case the lowering does not model (a family's tp plan, a runtime under tp): one line, exit code 2, as any bad
    input; a comparison against measured runs lists it as not modelled instead of pricing it."""


# What a library says when it does not offer a case (an odd size for INT8, an FP8 size off a multiple of 16, a
# layout): a skip, not a failure. Records an older hwprobe filed as errors are reported as skips by the same rule.
LIBRARY_REFUSALS = ("NOT_SUPPORTED", "not supported", "No algorithm", "no algorithm", "ARCH_MISMATCH",
                    "must be divisible by")


def is_library_refusal(text: str) -> bool:
    return any(s in text for s in LIBRARY_REFUSALS)


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
