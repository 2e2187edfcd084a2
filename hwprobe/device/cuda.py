"""CUDA devices through CuPy's runtime API (device attributes: CUDA 13 dropped some cudaDeviceProp fields)."""

from __future__ import annotations

from hwprobe.device.info import GpuInfo

# cudaDeviceAttr values (driver_types.h); stable across CUDA 11-13.
ATTR = {
    "clock_rate_khz": 13,
    "mem_clock_khz": 36,
    "bus_width_bits": 37,
    "l2_bytes": 38,
    "max_threads_per_sm": 39,
    "integrated": 18,
    "smem_per_block_optin": 97,
    "smem_per_sm": 81,
    "regs_per_sm": 82,
    "sms": 16,
    "cc_major": 75,
    "cc_minor": 76,
}


def _attr(cp, name: str, dev: int) -> int | None:
    try:
        return int(cp.cuda.runtime.deviceGetAttribute(ATTR[name], dev))
    except Exception:
        return None


def discover() -> list[GpuInfo]:
    try:
        import cupy as cp

        n = cp.cuda.runtime.getDeviceCount()
    except Exception:
        return []
    from hwprobe.device import nvml
    from hwprobe.specs.theory import arch_facts

    out = []
    for i in range(n):
        props = cp.cuda.runtime.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        mem_khz = _attr(cp, "mem_clock_khz", i)
        clock_khz = _attr(cp, "clock_rate_khz", i)
        info = GpuInfo(
            index=i,
            name=name,
            cc_major=_attr(cp, "cc_major", i) or int(props["major"]),
            cc_minor=_attr(cp, "cc_minor", i) or int(props["minor"]),
            sms=_attr(cp, "sms", i) or int(props["multiProcessorCount"]),
            l2_bytes=_attr(cp, "l2_bytes", i) or int(props.get("l2CacheSize", 0)),
            mem_bytes=int(props["totalGlobalMem"]),
            mem_clock_mhz=mem_khz / 1e3 if mem_khz else None,
            bus_width_bits=_attr(cp, "bus_width_bits", i),
            sm_clock_max_mhz=clock_khz / 1e3 if clock_khz else None,
            smem_per_sm_bytes=_attr(cp, "smem_per_sm", i) or 0,
            smem_per_block_optin_bytes=_attr(cp, "smem_per_block_optin", i) or 0,
            regs_per_sm=_attr(cp, "regs_per_sm", i) or 0,
            max_threads_per_sm=_attr(cp, "max_threads_per_sm", i) or 0,
            integrated=bool(_attr(cp, "integrated", i)),
            pci_bus_id=_pci_bus_id(cp, i),
            cuda_driver_version=cp.cuda.runtime.driverGetVersion(),
            cuda_runtime_version=cp.cuda.runtime.runtimeGetVersion(),
        )
        facts = arch_facts(info.arch) or {}
        info.l1_smem_bytes_per_sm = facts.get("l1_smem_bytes_per_sm")  # the runtime does not report L1
        nvml.enrich(info)
        if info.integrated:   # Tegra: clocks, mode, live SMs and EMC from sysfs (NVML is a stub or "Not Supported")
            from hwprobe.device import jetson

            info.jetson = jetson.readout_dict()
        out.append(info)
    return out


def _pci_bus_id(cp, i: int) -> str | None:
    try:
        return cp.cuda.runtime.deviceGetPCIBusId(i)
    except Exception:
        return None
