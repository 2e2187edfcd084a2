"""Jetson modules: theory per power mode, a board's live theory, and the published figures beside theory.

A Jetson's theory is the live SM count (TPCs left on by the power mode x 2) x the live GPU clock cap, and
the EMC rate x the module's bus width. cudaDeviceProp's clockRate and memoryClockRate are not used: Orin
reports a 64-bit bus and a wrong memory clock. The live values come from hwprobe.device.jetson's readout.
"""

from __future__ import annotations

from hwprobe.errors import InputError
from hwprobe.specs import DeviceTheory, PowerMode, Sku, find, match, sku_theory
from hwprobe.specs import theory as th
from hwprobe.specs.jetpack import jetpack_at_least, summary
from hwprobe.units import si
from hwprobe.vocab import ExecUnit, Precision


def _si(x: float | None, unit: str) -> str:
    """Four significant digits, as ``hwprobe specs`` prints theory."""
    return si(x, unit, 4)

# The figures a mode table shows, most telling first; a module shows those its architecture has.
FIGURES = ((Precision.FP32, ExecUnit.CUDA_CORE), (Precision.FP16, ExecUnit.CUDA_CORE),
           (Precision.FP16, ExecUnit.TENSOR_CORE), (Precision.INT8, ExecUnit.TENSOR_CORE))


def mode_sms(sku: Sku, mode: PowerMode) -> int:
    """SMs a mode leaves on: TPCs x SMs per TPC (modules without TPC gating keep all of theirs)."""
    return mode.tpcs * sku.sms_per_tpc if sku.sms_per_tpc else sku.sms


def mode_theory(sku: Sku, mode: PowerMode) -> DeviceTheory:
    """Theory for a module in one power mode: its SMs, its GPU clock cap and its EMC cap."""
    dt = sku_theory(sku)
    dt.sms, dt.max_clock_mhz, dt.mem_clock_mhz = mode_sms(sku, mode), mode.gpu_max_mhz, mode.emc_mhz
    dt.label = (f"{sku.name} in {mode.name} (id {mode.id}): {dt.sms} SMs, GPU {mode.gpu_max_mhz:g} MHz, "
                f"EMC {mode.emc_mhz:g} MHz")
    dt.mem_source = f"EMC {mode.emc_mhz:g} MHz x {sku.bus_width_bits}-bit module bus"
    return dt


def available_modes(sku: Sku, jetpack: str | None = None) -> list[PowerMode]:
    """The modes a board on ``jetpack`` offers: the Super modes from 6.2 on (they take over their ids), the
    older ones before; every mode when the JetPack is unknown."""
    newer = {m.id for m in sku.power_modes if m.min_jetpack and jetpack_at_least(jetpack, m.min_jetpack)}
    out = []
    for m in sku.power_modes:
        if m.min_jetpack:
            if jetpack_at_least(jetpack, m.min_jetpack) is False:
                continue
        elif m.id in newer:
            continue
        out.append(m)
    return out


def find_mode(sku: Sku, name: str | None = None, mode_id: int | None = None,
              jetpack: str | None = None) -> PowerMode | None:
    """A mode by name (case-insensitive, "MODE_" optional), else by id, among those the JetPack offers."""
    modes = available_modes(sku, jetpack)
    if name:
        want = name.upper().removeprefix("MODE_")
        hit = [m for m in modes if m.name.upper().removeprefix("MODE_") == want]
        if hit:
            return hit[0]
    if mode_id is not None:
        hit = [m for m in modes if m.id == mode_id]
        if len(hit) == 1:
            return hit[0]
    return None


def max_mode(sku: Sku, jetpack: str | None = None) -> PowerMode | None:
    """The mode with the most GPU compute (SMs x clock), then the fastest EMC; among equals a MAXN mode, then
    the highest id (Xavier NX: MODE_20W_6CORE, not _2CORE)."""
    modes = available_modes(sku, jetpack)
    return max(modes, key=lambda m: (mode_sms(sku, m) * m.gpu_max_mhz, m.emc_mhz, "MAXN" in m.name.upper(), m.id),
               default=None)


def headline(dt: DeviceTheory) -> tuple[str, str, float] | None:
    """(precision, unit, peak) of the most capable figure this device has (INT8 tensor on Volta/Ampere)."""
    for p, u in reversed(FIGURES):
        t = dt.compute(p, u)
        if t is not None and t.at_max_clock:
            return p, u, t.at_max_clock
    return None


def mode_rows(sku: Sku, jetpack: str | None = None) -> list[dict]:
    """One row per power mode: SMs, clocks, the peaks the architecture has and the DRAM bandwidth."""
    rows = []
    for m in available_modes(sku, jetpack):
        dt = mode_theory(sku, m)
        peaks = {f"{p}.{u}": t.at_max_clock for p, u in FIGURES if (t := dt.compute(p, u)) is not None}
        bw = dt.bandwidth
        rows.append({"id": m.id, "name": m.name, "tpcs": m.tpcs, "sms": dt.sms, "gpu_mhz": m.gpu_max_mhz,
                     "emc_mhz": m.emc_mhz, "peaks": peaks, "dram": bw.at_max_clock if bw else None,
                     "min_jetpack": m.min_jetpack, "note": m.note})
    return rows


def datasheet_rows(sku: Sku) -> list[dict]:
    """Every published figure beside the theory that recomputes it, and the difference (theory / published - 1)."""
    dt = sku_theory(sku)
    rows = []
    for key in sku.datasheet:
        p, u = key.split(".")
        sheet = sku.datasheet_value(key)
        at_sheet, at_max = dt.compute(p, u, clock_mhz=sheet.clock_mhz), dt.compute(p, u)
        rows.append({"figure": key, "published": sheet.value, "clock_mhz": sheet.clock_mhz, "unit": th.op_unit(p),
                     "theory_at_its_clock": at_sheet.at_clock if at_sheet else None,
                     "theory": at_max.at_max_clock if at_max else None, "theory_clock_mhz": dt.max_clock_mhz})
    for key, value in sku.datasheet_sparse.items():
        p, u = key.split(".")
        t = dt.compute(p, u, sparse=True)
        rows.append({"figure": f"{key} (2:4 sparse)", "published": value, "clock_mhz": sku.datasheet_clock_mhz,
                     "unit": th.op_unit(p), "theory_at_its_clock": None,
                     "theory": t.at_max_clock if t else None, "theory_clock_mhz": dt.max_clock_mhz})
    bw = dt.bandwidth
    if sku.datasheet_bandwidth and bw:
        rows.append({"figure": "dram", "published": sku.datasheet_bandwidth, "clock_mhz": None, "unit": "B/s",
                     "theory_at_its_clock": None, "theory": bw.at_max_clock, "theory_clock_mhz": None,
                     "basis": bw.basis})
    for r in rows:
        r["diff"] = r["theory"] / r["published"] - 1 if r["theory"] and r["published"] else None
    return rows


def _pct(x: float | None) -> str:
    return f"{x:+.1%}" if x is not None else "-"


def render_module(sku: Sku, width: int | None = None) -> list[str]:
    """Lines for ``hwprobe specs`` on a Jetson: published vs theory, the headline figure, the power modes (with
    ``width``, only the figure columns that fit it, and a line naming the rest)."""
    lines = ["published figures vs theory (theory / published - 1):"]
    for r in datasheet_rows(sku):
        clk = f" at {r['clock_mhz']:g} MHz" if r["clock_mhz"] else ""
        at = f" (at {r['clock_mhz']:g} MHz: {_si(r['theory_at_its_clock'], r['unit'])})" if (
            r["theory_at_its_clock"] and r["theory_clock_mhz"] and r["clock_mhz"] != r["theory_clock_mhz"]) else ""
        where = f" at {r['theory_clock_mhz']:g} MHz" if r["theory_clock_mhz"] else f" ({r.get('basis', '')})"
        lines.append(f"  {r['figure']:<30} published {_si(r['published'], r['unit'])}{clk}; theory "
                     f"{_si(r['theory'], r['unit'])}{where} {_pct(r['diff'])}{at}")
    if sku.marketing_tops:
        lines.append(f"  headline {_si(sku.marketing_tops, 'OP/s')} ({sku.marketing_tops_basis}){_gpu_alone(sku)}")
    rows = mode_rows(sku)
    if rows:
        lines += _mode_table(rows, width)
    return lines


def _mode_table(rows: list[dict], width: int | None) -> list[str]:
    """The power modes, one line each; at a narrow ``width`` the figure columns that fit, Tensor Cores first."""
    keys = [k for k in (f"{p}.{u}" for p, u in FIGURES) if any(k in r["peaks"] for r in rows)]
    unit = {k: th.op_unit(k.split(".")[0]) for k in keys}
    name_w = max([4] + [len(str(r["name"])) for r in rows])
    jp_w = max([0] + [len(f"  (JetPack {r['min_jetpack']}+)") for r in rows if r["min_jetpack"]])
    col_w = max([len(k) for k in keys] + [len(_si(r["peaks"].get(k), unit[k])) for r in rows for k in keys]) + 1
    fixed = 2 + 3 + 1 + name_w + 1 + 4 + 1 + 8 + 1 + 8 + 12 + jp_w
    shown, left = keys, []
    if width and fixed + col_w * len(keys) > width:
        order = sorted(keys, key=lambda k: (not k.endswith(ExecUnit.TENSOR_CORE), not k.startswith(Precision.FP16),
                                            keys.index(k)))
        n = max(1, (width - fixed) // col_w)
        shown = [k for k in keys if k in order[:n]]
        left = [k for k in keys if k not in shown]
    out = ["power modes (nvpmodel; theory in each mode):",
           f"  {'id':>3} {'name':<{name_w}} {'SMs':>4} {'GPU MHz':>8} {'EMC MHz':>8}"
           + "".join(f"{k:>{col_w}}" for k in shown) + f" {'DRAM':>11}"]
    for r in rows:
        jp = f"  (JetPack {r['min_jetpack']}+)" if r["min_jetpack"] else ""
        out.append(f"  {r['id']:>3} {r['name']:<{name_w}} {r['sms']:>4} {r['gpu_mhz']:>8g} {r['emc_mhz']:>8g}"
                   + "".join(f"{_si(r['peaks'].get(k), unit[k]):>{col_w}}" for k in shown)
                   + f" {_si(r['dram'], 'B/s'):>11}{jp}")
    if left:
        out.append(f"  more columns ({', '.join(left)}): --wide")
    return out


def _gpu_alone(sku: Sku) -> str:
    """The GPU's own share of a headline figure, dense and (where the headline counts it) 2:4 sparse."""
    top = headline(sku_theory(sku))
    if top is None:
        return ""
    unit = "OP/s" if top[0].startswith("int") else "FLOP/s"
    sparse = sku_theory(sku).compute(top[0], top[1], sparse=True)
    if "sparse" in sku.marketing_tops_basis and sparse is not None:
        return f"; the GPU alone: {_si(sparse.at_max_clock, unit)} 2:4 sparse = {_si(top[2], unit)} dense {top[0]}"
    return f"; the GPU alone: {_si(top[2], unit)} dense {top[0]}"


# ------------------------------------------------------------------------------------------------ live

def _module(info, readout: dict) -> Sku | None:
    if readout.get("module"):
        try:
            return find(readout["module"])
        except InputError:
            pass
    return match(info.name, sms=info.sms, mem_bytes=info.mem_bytes or None, clock_mhz=info.sm_clock_max_mhz)


def jetson_theory(info) -> DeviceTheory:
    """Theory for a live Jetson from its readout (GpuInfo.jetson): live SMs x the GPU clock cap of the mode,
    EMC rate x the module's bus. Notes say where each number came from, what could not be read, the mode
    found and what the fullest mode would give."""
    j = info.jetson or {}
    sku = _module(info, j)
    t, g, e, n = j.get("tpc") or {}, j.get("gpu") or {}, j.get("emc") or {}, j.get("nvpmodel") or {}
    sms = t.get("live_sms") or (sku.sms if sku else info.sms)
    clock = g.get("max_mhz") or (sku.boost_clock_mhz if sku else info.sm_clock_max_mhz)
    dt = DeviceTheory(label=info.label, kind="gpu", arch=info.arch, sms=sms, max_clock_mhz=clock, data_rate=2,
                      integrated=True, rate_scale=dict(sku.tensor_rate_scale) if sku else {}, sku=sku)
    dt.notes += summary(j) if j and "error" not in j else [f"Jetson readout failed: {j.get('error')}"]
    if sku is None:
        dt.notes.append(f"no Jetson entry in skus.toml for {info.name!r}: no DRAM theory (CUDA's bus and memory "
                        "clock are wrong on Tegra)")
        return dt
    dt.mem_clock_mhz, dt.bus_width_bits, dt.channels = e.get("theory_mhz") or sku.mem_clock_mhz, sku.bus_width_bits, 1
    dt.mem_source = f"EMC {dt.mem_clock_mhz:g} MHz ({e.get('source') or 'module max'}) x {sku.bus_width_bits}-bit bus"
    dt.label = f"{info.label} = {sku.name}, {sms} SMs live, GPU cap {clock:g} MHz, EMC {dt.mem_clock_mhz:g} MHz"
    if info.sms and info.sms != sms:
        dt.notes.append(f"CUDA reports {info.sms} SMs; the TPC mask leaves {sms} live: theory uses {sms}")
    if info.sm_clock_max_mhz and abs(info.sm_clock_max_mhz - clock) > 1:
        dt.notes.append(f"cudaDeviceProp clockRate says {info.sm_clock_max_mhz:g} MHz: not used on Jetson "
                        f"(devfreq max_freq {clock:g} MHz is the mode's cap)")
    dt.notes += _versus_max(sku, dt, n.get("name"), j.get("jetpack"))
    return dt


def _versus_max(sku: Sku, here: DeviceTheory, mode_name: str | None, jetpack: str | None) -> list[str]:
    """What the fullest power mode would give beside this board's current theory (hwprobe never switches)."""
    top = max_mode(sku, jetpack)
    if top is None:
        return []
    full = mode_theory(sku, top)
    a, b = headline(here), headline(full)
    bw_here, bw_full = here.bandwidth, full.bandwidth
    if a is None or b is None:
        return []
    unit = "OP/s" if a[0].startswith("int") else "FLOP/s"
    same = mode_name and mode_name.upper().removeprefix("MODE_") == top.name.upper().removeprefix("MODE_")
    line = (f"{'this is' if same else 'power mode ' + (mode_name or '?') + ' found;'} the fullest mode {top.name} "
            f"(id {top.id}) gives {mode_sms(sku, top)} SMs at {top.gpu_max_mhz:g} MHz, EMC {top.emc_mhz:g} MHz: "
            f"{a[0]} {a[1]} {_si(b[2], unit)} vs {_si(a[2], unit)} here")
    if bw_here and bw_full:
        line += f", DRAM {_si(bw_full.at_max_clock, 'B/s')} vs {_si(bw_here.at_max_clock, 'B/s')}"
    return [line + ("" if same else "; hwprobe does not change modes (sudo nvpmodel -m N does)")]
