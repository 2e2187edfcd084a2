"""Module-level import cycles inside hwprobe (imports at module top; lazy ones inside functions don't count).

    python tools/import_cycles.py      # prints each cycle; exit 1 if any
"""
import ast
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[1]
mods = {}
for f in (root / "hwprobe").rglob("*.py"):
    rel = f.relative_to(root).with_suffix("")
    name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    mods[name] = f
graph = {}
for name, f in mods.items():
    deps = set()
    for node in ast.parse(f.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hwprobe"):
            deps.add(node.module)
            for a in node.names:
                if f"{node.module}.{a.name}" in mods:
                    deps.add(f"{node.module}.{a.name}")
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name.startswith("hwprobe")}
    graph[name] = {d for d in deps if d in mods and d != name}
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
for c in cycles:
    print(" -> ".join(c))
print(f"{len(graph)} modules, {len(cycles)} cycles")
sys.exit(1 if cycles else 0)
