"""The seeds' whole-model table (002, "模型分析"), reproduced from hwprobe's own counts.

How 002 counts, found by reproducing it: "MB" are MiB (2^20 bytes) of FP32; "Memory (kernel)" is every stored
weight, BN running statistics included (a state_dict's size); "Memory (output)" is the output of every layer
except the in-place activations; "GFLOPs" is 1e9 multiply-adds (plus the few other operations), printed with
one or two significant digits; the intensity is GFLOPs / MB(all) x 1000 from those rounded figures.
The seed's figures below are reference data (the slide's table), never used as results.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hwprobe.analysis.roofline import Analysis

MIB = 2 ** 20
# model -> (Memory kernel MB, Memory output MB, Memory all MB, GFLOPs, intensity), as printed in 002
SEED_002_MODELS = {
    "vgg16": (528, 58, 586, 16, 27.30375427), "vgg19": (548, 63, 611, 20, 32.73322422),
    "resnet18": (45, 23, 68, 2, 29.41176471), "resnet34": (83, 35, 118, 4, 33.89830508),
    "resnet50": (98, 193, 291, 4, 13.74570447), "resnet101": (170, 155, 325, 8, 24.61538462),
    "googlenet": (51, 26, 77, 2, 25.97402597), "mobilenet_v1": (16, 38, 54, 0.5, 9.259259259),
    "densenet121": (31, 126, 157, 3, 19.10828025), "densenet161": (110, 235, 345, 8, 23.1884058),
}
# Rows the seed's own numbers contradict, or that describe another network than the paper's.
KNOWN = {
    "resnet50": "the notes' output column (193 MB) exceeds its own ResNet-101 row (155 MB), yet ResNet-101 holds every "
                "ResNet-50 layer; hwprobe counts 103 MB, and 155 MB for ResNet-101 as the notes do",
    "googlenet": "the notes' GoogLeNet (51 MB of weights = 13 M parameters) is torchvision's variant with BN and two "
                 "auxiliary classifiers, not the paper's 7 M-parameter network built here",
}


def _digit(x: float) -> float:
    """The unit of the last printed digit of a one-significant-figure-ish seed value (16 -> 1, 0.5 -> 0.1)."""
    return 1.0 if x >= 1 else 10.0 ** math.floor(math.log10(x))


def counts(a: Analysis) -> dict[str, float]:
    """hwprobe's counts in the seed table's units (FP32, MiB, 1e9 operations)."""
    df = a.layers
    kernel = float(df["weights"].sum()) * 4 / MIB
    output = float(df.loc[df["op"] != "act", "outputs"].sum()) * 4 / MIB
    gops = float(df["ops"].sum()) / 1e9
    return {"kernel_mb": kernel, "output_mb": output, "all_mb": kernel + output, "gflops": gops,
            "intensity": gops / (kernel + output) * 1000}


def seed_row(a: Analysis) -> dict[str, Any] | None:
    """hwprobe's figures beside the seed's row, and whether the seed's row is reproduced within its rounding."""
    name = a.model.name
    if (a.convention.name != "seed" or a.model.source != "builtin" or name not in SEED_002_MODELS
            or a.model.batch != 1 or a.options.precision != "fp32"):
        return None
    s_k, s_o, s_all, s_g, s_i = SEED_002_MODELS[name]
    c = counts(a)
    u = _digit(s_g)
    g_lo, g_hi = math.floor(c["gflops"] / u + 1e-9) * u, math.ceil(c["gflops"] / u - 1e-9) * u
    i_lo, i_hi = g_lo / (c["all_mb"] + 1) * 1000, g_hi / (c["all_mb"] - 1) * 1000
    checks = {
        "kernel_mb": abs(c["kernel_mb"] - s_k) <= 0.5 + 1e-6, "output_mb": abs(c["output_mb"] - s_o) <= 0.5 + 1e-6,
        "gflops": g_lo - 1e-9 <= s_g <= g_hi + 1e-9, "intensity": i_lo <= s_i <= i_hi,
    }
    return {"model": name, "hwprobe": c, "seed": dict(zip(("kernel_mb", "output_mb", "all_mb", "gflops",
                                                           "intensity"), SEED_002_MODELS[name], strict=True)),
            "intensity_range": (i_lo, i_hi), "checks": checks, "reproduced": all(checks.values()),
            "why_not": KNOWN.get(name, "") if not all(checks.values()) else ""}


def seed_line(a: Analysis) -> str | None:
    r = seed_row(a)
    if r is None:
        return None
    h, s = r["hwprobe"], r["seed"]
    lo, hi = r["intensity_range"]
    verdict = "reproduced within its rounding" if r["reproduced"] else f"NOT reproduced: {r['why_not']}"
    return (f"the source notes' whole-model table, {r['model']}: kernel {s['kernel_mb']} / output "
            f"{s['output_mb']} / all {s['all_mb']} MB, {s['gflops']} GFLOPs, intensity {s['intensity']:.4g}; "
            f"hwprobe {h['kernel_mb']:.1f} / "
            f"{h['output_mb']:.1f} / {h['all_mb']:.1f} MB (MiB of FP32: weights with BN statistics; outputs of all "
            f"but in-place activations), {h['gflops']:.3f} G ops (multiply-add = 1), intensity {h['intensity']:.4g} "
            f"(GFLOPs/MB x 1000 as the notes divide; its rounding allows {lo:.3g}-{hi:.3g}): {verdict}")
