"""Per-module result of a mutmut run (``nox -s mutation``): killed / total and the surviving mutants' names.

    python tools/mutation_summary.py [MUTANTS_DIR] [--survivors]

Reads mutmut's ``*.py.meta`` files (one per mutated module, the exit code of each mutant's test run) and prints a
Markdown table, the form docs/mutation.md keeps. A timed-out mutant counts as killed (the tests did not pass);
one no test reaches counts as a survivor, as mutmut counts it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

KILLED = {1, 3, 24, -24, 36, 152, 255}      # test failure, pytest internal error, timeouts (mutmut's stats.py)
SURVIVED = {0, 5, 33}                        # tests passed, or no test ran the mutant


@dataclass
class Module:
    name: str
    killed: int = 0
    survivors: list[str] = field(default_factory=list)
    unchecked: int = 0

    @property
    def checked(self) -> int:
        return self.killed + len(self.survivors)


def read(mutants: Path) -> list[Module]:
    out = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        mod = Module(str(meta.relative_to(mutants)).removesuffix(".meta"))
        for key, code in codes.items():
            if code in KILLED:
                mod.killed += 1
            elif code in SURVIVED:
                mod.survivors.append(key)
            else:
                mod.unchecked += 1
        out.append(mod)
    return out


def table(mods: list[Module]) -> str:
    rows = ["| module | killed / checked | share | survivors | not checked |", "| --- | ---: | ---: | ---: | ---: |"]
    for m in mods:
        share = f"{m.killed / m.checked:.1%}" if m.checked else "-"
        rows.append(f"| {m.name} | {m.killed} / {m.checked} | {share} | {len(m.survivors)} | {m.unchecked} |")
    k, c = sum(m.killed for m in mods), sum(m.checked for m in mods)
    rows.append(f"| all | {k} / {c} | {k / c:.1%} | {c - k} | {sum(m.unchecked for m in mods)} |" if c else "")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mutants", nargs="?", type=Path, default=Path("mutants"))
    ap.add_argument("--survivors", action="store_true", help="list each surviving mutant's name")
    a = ap.parse_args(argv)
    mods = read(a.mutants) if a.mutants.is_dir() else []
    if not mods:
        print(f"mutation_summary: no mutmut results (*.py.meta) under {a.mutants}", file=sys.stderr)
        return 2
    print(table(mods))
    if a.survivors:
        for m in mods:
            for s in m.survivors:
                print(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
