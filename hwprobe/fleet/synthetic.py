"""Synthetic fleets from one real profile: for tests, the 1,000-file benchmark and demos of ``compare``.

Every unit is the base profile with each ceiling scaled by 1 + N(0, noise), its own host and UUID; some units
get a fault with the evidence a real run would record (a lower power limit and clocks with sw_power_cap, a hot
GPU with hw_thermal_slowdown, an older driver, a slow memory system that records nothing unusual).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hwprobe.fleet.records import ceilings_of
from hwprobe.results import PROFILE
from hwprobe.vocab import Precision

TENSOR_LIBRARY = (Precision.FP16, Precision.BF16, Precision.FP8, Precision.INT8, Precision.TF32)


def _scale(d: dict[str, Any], key: str, factor: float, **fields) -> None:
    parts = key.split(".")
    c = (d["memory"][parts[0]]["bandwidth"] if parts[-1] == "bandwidth" else d["compute"][parts[0]][parts[1]][parts[2]])
    c["value"] *= factor
    for name in ("theory_at_clock",):
        if c.get(name) and fields.get("clock_mhz") and c.get("clock_mhz"):
            c[name] *= fields["clock_mhz"] / c["clock_mhz"]
    c.update(fields)
    for name in ("ratio_at_clock", "ratio_at_max_clock", "ratio_datasheet", "per_clock"):
        c.pop(name, None)                   # derived fields: recomputed by whoever loads the profile


def fault(d: dict[str, Any], kind: str) -> None:
    """Give a unit one fault, with what a real run records beside it."""
    keys = list(ceilings_of(d))
    lib = [k for k in keys if k.split(".")[0] in TENSOR_LIBRARY and ".tensor_core.library" in k]
    if kind == "power_cap":
        d["device"].setdefault("nvml", {})["power_limit_w"] = 500.0
        for k in lib:
            _scale(d, k, 0.80, clock_mhz=1560.0, throttle_reasons=["sw_power_cap"])
    elif kind == "thermal":
        d["device"].setdefault("nvml", {})["temp_c"] = 86
        for k in lib:
            _scale(d, k, 0.86, clock_mhz=1700.0, throttle_reasons=["hw_thermal_slowdown", "sw_thermal_slowdown"])
    elif kind == "driver":
        d["device"]["driver_version"] = "550.54.15"
        d.setdefault("environment", {}).setdefault("cuda", {})["cublas"] = 120400
        for k in lib:
            _scale(d, k, 0.90)
    elif kind == "memory":
        _scale(d, "dram.bandwidth", 0.84)
    else:
        raise ValueError(f"unknown fault {kind!r}")


def make_fleet(base: dict[str, Any], n: int, faults: dict[int, str] | None = None, noise: float = 0.006,
               seed: int = 0) -> list[dict[str, Any]]:
    """``n`` profile dicts from ``base``; ``faults`` maps unit index -> fault kind."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        d = copy.deepcopy(base)
        d["environment"] = dict(d.get("environment") or {}, host=f"node-{i:04d}")
        d["device"] = dict(d["device"], uuid=f"GPU-synthetic-{i:04d}")
        for k in ceilings_of(d):
            _scale(d, k, float(1 + rng.normal(0, noise)))
        if faults and i in faults:
            fault(d, faults[i])
        out.append(d)
    return out


def write_fleet(profiles: list[dict[str, Any]], out: Path | str) -> list[Path]:
    """Each profile as out/node-XXXX/profile.json."""
    out = Path(out)
    paths = []
    for d in profiles:
        p = out / d["environment"]["host"] / PROFILE
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(d))
        paths.append(p)
    return paths
