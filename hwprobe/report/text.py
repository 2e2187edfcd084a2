"""The report's vocabulary: names of units, paths and throttle reasons as a reader says them, units that
follow the precision (OP for integers), and the lists of findings, skips and invalid results, each once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hwprobe.errors import is_library_refusal
from hwprobe.profile import Profile
from hwprobe.units import si
from hwprobe.vocab import SPARSE_SUFFIX, ExecUnit, Path

LEVEL_ORDER = ["shared", "l1", "l2", "l2_near", "l2_far", "dram", "host_h2d", "host_d2h", "host_bidir"]
PATH_ORDER = [Path.INSTRUCTION, Path.LIBRARY, Path.LIBRARY + SPARSE_SUFFIX]
UNIT_NAMES = {ExecUnit.TENSOR_CORE: "Tensor Cores", ExecUnit.CUDA_CORE: "CUDA cores", ExecUnit.CPU: "CPU cores",
              ExecUnit.COPY_ENGINE: "copy engine"}
UNIT_SHORT = {ExecUnit.TENSOR_CORE: "tensor", ExecUnit.CUDA_CORE: "CUDA", ExecUnit.CPU: "CPU",
              ExecUnit.COPY_ENGINE: "copy"}
PATH_SHORT = {Path.INSTRUCTION: "instr", Path.LIBRARY: Path.LIBRARY.value, Path.LIBRARY + SPARSE_SUFFIX: "2:4 lib"}
PATH_NAMES = {**{p: p.value for p in Path}, Path.LIBRARY + SPARSE_SUFFIX: "library, 2:4 sparse"}
THROTTLE = {"sw_power_cap": "power cap", "hw_slowdown": "hw slowdown", "hw_thermal_slowdown": "hw thermal",
            "sw_thermal_slowdown": "thermal", "hw_power_brake_slowdown": "power brake",
            "sync_boost": "sync boost", "applications_clocks_setting": "app clocks", "display_clock_setting": "display"}
LEVEL_NAMES = {"shared": "shared", "l1": "L1", "l2": "L2", "l2_near": "L2 near", "l2_far": "L2 far",
               "dram": "DRAM", "host_h2d": "host to device", "host_d2h": "device to host",
               "host_bidir": "host, both ways",
               "dsm": "SM to SM (cluster)"}


def order(keys, ranking) -> list:
    return sorted(keys, key=lambda k: (ranking.index(k) if k in ranking else len(ranking), k))


def is_measured(p: Profile) -> bool:
    """False for a spec-derived profile (expectations from theory x assumed fractions, e.g. profiles/jetson/)."""
    return (p.environment or {}).get("measured") is not False and p.device.get("measured") is not False


NOT_MEASURED = ("SPEC-DERIVED, NOT MEASURED: every figure here is an expectation (theory x an assumed fraction), "
                "not a measurement")


def is_integer(precision: str | None) -> bool:
    return bool(precision) and str(precision).startswith("int")


def op_word(precision: str | None = None, unit: str | None = None) -> str:
    """"OP" for integer precisions (or an OP/s unit), "FLOP" otherwise."""
    if unit:
        return "OP" if unit.startswith("OP") else "FLOP"
    return "OP" if is_integer(precision) else "FLOP"


def per_byte(precision: str | None = None, unit: str | None = None) -> str:
    """The intensity unit that goes with a precision: FLOP/B, or OP/B for integers."""
    return f"{op_word(precision, unit)}/B"


def throttle(reasons: list[str] | None) -> str:
    return ", ".join(THROTTLE.get(r, r.replace("_", " ")) for r in reasons or []) or "-"


_NAMES = {"dfma": "DFMA", "ffma": "FFMA", "hfma2": "HFMA2", "imad": "IMAD", "dp4a": "DP4A", "dp2a": "DP2A",
          "wgmma": "wgmma", "mma_sync": "mma.sync", "cublas": "cuBLAS", "cublaslt": "cuBLASLt", "fma": "FMA",
          "sparse24": "cuSPARSELt 2:4", "cupy_matmul": "cupy.matmul", "torch_matmul": "torch.matmul",
          "i8out": "INT8 out", "f32acc": "FP32 acc", "f16acc": "FP16 acc", "s32acc": "INT32 acc", "f64acc": "FP64 acc",
          "tn": "TN",
          "nn": "NN", "tensor_op": "tensor op", "promoted_acc": "promoted acc"}


def instruction_name(metric: str, detail: bool = False) -> str:
    """The instruction or library a metric names: fp16.cuda_core.hfma2 -> HFMA2; with ``detail`` the variant
    too: int8.tensor_core.cublaslt.i8out -> cuBLASLt INT8 out, int8.cublas.nn -> cuBLAS NN."""
    parts = [x for x in metric.split(".")[1:] if x not in UNIT_NAMES and not re.fullmatch(r"n\d+", x)]
    if not parts:
        return metric
    words = [_NAMES.get(x, x) for x in parts]
    return " ".join(words) if detail else words[0]


_LEGACY = [
    # profiles written before these texts were rewritten carry references to internal notes
    (re.compile(r"\s*\(\d{3}: ([^)]*)\)"), r"; \1"),
    (re.compile(r"seeds \d{3}:?\s*"), ""),
]


def plain(text: str) -> str:
    """User text without references to internal notes (older profiles still hold some)."""
    for pat, rep in _LEGACY:
        text = pat.sub(rep, text)
    return text


@dataclass
class Item:
    """One line of a list section: its text, and what it is about (a metric or probe, shown small)."""

    text: str
    about: str = ""
    count: int = 1
    members: list[str] = field(default_factory=list)


_RIDGE = re.compile(r"roofline\.(\w+)\.ridge$")
_BASIS = re.compile(r"theoretical(?: [\w-]+)*(?: ridge \([^)]*\))? [\d.]+ \w+/B \((.*)\)\s*$")


def ridge_text(p: Profile, f: dict[str, Any]) -> str | None:
    """A roofline sweep's ridge finding told again from its numbers, its precision named beside the profile's
    CUDA-core peak and ridge for it (profiles written before 2026-11-27 say "measured ridge 15.5 FLOP/B (roof
    66.4 TFLOP/s)" of the FP16 sweep, no precision, beside a table whose FP16 CUDA-core peak is 132); None for
    any other finding."""
    from hwprobe.curves import ridge_note

    m, prm = _RIDGE.match(str(f.get("metric") or "")), f.get("params") or {}
    if not m or not prm.get("roof") or not prm.get("bandwidth_Bps") or not f.get("value"):
        return None
    prec = m.group(1)
    basis = _BASIS.search(str(f.get("text") or ""))
    pk, bw = p.peak(prec, ExecUnit.CUDA_CORE), p.bandwidth("dram")
    return ridge_note(prec, float(f["value"]), float(prm["roof"]), float(prm["bandwidth_Bps"]),
                      str(f.get("unit") or per_byte(prec)), prm.get("theoretical_ridge"),
                      basis.group(1) if basis else "at max clocks", pk.value if pk else None,
                      pk.value / bw if pk and bw else None)


def finding_items(p: Profile) -> list[Item]:
    """Findings from the probes, each once, led by its value where the text does not already say it; the
    prediction's calibration curves (their own section since profile schema v3) as one summary line first."""
    summary = p.calibration.summary()
    out: list[Item] = [Item(summary, "calibration")] if summary else []
    seen: set[str] = set()
    for f in p.findings:
        text = plain(ridge_text(p, f) or str(f.get("text") or "")).strip()
        if not text or f.get("probe") == "specs" or text in seen:
            continue
        seen.add(text)
        out.append(Item(text, str(f.get("metric") or "")))
    return out


def datasheet_items(p: Profile) -> list[Item]:
    """Where the device and theory disagree with the datasheet entry (the run adds these as findings)."""
    return [Item(plain(str(f["text"]))) for f in p.findings if f.get("probe") == "specs" and f.get("text")]


def skip_items(p: Profile) -> list[Item]:
    """Skips grouped by probe and reason: one reason for several measurements is one line, and reasons that
    differ only in a size are one line that names the other sizes."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    refused = [{"probe": e.get("probe"), "metric": e.get("metric"), "reason": e.get("error")} for e in p.errors
               if is_library_refusal(str(e.get("error", "")))]       # filed as errors by an older hwprobe
    for s in [*p.skipped, *refused]:
        reason = plain(str(s.get("reason", "")))
        key = (str(s.get("probe", "")), re.sub(r"\d+", "#", reason))
        groups.setdefault(key, []).append((reason, str(s.get("metric") or "")))
    out = []
    for (probe, _), members in groups.items():
        first = members[0][0]
        others = []
        for reason, _metric in members[1:]:
            pairs = zip(re.findall(r"\d+", first), re.findall(r"\d+", reason), strict=False)
            diff = next((b for a, b in pairs if a != b), None)
            if diff and diff not in others:
                others.append(diff)
        text = first + (f"; the same at {', '.join(others)}" if others else "")
        metrics = list(dict.fromkeys(m for _, m in members if m))
        out.append(Item(text, probe, count=max(1, len(metrics)) if not others else 1, members=metrics))
    return out


def invalid_items(p: Profile) -> list[Item]:
    out = []
    for i in p.invalid:
        why = "; ".join(plain(str(f)) for f in i.get("flags") or []) or str(i.get("reason") or "no reason recorded")
        out.append(Item(f"{si(i.get('value'), i.get('unit') or '')}: {why}", str(i.get("metric", ""))))
    return out


def error_items(p: Profile) -> list[Item]:
    return [Item(plain(str(e.get("error", ""))), str(e.get("probe", ""))) for e in p.errors
            if not is_library_refusal(str(e.get("error", "")))]


def item_line(it: Item) -> str:
    """An item as one plain line (terminal and Markdown)."""
    about = it.about
    if it.count > 1:
        about = f"{about}, {it.count} measurements" if about else f"{it.count} measurements"
    return f"{about}: {it.text}" if about else it.text


OVER_BUDGET = 1.25        # a run this much longer than its suite's budget says so


def budget_note(env: dict[str, Any]) -> str | None:
    """"took 46.9 s, 56% over the suite's budget of 30 s" where a run took notably (25%) longer than its suite's
    budget_s; None otherwise, or where the run recorded no budget or wall time."""
    wall, budget = env.get("wall_s"), env.get("budget_s")
    if not (wall and budget) or wall <= OVER_BUDGET * budget:
        return None
    return f"took {wall:.1f} s, {wall / budget - 1:.0%} over the suite's budget of {budget:g} s"


def provenance(env: dict[str, Any], p: Profile) -> list[tuple[str, str]]:
    """Versions, command and time of a run, as (what, value) rows."""
    rows: list[tuple[str, str]] = [("hwprobe", str(p.hwprobe_version or env.get("hwprobe_version") or "-")),
                                   ("profile schema", str(p.schema_version))]
    argv = env.get("argv")
    if argv:
        args = list(argv)
        if args and (args[0].endswith("__main__.py") or args[0].endswith("hwprobe")):
            args[0] = "hwprobe"
        rows.append(("command", " ".join(str(a) for a in args)))
    for key, name in (("suite", "suite"), ("started_utc", "started (UTC)")):
        if env.get(key):
            rows.append((name, str(env[key])))
    rows.append(("profile written (UTC)", p.created_utc or "-"))
    secs = env.get("probe_seconds") or {}
    if secs:
        settle = sum((env.get("settle_seconds") or {}).values())
        rows.append(("probe wall time", f"{sum(secs.values()):.1f} s over {len(secs)} probes"
                                        + (f", {settle:.1f} s settling before them" if settle else "")))
    over = budget_note(env)
    if over:
        rows.append(("suite budget", over))
    cpu_max = env.get("cpu_max_mhz") or {}
    if cpu_max.get("measured"):
        rows.append(("CPU max clock", f"{cpu_max['measured']:.0f} MHz, timed around a window (discovery found "
                                      f"{cpu_max.get('discovered') or 0:.0f} MHz: not the max the cores reach)"))
    if p.partial:
        rows.append(("status", "PARTIAL: the run was interrupted; this holds what finished"))
    for key, name in (("host", "host"), ("platform", "platform"), ("python", "Python")):
        if env.get(key):
            rows.append((name, str(env[key])))
    cpu = env.get("host_cpu") or {}
    if cpu.get("model"):
        rows.append(("host CPU", f"{cpu['model']}, {cpu.get('usable')} of {cpu.get('processors')} processors usable"))
    cuda = env.get("cuda") or {}
    if cuda.get("runtime"):
        rows.append(("CUDA runtime / driver", f"{_cuda_ver(cuda.get('runtime'))} / {_cuda_ver(cuda.get('driver'))}"))
    if cuda.get("cublas"):
        c = int(cuda["cublas"])
        rows.append(("cuBLAS", f"{c // 10000}.{c // 100 % 100}.{c % 100}"))
    libs = env.get("libraries") or {}
    if libs:
        rows.append(("libraries", ", ".join(f"{k} {v}" for k, v in libs.items())))
    return rows


def _cuda_ver(v: Any) -> str:
    try:
        n = int(v)
    except (TypeError, ValueError):
        return "-"
    return f"{n // 1000}.{n % 1000 // 10}"


def device_rows(device: dict[str, Any]) -> list[tuple[str, str]]:
    """The device as (what, value) rows: the facts theory and the plots use."""
    d = device
    rows: list[tuple[str, str]] = [("device", str(d.get("name") or d.get("model") or "-"))]
    if d.get("arch"):
        rows.append(("architecture", f"{d['arch']}, {d.get('sms', '?')} SMs"))
    if d.get("cores"):
        rows.append(("cores / threads", f"{d['cores']} / {d.get('threads', '?')}"))
    if d.get("simd"):
        rows.append(("SIMD", str(d["simd"])))
    clk = d.get("sm_clock_max_mhz") or d.get("max_mhz")
    if clk:
        rows.append(("max clock", f"{clk:.0f} MHz"))
    if d.get("mem_bytes"):
        rows.append(("memory", si(d["mem_bytes"], "B")))
    if d.get("mem_clock_mhz") and d.get("bus_width_bits"):
        rows.append(("memory bus", f"{d['mem_clock_mhz']:.0f} MHz x {d['bus_width_bits']}-bit"))
    caches = [f"{name} {si(d[key], 'B')}" for key, name in (("l1d_bytes", "L1d"), ("l2_bytes", "L2"),
                                                             ("l3_bytes", "L3")) if d.get(key)]
    if caches:
        rows.append(("caches", ", ".join(caches)))
    if d.get("l1_smem_bytes_per_sm"):
        rows.append(("L1/shared per SM", si(d["l1_smem_bytes_per_sm"], "B")))
    nv = d.get("nvml") or {}
    if nv.get("power_limit_w"):
        rows.append(("power limit", f"{nv['power_limit_w']:.0f} W"))
    if nv.get("pcie_gen_max"):
        rows.append(("PCIe", f"Gen{nv['pcie_gen_max']} x{nv.get('pcie_width_max', '?')}"))
    if d.get("driver_version"):
        rows.append(("driver", str(d["driver_version"])))
    return rows
