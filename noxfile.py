"""nox sessions: tests (CPU), gpu (on a CUDA machine), lint."""

import nox

nox.options.sessions = ["tests", "lint"]


@nox.session
def tests(session: nox.Session) -> None:
    """The CPU test suite (GPU tests skip themselves with a reason)."""
    session.install("-e", ".[test]")
    # a real consumer of the llm-analysis export, without its stale pins (see .ci/run)
    session.install("--no-deps", "llm-analysis>=0.2")
    session.install("fire>=0.5,<0.6")
    session.run("pytest", "-m", "not gpu", *session.posargs)


@nox.session
def gpu(session: nox.Session) -> None:
    """GPU probes for real, briefly: run on an H100/H200 (pass cuda12 with `-- cuda12` on CUDA 12)."""
    extra = "cuda12" if "cuda12" in session.posargs else "cuda13"
    session.install("-e", f".[test,{extra}]")
    session.run("pytest", "-m", "gpu", "-v", *[a for a in session.posargs if a != "cuda12"])


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "hwprobe", "tests", "tools", "noxfile.py", "setup.py")
