"""nox sessions: tests (CPU), gpu (on a CUDA machine), lint, mutation (slow, by hand: docs/mutation.md)."""

import shutil
import subprocess
from pathlib import Path

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


@nox.session
def mutation(session: nox.Session) -> None:
    """Mutation testing (mutmut) of the modules that decide what a figure means ([tool.mutmut] in pyproject.toml);
    too slow for CI. `nox -s mutation -- "hwprobe.judge*"` runs (or re-runs) one module's mutants; results are
    kept between runs in .nox/mutation/tmp/stage/mutants; docs/mutation.md records the last full run."""
    session.install("-e", ".[test]", "mutmut==3.8.1")
    stage = Path(session.create_tmp()) / "stage"
    _stage(stage)
    session.chdir(stage)
    # COLUMNS: CLI tests read lines the CLI wraps at the terminal's width; under mutmut it came out narrower
    session.run("mutmut", "run", *session.posargs, env={"COLUMNS": "250"})
    session.run("python", "tools/mutation_summary.py", "mutants")


def _stage(stage: Path) -> None:
    """The tracked files, copied where they changed (mutmut's cache keys on mtimes). mutmut copies tests/ following
    symlinks, and the recorded sysfs trees in tests/fixtures loop, so they stay out: no mutated module's test reads
    them."""
    root = Path(__file__).resolve().parent
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, check=True,
                           capture_output=True, text=True).stdout.splitlines()
    for name in files:
        src, dst = root / name, stage / name
        if name.startswith("tests/fixtures/") or src.is_symlink() or not src.is_file():
            continue
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
