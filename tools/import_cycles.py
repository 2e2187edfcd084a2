"""Import cycles inside hwprobe: every import counts, at module top, inside a function or under TYPE_CHECKING
(a lazy import hides a circle from Python, not from the reader who must change both ends).

Two levels. Modules: no module may reach itself, counting the packages whose __init__ an import runs first
(``from hwprobe.a.x import X`` runs hwprobe/a/__init__.py). Rooms (``--rooms``): a room is a top-level module or
package of hwprobe (models/, lowering/, predict/, probes/, suites.py, ...); no room may reach itself either, so the
packages stack in one order (models below lowering below predict below analysis) and none reaches back up.

The root package's __init__ is a facade (functions that hand names on from a lazy import); its own imports are
not followed, so ``from hwprobe import __version__`` ties nothing into a circle.

    python tools/import_cycles.py [ROOT]            # each module cycle; exit 1 if any (ROOT: a checkout, default
                                                    # this one)
    python tools/import_cycles.py --rooms [ROOT]    # each circle of rooms with the imports that close it; exit 1
"""
from __future__ import annotations

import ast
import pathlib
import sys
from collections import defaultdict


def modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
    out = {}
    for f in (root / "hwprobe").rglob("*.py"):
        rel = f.relative_to(root).with_suffix("")
        out[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = f
    return out


def imports(name: str, f: pathlib.Path, mods: dict) -> list[tuple[str, int]]:
    """(module imported, line) for each hwprobe module ``name``'s file imports, at any depth; relative imports
    resolved against the module's package."""
    package = name if f.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(f.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            if not base.startswith("hwprobe"):
                continue
            subs = {f"{base}.{a.name}" for a in node.names} & mods.keys()
            out += [(s, node.lineno) for s in sorted(subs)]
            if len(subs) < len(node.names):      # a name defined in the module itself, not a submodule of it
                out.append((base, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("hwprobe")]
    return [(d, line) for d, line in out if d in mods and d != name]


def packages_run(name: str, imported: str, mods: dict) -> set[str]:
    """The packages whose __init__ Python runs to import ``imported`` from ``name``: every package above it, but
    ``name``'s own (already under way: importing a sibling from inside its package is no circle)."""
    parts = imported.split(".")
    above = {".".join(parts[:i]) for i in range(2, len(parts))}
    return {p for p in above if p in mods and not name.startswith(p + ".")}


def module_graph(mods: dict) -> dict[str, set[str]]:
    graph = {}
    for n, f in mods.items():
        deps = {d for d, _ in imports(n, f, mods)} if n != "hwprobe" else set()
        graph[n] = deps | {p for d in deps for p in packages_run(n, d, mods)} - {n}
    return graph


def room(name: str) -> str:
    return name.split(".")[1]


def room_edges(root: pathlib.Path, mods: dict) -> dict[tuple[str, str], list[str]]:
    """(room, room it imports) -> the imports ("path:line") that make the tie."""
    edges = defaultdict(list)
    for n, f in sorted(mods.items()):
        if n == "hwprobe":
            continue
        for d, line in imports(n, f, mods):
            if d != "hwprobe" and room(d) != room(n):
                edges[room(n), room(d)].append(f"{f.relative_to(root)}:{line}")
    return dict(edges)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def module_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state = [], {}

    def visit(n, stack):
        state[n] = 1
        stack.append(n)
        for d in graph[n]:
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, stack)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])
    return cycles


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    root = pathlib.Path(args[0]) if args else pathlib.Path(__file__).resolve().parents[1]
    mods = modules(root)
    if "--rooms" in argv:
        edges = room_edges(root, mods)
        graph = defaultdict(set)
        for a, b in edges:
            graph[a].add(b)
        found = circles(graph)
        for comp in found:
            print("circle: " + ", ".join(comp))
            for (a, b), where in sorted(edges.items()):
                if a in comp and b in comp:
                    print(f"  {a} -> {b}: {', '.join(where)}")
        print(f"{len({room(n) for n in mods if n != 'hwprobe'})} rooms, {len(found)} circles")
        return 1 if found else 0
    cycles = module_cycles(module_graph(mods))
    for c in cycles:
        print(" -> ".join(c))
    print(f"{len(mods)} modules, {len(cycles)} cycles")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
