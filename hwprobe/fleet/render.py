"""Text and JUnit output of validations and fleet comparisons (rich tables for people, XML for CI)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hwprobe.fleet.validate import Check, Validation
from hwprobe.units import si
from hwprobe.vocab import SPARSE_SUFFIX, ExecUnit, Path

_STYLE = {"pass": "green", "fail": "bold red", "not measured": "yellow", "no reference": "dim"}


def figure(value: float | None, unit: str, compared: str = "rate") -> str:
    if value is None:
        return "-"
    if compared == "per clock":
        return f"{value:,.1f} {unit.removesuffix('/s')}/clk"
    return si(value, unit)


def check_line(c: Check) -> str:
    """One sentence per check: the verdict, both figures, the gap against the tolerance."""
    if c.status == "not measured" or c.measured is None:
        return (f"{c.key}: {'fail: ' if c.status == 'fail' else ''}not measured in this run (reference "
                f"{figure(c.expected, c.unit)})" + (f"; {c.notes[-1]}" if c.status == "fail" and c.notes else ""))
    if c.status == "no reference":
        return f"{c.key}: {figure(c.measured, c.unit)}, no reference figure"
    exp, meas = c.expected, c.measured
    if c.compared == "per clock" and c.ratio is not None:
        return f"{c.key}: {c.status} on the per-clock figure ({c.ratio - 1:+.1%}, tolerance -{c.tolerance:.0%})"
    return (f"{c.key}: {c.status}: measured {figure(meas, c.unit)} vs expected {figure(exp, c.unit)} "
            f"({(c.ratio or 0) - 1:+.1%}, tolerance -{c.tolerance:.0%})")


def _compared(c: Check) -> str:
    """What the verdict compared: the rate (its share is the "rate %" column), or the per-clock figure with its
    own share, so a rate share and a per-clock share never sit in one column (issue 23)."""
    if c.status not in ("pass", "fail"):
        return ""
    if c.compared == "per clock" and c.ratio is not None:
        return f"per clock {c.ratio:.1%}"
    return c.compared


def _table(title: str, caption: str | None = None):
    from hwprobe.report.fit import light_table

    return light_table(title, caption)


def render_validation(v: Validation, console, wide: bool = False) -> None:
    from hwprobe.report.fit import print_table

    ref_kind = "measured reference" if v.ref.measured else "spec-derived expectation (not measured)"
    console.print(f"run:       {v.run.path}  [{v.run.device_name}"
                  + (f", mode {v.run.power_mode}" if v.run.power_mode else "") + "]")
    console.print(f"reference: {v.ref.path}  [{v.ref.device_name}"
                  + (f", mode {v.ref.power_mode}" if v.ref.power_mode else "") + f"; {ref_kind}]")
    failed_keys = {c.key for c in v.failed}          # --require-all makes an unmeasured ceiling a failure
    t = _table(f"validate (pass: measured >= expected x (1 - tolerance); {v.tolerances.source})")
    for col, just in (("ceiling", "left"), ("measured", "right"), ("expected", "right"), ("rate %", "right"),
                      ("tol", "right"), ("result", "left"), ("compared", "left")):
        t.add_column(col, justify=just)
    for c in v.checks:
        if c.status in ("no reference", "not measured") and not (c.status == "not measured" and c.key in failed_keys):
            continue
        t.add_row(c.key, figure(c.measured, c.unit), figure(c.expected, c.unit),
                  f"{c.rate_ratio:.1%}" if c.rate_ratio is not None else "-", f"{c.tolerance:.0%}",
                  f"[{_STYLE[c.status]}]{c.status.upper() if c.status in ('pass', 'fail') else c.status}[/]",
                  _compared(c))
    print_table(console, t, ("compared", "tol", "expected"), wide)
    groups: dict[tuple[str, ...], list[Check]] = {}      # failures that share their causes are told once
    for c in v.failed:
        groups.setdefault(tuple(c.causes), []).append(c)
    for why, checks in groups.items():
        for c in checks:
            console.print(f"[bold red]FAIL[/] {check_line(c)}")
        for cause in why:
            console.print(f"     likely cause{'' if len(checks) == 1 else f' (these {len(checks)})'}: {cause}")
    for c in v.compared:
        for note in c.notes:
            console.print(f"     {c.key}: {note}")
    missing = [c.key for c in v.checks if c.status == "not measured"]
    if missing:
        console.print(f"not measured in this run ({len(missing)}, no verdict): {', '.join(missing[:8])}"
                      + (", ..." if len(missing) > 8 else ""))
    extra = [c.key for c in v.checks if c.status == "no reference"]
    if extra:
        console.print(f"not in the reference ({len(extra)}, no verdict): {', '.join(extra[:8])}"
                      + (", ..." if len(extra) > 8 else ""))
    for note in v.notes:
        console.print(f"note: {note}")
    n_fail, n_ok = len(v.failed), len(v.compared) - len(v.failed)
    verdict = "[bold red]FAILED[/]" if n_fail else "[bold green]PASSED[/]"
    console.print(f"{verdict}: {n_ok} passed, {n_fail} failed, "
                  f"{sum(c.status == 'not measured' for c in v.checks)} not measured")


def junit_xml(v: Validation) -> str:
    """JUnit XML: one testcase per ceiling, a failure with both figures and the likely causes."""
    suite = ET.Element("testsuite", name="hwprobe.validate", tests=str(len(v.checks)), failures=str(len(v.failed)),
                       errors="0", skipped=str(len(v.checks) - len(v.compared)), time="0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("run", v.run.path), ("reference", v.ref.path), ("reference_measured", str(v.ref.measured)),
                        ("device", v.run.device_name), ("power_mode", v.run.power_mode or ""),
                        ("tolerance", v.tolerances.source)):
        ET.SubElement(props, "property", name=name, value=str(value))
    cls = "hwprobe.validate." + "".join(ch if ch.isalnum() else "_" for ch in v.run.device_name).strip("_")
    for c in v.checks:
        case = ET.SubElement(suite, "testcase", classname=cls, name=c.key, time="0")
        if c.status == "fail":
            fail = ET.SubElement(case, "failure", message=check_line(c), type="BelowReference")
            fail.text = "\n".join([check_line(c), *(f"likely cause: {x}" for x in c.causes), *c.notes])
        elif c.status in ("not measured", "no reference"):
            ET.SubElement(case, "skipped", message=check_line(c))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join([check_line(c), *c.notes])
    root = ET.Element("testsuites", name="hwprobe", tests=suite.get("tests"), failures=suite.get("failures"))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


MAX_ROWS = 40             # a larger fleet prints its groups and outliers, not every run


_SHORT = ((ExecUnit.CUDA_CORE, "cc"), (ExecUnit.TENSOR_CORE, "tc"), (Path.INSTRUCTION, "inst"), (Path.LIBRARY, "lib"),
          (SPARSE_SUFFIX, " 2:4"), (".bandwidth", " B/s"), (".", " "))
LEGEND = "cc = CUDA cores, tc = Tensor Cores, inst = instruction level, lib = library (cuBLAS/cuBLASLt)"


def short(key: str) -> str:
    """fp16.tensor_core.library -> 'fp16 tc lib' (table headers have little room)."""
    for a, b in _SHORT:
        key = key.replace(a, b)
    return key


def _cell(norm: float | None, flagged: bool) -> str:
    if norm is None or norm != norm:
        return "-"
    text = f"{norm:.1%}"
    return f"[bold red]{text}[/]" if flagged else text


def _median(values, unit: str) -> str:
    """A group's median of one ceiling, "-" where none of its runs has that ceiling (a Jetson Nano has no Tensor
    Cores: not "nan FLOP/s")."""
    m = values.median()
    return "-" if m != m else si(m, unit)


def _outlier_figure(o) -> str:
    """The outlier's figure as the table shows it (value / the table's basis), and the group-median share that
    flagged it where that differs: one number never stands for another (issue 23: 107.3% beside a 74.9% cell)."""
    text = f"{short(o.key)} {si(o.value, o.unit)} = {o.normalized:.1%}"
    if o.vs_median is not None and abs(o.vs_median - o.normalized) > 5e-4:
        return text + f" ({o.vs_median:.1%} of its group median)"
    return text


def render_fleet(fleet, console, show_all: bool = False, wide: bool = False) -> None:
    """The fleet table (normalized), the groups' medians and the outliers with their likely causes; at a narrow
    width the rightmost ceiling columns are left out (and named)."""
    from hwprobe.fleet.compare import SHOWN
    from hwprobe.report.fit import print_table

    keys = fleet.keys[:SHOWN]            # the plot's columns too
    flagged = {(o.run, o.key) for o in fleet.outliers}
    console.print(f"{len(fleet.runs)} runs, {len(fleet.keys)} ceilings; values as a fraction of {fleet.basis}")
    if len(fleet.keys) > SHOWN:
        console.print(f"showing {SHOWN} of {len(fleet.keys)} ceilings, as the plot does (--ceilings PATTERN picks, "
                      "--csv has all)")
    if show_all or len(fleet.runs) <= MAX_ROWS:
        t = _table(f"fleet (fraction of {fleet.basis}; red: outlier)", caption=LEGEND)
        t.add_column("run", no_wrap=True)
        t.add_column("device", no_wrap=True)
        for k in keys:
            t.add_column(short(k), justify="right")
        for raw, norm in zip(fleet.table.to_dict("records"), fleet.normalized.to_dict("records"), strict=True):
            dev = raw["device"] + (f" / {raw['mode']}" if raw["mode"] else "")
            t.add_row(raw["run"], dev, *(_cell(norm[k], (raw["run"], k) in flagged) for k in keys))
        print_table(console, t, ["device"] + [short(k) for k in reversed(keys)], wide)
    g = _table("medians per group")
    g.add_column("group", no_wrap=True)
    g.add_column("runs", justify="right")
    for k in keys:
        g.add_column(short(k), justify="right")
    from hwprobe.fleet.compare import group_column

    for name, part in fleet.table.groupby(group_column(fleet.table, fleet.group_by)):
        g.add_row(str(name), str(len(part)), *(_median(part[k], fleet.units[k]) for k in keys))
    print_table(console, g, [short(k) for k in reversed(keys)] + ["runs"], wide)
    if not fleet.outliers:
        console.print("[green]no outliers[/] (robust z and gap rule)")
    by_run: dict[str, list] = {}
    for o in fleet.outliers:                    # worst first (compare sorts them)
        by_run.setdefault(o.run, []).append(o)
    for run, outs in by_run.items():
        basis = "the reference" if fleet.basis.startswith("reference") else "its group median"
        console.print(f"[bold red]OUTLIER[/] {run} ({outs[0].direction}, vs {basis}): "
                      + "; ".join(map(_outlier_figure, outs)))
        seen: list[str] = []
        for c in (c for o in outs for c in o.causes):
            head = c.split(":")[0].split(" vs ")[0]
            if all(head != s.split(":")[0].split(" vs ")[0] for s in seen):
                seen.append(c)
        for c in seen[:6]:
            console.print(f"     likely cause: {c}")
    for n in fleet.notes:
        console.print(f"note: {n}")


# --- node acceptance (hwprobe.fleet.acceptance) --------------------------------------------------------------------

def _ceiling_cell(node) -> str:
    checks = [c for p in node.parts if p.validation for c in p.validation.checks if c.status in ("pass", "fail")]
    failed = sum(c.status == "fail" for c in checks)
    if not checks:
        return "-"
    return f"[bold red]{failed} fail[/] / {len(checks)}" if failed else f"{len(checks)} pass"


def _health_cell(node) -> str:
    from hwprobe.vocab import Verdict

    counts = {v: sum(h.verdict == v for _, h in node.health) for v in Verdict}
    parts = [f"[bold red]{counts[Verdict.FAIL]} fail[/]" if counts[Verdict.FAIL] else "",
             f"[yellow]{counts[Verdict.WARN]} warn[/]" if counts[Verdict.WARN] else "",
             f"{counts[Verdict.PASS]} pass" if counts[Verdict.PASS] else "",
             f"{counts[Verdict.NOT_AVAILABLE]} n/a" if counts[Verdict.NOT_AVAILABLE] else ""]
    return ", ".join(p for p in parts if p) or "-"


def ranges(nums: list[int]) -> str:
    """[0, 1, 2, 3, 8, 10, 11] -> '0-3,8,10-11' (a node's ranks in a table cell)."""
    out: list[str] = []
    for n in sorted(nums):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == n - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        elif out and "-" not in out[-1] and int(out[-1]) == n - 1:
            out[-1] = f"{out[-1]}-{n}"
        else:
            out.append(str(n))
    return ",".join(out)


def render_acceptance(a, console, wide: bool = False) -> None:
    """One row per node (its ranks, device, ceilings and health counts, the verdict), then every failure named
    with its node and rank, the warnings, and one closing line."""
    from hwprobe.report.fit import print_table

    ref_kind = "measured reference" if a.ref.measured else "spec-derived expectation (not measured)"
    console.print(f"runs:      {', '.join(r.path for r in a.runs[:3])}" + (", ..." if len(a.runs) > 3 else ""))
    console.print(f"reference: {a.ref.path}  [{a.ref.device_name}; {ref_kind}]")
    t = _table(f"acceptance per node (tolerance: {a.tolerances.source})")
    for col, just in (("node", "left"), ("ranks", "left"), ("device", "left"), ("ceilings", "right"),
                      ("health", "left"), ("result", "left")):
        t.add_column(col, justify=just, no_wrap=col in ("node", "result"))
    for n in a.nodes:
        devs = sorted({p.record.device_name for p in n.parts if p.rank >= 0}) or ["-"]
        ranks = ranges(n.ranks) or "-"
        t.add_row(n.node, ranks, "; ".join(devs), _ceiling_cell(n), _health_cell(n),
                  "[bold green]PASS[/]" if n.passed else "[bold red]FAIL[/]")
    print_table(console, t, ("device", "ranks"), wide)
    for n in a.nodes:
        for f, causes in n.failed:
            console.print(f"[bold red]FAIL[/] {n.node}: {f}")
            for cause in causes:
                console.print(f"     likely cause: {cause}")
    for n in a.nodes:
        for w in n.warnings:
            console.print(f"[yellow]warn[/] {n.node}: {w}")
    for note in a.notes:
        console.print(f"note: {note}")
    bad = [n.node for n in a.failed_nodes]
    if bad:
        console.print(f"[bold red]FAILED[/]: {len(bad)} of {len(a.nodes)} node(s): {', '.join(bad)}")
    else:
        console.print(f"[bold green]PASSED[/]: {len(a.nodes)} node(s)")


def acceptance_junit(a) -> str:
    """JUnit XML: a testsuite per node; a testcase per rank and ceiling, per health verdict and per probe error."""
    from hwprobe.vocab import Verdict

    root = ET.Element("testsuites", name="hwprobe.acceptance")
    total = fails = 0
    for n in a.nodes:
        suite = ET.SubElement(root, "testsuite", name=n.node, errors="0", time="0")
        props = ET.SubElement(suite, "properties")
        for name, value in (("reference", a.ref.path), ("ranks", ",".join(map(str, n.ranks))),
                            ("passed", str(n.passed))):
            ET.SubElement(props, "property", name=name, value=value)
        cls = "hwprobe.acceptance." + "".join(ch if ch.isalnum() else "_" for ch in n.node).strip("_")
        cases = failed = skipped = 0
        for p in n.parts:
            for c in p.validation.checks if p.validation else []:
                case = ET.SubElement(suite, "testcase", classname=cls, name=f"{p.who}.{c.key}", time="0")
                cases += 1
                if c.status == "fail":
                    failed += 1
                    f = ET.SubElement(case, "failure", message=check_line(c), type="BelowReference")
                    f.text = "\n".join([check_line(c), *(f"likely cause: {x}" for x in c.causes), *c.notes])
                elif c.status != "pass":
                    skipped += 1
                    ET.SubElement(case, "skipped", message=check_line(c))
            for e in p.errors:
                case = ET.SubElement(suite, "testcase", classname=cls, name=f"{p.who}.probe_error", time="0")
                ET.SubElement(case, "failure", message=e, type="ProbeError")
                cases, failed = cases + 1, failed + 1
        for who, v in n.health:
            case = ET.SubElement(suite, "testcase", classname=cls, name=f"{who}.health.{v.check}", time="0")
            cases += 1
            if v.verdict == Verdict.FAIL:
                failed += 1
                ET.SubElement(case, "failure", message=v.line(), type="Unhealthy")
            elif v.verdict == Verdict.NOT_AVAILABLE:
                skipped += 1
                ET.SubElement(case, "skipped", message=v.line())
            else:
                ET.SubElement(case, "system-out").text = v.line()
        suite.set("tests", str(cases))
        suite.set("failures", str(failed))
        suite.set("skipped", str(skipped))
        total, fails = total + cases, fails + failed
    root.set("tests", str(total))
    root.set("failures", str(fails))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def draw(fleet, out, title: str | None = None):
    """The fleet's strip plot (hwprobe.report.plots.fleet), with the ceilings and words the text table uses."""
    from hwprobe.fleet.compare import SHOWN, group_column
    from hwprobe.report.plots.fleet import strip_plot

    return strip_plot(fleet, out, n_shown=SHOWN, groups=group_column(fleet.table, fleet.group_by), legend=LEGEND,
                      short=short, title=title)
