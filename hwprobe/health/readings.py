"""What a GPU's health readout holds: plain values, or ``Unavailable`` with the reason where NVML (or the part)
does not offer it. Built by hwprobe.health.nvml_reader (live or from a recording); judged by hwprobe.health.checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unavailable:
    """A reading the part, driver or library does not give: NotSupported, no permission, a missing function."""

    reason: str


@dataclass
class Ecc:
    enabled: bool | None
    volatile_corrected: int | None = None       # since the driver loaded
    volatile_uncorrected: int | None = None
    aggregate_corrected: int | None = None      # over the board's life (InfoROM)
    aggregate_uncorrected: int | None = None


@dataclass
class RowRemap:
    """nvmlDeviceGetRemappedRows (Ampere and later): rows remapped for correctable and uncorrectable errors."""

    corrected_rows: int
    uncorrected_rows: int
    pending: bool
    failure: bool


@dataclass
class RetiredPages:
    """nvmlDeviceGetRetiredPages (before Ampere): pages retired for repeated single-bit and for double-bit errors."""

    single_bit: int
    double_bit: int
    pending: bool | None


@dataclass
class Pcie:
    gen_now: int | None
    width_now: int | None
    gen_max: int | None                 # what the GPU and its slot together allow (nvmlDeviceGetMaxPcieLinkGeneration)
    width_max: int | None
    gen_gpu_max: int | None = None      # what the GPU alone allows (nvmlDeviceGetGpuMaxPcieLinkGeneration)
    gen_under_load: int | None = None   # read again during a host copy (links drop to Gen1 when idle)
    width_under_load: int | None = None
    replays: int | None = None          # nvmlDeviceGetPcieReplayCounter


@dataclass
class NvLink:
    link: int
    up: bool
    errors: dict[str, int] = field(default_factory=dict)   # replay, recovery, crc_flit, crc_data, ecc_data


@dataclass
class Throttle:
    mask: int                           # nvmlDeviceGetCurrentClocksEventReasons
    gpu_util_pct: int | None = None     # to tell an idle GPU from a busy one


@dataclass
class Power:
    limit_w: float | None               # nvmlDeviceGetPowerManagementLimit
    default_w: float | None             # nvmlDeviceGetPowerManagementDefaultLimit
    enforced_w: float | None = None     # nvmlDeviceGetEnforcedPowerLimit (the lowest of every limit in force)


@dataclass
class Xid:
    """XID events NVML delivered to an event set registered at the start of the run."""

    events: list[int]                   # the XID numbers, in order
    watched_s: float | None = None      # how long the set was registered


@dataclass
class GpuReadings:
    device: str = "GPU"
    ecc: Ecc | Unavailable = Unavailable("not read")
    row_remap: RowRemap | Unavailable = Unavailable("not read")
    retired_pages: RetiredPages | Unavailable = Unavailable("not read")
    pcie: Pcie | Unavailable = Unavailable("not read")
    nvlinks: list[NvLink] | Unavailable = Unavailable("not read")
    throttle: Throttle | Unavailable = Unavailable("not read")
    power: Power | Unavailable = Unavailable("not read")
    xid: Xid | Unavailable = Unavailable("not read")
