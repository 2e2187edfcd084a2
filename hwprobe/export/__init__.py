"""Measured ceilings handed to other tools, in their own shapes, with measured values in place of datasheet ones.

Each format is one module of this package that lists its ``Format``s in ``FORMATS``: the registry finds every
module here, so a new format is one file (and its test); ``hwprobe export -f`` offers what the registry holds.

No number stands in for a measurement: a field a consumer requires and the profile lacks is refused (or given
by the user with ``--set KEY=VALUE``, said so in the provenance); an optional one is omitted with a warning.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from hwprobe.errors import InputError
from hwprobe.export.common import Export, Format, slug
from hwprobe.export.flat import COLUMNS, rows
from hwprobe.roofline import is_measured
from hwprobe.vocab import Path

__all__ = ["COLUMNS", "Export", "Format", "export", "formats", "rows"]


@cache
def formats() -> dict[str, Format]:
    """Every format of every module in this package, by name."""
    out: dict[str, Format] = {}
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: (m.name != "flat", m.name)):   # json, csv first
        if m.name == "common":
            continue
        for f in getattr(importlib.import_module(f"{__name__}.{m.name}"), "FORMATS", []):
            if f.name in out:
                raise RuntimeError(f"export format {f.name!r} is defined twice")
            out[f.name] = f
    return out


def export(profile, fmt: str, *, path: str = Path.LIBRARY, name: str | None = None, source: str = "",
           overrides: dict[str, float] | None = None) -> Export:
    """``profile`` in the shape ``fmt`` expects. ``path`` picks library or instruction ceilings where a format
    has one number per precision (the libraries' is what frameworks reach)."""
    fmt = fmt.strip().lower()
    known = formats()
    if fmt not in known:
        raise InputError(f"unknown export format {fmt!r}; formats: {', '.join(known)}")
    from hwprobe import roofline

    f = known[fmt]
    path = roofline.norm_path(path)
    dev = profile.device.get("name") or profile.device.get("model") or "device"
    name = name or f"{slug(dev)}_{'measured' if is_measured(profile) else 'expected'}"
    if overrides and not f.takes_set:
        takers = ", ".join(k for k, v in known.items() if v.takes_set)
        raise InputError(f"--set applies to {takers} exports (fields the profile may lack), not {fmt}, which holds "
                         "the profile's figures only")
    return f.write(profile, name=name, path=path, source=source, overrides=overrides)
