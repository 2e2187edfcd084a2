"""Theoretical peaks from first principles, as the seeds teach them.

compute:   peak = clock x SMs x multiply-adds per clock per SM x 2 (a multiply-add counts as 2 operations)
memory:    bandwidth = memory clock x data rate x bus bytes x channels
Pure functions over numbers, plus the per-architecture rate table (arch.toml) they read.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hwprobe.vocab import ExecUnit

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

OPS_PER_FMA = 2
UNITS = (ExecUnit.CUDA_CORE, ExecUnit.TENSOR_CORE)
_ALIASES = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8", "half": "fp16",
            "float": "fp32", "double": "fp64", "single": "fp32"}

# PCIe per lane: (GT/s, line-code efficiency). Gen6 uses PAM4 with 256-byte FLITs, 242 of them payload.
PCIE_LANE = {
    1: (2.5, 8 / 10),
    2: (5.0, 8 / 10),
    3: (8.0, 128 / 130),
    4: (16.0, 128 / 130),
    5: (32.0, 128 / 130),
    6: (64.0, 242 / 256),
}


def peak_ops(fma_per_clk_per_sm: float, sms: int, clock_mhz: float) -> float:
    """Operations per second: multiply-adds per clock per SM x SMs x clock x 2."""
    return OPS_PER_FMA * fma_per_clk_per_sm * sms * clock_mhz * 1e6


def cpu_peak(cores: int, clock_mhz: float, flops_per_clk_per_core: float) -> float:
    """FLOP/s of a CPU; ``flops_per_clk_per_core`` already counts an FMA as 2 (Haswell FP64: 2 x 4 x 2 = 16)."""
    return cores * clock_mhz * 1e6 * flops_per_clk_per_core


def dram_bandwidth(mem_clock_mhz: float, bus_width_bits: float, data_rate: float = 2, channels: int = 1) -> float:
    """B/s: memory clock x transfers per clock x bus bytes x channels (DDR and HBM: data_rate 2)."""
    return mem_clock_mhz * 1e6 * data_rate * bus_width_bits / 8 * channels


def pcie_bandwidth(gen: int, lanes: int) -> float | None:
    """B/s per direction after line coding, before packet (TLP) overhead: Gen5 x16 = 63.0 GB/s."""
    if gen not in PCIE_LANE or not lanes:
        return None
    gts, eff = PCIE_LANE[gen]
    return gts * 1e9 * eff * lanes / 8


def normalize_precision(precision: str) -> str:
    p = precision.lower()
    return _ALIASES.get(p, p)


def op_unit(precision: str) -> str:
    """'OP/s' for integer precisions, 'FLOP/s' for the rest."""
    return "OP/s" if normalize_precision(precision).startswith("int") else "FLOP/s"


@cache
def arch_table() -> dict:
    """arch.toml: per compute capability, multiply-adds per clock per SM for each (unit, precision)."""
    with open(Path(__file__).with_name("arch.toml"), "rb") as f:
        return tomllib.load(f)


def arch_facts(arch: str) -> dict | None:
    """Everything arch.toml says about one architecture ("sm_90"), or None."""
    return arch_table().get(arch)


def rates(arch: str, precision: str, unit: str) -> float | None:
    """Dense multiply-adds per clock per SM, or None when the unit lacks the precision (or no rate is known)."""
    facts = arch_facts(arch)
    if not facts or unit not in UNITS:
        return None
    return facts.get(unit, {}).get(normalize_precision(precision))


def sparse_factor(arch: str) -> float | None:
    """How much 2:4 structured sparsity multiplies the tensor rates; None where there is none."""
    facts = arch_facts(arch)
    return facts.get("sparse_factor") if facts else None


def l2_bytes_per_clk_per_slice(arch: str) -> float | None:
    """Bytes one L2 slice returns to the crossbar per L2 clock (reads)."""
    return (arch_facts(arch) or {}).get("l2_bytes_per_clk_per_slice")


def bytes_per_clk_per_sm(arch: str, level: str) -> float | None:
    """Shared-memory or L1 load bytes per clock per SM."""
    facts = arch_facts(arch)
    if not facts:
        return None
    return facts.get(f"{level}_bytes_per_clk_per_sm")
