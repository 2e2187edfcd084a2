"""llm-analysis: its ``gpu_configs`` JSON (GB/s, TFLOPS; ``mem_per_GPU_in_GB`` in GiB, as llm-analysis multiplies it by
1024**3). Its loader reads every JSON file in that folder and takes no extra keys: nothing but the config goes
there, the provenance goes to stderr or ``--provenance FILE``."""

from __future__ import annotations

import json
from typing import Any

from hwprobe.export.common import (
    Export,
    Format,
    apply_overrides,
    fastest_p2p,
    provenance_of,
    refuse_missing,
    run_meta,
    tensor_ceiling,
)
from hwprobe.roofline import is_measured
from hwprobe.vocab import Precision

LLM_ANALYSIS_REQUIRED = ("mem_per_GPU_in_GB", "hbm_bandwidth_in_GB_per_sec", "intra_node_bandwidth_in_GB_per_sec",
                         "intra_node_min_message_latency", "peak_fp16_TFLOPS")
LLM_ANALYSIS_DEFAULTS = {"peak_i8_TFLOPS": "llm-analysis assumes 2x the FP16 peak",
                         "peak_i4_TFLOPS": "llm-analysis assumes 4x the FP16 peak",
                         "inter_node_bandwidth_in_GB_per_sec": "llm-analysis assumes 200 GB/s"}


def llm_analysis(profile, *, name: str, path: str, overrides: dict[str, float] | None = None,
                 **_: Any) -> Export:
    """llm-analysis's ``gpu_configs`` JSON: its required fields all present (refused otherwise), its optional
    ones omitted with a warning where not measured; no null for llm-analysis to fill in or trip on."""
    m = is_measured(profile)
    d = profile.device
    dram = profile.memory.get("dram")
    fp16, int8, int4 = (tensor_ceiling(profile, p, path) for p in (Precision.FP16, Precision.INT8, Precision.INT4))
    link, lat, link_name = fastest_p2p(profile)
    cfg = {"name": name, "mem_per_GPU_in_GB": round(d["mem_bytes"] / 2**30, 3) if d.get("mem_bytes") else None,
           "hbm_bandwidth_in_GB_per_sec": dram.bandwidth.value / 1e9 if dram and dram.bandwidth else None,
           "intra_node_bandwidth_in_GB_per_sec": link.value / 1e9 if link else None,
           "intra_node_min_message_latency": lat,
           "peak_fp16_TFLOPS": fp16.value / 1e12 if fp16 else None,
           "peak_i8_TFLOPS": int8.value / 1e12 if int8 else None,
           "peak_i4_TFLOPS": int4.value / 1e12 if int4 else None,
           "inter_node_bandwidth_in_GB_per_sec": None}
    prov = {"mem_per_GPU_in_GB": "device-reported total memory in GiB (llm-analysis multiplies by 1024**3)",
            "hbm_bandwidth_in_GB_per_sec": (provenance_of(dram.bandwidth, m) if dram and dram.bandwidth
                                            else "not measured"),
            "intra_node_bandwidth_in_GB_per_sec": dict(provenance_of(link, m), link=link_name) if link else
            "no GPU-to-GPU link measured in this profile",
            "intra_node_min_message_latency": "lowest measured p2p latency (s)" if lat else "not measured",
            "peak_fp16_TFLOPS": provenance_of(fp16, m) if fp16 else "not measured",
            "peak_i8_TFLOPS": provenance_of(int8, m) if int8 else "not measured",
            "peak_i4_TFLOPS": provenance_of(int4, m) if int4 else "no INT4 Tensor Core ceiling in this profile",
            "inter_node_bandwidth_in_GB_per_sec": "hwprobe does not measure inter-node links"}
    notes = apply_overrides(cfg, prov, overrides or {}, "llm-analysis")
    refuse_missing(cfg, LLM_ANALYSIS_REQUIRED, "llm-analysis")
    omitted = [k for k, v in cfg.items() if v is None]
    notes += [f"omitted (not measured): {k}: {LLM_ANALYSIS_DEFAULTS[k]}" for k in omitted]
    cfg = {k: v for k, v in cfg.items() if v is not None}
    return Export("llm-analysis", json.dumps(cfg, indent=4) + "\n", f"{name}.json",
                  {"meta": run_meta(profile, "llm-analysis gpu_configs"), "numbers": prov}, notes)



FORMATS = [Format("llm-analysis", llm_analysis, "llm-analysis's gpu_configs JSON (TFLOPS, GB/s, the P2P link)",
                  takes_set=True)]
