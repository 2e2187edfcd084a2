"""Per-layer (or per-kernel) times from the files profilers write, told apart by their content:

- TensorRT ``trtexec --exportProfile`` JSON: ``[{"count": N}, {"name", "timeMs", "averageMs", "medianMs"?,
  "percentage"}, ...]``; the time used is medianMs per inference where every record has it, else averageMs
  (older builds write no medianMs, and the analysis says so);
- TensorRT ``--exportLayerInfo`` JSON ``{"Layers": [...], "Bindings": [...]}``: each layer's type, tensor shapes
  and tactic (kernel) name, with ``--profilingVerbosity=detailed``; no times, it annotates the others;
- the TensorRT layer-profiler table the seeds print (004): ``name  type  time-ms  pct%``;
- PyTorch profiler ``key_averages().table()`` text (device total per call), or its chrome trace JSON
  (``traceEvents``: kernels, and ``gpu_user_annotation`` ranges with the kernels they hold);
- Nsight Systems ``cuda_gpu_kern_sum`` CSV (``nsys stats --report cuda_gpu_kern_sum --format csv``): per kernel,
  average time per instance; quoted names may hold commas.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from hwprobe.errors import InputError


@dataclass
class Timing:
    name: str
    time_s: float | None              # per call (per inference for TensorRT)
    total_s: float | None = None
    count: int | None = None
    percent: float | None = None
    layer_type: str | None = None
    kernel: str | None = None         # tactic or kernel name, for the classifier
    kernels: list[str] = field(default_factory=list)
    is_kernel: bool = False           # the record is a kernel (nsys, chrome trace), not a layer


@dataclass
class Times:
    format: str
    per: str                          # what one time is
    records: list[Timing]
    notes: list[str] = field(default_factory=list)
    nested: bool = False              # rows overlap (a module's range holds its ops): times don't add up
    kernel_records: list[Timing] = field(default_factory=list)   # every kernel, merged by name (chrome traces)


def _num(where: str, field_name: str, raw, allow_empty: bool = False) -> float | None:
    if raw is None or (isinstance(raw, str) and raw.strip() in ("", "-")):
        if allow_empty:
            return None
        raise InputError(f"{where} field {field_name}: missing")
    try:
        v = float(str(raw).replace(",", "").strip().rstrip("%"))
    except ValueError:
        raise InputError(f"{where} field {field_name}: {raw!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise InputError(f"{where} field {field_name}: {raw!r} is not a finite, non-negative number")
    return v


# ------------------------------------------------------------------------------------------------ TensorRT
def trt_profile(data: list, fname: str) -> Times:
    """Per-inference time: medianMs where the build writes it (robust to outliers), else averageMs."""
    median = all("medianMs" in r for r in data[1:] if isinstance(r, dict))
    key = "medianMs" if median else "averageMs"
    recs = []
    for i, r in enumerate(data[1:], start=2):
        where = f"{fname} record {i}"
        if not isinstance(r, dict) or "name" not in r:
            raise InputError(f"{where}: not a {{\"name\", \"averageMs\", ...}} record")
        t = r.get(key)
        if t is None and r.get("timeMs") is not None and data[0].get("count"):
            t = float(r["timeMs"]) / float(data[0]["count"])
        ms = _num(where, key, t)
        total_ms = _num(where, "timeMs", r.get("timeMs"), True)
        pct = _num(where, "percentage", r.get("percentage"), True)
        recs.append(Timing(str(r["name"]), ms / 1e3, total_ms / 1e3 if total_ms is not None else None,
                           int(data[0].get("count") or 0) or None, pct))
    notes = [] if median else ["no medianMs in this profile (older TensorRT): averages used"]
    return Times("trtexec --exportProfile", f"per inference ({key})", recs, notes)


def trt_layer_info(data: dict, fname: str) -> Times:
    layers = data.get("Layers")
    if not isinstance(layers, list):
        raise InputError(f"{fname}: \"Layers\" is not a list")
    recs, notes = [], []
    for i, lay in enumerate(layers, start=1):
        if isinstance(lay, str):
            recs.append(Timing(lay, None))
            continue
        if not isinstance(lay, dict) or "Name" not in lay:
            raise InputError(f"{fname} layer {i}: no \"Name\"")
        t = Timing(str(lay["Name"]), None, layer_type=lay.get("LayerType"), kernel=lay.get("TacticName"))
        t.kernels = [x for x in [lay.get("TacticName")] if x]
        recs.append(t)
    if layers and all(isinstance(x, str) for x in layers):
        notes.append("layer info without details: rebuild with --profilingVerbosity=detailed for types and tactics")
    return Times("trtexec --exportLayerInfo", "no times (types and tactics)", recs, notes)


_TRT_ROW = re.compile(r"^(?P<name>\S.*?)\s{2,}(?P<type>\S.*?)\s+(?P<ms>\d+(?:\.\d+)?)\s+(?P<pct>\d+(?:\.\d+)?)%\s*$")


def trt_table(lines: list[str], fname: str) -> Times:
    start = next(i for i, x in enumerate(lines) if "Layer Name" in x and "Time" in x)
    recs = []
    for i in range(start + 1, len(lines)):
        line = lines[i].rstrip()
        s = line.strip()
        if not s or set(s) <= set("-=") or s == "...":
            continue
        if s.startswith(("Total", "Top", "🔥")) or s.lower().startswith("total gpu"):
            break
        m = _TRT_ROW.match(s)
        if m is None:
            parts = s.rsplit(None, 3)
            if len(parts) != 4 or not parts[3].endswith("%"):
                raise InputError(f"{fname} line {i + 1}: not a 'name type time(ms) pct%' row: {s[:60]!r}")
            name, typ, ms, pct = parts
        else:
            name, typ, ms, pct = m.group("name", "type", "ms", "pct")
        if name.strip().lower() in ("total_time_sum", "total"):
            continue
        where = f"{fname} line {i + 1}"
        recs.append(Timing(name.strip(), _num(where, "Time (ms)", ms) / 1e3,
                           percent=_num(where, "% of Total", pct), layer_type=typ.strip()))
    return Times("TensorRT layer-profiler table", "per inference (ms)", recs)


# ------------------------------------------------------------------------------------------------ PyTorch
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _duration(where: str, col: str, raw: str) -> float | None:
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)\s*", raw)
    if not m:
        if raw.strip() in ("", "-"):
            return None
        raise InputError(f"{where} field {col}: {raw.strip()!r} is not a time (e.g. 12.3ms)")
    v = float(m.group(1)) * _UNITS[m.group(2)]
    return v if v >= 0 else None       # the profiler prints negative self times for overlapping ranges


def _looks_like_kernel(name: str) -> bool:
    from hwprobe.analysis.classify import classify

    return classify(name).unit != "unknown"


# a cell: a memory figure with its unit ("16.12 Mb", "-112.00 Mb", "0 b", "33.50 KB"), else one token
_CELL = re.compile(r"-?\d+(?:\.\d+)?\s(?:[KMGT]?[Bb])(?![\w])|\S+")


def torch_table(lines: list[str], fname: str) -> Times:
    dash = [i for i, x in enumerate(lines) if re.fullmatch(r"\s*-{3,}(\s+-{3,})+\s*", x)]
    if len(dash) < 2:
        raise InputError(f"{fname}: a PyTorch key_averages table needs its dashed header lines")
    spans = [m.span() for m in re.finditer(r"-+", lines[dash[0]])]
    # Headers may overflow their dashes by a character ("CUDA time avg" over 12): split on 2+ spaces instead.
    header = re.split(r"\s{2,}", lines[dash[0] + 1].strip())
    if len(header) != len(spans):
        raise InputError(f"{fname} line {dash[0] + 2}: {len(header)} column names for {len(spans)} columns")
    col = {h.lower(): j for j, h in enumerate(header)}
    dev = next((c for c in ("cuda total", "device total", "xpu total", "self cuda", "self device", "self xpu")
                if c in col), None)
    use = dev or ("cpu total" if "cpu total" in col else None)
    if use is None or "name" not in col:
        raise InputError(f"{fname}: key_averages table without Name and a time column; columns: {', '.join(header)}")
    calls = col.get("# of calls")
    pct = next((col[c] for c in ("self cuda %", "self device %", "self cpu %") if c in col), None)
    end = dash[2] if len(dash) > 2 else len(lines)
    recs = []
    for i in range(dash[1] + 1, end):
        if not lines[i].strip():
            continue
        where = f"{fname} line {i + 1}"
        # the name fills its column (truncated with "..."); values are single tokens ("33.50 KB" included)
        rest = re.findall(_CELL, lines[i][spans[0][1]:])
        cells = [lines[i][: spans[0][1]]] + rest
        if len(cells) != len(header):
            raise InputError(f"{where}: {len(cells)} fields, the header has {len(header)}")
        total = _duration(where, header[col[use]], cells[col[use]])
        n = int(_num(where, "# of Calls", cells[calls])) if calls is not None else 1
        if not total or n == 0:                 # no time on the device (runtime calls, CPU-side ops)
            continue
        name = cells[col["name"]].strip()
        kernel = name if not name.startswith(("aten::", "cuda", "Profiler")) and _looks_like_kernel(name) else None
        recs.append(Timing(name, total / n, total, n,
                           _num(where, header[pct], cells[pct], True) if pct is not None else None,
                           kernel=kernel, is_kernel=kernel is not None))
    per = "per call (device total / calls)" if dev else "per call (CPU total / calls: no device columns)"
    return Times("PyTorch key_averages table", per, recs, nested=True)


def _annotate(ranges: list[dict], kernels: list[dict]) -> tuple[dict[int, list[tuple[float, str]]], set[int]]:
    """Kernels lying inside each GPU annotation range (same pid), by index into ``ranges``; and the indices of
    the kernels some range holds."""
    import bisect

    by_pid: dict = {}
    for i, k in enumerate(kernels):
        by_pid.setdefault(k.get("pid"), []).append((float(k["ts"]), float(k["dur"]), str(k["name"]), i))
    for v in by_pid.values():
        v.sort()
    out: dict[int, list[tuple[float, str]]] = {}
    covered: set[int] = set()
    for i, r in enumerate(ranges):
        ks = by_pid.get(r.get("pid"), [])
        t0, t1 = float(r["ts"]), float(r["ts"]) + float(r["dur"])
        j = bisect.bisect_left(ks, (t0, -1.0, "", -1))
        while j < len(ks) and ks[j][0] < t1:
            out.setdefault(i, []).append((ks[j][1], ks[j][2]))
            covered.add(ks[j][3])
            j += 1
    return out, covered


def _cpu_ranges(xs: list[dict], kernels: list[dict], loose: list[int]) -> dict[int, int]:
    """Kernels no GPU range holds, attributed to the innermost CPU ``record_function`` range (user_annotation) that
    enclosed their launch: the kernel's correlation id names its cudaLaunchKernel event on a CPU thread. Returns
    kernel index -> index into ``xs`` of that range. One sweep per thread over its ranges and launches in time
    order, the open ranges on a stack (record_function ranges nest on a thread: the top one holding the launch
    is the innermost)."""
    cat = lambda e: str(e.get("cat", "")).lower()  # noqa: E731
    launches = {}
    for e in xs:
        corr = (e.get("args") or {}).get("correlation")
        if cat(e) == "cuda_runtime" and corr is not None:
            launches[corr] = (e.get("pid"), e.get("tid"), float(e["ts"]))
    events: dict = {}               # thread -> [(time, 0 = range opens / 1 = a launch, ...)]
    for i, e in enumerate(xs):
        if cat(e) == "user_annotation":
            ts, dur = float(e["ts"]), float(e["dur"])
            events.setdefault((e.get("pid"), e.get("tid")), []).append((ts, 0, -dur, -i, ts + dur))
    for ki in loose:
        launch = launches.get((kernels[ki].get("args") or {}).get("correlation"))
        if launch is not None and launch[:2] in events:
            events[launch[:2]].append((launch[2], 1, 0.0, ki, 0.0))
    out: dict[int, int] = {}
    for evs in events.values():
        evs.sort()                  # at one time: ranges open first, the longer (then the lower index) below
        stack: list[tuple[float, int]] = []          # (end, range index)
        for t, what, _, idx, end in evs:
            if what == 0:
                stack.append((end, -idx))
                continue
            while stack and stack[-1][0] < t:
                stack.pop()
            if stack:
                out[idx] = stack[-1][1]
    return out


def _cpu_range_records(xs: list[dict], kernels: list[dict], owner: dict[int, int], fname: str) -> list[Timing]:
    """One record per CPU range name: the GPU time of the kernels its launches made (summed), per occurrence."""
    agg: dict[str, Timing] = {}
    seen: dict[str, set] = {}
    for ki, ri in owner.items():
        name = str(xs[ri]["name"])
        t = agg.setdefault(name, Timing(name, 0.0, 0.0, 0))
        t.total_s += _num(f"{fname} kernel {kernels[ki]['name']!r}", "dur", kernels[ki]["dur"]) * 1e-6
        seen.setdefault(name, set()).add(ri)
        if kernels[ki]["name"] not in t.kernels:
            t.kernels.append(str(kernels[ki]["name"]))
    for name, t in agg.items():
        t.count = len(seen[name])
        t.time_s = t.total_s / t.count
        t.kernel = t.kernels[0] if t.kernels else None
    return list(agg.values())


def chrome_trace(data, fname: str) -> Times:
    """GPU annotation ranges (record_function) with the kernels inside them; kernels no GPU range holds go to the
    CPU range that launched them (by correlation id); the rest apart."""
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise InputError(f"{fname}: traceEvents is not a list")
    xs = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e and "name" in e]
    cat = lambda e: str(e.get("cat", "")).lower()  # noqa: E731
    kernels = [e for e in xs if cat(e) in ("kernel", "gpu_memcpy", "gpu_memset")]
    ranges = [e for e in xs if cat(e) == "gpu_user_annotation"]
    inside, covered = _annotate(ranges, kernels)
    by_cpu = _cpu_ranges(xs, kernels, [i for i in range(len(kernels)) if i not in covered])
    agg: dict[tuple[str, bool], Timing] = {}
    loose = [k for i, k in enumerate(kernels) if i not in covered and i not in by_cpu]
    for i, e in enumerate(ranges + loose):
        is_k = i >= len(ranges)
        key = (str(e["name"]), is_k)
        t = agg.setdefault(key, Timing(key[0], 0.0, 0.0, 0, is_kernel=is_k, kernel=key[0] if is_k else None))
        t.total_s += _num(f"{fname} event {e['name']!r}", "dur", e["dur"]) * 1e-6
        t.count += 1
        if not is_k:
            for _dur, kname in sorted(inside.get(i, []), reverse=True):
                if kname not in t.kernels:
                    t.kernels.append(kname)
            t.kernel = t.kernels[0] if t.kernels else None
    cpu = _cpu_range_records(xs, kernels, by_cpu, fname)
    if not agg and not cpu:
        raise InputError(f"{fname}: chrome trace without GPU kernel or gpu_user_annotation events")
    for t in agg.values():
        t.time_s = t.total_s / t.count
    notes = [] if ranges or cpu else ["no record_function ranges (GPU or CPU): kernels only"]
    if cpu:
        notes.append(f"{len(by_cpu)} kernels attributed to the CPU record_function range that launched them "
                     "(correlation ids); a range's time is its kernels' GPU time")
    return Times("PyTorch chrome trace", "per call (mean GPU range or kernel duration)", list(agg.values()) + cpu,
                 notes, kernel_records=_kernel_records(kernels, fname))


def _kernel_records(kernels: list[dict], fname: str) -> list[Timing]:
    agg: dict[str, Timing] = {}
    for k in kernels:
        t = agg.setdefault(str(k["name"]), Timing(str(k["name"]), 0.0, 0.0, 0, is_kernel=True, kernel=str(k["name"])))
        t.total_s += _num(f"{fname} kernel {k['name']!r}", "dur", k["dur"]) * 1e-6
        t.count += 1
    for t in agg.values():
        t.time_s = t.total_s / t.count
    return list(agg.values())


# ------------------------------------------------------------------------------------------------ Nsight Systems
def _col(header: list[str], *keys: str) -> int | None:
    low = [h.strip().lower().replace("time(%)", "time (%)") for h in header]
    for k in keys:
        for j, h in enumerate(low):
            if h == k or h.startswith(k + " (") or h.replace(" ", "") == k.replace(" ", ""):
                return j
    return None


def _scale(h: str) -> float:
    m = re.search(r"\((ns|us|ms|s)\)", h.lower())
    return _UNITS[m.group(1)] if m else 1e-9


def nsys_kern_sum(lines: list[str], fname: str) -> Times:
    start = next((i for i, x in enumerate(lines) if "Name" in x and "Time" in x and "," in x), None)
    if start is None:
        raise InputError(f"{fname}: no nsys CSV header (Time, ..., Name)")
    rows = list(csv.reader(lines[start:]))
    return _kern_rows(rows[0], rows[1:], fname, "Nsight Systems cuda_gpu_kern_sum", start + 2)


def _kern_rows(header: list[str], rows: list[list[str]], fname: str, fmt: str, first: int = 1) -> Times:
    name = _col(header, "name")
    total = _col(header, "total time")
    avg = _col(header, "avg", "average", "avg (ns)")
    inst = _col(header, "instances", "calls", "count")
    pct = _col(header, "time (%)", "time(%)")
    if name is None or (avg is None and total is None):
        raise InputError(f"{fname}: an nsys kernel summary needs Name and Avg/Total Time columns; got "
                         f"{', '.join(header)}")
    recs = []
    for i, r in enumerate(rows, start=first):
        if not r or not any(c.strip() for c in r):
            continue
        if len(r) != len(header):
            raise InputError(f"{fname} row {i}: {len(r)} fields, the header has {len(header)} (unquoted comma?)")
        where = f"{fname} row {i}"
        n = int(_num(where, header[inst], r[inst])) if inst is not None else None
        tot = _num(where, header[total], r[total]) * _scale(header[total]) if total is not None else None
        per = _num(where, header[avg], r[avg]) * _scale(header[avg]) if avg is not None else (tot / n if n else tot)
        recs.append(Timing(r[name], per, tot, n, _num(where, header[pct], r[pct], True) if pct is not None else None,
                           kernel=r[name], is_kernel=True))
    notes = ["kernel names cut by nsys (\u2026): rerun nsys stats with --format csv for full names"] if any(
        r.name.endswith(("\u2026", "...")) for r in recs) else []
    return Times(fmt, "per kernel instance (Avg)", recs, notes)


_SECTION = re.compile(r"Executing '(\w+)' stats report|\*\* .*\((\w+)\):|^Generating (.+?)\.\.\.$")
_DASHES = re.compile(r"^\s*-{3,}(?:\s+-{3,})+\s*$")


def _kernel_section(lines: list[str]) -> list[str] | None:
    """The lines of the kernel summary in an nsys log (``--stats=true`` output or ``nsys stats``): the section
    named cuda_gpu_kern_sum (gpukernsum in older builds, "CUDA Kernel Statistics" in 2020-21 builds)."""
    marks = [(i, next(g for g in m.groups() if g)) for i, x in enumerate(lines) if (m := _SECTION.search(x.strip()))]
    if not marks:
        return lines
    for j, (i, name) in enumerate(marks):
        if re.search(r"kern_?sum|Kernel Statistics|GPU Kernel Summary", name, re.I):
            end = marks[j + 1][0] if j + 1 < len(marks) else len(lines)
            return lines[i:end]
    return None


def nsys_text(lines: list[str], fname: str) -> Times:
    """The fixed-width kernel summary nsys prints (thousands separators; the name, last, may hold spaces and be
    cut with an ellipsis): columns from the dashed rule under the header."""
    sec = _kernel_section(lines)
    if sec is None:
        raise InputError(f"{fname}: an nsys log without a kernel summary (cuda_gpu_kern_sum): profile with "
                         "--trace=cuda and --stats=true")
    rule = next((i for i, x in enumerate(sec) if _DASHES.match(x) and i > 0), None)
    if rule is None:
        raise InputError(f"{fname}: the nsys kernel summary has no table (SKIPPED or empty section)")
    spans = [m.span() for m in re.finditer(r"-+", sec[rule])]
    header = re.split(r"\s{2,}", sec[rule - 1].strip())
    if len(header) != len(spans):
        raise InputError(f"{fname}: nsys header {sec[rule - 1].strip()[:60]!r}: {len(header)} names, "
                         f"{len(spans)} columns")
    rows = []
    for line in sec[rule + 1:]:
        if not line.strip():
            break
        cells = line[: spans[-1][0]].split()
        if len(cells) != len(spans) - 1:
            raise InputError(f"{fname}: nsys row {line.strip()[:60]!r}: {len(cells)} values for "
                             f"{len(spans) - 1} numeric columns")
        rows.append(cells + [line[spans[-1][0]:].strip()])
    return _kern_rows([h if "(" in h or not h.lower().startswith(("total", "average", "minimum", "maximum"))
                       else f"{h} (ns)" for h in header], rows, fname, "Nsight Systems kernel summary (text)")


# ------------------------------------------------------------------------------------------------ detection
MAX_BYTES = 512 * 2**20          # a times file (decompressed) larger than this is refused, not read
GZIP_MAGIC = b"\x1f\x8b"


def _read(p: Path) -> str:
    """The file's text; gzip (``.pt.trace.json.gz``) is decompressed with a cap, so a decompression bomb is
    refused in one line instead of filling memory."""
    import gzip
    import zlib

    try:
        with open(p, "rb") as f:
            head = f.read(2)
            f.seek(0)
            if head == GZIP_MAGIC:
                with gzip.GzipFile(fileobj=f) as g:
                    raw = g.read(MAX_BYTES + 1)
            else:
                raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"times file {str(p)!r} does not exist") from None
    except IsADirectoryError:
        raise InputError(f"times file {str(p)!r} is a directory") from None
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"cannot read times file {str(p)!r}: {getattr(e, 'strerror', None) or e}") from None
    if len(raw) > MAX_BYTES:
        how = "once decompressed " if head == GZIP_MAGIC else ""
        raise InputError(f"times file {p.name} is larger than {MAX_BYTES >> 20} MiB {how}(refused: a trace of a "
                         "few iterations is enough)")
    return raw.decode("utf-8-sig", errors="replace")


def _json(data, fname: str) -> Times:
    if isinstance(data, list) and data and isinstance(data[0], dict) and "count" in data[0]:
        return trt_profile(data, fname)
    if isinstance(data, dict) and "Layers" in data:
        return trt_layer_info(data, fname)
    if (isinstance(data, dict) and "traceEvents" in data) or (
            isinstance(data, list) and data and isinstance(data[0], dict) and "ph" in data[0]):
        return chrome_trace(data, fname)
    raise InputError(f"times file {fname}: JSON of an unknown format (expected a trtexec --exportProfile list "
                     "starting with {\"count\"}, --exportLayerInfo {\"Layers\"}, or a chrome trace)")


def _text(lines: list[str], fname: str) -> Times:
    head = "\n".join(lines[:40])
    if "Layer Name" in head and "Time" in head:
        return trt_table(lines, fname)
    if re.search(r"^\s*-{3,}(\s+-{3,})+\s*$", head, re.M) and re.search(r"\bName\b", head) and (
            "Self CPU" in head or "CUDA total" in head or "# of Calls" in head):
        return torch_table(lines, fname)
    if any("Total Time" in x and "Name" in x and "," in x for x in lines[:40]):
        return nsys_kern_sum(lines, fname)
    body = "\n".join(lines)
    if re.search(r"stats report|CUDA Kernel Statistics|Total Time", body) and re.search(r"Instances", body):
        return nsys_text(lines, fname)
    raise InputError(f"times file {fname}: unknown format (trtexec --exportProfile/--exportLayerInfo JSON, the "
                     "TensorRT layer-profiler table, a PyTorch key_averages table or chrome trace (.json or "
                     ".json.gz), an Nsight Systems cuda_gpu_kern_sum CSV or table, or an nsys --stats=true log)")


def parse(path: str | Path) -> Times:
    """Times from ``path``, its format told by its content. Every failure is an InputError (one line)."""
    p = Path(path)
    fname = p.name
    text = _read(p)
    s = text.lstrip()
    try:
        if s.startswith(("{", "[")):
            try:
                data = json.loads(s)
            except json.JSONDecodeError as e:
                if s.startswith("{") or re.match(r"\[\s*[{\[]", s):
                    raise InputError(f"times file {fname} is not valid JSON: {e.msg} at line {e.lineno}") from None
                return _text(text.splitlines(), fname)      # "[1/8] [====" : an nsys log, not JSON
            return _json(data, fname)
        return _text(text.splitlines(), fname)
    except InputError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, StopIteration, RecursionError) as e:
        raise InputError(f"times file {fname}: not a well-formed file of the format it looks like "
                         f"({type(e).__name__}: {str(e)[:80]})") from None
