"""What a probe is, and the context it runs in.

A probe is a generator function ``run(ctx, **params)`` that yields Measurements as it finishes them,
so the runner can append each one to disk at once. ``ctx.measure`` is the one place that warms up,
times, samples clocks alongside, and checks the kernel's output outside the timed region.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hwprobe.errors import InputError, Skip, VerificationError
from hwprobe.flags import Code, Flag
from hwprobe.measurement import Measurement, Stats
from hwprobe.vocab import Kind, Status

ProbeFunc = Callable[..., Iterator[Measurement]]

_REGISTRY: dict[str, Probe] = {}


@dataclass(frozen=True)
class Probe:
    name: str
    target: str                     # "gpu" | "cpu"
    family: str                     # "compute" | "memory" | "interconnect"
    summary: str
    func: ProbeFunc
    precisions: tuple[str, ...] = ()
    choices: dict[str, tuple] = field(default_factory=dict)     # parameter -> allowed values
    ranges: dict[str, tuple] = field(default_factory=dict)      # parameter -> (lo, hi); numbers default to >= 0
    ahead: Callable[[Any], None] | None = None  # ahead(device): start its NVRTC compiles (hwprobe.kernels.prefetch)
    cool_start: bool = True         # compute probes: the runner lets the GPU settle first (hwprobe.timing.settle)

    def params(self) -> dict[str, Any]:
        """Parameters a suite may set, with their defaults."""
        sig = inspect.signature(self.func)
        return {k: p.default for k, p in list(sig.parameters.items())[1:]}

    def check_params(self, params: dict[str, Any], where: str = "suite") -> None:
        """Every parameter known, of its declared type, range and allowed values (hwprobe.probes.params)."""
        from hwprobe.probes.params import check, specs_of

        allowed = self.params()
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise InputError(
                f"{where}: probe {self.name!r} has no parameter {', '.join(unknown)} "
                f"(it takes: {', '.join(allowed) or 'none'})"
            )
        specs = specs_of(self.func, self.choices, self.ranges)
        for k, v in params.items():
            check(specs[k], v, f"{where}: probe {self.name!r}")
        precs = params.get("precisions")
        if precs is not None and self.precisions:
            bad = [p for p in precs if p not in self.precisions]
            if bad:
                raise InputError(
                    f"{where}: probe {self.name!r} does not measure precision {', '.join(bad)} "
                    f"(it does: {', '.join(self.precisions)})"
                )


def probe(*, name: str, target: str, family: str, summary: str, precisions: tuple[str, ...] = (),
          choices: dict[str, tuple] | None = None, ranges: dict[str, tuple] | None = None,
          ahead: Callable[[Any], None] | None = None, cool_start: bool = True):
    """Register a probe function under ``name``; ``choices`` and ``ranges`` declare its parameters' allowed
    values beyond the types its defaults give (checked when a suite is planned, before any measuring);
    ``ahead(device)`` starts the probe's kernel compiles on worker threads when a run begins. ``cool_start``
    False: a compute probe whose figures do not depend on the state the card starts in, measured as shown on the
    device (its module says how), so the runner does not wait for the GPU to settle before it."""

    def deco(func: ProbeFunc) -> ProbeFunc:
        _REGISTRY[name] = Probe(name, target, family, summary, func, precisions, dict(choices or {}),
                                dict(ranges or {}), ahead, cool_start)
        return func

    return deco


@dataclass
class ProbeContext:
    """Everything a probe may use: the device, the clock sampler, the timer and the run options."""

    target: str                               # "gpu" | "cpu"
    device: Any                               # the primary device: GpuInfo | CpuInfo
    sampler: Any                              # ClockSampler | CpuClockSampler | NullSampler
    probe_name: str = ""
    devices: list[Any] = field(default_factory=list)  # every device of the run (interconnect probes); [device]
    theory: Any = None                        # specs.DeviceTheory of ``device``: peaks at any clock
    quick: bool = False                       # smaller sizes, fewer repeats (tests, smoke runs)
    log: Callable[[str], None] = field(default=lambda msg: None)
    warmup: int = 2
    energy_window_s: float = 0.0              # > 0: compute measurements run at least this long (energy/op)
    # Register work for the end of the run: ``at_end(fn)``, where fn() yields Measurements once every probe has
    # run (a watch over the whole run, e.g. XID events; a plain run of the probe alone ends right after it).
    at_end: Callable[[Callable[[], Any]], None] = field(default=lambda fn: None)

    def _time(self, fn: Callable[[], object], warmup: int, repeats: int, hold=None) -> list[float]:
        from hwprobe.timing import time_cuda, time_host

        if self.target == "gpu":
            return time_cuda(fn, warmup=warmup, repeats=repeats, hold=hold)
        return time_host(fn, warmup=warmup, repeats=repeats)

    def measure(
        self,
        metric: str,
        fn: Callable[[], object],
        *,
        work: float,
        unit: str,
        kind: str,
        check: Callable[[], None] | None = None,
        warmup: int | None = None,
        repeats: int | None = None,
        rule: str | None = None,
        hold: Any = None,
        **meta: Any,
    ) -> Measurement:
        """Time ``fn`` (one sample = one call doing ``work`` operations or bytes) and check its output.

        Samples are taken under the stopping rule ``rule`` (hwprobe.timing.policy; default: the ceiling rule of
        the target, the quick one in quick runs), or exactly ``repeats`` of them where a caller fixes the count.
        A compute figure samples for at least the energy window too, unless its rule reads no energy (a burst
        window: the rested rule). ``check`` runs after timing and raises
        (VerificationError/AssertionError) on a wrong result; the measurement is then kept but marked invalid.
        ``hold`` (a hwprobe.timing.hold.StreamHold, for an ``fn`` that only launches) keeps host stalls out of the
        samples. ``meta`` fills the other Measurement fields.
        """
        from hwprobe.timing import policy

        warmup = self.warmup if warmup is None else warmup
        r = policy.rule(self._rule_name(rule))
        if repeats is not None:
            r = policy.rule(r.name, min_samples=repeats, max_samples=repeats, max_noise=0.0)
        batch = None
        if kind == "compute" and self.energy_window_s > 0 and r.energy:
            # A compute ceiling also gets joules per operation: sample until the window is long enough for the
            # energy counter (it steps every ~0.1 s), and at least the rule's (or the caller's) count.
            r = policy.rule("energy", min_samples=r.min_samples, min_total_s=self.energy_window_s)
            batch = r.min_samples
        with self.sampler.window(energy=r.energy) as win:
            if warmup:
                self._time(fn, warmup, 0)
            taken = policy.sample(lambda k: self._time(fn, 0, k, hold), r, batch=batch)
        samples = taken.samples
        st = Stats.of(samples, stop=taken.stop)
        m = Measurement(
            probe=self.probe_name, metric=metric, kind=kind, unit=unit,
            value=work / st.median_s, best=work / st.best_s, work=work,
            samples_s=samples, stats=st, clocks=win.summary, **meta,
        )
        self.verify(m, check)
        if st.cv > 0.05:
            m.notes.append(f"samples vary: cv {st.cv:.1%}")
        return m

    @staticmethod
    def verify(m: Measurement, check: Callable[[], None] | None) -> None:
        """Run ``check`` (after ``m``'s timing): it raises VerificationError/AssertionError on a wrong result,
        which keeps ``m`` but marks it invalid. For callers that time several windows and check the one kept."""
        if check is None:
            return
        try:
            check()
            m.verified = True
        except (VerificationError, AssertionError) as e:
            m.verified = False
            m.valid = False
            m.flags.append(Flag(Code.VERIFICATION_FAILED, str(e)))

    def _rule_name(self, rule: str | None) -> str:
        if rule is not None:
            return rule
        cpu = self.target == "cpu"
        if self.quick:
            return "cpu_quick" if cpu else "quick"
        return "cpu_ceiling" if cpu else "ceiling"

    def __post_init__(self) -> None:
        if not self.devices and self.device is not None:
            self.devices = [self.device]

    def skip(self, metric: str, reason: str, **meta: Any) -> Measurement:
        """The record of a point or variant that can't run here (the run goes on); ``reason`` says why."""
        self.log(f"{metric}: skipped: {reason}")
        return Measurement(probe=self.probe_name, metric=metric, kind=Kind.INFO, value=0.0, unit="",
                           status=Status.SKIPPED.value, reason=reason, **meta)

    def error(self, metric: str, what: str, exc: BaseException, **meta: Any) -> Measurement:
        """The record of a point that failed while measuring: it sets the run's exit code to 1. A ``Skip``
        raised inside is a skip, not an error."""
        if isinstance(exc, Skip):
            return self.skip(metric, f"{what}: {exc}", **meta)
        reason = f"{what}: {type(exc).__name__}: {exc}"
        self.log(f"{metric}: error: {reason}")
        return Measurement(probe=self.probe_name, metric=metric, kind=Kind.INFO, value=0.0, unit="",
                           status=Status.ERROR.value, reason=reason, **meta)

    def derived(self, metric: str, value: float, *, unit: str, kind: str, **meta: Any) -> Measurement:
        """A value computed from other measurements (a detected capacity, a ridge point): no samples."""
        return Measurement(probe=self.probe_name, metric=metric, kind=kind, unit=unit, value=float(value), **meta)
