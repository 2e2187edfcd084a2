"""Theory for a live device (a GpuInfo or CpuInfo from hwprobe.device), beside its datasheet entry: the one
module of the specs that knows a device's readout shapes (a Jetson's goes to hwprobe.specs.modes)."""

from __future__ import annotations

from hwprobe.specs import GEFORCE_TENSOR_SCALE, DeviceTheory, match, match_cpu
from hwprobe.specs import theory as th
from hwprobe.specs.modes import jetson_theory


def device_theory(info) -> DeviceTheory:
    """Theory for a live device (a GpuInfo or CpuInfo), beside its datasheet entry when one matches."""
    if getattr(info, "kind", None) == "cpu":
        return _cpu_theory(info)
    return _gpu_theory(info)


def _cpu_theory(info) -> DeviceTheory:
    sku = match_cpu(info.model)
    clock = info.max_mhz or info.base_mhz
    dt = DeviceTheory(
        label=info.label, kind="cpu", max_clock_mhz=clock, cores=info.cores,
        flops_per_clk={k: v for k, v in (("fp64", info.fp64_flops_per_clk), ("fp32", info.fp32_flops_per_clk)) if v},
        sku=sku,
    )
    if sku and sku.mem_clock_mhz:
        dt.mem_clock_mhz, dt.data_rate, dt.bus_width_bits, dt.channels = (
            sku.mem_clock_mhz, sku.data_rate, sku.bus_width_bits, sku.channels)
        dt.mem_source = "spec table"
    if not clock:
        dt.notes.append("no CPU clock known: no compute theory")
    elif not info.max_mhz:
        dt.notes.append(f"only the base clock ({clock:g} MHz) is known: turbo may beat this theory")
    return dt


def _gpu_theory(info) -> DeviceTheory:
    if getattr(info, "jetson", None):
        return jetson_theory(info)  # live SMs x devfreq cap, EMC x module bus
    sku = match(info.name, sms=info.sms, mem_bytes=info.mem_bytes or None, clock_mhz=info.sm_clock_max_mhz)
    nvml = info.nvml or {}
    scale = dict(sku.tensor_rate_scale) if sku else {}
    if not sku and "geforce" in info.name.lower():
        scale = dict(GEFORCE_TENSOR_SCALE.get(info.arch, {}))
    dt = DeviceTheory(
        label=info.label, kind="gpu", arch=info.arch, sms=info.sms, max_clock_mhz=info.sm_clock_max_mhz,
        mem_clock_mhz=info.mem_clock_mhz, data_rate=2, bus_width_bits=info.bus_width_bits,
        mem_source="device-reported", pcie_gen=nvml.get("pcie_gen_max"), pcie_lanes=nvml.get("pcie_width_max"),
        integrated=bool(info.integrated), rate_scale=scale, sku=sku,
    )
    if th.arch_facts(info.arch) is None:
        dt.notes.append(f"no per-SM rates for {info.arch} in arch.toml: no compute theory")
    if sku is None:
        dt.notes.append(f"no datasheet entry matches {info.name!r} with {info.sms} SMs: no datasheet figures")
        return dt
    if sku.integrated:
        # Tegra reports no real memory clock through CUDA: use the module's datasheet memory.
        dt.mem_clock_mhz, dt.data_rate, dt.bus_width_bits, dt.channels = (
            sku.mem_clock_mhz, sku.data_rate, sku.bus_width_bits, sku.channels)
        dt.mem_source = f"spec table {sku.name}"
    else:
        if info.bus_width_bits and sku.bus_width_bits and info.bus_width_bits != sku.bus_width_bits:
            dt.notes.append(f"bus width: device reports {info.bus_width_bits} bits, datasheet entry "
                            f"{sku.name} has {sku.bus_width_bits}")
        ref = sku.reported_mem_clock_mhz
        if info.mem_clock_mhz and ref and abs(info.mem_clock_mhz / ref - 1) > 0.01:
            dt.notes.append(f"memory clock: device reports {info.mem_clock_mhz:g} MHz, datasheet entry "
                            f"{sku.name} implies {ref:g} MHz")
    if info.sm_clock_max_mhz and sku.boost_clock_mhz and abs(info.sm_clock_max_mhz / sku.boost_clock_mhz - 1) > 0.01:
        dt.notes.append(f"max SM clock: device reports {info.sm_clock_max_mhz:g} MHz, datasheet boost "
                        f"{sku.boost_clock_mhz:g} MHz")
    return dt
