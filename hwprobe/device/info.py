"""What discovery returns for a device: a GPU's or a CPU's facts (apart from discovery, which imports the
runtime modules that fill them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class GpuInfo:
    index: int
    name: str
    cc_major: int
    cc_minor: int
    sms: int
    l2_bytes: int
    mem_bytes: int
    mem_clock_mhz: float | None          # max memory clock (device attribute or NVML)
    bus_width_bits: int | None
    sm_clock_max_mhz: float | None       # NVML max SM clock, else the runtime's clockRate
    smem_per_sm_bytes: int = 0
    smem_per_block_optin_bytes: int = 0
    regs_per_sm: int = 0
    max_threads_per_sm: int = 0
    l1_smem_bytes_per_sm: int | None = None  # unified L1/shared carve-out size (from the arch table)
    integrated: bool = False
    uuid: str | None = None
    pci_bus_id: str | None = None
    driver_version: str | None = None
    cuda_driver_version: int | None = None
    cuda_runtime_version: int | None = None
    nvml: dict = field(default_factory=dict)  # power limit, ECC, PCIe gen/width, clocks now, ...
    jetson: dict | None = None           # integrated Tegra GPU: hwprobe.device.jetson readout (mode, live SMs, EMC)

    kind = "gpu"

    @property
    def arch(self) -> str:
        return f"sm_{self.cc_major}{self.cc_minor}"

    @property
    def label(self) -> str:
        return f"GPU {self.index}: {self.name} ({self.arch}, {self.sms} SMs)"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["arch"] = self.arch
        d["kind"] = self.kind
        return d


@dataclass
class CpuInfo:
    model: str
    vendor: str
    cores: int                           # physical cores available to this process
    threads: int
    flags: list[str]                     # the ISA flags that matter here: avx2, avx512f, fma, ...
    l1d_bytes: int | None = None         # per core
    l2_bytes: int | None = None          # per core
    l3_bytes: int | None = None          # total last-level cache
    base_mhz: float | None = None
    max_mhz: float | None = None
    mem_bytes: int | None = None
    fp64_flops_per_clk: int = 0          # per core, from the ISA: FMA units x lanes x 2
    fp32_flops_per_clk: int = 0
    simd: str = ""                       # "avx512", "avx2", "sse2", "neon", ...

    kind = "cpu"

    @property
    def label(self) -> str:
        return f"CPU: {self.model} ({self.cores} cores, {self.simd})"

    @property
    def llc_bytes(self) -> int:
        return self.l3_bytes or (self.l2_bytes or 0) * max(1, self.cores) or 32 << 20

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kind"] = self.kind
        return d


def device_kind(record: dict) -> str:
    """"gpu" or "cpu" for a device record (GpuInfo/CpuInfo.to_dict, or a profile's device): its own kind where it
    says one, else "gpu" for a record with an SM count or an arch (CPU records have neither). The one rule."""
    k = record.get("kind")
    if k in ("gpu", "cpu"):
        return k
    return "gpu" if record.get("sms") or record.get("arch") else "cpu"
