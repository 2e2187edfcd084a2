"""hwprobe's own flat forms: one row per compute ceiling (precision, unit, path, dense or 2:4 sparse) and per memory
level (B/s, latency, capacity), with the metric, probe and clock behind each, as JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from hwprobe.export.common import Export, Format, run_meta
from hwprobe.roofline import is_measured
from hwprobe.vocab import SPARSE_SUFFIX

COLUMNS = ("kind", "precision", "unit", "path", "sparsity", "level", "value", "value_unit", "measured", "metric",
           "probe", "clock_mhz", "clock_source", "theory_at_clock", "theory_at_max_clock", "datasheet",
           "latency_s", "capacity_bytes", "device", "profile_created_utc", "hwprobe_version")


def rows(profile) -> list[dict[str, Any]]:
    """The flat table: compute ceilings, then memory levels."""
    dev = profile.device.get("name") or profile.device.get("model") or ""
    common = {"device": dev, "profile_created_utc": profile.created_utc, "hwprobe_version": profile.hwprobe_version,
              "measured": is_measured(profile)}
    out = []
    for prec, units in profile.compute.items():
        for unit, paths in units.items():
            for key, c in paths.items():
                sparse = key.endswith(SPARSE_SUFFIX)
                out.append({**common, "kind": "compute", "precision": prec, "unit": unit,
                            "path": key[: -len(SPARSE_SUFFIX)] if sparse else key,
                            "sparsity": "2:4 (dense-equivalent)" if sparse else "dense", "value": c.value,
                            "value_unit": c.unit, "metric": c.metric, "probe": c.probe, "clock_mhz": c.clock_mhz,
                            "clock_source": getattr(c, "clock_source", None), "theory_at_clock": c.theory_at_clock,
                            "theory_at_max_clock": c.theory_at_max_clock, "datasheet": c.datasheet})
    for level, m in profile.memory.items():
        b = m.bandwidth
        if b is None or b.value is None:     # a latency-only level (the far L2 partition) holds no ceiling
            continue
        out.append({**common, "kind": "memory", "level": level, "value": b.value,
                    "value_unit": "B/s", "metric": b.metric, "probe": b.probe,
                    "clock_mhz": b.clock_mhz, "clock_source": getattr(b, "clock_source", None),
                    "theory_at_clock": b.theory_at_clock, "theory_at_max_clock": b.theory_at_max_clock,
                    "datasheet": b.datasheet, "latency_s": m.latency_s,
                    "capacity_bytes": m.capacity_bytes, "sparsity": None})
    return [{k: r.get(k) for k in COLUMNS} for r in out]




def write_csv(profile, *, name: str, **_: Any) -> Export:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows(profile))
    return Export("csv", buf.getvalue(), f"{name}.ceilings.csv")


def write_json(profile, *, name: str, source: str = "", **_: Any) -> Export:
    doc = {"format": "hwprobe-ceilings", "version": 1, "meta": run_meta(profile, source),
           "what": "measured ceilings (best valid measurement per slot); compute dense unless sparsity says "
                   "2:4; clock_mhz: the SM clock behind the figure (DRAM: the memory clock)",
           "ceilings": rows(profile)}
    return Export("json", json.dumps(doc, indent=2, default=str) + "\n", f"{name}.ceilings.json")


FORMATS = [Format("json", write_json, "hwprobe's flat ceilings table as JSON, with the run's metadata"),
           Format("csv", write_csv, "hwprobe's flat ceilings table as CSV")]
