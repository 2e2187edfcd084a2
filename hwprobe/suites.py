"""Suites are data (TOML files in suites/): which probes to run, with which parameters.

A suite may ``include = ["compute", "memory"]`` other suites (by name, or a .toml path beside it): their probes
come first, in that order, then its own [[probes]]. The including suite's name, rounds and budget are its own;
an include cycle, a suite of another target or a probe that comes twice is refused in one line. Its
``[params."gpu.x"]`` tables set parameters of probes it runs, its included ones too, in their place (``full`` runs
the power suite's gpu.gemm_power on fewer paths than ``power`` does).
"""

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


def find(name_or_path: str, beside: Path | None = None) -> Path:
    """A suite file: a path (relative to ``beside``, the including suite's folder, where given) or a name."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        if beside is not None and not p.is_absolute() and (beside / p).is_file():
            p = beside / p
        if not p.is_file():
            raise InputError(f"suite file {name_or_path!r} does not exist")
        return p
    known = available()
    if name_or_path not in known:
        raise InputError(f"unknown suite {name_or_path!r}; suites: {', '.join(known) or 'none found'}")
    return known[name_or_path]


def load(name_or_path: str, _including: tuple[str, ...] = ()) -> Suite:
    path = find(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"suite {str(path)!r} is not valid TOML: {e}") from None
    return parse(data, str(path), _including)


def _included(data: dict[str, Any], path: str, target: str, including: tuple[str, ...]) -> list[SuiteEntry]:
    """The entries of the suites ``data`` includes, in order; ``including`` is the chain of files above it."""
    names = data.get("include", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise InputError(f"suite {path!r}: 'include' must be a list of suite names, not {names!r}")
    here = Path(path).resolve() if Path(path).is_file() else None
    chain = (*including, str(here or path))
    out: list[SuiteEntry] = []
    for name in names:
        try:
            sub = find(name, here.parent if here else None)
        except InputError as e:
            raise InputError(f"suite {path!r}: include: {e}") from None
        if str(sub.resolve()) in chain:
            loop = " -> ".join(Path(c).stem for c in (*chain, str(sub.resolve())))
            raise InputError(f"suite {path!r}: include cycle: {loop}")
        inc = load(str(sub), chain)
        if inc.target != target:
            raise InputError(f"suite {path!r}: included suite {name!r} targets the {inc.target}, this one the {target}")
        out += inc.entries
    return out


def parse(data: dict[str, Any], path: str = "<suite>", _including: tuple[str, ...] = ()) -> Suite:
    target = data.get("target")
    if target not in ("gpu", "cpu"):
        raise InputError(f"suite {path!r}: 'target' must be \"gpu\" or \"cpu\", not {target!r}")
    entries = _included(data, path, target, _including)
    raw = data.get("probes", [] if entries else None)
    if not isinstance(raw, list) or not (raw or entries):
        raise InputError(f"suite {path!r}: needs a non-empty [[probes]] list (or suites to include)")
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("probe"), str):
            raise InputError(f"suite {path!r}: [[probes]] entry {i + 1} needs a 'probe' name")
        params = _tuples({k: v for k, v in item.items() if k not in ("probe", "timeout_s")})
        timeout = item.get("timeout_s")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise InputError(f"suite {path!r}: [[probes]] entry {i + 1}: 'timeout_s' must be a positive number "
                             f"of seconds, not {timeout!r}")
        entries.append(SuiteEntry(item["probe"], params, float(timeout) if timeout else None))
    twice = sorted({e.probe for e in entries if [x.probe for x in entries].count(e.probe) > 1})
    if twice and "include" in data:      # a run keys its entries by probe name: one probe, one entry
        raise InputError(f"suite {path!r}: probe {twice[0]!r} comes twice through its includes and probes")
    _set_params(data.get("params", {}), entries, path)
    rounds = data.get("rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 100:
        raise InputError(f"suite {path!r}: 'rounds' must be a whole number from 1 to 100, not {rounds!r}")
    budget = data.get("budget_s")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0):
        raise InputError(f"suite {path!r}: 'budget_s' must be a positive number of seconds, not {budget!r}")
    known = {"name", "target", "description", "include", "probes", "params", "rounds", "budget_s"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"suite {path!r}: unknown key {', '.join(unknown)} (keys: {', '.join(sorted(known))})")
    return Suite(str(data.get("name", Path(path).stem)), target, str(data.get("description", "")), entries, path,
                 rounds, float(budget) if budget is not None else None)


def _tuples(params: dict[str, Any]) -> dict[str, Any]:
    """A TOML table's parameters with its lists as tuples (a probe's list parameters default to tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}


def _set_params(table: Any, entries: list[SuiteEntry], path: str) -> None:
    """Merge ``[params."probe"]`` tables into the entries of the probes they name (one each: the same probe twice
    is refused above where a suite includes others, and set in every entry where it does not)."""
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise InputError(f"suite {path!r}: 'params' must be tables of parameters per probe, "
                         f'e.g. [params."gpu.gemm_power"]')
    for name, params in table.items():
        hits = [e for e in entries if e.probe == name]
        if not hits:
            raise InputError(f'suite {path!r}: [params."{name}"] names a probe the suite does not run; '
                             f"it runs {', '.join(dict.fromkeys(e.probe for e in entries))}")
        for e in hits:
            e.params = {**e.params, **_tuples(params)}


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
