"""Why a run falls short of another: the likely causes, from what the two runs recorded.

Checked in the order they usually explain a gap: a different device or SKU, a different power mode or power
limit, lower clocks (with the throttle reasons), thermal throttling, other processes on the GPU, then driver,
CUDA, library and JetPack versions. Each cause is one line with both runs' values.
"""

from __future__ import annotations

from hwprobe.fleet.records import CeilingRec, RunRecord
from hwprobe.units import si

CLOCK_GAP = 0.03          # clocks more than 3% apart are a cause
HOT_C = 85.0              # a Jetson thermal zone at or above this during the run: thermal throttling is likely


def _get(d: dict, *keys):
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d


def _differs(a, b) -> bool:
    return a not in (None, "") and b not in (None, "") and a != b


def sku_name(rec: RunRecord) -> str | None:
    """The datasheet entry a run's device is (a spec-derived reference is its entry): "NVIDIA H200" with 132
    SMs and 141 GB and the entry "H200 SXM" name one part, so their names differing is no cause."""
    from hwprobe import specs

    d = rec.device
    if not rec.measured:
        return d.get("name")
    if rec.jetson.get("module"):
        return rec.jetson["module"]
    sku = specs.match(str(d.get("name") or ""), sms=d.get("sms"), mem_bytes=d.get("mem_bytes"),
                      clock_mhz=d.get("sm_clock_max_mhz"))
    return sku.name if sku else None


def device_causes(run: RunRecord, ref: RunRecord) -> list[str]:
    out = []
    a, b = run.device, ref.device
    name_a, name_b = run.jetson.get("module") or a.get("name"), ref.jetson.get("module") or b.get("name")
    sku_a, sku_b = sku_name(run), sku_name(ref)
    if sku_a and sku_b and sku_a != sku_b:
        out.append(f"different device: {name_a} ({sku_a}) vs {name_b} ({sku_b}) in the reference")
    elif _differs(name_a, name_b) and not (sku_a and sku_a == sku_b):
        out.append(f"different device: {name_a} vs {name_b} in the reference")
    elif _differs(a.get("sms"), b.get("sms")) and not (run.jetson and ref.jetson):   # Jetson: live SMs, see mode
        out.append(f"different SKU: {a.get('sms')} SMs vs {b.get('sms')}")
    if _differs(a.get("mem_bytes"), b.get("mem_bytes")) and abs(a["mem_bytes"] / b["mem_bytes"] - 1) > 0.02:
        out.append(f"different memory size: {a['mem_bytes'] / 2**30:.0f} GiB vs {b['mem_bytes'] / 2**30:.0f} GiB")
    return out


def mode_causes(run: RunRecord, ref: RunRecord) -> list[str]:
    """Jetson power mode (nvpmodel, live SMs, clock and EMC caps, jetson_clocks) and the NVML power limit."""
    out = []
    ja, jb = run.jetson, ref.jetson
    if ja and jb:
        ma, mb = _get(ja, "nvpmodel", "name"), _get(jb, "nvpmodel", "name")
        sa, sb = _get(ja, "tpc", "live_sms"), _get(jb, "tpc", "live_sms")
        ga, gb = _get(ja, "gpu", "max_mhz"), _get(jb, "gpu", "max_mhz")
        ea, eb = _get(ja, "emc", "theory_mhz"), _get(jb, "emc", "theory_mhz")
        parts = []
        if _differs(sa, sb):
            parts.append(f"{sa} vs {sb} SMs live")
        if _differs(ga, gb):
            parts.append(f"GPU cap {ga:g} vs {gb:g} MHz")
        if _differs(ea, eb):
            parts.append(f"EMC {ea:g} vs {eb:g} MHz")
        if _differs(ma, mb) or parts:
            out.append(f"power mode {ma or '?'} vs {mb or '?'} in the reference"
                       + (f" ({', '.join(parts)})" if parts else ""))
        if ja.get("jetson_clocks") is False and jb.get("jetson_clocks"):
            out.append("jetson_clocks off here, on in the reference (DVFS ramps the clocks during short probes)")
    pa, pb = _get(run.device, "nvml", "power_limit_w"), _get(ref.device, "nvml", "power_limit_w")
    if _differs(pa, pb) and abs(pa / pb - 1) > 0.01:
        out.append(f"power limit {pa:g} W vs {pb:g} W in the reference")
    return out


def clock_kind(c: CeilingRec) -> str:
    """Which clock a ceiling's clock_mhz is: "memory" (a DRAM ceiling's, since 2026-11-26) or "SM" (every other,
    and DRAM ceilings of older runs, which stored the SM clock): two clocks of different kinds never compare."""
    return "memory" if c.clock_source == "memory" else "SM"


def clock_causes(m: CeilingRec | None, r: CeilingRec | None, high: bool = False) -> list[str]:
    """The clock behind a gap, only between clocks of one kind (an SM clock of 1980 MHz against a memory clock of
    2619 is no cause), in the gap's direction: a lower clock, power or thermal limits explain a figure below the
    other's; only a higher clock explains one above it."""
    if m is None:
        return []
    same = r is not None and m.clock_mhz and r.clock_mhz and clock_kind(m) == clock_kind(r)
    if high:
        if same and m.clock_mhz > r.clock_mhz * (1 + CLOCK_GAP):
            return [f"higher {clock_kind(m)} clock: {m.clock_mhz:.0f} vs {r.clock_mhz:.0f} MHz "
                    f"({m.clock_mhz / r.clock_mhz - 1:+.0%})"]
        return window_causes(r, m, "in the reference's window")
    out = window_causes(m, r, "inside this window")
    if same and m.clock_mhz < r.clock_mhz * (1 - CLOCK_GAP):
        why = f" (throttle: {', '.join(m.throttle)})" if m.throttle else ""
        out.append(f"lower {clock_kind(m)} clock: {m.clock_mhz:.0f} vs {r.clock_mhz:.0f} MHz "
                   f"({m.clock_mhz / r.clock_mhz - 1:+.0%}){why}")
    elif m.power_limited and not (r is not None and r.power_limited):
        out.append(f"power-limited here (throttle: {', '.join(m.throttle)}), not in the reference")
    elif same:
        out += capped_clock_causes(m, r)
    if m.thermal:
        out.append(f"thermal throttling during this ceiling: {', '.join(t for t in m.throttle if 'thermal' in t)}")
    return out


def capped_clock_causes(m: CeilingRec, r: CeilingRec) -> list[str]:
    """Both sides held at the power limit, this one at a clock lower by less than CLOCK_GAP: the clock the limiter
    granted is then part of a shortfall, by as much as the figure per clock cycle (CeilingRec.per_cycle, as validate
    compares it) sits closer to the reference's than the rate does (FP8 2:4 in the thirty-fifth session's A/B: -2.0%
    by rate at 1290 against 1305 MHz, -0.9% per clock)."""
    if not (m.power_limited and r.power_limited and m.clock_mhz and r.clock_mhz and m.clock_mhz < r.clock_mhz
            and m.value < r.value):
        return []
    rate = m.value / r.value
    per_clock = m.per_cycle()[0] / r.per_cycle()[0]
    return [f"power-limited on both sides, at a lower {clock_kind(m)} clock here: {m.clock_mhz:.0f} vs "
            f"{r.clock_mhz:.0f} MHz ({m.clock_mhz / r.clock_mhz - 1:+.1%}); per clock cycle {per_clock - 1:+.1%}, "
            f"by rate {rate - 1:+.1%}"]


def window_causes(fell: CeilingRec | None, other: CeilingRec | None, where: str) -> list[str]:
    """The SM clock falling inside one side's window by more than CLOCK_GAP more than inside the other's: its clock
    sentinel's two edges say so where the record's one clock (the higher edge) and NVML's median do not."""
    drop = fell.window_fall if fell is not None else None
    if drop is None or drop > -CLOCK_GAP or (other is not None and (other.window_fall or 0.0) <= drop + CLOCK_GAP):
        return []
    before, after = fell.edges_mhz
    return [f"the SM clock fell {where}: {before:.0f} -> {after:.0f} MHz at its edges ({drop:+.0%}; the record's "
            f"clock is the higher edge)"]


def health_causes(run: RunRecord, ref: RunRecord) -> list[str]:
    out = []
    hot = {k: v for k, v in (run.jetson.get("thermal") or {}).items() if isinstance(v, (int, float)) and v >= HOT_C}
    if hot:
        out.append("hot: " + ", ".join(f"{k} {v:.0f} C" for k, v in hot.items()) + f" (>= {HOT_C:.0f} C)")
    ta, tb = _get(run.device, "nvml", "temp_c"), _get(ref.device, "nvml", "temp_c")
    if ta is not None and tb is not None and ta >= tb + 15:
        out.append(f"GPU {ta} C at the start vs {tb} C in the reference (cooling?)")
    if run.contended:
        out.append(run.contention)
    return out


def version_causes(run: RunRecord, ref: RunRecord) -> list[str]:
    pairs = [
        ("driver", run.device.get("driver_version"), ref.device.get("driver_version")),
        ("CUDA runtime", _get(run.environment, "cuda", "runtime"), _get(ref.environment, "cuda", "runtime")),
        ("CUDA driver API", _get(run.environment, "cuda", "driver"), _get(ref.environment, "cuda", "driver")),
        ("cuBLAS", _get(run.environment, "cuda", "cublas"), _get(ref.environment, "cuda", "cublas")),
        ("JetPack", run.jetson.get("jetpack"), ref.jetson.get("jetpack")),
        ("L4T", run.jetson.get("l4t"), ref.jetson.get("l4t")),
        ("hwprobe", run.version, ref.version),
    ]
    return [f"{what} {a} vs {b} in the reference" for what, a, b in pairs if _differs(a, b)]


def path_causes(m: CeilingRec | None, r: CeilingRec | None) -> list[str]:
    if m is None or r is None or not m.metric or not r.metric or m.metric == r.metric:
        return []
    return [f"the best path differs: {m.metric} here, {r.metric} in the reference"]


def _sentinel(c: dict) -> tuple[float, float] | None:
    """A candidate row's two sentinel clocks (its window's edges, either order) as (low, high), or None."""
    got = [x for x in c.get("sentinel_sm_mhz") or [] if isinstance(x, (int, float))]
    return (min(got), max(got)) if len(got) == 2 else None


def _moved(c: dict) -> str:
    """"LOW and HIGH MHz" where a candidate's clock moved by more than CLOCK_GAP inside its window, else ""."""
    e = _sentinel(c)
    return f"{e[0]:.0f} and {e[1]:.0f} MHz" if e and e[0] < e[1] * (1 - CLOCK_GAP) else ""


def size_causes(m: CeilingRec | None, r: CeilingRec | None) -> list[str]:
    """A library GEMM ceiling taken at another size than the reference's: this run's own point at the reference's
    size (same metric: size, layout, algo), and whether the SM clock moved inside that window. On an H200 at the
    700 W cap, TF32 gemmEx at 8192 runs ~415 TFLOP/s until the power limiter acts, then 345-360; a window of ten
    samples reads whichever share it caught (profiles/h200-sxm/2026-11-29-ab-s42: 378 against 415, the limiter at
    the 3rd sample against the 9th), so the ceiling moved to another size. The sentinel's two readings per
    window (clock at its edges, in either order in a candidate's row) show that the clock moved, not when."""
    if m is None or r is None or not m.size or not r.size or m.size == r.size:
        return []
    text = f"the best size differs: n={m.size} here, n={r.size} in the reference"
    src = r.source
    mine = m.candidate(src["metric"]) if src else None
    if mine is None or not isinstance(mine.get("rate"), (int, float)):
        return [text]
    text += f"; this run's n={r.size} point read {si(mine['rate'], m.unit)} ({mine['rate'] / r.value:.3f}x)"
    if mine_moved := _moved(mine):
        text += f", and the SM clock moved inside that window ({mine_moved} at its edges)"
        if src_moved := _moved(src):
            text += (f", as in the reference's ({src_moved}): a window's median depends on where in it the clock "
                     "moved")
    return [text]


HOST_LINKS = ("host_h2d.bandwidth", "host_d2h.bandwidth", "host_bidir.bandwidth")


def pcie_link(rec: RunRecord):
    """The PCIe verdict the run's health check gave (gpu.health), its first GPU's, or None."""
    from hwprobe.health import from_measurement

    return next((v for v in map(from_measurement, rec.health) if v is not None and v.check == "pcie"), None)


def host_link_causes(run: RunRecord, ref: RunRecord, key: str | None) -> list[str]:
    """A host-link figure short: the run's other host copies against the reference's, and the PCIe link its health
    check read. In the forty-second session's acceptance run on an H200 every host copy read low at once (both
    ways -14%, H2D -7%) with the link at Gen5 x16 of Gen5 x16, and a fresh machine read the reference's figures:
    the link was not the limit, the host side was (profiles/h200-sxm/2026-11-29-ab-s42). Where both runs name
    their link, a different one is the cause; a link at its full width and speed points at the host."""
    if key not in HOST_LINKS:
        return []
    from hwprobe.report.text import LEVEL_NAMES

    others = [f"{LEVEL_NAMES[k.split('.')[0]]} {si(run.ceilings[k].value, run.ceilings[k].unit)} "
              f"({run.ceilings[k].value / ref.ceilings[k].value:.2f}x)"
              for k in HOST_LINKS if k != key and k in run.ceilings and k in ref.ceilings and ref.ceilings[k].value]
    tail = [f"this run's other host copies against the reference: {', '.join(others)}"] if others else []
    a, b = pcie_link(run), pcie_link(ref)
    if a is None:
        return tail
    if b is not None and a.reason != b.reason:
        return ["; ".join([f"PCIe link {a.reason} here, {b.reason} in the reference", *tail])]
    v = a.values
    full = v.get("gen_now") and v.get("gen_now") == v.get("gen_max") and v.get("width_now") == v.get("width_max")
    head = f"PCIe link {a.reason} (health)" + (": at its full width and speed the link is not the limit; host "
                                               "memory, CPU load or where the host placed the copy is the likely one"
                                               if full else "")
    return ["; ".join([head, *tail])]


def explain(run: RunRecord, ref: RunRecord, key: str | None = None, high: bool = False) -> list[str]:
    """Likely causes of ``run`` falling short of ``ref`` (``high``: rising above it) for ``key``, or the run as a
    whole, most telling first. Throttling, heat and other processes only ever lower a figure, so they explain a
    shortfall only. An empty answer becomes one line saying nothing recorded explains it."""
    m = run.ceilings.get(key) if key else None
    r = ref.ceilings.get(key) if key else None
    out = (device_causes(run, ref) + mode_causes(run, ref) + clock_causes(m, r, high)
           + ([] if high else health_causes(run, ref) + size_causes(m, r) + host_link_causes(run, ref, key))
           + (path_causes(m, r) if ref.measured else []) + version_causes(run, ref))
    if not ref.measured:
        out.append("the reference is spec-derived (fractions of theory), not measured")
    if out:
        return out
    if high:
        return ["nothing the two runs recorded differs: a figure above its peers' is itself suspect (check it "
                "against theory: hwprobe report) or a faster unit"]
    return ["nothing the two runs recorded differs: suspect cooling, background load or the unit itself"]
