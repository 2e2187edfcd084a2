"""One run against a reference: pass/fail per ceiling, with the measured and expected figures and likely causes.

A ceiling passes when measured >= expected x (1 - tolerance). Where it falls short, the two runs' clocks differ
and the ceiling is power-limited, the per-clock figure (work per clock cycle) is compared instead: the clock the
power cap allows is then the cause, not the silicon. The reference is a measured profile (a "golden" run) or a
datasheet entry (theory x fractions, see expect.py). A contended reference (other processes listed on the GPU,
or figures that look contended) is refused: it would let a slow board pass.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from hwprobe.errors import InputError
from hwprobe.fleet import causes
from hwprobe.fleet.records import CeilingRec, RunRecord, load_run
from hwprobe.vocab import PROFILE_PRECISIONS

DEFAULT_TOLERANCE = 0.10
CLOCK_DIFF = 0.02             # clocks further apart than this make a power-limited ceiling compare per clock


@dataclass
class Tolerances:
    default: float = DEFAULT_TOLERANCE
    patterns: list[tuple[str, float]] = field(default_factory=list)    # (fnmatch pattern on the key, tolerance)
    source: str = "default"

    def for_key(self, key: str) -> float:
        for pattern, tol in self.patterns:
            if fnmatch.fnmatchcase(key, pattern):
                return tol
        return self.default


def parse_fraction(text: str | float, what: str = "tolerance") -> float:
    """ "10%", "0.1" or 0.1 -> 0.1; InputError outside [0, 1)."""
    s = str(text).strip()
    try:
        v = float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise InputError(f"{what} {text!r} is not a fraction or a percentage (e.g. 10% or 0.1)") from None
    if not 0 <= v < 1:
        raise InputError(f"{what} {text!r} must be between 0 and 100%")
    return v


REFERENCE_TOLERANCE = "tolerance.toml"


def parse_tolerance(text: str | None, ref: str | None = None) -> Tolerances:
    """--tolerance: "10%", "0.1", or a TOML file: ``default = "10%"`` and ``[ceilings]`` "pattern" = "5%". Without
    it, a measured reference's own ``tolerance.toml`` (beside its profile.json: the spread its node kind showed
    over repeated runs), else 10%."""
    if text is None:
        own = _reference_tolerance(ref)
        return parse_tolerance(str(own)) if own else Tolerances()
    p = Path(text)
    if p.suffix != ".toml" and not p.is_file():
        return Tolerances(parse_fraction(text), [], f"--tolerance {text}")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise InputError(f"tolerance file {text!r} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"tolerance file {text!r} is not valid TOML: {e}") from None
    unknown = set(data) - {"default", "ceilings"}
    if unknown:
        raise InputError(f"tolerance file {text!r}: unknown key {sorted(unknown)[0]!r} (keys: default, [ceilings])")
    table = data.get("ceilings", {})
    if not isinstance(table, dict):
        raise InputError(f"tolerance file {text!r}: [ceilings] must be a table of \"pattern\" = \"5%\"")
    pats = [(k, parse_fraction(v, f"tolerance for {k!r} in {text}")) for k, v in table.items()]
    default = parse_fraction(data.get("default", DEFAULT_TOLERANCE), f"default tolerance in {text}")
    return Tolerances(default, pats, str(p))


def _reference_tolerance(ref: str | None) -> Path | None:
    if not ref:
        return None
    p = Path(ref)
    own = (p if p.is_dir() else p.parent) / REFERENCE_TOLERANCE
    return own if p.exists() and own.is_file() else None


@dataclass
class Check:
    key: str
    status: str                    # "pass" | "fail" | "not measured" | "no reference"
    measured: float | None
    expected: float | None
    unit: str
    tolerance: float
    compared: str = "rate"         # "rate" or "per clock"
    ratio: float | None = None     # measured / expected on the compared figure (rate or per clock)
    rate_ratio: float | None = None  # measured / expected rate, whatever was compared
    causes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_one(key: str, m: CeilingRec, r: CeilingRec, tol: float) -> Check:
    """Compare one ceiling: the rate; where the rate falls short, the clocks differ and either side was
    power-limited, per clock instead (the power cap's clock is then the cause). A rate that meets the reference
    passes whatever the clock readings say: they are the shakier figure."""
    chk = Check(key, "pass", m.value, r.value, m.unit or r.unit, tol)
    differ = bool(m.clock_mhz and r.clock_mhz and abs(m.clock_mhz / r.clock_mhz - 1) > CLOCK_DIFF)
    a, b = m.value, r.value
    if differ and (m.power_limited or r.power_limited) and a < b * (1 - tol):
        (pa, how_a), (pb, how_b) = m.per_cycle(), r.per_cycle()
        if pa and pb:
            a, b, chk.compared = pa, pb, "per clock"
            how = ("per_clock as recorded" if how_a == how_b == "recorded" else
                   "per_clock not recorded on both sides: value / clock_mhz")
            chk.notes.append(f"power-limited at {m.clock_mhz:.0f} vs {r.clock_mhz:.0f} MHz: compared per clock "
                             f"cycle ({how}); the rate itself is {m.value / r.value - 1:+.1%}")
        else:
            chk.notes.append("power-limited with different clocks, but no per-clock figure (no clock recorded): "
                             "compared the rate")
    chk.ratio = a / b if b else None
    chk.rate_ratio = m.value / r.value if r.value else None
    if a < b * (1 - tol):
        chk.status = "fail"
    elif a > b * (1 + tol):
        chk.notes.append(f"{a / b - 1:+.0%} above the reference: is the reference from a slower SKU or mode?")
    return chk


@dataclass
class Validation:
    run: RunRecord
    ref: RunRecord
    tolerances: Tolerances
    checks: list[Check]
    notes: list[str] = field(default_factory=list)

    @property
    def compared(self) -> list[Check]:
        return [c for c in self.checks if c.status in ("pass", "fail")]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def to_dict(self) -> dict:
        return {
            "passed": not self.failed, "exit_code": self.exit_code,
            "run": {"path": self.run.path, "device": self.run.device_name, "power_mode": self.run.power_mode,
                    "created": self.run.created, "partial": self.run.partial},
            "reference": {"path": self.ref.path, "device": self.ref.device_name, "power_mode": self.ref.power_mode,
                          "measured": self.ref.measured, "created": self.ref.created},
            "tolerance": {"default": self.tolerances.default, "patterns": dict(self.tolerances.patterns),
                          "source": self.tolerances.source},
            "checks": [vars(c) for c in self.checks], "notes": self.notes,
            "summary": {"passed": len(self.compared) - len(self.failed), "failed": len(self.failed),
                        "not_measured": sum(c.status == "not measured" for c in self.checks),
                        "no_reference": sum(c.status == "no reference" for c in self.checks)},
        }


def validate(run: RunRecord, ref: RunRecord, tolerances: Tolerances | None = None,
             require_all: bool = False) -> Validation:
    """Check every ceiling the reference has; the run's extra ceilings are listed without a verdict."""
    tol = tolerances or Tolerances()
    kind_a, kind_b = run.device.get("kind") or "gpu", ref.device.get("kind") or "gpu"
    if kind_a != kind_b:
        raise InputError(f"run {run.path!r} is a {kind_a.upper()} run ({run.device_name}) and reference "
                         f"{ref.path!r} a {kind_b.upper()} ({ref.device_name}): validate compares a device with "
                         "one of its own kind")
    if ref.contended:
        raise InputError(f"reference {ref.path!r} is contended: {ref.contention}; pick an uncontended one")
    v = Validation(run, ref, tol, [])
    for key in sorted(ref.ceilings, key=_order):
        r, m = ref.ceilings[key], run.ceilings.get(key)
        if m is None:
            v.checks.append(Check(key, "fail" if require_all else "not measured", None, r.value, r.unit,
                                  tol.for_key(key), notes=["this run did not measure it"]))
            continue
        c = check_one(key, m, r, tol.for_key(key))
        if c.status == "fail":
            c.causes = causes.explain(run, ref, key)
        v.checks.append(c)
    v.checks += [Check(k, "no reference", run.ceilings[k].value, None, run.ceilings[k].unit, tol.for_key(k))
                 for k in sorted(set(run.ceilings) - set(ref.ceilings), key=_order)]
    if not v.compared:
        raise InputError(f"run {run.path!r} and reference {ref.path!r} share no ceiling: nothing to validate "
                         f"(the run has {', '.join(sorted(run.ceilings)[:6]) or 'none'})")
    if run.partial:
        v.notes.append("the run is partial (interrupted): only what finished is checked")
    for what, rec in (("run", run), ("reference", ref)):
        if rec.superseded:
            v.notes.append(f"SUPERSEDED {what} {rec.path}: {rec.superseded}")
    if run.contended:
        v.notes.append(f"the run is contended, its figures skewed low: {run.contention}")
    if not ref.measured:
        v.notes.append(f"the reference is spec-derived, not measured: {ref.environment.get('theory')}; "
                       f"{ref.environment.get('mode_choice')}")
    return v


_ORDER = re.compile(rf"^({'|'.join(PROFILE_PRECISIONS)})\.")


def _order(key: str) -> tuple:
    m = _ORDER.match(key)
    return (0, PROFILE_PRECISIONS.index(m.group(1)), key) if m else (1, 0, key)


def load_reference(ref: str, run: RunRecord, expect: float | None = None) -> RunRecord:
    """A measured profile (path), or a datasheet entry by name with fractions of theory (``expect``)."""
    p = Path(ref)
    if p.exists():
        if expect is not None:
            raise InputError("--expect applies to a spec name, not to a measured reference profile")
        rec = load_run(p, strict=True)
        return rec
    if any(ch in ref for ch in "/\\") or ref.endswith(".json"):
        raise InputError(f"reference {ref!r} does not exist (give a profile path or a spec name)")
    from hwprobe import specs
    from hwprobe.fleet.expect import spec_expectation

    sku = specs.find(ref)
    if sku.kind != "gpu":
        raise InputError(f"spec {sku.name!r} is a CPU entry: validate takes GPU entries")
    keys = sorted(run.ceilings)
    rec = spec_expectation(sku, keys=keys, fraction=expect, mode_name=run.power_mode, jetpack=run.jetson.get("jetpack"))
    if not rec.ceilings:
        raise InputError(f"spec {sku.name!r} has no theory for any ceiling of this run")
    return rec
