"""Clock accounting of the Tensor Core instruction probes (pure numpy: tested on the CPU).

Every CTA of a timed wgmma / mma.sync launch stamps itself: clock64 and %globaltimer at entry and exit, and
its timed loop's cycles (hwprobe/kernels/wgmma.cu, mma_sync.cu). From those stamps:

- the **kernel clock** of a launch is the CTAs' cycles over their globaltimer nanoseconds, over the same
  interval (entry to exit), summed over CTAs: the clock the SMs really ran at;
- the **rate** is the launch's work over its **span**, the first CTA's entry to the last CTA's exit
  (globaltimer), so stragglers, a second wave, the prologue and the tail are lost efficiency, not clock;
- the **event clock** (the median CTA's cycles over the launch's CUDA-event time) and NVML's median are
  compared with the kernel clock: any two more than 3% apart flag ``clock_disagreement``, with the values.
  A straggler, a second wave or time outside every CTA shows as an event clock below the kernel clock.

The share of theory is then given at each clock (``pct_at_clock``); the kernel clock is the one theory uses
(``theory_clock_source`` = "kernel").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

CLK_FIELDS = 6          # entry cycles, exit cycles, entry ns, exit ns, loop cycles, loop ns (per CTA, per launch)
AGREEMENT = 0.03        # clocks further apart than this are flagged
OFF_LAUNCHES = 0.1      # ... and so is a share of launches above this whose event clock is off by as much


@dataclass
class LaunchClocks:
    """Per timed launch (lists in launch order): clocks in MHz, times in seconds."""

    kernel_mhz: list[float]         # CTA cycles / CTA globaltimer ns, entry to exit, summed over CTAs
    event_mhz: list[float]          # median CTA cycles (entry to exit) / the launch's event time
    span_s: list[float]             # last CTA exit - first CTA entry (globaltimer)
    event_s: list[float]
    loop_cycles: list[float]        # median CTA timed-loop cycles
    ctas: int = 0

    def __bool__(self) -> bool:
        return bool(self.span_s)


def launch_clocks(stamps: np.ndarray, event_s) -> LaunchClocks:
    """``stamps`` (launches, CTAs, CLK_FIELDS) and each launch's event time -> LaunchClocks. Launches whose
    stamps are missing (a CTA wrote nothing: zeros) are left out."""
    ev = np.asarray(event_s, dtype=np.float64)
    st = np.asarray(stamps, dtype=np.float64)
    if st.ndim != 3 or st.shape[0] != len(ev) or st.shape[2] != CLK_FIELDS:
        raise ValueError(f"stamps of shape {st.shape} for {len(ev)} launches")
    out = LaunchClocks([], [], [], [], [], st.shape[1])
    for rec, t in zip(st, ev, strict=True):
        cyc, ns = rec[:, 1] - rec[:, 0], rec[:, 3] - rec[:, 2]
        if not len(rec) or np.any(rec[:, 2] <= 0) or np.any(cyc <= 0) or np.any(ns <= 0) or t <= 0:
            continue
        out.kernel_mhz.append(float(cyc.sum() / ns.sum() * 1e3))
        out.event_mhz.append(float(np.median(cyc) / t / 1e6))
        out.span_s.append(float((rec[:, 3].max() - rec[:, 2].min()) * 1e-9))
        out.event_s.append(float(t))
        out.loop_cycles.append(float(np.median(rec[:, 4])))
    return out


def disagreement(clocks: dict[str, float | None], tol: float = AGREEMENT) -> str | None:
    """The flag text when any two of the clocks given differ by more than ``tol`` (None when they agree)."""
    have = {k: v for k, v in clocks.items() if v}
    if len(have) < 2 or max(have.values()) / min(have.values()) - 1 <= tol:
        return None
    names = {"kernel": "kernel cycles/globaltimer", "event": "cycles/event time", "nvml": "NVML"}
    return "clock_disagreement: " + ", ".join(f"{names.get(k, k)} {v:.0f} MHz" for k, v in have.items())


@dataclass
class ClockVerdict:
    """What the probe writes into its measurement."""

    value: float                    # work / median span
    params: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def verdict(lc: LaunchClocks, work: float, nvml_mhz: float | None, peak_at: Callable[[float | None], float | None],
            *, ops_per_cta: float, ctas_per_sm: int, sms: int) -> ClockVerdict:
    """The rate, the three clocks, their agreement and the share of theory at each clock.

    ``peak_at(clock_mhz)`` is the theory at a clock (None: at the max clock); ``ops_per_cta`` the work of one
    CTA in one launch (for the loop's operations per SM clock)."""
    span, kernel, event = (float(np.median(x)) for x in (lc.span_s, lc.kernel_mhz, lc.event_mhz))
    value = work / span
    rate_event = work / float(np.median(lc.event_s))
    clocks = {"kernel": kernel, "event": event, "nvml": nvml_mhz}
    params = {
        "kernel_sm_mhz": [round(x, 1) for x in lc.kernel_mhz],
        "event_sm_mhz": [round(x, 1) for x in lc.event_mhz],
        "clocks_mhz": {k: round(v, 1) for k, v in clocks.items() if v},
        "theory_clock_source": "kernel",
        "rate_span": value, "rate_event": rate_event,
        "span_s": span, "event_s": float(np.median(lc.event_s)),
        "ops_per_clk_per_sm": ops_per_cta * ctas_per_sm / float(np.median(lc.loop_cycles)),
        "span_ops_per_clk_per_sm": value / (sms * kernel * 1e6),
        "stamped_launches": len(lc.span_s), "stamped_ctas": lc.ctas,
    }
    pct = {}
    for name, clk in (("kernel", kernel), ("event", event), ("nvml", nvml_mhz), ("max", None)):
        if clk is None and name != "max":
            continue
        peak = peak_at(clk)
        if peak:
            pct[name] = round(value / peak, 4)
    params["pct_at_clock"] = pct
    flags = [f] if (f := disagreement(clocks)) else []
    off = [(k, e) for k, e in zip(lc.kernel_mhz, lc.event_mhz, strict=True) if abs(e / k - 1) > AGREEMENT]
    if not flags and len(off) > OFF_LAUNCHES * len(lc.kernel_mhz):     # the medians agree, many launches do not
        worst = max(off, key=lambda ke: abs(ke[1] / ke[0] - 1))
        flags = [f"clock_disagreement: cycles/event time off the kernel clock by more than {AGREEMENT:.0%} in "
                 f"{len(off)} of {len(lc.kernel_mhz)} launches (worst: event {worst[1]:.0f} vs kernel "
                 f"{worst[0]:.0f} MHz)"]
    notes = [f"rate over the launch's span (first CTA entry to last CTA exit, globaltimer): median "
             f"{span * 1e3:.3f} ms; CUDA-event time {params['event_s'] * 1e3:.3f} ms (rate {rate_event:.4g})",
             f"SM clock over the timed launches (every CTA's clock64 over its globaltimer, entry to exit): median "
             f"{kernel:.0f} MHz (min {min(lc.kernel_mhz):.0f}); cycles/event time {event:.0f} MHz; NVML "
             + (f"{nvml_mhz:.0f} MHz" if nvml_mhz else "not read")
             + "; " + ", ".join(f"{v:.1%} of theory at the {k} clock" for k, v in pct.items())]
    return ClockVerdict(value, params, flags, notes)
