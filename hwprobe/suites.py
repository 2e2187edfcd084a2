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


@dataclass
class Suite:
    name: str
    target: str                       # "gpu" | "cpu"
    description: str
    entries: list[SuiteEntry]
    path: str


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
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in item.items() if k != "probe"}
        entries.append(SuiteEntry(item["probe"], params))
    return Suite(str(data.get("name", Path(path).stem)), target, str(data.get("description", "")), entries, path)


def validate(suite: Suite) -> None:
    """Every probe exists, targets the suite's device kind and accepts the given parameters."""
    from hwprobe import probes

    reg = probes.registry()
    for e in suite.entries:
        if e.probe not in reg:
            raise InputError(f"suite {suite.name!r}: unknown probe {e.probe!r}; known probes: {', '.join(reg)}")
        p = reg[e.probe]
        if p.target != suite.target:
            raise InputError(
                f"suite {suite.name!r}: probe {e.probe!r} targets the {p.target}, the suite the {suite.target}"
            )
        p.check_params(e.params)
