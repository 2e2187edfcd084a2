"""Suite parameters, checked against each probe's declaration before anything is measured.

A probe declares its parameters once: the signature's defaults give each one's type (a tuple default means a
list of that element type), and the ``@probe`` decorator adds allowed values (``choices``) and ranges
(``ranges``). Numbers are never negative unless a range says otherwise. A bad value is one line naming the
file, the probe and the parameter.
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any

from hwprobe.errors import InputError


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: type | None                  # int, float, bool, str, tuple (a list), or None (anything)
    item: type | None = None           # element type of a list
    choices: tuple[Any, ...] = ()
    lo: float | None = 0.0
    hi: float | None = None


def _type_of(value: Any) -> type | None:
    for t in (bool, int, float, str, tuple):
        if isinstance(value, t):
            return t
    return None


def _from_annotation(ann: Any) -> type | None:
    """``int | None`` -> int (annotations may be strings under ``from __future__ import annotations``)."""
    if isinstance(ann, str):
        for name, t in (("bool", bool), ("int", int), ("float", float), ("str", str), ("tuple", tuple)):
            if ann.replace(" ", "").split("|")[0] == name or ann.startswith(f"{name} |"):
                return t
        return None
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        return _from_annotation(args[0]) if len(args) == 1 else None
    return ann if ann in (bool, int, float, str, tuple) else None


def specs_of(func, choices: dict[str, tuple] | None = None,
             ranges: dict[str, tuple[float | None, float | None]] | None = None) -> dict[str, ParamSpec]:
    out = {}
    for name, p in list(inspect.signature(func).parameters.items())[1:]:
        kind = _type_of(p.default) if p.default is not None else _from_annotation(p.annotation)
        item = None
        if kind is tuple and p.default:
            item = _type_of(p.default[0])
        lo, hi = (ranges or {}).get(name, (0.0, None))
        out[name] = ParamSpec(name, kind, item, tuple((choices or {}).get(name, ())), lo, hi)
    return out


def _check_scalar(spec: ParamSpec, kind: type | None, v: Any, what: str) -> None:
    if kind is None:
        return
    ok = (isinstance(v, bool) if kind is bool else
          isinstance(v, (int, float)) and not isinstance(v, bool) if kind is float else
          isinstance(v, int) and not isinstance(v, bool) if kind is int else isinstance(v, kind))
    if not ok:
        words = {float: "a number", int: "a whole number", bool: "true or false", str: "a string", tuple: "a list"}
        raise InputError(f"{what} must be {words[kind]}, not {v!r}")
    if kind in (int, float):
        if spec.lo is not None and v < spec.lo:
            raise InputError(f"{what} must be >= {spec.lo:g}, not {v!r}")
        if spec.hi is not None and v > spec.hi:
            raise InputError(f"{what} must be <= {spec.hi:g}, not {v!r}")
    if spec.choices and v not in spec.choices:
        raise InputError(f"{what} {v!r} is not one of: {', '.join(map(str, spec.choices))}")


def check(spec: ParamSpec, value: Any, where: str) -> None:
    what = f"{where}: parameter {spec.name!r}"
    if value is None:
        return
    if spec.kind is tuple:
        if not isinstance(value, (list, tuple)):
            raise InputError(f"{what} must be a list (e.g. [{value!r}]), not {value!r}")
        for v in value:
            _check_scalar(spec, spec.item, v, f"{what}: item")
        return
    _check_scalar(spec, spec.kind, value, what)
