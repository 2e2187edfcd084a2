"""The ceilings as tables of raw values, one model for the terminal, Markdown and HTML.

A column is "compact" (measured, theory at the clock, %, clock: what fits 80 columns) or "wide" (the rest);
columns empty on every row (no power on a CPU, no datasheet for an unknown part) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hwprobe import keys as K
from hwprobe.flags import Code, has
from hwprobe.judge import ABOVE_THEORY, CLOCK_AGREEMENT
from hwprobe.profile import Ceiling, Profile, window_edges
from hwprobe.report import text as tx
from hwprobe.units import si
from hwprobe.vocab import PROFILE_PRECISIONS, ExecUnit

_PREFIXES = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


@dataclass
class Column:
    key: str
    header: str
    kind: str = "text"          # text | rate | pct | mhz | watt | energy | bytes | time | cycles | ratio
    wide: bool = False          # only in the wide table
    short: str = ""             # header in the terminal (may hold a line break)
    wrap: bool = False          # long text that may wrap in the terminal (a formula)
    extra: bool = False         # HTML and Markdown only (repeated runs, sustained rates): not in the terminal


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)   # raw values by key; "_unit" for rate cells
    note: str = ""

    def visible(self, wide: bool = True, terminal: bool = False) -> list[Column]:
        """Columns shown: compact ones (and wide ones when ``wide``), never one empty on every row."""
        return [c for c in self.columns if (wide or not c.wide) and not (terminal and c.extra)
                and any(r.get(c.key) not in (None, "", []) for r in self.rows)]


def fmt(col: Column, row: dict[str, Any]) -> str:
    """A cell with its unit (Markdown, HTML and the narrow terminal)."""
    v = row.get(col.key)
    if v is None or v == "":
        return "-"
    k = col.kind
    if k == "rate":
        return si(v, row.get("_unit") or "")
    if k == "pct":
        return v if isinstance(v, str) else f"{100 * v:.1f}%"
    if k in ("mhz", "watt", "cycles", "int"):
        return f"{v:.0f}"
    if k == "energy":
        return f"{v * 1e12:.3g}"
    if k == "bytes":
        return si(v, "B")
    if k == "time":
        return si(v, "s")
    if k == "ratio":
        return f"{v:.3f}"
    return str(v)


def scaled(values: list[float | None], unit: str, digits: int = 3) -> tuple[str, list[str]]:
    """Several rates of one row in one prefixed unit: ([807e12, 1.05e15], "FLOP/s") -> ("TFLOP/s", ["807", "1050"])
    with the prefix of the first (the measured value), so a table can carry the unit once per row."""
    lead = next((abs(v) for v in values if v), 0.0)
    scale, prefix = next(((s, p) for s, p in _PREFIXES if lead >= s), (1.0, ""))
    return prefix + unit, ["-" if v is None else (f"{v / scale:.0f}" if abs(v / scale) >= 10 ** digits else
                                                  f"{v / scale:.{digits}g}") for v in values]


def _clock_header(kind: str) -> str:
    return "SM MHz" if kind == "gpu" else "clock MHz"


COMPUTE_COLUMNS = [
    Column("precision", "precision"), Column("unit", "cores"), Column("path", "path"),
    Column("measured", "measured", "rate"), Column("theory_clock", "theory @clock", "rate", short="theory\n@clock"),
    Column("pct_clock", "%", "pct"), Column("theory_max", "theory @max clock", "rate", True, "theory\n@max"),
    Column("pct_max", "% @max", "pct", True, "%\n@max"), Column("datasheet", "datasheet", "rate", True, "data-\nsheet"),
    Column("pct_sheet", "% datasheet", "pct", True, "%\nsheet"), Column("clock", "SM MHz", "mhz", short="SM\nMHz"),
    Column("clock_from", "clock from", wide=True), Column("pct_nvml", "% @NVML clock", "pct", True, "%\n@NVML"),
    Column("clock_check", "NVML vs kernel", wide=True),
    Column("power", "W", "watt", True), Column("energy", "pJ/op", "energy", True, "pJ/\nop"),
    Column("throttle", "throttle", wide=True),
    Column("spread", "spread of runs", "pct", True, extra=True), Column("runs", "runs", "int", True, extra=True),
    Column("sustained", "sustained", "rate", True, extra=True),
]


def _columns(template: list[Column], kind: str) -> list[Column]:
    """Fresh copies of a table's columns, the clock column named for the device kind."""
    cols = [Column(**{**c.__dict__}) for c in template]
    for c in cols:
        if c.key == "clock":
            c.header = _clock_header(kind)
            c.short = c.header.replace(" ", "\n")
    return cols


def compute_table(p: Profile, kind: str = "gpu") -> Table:
    cols = _columns(COMPUTE_COLUMNS, kind)
    t = Table("Compute ceilings", cols, note="measured beside theory at the clock measured during it, at the max "
              "clock and the datasheet; a fused multiply-add counts 2 operations")
    for prec in tx.order(p.compute, PROFILE_PRECISIONS):
        for unit in tx.order(p.compute[prec], [ExecUnit.CUDA_CORE, ExecUnit.TENSOR_CORE, ExecUnit.CPU]):
            paths = p.compute[prec][unit]
            for path in tx.order(paths, tx.PATH_ORDER):
                t.rows.append(_compute_row(prec, unit, path, paths[path]))
    line = edges_line(t)
    if line:
        t.note += "; " + line
    return t


def edges_line(t: Table) -> str:
    """The rows whose sentinel-timed window moved its SM clock by more than 3% (a line under the compute table, not
    a column: the table is at the width a terminal and a 1400-px page hold)."""
    got = [f"{r['precision']} {r['unit']} {r['path']} {r['_edges']}" for r in t.rows if r.get("_edges")]
    return ("SM clock at a library window's edges, before -> after, where more than 3% apart (the SM MHz column "
            "holds the higher edge): " + ", ".join(got) + " MHz") if got else ""


def _compute_row(prec: str, unit: str, path: str, c: Ceiling) -> dict[str, Any]:
    return {
        "precision": prec, "unit": tx.UNIT_SHORT.get(unit, unit), "path": tx.PATH_SHORT.get(path, path),
        "_unit": c.unit, "_metric": c.metric, "_unit_key": unit, "_path_key": path,
        "measured": c.value, "theory_clock": c.theory_at_clock, "pct_clock": c.ratio_at_clock,
        "theory_max": c.theory_at_max_clock, "pct_max": c.ratio_at_max_clock, "datasheet": c.datasheet,
        "pct_sheet": c.ratio_datasheet, "clock": c.clock_mhz, "energy": c.energy_per_unit_j,
        # the window's own power only: the energy counter's mean (a J/op beside it says it was read); a short
        # window's NVML reading is the second before the figure (profiles written before issue 23 kept it)
        "power": c.power_w if c.energy_per_unit_j else None,
        "throttle": tx.throttle(c.throttle_reasons) if c.throttle_reasons else None,
        "spread": getattr(c, "spread", None), "runs": len(getattr(c, "runs", []) or []) or None,
        "sustained": getattr(c, "sustained", None),
        # one clock source per column: the SM MHz column is the clock named in "clock from" (kernel, sentinel,
        # nvml, max); "% @NVML clock" is the same figure against NVML's reading; a disagreement over 3% is shown
        "clock_from": c.clock_source, "_edges": _edges(c), "pct_nvml": _pct_nvml(c),
        "clock_check": _disagreement(c),
    }


def _edges(c: Ceiling) -> str | None:
    """A sentinel-timed window's SM clock before and after it, where it moved by more than 3%: the SM MHz column
    holds the higher edge, so a clock that fell inside the window shows here."""
    edges = window_edges(c.params)
    if not edges or abs(edges[1] / edges[0] - 1) <= CLOCK_AGREEMENT:
        return None
    return f"{edges[0]:.0f} -> {edges[1]:.0f}"


def _pct_nvml(c: Ceiling) -> float | str | None:
    """The figure's share of theory at NVML's clock, or why there is none: above 1.03x theory at that clock
    the figure ran faster than NVML's lagging reading says (a sentinel or the kernel timed the clock that ran),
    so the share is no valid ratio and is never printed as one."""
    pct = (c.params.get(K.PCT_AT) or {}).get("nvml")
    if pct is None or pct <= ABOVE_THEORY:
        return pct
    return "NVML lags"


def _disagreement(c: Ceiling) -> str | None:
    """NVML's clock against the kernel's (or sentinel's) where they differ by more than 3%. Records written
    before issue 23 also flagged a "cycles/event time" clock, which is no clock when the grid runs more than one
    wave: a flag whose two clocks agree shows nothing here."""
    if not has(c.flags, Code.CLOCK_DISAGREEMENT):
        return None
    clk = c.params.get(K.CLOCKS_MHZ) or {}
    own = clk.get("kernel") or clk.get("sentinel")
    if not (own and clk.get("nvml")):
        return "disagree"
    return f"{clk['nvml'] / own - 1:+.1%}" if abs(clk["nvml"] / own - 1) > CLOCK_AGREEMENT else None


MEMORY_COLUMNS = [
    Column("level", "level"), Column("bandwidth", "bandwidth", "rate"),
    Column("theory_clock", "theory @clock", "rate", short="theory\n@clock"), Column("pct_clock", "%", "pct"),
    Column("datasheet", "datasheet", "rate", True, "data-\nsheet"), Column("pct_sheet", "% datasheet", "pct", True,
                                                                          "%\nsheet"),
    Column("capacity", "capacity", "bytes"), Column("latency", "latency", "time"),
    Column("cycles", "cycles", "cycles", True), Column("level_clock", "clock MHz", "mhz", True, "clock\nMHz"),
    Column("level_clock_from", "clock of", wide=True, extra=True),
    Column("throttle", "throttle", wide=True), Column("metric", "slope from", wide=True),
]


def memory_table(p: Profile, kind: str = "gpu") -> Table:
    cols = _columns(MEMORY_COLUMNS, kind)
    t = Table("Memory ceilings", cols, note="bytes as each probe counts them (a copy counts read + write); "
              "latency is one dependent load (pointer chase); clock: DRAM's is the memory clock, the others' the "
              "SM clock")
    for name in tx.order(p.memory, tx.LEVEL_ORDER):
        lvl, c = p.memory[name], p.memory[name].bandwidth
        t.rows.append({
            "level": tx.LEVEL_NAMES.get(name, name), "_unit": "B/s", "_level": name,
            "bandwidth": c.value if c else None, "theory_clock": c.theory_at_clock if c else None,
            "pct_clock": c.ratio_at_clock if c else None, "datasheet": c.datasheet if c else None,
            "pct_sheet": c.ratio_datasheet if c else None, "capacity": lvl.capacity_bytes, "latency": lvl.latency_s,
            "cycles": lvl.latency_cycles, "level_clock": c.clock_mhz if c else None,
            "level_clock_from": _clock_of(c, kind),
            "throttle": tx.throttle(c.throttle_reasons) if c and c.throttle_reasons else None,
            "metric": c.metric if c else None,
        })
    return t


def _clock_of(c: Ceiling | None, kind: str) -> str | None:
    """Which clock a memory level's clock column holds: DRAM's is the memory clock, the others the SM's."""
    if c is None or not c.clock_mhz:
        return None
    return "memory" if c.clock_source == "memory" else ("SM" if kind == "gpu" else "core")


def ridge_table(p: Profile) -> Table:
    """Measured peak / measured DRAM bandwidth per precision and unit: the roofline's corners."""
    cols = [Column("precision", "precision"), Column("unit", "cores"), Column("peak", "measured peak", "rate"),
            Column("ridge", "ridge point"), Column("theory", "theoretical ridge", short="theory"),
            Column("of", "peak from", wide=True)]
    t = Table("Ridge points", cols, note="measured peak / measured DRAM bandwidth (theoretical: theoretical peak "
              "/ theoretical DRAM bandwidth, both at max clocks): below this intensity a kernel is bound by DRAM")
    bw = p.bandwidth("dram")
    if not bw:
        return t
    dram = p.memory.get("dram")
    bw_theory = dram.bandwidth.theory_at_max_clock if dram and dram.bandwidth else None
    for prec in tx.order(p.compute, PROFILE_PRECISIONS):
        for unit in tx.order(p.compute[prec], [ExecUnit.CUDA_CORE, ExecUnit.TENSOR_CORE, ExecUnit.CPU]):
            pk = p.peak(prec, unit)
            if pk is None:
                continue
            t.rows.append({"precision": prec, "unit": tx.UNIT_SHORT.get(unit, unit), "_unit": pk.unit,
                           "peak": pk.value, "ridge": f"{pk.value / bw:.3g} {tx.per_byte(prec, pk.unit)}",
                           "theory": f"{pk.theory_at_max_clock / bw_theory:.3g}"
                           if pk.theory_at_max_clock and bw_theory else None,
                           "of": tx.instruction_name(pk.metric)})
    return t


def links_table(p: Profile) -> Table:
    """Interconnect ceilings (GPU pairs, the host link, collectives), where the run measured any."""
    cols = [Column("link", "link"), Column("kind", "kind", wide=True), Column("type", "type", wide=True),
            Column("what", "ceiling"),
            Column("variant", "variant"), Column("value", "measured", "rate"),
            Column("theory", "theory", "rate"), Column("pct", "%", "pct"), Column("latency", "latency", "time", True)]
    t = Table("Interconnect ceilings", cols, note="algorithm and bus bandwidth as nccl-tests define them; a "
              "collective's ceiling is the best of its out-of-place and in-place runs (variant)")
    for name, link in sorted((getattr(p, "links", None) or {}).items()):
        lat = min(link.latency_s.values()) if link.latency_s else None
        for what, c in sorted(link.ceilings.items()):
            variant = (c.params or {}).get(K.VARIANT)
            t.rows.append({"link": name, "kind": link.kind, "type": link.link_type, "what": what, "_unit": c.unit,
                           "variant": variant.replace("_", "-") if variant else None,
                           "value": c.value, "theory": c.theory_at_clock, "pct": c.ratio_at_clock, "latency": lat})
    return t


def unit_layout(cols: list[Column], rows: list[dict[str, Any]], digits: int = 3):
    """(columns, cells): ``cols`` with one unit column (None) before the first rate, and each row's cell text:
    the row's rates scaled to one shared unit, the other cells formatted. Both renderers lay tables out this way."""
    rates = [c for c in cols if c.kind == "rate"]
    first = next((i for i, c in enumerate(cols) if c.kind == "rate"), None)
    order: list[Column | None] = list(cols) if first is None else [*cols[:first], None, *cols[first:]]
    cells = []
    for r in rows:
        unit, nums = scaled([r.get(c.key) for c in rates], r.get("_unit") or "", digits)
        by_key = dict(zip([c.key for c in rates], nums, strict=False))
        cells.append([unit if c is None else by_key[c.key] if c.kind == "rate" else fmt(c, r) for c in order])
    return order, cells


def probe_time_table(env: dict[str, Any]) -> Table:
    """Each probe's wall time in the run (environment ``probe_seconds``), slowest first, with its share, the part
    of it spent waiting for kernel compiles (``compile_wait_seconds``) and the seconds the GPU was let settle before
    it (``settle_seconds``: outside its wall time) where the run waited."""
    secs = {k: float(v) for k, v in (env.get("probe_seconds") or {}).items()}
    settle = {k: float(v) for k, v in (env.get("settle_seconds") or {}).items()}
    waits = {k: float(v) for k, v in (env.get("compile_wait_seconds") or {}).items()}
    cols = [Column("probe", "probe"), Column("seconds", "wall time", "time"), Column("share", "share", "pct")]
    if waits:
        cols.insert(2, Column("compile_wait", "compile wait", "time"))
    if settle:
        cols.insert(2, Column("settle", "settle before", "time"))
    total = sum(secs.values())
    note = f"{total:.1f} s over {len(secs)} probes" if secs else ""
    if secs:
        note += (f"; {sum(settle.values()):.1f} s more letting the GPU settle before them" if settle
                 else " (a probe's settle before it not counted)")
    if waits:
        note += f"; {sum(waits.values()):.1f} s of the probes' time waiting for kernel compiles"
    t = Table("Probe wall time", cols, note=note)
    for name, s in sorted(secs.items(), key=lambda kv: -kv[1]):
        t.rows.append({"probe": name, "seconds": s, "share": s / total if total > 0 else None,
                       **({"settle": settle.get(name)} if settle else {}),
                       **({"compile_wait": waits.get(name)} if waits else {})})
    return t
