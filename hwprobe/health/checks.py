"""GPU readings -> verdicts, each with its reason. Pure: no NVML here (tests replay recorded answers).

The rules, and where their thresholds come from:
- ECC: an uncorrectable error since the driver loaded fails; one only in the board's lifetime count warns; ECC off
  warns (errors then go unseen). Corrected errors are told, not judged (ECC is doing its job).
- Memory remapping: on Ampere and later a failed or pending row remap fails (pending: a GPU reset applies it;
  failed: the bank has no spare row left). Before Ampere, a pending page retirement fails, and 60 or more retired
  pages fail (the driver retires at most 64: NVIDIA's memory error management guide), fewer warn.
- PCIe: a link narrower than the slot and GPU allow fails; a generation below it fails when it stays below under a
  host copy (links drop to Gen1 while idle to save power, so an idle reading alone only warns); a slot that caps
  the GPU's own generation warns.
- NVLink: a link down while others are up fails; error counters above zero warn (they count since the driver loaded).
- Idle throttle: a slowdown reason set while the GPU does nothing (thermal, power brake, hardware slowdown, the
  power cap) fails; application clocks set below the default warn.
- Power limit: a limit in force below the board's default fails (the ceilings then measure the cap).
- XID: a hardware XID during the run fails; the ones a program's own fault raises (13, 31, 43, 45) warn.
"""

from __future__ import annotations

from hwprobe.health.readings import GpuReadings, Unavailable
from hwprobe.health.verdict import HealthVerdict
from hwprobe.vocab import Verdict

RETIRED_PAGES_MAX = 64          # the driver retires at most this many pages (pre-Ampere)
RETIRED_PAGES_FAIL = 60         # near the end of the budget: replace the board
POWER_TOLERANCE_W = 1.0         # limits are set in mW; a rounding watt apart is the default

# NVML clock-event reasons (nvml.h nvmlClocksEventReason*), as hwprobe.timing.sampler names them
IDLE_FAIL = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
             0x80: "hw_power_brake_slowdown"}
IDLE_WARN = {0x2: "applications_clocks_setting"}
IDLE_BUSY_PCT = 10              # above this utilization the GPU is not idle: the idle check has nothing to judge

# XIDs a program's own fault raises (NVIDIA's XID catalog): told, not failed; every other XID fails the node.
XID_APPLICATION = {13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
                   45: "preemptive cleanup after an earlier error"}
XID_NAMES = {48: "double-bit ECC error", 61: "internal micro-controller breakpoint", 62: "internal micro-controller "
             "halt", 63: "ECC page retirement or row remap recorded", 64: "ECC page retirement or row remap failure",
             74: "NVLink error", 79: "GPU has fallen off the bus", 92: "high single-bit ECC error rate",
             94: "contained ECC error", 95: "uncontained ECC error", 119: "GSP RPC timeout", 120: "GSP error",
             **XID_APPLICATION}


def _na(check: str, u: Unavailable, device: str) -> HealthVerdict:
    return HealthVerdict(check, Verdict.NOT_AVAILABLE, u.reason, {}, device)


def ecc(r: GpuReadings) -> HealthVerdict:
    e, dev = r.ecc, r.device
    if isinstance(e, Unavailable):
        return _na("ecc", e, dev)
    vals = {k: v for k, v in vars(e).items() if v is not None}
    corrected = (f"; corrected: {e.volatile_corrected} since the driver loaded"
                 if e.volatile_corrected is not None else "")
    if e.volatile_uncorrected:
        return HealthVerdict("ecc", Verdict.FAIL, f"{e.volatile_uncorrected} uncorrectable ECC error(s) since the "
                             f"driver loaded{corrected}", vals, dev)
    if e.enabled is False:
        return HealthVerdict("ecc", Verdict.WARN, "ECC is off: memory errors go unseen", vals, dev)
    if e.aggregate_uncorrected:
        return HealthVerdict("ecc", Verdict.WARN, f"{e.aggregate_uncorrected} uncorrectable ECC error(s) in the "
                             f"board's lifetime, none since the driver loaded{corrected}", vals, dev)
    if e.volatile_uncorrected is None and e.aggregate_uncorrected is None:
        return HealthVerdict("ecc", Verdict.NOT_AVAILABLE, "ECC is on, but NVML gives no error counts", vals, dev)
    return HealthVerdict("ecc", Verdict.PASS, f"no uncorrectable ECC error{corrected}", vals, dev)


def memory_remap(r: GpuReadings) -> HealthVerdict:
    """Row remapping on Ampere and later, page retirement before: whichever the part has."""
    rows, pages, dev = r.row_remap, r.retired_pages, r.device
    if not isinstance(rows, Unavailable):
        vals = vars(rows).copy()
        n = rows.corrected_rows + rows.uncorrected_rows
        told = f"{n} row(s) remapped ({rows.uncorrected_rows} for uncorrectable errors)"
        if rows.failure:
            return HealthVerdict("memory_remap", Verdict.FAIL, f"row remapping failed: a bank has no spare row "
                                 f"left; {told}", vals, dev)
        if rows.pending:
            return HealthVerdict("memory_remap", Verdict.FAIL, f"a row remap is pending: a GPU reset applies it; "
                                 f"{told}", vals, dev)
        return HealthVerdict("memory_remap", Verdict.PASS, f"no pending or failed row remap; {told}", vals, dev)
    if not isinstance(pages, Unavailable):
        vals = vars(pages).copy()
        n = pages.single_bit + pages.double_bit
        told = (f"{n} of at most {RETIRED_PAGES_MAX} pages retired ({pages.double_bit} for double-bit, "
                f"{pages.single_bit} for repeated single-bit errors)")
        if pages.pending:
            return HealthVerdict("memory_remap", Verdict.FAIL, f"a page retirement is pending: a driver reload or "
                                 f"reboot applies it; {told}", vals, dev)
        if n >= RETIRED_PAGES_FAIL:
            return HealthVerdict("memory_remap", Verdict.FAIL, f"{told}: the retirement budget is nearly spent",
                                 vals, dev)
        if n:
            return HealthVerdict("memory_remap", Verdict.WARN, told, vals, dev)
        return HealthVerdict("memory_remap", Verdict.PASS, "no retired page", vals, dev)
    return HealthVerdict("memory_remap", Verdict.NOT_AVAILABLE,
                         f"row remapping: {rows.reason}; page retirement: {pages.reason}", {}, dev)


def pcie(r: GpuReadings) -> HealthVerdict:
    p, dev = r.pcie, r.device
    if isinstance(p, Unavailable):
        return _na("pcie", p, dev)
    vals = {k: v for k, v in vars(p).items() if v is not None}
    if p.gen_max is None or p.width_max is None or p.gen_now is None or p.width_now is None:
        return HealthVerdict("pcie", Verdict.NOT_AVAILABLE, "NVML gives no current or maximum PCIe link "
                             "generation or width (an integrated or SXM part without a PCIe readout?)", vals, dev)
    width = p.width_under_load or p.width_now
    gen = p.gen_under_load or p.gen_now
    replays = f"; {p.replays} replay(s) since the driver loaded" if p.replays else ""
    link = f"Gen{gen} x{width} of Gen{p.gen_max} x{p.width_max}"
    if width < p.width_max:
        return HealthVerdict("pcie", Verdict.FAIL, f"link trained narrower than the slot and GPU allow: {link}"
                             f"{replays} (reseat the card or check the riser)", vals, dev)
    if gen < p.gen_max:
        if p.gen_under_load is not None:
            return HealthVerdict("pcie", Verdict.FAIL, f"link stays below its generation under a host copy: {link}"
                                 f"{replays}", vals, dev)
        return HealthVerdict("pcie", Verdict.WARN, f"Gen{p.gen_now} of Gen{p.gen_max} while idle (links drop to save "
                             f"power; not read under load){replays}", vals, dev)
    if p.gen_gpu_max and p.gen_gpu_max > p.gen_max:
        return HealthVerdict("pcie", Verdict.WARN, f"the slot caps the link at Gen{p.gen_max}; the GPU can do "
                             f"Gen{p.gen_gpu_max}: {link}{replays}", vals, dev)
    return HealthVerdict("pcie", Verdict.PASS, f"{link}{replays}", vals, dev)


def nvlink(r: GpuReadings) -> HealthVerdict:
    links, dev = r.nvlinks, r.device
    if isinstance(links, Unavailable):
        return _na("nvlink", links, dev)
    up = [x.link for x in links if x.up]
    down = [x.link for x in links if not x.up]
    errs = {x.link: {k: v for k, v in x.errors.items() if v} for x in links if x.up}
    errs = {k: v for k, v in errs.items() if v}
    vals = {"up": up, "down": down, "errors": {str(k): v for k, v in errs.items()}}
    if not links:
        return HealthVerdict("nvlink", Verdict.NOT_AVAILABLE, "this GPU has no NVLink", vals, dev)
    if not up:
        return HealthVerdict("nvlink", Verdict.NOT_AVAILABLE, f"no NVLink up of {len(links)} (none connected: a "
                             "PCIe card without a bridge?)", vals, dev)
    if down:
        return HealthVerdict("nvlink", Verdict.FAIL, f"{len(down)} of {len(links)} NVLinks down (links "
                             f"{', '.join(map(str, down))}) while {len(up)} are up", vals, dev)
    total: dict[str, int] = {}
    for e in errs.values():
        for k, v in e.items():
            total[k] = total.get(k, 0) + v
    told = ", ".join(f"{k} {v}" for k, v in sorted(total.items()))
    if total.get("replay") or total.get("recovery"):
        return HealthVerdict("nvlink", Verdict.WARN, f"{len(up)} NVLinks up; error counters since the driver "
                             f"loaded on {len(errs)} link(s): {told}", vals, dev)
    if total:   # a healthy H200 counts a few CRC errors per link, each corrected by the link itself
        return HealthVerdict("nvlink", Verdict.PASS, f"{len(up)} NVLinks up; CRC errors corrected on the link "
                             f"({told} since the driver loaded), no replay or recovery", vals, dev)
    return HealthVerdict("nvlink", Verdict.PASS, f"{len(up)} NVLinks up, no error counted", vals, dev)


def idle_throttle(r: GpuReadings) -> HealthVerdict:
    t, dev = r.throttle, r.device
    if isinstance(t, Unavailable):
        return _na("idle_throttle", t, dev)
    vals = {"mask": t.mask, "gpu_util_pct": t.gpu_util_pct}
    if t.gpu_util_pct is not None and t.gpu_util_pct > IDLE_BUSY_PCT:
        return HealthVerdict("idle_throttle", Verdict.NOT_AVAILABLE, f"the GPU is not idle ({t.gpu_util_pct}% "
                             "busy): another process uses it", vals, dev)
    bad = [name for bit, name in IDLE_FAIL.items() if t.mask & bit]
    odd = [name for bit, name in IDLE_WARN.items() if t.mask & bit]
    vals["reasons"] = bad + odd
    if bad:
        return HealthVerdict("idle_throttle", Verdict.FAIL, f"slowdown set while idle: {', '.join(bad)}", vals, dev)
    if odd:
        return HealthVerdict("idle_throttle", Verdict.WARN, f"set while idle: {', '.join(odd)} (someone set the "
                             "application clocks)", vals, dev)
    return HealthVerdict("idle_throttle", Verdict.PASS, "no slowdown reason while idle", vals, dev)


def power_limit(r: GpuReadings) -> HealthVerdict:
    p, dev = r.power, r.device
    if isinstance(p, Unavailable):
        return _na("power_limit", p, dev)
    vals = {k: v for k, v in vars(p).items() if v is not None}
    if p.default_w is None or (p.limit_w is None and p.enforced_w is None):
        return HealthVerdict("power_limit", Verdict.NOT_AVAILABLE, "NVML gives no power limit or no default",
                             vals, dev)
    in_force = min(x for x in (p.limit_w, p.enforced_w) if x is not None)
    which = "enforced limit" if p.enforced_w is not None and p.enforced_w == in_force else "power limit"
    if in_force < p.default_w - POWER_TOLERANCE_W:
        return HealthVerdict("power_limit", Verdict.FAIL, f"{which} {in_force:.0f} W is below the default "
                             f"{p.default_w:.0f} W ({in_force / p.default_w - 1:+.0%}): the ceilings measure the cap",
                             vals, dev)
    return HealthVerdict("power_limit", Verdict.PASS, f"{which} {in_force:.0f} W, default {p.default_w:.0f} W",
                         vals, dev)


def xid(r: GpuReadings) -> HealthVerdict:
    x, dev = r.xid, r.device
    if isinstance(x, Unavailable):
        return _na("xid", x, dev)
    vals = {"events": list(x.events), "watched_s": x.watched_s}
    over = f" over {x.watched_s:.0f} s" if x.watched_s is not None else ""
    if not x.events:
        return HealthVerdict("xid", Verdict.PASS, f"no XID event{over}", vals, dev)
    named = ", ".join(f"{e} ({XID_NAMES.get(e, 'see NVIDIA XID catalog')})" for e in dict.fromkeys(x.events))
    hardware = [e for e in x.events if e not in XID_APPLICATION]
    if hardware:
        return HealthVerdict("xid", Verdict.FAIL, f"{len(x.events)} XID event(s){over}: {named}", vals, dev)
    return HealthVerdict("xid", Verdict.WARN, f"XID event(s) a program's fault raises{over}: {named}", vals, dev)


GPU_CHECKS = (ecc, memory_remap, pcie, nvlink, idle_throttle, power_limit, xid)


def gpu_verdicts(r: GpuReadings, skip: tuple[str, ...] = ()) -> list[HealthVerdict]:
    """Every GPU check, in order (``skip``: check names left out, e.g. "xid" until the run's end)."""
    return [v for v in (c(r) for c in GPU_CHECKS) if v.check not in skip]
