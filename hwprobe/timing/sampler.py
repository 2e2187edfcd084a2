"""Samplers that read clocks, power, temperature and throttle reasons while a measurement runs.

A measurement is only as honest as the clock it ran at: the GPU sampler polls NVML on a background
thread, and the summary goes into the Measurement beside the figure.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from hwprobe.measurement import ClockSummary

# NVML clock-event ("throttle") reason bits, from nvml.h.
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


# The shortest window whose energy-counter reading is trusted (the counter steps every ~0.1 s). Reading it between
# its steps by polling during the window was tried (2026-11-27) and dropped: a read is a ~3 ms call to the GPU's
# system processor, and at ~200 reads/s CUDA-event times ran up to 12% over the kernels' globaltimer spans
# (mma_sync on an H100), which failed the gate's quick mma tests on an H100 and an H200.
MIN_ENERGY_WINDOW_S = 1.0


def decode_throttle(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


@dataclass
class _Window:
    sm: list[float] = field(default_factory=list)
    mem: list[float] = field(default_factory=list)
    power: list[float] = field(default_factory=list)
    temp: list[float] = field(default_factory=list)
    throttle: int = 0
    energy_mj_start: float | None = None
    energy_mj_end: float | None = None
    t_start: float = 0.0
    t_end: float = 0.0
    summary: ClockSummary | None = None

    def summarize(self, source: str) -> ClockSummary:
        def med(x):
            return float(np.median(x)) if x else None

        energy = power = None
        span = self.t_end - self.t_start
        if self.energy_mj_start is not None and self.energy_mj_end is not None and span >= MIN_ENERGY_WINDOW_S:
            # NVML's power reading is a ~1 s moving average that lags a short probe (a 50 ms library GEMM
            # read 123 W beside a power-cap throttle: the second before it), so it never stands for the
            # window. The energy counter gives the window's true mean power, but it advances in steps
            # (~0.1 s seen on an H200), so only a window of a second or more is read from it (shorter ones
            # read 0 J or twice the cap); a shorter window has no power figure (power_w_max keeps NVML's
            # highest reading, lag and all).
            energy = (self.energy_mj_end - self.energy_mj_start) * 1e-3
            if energy > 0:
                power = energy / span
            else:
                energy = None
        return ClockSummary(
            sm_mhz=med(self.sm), sm_mhz_min=min(self.sm) if self.sm else None,
            sm_mhz_max=max(self.sm) if self.sm else None, mem_mhz=med(self.mem),
            power_w=power, power_w_max=max(self.power) if self.power else None,
            temp_c=max(self.temp) if self.temp else None,
            throttle_reasons=[r for r in decode_throttle(self.throttle) if r != "gpu_idle"],
            energy_j=energy, n_samples=len(self.sm), source=source,
        )


class NullSampler:
    """For targets with nothing to read."""

    @contextmanager
    def window(self, energy: bool = True):
        w = _Window()
        yield w
        w.summary = ClockSummary()

    def close(self) -> None:
        pass


class ClockSampler:
    """Polls NVML every ``interval_s`` on a thread, only while a window is open."""

    def __init__(self, nvml_handle, interval_s: float = 0.01):
        self._h = nvml_handle
        self._interval = interval_s
        self._win: _Window | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hwprobe-nvml-sampler", daemon=True)
        self._thread.start()

    def _read(self, w: _Window) -> None:
        import pynvml as n

        h = self._h
        try:
            w.sm.append(float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)))
            w.mem.append(float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)))
            w.power.append(n.nvmlDeviceGetPowerUsage(h) * 1e-3)
            w.temp.append(float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)))
            w.throttle |= int(n.nvmlDeviceGetCurrentClocksEventReasons(h))
        except n.NVMLError:
            pass

    def _energy(self) -> float | None:
        import pynvml as n

        try:
            return float(n.nvmlDeviceGetTotalEnergyConsumption(self._h))
        except n.NVMLError:
            return None

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if self._win is not None:
                    self._read(self._win)
            time.sleep(self._interval)

    @contextmanager
    def window(self, energy: bool = True):
        """Clocks, power and throttle reasons over the ``with`` block; the energy counter too where ``energy``."""
        w = _Window(energy_mj_start=self._energy() if energy else None, t_start=time.perf_counter())
        with self._lock:
            self._win = w
            self._read(w)
        try:
            yield w
        finally:
            with self._lock:
                self._read(w)
                self._win = None
            w.energy_mj_end = self._energy() if energy else None
            w.t_end = time.perf_counter()
            w.summary = w.summarize("nvml")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)


class CpuClockSampler:
    """Reads the cores' current frequency (cpufreq or /proc/cpuinfo) at the start and end of a window."""

    @staticmethod
    def read_mhz() -> float | None:
        from hwprobe.device.cpu import current_mhz

        return current_mhz()

    @contextmanager
    def window(self, energy: bool = True):
        w = _Window()
        a = self.read_mhz()
        try:
            yield w
        finally:
            b = self.read_mhz()
            w.sm = [x for x in (a, b) if x]
            w.summary = w.summarize("cpufreq") if w.sm else ClockSummary()

    def close(self) -> None:
        pass
