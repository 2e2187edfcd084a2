"""Judging a measurement against theory: which clock explains it, is it above what the hardware can do.

Theory itself (peaks at any clock) lives in hwprobe.specs; this step picks the clock a figure ran at, attaches
the theory there, and marks the record: ``clock_disagreement`` where the kernel's own clock and NVML's differ,
``theory_clock_moved``/``clock_lag`` wherever theory had to move off the clock first chosen (every move is
flagged), and invalid when even the most generous defensible clock cannot explain the rate (3% tolerance);
the L2, whose theory rests on an inferred per-slice rate, is flagged ``above_inferred_theory`` instead.

Clock sources, in order of trust (``params["theory_clock_source"]`` names the one used):
- "kernel": clock64 cycles over %globaltimer of the timed kernel itself (``params["kernel_sm_mhz"]``);
- "sentinel": a clock64/globaltimer kernel run just before and after a library's timed window
  (``params["sentinel_sm_mhz"]``);
- "nvml": NVML's median SM clock over the window (it lags by ~100 ms);
- "max": the device's max clock: a CPU's (cpufreq's max, never the current reading, which a VM reports wrongly),
  a GPU's only when a rate timed without its own clock needs it (``clock_lag``);
- "measured": a CPU core's clock timed on a dependent add chain just before and after the window
  (``params["cpu_mhz_around"]``), where it is above the max recorded (a VM's host boosting past the clock
  measured at boot); the move is flagged.
"""

from __future__ import annotations

from collections.abc import Callable

from hwprobe import keys as K
from hwprobe.flags import Code, Flag, has
from hwprobe.measurement import Measurement, Theory
from hwprobe.units import si
from hwprobe.vocab import Kind

SAMPLED = ("nvml",)   # clocks read beside the run (they lag), not timed by the kernel itself
ABOVE_THEORY = 1.03          # a result more than 3% above theory at its clock is invalid
CLOCK_AGREEMENT = 0.03       # kernel (or sentinel) and NVML clocks further apart than this are flagged
_LEVEL_ALIASES = {"hbm": "dram", "gmem": "dram", "global": "dram", "smem": "shared"}


def _clock_list(v) -> list[float]:
    """A clock param as a list of MHz: params hold one reading or one per sample (none: empty)."""
    if not v:
        return []
    return [float(x) for x in v] if isinstance(v, list) else [float(v)]


def _median(vals: list[float]) -> float:
    vals = sorted(vals)
    return float(vals[len(vals) // 2])


def own_clock(m: Measurement) -> tuple[float | None, float | None, str]:
    """(clock, highest clock, source) for the SM clock a compute or on-chip figure ran at."""
    c = m.clocks
    for key, source in ((K.KERNEL_SM_MHZ, "kernel"), (K.SENTINEL_SM_MHZ, "sentinel")):
        vals = _clock_list(m.params.get(key))
        if vals:
            return _median(vals), max(vals), source
    if c and c.sm_mhz:
        return c.sm_mhz, c.sm_mhz_max or c.sm_mhz, "nvml"
    return None, None, "max"


def judge(m: Measurement, theory) -> None:
    """Attach theory to ``m`` (a DeviceTheory's peaks at the clock ``m`` ran at) and mark it. Records that
    brought their own theory (interconnect probes) are only checked against it. Its ``best`` (work over the fastest
    sample) is then judged against the same theory."""
    _judge_value(m, theory)
    judge_best(m)


def judge_best(m: Measurement) -> None:
    """Withhold a ``best`` that theory cannot explain where the value itself stands. The fastest of many samples
    is where a timing artifact lands: an H200's DFMA read two 10-ms samples 4% short in a row at NVML's maximum
    clock, so ``best`` said 104.4% of theory beside a median at 99.9%. It is flagged and dropped, never shown as
    the hardware's. The bound is theory at the highest clock the record saw (``best_bound``): the fastest sample
    may have run at it, as a wgmma's samples spread 1574-1650 MHz under the power cap. Records saved before this
    judgement are judged as they load (hwprobe.results)."""
    bound = best_bound(m)
    if not (m.best and bound) or m.best <= ABOVE_THEORY * bound:
        return
    if not m.valid or m.params.get(K.THEORY_CLOCK_SOURCE) == "l2_spec" or m.params.get(K.CEILING) is False:
        return      # the value's own verdict (invalid, or an inferred theory, or a comparison figure) says it
    fastest = min(m.samples_s) if m.samples_s else None
    at = f" (fastest sample {fastest * 1e3:.4g} ms)" if fastest else ""
    m.flags.append(Flag(Code.BEST_ABOVE_THEORY, f"{si(m.best, m.unit)} > 1.03 x {si(bound, m.unit)} "
                                                f"({m.theory.basis}, at the highest clock seen){at}: a timing "
                                                "artifact, so best is withheld"))
    m.best = None


def best_bound(m: Measurement) -> float | None:
    """Theory at the highest SM clock the record saw (its kernel's or sentinel's clocks, NVML's maximum over the
    window), never above theory at the max clock; theory at its own clock for figures judged on another clock
    (DRAM's memory clock, the L2's spec, a CPU's)."""
    t = m.theory
    if not (t and t.at_clock):
        return None
    if m.params.get(K.THEORY_CLOCK_SOURCE) not in ("kernel", "sentinel", "nvml") or not t.clock_mhz:
        return t.at_clock
    seen = [v for key in (K.KERNEL_SM_MHZ, K.SENTINEL_SM_MHZ) for v in _clock_list(m.params.get(key))]
    if m.clocks and m.clocks.sm_mhz_max:
        seen.append(m.clocks.sm_mhz_max)
    top = max([t.clock_mhz, *seen])
    bound = t.at_clock * top / t.clock_mhz
    return min(bound, t.at_max_clock) if t.at_max_clock else bound


def _judge_value(m: Measurement, theory) -> None:
    if m.theory is not None and m.theory.at_clock:
        _check_bound(m, m.theory.at_clock, m.theory.basis)
        return
    at = _theory_fn(m, theory)
    if at is None:
        return
    if getattr(theory, "kind", "gpu") == "cpu":
        clk, top, source = None, None, "max"               # a CPU's theory is at its max clock (sysfs)
        around = max(m.params.get(K.CPU_MHZ_AROUND) or [0.0])
        top_mhz = getattr(theory, "max_clock_mhz", None)
        if top_mhz and around > top_mhz:        # the cores ran faster than the max recorded (a VM's boost)
            clk, source = around, "measured"
            at = _raised_max(at, around)
            m.flags.append(Flag(Code.THEORY_CLOCK_MOVED, f"max {top_mhz:.0f} -> measured around the window "
                                                         f"{around:.0f} MHz"))
    elif m.kind == Kind.MEMORY and _LEVEL_ALIASES.get(m.level, m.level) == "dram":
        clk = m.clocks.mem_mhz if m.clocks else None      # DRAM theory follows the memory clock
        top, source = clk, "memory"
    elif m.kind == Kind.MEMORY and _LEVEL_ALIASES.get(m.level, m.level) == "l2":
        clk, top, source = None, None, "l2_spec"          # the L2's own clock, from the spec table (not the SM's)
    else:
        clk, top, source = own_clock(m)
    t = at(clk)
    if t is None:
        return
    m.theory = t
    m.params[K.THEORY_CLOCK_SOURCE] = source
    _compare_clocks(m, clk, source)
    _pct_at_each_clock(m, at, clk, source)
    if m.value <= ABOVE_THEORY * t.at_clock or m.params.get(K.CEILING) is False:
        return      # a comparison figure (ceiling: false) is shown against theory, never invalidated by it
    if source == "l2_spec":     # an inferred theory (64 B/clk per slice, read on one lent card): flagged only
        m.flags.append(f"above_inferred_theory: {si(m.value, m.unit)} > 1.03 x {si(t.at_clock, m.unit)} "
                       f"({t.basis}): the inference, not the figure, is in doubt")
        return
    if source in SAMPLED and top and top > clk:
        t_top = at(top)
        if t_top and m.value <= ABOVE_THEORY * t_top.at_clock:
            m.theory = t_top
            m.flags.append(Flag(Code.THEORY_CLOCK_MOVED, f"NVML median {clk:.0f} -> highest sampled {top:.0f} MHz"))
            return
    if source in SAMPLED:
        t_max = at(None)
        if t_max and t_max.at_clock and m.value <= ABOVE_THEORY * t_max.at_clock:
            needed = clk * m.value / t.at_clock if clk else None
            m.theory = t_max
            m.params[K.THEORY_CLOCK_SOURCE] = "max"
            m.flags.append(Flag(Code.CLOCK_LAG))
            m.notes.append(f"{source} read {clk:.0f} MHz, but this rate needs at least {needed:.0f} MHz: the clock "
                           "reading lags short probes, so theory here uses the max clock")
            return
    _check_bound(m, t.at_clock, t.basis)


def _raised_max(at: Callable[[float | None], Theory | None], mhz: float) -> Callable[[float | None], Theory | None]:
    """Theory whose max clock is ``mhz``: a CPU core timed at ``mhz`` around the window reaches at least that, so
    the max recorded at discovery (lower) is not its max; theory at the max is never below theory at the clock
    (a VM's 2300 MHz "max" put 294 GFLOP/s beside 376 at 2935 MHz, and the gap chain said x1.276 "clock under
    load")."""
    def fn(clk: float | None) -> Theory | None:
        t = at(mhz if clk is None else clk)
        top = at(mhz)
        if t is not None and top is not None:
            t.at_max_clock, t.max_clock_mhz = top.at_clock, mhz
        return t
    return fn


def _check_bound(m: Measurement, bound: float, basis: str) -> None:
    if m.value > ABOVE_THEORY * bound:
        m.valid = False
        m.flags.append(Flag(Code.ABOVE_THEORY, f"{si(m.value, m.unit)} > 1.03 x {si(bound, m.unit)} ({basis})"))


def _theory_fn(m: Measurement, theory) -> Callable[[float | None], Theory | None] | None:
    if m.kind == Kind.COMPUTE and m.precision and m.exec_unit and m.unit in ("FLOP/s", "OP/s"):
        sparse = bool(m.params.get(K.SPARSE)) or m.params.get(K.SPARSITY) == "2:4"
        return lambda clk: theory.compute(m.precision, m.exec_unit, clk, sparse=sparse)
    if m.kind == Kind.MEMORY and m.level and m.unit == "B/s":
        level = _LEVEL_ALIASES.get(m.level, m.level)
        return lambda clk: theory.memory(level, clk)
    return None


def _compare_clocks(m: Measurement, clk: float | None, source: str) -> None:
    """The kernel's (or sentinel's) clock against NVML's median: a disagreement over 3% is flagged with both."""
    nvml = m.clocks.sm_mhz if m.clocks else None
    if source in ("kernel", "sentinel") and clk and nvml:
        m.params[K.CLOCKS_MHZ] = {**(m.params.get(K.CLOCKS_MHZ) or {}), source: round(clk, 1), "nvml": nvml}
        if abs(nvml / clk - 1) > CLOCK_AGREEMENT and not has(m.flags, Code.CLOCK_DISAGREEMENT):
            m.flags.append(Flag(Code.CLOCK_DISAGREEMENT, f"{source} {clk:.0f} MHz vs NVML {nvml:.0f} MHz "
                                                         f"({nvml / clk - 1:+.1%})"))


def _pct_at_each_clock(m: Measurement, at, clk: float | None, source: str) -> None:
    """The figure as a share of theory at each clock there is: the chosen one, NVML's, and the max clock."""
    out = {}
    nvml = m.clocks.sm_mhz if m.clocks else None
    pairs = ((source, clk), ("max", None)) if source in ("memory", "l2_spec") else \
        ((source, clk), ("nvml", nvml), ("max", None))
    for name, c in pairs:
        if name in out or (c is None and name != "max"):
            continue
        t = at(c)
        if t and t.at_clock:
            out[name] = round(m.value / t.at_clock, 4)
    if out:
        m.params[K.PCT_AT] = out
