"""The record every probe produces, and the pieces it is made of.

A Measurement crosses every module boundary (probe -> results file -> profile -> report), so it is a
plain dataclass that round-trips through JSON without loss.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from hwprobe.vocab import ExecUnit, Kind, Path, Precision, Status

# What a measurement is about. Ceilings come from "compute" and "memory"; the rest annotate levels.
KINDS = Kind.values()
EXEC_UNITS = ExecUnit.values()
PATHS = Path.values()
PRECISIONS = Precision.values()
STATUSES = Status.values()


MEDIAN_SE = math.pi / 2      # standard error of the median per mean absolute deviation, for normal samples


def noise(samples) -> float | None:
    """Relative standard error of the samples' median (None under 3 samples: too few to say).

    Estimated from the mean absolute deviation around the median: for normal samples sigma = sqrt(pi/2) x that
    deviation and the median's standard error is sqrt(pi/2) x sigma / sqrt(n), hence pi/2 x deviation / sqrt(n).
    Unlike the MAD it never reads zero while some samples disagree (ties among three), and unlike the standard
    deviation one slow sample adds to it linearly, not squared."""
    a = np.asarray(samples, dtype=float)
    if a.size < 3:
        return None
    med = float(np.median(a))
    if med <= 0:
        return None
    return MEDIAN_SE * float(np.mean(np.abs(a - med))) / (math.sqrt(a.size) * med)


@dataclass
class Stats:
    """Summary of raw timing samples (seconds). The rate uses the median; best uses the minimum."""

    n: int
    median_s: float
    best_s: float
    mean_s: float
    cv: float
    noise: float | None = None           # relative standard error of the median (noise())
    stop: str | None = None              # why sampling stopped (hwprobe.vocab.StopReason); None: not by a rule

    @classmethod
    def of(cls, samples: list[float], stop: str | None = None) -> Stats:
        a = np.asarray(samples, dtype=float)
        if a.size == 0:
            raise ValueError("no samples")
        mean = float(a.mean())
        cv = float(a.std(ddof=1) / mean) if a.size > 1 and mean > 0 else 0.0
        return cls(n=int(a.size), median_s=float(np.median(a)), best_s=float(a.min()), mean_s=mean, cv=cv,
                   noise=noise(a), stop=None if stop is None else str(stop))


@dataclass
class ClockSummary:
    """Clocks, power and throttle reasons seen while a measurement ran (sampled alongside it)."""

    sm_mhz: float | None = None          # median over the window
    sm_mhz_min: float | None = None
    sm_mhz_max: float | None = None
    mem_mhz: float | None = None
    power_w: float | None = None         # median
    power_w_max: float | None = None
    temp_c: float | None = None          # max
    throttle_reasons: list[str] = field(default_factory=list)
    energy_j: float | None = None        # from the energy counter, whole window
    n_samples: int = 0
    source: str = "none"                 # "nvml" | "cpufreq" | "none"


@dataclass
class Theory:
    """Theoretical values beside a measurement, all in the measurement's unit."""

    at_clock: float | None = None        # at the clock measured during the probe
    at_max_clock: float | None = None
    datasheet: float | None = None
    clock_mhz: float | None = None       # the clock used for at_clock
    max_clock_mhz: float | None = None
    basis: str = ""                      # formula in words, e.g. "132 SM x 128 FMA/clk x 2 x 1980 MHz"


def _build(cls, d: dict[str, Any]):
    """``cls(**d)`` over the fields ``cls`` knows, and the keys it does not (kept, never silently lost)."""
    known = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in known}), {k: v for k, v in d.items() if k not in known}


@dataclass
class Measurement:
    probe: str
    metric: str                          # unique within a run, e.g. "fp32.cuda_core.ffma"
    kind: str
    value: float                         # rate from the median sample (or the plain value for derived kinds)
    unit: str                            # "FLOP/s", "OP/s", "B/s", "s", "B", "cycles", ...
    precision: str | None = None
    exec_unit: str | None = None
    path: str | None = None
    level: str | None = None
    best: float | None = None            # rate from the best sample
    work: float | None = None            # operations or bytes per sample
    bytes_counted: str | None = None     # how a bandwidth probe counts bytes
    samples_s: list[float] = field(default_factory=list)
    stats: Stats | None = None
    clocks: ClockSummary | None = None
    theory: Theory | None = None
    params: dict[str, Any] = field(default_factory=dict)
    verified: bool | None = None         # output checked outside the timed region
    valid: bool = True                   # the value may stand as a figure (False: see flags)
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    status: str = Status.OK.value        # ok | skipped | error | invalid (hwprobe.vocab.Status)
    reason: str = ""                     # why it was skipped, failed or judged invalid
    link: str | None = None              # interconnect: the link or collective this figure belongs to
    extra: dict[str, Any] = field(default_factory=dict)  # keys this hwprobe does not know (from newer files)

    def settle(self) -> Measurement:
        """Make ``status`` agree with ``valid`` once a probe and the judge are done with the record: a record
        marked not valid is "invalid" (the first flag is the reason). Skips and errors keep their status."""
        if self.status == Status.OK and not self.valid:
            self.status = Status.INVALID.value
            self.reason = self.reason or (self.flags[0] if self.flags else "marked invalid")
        elif self.status == Status.INVALID:
            self.valid = False
        return self

    @property
    def ok(self) -> bool:
        return self.status == Status.OK and self.valid

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        extra = d.pop("extra")
        return {**extra, **d} if extra else d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        d = dict(d)
        known = {f.name for f in fields(cls)}
        unknown = {k: v for k, v in d.items() if k not in known}
        d = {k: v for k, v in d.items() if k in known}
        if unknown:
            d["extra"] = {**d.get("extra", {}), **unknown}
        for name, sub in (("stats", Stats), ("clocks", ClockSummary), ("theory", Theory)):
            if d.get(name):
                d[name], more = _build(sub, d[name])
                if more:
                    d.setdefault("extra", {})[name] = more
        return cls(**d)

    @property
    def fraction_of_theory(self) -> float | None:
        t = self.theory.at_clock if self.theory else None
        return self.value / t if t else None

    @property
    def energy_per_op_j(self) -> float | None:
        """Joules per operation (or byte): the window's mean power (from the energy counter) x the median
        sample time / the work of one sample. The window includes warm-up, so energy/work would overcount."""
        if not (self.clocks and self.clocks.energy_j and self.clocks.power_w and self.work and self.stats):
            return None
        return self.clocks.power_w * self.stats.median_s / self.work

    def power_summary(self) -> dict[str, Any]:
        """The rate beside the clock, power and joules per operation it ran at: what a sustained or power
        window is cited by in another record's params."""
        c = self.clocks
        return {"rate": self.value, "sm_mhz": c.sm_mhz if c else None, "power_w": c.power_w if c else None,
                "j_per_op": self.energy_per_op_j}
