"""Datasheet entries (skus.toml) and the theory beside every measurement.

A ``DeviceTheory`` holds what theory needs about one device (SMs, clocks, bus, PCIe link, per-SM rates) and
the datasheet it matched. It computes peaks at the max clock and at any given clock, and lists where theory
and datasheet disagree. Judging a measurement against it is hwprobe.judge's job.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from hwprobe.errors import InputError
from hwprobe.measurement import Theory
from hwprobe.specs import theory as th
from hwprobe.units import si
from hwprobe.vocab import PROFILE_PRECISIONS, ExecUnit

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

# Vendor parts that run TF32 and BF16 tensor math at half rate (FP32 accumulate), when no entry matched.
GEFORCE_TENSOR_SCALE = {"sm_86": {"tf32": 0.5, "bf16": 0.5}, "sm_89": {"tf32": 0.5, "bf16": 0.5}}
_LEVEL_ALIASES = {"hbm": "dram", "gmem": "dram", "global": "dram", "smem": "shared"}


@dataclass(frozen=True)
class DatasheetValue:
    value: float                 # dense FLOP/s or OP/s, or B/s
    clock_mhz: float | None      # the SM clock the figure assumes (None for bandwidth and CPUs)


@dataclass(frozen=True)
class PowerMode:
    """One nvpmodel power mode of a Jetson module: what it caps (from NVIDIA's nvpmodel.conf for the module)."""

    id: int
    name: str
    gpu_max_mhz: float            # the devfreq cap the mode writes (GPU MAX_FREQ; -1 there = the module's max)
    tpcs: int                     # TPCs left on by TPC_PG_MASK
    emc_mhz: float                # EMC MAX_FREQ cap (0/-1 there = the module's max)
    min_jetpack: str = ""         # the mode exists from this JetPack on (the Super modes: "6.2")
    note: str = ""


@dataclass
class Sku:
    name: str
    kind: str = "gpu"                        # "gpu" | "cpu"
    aliases: list[str] = field(default_factory=list)
    match: list[str] = field(default_factory=list)
    arch: str | None = None
    sms: int = 0
    boost_clock_mhz: float | None = None
    base_clock_mhz: float | None = None
    datasheet_clock_mhz: float | None = None
    mem_type: str | None = None
    mem_clock_mhz: float | None = None
    data_rate: float = 2
    bus_width_bits: int | None = None
    channels: int = 1
    mem_gb: float | None = None
    l2_mib: float | None = None
    l2_slices: int | None = None             # L2 slices (LTS units) and the L2 clock, where a profiler read them
    l2_clock_mhz: float | None = None
    l2_source: str = ""
    tdp_w: float | None = None
    integrated: bool = False
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    tensor_rate_scale: dict[str, float] = field(default_factory=dict)
    datasheet: dict[str, DatasheetValue] = field(default_factory=dict)   # "precision.unit" -> value
    datasheet_bandwidth: float | None = None
    cores: int = 0                           # CPU
    clock_mhz: float | None = None           # CPU: the clock the example uses
    flops_per_clk: dict[str, float] = field(default_factory=dict)        # CPU, per core
    source: str = ""
    notes: list[str] = field(default_factory=list)
    # Jetson modules: power modes, TPCs, device-tree part numbers, the DLA and sparse figures (see modes.py)
    power_modes: list[PowerMode] = field(default_factory=list)
    tpcs: int | None = None                  # TPCs on in the fullest mode (SMs = tpcs x sms_per_tpc)
    sms_per_tpc: int | None = None
    part_numbers: list[str] = field(default_factory=list)                # "p3701-0005" (device-tree compatible)
    dla: int = 0                             # deep-learning accelerators beside the GPU
    marketing_tops: float | None = None      # the headline figure (may count DLAs and 2:4 sparsity)
    marketing_tops_basis: str = ""
    datasheet_sparse: dict[str, float] = field(default_factory=dict)     # "precision.unit" -> published 2:4 rate

    @property
    def mem_bytes(self) -> int | None:
        return int(self.mem_gb * 2**30) if self.mem_gb else None

    @property
    def l2_bytes(self) -> int | None:
        return int(self.l2_mib * 2**20) if self.l2_mib else None

    @property
    def reported_mem_clock_mhz(self) -> float | None:
        """The memory clock CUDA and NVML report for this part (per-pin rate / 2)."""
        return self.mem_clock_mhz * self.data_rate / 2 if self.mem_clock_mhz else None

    @classmethod
    def from_toml(cls, d: dict) -> Sku:
        d = dict(d)
        sheet = {}
        for key, v in d.pop("datasheet", {}).items():
            if isinstance(v, dict):
                sheet[key] = DatasheetValue(float(v["value"]), float(v["clock_mhz"]))
            else:
                sheet[key] = DatasheetValue(float(v), None)
        d["power_modes"] = [PowerMode(**m) for m in d.pop("power_modes", [])]
        sku = cls(**d, datasheet=sheet)
        if sku.kind == "gpu" and sku.datasheet_clock_mhz is None:
            sku.datasheet_clock_mhz = sku.boost_clock_mhz
        return sku

    def datasheet_value(self, key: str) -> DatasheetValue | None:
        """The published figure for "precision.unit", with the clock it assumes filled in."""
        v = self.datasheet.get(key)
        if v is None or v.clock_mhz is not None or self.kind == "cpu":
            return v
        return DatasheetValue(v.value, self.datasheet_clock_mhz)


@cache
def skus() -> dict[str, Sku]:
    """Every entry of skus.toml, by name."""
    with open(Path(__file__).with_name("skus.toml"), "rb") as f:
        data = tomllib.load(f)
    return {e["name"]: Sku.from_toml(e) for e in data["sku"]}


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def find(name: str) -> Sku:
    """The entry named ``name`` (or an alias, or a CUDA device name); InputError lists close matches."""
    table = skus()
    keys = {}
    for sku in table.values():
        for k in [sku.name, *sku.aliases]:
            keys.setdefault(_norm(k), sku)
    n = _norm(name)
    if n in keys:
        return keys[n]
    by_device = match(name)
    if by_device:
        return by_device
    partial = sorted({s.name for k, s in keys.items() if n and n in k})
    if len(partial) == 1:
        return table[partial[0]]
    if partial:
        raise InputError(f"spec {name!r} is ambiguous: {', '.join(partial)}")
    spelled = {k: s.name for s in table.values() for k in [s.name, *s.aliases]}
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in spelled], n=5, cutoff=0.5)
    lower = {k.lower(): v for k, v in spelled.items()}
    names = list(dict.fromkeys(lower[c] for c in close))
    hint = f"close matches: {', '.join(names)}" if names else f"known: {', '.join(table)}"
    raise InputError(f"unknown spec {name!r}; {hint}")


def match(gpu_name: str, sms: int | None = None, mem_bytes: int | None = None,
          clock_mhz: float | None = None) -> Sku | None:
    """The entry for a CUDA device name; SM count, memory size and max clock pick among same-named parts
    (every Orin reports "Orin"). None when nothing fits or the choice stays ambiguous."""
    found = [s for s in skus().values() if s.kind == "gpu" and any(re.search(p, gpu_name) for p in s.match)]
    if sms:
        found = [s for s in found if s.sms == sms]
    if len(found) > 1 and mem_bytes:
        best = min(abs((s.mem_bytes or 0) - mem_bytes) for s in found)
        found = [s for s in found if abs((s.mem_bytes or 0) - mem_bytes) == best]
    if len(found) > 1 and clock_mhz:
        best = min(abs((s.boost_clock_mhz or 0) - clock_mhz) for s in found)
        found = [s for s in found if abs((s.boost_clock_mhz or 0) - clock_mhz) == best]
    return found[0] if len(found) == 1 else None


@dataclass
class DeviceTheory:
    """What theory needs about one device; built by ``device_theory`` (live) or ``sku_theory`` (datasheet)."""

    label: str
    kind: str                                  # "gpu" | "cpu"
    arch: str | None = None
    sms: int = 0
    max_clock_mhz: float | None = None         # SM clock (GPU) or core clock (CPU) the peaks assume
    mem_clock_mhz: float | None = None
    data_rate: float = 2
    bus_width_bits: int | None = None
    channels: int = 1
    mem_source: str = "device"                 # where the memory fields came from
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    integrated: bool = False
    cores: int = 0                             # CPU
    flops_per_clk: dict[str, float] = field(default_factory=dict)   # CPU, per core
    rate_scale: dict[str, float] = field(default_factory=dict)      # tensor precision -> factor
    sku: Sku | None = None
    notes: list[str] = field(default_factory=list)                  # device vs datasheet configuration

    # ------------------------------------------------------------------------------------ compute
    def _fma_rate(self, precision: str, unit: str) -> float | None:
        r = th.rates(self.arch or "", precision, unit)
        if r is None:
            return None
        if unit == ExecUnit.TENSOR_CORE:
            r *= self.rate_scale.get(th.normalize_precision(precision), 1.0)
        return r

    def compute(self, precision: str, unit: str, clock_mhz: float | None = None,
                sparse: bool = False) -> Theory | None:
        """Peak FLOP/s or OP/s at ``clock_mhz`` (default: the max clock) and at the max clock."""
        p = th.normalize_precision(precision)
        max_c = self.max_clock_mhz
        clk = clock_mhz or max_c
        if not clk:
            return None
        if self.kind == "cpu":
            per = self.flops_per_clk.get(p)
            if unit != ExecUnit.CPU or not per or not self.cores:
                return None
            at = lambda c: th.cpu_peak(self.cores, c, per)  # noqa: E731
            basis = f"{self.cores} cores x {per:g} FLOP/clk/core x {clk:.0f} MHz"
            factor = 1.0
        else:
            fma = self._fma_rate(p, unit)
            if fma is None or not self.sms:
                return None
            factor = 1.0
            if sparse:
                factor = th.sparse_factor(self.arch or "") or 0.0
                if not factor or unit != ExecUnit.TENSOR_CORE:
                    return None
            at = lambda c: th.peak_ops(fma * factor, self.sms, c)  # noqa: E731
            basis = f"{self.sms} SM x {fma * factor:g} FMA/clk/SM x 2 x {clk:.0f} MHz"
            if sparse:
                basis += " (2:4 sparse)"
        sheet = self.sku.datasheet_value(f"{p}.{unit}") if self.sku else None
        ds = sheet.value * factor if sheet else None
        if sheet and sheet.clock_mhz and abs(sheet.clock_mhz - clk) > 0.5:
            basis += f"; the datasheet assumes {sheet.clock_mhz:.0f} MHz"
        return Theory(at_clock=at(clk), at_max_clock=at(max_c) if max_c else None, datasheet=ds,
                      clock_mhz=clk, max_clock_mhz=max_c, basis=basis)

    # ------------------------------------------------------------------------------------ memory
    def _dram_max(self) -> float | None:
        if not (self.mem_clock_mhz and self.bus_width_bits):
            return None
        return th.dram_bandwidth(self.mem_clock_mhz, self.bus_width_bits, self.data_rate, self.channels)

    def memory(self, level: str, clock_mhz: float | None = None) -> Theory | None:
        """Bandwidth (B/s) of a memory level. ``clock_mhz`` is the memory clock as NVML reports it for
        "dram", the SM clock for "shared"/"l1"; unused for host links and "l2" (its own clock)."""
        level = _LEVEL_ALIASES.get(level, level)
        ds = None
        if level == "l2":
            return self._l2()
        if level == "dram":
            peak = self._dram_max()
            if peak is None:
                return None
            reported = self.mem_clock_mhz * self.data_rate / 2      # NVML's convention for the same clock
            at = peak * clock_mhz / reported if clock_mhz and self.kind == "gpu" else peak
            ch = f" x {self.channels} ch" if self.channels > 1 else ""
            basis = (f"{self.mem_clock_mhz:g} MHz x {self.data_rate:g} x {self.bus_width_bits}-bit / 8{ch}"
                     f" ({self.mem_source})")
            ds = self.sku.datasheet_bandwidth if self.sku else None
            return Theory(at_clock=at, at_max_clock=peak, datasheet=ds,
                          clock_mhz=clock_mhz or reported, max_clock_mhz=reported, basis=basis)
        if level in ("shared", "l1"):
            per = th.bytes_per_clk_per_sm(self.arch or "", level)
            clk = clock_mhz or self.max_clock_mhz
            if not per or not self.sms or not clk or self.kind != "gpu":
                return None
            return Theory(at_clock=per * self.sms * clk * 1e6,
                          at_max_clock=per * self.sms * self.max_clock_mhz * 1e6 if self.max_clock_mhz else None,
                          clock_mhz=clk, max_clock_mhz=self.max_clock_mhz,
                          basis=f"{self.sms} SM x {per:g} B/clk/SM x {clk:.0f} MHz")
        if level in ("host_h2d", "host_d2h", "host_bidir"):
            if self.integrated or not (self.pcie_gen and self.pcie_lanes):
                return None
            one = th.pcie_bandwidth(self.pcie_gen, self.pcie_lanes)
            if one is None:
                return None
            bw = one * (2 if level == "host_bidir" else 1)
            way = "both directions" if level == "host_bidir" else "per direction"
            basis = f"PCIe Gen{self.pcie_gen} x{self.pcie_lanes}, {way}, after line coding, before packet overhead"
            return Theory(at_clock=bw, at_max_clock=bw, basis=basis)
        return None

    def _l2(self) -> Theory | None:
        """L2 read bandwidth: slices x the bytes each returns to the crossbar per L2 clock x the L2 clock. Where
        NVIDIA publishes neither slice count nor L2 clock, the SKU entry carries what Nsight Compute reads
        (lts__t_sectors.sum.peak_sustained / 3 sectors per slice, lts__cycles_elapsed.avg.per_second)."""
        per = th.l2_bytes_per_clk_per_slice(self.arch or "")
        sku = self.sku
        if not (per and sku and sku.l2_slices and sku.l2_clock_mhz) or self.kind != "gpu":
            return None
        bw = sku.l2_slices * per * sku.l2_clock_mhz * 1e6
        basis = (f"inferred: {sku.l2_slices} L2 slices x {per:g} B/clk to the crossbar (inferred from port-busy "
                 f"counters; Nsight Compute's per-slice peak reads 96 B/clk) x {sku.l2_clock_mhz:g} MHz L2 clock "
                 f"({sku.l2_source})")
        return Theory(at_clock=bw, at_max_clock=bw, clock_mhz=sku.l2_clock_mhz, max_clock_mhz=sku.l2_clock_mhz,
                      basis=basis)

    @property
    def bandwidth(self) -> Theory | None:
        """DRAM bandwidth theory (the roofline's slope)."""
        return self.memory("dram")

    # ------------------------------------------------------------------------------------ tables
    def _pairs(self) -> list[tuple[str, str]]:
        if self.kind == "cpu":
            return [(p, ExecUnit.CPU) for p in PROFILE_PRECISIONS if self.flops_per_clk.get(p)]
        return [(p, u) for u in th.UNITS for p in PROFILE_PRECISIONS if th.rates(self.arch or "", p, u)]

    def table(self) -> list[dict]:
        """One row per (precision, unit): peak at the max clock, sparse peak, datasheet, ridge point vs DRAM."""
        from hwprobe.roofline import ridge

        bw = self.bandwidth
        rows = []
        for p, u in self._pairs():
            t = self.compute(p, u)
            if t is None:
                continue
            sp = self.compute(p, u, sparse=True) if u == ExecUnit.TENSOR_CORE else None
            sheet = self.sku.datasheet_value(f"{p}.{u}") if self.sku else None
            rows.append({
                "precision": p, "unit": u, "op_unit": th.op_unit(p),
                "peak": t.at_max_clock, "peak_sparse": sp.at_max_clock if sp else None,
                "clock_mhz": t.max_clock_mhz,
                "datasheet": t.datasheet, "datasheet_clock_mhz": sheet.clock_mhz if sheet else None,
                "ridge": ridge(t.at_max_clock, bw.at_max_clock) if t.at_max_clock and bw and bw.at_max_clock else None,
                "basis": t.basis,
            })
        return rows

    def memory_table(self) -> list[dict]:
        """One row per memory level theory knows for this device."""
        rows = []
        for level in ("dram", "l1", "shared", "host_h2d", "host_d2h", "host_bidir"):
            t = self.memory(level)
            if t is not None:
                rows.append({"level": level, "peak": t.at_max_clock, "datasheet": t.datasheet, "basis": t.basis})
        return rows

    def disagreements(self, compute_tol: float = 0.01, memory_tol: float = 0.001) -> list[str]:
        """Where theory at the max clock and the datasheet differ (relative tolerances), with both numbers;
        and where the device's configuration differs from its datasheet entry."""
        out = list(self.notes)
        if not self.sku:
            return out
        for row in self.table():
            ds, peak = row["datasheet"], row["peak"]
            if ds and peak and abs(peak / ds - 1) > compute_tol:
                why = ""
                if row["datasheet_clock_mhz"] and abs(row["datasheet_clock_mhz"] - (row["clock_mhz"] or 0)) > 0.5:
                    why = f"; the datasheet assumes {row['datasheet_clock_mhz']:.0f} MHz"
                out.append(f"{row['precision']} {row['unit']}: theory {si(peak, row['op_unit'], 4)} at "
                           f"{row['clock_mhz']:.0f} MHz vs datasheet {si(ds, row['op_unit'], 4)} "
                           f"({peak / ds - 1:+.1%}){why}")
        bw = self.bandwidth
        if bw and bw.datasheet and abs(bw.at_max_clock / bw.datasheet - 1) > memory_tol:
            out.append(f"dram bandwidth: theory {si(bw.at_max_clock, 'B/s', 4)} ({bw.basis}) vs datasheet "
                       f"{si(bw.datasheet, 'B/s', 4)} ({bw.at_max_clock / bw.datasheet - 1:+.1%})")
        return out


def sku_theory(sku: Sku) -> DeviceTheory:
    """Theory for a datasheet entry alone (``hwprobe specs NAME``): peaks at the boost clock."""
    if sku.kind == "cpu":
        return DeviceTheory(
            label=f"{sku.name} (datasheet)", kind="cpu", max_clock_mhz=sku.clock_mhz,
            mem_clock_mhz=sku.mem_clock_mhz, data_rate=sku.data_rate, bus_width_bits=sku.bus_width_bits,
            channels=sku.channels, mem_source="spec table", cores=sku.cores,
            flops_per_clk=dict(sku.flops_per_clk), sku=sku,
        )
    return DeviceTheory(
        label=f"{sku.name} ({sku.arch}, {sku.sms} SMs, boost {sku.boost_clock_mhz:g} MHz; datasheet)",
        kind="gpu", arch=sku.arch, sms=sku.sms, max_clock_mhz=sku.boost_clock_mhz,
        mem_clock_mhz=sku.mem_clock_mhz, data_rate=sku.data_rate, bus_width_bits=sku.bus_width_bits,
        channels=sku.channels, mem_source="spec table", pcie_gen=sku.pcie_gen, pcie_lanes=sku.pcie_lanes,
        integrated=sku.integrated, rate_scale=dict(sku.tensor_rate_scale), sku=sku,
    )


def match_cpu(model: str) -> Sku | None:
    """A CPU entry whose match patterns fit the model string (the seeds' CPU entries have none)."""
    for s in skus().values():
        if s.kind == "cpu" and any(re.search(p, model) for p in s.match):
            return s
    return None


__all__ = [
    "DatasheetValue", "DeviceTheory", "Sku", "find", "match", "match_cpu", "sku_theory", "skus",
]
