"""Import cycles inside hwprobe: every import counts, at module top, inside a function or under TYPE_CHECKING
(a lazy import hides a circle from Python, not from the reader who must change both ends).

The root package's __init__ is a facade (functions that hand names on from a lazy import); its own imports are
not followed, so ``from hwprobe import __version__`` ties nothing into a circle.

    python tools/import_cycles.py [ROOT]     # prints each cycle; exit 1 if any (ROOT: a checkout, default this one)
"""
import ast
import pathlib
import sys

root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1]
mods = {}
for f in (root / "hwprobe").rglob("*.py"):
    rel = f.relative_to(root).with_suffix("")
    name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    mods[name] = f
graph = {}
for name, f in mods.items():
    deps = set()
    for node in ast.walk(ast.parse(f.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hwprobe"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & mods.keys()
            deps |= subs
            if len(subs) < len(node.names):      # a name defined in the module itself, not a submodule of it
                deps.add(node.module)
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name.startswith("hwprobe")}
    graph[name] = {d for d in deps if d in mods and d != name} if name != "hwprobe" else set()
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
