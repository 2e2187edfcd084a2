"""NVML (nvidia-ml-py): clocks, power, ECC, PCIe link, driver. Absent NVML (Jetson, CPU boxes) is fine."""

from __future__ import annotations

import os
from functools import cache

from hwprobe.device.info import GpuInfo


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


def _process_name(n, pid: int) -> str:
    """NVML's name for a process, else /proc/<pid>/comm (NVML cannot name processes of other containers)."""
    name = _try(n.nvmlSystemGetProcessName, pid)
    if name:
        return str(name)
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])      # the field after the state: ppid
    except (OSError, ValueError, IndexError):
        return None


def _job_ranks() -> set[int]:
    """Under an MPI launcher or srun, the other ranks of this run on this host: processes with this process's
    parent (the launcher's daemon starts every local rank). A rank reaches its peer's GPU for P2P and NCCL, and
    must not read its own job as contention. Empty in a plain run, where a sibling would be real contention."""
    from hwprobe.world import detect

    try:
        if not detect().distributed:
            return set()
    except Exception:
        return set()
    parent, out = os.getppid(), set()
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid() and _parent_of(int(d)) == parent:
            out.add(int(d))
    return out


def running_processes(info: GpuInfo, handle_=None) -> dict:
    """Other processes on this GPU now (pid, name, used memory) and the GPU's utilization: they share the SMs
    and the memory bus, so figures measured beside them are skewed. This process and the other ranks of its own
    launch (mpiexec, srun) are left out.

    Returns {"available", "processes": [{"pid", "name", "used_memory_bytes", "kind"}], "utilization_gpu_pct",
    "utilization_mem_pct", "contended", "warning"}; ``available`` is False without NVML (a Jetson before
    JetPack 6, or a machine without the driver)."""
    h = handle_ if handle_ is not None else handle(info)
    out: dict = {"available": h is not None, "processes": [], "utilization_gpu_pct": None,
                 "utilization_mem_pct": None, "contended": False, "warning": None}
    if h is None:
        return out
    import pynvml as n

    me, seen, job = os.getpid(), {}, _job_ranks()
    for kind, fn in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                     ("graphics", "nvmlDeviceGetGraphicsRunningProcesses")):
        for p in _try(getattr(n, fn), h) or []:
            pid = int(p.pid)
            if pid == me or pid in seen or pid in job:
                continue
            used = getattr(p, "usedGpuMemory", None)
            # NVML_VALUE_NOT_AVAILABLE (2**64 - 1) where the driver cannot say (MIG, some containers)
            used = int(used) if isinstance(used, int) and 0 <= used < 2**63 else None
            seen[pid] = {"pid": pid, "name": _process_name(n, pid), "used_memory_bytes": used, "kind": kind}
    out["processes"] = list(seen.values())
    util = _try(n.nvmlDeviceGetUtilizationRates, h)
    if util is not None:
        out["utilization_gpu_pct"], out["utilization_mem_pct"] = int(util.gpu), int(util.memory)
    if out["processes"]:
        names = ", ".join(f"{p['name']} (pid {p['pid']}"
                          + (f", {p['used_memory_bytes'] / 2**20:.0f} MiB" if p["used_memory_bytes"] else "")
                          + ")" for p in out["processes"])
        util_txt = f"; GPU utilization {out['utilization_gpu_pct']}%" if out["utilization_gpu_pct"] is not None else ""
        out["contended"] = True
        out["warning"] = (f"{len(out['processes'])} other process(es) use this GPU: {names}{util_txt}. "
                          "They share its SMs, memory and power budget: the figures of this run are skewed")
    return out
