"""What `report` and `plot` read: a results directory or a profile.json, with the raw curves where present.

A results directory holds profile.json and measurements.jsonl (every sweep point); a profile.json alone
still carries the ceilings and the findings' summary curves (alignment pairs, sparse speed-ups, power
points, the L2 latency sweep), so every plot that can be drawn from it is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwprobe.device.info import device_kind
from hwprobe.errors import InputError
from hwprobe.measurement import Measurement
from hwprobe.profile import Profile
from hwprobe.profile_build import load_profile
from hwprobe.vocab import SPARSE_SUFFIX, profile_precision


@dataclass
class Run:
    """One run as the report sees it: the profile, its measurements (may be empty) and where it came from."""

    profile: Profile
    measurements: list[Measurement] = field(default_factory=list)
    path: Path = Path(".")
    label: str = ""

    @property
    def environment(self) -> dict[str, Any]:
        return self.profile.environment or {}

    @property
    def kind(self) -> str:
        """"gpu" or "cpu", from the device record (CPU profiles have no SM count)."""
        return device_kind(self.profile.device)

    @property
    def device_name(self) -> str:
        d = self.profile.device
        return str(d.get("name") or d.get("model") or "unknown device")

    def sweeps(self, prefix: str = "", probe: str | None = None) -> list[Measurement]:
        """Valid sweep points whose metric starts with ``prefix`` (and from ``probe`` when given)."""
        return [m for m in self.measurements if m.kind == "sweep" and m.metric.startswith(prefix) and m.valid
                and (probe is None or m.probe == probe)]

    def finding(self, metric: str) -> dict[str, Any] | None:
        for f in self.profile.findings:
            if f.get("metric") == metric:
                return f
        return None

    def findings(self, prefix: str = "", suffix: str = "") -> list[dict[str, Any]]:
        return [f for f in self.profile.findings
                if str(f.get("metric", "")).startswith(prefix) and str(f.get("metric", "")).endswith(suffix)]

    def theory_rate(self, precision: str, unit: str, clock_mhz: float | None = None) -> float | None:
        """Theory for (precision, unit) at ``clock_mhz`` (default: the max clock), scaled from the profile's
        ceilings (theory is linear in the SM clock): sweep points carry no theory of their own."""
        prec = profile_precision(precision)
        paths = (self.profile.compute.get(prec) or {}).get(unit) or {}
        dense = [c for k, c in paths.items() if not k.endswith(SPARSE_SUFFIX) and c.theory_at_max_clock]
        if not dense:
            return None
        peak = dense[0].theory_at_max_clock
        top = self.profile.device.get("sm_clock_max_mhz") or self.profile.device.get("max_mhz")
        return peak * clock_mhz / top if clock_mhz and top else peak

    def measurement(self, metric: str) -> Measurement | None:
        for m in self.measurements:
            if m.metric == metric:
                return m
        return None


def load_run(source: str | Path, label: str | None = None) -> Run:
    """A results directory or a profile.json; measurements.jsonl beside the profile is read when present."""
    from hwprobe.results import read_measurements, records_file

    p = Path(source)
    if not p.exists():
        raise InputError(f"{str(p)!r} does not exist: give a results directory or a profile.json")
    prof = load_profile(p)
    run_dir = p if p.is_dir() else p.parent
    ms = read_measurements(run_dir) if records_file(run_dir) else []
    return Run(prof, ms, run_dir, label or default_label(prof, run_dir))


def default_label(prof: Profile, run_dir: Path) -> str:
    """A short name for a run in overlays: the device and the run directory's name."""
    name = str(prof.device.get("name") or prof.device.get("model") or "run").replace("NVIDIA ", "")
    return f"{name} ({run_dir.name})" if run_dir.name else name


def load_runs(sources: list[str] | tuple[str, ...]) -> list[Run]:
    """Several runs for an overlay; labels stay unique (the directory name tells same-device runs apart)."""
    runs = [load_run(s) for s in sources]
    names = [r.device_name for r in runs]
    for r in runs:
        if names.count(r.device_name) == 1:
            r.label = r.device_name.replace("NVIDIA ", "")
    return runs
