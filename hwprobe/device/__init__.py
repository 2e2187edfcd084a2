"""Device discovery: what is this machine, as the runtime and the management library report it."""

from __future__ import annotations

from hwprobe.device.info import CpuInfo, GpuInfo
from hwprobe.errors import InputError

__all__ = ["CpuInfo", "GpuInfo", "cpu_info", "gpus", "select", "select_many"]


def gpus() -> list[GpuInfo]:
    """Every CUDA device CuPy can see; empty when CuPy or a driver is missing."""
    from hwprobe.device.cuda import discover

    return discover()


def cpu_info() -> CpuInfo:
    """The host CPU (named apart from the submodule hwprobe.device.cpu, which would shadow it)."""
    from hwprobe.device.cpu import discover

    return discover()


def select(device: str | None) -> GpuInfo | CpuInfo:
    """Resolve ``--device``: None -> GPU 0 if there is one, else the CPU; 'cpu'; or a GPU index."""
    if device is not None and str(device).lower() == "cpu":
        return cpu_info()
    found = gpus()
    if device is None:
        return found[0] if found else cpu_info()
    try:
        idx = int(device)
    except ValueError:
        raise InputError(f"--device must be a GPU index or 'cpu', not {device!r}") from None
    for g in found:
        if g.index == idx:
            return g
    have = ", ".join(f"{g.index} ({g.name})" for g in found) or "none (no CUDA device or no CuPy)"
    raise InputError(f"no GPU with index {idx}; GPUs here: {have}; or use --device cpu")


def select_many(device: str | None) -> list[GpuInfo | CpuInfo]:
    """Resolve ``--device`` for a run: one device as ``select`` does, or several GPUs as "0,1,3" or "all"
    (the first is the primary device; interconnect probes use them all)."""
    text = None if device is None else str(device).strip().lower()
    if text is None or (text != "all" and "," not in text):
        return [select(device)]
    found = gpus()
    if text == "all":
        if not found:
            raise InputError("--device all: no CUDA GPU here (no CUDA device or no CuPy); or use --device cpu")
        return found
    by_index = {g.index: g for g in found}          # discovered once, not once per listed index
    picked = []
    for part in (x.strip() for x in text.split(",") if x.strip()):
        if not part.isdigit():
            raise InputError(f"--device {device!r}: a list names GPU indices only")
        if int(part) not in by_index:
            have = ", ".join(f"{g.index} ({g.name})" for g in found) or "none (no CUDA device or no CuPy)"
            raise InputError(f"no GPU with index {part}; GPUs here: {have}; or use --device cpu")
        picked.append(by_index[int(part)])
    if len({d.index for d in picked}) != len(picked):
        raise InputError(f"--device {device!r} names a GPU twice")
    return picked

