"""Letting a GPU settle before a ceiling, so that one probe's heat and power draw do not lower the next one's.

The rule (recorded with every compute figure as ``params["start_state"]``): before each compute probe, wait
until the GPU is back near where the run found it — temperature at most ``TEMP_MARGIN_C`` above the coolest
reading seen so far in the run, and idle: power at most ``POWER_IDLE_FACTOR`` x the lowest idle power seen —
polling NVML every ``POLL_S``, for at most ``MAX_WAIT_S``. A GPU that does not get there in time is measured
anyway, and the record says so (``settled: false``). Clocks are only read, never set. A compute probe whose figures
were shown not to depend on the start state (gpu.gemm_power, gpu.roofline: ``cool_start=False``) is not waited for.

Idle is NVML's averaged power (a ~1-s moving average), so every settle after work lasts about a second. The
instantaneous power field, where the driver has it, is recorded beside it (``power_now_w``) but does not end
the wait. Ending it there was tried (issue 33, 2026-11-27): on an H200 the card idles at ~130 W within 0.1 s of
a 700-W load and its clock is back within 0.2-0.5 s (tools/rest_burst.py: 50-ms FP64 bursts after 0.3 s of rest
ran at 0.994-0.995 of a 5-s-rested one, the average still at 530-570 W), and gpu.gemm's settles fell from ~1 s
to 0.1-0.5 s. But in the same-lease A/B the FP64 library ceiling (n4096, same kernel, NVML clock 1980 MHz in
both) read 57.5 TFLOP/s after 0.25 s of rest, its samples spread 4.1% (against 1.2%), against 61.0 after the
usual 1.0 s; in the lease before, 60.9 after 0.3 s. Which of the short wait or chance made the -5.7% is not
established, so the rule that passed the earlier A/Bs stays.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

TEMP_MARGIN_C = 5.0
POWER_IDLE_FACTOR = 1.5
MAX_WAIT_S = 6.0
POLL_S = 0.1
FI_POWER_INSTANT = 186     # nvml.h NVML_FI_DEV_POWER_INSTANT (mW), where pynvml does not name it

_floor: dict[str, float] = {}      # coolest temperature and lowest power seen in this process, per sampler


def read_state(sampler) -> dict[str, float] | None:
    """Temperature, averaged power and SM clock now: what each poll reads (None where the sampler has no NVML
    handle)."""
    h = getattr(sampler, "_h", None)
    if h is None:
        return None
    import pynvml as n

    try:
        return {"temp_c": float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
                "power_w": n.nvmlDeviceGetPowerUsage(h) * 1e-3,
                "sm_mhz": float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))}
    except n.NVMLError:
        return None


def read_instant(sampler) -> dict[str, float]:
    """The instantaneous power where the driver has it (``power_now_w``), read once when the wait ends: it is
    recorded, and no poll decides on it."""
    h = getattr(sampler, "_h", None)
    if h is None:
        return {}
    import pynvml as n

    try:
        v = n.nvmlDeviceGetFieldValues(h, [getattr(n, "NVML_FI_DEV_POWER_INSTANT", FI_POWER_INSTANT)])[0]
        return {"power_now_w": v.value.uiVal * 1e-3} if v.nvmlReturn == 0 else {}
    except (n.NVMLError, AttributeError, IndexError):
        return {}


def settle(sampler, *, check: Callable[[], None] = lambda: None, read: Callable[[Any], dict | None] = read_state,
           instant: Callable[[Any], dict] = read_instant,
           clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
           max_wait_s: float = MAX_WAIT_S, temp_margin_c: float = TEMP_MARGIN_C,
           power_factor: float = POWER_IDLE_FACTOR) -> dict[str, Any] | None:
    """Wait by the rule above (its margins as given: a figure that needs a cooler start asks for tighter ones);
    return the state the next figure starts from, or None without NVML."""
    first = read(sampler)
    if first is None:
        return None
    key = str(id(sampler))
    floor_t = min(_floor.get(key + "t", first["temp_c"]), first["temp_c"])
    floor_p = min(_floor.get(key + "p", first["power_w"]), first["power_w"])
    t0, state = clock(), first
    while True:
        ok = state["temp_c"] <= floor_t + temp_margin_c and state["power_w"] <= power_factor * floor_p
        if ok or clock() - t0 >= max_wait_s:
            break
        check()
        sleep(POLL_S)
        state = read(sampler) or state
        floor_t, floor_p = min(floor_t, state["temp_c"]), min(floor_p, state["power_w"])
    _floor[key + "t"], _floor[key + "p"] = floor_t, floor_p
    state = {**state, **instant(sampler)}
    return {"settled": bool(ok), "waited_s": round(clock() - t0, 2), **{k: round(v, 1) for k, v in state.items()},
            "rule": f"temp <= {floor_t:.0f}+{temp_margin_c:.0f} C and power <= {power_factor}x "
                    f"{floor_p:.0f} W, at most {max_wait_s:.0f} s"}
