"""The params keys that cross modules and the flags as (code, text): JSON unchanged, old profiles read by code."""

import ast
import copy
import json
import pathlib
import pickle

import pytest

from hwprobe import keys as K
from hwprobe.flags import Code, Flag, code_of, first, has
from hwprobe.measurement import Measurement
from hwprobe.profile_build import from_measurements, load_profile
from tests.helpers import sample_measurements


def test_every_key_says_what_it_holds():
    assert len(K.KEYS) == len(set(K.KEYS)) >= 18
    for name, key in K.KEYS.items():
        assert name == key and name.islower() and " " not in name
        assert isinstance(key.type, type) and key.meaning and key.meaning[0].islower()


def test_a_key_is_its_string_in_params_json_copies_and_pickles():
    m = Measurement(probe="p", metric="x", kind="compute", value=1.0, unit="FLOP/s",
                    params={K.KERNEL_SM_MHZ: 1980.0, K.PCT_AT: {"nvml": 0.98}})
    text = json.dumps(m.to_dict()["params"])
    assert text == '{"kernel_sm_mhz": 1980.0, "pct_at": {"nvml": 0.98}}'
    assert json.loads(text)[K.KERNEL_SM_MHZ] == 1980.0                  # a plain dict read back, by the constant
    assert pickle.loads(pickle.dumps(K.CYCLES)) == "cycles" and copy.deepcopy(K.MAP) is K.MAP


def test_flags_are_code_and_text_stored_as_before():
    f = Flag(Code.CLOCK_DISAGREEMENT, "kernel 1980 MHz vs NVML 1755 MHz (-11.4%)")
    assert f == "clock_disagreement: kernel 1980 MHz vs NVML 1755 MHz (-11.4%)"
    assert (f.code, f.text) == ("clock_disagreement", "kernel 1980 MHz vs NVML 1755 MHz (-11.4%)")
    assert Flag(Code.CLOCK_LAG) == "clock_lag" and Flag(Code.CLOCK_LAG).text == ""
    assert json.dumps([f, Flag("contended", "a: b")]) == json.dumps([str(f), "contended: a: b"])
    old = ["clock_lag", "contended: 41% of theory", "above_theory: 1 > 1.03 x 0.9 (x)"]       # as profiles stored them
    assert [code_of(x) for x in old] == ["clock_lag", "contended", "above_theory"]
    assert has(old, Code.CONTENDED) and has(old, "clock_lag") and not has(old, Code.CLOCK_DISAGREEMENT)
    assert not has(["clock_disagreement_x: made up"], Code.CLOCK_DISAGREEMENT)    # a code, not a prefix
    assert first(old, Code.ABOVE_THEORY) == old[2] and first(old, Code.SASS_MISMATCH) is None
    assert pickle.loads(pickle.dumps(f)).code == "clock_disagreement" and copy.deepcopy(f).text == f.text


def test_a_profile_round_trips_its_flags_and_files_by_keys(tmp_path):
    ms = sample_measurements()
    ms[0].flags.append(Flag(Code.CLOCK_LAG))
    ms[0].params[K.THEORY_CLOCK_SOURCE] = "kernel"
    ms[0].params[K.KERNEL_SM_MHZ] = 1830.0
    prof = from_measurements({"kind": "gpu", "name": "NVIDIA H200"}, ms)
    prof.save(tmp_path / "profile.json")
    back = load_profile(tmp_path)
    ceilings = [c for units in back.compute.values() for paths in units.values() for c in paths.values()]
    lagged = [c for c in ceilings if has(c.flags, Code.CLOCK_LAG)]
    assert lagged and all(isinstance(f, str) for c in ceilings for f in c.flags)
    assert lagged[0].clock_source == "max"               # Ceiling.of reads the flag by code: theory at max clock


def test_one_device_kind_rule():
    from hwprobe.device.info import device_kind

    assert device_kind({"kind": "cpu", "sms": 3}) == "cpu" and device_kind({"kind": "gpu"}) == "gpu"
    assert device_kind({"name": "NVIDIA H200", "sms": 132}) == "gpu" and device_kind({"arch": "sm_90"}) == "gpu"
    # a CPU whose ISA flags spell "sm" somewhere (the rebuild's old guess, "sm" in str(record), called it a GPU)
    assert device_kind({"model": "Intel(R) Xeon(R)", "flags": ["smx", "avx2"]}) == "cpu"


# --- no bare params key crosses a module ---------------------------------------------------------------------------

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARGS = "# a probe's arguments"      # a line reading a suite entry's params (the probe's arguments), not a record's


def _params_like(n: ast.AST, names: set[str]) -> bool:
    """``m.params``, ``params``, a name bound to either, ``d.get("params")``, ``d["params"]``, ``(... or {})``."""
    if isinstance(n, ast.BoolOp) and isinstance(n.op, ast.Or):
        return _params_like(n.values[0], names)
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args:
        return isinstance(n.args[0], ast.Constant) and n.args[0].value == "params"
    return ((isinstance(n, ast.Attribute) and n.attr == "params") or (isinstance(n, ast.Name) and n.id in names)
            or (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "params"))


def _dict_keys(d: ast.AST) -> list[ast.Constant]:
    return [k for k in getattr(d, "keys", []) if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def params_keys(source: str) -> list[tuple[int, int, str, str]]:
    """(line, column, key, "w" or "r") for each string literal used as a record's params key: written in a
    ``params=`` dict or a dict bound to a name passed as ``params=``, or read by ``[...]``, ``.get``, ``in``."""
    tree, lines = ast.parse(source), source.splitlines()
    hits: list[tuple[ast.Constant, str]] = []
    for scope in (n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef))):
        names = {"params"} | {k.value.id for k in ast.walk(scope) if isinstance(k, ast.keyword)
                              and k.arg == "params" and isinstance(k.value, ast.Name)}
        names |= {a.targets[0].id for a in ast.walk(scope) if isinstance(a, ast.Assign) and len(a.targets) == 1
                  and isinstance(a.targets[0], ast.Name) and _params_like(a.value, set())}
        for n in ast.walk(scope):
            if isinstance(n, ast.Subscript) and _params_like(n.value, names) and isinstance(n.slice, ast.Constant):
                hits.append((n.slice, "w" if isinstance(n.ctx, ast.Store) else "r"))
            elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.args
                  and n.func.attr in ("get", "setdefault", "pop") and _params_like(n.func.value, names)):
                hits.append((n.args[0], "r"))
            elif isinstance(n, ast.Compare) and isinstance(n.ops[0], ast.In) and _params_like(n.comparators[0], names):
                hits.append((n.left, "r"))
            elif isinstance(n, ast.keyword) and n.arg == "params":
                hits += [(k, "w") for k in _dict_keys(n.value)]
            elif isinstance(n, ast.Dict):
                hits += [(k, "w") for k, v in zip(n.keys, n.values, strict=True)
                         if isinstance(k, ast.Constant) and k.value == "params" for k in _dict_keys(v)]
            elif isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in n.targets):
                hits += [(k, "w") for k in _dict_keys(n.value)]
    return sorted({(c.lineno, c.col_offset, c.value, rw) for c, rw in hits
                   if isinstance(c, ast.Constant) and isinstance(c.value, str) and ARGS not in lines[c.lineno - 1]})


def _bare_keys() -> dict[str, list[tuple[int, int, str, str]]]:
    return {f.relative_to(ROOT).as_posix(): params_keys(f.read_text()) for f in sorted((ROOT / "hwprobe").rglob("*.py"))
            if f.name != "keys.py"}


def test_a_declared_key_is_never_written_out():
    found = [f"{f}:{line} {key!r}" for f, hits in _bare_keys().items() for line, _, key, _ in hits if key in K.KEYS]
    assert not found, "use the constant in hwprobe.keys:\n" + "\n".join(found)


def test_a_key_read_outside_the_probes_is_named_where_another_module_writes_it():
    """Issue 34: 68 params keys were bare strings, each written by a probe and read by the report, the analysis, the
    fleet or the predictor; a key renamed at one end then read nothing, silently. A module outside hwprobe/probes/
    reads a bare key only where it writes that key itself."""
    found = []
    for f, hits in _bare_keys().items():
        own = {key for _, _, key, rw in hits if rw == "w"}
        if not f.startswith("hwprobe/probes/"):
            found += [f"{f}:{line} {key!r}" for line, _, key, rw in hits if rw == "r" and key not in own]
    assert not found, "name the key in hwprobe.keys and use it at both ends:\n" + "\n".join(found)


@pytest.mark.parametrize("src, want", [
    ('ctx.record("x", 1.0, params={"n": 4, K.CYCLES: 2})\n', [(1, 29, "n", "w")]),
    ('def f(m):\n    p = m.params\n    return p["op"], p.get("ranks"), "scope" in p\n',
     [(3, 13, "op", "r"), (3, 26, "ranks", "r"), (3, 36, "scope", "r")]),
    ('def f(d):\n    return (d.get("params") or {}).get("points")\n', [(2, 39, "points", "r")]),
    ('def f(ctx):\n    p = {"bytes": 1}\n    p["curve"] = []\n    return ctx.record(params=p)\n',
     [(2, 9, "bytes", "w"), (3, 6, "curve", "w")]),
    ('out = {"metric": "x", "params": {"health": {}}}\n', [(1, 33, "health", "w")]),
    ('have = e.params.get("precisions")  # a probe\'s arguments\nn = m.params[K.M]\n', []),
])
def test_the_key_scan_finds_each_form(src, want):
    assert params_keys(src) == want
