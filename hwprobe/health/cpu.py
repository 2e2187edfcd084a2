"""Host CPU health from Linux sysfs: memory errors (EDAC), frequency caps, thermal throttling and offline cores.
READS only. Every path hangs off one ``root`` ("/" on a machine, a built tree in tests); a file a kernel or a VM
does not offer makes that check "not available" with the path.

- memory: EDAC's uncorrected count (``mc*/ue_count``) above zero fails; corrected ones are told.
- cpufreq: a core whose ``scaling_max_freq`` is below its ``cpuinfo_max_freq`` fails (the ceilings measure the cap).
- thermal: a zone at or over a throttling trip point fails; cores that throttled since boot
  (``thermal_throttle/core_throttle_count``, Intel) warn.
- cores: CPUs offline (``/sys/devices/system/cpu/offline``) warn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hwprobe.health.jetson import trip_points
from hwprobe.health.verdict import HealthVerdict
from hwprobe.vocab import Verdict

DEVICE = "CPU"
CPU_DIR = "sys/devices/system/cpu"


@dataclass
class CpuReadings:
    edac: dict[str, tuple[int, int]] | None = None       # controller -> (corrected, uncorrected); None: no EDAC
    freq: dict[int, tuple[int, int]] = field(default_factory=dict)   # cpu -> (scaling_max, cpuinfo_max) kHz
    throttles: dict[int, int] | None = None               # cpu -> core_throttle_count; None: not offered
    temps: dict[str, float] = field(default_factory=dict)
    trips: dict[str, float] = field(default_factory=dict)
    offline: str | None = None                            # the kernel's list ("" none); None: unreadable


def _int(p: Path) -> int | None:
    try:
        return int(p.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _cpu_no(p: Path) -> int:
    m = re.search(r"cpu(\d+)", str(p))
    return int(m.group(1)) if m else -1


def read(root: str | Path = "/") -> CpuReadings:
    r, base = CpuReadings(), Path(root)
    mcs = sorted((base / "sys/devices/system/edac/mc").glob("mc[0-9]*"))
    if mcs:
        r.edac = {mc.name: (_int(mc / "ce_count") or 0, _int(mc / "ue_count") or 0) for mc in mcs}
    for f in (base / CPU_DIR).glob("cpu[0-9]*/cpufreq/scaling_max_freq"):
        top = _int(f.parent / "cpuinfo_max_freq")
        cur = _int(f)
        if top and cur:
            r.freq[_cpu_no(f)] = (cur, top)
    counts = {_cpu_no(f): _int(f) for f in (base / CPU_DIR).glob("cpu[0-9]*/thermal_throttle/core_throttle_count")}
    r.throttles = {k: v for k, v in counts.items() if v is not None} if counts else None
    for zone in sorted((base / "sys/devices/virtual/thermal").glob("thermal_zone*")):
        milli = _int(zone / "temp")
        try:
            kind = (zone / "type").read_text().strip()
        except OSError:
            continue
        if milli is not None and milli > -40000:
            r.temps[kind] = milli / 1000
    r.trips = trip_points(root)
    try:
        r.offline = (base / CPU_DIR / "offline").read_text().strip()
    except OSError:
        r.offline = None
    return r


def memory(r: CpuReadings) -> HealthVerdict:
    if r.edac is None:
        return HealthVerdict("memory", Verdict.NOT_AVAILABLE, "no EDAC memory controller under "
                             "/sys/devices/system/edac/mc (no ECC memory, no EDAC driver, or a VM)", {}, DEVICE)
    ce = sum(c for c, _ in r.edac.values())
    ue = sum(u for _, u in r.edac.values())
    vals = {"corrected": ce, "uncorrected": ue, "controllers": {k: list(v) for k, v in r.edac.items()}}
    if ue:
        return HealthVerdict("memory", Verdict.FAIL, f"{ue} uncorrected memory error(s) since boot (EDAC); "
                             f"{ce} corrected", vals, DEVICE)
    return HealthVerdict("memory", Verdict.PASS, f"no uncorrected memory error (EDAC); {ce} corrected", vals,
                         DEVICE)


def cpufreq(r: CpuReadings) -> HealthVerdict:
    if not r.freq:
        return HealthVerdict("cpufreq", Verdict.NOT_AVAILABLE, "no cpufreq scaling_max_freq/cpuinfo_max_freq "
                             "(a VM, or no cpufreq driver)", {}, DEVICE)
    capped = {c: v for c, v in sorted(r.freq.items()) if v[0] < v[1]}
    vals = {"capped": {str(c): list(v) for c, v in capped.items()}, "cpus": len(r.freq)}
    if capped:
        c, (cur, top) = next(iter(capped.items()))
        return HealthVerdict("cpufreq", Verdict.FAIL, f"{len(capped)} of {len(r.freq)} cores capped below their "
                             f"max clock (cpu{c}: {cur / 1e3:.0f} of {top / 1e3:.0f} MHz)", vals, DEVICE)
    return HealthVerdict("cpufreq", Verdict.PASS, f"no core capped below its max clock ({len(r.freq)} cores)",
                         vals, DEVICE)


def thermal(r: CpuReadings) -> HealthVerdict:
    over = {k: (t, r.trips[k]) for k, t in r.temps.items() if k in r.trips and t >= r.trips[k]}
    thr = {c: n for c, n in (r.throttles or {}).items() if n}
    vals = {"temps_c": r.temps, "trips_c": r.trips, "throttled_cores": len(thr)}
    if over:
        told = ", ".join(f"{k} {t:.1f} C >= {trip:.1f} C" for k, (t, trip) in over.items())
        return HealthVerdict("thermal", Verdict.FAIL, f"at or over a throttling trip point: {told}", vals, DEVICE)
    if thr:
        return HealthVerdict("thermal", Verdict.WARN, f"{len(thr)} core(s) throttled for heat since boot "
                             f"({sum(thr.values())} events)", vals, DEVICE)
    if not r.temps and r.throttles is None:
        return HealthVerdict("thermal", Verdict.NOT_AVAILABLE, "no thermal zone and no throttle counter (a VM?)",
                             vals, DEVICE)
    return HealthVerdict("thermal", Verdict.PASS, "below every trip point; no thermal throttling counted", vals,
                         DEVICE)


def cores(r: CpuReadings) -> HealthVerdict:
    if r.offline is None:
        return HealthVerdict("cores", Verdict.NOT_AVAILABLE, f"/{CPU_DIR}/offline unreadable", {}, DEVICE)
    if r.offline:
        return HealthVerdict("cores", Verdict.WARN, f"CPUs offline: {r.offline}", {"offline": r.offline}, DEVICE)
    return HealthVerdict("cores", Verdict.PASS, "no CPU offline", {"offline": ""}, DEVICE)


def verdicts(r: CpuReadings) -> list[HealthVerdict]:
    return [memory(r), cpufreq(r), thermal(r), cores(r)]
