"""What a datasheet entry leads one to expect: fractions of theory per ceiling, in a given power mode.

A spec reference is not a measurement. Its figures are theory x a fraction: one fraction for every ceiling
(``--expect 0.9``), or per kind of ceiling (FRACTIONS below, from what the measured H100/H200 profiles reach),
and it says so everywhere it appears (``measured: false``).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from hwprobe.fleet.records import CeilingRec, RunRecord
from hwprobe.results import PROFILE
from hwprobe.vocab import SPARSE_SUFFIX

# (ceiling key pattern, fraction of theory, why): the first matching pattern wins. Assumptions, not measurements.
FRACTIONS: tuple[tuple[str, float, str], ...] = (
    ("*.cuda_core.instruction", 0.95, "FMA chains: 99-100% of theory on the measured H100/H200"),
    ("*.tensor_core.instruction*", 0.90, "mma.sync: 90-99% of theory on the measured H100/H200"),
    ("*.tensor_core.library*", 0.70, "cuBLAS/cuBLASLt GEMM: 70-80% of theory on the measured H100/H200"),
    ("*.cuda_core.library", 0.80, "SGEMM/DGEMM on CUDA cores"),
    ("dram.bandwidth", 0.80, "DRAM stream kernels (HBM 88-97% measured; LPDDR assumed lower)"),
    ("*", 0.75, "other ceilings"),
)
# The ceilings the Jetson suites measure, per architecture (suites/jetson.toml, suites/jetson-xavier.toml).
JETSON_KEYS = {
    "sm_87": ("fp32.cuda_core.instruction", "fp16.cuda_core.instruction", "fp16.tensor_core.instruction",
              "bf16.tensor_core.instruction", "tf32.tensor_core.instruction", "int8.tensor_core.instruction",
              "fp32.cuda_core.library", "fp16.tensor_core.library", "bf16.tensor_core.library",
              "tf32.tensor_core.library", "int8.tensor_core.library", "dram.bandwidth"),
    "sm_72": ("fp32.cuda_core.instruction", "fp16.cuda_core.instruction", "fp32.cuda_core.library",
              "fp16.tensor_core.library", "int8.tensor_core.library", "dram.bandwidth"),
    "sm_62": ("fp32.cuda_core.instruction", "fp16.cuda_core.instruction", "fp32.cuda_core.library", "dram.bandwidth"),
    "sm_53": ("fp32.cuda_core.instruction", "fp16.cuda_core.instruction", "fp32.cuda_core.library", "dram.bandwidth"),
}


def fraction_for(key: str, fraction: float | None = None) -> tuple[float, str]:
    if fraction is not None:
        return fraction, f"--expect {fraction:g}"
    for pattern, f, why in FRACTIONS:
        if fnmatch.fnmatchcase(key, pattern):
            return f, why
    return 0.75, "other ceilings"


def theory_of(dt, key: str) -> tuple[float | None, str, str]:
    """(peak at the max clock, unit, basis) of a ceiling key under a DeviceTheory."""
    parts = key.split(".")
    if len(parts) == 2 and parts[1] == "bandwidth":
        t = dt.memory(parts[0])
        return (t.at_max_clock, "B/s", t.basis) if t else (None, "B/s", "")
    if len(parts) == 3:
        from hwprobe.specs import theory as th

        prec, unit, path = parts
        t = dt.compute(prec, unit, sparse=path.endswith(SPARSE_SUFFIX))
        return (t.at_max_clock, th.op_unit(prec), t.basis) if t else (None, th.op_unit(prec), "")
    return None, "", ""


def _mode_for(sku, mode_name: str | None, jetpack: str | None):
    from hwprobe.specs import modes

    if not sku.power_modes:
        return None, "no power modes: the entry's boost clock"
    if mode_name:
        m = modes.find_mode(sku, name=mode_name, jetpack=jetpack)
        if m is not None:
            return m, f"power mode {m.name} (as the run recorded)"
    m = modes.max_mode(sku, jetpack)
    if mode_name:
        return m, f"power mode {m.name} (the fullest: the run's mode {mode_name} is not one of {sku.name})"
    return m, f"power mode {m.name} (the fullest{f' on JetPack {jetpack}' if jetpack else ''})"


def spec_expectation(sku, keys: list[str] | tuple[str, ...] | None = None, fraction: float | None = None,
                     mode_name: str | None = None, jetpack: str | None = None) -> RunRecord:
    """A reference run from a datasheet entry: theory (in ``mode_name``, else the fullest mode) x a fraction,
    for ``keys`` (default: what the Jetson suite measures on that architecture)."""
    from hwprobe.specs import modes, sku_theory

    mode, why_mode = _mode_for(sku, mode_name, jetpack)
    dt = modes.mode_theory(sku, mode) if mode else sku_theory(sku)
    keys = list(keys) if keys is not None else list(JETSON_KEYS.get(sku.arch or "", ("dram.bandwidth",)))
    ceilings: dict[str, CeilingRec] = {}
    fractions: dict[str, Any] = {}
    for key in keys:
        peak, unit, basis = theory_of(dt, key)
        if not peak:
            continue
        f, why = fraction_for(key, fraction)
        ceilings[key] = CeilingRec(key=key, value=peak * f, unit=unit, metric=f"{key} (spec)",
                                   clock_mhz=None if unit == "B/s" else dt.max_clock_mhz, theory_at_max=peak,
                                   flags=["not_measured"])
        fractions[key] = {"fraction": f, "why": why, "theory": peak, "basis": basis}
    device = {"kind": "gpu", "name": sku.name, "arch": sku.arch, "sms": dt.sms, "measured": False}
    if mode is not None:
        device["jetson"] = {"module": sku.name, "nvpmodel": {"name": mode.name, "id": mode.id},
                            "tpc": {"live_sms": dt.sms}, "gpu": {"max_mhz": mode.gpu_max_mhz},
                            "emc": {"theory_mhz": mode.emc_mhz}, "jetpack": jetpack}
    env = {"measured": False, "source": "spec-derived", "sku": sku.name, "power_mode": mode.name if mode else None,
           "mode_choice": why_mode, "fractions": fractions, "theory": dt.label}
    return RunRecord(path=f"spec:{sku.name}", label=f"{sku.name} spec ({mode.name if mode else 'boost'})",
                     device=device, environment=env, ceilings=ceilings, measured=False)


def expectation_profile(sku, mode_name: str | None = None, jetpack: str | None = None) -> dict[str, Any]:
    """A schema-valid profile dict of ``spec_expectation`` (committed under profiles/jetson/), marked not measured."""
    from hwprobe import __version__
    from hwprobe.profile import Ceiling, MemoryLevel, Profile

    rec = spec_expectation(sku, mode_name=mode_name, jetpack=jetpack)
    prof = Profile(device=rec.device, environment=rec.environment, hwprobe_version=__version__,
                   created_utc="spec-derived")
    for key, c in rec.ceilings.items():
        info = rec.environment["fractions"][key]
        ceil = Ceiling(value=c.value, unit=c.unit, metric=key, probe="spec", theory_at_clock=c.theory_at_max,
                       theory_at_max_clock=c.theory_at_max, clock_mhz=c.clock_mhz,
                       basis=f"{info['fraction']:.0%} x ({info['basis']})",
                       notes=[f"not measured: {info['fraction']:.0%} of theory assumed ({info['why']})"],
                       flags=["not_measured"])
        parts = key.split(".")
        if parts[-1] == "bandwidth":
            prof.memory[parts[0]] = MemoryLevel(bandwidth=ceil)
        else:
            prof.compute.setdefault(parts[0], {}).setdefault(parts[1], {})[parts[2]] = ceil
    prof.findings.append({"probe": "spec", "metric": "not_measured", "text": (
        f"Spec-derived expectation for {sku.name} ({rec.environment['mode_choice']}): theory x assumed fractions. "
        "Not measured: replace with a measured profile once real hardware has run suites/jetson.toml.")})
    return prof.to_dict()


# profiles/jetson/<dir>/<variant>/profile.json: (skus.toml entry, JetPack that picks the mode set, variant dir)
JETSON_REFERENCES = (
    ("jetson-nano", "Jetson Nano", None, "spec-derived"),
    ("jetson-tx2", "Jetson TX2", None, "spec-derived"),
    ("xavier-nx", "Jetson Xavier NX", None, "spec-derived"),
    ("agx-xavier", "Jetson AGX Xavier", None, "spec-derived"),
    ("orin-nano-4gb", "Jetson Orin Nano 4GB", "6.0", "spec-derived"),
    ("orin-nano-4gb", "Jetson Orin Nano 4GB", "6.1", "spec-derived-maxn-super"),
    ("orin-nano-8gb", "Jetson Orin Nano 8GB", "6.0", "spec-derived"),
    ("orin-nano-8gb", "Jetson Orin Nano 8GB", "6.1", "spec-derived-maxn-super"),
    ("orin-nano-8gb-super", "Jetson Orin Nano 8GB Super", "6.2", "spec-derived"),
    ("orin-nx-8gb", "Jetson Orin NX 8GB", "6.1", "spec-derived"),
    ("orin-nx-8gb", "Jetson Orin NX 8GB", "6.2", "spec-derived-maxn-super"),
    ("orin-nx-16gb", "Jetson Orin NX 16GB", "6.1", "spec-derived"),
    ("orin-nx-16gb", "Jetson Orin NX 16GB", "6.2", "spec-derived-maxn-super"),
    ("agx-orin-32gb", "Jetson AGX Orin 32GB", None, "spec-derived"),
    ("agx-orin-64gb", "Jetson AGX Orin 64GB", None, "spec-derived"),
)


def write_jetson_references(root: Path | str) -> list[Path]:
    """Write every Jetson module's spec-derived expectation (fullest mode) under ``root`` (profiles/jetson)."""
    import json

    from hwprobe import specs

    out = []
    for folder, name, jetpack, variant in JETSON_REFERENCES:
        d = expectation_profile(specs.find(name), jetpack=jetpack)
        p = Path(root) / folder / variant / PROFILE
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(d, indent=2) + "\n")
        out.append(p)
    return out
