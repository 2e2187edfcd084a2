"""gpu.health and cpu.health: health verdicts recorded beside the ceilings (hwprobe.health). READ only.

Each verdict is an "info" record (metric ``health.<check>[.gpu<i>]``, the verdict under params["health"]): a
finding in the profile, tagged with rank, host and GPU under MPI like every other record, and judged per node
by ``hwprobe validate`` (hwprobe.fleet.acceptance). Put gpu.health first in a suite: the idle-throttle check wants
an idle GPU, and the XID watch it starts then covers the rest of the run (drained at the run's end).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from hwprobe.health import to_measurement
from hwprobe.health.verdict import HealthVerdict
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.vocab import Verdict

GPU_PROBE, CPU_PROBE = "gpu.health", "cpu.health"


def host_copy_load(index: int, mib: int = 64, rounds: int = 6) -> Callable[[Callable[[], None]], None]:
    """A host-to-device copy loop on GPU ``index`` that calls ``sample`` while copies are queued: PCIe links drop to
    Gen1 when idle and train up under traffic, so the generation is read again during one."""
    def load(sample: Callable[[], None]) -> None:
        import cupy as cp
        import cupyx

        n = mib << 20
        with cp.cuda.Device(index):
            host = cupyx.empty_pinned(n, dtype="uint8")
            dev = cp.empty(n, dtype=cp.uint8)
            stream = cp.cuda.Stream(non_blocking=True)
            for _ in range(rounds):
                for _ in range(4):
                    dev.set(host, stream=stream)
                sample()
            stream.synchronize()
            del host, dev
    return load


def _gpu_verdicts(ctx, dev, pcie_load: bool, xid: bool) -> Iterator[Measurement]:
    from hwprobe.device import nvml as hw_nvml
    from hwprobe.health import checks
    from hwprobe.health.nvml_reader import LiveNvml, XidWatch, read_gpu

    label = f"GPU {dev.index}"
    h = hw_nvml.handle(dev)
    if h is None:
        yield to_measurement(HealthVerdict("nvml", Verdict.NOT_AVAILABLE, "NVML is not available (no driver "
                                           "library, or nvidia-ml-py missing): no health reading", {}, label),
                             GPU_PROBE, dev.index)
        return
    import pynvml

    load = host_copy_load(dev.index) if pcie_load else None
    readings = read_gpu(LiveNvml(pynvml, h), device=label, load=load)
    for v in checks.gpu_verdicts(readings, skip=("xid",)):
        yield to_measurement(v, GPU_PROBE, dev.index)
    if not xid:
        return
    watch = XidWatch(pynvml, h)
    if not watch.start():
        yield to_measurement(HealthVerdict("xid", Verdict.NOT_AVAILABLE, watch.why, {}, label), GPU_PROBE, dev.index)
        return

    def drained() -> Iterator[Measurement]:
        readings.xid = watch.drain()
        yield to_measurement(checks.xid(readings), GPU_PROBE, dev.index)

    ctx.at_end(drained)


@probe(name=GPU_PROBE, target="gpu", family="health",
       summary="Health verdicts from NVML (ECC, row remap/retired pages, PCIe link, NVLink, idle throttle, power "
               "limit, XIDs during the run) or Jetson sysfs; reads only")
def gpu_health(ctx, pcie_load: bool = True, xid: bool = True, jetson_root: str = "/") -> Iterator[Measurement]:
    """``pcie_load``: read the PCIe generation again during a short host copy when it is below the max while idle.
    ``xid``: watch for XID events until the run ends. ``jetson_root``: where a Jetson's sysfs is (tests)."""
    for dev in [d for d in ctx.devices if getattr(d, "kind", "") == "gpu"] or [ctx.device]:
        if getattr(dev, "jetson", None):       # a Tegra board's sysfs readout (device discovery); NVML elsewhere
            from hwprobe.health import jetson

            for v in jetson.verdicts(dev.jetson, jetson_root):
                yield to_measurement(v, GPU_PROBE, dev.index)
            continue
        yield from _gpu_verdicts(ctx, dev, pcie_load, xid)


@probe(name=CPU_PROBE, target="cpu", family="health",
       summary="Host health verdicts from sysfs: EDAC memory errors, cpufreq caps, thermal throttling, offline "
               "cores; reads only")
def cpu_health(ctx, root: str = "/") -> Iterator[Measurement]:
    """``root``: where /sys is (a recorded tree in tests)."""
    from hwprobe.health import cpu

    for v in cpu.verdicts(cpu.read(root)):
        yield to_measurement(v, CPU_PROBE)
