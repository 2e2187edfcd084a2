"""Jetson health from what sysfs offers (NVML is a stub there): temperatures against their trip points, the live
SMs against the power mode's, and the GPU and EMC clock caps against the mode's. READS only.

The readout is hwprobe.device.jetson's (``JetsonReadout.to_dict``); the trip points are read here, under the same
root, from each thermal zone's ``trip_point_N_temp``/``_type``. A board has no ECC, NVLink or XID readout: those
checks are not made (the GPU checks' "not available" would only repeat it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hwprobe.health.verdict import HealthVerdict
from hwprobe.vocab import Verdict

HOT_TRIPS = ("passive", "hot", "critical")        # trip types at which the kernel throttles or shuts down
DEVICE = "Jetson GPU"


def trip_points(root: str | Path = "/") -> dict[str, float]:
    """Zone type -> the lowest throttling trip point (degrees C) of each thermal zone that has one."""
    base = Path(root) / "sys/devices/virtual/thermal"
    out: dict[str, float] = {}
    for zone in sorted(base.glob("thermal_zone*")):
        try:
            kind = (zone / "type").read_text().strip()
        except OSError:
            continue
        temps = []
        for t in zone.glob("trip_point_*_type"):
            try:
                if t.read_text().strip() in HOT_TRIPS:
                    temps.append(int((zone / t.name.replace("_type", "_temp")).read_text().split()[0]) / 1000)
            except (OSError, ValueError, IndexError):
                continue
        if temps:
            out[kind] = min(temps)
    return out


def thermal(readout: dict[str, Any], trips: dict[str, float]) -> HealthVerdict:
    temps: dict[str, float] = readout.get("thermal") or {}
    if not temps:
        return HealthVerdict("thermal", Verdict.NOT_AVAILABLE, "no thermal zone readable", {}, DEVICE)
    vals = {"temps_c": temps, "trips_c": trips}
    if not trips:
        hottest = max(temps, key=lambda k: temps[k])
        return HealthVerdict("thermal", Verdict.NOT_AVAILABLE, f"no trip point readable (hottest zone {hottest} "
                             f"at {temps[hottest]:.1f} C)", vals, DEVICE)
    over = {k: (temps[k], trips[k]) for k in temps if k in trips and temps[k] >= trips[k]}
    if over:
        told = ", ".join(f"{k} {t:.1f} C >= {trip:.1f} C" for k, (t, trip) in over.items())
        return HealthVerdict("thermal", Verdict.FAIL, f"at or over a throttling trip point: {told}", vals, DEVICE)
    margin = min(trips[k] - temps[k] for k in temps if k in trips) if set(temps) & set(trips) else None
    told = f"; closest zone {margin:.1f} C below its trip point" if margin is not None else ""
    return HealthVerdict("thermal", Verdict.PASS, f"every zone below its trip point{told}", vals, DEVICE)


def _mode(readout: dict[str, Any]) -> dict[str, Any]:
    n = readout.get("nvpmodel") or {}
    return (n.get("modes") or {}).get(n.get("id")) or (n.get("modes") or {}).get(str(n.get("id"))) or {}


def live_sms(readout: dict[str, Any]) -> HealthVerdict:
    """The TPCs the driver runs against what the power mode gates: fewer live than the mode leaves fails."""
    tpc = readout.get("tpc") or {}
    live, top = tpc.get("live_sms"), tpc.get("max_sms")
    vals = {k: tpc.get(k) for k in ("live_sms", "max_sms", "fs_mask", "pg_mask", "source")}
    if live is None or top is None:
        return HealthVerdict("live_sms", Verdict.NOT_AVAILABLE, f"TPC masks unreadable ({tpc.get('source')})",
                             vals, DEVICE)
    gated = bin(int(_mode(readout).get("tpc_pg_mask") or 0)).count("1")
    expected = top - 2 * gated                                   # 2 SMs per TPC (Volta, Ampere)
    mode = (readout.get("nvpmodel") or {}).get("name") or "?"
    if live < expected:
        return HealthVerdict("live_sms", Verdict.FAIL, f"{live} SMs live, power mode {mode} leaves {expected} of "
                             f"{top}", vals, DEVICE)
    return HealthVerdict("live_sms", Verdict.PASS, f"{live} of {top} SMs live (power mode {mode})", vals, DEVICE)


def clock_caps(readout: dict[str, Any]) -> HealthVerdict:
    """The GPU's devfreq max and the EMC cap against the power mode's: a lower cap than the mode sets fails."""
    mode, g, e = _mode(readout), readout.get("gpu") or {}, readout.get("emc") or {}
    vals = {"gpu_max_mhz": g.get("max_mhz"), "mode_gpu_max_hz": mode.get("gpu_max_hz"),
            "emc_cap_mhz": e.get("cap_mhz"), "mode_emc_max_hz": mode.get("emc_max_hz")}
    if not mode or g.get("max_mhz") is None:
        return HealthVerdict("clock_caps", Verdict.NOT_AVAILABLE, "no power mode table or no GPU devfreq max",
                             vals, DEVICE)
    low = []
    if mode.get("gpu_max_hz", 0) > 0 and g["max_mhz"] < mode["gpu_max_hz"] / 1e6 * 0.99:
        low.append(f"GPU max_freq {g['max_mhz']:.0f} MHz < the mode's {mode['gpu_max_hz'] / 1e6:.0f} MHz")
    if mode.get("emc_max_hz", 0) > 0 and e.get("cap_mhz") and e["cap_mhz"] < mode["emc_max_hz"] / 1e6 * 0.99:
        low.append(f"EMC cap {e['cap_mhz']:.0f} MHz < the mode's {mode['emc_max_hz'] / 1e6:.0f} MHz")
    if low:
        return HealthVerdict("clock_caps", Verdict.FAIL, "capped below the power mode: " + "; ".join(low) +
                             " (someone wrote max_freq?)", vals, DEVICE)
    return HealthVerdict("clock_caps", Verdict.PASS, f"GPU max {g['max_mhz']:.0f} MHz as the power mode sets",
                         vals, DEVICE)


def verdicts(readout: dict[str, Any], root: str | Path = "/") -> list[HealthVerdict]:
    if not readout or "error" in readout:
        why = (readout or {}).get("error", "not a Jetson")
        return [HealthVerdict("jetson", Verdict.NOT_AVAILABLE, f"no Jetson readout: {why}", {}, DEVICE)]
    return [thermal(readout, trip_points(root)), live_sms(readout), clock_caps(readout)]
