"""The gap chain (hwprobe.gap) as a waterfall: absolute values after each factor, in the order a reader
follows it: datasheet -> clock (the datasheet's clock assumption vs the max clock) -> power (the clock under
load) -> path (the best instruction or library kernel's efficiency at that clock) = measured; then the
other path and, where gpu.gemm_power ran, the library GEMM sustained on random operands at the power cap."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwprobe import keys as K
from hwprobe.gap import Gap, gaps
from hwprobe.profile import Profile
from hwprobe.report import tables as tb
from hwprobe.report import text as tx
from hwprobe.vocab import PROFILE_PRECISIONS, ExecUnit

CHAIN = ("clock", "power", "sm_clock", "path", "factor")   # the factors that multiply out to the measured value


@dataclass
class Step:
    category: str          # start | clock | power | sm_clock | path | factor | measured | other | data
    label: str
    value: float           # the value after this step (absolute, in the chain's unit)
    factor: float | None   # what this step multiplied (None for the start and the measured total)
    why: str = ""


@dataclass
class Chain:
    precision: str
    unit: str              # execution unit
    rate_unit: str         # FLOP/s or OP/s
    steps: list[Step] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.precision.upper()} {tx.UNIT_NAMES.get(self.unit, self.unit)}"

    @property
    def start(self) -> Step:
        return self.steps[0]

    @property
    def measured(self) -> Step | None:
        return next((s for s in self.steps if s.category == "measured"), None)


def chain_of(g: Gap, p: Profile) -> Chain:
    b = g.best
    ch = Chain(g.precision, g.unit, b.unit)
    value = b.datasheet or b.theory_at_max_clock or b.theory_at_clock or b.value
    ch.steps.append(Step("start", "datasheet" if b.datasheet else "theory at max clock", value, None,
                         "the vendor's figure" if b.datasheet else "no datasheet figure for this unit"))
    for what, factor, why in g.steps:
        if what.endswith(" instead") or what == "operand data (power)":
            continue          # alternatives, after the measured value (operand data: from the findings below)
        value *= factor
        if what == "datasheet clock":
            ch.steps.append(Step("clock", "max clock", value, factor, why))
        elif what == "clock under load":
            ch.steps.append(Step("power", "clock under load", value, factor, why))
        elif what == "SM clock below the set clock":
            ch.steps.append(Step("sm_clock", "SM clock below set", value, factor, why))
        elif what.endswith(" path"):
            ch.steps.append(Step("path", tx.instruction_name(b.metric), value, factor, why))
        else:                 # a factor this report does not know by name yet: kept in the chain, named as given
            ch.steps.append(Step("factor", what, value, factor, why))
    ch.steps.append(Step("measured", "measured", b.value, None, b.metric))
    for what, factor, why in g.steps:
        if what.endswith(" instead"):
            metric = what[: -len(" instead")]
            ch.steps.append(Step("other", _path_label(metric), b.value * factor, factor, f"{metric}: {why}"))
    ch.steps += _data_steps(p, g.precision, g.unit)
    return ch


def _path_label(metric: str) -> str:
    return tx.instruction_name(metric, detail=True)


def _data_steps(p: Profile, prec: str, unit: str) -> list[Step]:
    """Library GEMMs sustained at the power cap on random operands (gpu.gemm_power), against zero operands."""
    out = []
    for f in p.findings:
        metric = str(f.get("metric", ""))
        if not (metric.startswith(f"{prec}.{unit}.") and metric.endswith(".power_data")):
            continue
        pts = (f.get("params") or {}).get(K.POINTS) or {}
        u, z = pts.get("uniform") or {}, pts.get("zeros") or {}
        if not (u.get("rate") and z.get("rate")):
            continue
        name = _path_label(metric[: -len(".power_data")])
        why = f"sustained at the power cap: random operands {u['rate'] / z['rate']:.3f}x the rate on zeros"
        if u.get("sm_mhz") and z.get("sm_mhz"):
            why += f" ({u['sm_mhz']:.0f} vs {z['sm_mhz']:.0f} MHz)"
        out.append(Step("data", f"{name} sustained", u["rate"], u["rate"] / z["rate"], why))
    return out


def chains(p: Profile) -> list[Chain]:
    """One chain per precision and execution unit that has a gap, in the tables' order."""
    found = {(g.precision, g.unit): chain_of(g, p) for g in gaps(p) if g.steps}
    rank = {p: i for i, p in enumerate(PROFILE_PRECISIONS)}
    keys = sorted(found, key=lambda k: (rank.get(k[0], 99), k[1] != ExecUnit.CUDA_CORE, k[1]))
    return [found[k] for k in keys]


def line(ch: Chain) -> str:
    """The chain as one terminal line: numbers in the measured value's unit, factors between them."""
    m = ch.measured
    unit, nums = tb.scaled([m.value if m else ch.start.value] + [s.value for s in ch.steps], ch.rate_unit)
    nums = nums[1:]
    parts = [f"{ch.start.label} {nums[0]}"]
    tail = []
    for s, n in zip(ch.steps[1:], nums[1:], strict=False):
        if s.category in CHAIN:
            parts.append(f"x{s.factor:.3f} {s.label} {n}")
        elif s.category == "measured":
            pct = f" ({m.value / ch.start.value:.1%} of {ch.start.label})" if ch.start.value else ""
            parts.append(f"= measured {n} {unit}{pct}")
        elif s.category == "other":
            tail.append(f"{s.label} instead: {n} (x{s.factor:.3f})")
        else:
            tail.append(f"{s.label} on random operands: {n} (x{s.factor:.3f} vs zeros)")
    head = f"{ch.precision} {tx.UNIT_SHORT.get(ch.unit, ch.unit)}: " + " -> ".join(parts)
    return head + ("; " + "; ".join(tail) if tail else "")
