"""One health verdict, and how it travels: as an "info" Measurement (a finding in the profile, tagged with the rank,
host and GPU under MPI like every other record), read back by the fleet's acceptance view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hwprobe import keys as K
from hwprobe.vocab import Kind, Verdict

_ORDER = (Verdict.FAIL, Verdict.WARN, Verdict.PASS, Verdict.NOT_AVAILABLE)


@dataclass
class HealthVerdict:
    check: str                    # "ecc", "memory_remap", "pcie", "nvlink", "idle_throttle", "power_limit", "xid", ...
    verdict: Verdict
    reason: str
    values: dict[str, Any] = field(default_factory=dict)   # the readings behind it (JSON-able)
    device: str = ""              # "GPU 0", "CPU", "Jetson GPU"

    def __post_init__(self) -> None:
        self.verdict = Verdict(self.verdict)

    @property
    def failed(self) -> bool:
        return self.verdict == Verdict.FAIL

    def line(self) -> str:
        return f"{self.check}: {self.verdict}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "verdict": str(self.verdict), "reason": self.reason, "values": self.values,
                "device": self.device}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HealthVerdict:
        return cls(str(d["check"]), Verdict(d["verdict"]), str(d.get("reason", "")), dict(d.get("values") or {}),
                   str(d.get("device", "")))


def worst(verdicts: list[HealthVerdict]) -> Verdict:
    """The verdict that decides: fail over warn over pass; "not available" only when nothing else was read."""
    have = {v.verdict for v in verdicts}
    return next((v for v in _ORDER if v in have), Verdict.NOT_AVAILABLE)


def to_measurement(v: HealthVerdict, probe: str, index: int | None = None):
    """The verdict as a record: kind "info" (a finding, no figure of its own), metric ``health.<check>`` (with the
    GPU index when a probe checks several), the verdict under params["health"]."""
    from hwprobe.measurement import Measurement

    metric = f"health.{v.check}" + (f".gpu{index}" if index is not None else "")
    return Measurement(probe=probe, metric=metric, kind=Kind.INFO, value=0.0, unit="",
                       params={K.HEALTH: v.to_dict()}, notes=[f"{v.device + ': ' if v.device else ''}{v.line()}"])


def from_measurement(d: dict[str, Any]) -> HealthVerdict | None:
    """The verdict of a finding or record dict (profile findings and measurements.jsonl lines), else None."""
    h = (d.get("params") or {}).get(K.HEALTH)
    if not isinstance(h, dict) or "check" not in h or "verdict" not in h:
        return None
    try:
        return HealthVerdict.from_dict(h)
    except ValueError:
        return None
