"""LLM-Viewer: a pasteable entry for its ``hardware_params`` dict (Python literals; ``bandwidth`` B/s, ``FP16``/``INT8``
op/s, dense; ``onchip_buffer`` bytes, which LLM-Viewer takes as the register file size), provenance in comments."""

from __future__ import annotations

import json
from typing import Any

from hwprobe.export.common import (
    Export,
    Format,
    apply_overrides,
    provenance_of,
    refuse_missing,
    run_meta,
    tensor_ceiling,
)
from hwprobe.roofline import is_measured


def llm_viewer(profile, *, name: str, path: str, overrides: dict[str, float] | None = None,
               **_: Any) -> Export:
    """A pasteable entry for LLM-Viewer's ``hardware_params`` dict (Python literals), provenance as comments.
    Every key LLM-Viewer reads must be there: a profile without an INT8 figure is refused, not left to crash
    LLM-Viewer's 8-bit runs."""
    m = is_measured(profile)
    dram = profile.memory.get("dram")
    fp16, int8 = tensor_ceiling(profile, "fp16", path), tensor_ceiling(profile, "int8", path)
    d = profile.device
    regs = d.get("regs_per_sm") and d.get("sms") and d["regs_per_sm"] * 4 * d["sms"]
    entry = {"bandwidth": dram.bandwidth.value if dram and dram.bandwidth else None,
             "FP16": fp16.value if fp16 else None, "INT8": int8.value if int8 else None,
             "onchip_buffer": regs or None}
    prov = {"bandwidth": provenance_of(dram.bandwidth, m) if dram and dram.bandwidth else "not measured",
            "FP16": provenance_of(fp16, m) if fp16 else f"no fp16 tensor_core {path} ceiling measured",
            "INT8": provenance_of(int8, m) if int8 else f"no int8 tensor_core {path} ceiling measured",
            "onchip_buffer": ("device-reported register file (regs_per_sm x 4 B x SMs), LLM-Viewer's on-chip "
                              "buffer convention; not a measurement") if regs else "device reports no register file"}
    notes = apply_overrides(entry, prov, overrides or {}, "llm-viewer")
    refuse_missing(entry, tuple(entry), "llm-viewer")
    meta = run_meta(profile, "LLM-Viewer hardware_params entry")
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



FORMATS = [Format("llm-viewer", llm_viewer, "an entry for LLM-Viewer's hardware_params (FP16, INT8, bandwidth)",
                  takes_set=True)]
