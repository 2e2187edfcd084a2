"""NVML (nvidia-ml-py): clocks, power, ECC, PCIe link, driver. Absent NVML (Jetson, CPU boxes) is fine."""

from __future__ import annotations

from functools import cache

from hwprobe.device import GpuInfo


@cache
def _init() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        return True
    except Exception:
        return False


def handle(info: GpuInfo):
    """The NVML handle for a CUDA device, matched by PCI bus id (the two orderings can differ)."""
    if not _init():
        return None
    import pynvml as n

    try:
        if info.pci_bus_id:
            return n.nvmlDeviceGetHandleByPciBusId(info.pci_bus_id.encode())
        return n.nvmlDeviceGetHandleByIndex(info.index)
    except Exception:
        try:
            return n.nvmlDeviceGetHandleByIndex(info.index)
        except Exception:
            return None


def _try(fn, *args):
    try:
        v = fn(*args)
        return v.decode() if isinstance(v, bytes) else v
    except Exception:
        return None


def enrich(info: GpuInfo) -> None:
    """Fill the NVML fields of ``info`` in place; leaves them empty when NVML is missing."""
    h = handle(info)
    if h is None:
        info.nvml = {"available": False}
        return
    import pynvml as n

    d = {
        "available": True,
        "sm_clock_max_mhz": _try(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_SM),
        "mem_clock_max_mhz": _try(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_MEM),
        "sm_clock_now_mhz": _try(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
        "sm_clock_app_mhz": _try(n.nvmlDeviceGetApplicationsClock, h, n.NVML_CLOCK_SM),
        "power_limit_w": (_try(n.nvmlDeviceGetEnforcedPowerLimit, h) or 0) / 1e3 or None,
        "temp_c": _try(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
        "pcie_gen_now": _try(n.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "pcie_width_now": _try(n.nvmlDeviceGetCurrPcieLinkWidth, h),
        "pcie_gen_max": _try(n.nvmlDeviceGetGpuMaxPcieLinkGeneration, h)
        or _try(n.nvmlDeviceGetMaxPcieLinkGeneration, h),
        "pcie_width_max": _try(n.nvmlDeviceGetMaxPcieLinkWidth, h),
        "ecc_enabled": None,
        "persistence_mode": _try(n.nvmlDeviceGetPersistenceMode, h),
        "compute_mode": _try(n.nvmlDeviceGetComputeMode, h),
        "mig_mode": None,
        "vbios": _try(n.nvmlDeviceGetVbiosVersion, h),
    }
    ecc = _try(n.nvmlDeviceGetEccMode, h)
    if ecc:
        d["ecc_enabled"] = bool(ecc[0])
    mig = _try(n.nvmlDeviceGetMigMode, h)
    if mig:
        d["mig_mode"] = int(mig[0])
    info.nvml = d
    info.uuid = _try(n.nvmlDeviceGetUUID, h)
    info.driver_version = _try(n.nvmlSystemGetDriverVersion)
    if d["sm_clock_max_mhz"]:
        info.sm_clock_max_mhz = float(d["sm_clock_max_mhz"])
    if not info.mem_clock_mhz and d["mem_clock_max_mhz"]:
        info.mem_clock_mhz = float(d["mem_clock_max_mhz"])
