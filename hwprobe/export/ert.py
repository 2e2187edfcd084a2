"""The Empirical Roofline Toolkit's ``roofline.json``: ``empirical`` and ``spec`` blocks, each with ``gflops`` and
``gbytes`` data, highest roof first; the spec block from the datasheet/theory figures."""

from __future__ import annotations

import json
from typing import Any

from hwprobe.export.common import Export, Format, provenance_of, run_meta
from hwprobe.roofline import is_measured
from hwprobe.vocab import SPARSE_SUFFIX


def ert(profile, **_: Any) -> Export:
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
                labels[label] = provenance_of(c, measured)
                ref = c.datasheet or c.theory_at_max_clock
                if ref:
                    spec_flops.append([label, round(ref / 1e9, 2)])
    names = {"l1": "L1", "l2": "L2", "dram": "DRAM", "shared": "Shared"}
    gbytes, spec_bytes = [], []
    for level, m in profile.memory.items():
        if level in names and m.bandwidth:
            gbytes.append([names[level], round(m.bandwidth.value / 1e9, 2)])
            labels[names[level]] = provenance_of(m.bandwidth, measured)
            ref = m.bandwidth.datasheet or m.bandwidth.theory_at_max_clock
            if ref:
                spec_bytes.append([names[level], round(ref / 1e9, 2)])
    for rows_ in (flops, spec_flops, gbytes, spec_bytes):      # highest roof first: readers size axes from it
        rows_.sort(key=lambda r: r[1], reverse=True)
    doc = {"empirical": {"gflops": {"data": flops, "metadata": {}}, "gbytes": {"data": gbytes, "metadata": {}},
                         "metadata": {"hwprobe": run_meta(profile, "ERT roofline.json"), "numbers": labels}},
           "spec": {"gflops": {"data": spec_flops}, "gbytes": {"data": spec_bytes},
                    "metadata": {"what": "datasheet figures where published, else theory at the max clock"}}}
    return Export("ert", json.dumps(doc, indent=2) + "\n", "roofline.json")



FORMATS = [Format("ert", ert, "the Empirical Roofline Toolkit's roofline.json (empirical and spec roofs)")]
