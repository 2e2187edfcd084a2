"""The code's shape: no import cycles between modules or rooms, no probe importing another probe, no function over
80 lines."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROBE_FAMILIES = ("compute", "memory", "interconnect", "cpu", "calibration", "health")


def test_no_import_cycles():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "import_cycles.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_cycle_check_reads_lazy_and_type_checking_imports(tmp_path):
    """A circle closed by an import inside a function, or under TYPE_CHECKING, is still a circle."""
    pkg = tmp_path / "hwprobe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from hwprobe.b import x\n")
    (pkg / "b.py").write_text("x = 1\n\n\ndef f():\n    from hwprobe import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hwprobe.d import y\n")
    (pkg / "d.py").write_text("from hwprobe import c\ny = c\n")
    (pkg / "e.py").write_text("from hwprobe import a\n")            # a one-way tie: no circle
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "import_cycles.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "hwprobe.a -> hwprobe.b -> hwprobe.a" in r.stdout
    assert "hwprobe.c -> hwprobe.d -> hwprobe.c" in r.stdout
    assert r.stdout.strip().endswith("6 modules, 2 cycles")


def test_cycle_check_counts_the_package_init_an_import_runs(tmp_path):
    """b.x imports a.z, which runs a/__init__.py first, which imports b.x: Python fails with a partially
    initialized module although no module names another that names it back (a step of issue 34 did this)."""
    pkg = tmp_path / "hwprobe"
    for d in ("a", "b"):
        (pkg / d).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("from hwprobe.b.x import X\n")
    (pkg / "a" / "z.py").write_text("Z = 1\n")
    (pkg / "a" / "w.py").write_text("from hwprobe.a.z import Z\n")     # inside its own package: no circle
    (pkg / "b" / "__init__.py").write_text("")
    (pkg / "b" / "x.py").write_text("from hwprobe.a.z import Z\nX = Z\n")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "import_cycles.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["hwprobe.a -> hwprobe.b.x -> hwprobe.a", "6 modules, 1 cycles"]


def test_no_circle_between_rooms():
    """Rooms (top-level modules and packages: models/, lowering/, predict/, probes/, suites.py, ...) stack in one
    order. models/ and predict/ once imported each other (issue 34), and the calibration probes reached predict/."""
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "import_cycles.py"), "--rooms"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout


def test_room_check_finds_a_circle_no_module_cycle_shows(tmp_path):
    """low.x imports high.y only inside a function, high.z imports low.w: no module reaches itself, but the two
    rooms do, and the answer names each import that closes the circle. The root facade ties nothing."""
    pkg = tmp_path / "hwprobe"
    for d in ("low", "high", "other"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("def f():\n    from hwprobe.high import y\n    return y\n")
    (pkg / "low" / "x.py").write_text("def f():\n    from hwprobe.high import y\n    return y\n")
    (pkg / "low" / "w.py").write_text("from hwprobe import __version__\n")
    (pkg / "high" / "y.py").write_text("X = 1\n")
    (pkg / "high" / "z.py").write_text("from ..low import w\n")         # a relative import counts too
    (pkg / "other" / "a.py").write_text("import hwprobe.low.x\n")        # one way: no circle
    tool = [sys.executable, str(ROOT / "tools" / "import_cycles.py")]
    assert subprocess.run(tool + [str(tmp_path)], capture_output=True, text=True).returncode == 0
    r = subprocess.run(tool + ["--rooms", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["circle: high, low", "  high -> low: hwprobe/high/z.py:1",
                                     "  low -> high: hwprobe/low/x.py:2", "3 rooms, 1 circles"]


def _probe_modules():
    from hwprobe.probes import MODULES

    return {f"hwprobe.probes.{m}" for m in MODULES}


def test_no_probe_imports_another_probe():
    probes = _probe_modules()
    for mod in probes:
        path = ROOT / (mod.replace(".", "/") + ".py")
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            bad = [n for n in names if n in probes and n != mod]
            assert not bad, f"{mod} imports the probe {bad[0]}: share code through a runtime module instead"


def test_no_function_over_80_lines():
    long = []
    for f in sorted((ROOT / "hwprobe").rglob("*.py")):
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80:
                long.append(f"{f.relative_to(ROOT)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)")
    assert not long, long


def test_no_module_defines_a_top_level_name_twice():
    """A second ``def f`` silently replaces the first for every caller (a P2P helper once did: the loopback
    self-test called the wrong one and failed only on a GPU)."""
    twice = []
    for f in sorted((ROOT / "hwprobe").rglob("*.py")):
        seen: set[str] = set()
        for n in ast.parse(f.read_text()).body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if n.name in seen:
                    twice.append(f"{f.relative_to(ROOT)}:{n.lineno} {n.name}")
                seen.add(n.name)
    assert not twice, twice


def _rebound_parameters(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, function, parameter) where a function's own top-level statement rebinds a parameter to a value not
    computed from it: the caller's argument is then dead, and later uses read another type."""
    hits = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = fn.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        for st in fn.body:
            if not isinstance(st, ast.Assign):
                continue
            read = {x.id for x in ast.walk(st.value) if isinstance(x, ast.Name)}
            names = [n for t in st.targets for n in ([t] if isinstance(t, ast.Name) else getattr(t, "elts", []))]
            hits += [(st.lineno, fn.name, n.id) for n in names
                     if isinstance(n, ast.Name) and n.id in params and n.id not in read]
    return hits


def test_no_function_throws_away_a_parameter():
    """The P2P sweep point once rebound its ``sweep`` dict to a stopping rule on its first line; every P2P
    bandwidth record then failed on a GPU ('StoppingRule' object is not subscriptable) and no CPU test saw it."""
    found = [f"{f.relative_to(ROOT)}:{line} {fn}: {p}" for f in sorted((ROOT / "hwprobe").rglob("*.py"))
             for line, fn, p in _rebound_parameters(ast.parse(f.read_text()))]
    assert not found, found


def test_rebound_parameter_check_finds_the_p2p_bug():
    src = "def _point(ctx, sweep):\n    sweep = rule('sweep')\n    sweep[1].append(2)\n"
    ok = "def f(x=None):\n    if x is None:\n        x = 1\n    y = x\n    x = x + 1\n"
    assert _rebound_parameters(ast.parse(src)) == [(2, "_point", "sweep")]
    assert _rebound_parameters(ast.parse(ok)) == []


def test_probe_modules_live_in_their_family_folder():
    for mod in _probe_modules():
        assert mod.split(".")[2] in PROBE_FAMILIES, mod


def test_the_readme_layout_names_every_module_and_folder():
    """docs/extending.md's Layout block names each top-level module, package and tool (a moved module must move
    there too)."""
    text = (ROOT / "docs" / "extending.md").read_text()
    layout = text[text.index("## Layout"):]
    layout = layout[:layout.index("```", layout.index("```") + 3)]
    names = [f.name for f in (ROOT / "hwprobe").glob("*.py") if f.stem not in ("__init__", "__main__")]
    names += [f"{d.name}/" for d in (ROOT / "hwprobe").iterdir() if d.is_dir() and not d.name.startswith("_")]
    names += [f"{d.name}/" for d in (ROOT / "hwprobe" / "probes").iterdir() if d.is_dir() and d.name != "__pycache__"]
    names += [f.name for f in (ROOT / "tools").iterdir() if f.suffix in (".py", ".sh")]
    missing = [n for n in names if n not in layout]
    assert not missing, f"docs/extending.md's Layout does not name {missing}"


def test_one_load_profile():
    """Two ``load_profile`` functions once behaved differently (one rebuilt a killed run, one did not)."""
    defs = [f"{f.relative_to(ROOT)}:{n.lineno}" for f in sorted((ROOT / "hwprobe").rglob("*.py"))
            for n in ast.walk(ast.parse(f.read_text())) if isinstance(n, ast.FunctionDef) and n.name == "load_profile"]
    # the package's own is its lazy export of profile_build's
    assert sorted(d.split(":")[0] for d in defs) == ["hwprobe/__init__.py", "hwprobe/profile_build.py"], defs


def test_every_tool_is_listed_in_the_tools_readme():
    """tools/ holds maintained tools only, each named in tools/README.md (one-off experiments live in history);
    a file in a subfolder is named by its own name or its folder's."""
    text = (ROOT / "tools" / "README.md").read_text()
    tools = ROOT / "tools"
    files = [p.relative_to(tools) for p in tools.rglob("*") if p.suffix in (".py", ".sh", ".toml", ".c")]
    missing = [str(f) for f in files
               if f.name not in text and (len(f.parts) == 1 or f"{f.parts[0]}/" not in text)]
    assert not missing, f"tools/README.md does not name {missing}"


def test_plots_live_in_one_package():
    """Every module that draws (imports matplotlib) is in hwprobe/report/plots/."""
    drawing = [str(f.relative_to(ROOT)) for f in sorted((ROOT / "hwprobe").rglob("*.py"))
               if any(isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                   (getattr(n, "module", None) or a.name).startswith("matplotlib") for a in n.names)
                   for n in ast.walk(ast.parse(f.read_text())))]
    assert drawing and all(d.startswith("hwprobe/report/plots/") for d in drawing), drawing


def _face_imports(source: str, face_names: set[str]) -> list[int]:
    """Lines that import the package's face itself: ``import hwprobe`` or ``from hwprobe import <a name the face
    defines>`` (``from hwprobe import keys`` names a module, not the face)."""
    return [n.lineno for n in ast.walk(ast.parse(source))
            if (isinstance(n, ast.Import) and any(a.name == "hwprobe" for a in n.names))
            or (isinstance(n, ast.ImportFrom) and n.module == "hwprobe" and not n.level
                and any(a.name in face_names for a in n.names))]


def test_what_the_package_exports_lazily_does_not_import_the_package():
    """hwprobe/__init__ hands on run, load_profile and analyze by lazy imports, the only imports that run up the
    house; a module it imports that imports the face back closes a loop (profile_build once took __version__ from
    it: hwprobe.results.version() reads it from below)."""
    face = ROOT / "hwprobe" / "__init__.py"
    tree = ast.parse(face.read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} | {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    exported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    files = [f for m in exported for f in ([ROOT / (m.replace(".", "/") + ".py")] if
                                            (ROOT / (m.replace(".", "/") + ".py")).exists() else
                                            sorted((ROOT / m.replace(".", "/")).rglob("*.py")))]
    assert len(exported) >= 3 and files
    back = [f"{f.relative_to(ROOT)}:{line}" for f in files for line in _face_imports(f.read_text(), names)]
    assert not back, back


def test_face_import_check_finds_the_version_import():
    names = {"__version__", "run", "load_profile", "analyze"}
    assert _face_imports("def f():\n    from hwprobe import __version__\n", names) == [2]
    assert _face_imports("import hwprobe\nfrom hwprobe import keys as K\nfrom . import run\n", names) == [1]
