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


# NVML's energy counter advances in steps, one every 0.100 s on an H200 (2026-11-27: 25 steps in 2.5 s under load,
# 98-102 ms apart), and a read costs ~3 ms (a call to the GPU's system processor; clocks and power read in ~2 us).
# A window's power is read between two steps seen by polling the counter, not between its two ends: read at the
# ends, the counter lags each of them by up to a step, up to +-17% of a 1.2-s window (the 700-W-capped GEMMs read
# 651-717 W). The first step seen is not used (its count may end before the window's work began), and at least
# MIN_ENERGY_STEPS steps must lie between the two used, so the span's error (the poll gap at each end,
# ENERGY_POLL_S + one read) stays near 1%.
MIN_ENERGY_STEPS = 4
ENERGY_POLL_S = 0.002


def decode_throttle(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


@dataclass
class _Window:
    sm: list[float] = field(default_factory=list)
    mem: list[float] = field(default_factory=list)
    power: list[float] = field(default_factory=list)
    temp: list[float] = field(default_factory=list)
    throttle: int = 0
    energy: bool = False                                            # poll the energy counter
    steps: list[tuple[float, float]] = field(default_factory=list)  # (s, mJ): each counter step seen
    last_energy: tuple[float, float] | None = None                  # (s, mJ): the last read
    t_start: float = 0.0
    t_end: float = 0.0
    summary: ClockSummary | None = None

    def summarize(self, source: str) -> ClockSummary:
        def med(x):
            return float(np.median(x)) if x else None

        energy, power = self.stepped_energy()
        return ClockSummary(
            sm_mhz=med(self.sm), sm_mhz_min=min(self.sm) if self.sm else None,
            sm_mhz_max=max(self.sm) if self.sm else None, mem_mhz=med(self.mem),
            power_w=power, power_w_max=max(self.power) if self.power else None,
            temp_c=max(self.temp) if self.temp else None,
            throttle_reasons=[r for r in decode_throttle(self.throttle) if r != "gpu_idle"],
            energy_j=energy, n_samples=len(self.sm), source=source,
        )

    def stepped_energy(self) -> tuple[float | None, float | None]:
        """(joules, watts) between the second and the last counter step seen, or (None, None) with too few steps
        between them. NVML's power reading is a ~1 s moving average that lags a short probe (a 50 ms library GEMM
        read 123 W beside a power-cap throttle), so it never stands for the window."""
        used = self.steps[1:]
        if len(used) < MIN_ENERGY_STEPS + 1:
            return None, None
        (t0, e0), (t1, e1) = used[0], used[-1]
        energy = (e1 - e0) * 1e-3
        if energy <= 0 or t1 <= t0:
            return None, None
        return energy, energy / (t1 - t0)

    def poll_energy(self, t_read: float, mj: float) -> None:
        """A counter read at ``t_read`` (the read's midpoint): a new value is a step, placed halfway between this
        read and the last one."""
        if self.last_energy is not None and mj != self.last_energy[1]:
            self.steps.append((0.5 * (self.last_energy[0] + t_read), mj))
        self.last_energy = (t_read, mj)


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

    def _poll(self, w: _Window) -> None:
        t0 = time.perf_counter()
        mj = self._energy()
        if mj is not None:
            w.poll_energy(0.5 * (t0 + time.perf_counter()), mj)

    def _loop(self) -> None:
        next_read = 0.0
        while not self._stop.is_set():
            energy = False
            with self._lock:
                w = self._win
                if w is not None:
                    if time.perf_counter() >= next_read:
                        self._read(w)
                        next_read = time.perf_counter() + self._interval
                    if w.energy:
                        self._poll(w)
                        energy = True
            time.sleep(ENERGY_POLL_S if energy else self._interval)

    @contextmanager
    def window(self, energy: bool = True):
        """Clocks, power and throttle reasons over the ``with`` block; where ``energy``, the energy counter is
        polled too (its steps give the window's power: _Window.stepped_energy)."""
        w = _Window(energy=energy, t_start=time.perf_counter())
        with self._lock:
            self._read(w)
            if energy:
                self._poll(w)
            self._win = w
        try:
            yield w
        finally:
            with self._lock:
                self._read(w)
                if energy:
                    self._poll(w)
                self._win = None
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
