"""Clock accounting of the Tensor Core instruction probes (pure numpy: tested on the CPU).

Every CTA of a timed wgmma / mma.sync launch stamps itself: clock64 and %globaltimer at entry and exit, and
its timed loop's cycles (hwprobe/kernels/wgmma.cu, mma_sync.cu). From those stamps:

- the **kernel clock** of a launch is the CTAs' cycles over their globaltimer nanoseconds, over the same
  interval (entry to exit), summed over CTAs: the clock the SMs really ran at;
- the **rate** is the launch's work over its **span**, the first CTA's entry to the last CTA's exit
  (globaltimer), so stragglers, a second wave, the prologue and the tail are lost efficiency, not clock;
- NVML's median is compared with the kernel clock: more than 3% apart flags ``clock_disagreement``;
- the two wall clocks, the globaltimer span and the launch's CUDA-event time, are compared: more than 3% apart
  (in the median, or in over a tenth of the launches) flags ``timer_disagreement``. The event time is no
  clock: one CTA's cycles over it is the SM clock only when that CTA runs the whole launch, which a second
  wave (more CTAs than fit at once), a straggler or a staggered start each break, so it is never divided into
  cycles. How much of the span the median CTA was busy is a note (lost efficiency, not a slower clock).

The share of theory is then given at each clock (``pct_at_clock``: kernel, NVML, max); the kernel clock is the
one theory uses (``theory_clock_source`` = "kernel").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hwprobe import keys as K

CLK_FIELDS = 6          # entry cycles, exit cycles, entry ns, exit ns, loop cycles, loop ns (per CTA, per launch)
AGREEMENT = 0.03        # clocks further apart than this are flagged
OFF_LAUNCHES = 0.1      # ... and so is a share of launches above this whose event time is off the span by as much


@dataclass
class LaunchClocks:
    """Per timed launch (lists in launch order): clocks in MHz, times in seconds."""

    kernel_mhz: list[float]         # CTA cycles / CTA globaltimer ns, entry to exit, summed over CTAs
    span_s: list[float]             # last CTA exit - first CTA entry (globaltimer)
    event_s: list[float]
    loop_cycles: list[float]        # median CTA timed-loop cycles
    ctas: int = 0
    busy_share: list[float] = field(default_factory=list)   # median CTA's globaltimer time / the span

    def __bool__(self) -> bool:
        return bool(self.span_s)


def launch_clocks(stamps: np.ndarray, event_s) -> LaunchClocks:
    """``stamps`` (launches, CTAs, CLK_FIELDS) and each launch's event time -> LaunchClocks. Launches whose
    stamps are missing (a CTA wrote nothing: zeros) are left out."""
    ev = np.asarray(event_s, dtype=np.float64)
    st = np.asarray(stamps, dtype=np.float64)
    if st.ndim != 3 or st.shape[0] != len(ev) or st.shape[2] != CLK_FIELDS:
        raise ValueError(f"stamps of shape {st.shape} for {len(ev)} launches")
    out = LaunchClocks([], [], [], [], st.shape[1])
    for rec, t in zip(st, ev, strict=True):
        cyc, ns = rec[:, 1] - rec[:, 0], rec[:, 3] - rec[:, 2]
        if not len(rec) or np.any(rec[:, 2] <= 0) or np.any(cyc <= 0) or np.any(ns <= 0) or t <= 0:
            continue
        span_ns = float(rec[:, 3].max() - rec[:, 2].min())
        out.kernel_mhz.append(float(cyc.sum() / ns.sum() * 1e3))
        out.span_s.append(span_ns * 1e-9)
        out.event_s.append(float(t))
        out.loop_cycles.append(float(np.median(rec[:, 4])))
        out.busy_share.append(float(np.median(ns)) / span_ns)
    return out


def disagreement(clocks: dict[str, float | None], tol: float = AGREEMENT) -> str | None:
    """The flag text when any two of the clocks given differ by more than ``tol`` (None when they agree)."""
    have = {k: v for k, v in clocks.items() if v}
    if len(have) < 2 or max(have.values()) / min(have.values()) - 1 <= tol:
        return None
    names = {"kernel": "kernel cycles/globaltimer", "nvml": "NVML"}
    return "clock_disagreement: " + ", ".join(f"{names.get(k, k)} {v:.0f} MHz" for k, v in have.items())


@dataclass
class ClockVerdict:
    """What the probe writes into its measurement."""

    value: float                    # work / median span
    params: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def timer_disagreement(span_s: list[float], event_s: list[float], tol: float = AGREEMENT) -> str | None:
    """The flag text when the globaltimer span and the CUDA-event time of the launches differ by more than
    ``tol`` in the median or in more than OFF_LAUNCHES of the launches (None when the two wall clocks agree)."""
    off = [(s, e) for s, e in zip(span_s, event_s, strict=True) if abs(e / s - 1) > tol]
    span, event = float(np.median(span_s)), float(np.median(event_s))
    if abs(event / span - 1) <= tol and len(off) <= OFF_LAUNCHES * len(span_s):
        return None
    worst = max(off, key=lambda se: abs(se[1] / se[0] - 1))
    return (f"timer_disagreement: CUDA-event time off the globaltimer span by more than {tol:.0%} in {len(off)} "
            f"of {len(span_s)} launches (worst: event {worst[1] * 1e3:.3f} vs span {worst[0] * 1e3:.3f} ms)")


def verdict(lc: LaunchClocks, work: float, nvml_mhz: float | None, peak_at: Callable[[float | None], float | None],
            *, ops_per_cta: float, ctas_per_sm: int, sms: int) -> ClockVerdict:
    """The rate, the kernel and NVML clocks, their agreement, the two timers' agreement and the share of
    theory at each clock.

    ``peak_at(clock_mhz)`` is the theory at a clock (None: at the max clock); ``ops_per_cta`` the work of one
    CTA in one launch (for the loop's operations per SM clock)."""
    span, kernel, event_s = (float(np.median(x)) for x in (lc.span_s, lc.kernel_mhz, lc.event_s))
    value = work / span
    rate_event = work / event_s
    clocks = {"kernel": kernel, "nvml": nvml_mhz}
    busy = float(np.median(lc.busy_share)) if lc.busy_share else None
    params = {
        K.KERNEL_SM_MHZ: [round(x, 1) for x in lc.kernel_mhz],
        K.CLOCKS_MHZ: {k: round(v, 1) for k, v in clocks.items() if v},
        K.THEORY_CLOCK_SOURCE: "kernel",
        "rate_span": value, "rate_event": rate_event,
        "span_s": span, "event_s": event_s, "event_over_span": event_s / span,
        "cta_busy_share": busy,
        "ops_per_clk_per_sm": ops_per_cta * ctas_per_sm / float(np.median(lc.loop_cycles)),
        "span_ops_per_clk_per_sm": value / (sms * kernel * 1e6),
        "stamped_launches": len(lc.span_s), "stamped_ctas": lc.ctas,
    }
    pct = {}
    for name, clk in (("kernel", kernel), ("nvml", nvml_mhz), ("max", None)):
        if clk is None and name != "max":
            continue
        peak = peak_at(clk)
        if peak:
            pct[name] = round(value / peak, 4)
    params["pct_at_clock"] = pct
    flags = [f for f in (disagreement(clocks), timer_disagreement(lc.span_s, lc.event_s)) if f]
    notes = [f"rate over the launch's span (first CTA entry to last CTA exit, globaltimer): median "
             f"{span * 1e3:.3f} ms; CUDA-event time {event_s * 1e3:.3f} ms ({event_s / span - 1:+.2%}; rate "
             f"{rate_event:.4g})"
             + (f"; the median CTA ran {busy:.0%} of the span ({lc.ctas} CTAs: a second wave, a staggered "
                "start or a straggler is lost efficiency, not a slower clock)" if busy is not None else ""),
             f"SM clock over the timed launches (every CTA's clock64 over its globaltimer, entry to exit): median "
             f"{kernel:.0f} MHz (min {min(lc.kernel_mhz):.0f}); NVML "
             + (f"{nvml_mhz:.0f} MHz" if nvml_mhz else "not read")
             + "; " + ", ".join(f"{v:.1%} of theory at the {k} clock" for k, v in pct.items())]
    return ClockVerdict(value, params, flags, notes)
