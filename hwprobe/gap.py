"""Why the measured peak sits below the datasheet, in numbers: clock, power, instruction path, library.

For one precision and unit the chain is: datasheet -> theory at the max clock (the datasheet's clock
assumption) -> theory at the clock measured under load (power and thermal limits) -> the best measured
path at that clock (instruction or library efficiency). These factors multiply to measured/datasheet.
The other path (library when the instruction kernel is best, or the reverse) is then given as its
factor against the best: the cost of that choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwprobe import keys as K
from hwprobe.profile import Ceiling, Profile
from hwprobe.units import si
from hwprobe.vocab import SPARSE_SUFFIX


@dataclass
class Gap:
    precision: str
    unit: str
    best: Ceiling
    steps: list[tuple[str, float, str]]      # (what, factor, explanation)

    @property
    def total(self) -> float | None:
        return self.best.ratio_datasheet

    def sentence(self) -> str:
        head = f"{self.precision} ({self.unit.replace('_', ' ')}): measured {si(self.best.value, self.best.unit)}"
        if self.best.datasheet:
            head += f" = {self.best.ratio_datasheet:.1%} of the datasheet's {si(self.best.datasheet, self.best.unit)}"
        parts = [f"{what} x{factor:.3f} ({why})" for what, factor, why in self.steps]
        return head + (": " + "; ".join(parts) if parts else "")


def gaps(p: Profile) -> list[Gap]:
    out = []
    for prec, units in p.compute.items():
        for unit, paths in units.items():
            dense = {k: c for k, c in paths.items() if not k.endswith(SPARSE_SUFFIX)}
            if not dense:
                continue
            best = max(dense.values(), key=lambda c: c.value)
            steps: list[tuple[str, float, str]] = []
            if best.datasheet and best.theory_at_max_clock:
                steps.append(("datasheet clock", best.theory_at_max_clock / best.datasheet,
                              f"theory at the max clock is {si(best.theory_at_max_clock, best.unit)}"))
            if best.theory_at_max_clock and best.theory_at_clock:
                steps += clock_steps(best)
            if best.theory_at_clock:
                steps.append((f"{best.metric.split('.')[-1]} path", best.value / best.theory_at_clock,
                              f"{best.metric} runs at {best.ratio_at_clock:.1%} of theory at its clock"))
            other = [c for c in dense.values() if c is not best]
            for c in other:  # the other path (instruction vs library): what choosing it costs
                steps.append((f"{c.metric} instead", c.value / best.value, f"{si(c.value, c.unit)}"))
            steps += power_data_steps(p, prec, unit)
            out.append(Gap(prec, unit, best, steps))
    return out


def clock_steps(best: Ceiling) -> list[tuple[str, float, str]]:
    """The clock part of the chain, theory at its clock over theory at the max clock. Where the kernel timed its
    own SM clock (cycles over globaltimer) and NVML read a set clock more than 3% above it, the part is two
    steps: the set clock under load (power, thermal: what NVML and its reasons see) and the SM clock below the
    set one while the kernel ran (on the H200: ~9% while HMMA/HGMMA run, with no NVML reason). Their product
    is the single step's factor; a shortfall inside the kernel (stragglers, a tail) is never here: it lowers
    the path's share at its clock instead."""
    factor = best.theory_at_clock / best.theory_at_max_clock
    clocks = (best.params or {}).get(K.CLOCKS_MHZ) or {}
    kernel, nvml = clocks.get("kernel"), clocks.get("nvml")
    extra = "".join(f", {x}" for x in (", ".join(best.throttle_reasons) if best.throttle_reasons else None,
                                          f"{best.power_w:.0f} W" if best.power_w else None) if x)
    if not (kernel and nvml and best.clock_mhz and nvml > 1.03 * kernel and best.clock_source == "kernel"):
        why = f"clock {best.clock_mhz:.0f} MHz under load" if best.clock_mhz else "measured clock"
        return [("clock under load", factor, why + extra)]
    set_factor = nvml / kernel * factor        # theory scales with the clock
    return [("clock under load", set_factor, f"set clock {nvml:.0f} MHz (NVML){extra}"),
            ("SM clock below the set clock", kernel / nvml,
             f"the kernel's cycles over globaltimer read {kernel:.0f} MHz while NVML read {nvml:.0f} MHz, "
             f"with no clock-event reason for it")]


def power_data_steps(p: Profile, precision: str, unit: str) -> list[tuple[str, float, str]]:
    """What full-entropy operands cost against zero ones in a sustained library GEMM (gpu.gemm_power's
    finding): at the power cap that is clock, so it belongs to the chain's power part."""
    out = []
    for f in p.findings:
        pts = (f.get("params") or {}).get(K.POINTS) or {}
        if not (f.get("metric", "").startswith(f"{precision}.{unit}.") and f["metric"].endswith(".power_data")):
            continue
        u, z = pts.get("uniform"), pts.get("zeros")
        if not (u and z and u.get("rate") and z.get("rate")):
            continue
        why = f"sustained {f['metric'][: -len('.power_data')]}, random vs zero operands"
        if u.get("sm_mhz") and z.get("sm_mhz"):
            why += f": {u['sm_mhz']:.0f} vs {z['sm_mhz']:.0f} MHz at the power cap"
        out.append(("operand data (power)", u["rate"] / z["rate"], why))
    return out
