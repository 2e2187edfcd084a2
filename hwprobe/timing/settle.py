"""Letting a GPU settle before a ceiling, so that one probe's heat and power draw do not lower the next one's.

The rule (recorded with every compute figure as ``params["start_state"]``): before each compute probe, wait
until the GPU is back near where the run found it — temperature at most ``TEMP_MARGIN_C`` above the coolest
reading seen so far in the run, and idle: power at most ``POWER_IDLE_FACTOR`` x the lowest idle power seen —
polling NVML every ``POLL_S``, for at most ``MAX_WAIT_S``. A GPU that does not get there in time is measured
anyway, and the record says so (``settled: false``). Clocks are only read, never set.

Idle is read two ways. NVML's power reading is a ~1-s moving average, so by it alone every settle after work
lasts about a second (issue 33: 20 such waits in gpu.gemm alone). Where the driver has the instantaneous power
field, the GPU is also idle once that reads at most ``IDLE_SHARE`` of the enforced power limit and the SM clock
is back within ``CLOCK_SHARE`` of the highest seen in the run (the power limiter has let go). On an H200
(2026-11-27, tools/rest_burst.py, 2-s loads at the 700-W cap): instantaneous power falls to ~130 W within 0.1 s
and the clock is back at 1965-1980 MHz within 0.2-0.5 s, while the average still reads 550-690 W; a 50-ms
8192^3 FP64 burst after 0.3 s of rest ran at 0.994-0.995 of its rate on a GPU rested 5 s (0.997-0.998 after
1 s), FP16 no differently after 0.1 s than after 2 s. Which reading ended the wait goes into the record (``by``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

TEMP_MARGIN_C = 5.0
POWER_IDLE_FACTOR = 1.5
MAX_WAIT_S = 6.0
POLL_S = 0.05
IDLE_SHARE = 0.25          # instantaneous power at most this share of the enforced limit ...
CLOCK_SHARE = 0.99         # ... with the SM clock at least this share of the highest seen in the run
FI_POWER_INSTANT = 186     # nvml.h NVML_FI_DEV_POWER_INSTANT (mW), where pynvml does not name it

_floor: dict[str, float] = {}      # coolest temperature and lowest power seen in this process, per sampler


def read_state(sampler) -> dict[str, float] | None:
    """Temperature, power (averaged; instantaneous and the enforced limit where the driver has them) and SM clock
    now (None where the sampler has no NVML handle)."""
    h = getattr(sampler, "_h", None)
    if h is None:
        return None
    import pynvml as n

    try:
        out = {"temp_c": float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
               "power_w": n.nvmlDeviceGetPowerUsage(h) * 1e-3,
               "sm_mhz": float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))}
    except n.NVMLError:
        return None
    try:
        v = n.nvmlDeviceGetFieldValues(h, [getattr(n, "NVML_FI_DEV_POWER_INSTANT", FI_POWER_INSTANT)])[0]
        if v.nvmlReturn == 0:
            out["power_now_w"] = v.value.uiVal * 1e-3
        out["power_limit_w"] = n.nvmlDeviceGetEnforcedPowerLimit(h) * 1e-3
    except (n.NVMLError, AttributeError, IndexError):
        pass
    return out


def idle_now(state: dict[str, float], top_mhz: float) -> bool:
    """Idle by the instantaneous reading: low power and the clock back near its highest (module docstring)."""
    now, limit = state.get("power_now_w"), state.get("power_limit_w")
    return (now is not None and bool(limit) and now <= IDLE_SHARE * limit
            and state["sm_mhz"] >= CLOCK_SHARE * top_mhz)


def settle(sampler, *, check: Callable[[], None] = lambda: None, read: Callable[[Any], dict | None] = read_state,
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
    top = max(_floor.get(key + "c", first["sm_mhz"]), first["sm_mhz"])
    t0, state, by = clock(), first, None
    while True:
        if state["temp_c"] <= floor_t + temp_margin_c:
            by = ("averaged power" if state["power_w"] <= power_factor * floor_p
                  else "instantaneous power and clock" if idle_now(state, top) else None)
        if by or clock() - t0 >= max_wait_s:
            break
        check()
        sleep(POLL_S)
        state = read(sampler) or state
        floor_t, floor_p = min(floor_t, state["temp_c"]), min(floor_p, state["power_w"])
        top = max(top, state["sm_mhz"])
    _floor[key + "t"], _floor[key + "p"], _floor[key + "c"] = floor_t, floor_p, top
    return {"settled": by is not None, "waited_s": round(clock() - t0, 2),
            **{k: round(v, 1) for k, v in state.items()}, **({"by": by} if by else {}),
            "rule": f"temp <= {floor_t:.0f}+{temp_margin_c:.0f} C and idle: power <= {power_factor}x "
                    f"{floor_p:.0f} W, or instantaneous power <= {IDLE_SHARE:.0%} of the limit with the SM clock "
                    f">= {CLOCK_SHARE:.0%} of {top:.0f} MHz; at most {max_wait_s:.0f} s"}
