"""Suites are data (TOML files in suites/): which probes to run, with which parameters."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwprobe.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class SuiteEntry:
    probe: str
    params: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None    # the watchdog's budget for this probe (default: watchdog.DEFAULT_TIMEOUT_S)


@dataclass
class Suite:
    name: str
    target: str                       # "gpu" | "cpu"
    description: str
    entries: list[SuiteEntry]
    path: str
    rounds: int = 1                   # each probe runs this many times, interleaved: the ceilings' spread
    budget_s: float | None = None     # the wall time the suite is meant to take (progress estimates)


def suite_dirs() -> list[Path]:
    """Installed suites (hwprobe/_suites in a wheel) and the checkout's top-level suites/."""
    here = Path(__file__).resolve().parent
    return [d for d in (here / "_suites", here.parent / "suites") if d.is_dir()]


def available() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in suite_dirs():
        for p in sorted(d.glob("*.toml")):
            found.setdefault(p.stem, p)
    return found


def load(name_or_path: str) -> Suite:
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        if not p.is_file():
            raise InputError(f"suite file {name_or_path!r} does not exist")
        path = p
    else:
        known = available()
        if name_or_path not in known:
            raise InputError(f"unknown suite {name_or_path!r}; suites: {', '.join(known) or 'none found'}")
        path = known[name_or_path]
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"suite {str(path)!r} is not valid TOML: {e}") from None
    return parse(data, str(path))


def parse(data: dict[str, Any], path: str = "<suite>") -> Suite:
    target = data.get("target")
    if target not in ("gpu", "cpu"):
        raise InputError(f"suite {path!r}: 'target' must be \"gpu\" or \"cpu\", not {target!r}")
    raw = data.get("probes")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"suite {path!r}: needs a non-empty [[probes]] list")
    entries = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("probe"), str):
            raise InputError(f"suite {path!r}: [[probes]] entry {i + 1} needs a 'probe' name")
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in item.items() if k not in ("probe", "timeout_s")}
        timeout = item.get("timeout_s")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise InputError(f"suite {path!r}: [[probes]] entry {i + 1}: 'timeout_s' must be a positive number "
                             f"of seconds, not {timeout!r}")
        entries.append(SuiteEntry(item["probe"], params, float(timeout) if timeout else None))
    rounds = data.get("rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 100:
        raise InputError(f"suite {path!r}: 'rounds' must be a whole number from 1 to 100, not {rounds!r}")
    budget = data.get("budget_s")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0):
        raise InputError(f"suite {path!r}: 'budget_s' must be a positive number of seconds, not {budget!r}")
    known = {"name", "target", "description", "probes", "rounds", "budget_s"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"suite {path!r}: unknown key {', '.join(unknown)} (keys: {', '.join(sorted(known))})")
    return Suite(str(data.get("name", Path(path).stem)), target, str(data.get("description", "")), entries, path,
                 rounds, float(budget) if budget is not None else None)


def validate(suite: Suite) -> None:
    """Every probe exists, targets the suite's device kind and accepts the given parameters."""
    from hwprobe import probes

    reg = probes.registry()
    for e in suite.entries:
        if e.probe not in reg:
            raise InputError(f"suite {suite.path!r}: unknown probe {e.probe!r}; known probes: {', '.join(reg)}")
        p = reg[e.probe]
        if p.target != suite.target:
            raise InputError(
                f"suite {suite.path!r}: probe {e.probe!r} targets the {p.target}, the suite the {suite.target}"
            )
        p.check_params(e.params, where=f"suite {suite.path!r}")
