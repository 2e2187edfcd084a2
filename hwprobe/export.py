"""Measured ceilings handed to other tools, in their own shapes, with measured values in place of datasheet ones.

- ``json`` / ``csv``: hwprobe's stable flat form: one row per compute ceiling (precision, unit, path, dense or
  2:4 sparse) and per memory level (B/s, latency, capacity), with the metric, probe and clock behind each;
- ``llm-viewer``: a pasteable entry for LLM-Viewer's ``hardware_params`` dict (Python literals; ``bandwidth``
  B/s, ``FP16``/``INT8`` op/s, dense; ``onchip_buffer`` bytes, which LLM-Viewer takes as the register file
  size), provenance in comments above it;
- ``llm-analysis``: llm-analysis's ``gpu_configs`` JSON (GB/s, TFLOPS; ``mem_per_GPU_in_GB`` in GiB, as
  llm-analysis multiplies it by 1024**3). Its loader reads every JSON file in that folder and takes no extra
  keys: nothing but the config goes there, the provenance goes to stderr or ``--provenance FILE``;
- ``ert``: the Empirical Roofline Toolkit's ``roofline.json`` (``empirical`` and ``spec`` blocks, each with
  ``gflops`` and ``gbytes`` data, highest roof first), the spec block from the datasheet/theory figures.

No number stands in for a measurement: a field a consumer requires and the profile lacks is refused (or given
by the user with ``--set KEY=VALUE``, said so in the provenance); an optional one is omitted with a warning.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from hwprobe.errors import InputError
from hwprobe.roofline import is_measured

FORMATS = ("json", "csv", "llm-viewer", "llm-analysis", "ert")
SPARSE_SUFFIX = "_sparse24"
COLUMNS = ("kind", "precision", "unit", "path", "sparsity", "level", "value", "value_unit", "measured", "metric",
           "probe", "clock_mhz", "clock_source", "theory_at_clock", "theory_at_max_clock", "datasheet",
           "latency_s", "capacity_bytes", "device", "profile_created_utc", "hwprobe_version")


@dataclass
class Export:
    format: str
    text: str
    filename: str
    sidecar: dict[str, Any] | None = None      # provenance where the format has no room for it
    notes: list[str] = field(default_factory=list)


def _prov(c, measured: bool = True) -> dict[str, Any]:
    """What a number is: a measured ceiling (dense), the metric and probe behind it, and its clock. A spec-derived
    profile's numbers are expectations and say so."""
    what = "measured ceiling" if measured else "spec-derived expectation, not measured"
    return {"what": what, "dense": True, "metric": c.metric, "probe": c.probe, "clock_mhz": c.clock_mhz,
            "clock_source": getattr(c, "clock_source", None), "value": c.value, "unit": c.unit}


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


def _meta(profile, source: str) -> dict[str, Any]:
    d = profile.device
    return {"tool": "hwprobe", "source": source, "device": d.get("name") or d.get("model"), "arch": d.get("arch"),
            "uuid": d.get("uuid"), "profile_created_utc": profile.created_utc,
            "hwprobe_version": profile.hwprobe_version, "schema_version": profile.schema_version,
            "partial": profile.partial, "measured": is_measured(profile)}


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def _tc(profile, precision: str, path: str):
    from hwprobe import roofline

    try:
        return roofline.peak(profile, precision, "tensor_core", path)
    except roofline.RooflineError:
        return None


def _p2p(profile) -> tuple[Any, float | None, str]:
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


def _apply(cfg: dict[str, Any], prov: dict[str, Any], overrides: dict[str, float], fmt: str) -> list[str]:
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


def _missing(cfg: dict[str, Any], required: tuple[str, ...], fmt: str) -> None:
    """Refuse, in one line, an export whose consumer would crash on or invent a required field."""
    miss = [k for k in required if cfg.get(k) is None]
    if miss:
        raise InputError(f"{fmt} needs {', '.join(miss)}, which this profile does not measure; give them with "
                         f"--set {miss[0]}=VALUE (recorded as user-given) or measure them")


def llm_viewer(profile, name: str, path: str, overrides: dict[str, float] | None = None) -> Export:
    """A pasteable entry for LLM-Viewer's ``hardware_params`` dict (Python literals), provenance as comments.
    Every key LLM-Viewer reads must be there: a profile without an INT8 figure is refused, not left to crash
    LLM-Viewer's 8-bit runs."""
    m = is_measured(profile)
    dram = profile.memory.get("dram")
    fp16, int8 = _tc(profile, "fp16", path), _tc(profile, "int8", path)
    d = profile.device
    regs = d.get("regs_per_sm") and d.get("sms") and d["regs_per_sm"] * 4 * d["sms"]
    entry = {"bandwidth": dram.bandwidth.value if dram and dram.bandwidth else None,
             "FP16": fp16.value if fp16 else None, "INT8": int8.value if int8 else None,
             "onchip_buffer": regs or None}
    prov = {"bandwidth": _prov(dram.bandwidth, m) if dram and dram.bandwidth else "not measured",
            "FP16": _prov(fp16, m) if fp16 else f"no fp16 tensor_core {path} ceiling measured",
            "INT8": _prov(int8, m) if int8 else f"no int8 tensor_core {path} ceiling measured",
            "onchip_buffer": ("device-reported register file (regs_per_sm x 4 B x SMs), LLM-Viewer's on-chip "
                              "buffer convention; not a measurement") if regs else "device reports no register file"}
    notes = _apply(entry, prov, overrides or {}, "llm-viewer")
    _missing(entry, tuple(entry), "llm-viewer")
    meta = _meta(profile, "LLM-Viewer hardware_params entry")
    lines = [f"# hwprobe {meta['hwprobe_version']}: {meta['device']} ({'measured' if m else 'spec-derived'}), "
             f"profile {meta['profile_created_utc']}; paste into hardware_params in LLM-Viewer's hardwares/"]
    for k, v in prov.items():
        what = v if isinstance(v, str) else f"{v['what']}, {v['metric']} ({v['probe']}) at {v['clock_mhz']} MHz"
        lines.append(f"#   {k}: {what}")
    body = ", ".join(f"{json.dumps(k)}: {float(v)!r}" if k != "onchip_buffer" else f"{json.dumps(k)}: {int(v)!r}"
                     for k, v in entry.items())
    lines.append(f"{json.dumps(name)}: {{{body}}},")
    return Export("llm-viewer", "\n".join(lines) + "\n", f"{name}.llm-viewer.py",
                  {"meta": meta, "numbers": prov}, notes)


LLM_ANALYSIS_REQUIRED = ("mem_per_GPU_in_GB", "hbm_bandwidth_in_GB_per_sec", "intra_node_bandwidth_in_GB_per_sec",
                         "intra_node_min_message_latency", "peak_fp16_TFLOPS")
LLM_ANALYSIS_DEFAULTS = {"peak_i8_TFLOPS": "llm-analysis assumes 2x the FP16 peak",
                         "peak_i4_TFLOPS": "llm-analysis assumes 4x the FP16 peak",
                         "inter_node_bandwidth_in_GB_per_sec": "llm-analysis assumes 200 GB/s"}


def llm_analysis(profile, name: str, path: str, overrides: dict[str, float] | None = None) -> Export:
    """llm-analysis's ``gpu_configs`` JSON: its required fields all present (refused otherwise), its optional
    ones omitted with a warning where not measured; no null for llm-analysis to fill in or trip on."""
    m = is_measured(profile)
    d = profile.device
    dram = profile.memory.get("dram")
    fp16, int8, int4 = (_tc(profile, p, path) for p in ("fp16", "int8", "int4"))
    link, lat, link_name = _p2p(profile)
    cfg = {"name": name, "mem_per_GPU_in_GB": round(d["mem_bytes"] / 2**30, 3) if d.get("mem_bytes") else None,
           "hbm_bandwidth_in_GB_per_sec": dram.bandwidth.value / 1e9 if dram and dram.bandwidth else None,
           "intra_node_bandwidth_in_GB_per_sec": link.value / 1e9 if link else None,
           "intra_node_min_message_latency": lat,
           "peak_fp16_TFLOPS": fp16.value / 1e12 if fp16 else None,
           "peak_i8_TFLOPS": int8.value / 1e12 if int8 else None,
           "peak_i4_TFLOPS": int4.value / 1e12 if int4 else None,
           "inter_node_bandwidth_in_GB_per_sec": None}
    prov = {"mem_per_GPU_in_GB": "device-reported total memory in GiB (llm-analysis multiplies by 1024**3)",
            "hbm_bandwidth_in_GB_per_sec": _prov(dram.bandwidth, m) if dram and dram.bandwidth else "not measured",
            "intra_node_bandwidth_in_GB_per_sec": dict(_prov(link, m), link=link_name) if link else
            "no GPU-to-GPU link measured in this profile",
            "intra_node_min_message_latency": "lowest measured p2p latency (s)" if lat else "not measured",
            "peak_fp16_TFLOPS": _prov(fp16, m) if fp16 else "not measured",
            "peak_i8_TFLOPS": _prov(int8, m) if int8 else "not measured",
            "peak_i4_TFLOPS": _prov(int4, m) if int4 else "no INT4 Tensor Core ceiling in this profile",
            "inter_node_bandwidth_in_GB_per_sec": "hwprobe does not measure inter-node links"}
    notes = _apply(cfg, prov, overrides or {}, "llm-analysis")
    _missing(cfg, LLM_ANALYSIS_REQUIRED, "llm-analysis")
    omitted = [k for k, v in cfg.items() if v is None]
    notes += [f"omitted (not measured): {k}: {LLM_ANALYSIS_DEFAULTS[k]}" for k in omitted]
    cfg = {k: v for k, v in cfg.items() if v is not None}
    return Export("llm-analysis", json.dumps(cfg, indent=4) + "\n", f"{name}.json",
                  {"meta": _meta(profile, "llm-analysis gpu_configs"), "numbers": prov}, notes)


def ert(profile) -> Export:
    """Every dense floating-point ceiling (both paths, labelled) and the L1/L2/DRAM/shared slopes; ERT plots
    GFLOP/s, so integer ceilings stay out."""
    measured = is_measured(profile)
    flops, spec_flops, labels = [], [], {}
    for prec, units in profile.compute.items():
        if prec.startswith("int"):
            continue
        for unit, paths in units.items():
            for key, c in paths.items():
                if key.endswith(SPARSE_SUFFIX):
                    continue
                label = f"{prec.upper()} {unit.replace('_', ' ')} {key} GFLOPs"
                flops.append([label, round(c.value / 1e9, 2)])
                labels[label] = _prov(c, measured)
                ref = c.datasheet or c.theory_at_max_clock
                if ref:
                    spec_flops.append([label, round(ref / 1e9, 2)])
    names = {"l1": "L1", "l2": "L2", "dram": "DRAM", "shared": "Shared"}
    gbytes, spec_bytes = [], []
    for level, m in profile.memory.items():
        if level in names and m.bandwidth:
            gbytes.append([names[level], round(m.bandwidth.value / 1e9, 2)])
            labels[names[level]] = _prov(m.bandwidth, measured)
            ref = m.bandwidth.datasheet or m.bandwidth.theory_at_max_clock
            if ref:
                spec_bytes.append([names[level], round(ref / 1e9, 2)])
    for rows_ in (flops, spec_flops, gbytes, spec_bytes):      # highest roof first: readers size axes from it
        rows_.sort(key=lambda r: r[1], reverse=True)
    doc = {"empirical": {"gflops": {"data": flops, "metadata": {}}, "gbytes": {"data": gbytes, "metadata": {}},
                         "metadata": {"hwprobe": _meta(profile, "ERT roofline.json"), "numbers": labels}},
           "spec": {"gflops": {"data": spec_flops}, "gbytes": {"data": spec_bytes},
                    "metadata": {"what": "datasheet figures where published, else theory at the max clock"}}}
    return Export("ert", json.dumps(doc, indent=2) + "\n", "roofline.json")


def export(profile, fmt: str, *, path: str = "library", name: str | None = None, source: str = "",
           overrides: dict[str, float] | None = None) -> Export:
    """``profile`` in the shape ``fmt`` expects. ``path`` picks library or instruction ceilings where a format
    has one number per precision (the libraries' is what frameworks reach)."""
    fmt = fmt.strip().lower()
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
    from hwprobe import roofline

    path = roofline.norm_path(path)
    dev = profile.device.get("name") or profile.device.get("model") or "device"
    name = name or f"{_slug(dev)}_{'measured' if is_measured(profile) else 'expected'}"
    if overrides and fmt not in ("llm-viewer", "llm-analysis"):
        raise InputError(f"--set applies to llm-viewer and llm-analysis exports (fields the profile may lack), not "
                         f"{fmt}, which holds the profile's figures only")
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows(profile))
        return Export("csv", buf.getvalue(), f"{name}.ceilings.csv")
    if fmt == "json":
        doc = {"format": "hwprobe-ceilings", "version": 1, "meta": _meta(profile, source),
               "what": "measured ceilings (best valid measurement per slot); compute dense unless sparsity says "
                       "2:4; clock_mhz: the SM clock behind the figure (DRAM: the memory clock)",
               "ceilings": rows(profile)}
        return Export("json", json.dumps(doc, indent=2, default=str) + "\n", f"{name}.ceilings.json")
    if fmt == "llm-viewer":
        return llm_viewer(profile, name, path, overrides)
    if fmt == "llm-analysis":
        return llm_analysis(profile, name, path, overrides)
    return ert(profile)
