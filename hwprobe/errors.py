"""Errors with a meaning for the CLI's exit code."""


class InputError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class Skip(Exception):
    """A probe (or one of its points) can't run here; the message is the reason. The run goes on."""


class VerificationError(Exception):
    """A kernel's output did not match its reference: the measurement is marked invalid."""
