"""What every export writer shares: the Export it returns, the provenance of a number, the device's metadata,
the ceiling lookups, and the user's --set values."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hwprobe.errors import InputError
from hwprobe.roofline import is_measured
from hwprobe.vocab import ExecUnit


@dataclass
class Export:
    format: str
    text: str
    filename: str
    sidecar: dict[str, Any] | None = None      # provenance where the format has no room for it
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Format:
    """One export format: its name (``hwprobe export -f NAME``), its writer, one line of help, and whether it takes
    ``--set KEY=VALUE`` (fields the profile may lack). A writer is ``write(profile, name=, path=, source=,
    overrides=) -> Export``."""

    name: str
    write: Callable[..., Export]
    help: str
    takes_set: bool = False


def provenance_of(c, measured: bool = True) -> dict[str, Any]:
    """What a number is: a measured ceiling (dense), the metric and probe behind it, and its clock. A spec-derived
    profile's numbers are expectations and say so."""
    what = "measured ceiling" if measured else "spec-derived expectation, not measured"
    return {"what": what, "dense": True, "metric": c.metric, "probe": c.probe, "clock_mhz": c.clock_mhz,
            "clock_source": getattr(c, "clock_source", None), "value": c.value, "unit": c.unit}


def run_meta(profile, source: str) -> dict[str, Any]:
    d = profile.device
    return {"tool": "hwprobe", "source": source, "device": d.get("name") or d.get("model"), "arch": d.get("arch"),
            "uuid": d.get("uuid"), "profile_created_utc": profile.created_utc,
            "hwprobe_version": profile.hwprobe_version, "schema_version": profile.schema_version,
            "partial": profile.partial, "measured": is_measured(profile)}


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def tensor_ceiling(profile, precision: str, path: str):
    from hwprobe import roofline

    try:
        return roofline.peak(profile, precision, ExecUnit.TENSOR_CORE, path)
    except roofline.RooflineError:
        return None


def fastest_p2p(profile) -> tuple[Any, float | None, str]:
    """The fastest GPU-to-GPU one-way ceiling and the lowest latency among the profile's p2p links (schema v2)."""
    best, lat = None, None
    for name, link in (getattr(profile, "links", None) or {}).items():
        if link.kind != "p2p":
            continue
        for key, c in link.ceilings.items():
            if ("uni" in key or "read" in key or "write" in key) and (best is None or c.value > best[1].value):
                best = (f"{name}/{key}", c)
        for v in link.latency_s.values():
            lat = v if lat is None else min(lat, v)
    return (best[1] if best else None), lat, best[0] if best else ""


def apply_overrides(cfg: dict[str, Any], prov: dict[str, Any], overrides: dict[str, float],
                    fmt: str) -> list[str]:
    """Values the user gives (``--set KEY=VALUE``) in place of missing or profile ones, said in provenance. Every
    field of these formats is a rate, a size or a latency: a value that is not a finite number above 0 is refused.
    Returns one note per value the profile had and --set replaced (the CLI says them on stderr)."""
    notes = []
    for k, v in overrides.items():
        if k not in cfg:
            raise InputError(f"--set {k}: {fmt} has no such field; fields: {', '.join(x for x in cfg if x != 'name')}")
        if not math.isfinite(v) or v <= 0:
            raise InputError(f"--set {k}={v:g}: {k} is a rate, size or latency; give a finite number above 0")
        if cfg[k] is not None:
            was = prov[k] if isinstance(prov[k], str) else f"{prov[k]['what']} {prov[k]['metric']}"
            prov[k] = f"given by the user (--set), replacing the profile's {cfg[k]:g} ({was})"
            notes.append(f"--set {k}={v:g} replaces the profile's {cfg[k]:g} ({was})")
        else:
            prov[k] = "given by the user (--set), not measured"
        cfg[k] = v
    return notes


def refuse_missing(cfg: dict[str, Any], required: tuple[str, ...], fmt: str) -> None:
    """Refuse, in one line, an export whose consumer would crash on or invent a required field."""
    miss = [k for k in required if cfg.get(k) is None]
    if miss:
        raise InputError(f"{fmt} needs {', '.join(miss)}, which this profile does not measure; give them with "
                         f"--set {miss[0]}=VALUE (recorded as user-given) or measure them")


