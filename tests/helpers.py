"""Builders for synthetic measurements used by the CPU tests, and the loader of the tools/ scripts they test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hwprobe.measurement import ClockSummary, Measurement, Stats, Theory

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def load_tool(name: str):
    """A script under tools/ (``name``: its path there, without .py) loaded as a fresh module, registered under its
    file name first (dataclasses look their module up while the file executes)."""
    path = TOOLS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def meas(metric: str, value: float, *, kind: str = "compute", unit: str = "FLOP/s", precision=None,
         exec_unit=None, path=None, level=None, theory: float | None = None, valid: bool = True, **kw) -> Measurement:
    return Measurement(
        probe="test.probe", metric=metric, kind=kind, value=value, unit=unit, precision=precision,
        exec_unit=exec_unit, path=path, level=level, best=value * 1.01, work=value * 0.01,
        samples_s=[0.01, 0.0101, 0.0099], stats=Stats.of([0.01, 0.0101, 0.0099]),
        clocks=ClockSummary(sm_mhz=1755.0, power_w=690.0, throttle_reasons=["sw_power_cap"], energy_j=20.0,
                            source="nvml"),
        theory=Theory(at_clock=theory, at_max_clock=theory * 1.1 if theory else None,
                      datasheet=theory * 1.05 if theory else None, clock_mhz=1755.0) if theory else None,
        valid=valid, **kw,
    )


def sample_measurements() -> list[Measurement]:
    return [
        meas("fp32.cuda_core.ffma", 58e12, precision="fp32", exec_unit="cuda_core", path="instruction", theory=59.3e12),
        meas("fp32.cuda_core.ffma.slow", 30e12, precision="fp32", exec_unit="cuda_core", path="instruction",
             theory=59.3e12),
        meas("fp16.tensor_core.cublas", 800e12, precision="fp16", exec_unit="tensor_core", path="library",
             theory=948e12),
        meas("fp8_e4m3.tensor_core.mma", 1.4e15, precision="fp8_e4m3", exec_unit="tensor_core", path="instruction",
             theory=1.9e15),
        meas("fp64.cuda_core.dfma", 40e12, precision="fp64", exec_unit="cuda_core", path="instruction",
             theory=30e12, valid=False, flags=["above_theory: 133%"]),
        meas("dram.copy", 4.2e12, kind="memory", unit="B/s", level="dram", theory=4.81e12),
        meas("dram.read", 4.5e12, kind="memory", unit="B/s", level="dram", theory=4.81e12),
        meas("l2.capacity", 60 * 2**20, kind="capacity", unit="B", level="l2"),
        Measurement(probe="gpu.latency", metric="latency.dram", kind="latency", value=650e-9, unit="s",
                    level="dram", params={"cycles": 1200}),
        Measurement(probe="gpu.mma", metric="fp8.skipped", kind="info", value=0.0, unit="", status="skipped",
                    reason="fp8 mma.sync needs sm_89+"),
        Measurement(probe="gpu.gemm", metric="pitfall.int8_vs_fp16", kind="info", value=7.0, unit="x",
                    notes=["INT8 NN is 7x slower than FP16"]),
    ]
