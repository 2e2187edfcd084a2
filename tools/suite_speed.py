#!/usr/bin/env python3
"""The suite's own speed, checked on committed runs (issue 33): where a run's time went, stopping rules replayed on
raw samples, and the calibration points interpolation makes redundant.

    .venv/bin/python tools/suite_speed.py costs RUN [--top 15] [--against OLD_RUN]
    .venv/bin/python tools/suite_speed.py replay profiles/h200-sxm/2026-11-26-full profiles/h100-sxm/2026-11-26-full \\
        [--rule ceiling] [--noise 0.003 0.005] [--count 10]
    .venv/bin/python tools/suite_speed.py prune profiles/h200-sxm/2026-11-26-predict-conv \\
        profiles/h100-sxm/2026-11-26-predict-conv \\
        [--write hwprobe/probes/calibration/pruned_grid.json [--only conv]] [--profile-out DIR]

costs: per probe, its wall time (environment probe_seconds), the seconds its records' samples add up to, the seconds
it waited for kernel compiles (compile_wait_seconds, runs since 2026-11-29), its own settles (own_settles) and the
rest (setup, allocation, graph capture, warm-up, checks, CuPy's own compiles); then the runner's settles before
compute probes and the run's wall time, which no probe's seconds hold; then the records that took longest to make
(params wall_s, recorded since issue 33).

replay: only records that took exactly ``--count`` samples (the old fixed count) are replayed, in the order they
were taken: the rule sees the first k of them as it would have on the GPU. It says how many would have stopped
early, the sample seconds saved, and how far each median rate moves (new / old - 1).

prune: the points of the GEMM grids (calibration.gemm.<precision>), the memory-kernel curves ("memory.<kind>",
"torch.<kind>": calibration.memory and .framework) and the convolution table (calibration.conv) that interpolation
from their neighbours
predicts within 2% on every profile given (hwprobe.predict.prune). --write saves them for the calibration probes
to skip (--only: rewrite those parts, keep the rest as judged before, each part naming its profiles);
--profile-out writes the first profile as the probes would now make it (those points left out), for
tools/compare_predictions.py. Exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


# --- costs -------------------------------------------------------------------------------------------------
def environment(run_dir: Path) -> dict:
    return json.loads((run_dir / "environment.json").read_text())


@dataclass
class ProbeCost:
    probe: str
    wall_s: float             # the probe's wall time in the run
    samples_s: float          # its records' timed samples, added up
    records: int
    compile_wait_s: float = 0.0   # of wall_s, waiting for kernel compiles (runs since 2026-11-29)
    settle_s: float = 0.0         # of wall_s, the probe's own settles (its records' start states and steady settles)


def costs(run_dir: Path, env: dict | None = None) -> tuple[list[ProbeCost], list[tuple[float, str]]]:
    """Per probe (slowest first) and the records by their own wall time (slowest first, where recorded). ``env``:
    the run's environment.json where the caller has read it already."""
    from hwprobe import keys as K
    from hwprobe.results import read_measurements

    env = env if env is not None else environment(run_dir)
    secs, waits = env.get("probe_seconds") or {}, env.get("compile_wait_seconds") or {}
    ms = read_measurements(run_dir)
    timed: dict[str, dict[tuple, float]] = {}     # a ceiling record repeats its best point's samples: count once
    for m in ms:
        timed.setdefault(m.probe, {})[tuple(m.samples_s)] = sum(m.samples_s)
    settled = own_settles(ms, env.get("settle_states") or {})
    out = [ProbeCost(p, float(w), sum(timed.get(p, {}).values()), sum(m.probe == p for m in ms),
                     float(waits.get(p, 0.0)), settled.get(p, 0.0)) for p, w in secs.items()]
    slow = sorted(((float(m.params[K.WALL_S]), m.metric) for m in ms if K.WALL_S in m.params), reverse=True)
    return sorted(out, key=lambda c: -c.wall_s), slow


def own_settles(ms, runner_states: dict | None = None) -> dict[str, float]:
    """Per probe, the seconds its own settles took: the waits before its points (``start_state``'s waited_s, each
    state once: the points after one settle carry the same; not the runner's settle before the probe, which
    ``runner_states``, environment.json's settle_states, names and no probe's seconds hold) and the settles that
    run a point until its launch time is steady (``settle_ran_s``, each point once: a ceiling repeats its best
    point's). On one H200 `full` (2026-11-29, d720609) gpu.gemm's own settles held 17.3 s of its 43.0."""
    from hwprobe import keys as K

    runner = {p: json.dumps(st, sort_keys=True) for p, st in (runner_states or {}).items()}
    seen: dict[str, dict] = {}
    for m in ms:
        st, ran = m.params.get(K.START_STATE), m.params.get("settle_ran_s")
        key = json.dumps(st, sort_keys=True) if isinstance(st, dict) and st.get("waited_s") else None
        if key and key != runner.get(m.probe):
            seen.setdefault(m.probe, {})[key] = float(st["waited_s"])
        if ran:
            seen.setdefault(m.probe, {})[("ran", float(ran), tuple(m.samples_s))] = float(ran)
    return {p: sum(v.values()) for p, v in seen.items()}


def outside_probes(env: dict) -> dict[str, float]:
    """The run-level lines under the probe rows (``env``: its environment.json): the settles before compute probes
    (the runner's ``settle_seconds``, not in ``probe_seconds``), the probes' waits for kernel compiles (within their
    seconds) and the run's whole wall time (0 where the run did not record it)."""
    return {"settles": float(sum((env.get("settle_seconds") or {}).values())),
            "compile waits": float(sum((env.get("compile_wait_seconds") or {}).values())),
            "run wall": float(env.get("wall_s") or 0)}


def settle_lines(env: dict) -> list[str]:
    """One line per compute probe the runner let settle (environment.json's ``settle_states``, runs since
    2026-11-28): how long it waited, whether the card got there, the state it ended in and the rule."""
    out = []
    for probe, st in (env.get("settle_states") or {}).items():
        state = ", ".join(f"{v:g} {unit}" for k, unit in (("temp_c", "C"), ("power_w", "W"), ("sm_mhz", "MHz"))
                          if (v := st.get(k)) is not None)
        out.append(f"{probe:<20} {float(st.get('waited_s') or 0):5.2f} s "
                   f"{'settled' if st.get('settled') else 'NOT settled':<11} {state}; {st.get('rule', '')}")
    return out


def compare(new: list[ProbeCost], old: list[ProbeCost]) -> list[tuple[str, float | None, float | None]]:
    """(probe, old wall s, new wall s) for every probe of either run, the slowest in the new run first (a probe
    only one run has: None in the other)."""
    o, n = {c.probe: c.wall_s for c in old}, {c.probe: c.wall_s for c in new}
    return sorted(((p, o.get(p), n.get(p)) for p in o.keys() | n.keys()), key=lambda t: (-(t[2] or 0), t[0]))


def run_costs(a) -> int:
    from hwprobe.results import records_file

    for run in (a.run, a.against) if a.against else (a.run,):
        if not (run / "environment.json").exists() or records_file(run) is None:
            return fail(f"{run}: not a results directory (environment.json and measurements.jsonl)")
    env = environment(a.run)          # each run's environment.json read once
    probes, slow = costs(a.run, env)
    if a.against:                     # an A/B: the same probes in an older run, side by side
        old_env = environment(a.against)
        rows = compare(probes, costs(a.against, old_env)[0])
        cell = lambda x: f"{x:8.1f}" if x is not None else f"{'-':>8}"   # noqa: E731
        print(f"{'probe':<20} {'old s':>8} {'new s':>8} {'new-old':>8}")
        for p, o, n in rows:
            d = f"{n - o:+8.1f}" if o is not None and n is not None else f"{'-':>8}"
            print(f"{p:<20} {cell(o)} {cell(n)} {d}")
        to, tn = (sum(x or 0 for x in col) for col in ([r[1] for r in rows], [r[2] for r in rows]))
        print(f"{'total':<20} {to:8.1f} {tn:8.1f} {tn - to:+8.1f}")
        o, n = outside_probes(old_env), outside_probes(env)
        for k in o:
            print(f"{k:<20} {o[k]:8.1f} {n[k]:8.1f} {n[k] - o[k]:+8.1f}")
        return 0
    print(f"{'probe':<20} {'wall s':>8} {'samples s':>10} {'compile s':>10} {'settle s':>9} {'rest s':>8} "
          f"{'records':>8}")
    for c in probes:
        rest = c.wall_s - c.samples_s - c.compile_wait_s - c.settle_s
        print(f"{c.probe:<20} {c.wall_s:8.1f} {c.samples_s:10.1f} {c.compile_wait_s:10.1f} {c.settle_s:9.1f} "
              f"{rest:8.1f} {c.records:8d}")
    print(f"{'total':<20} {sum(c.wall_s for c in probes):8.1f} {sum(c.samples_s for c in probes):10.1f}")
    print("; ".join(f"{k} {v:.1f} s" for k, v in outside_probes(env).items()))
    for line in settle_lines(env):
        print("settle: " + line)
    if slow:
        print("slowest records (wall_s): " + "; ".join(f"{m} {s:.2f} s" for s, m in slow[:a.top]))
    return 0


# --- replay ------------------------------------------------------------------------------------------------
@dataclass
class Replay:
    noise: float
    records: int
    early: int                 # stopped before --count
    timed_s: float             # sample seconds the records took
    saved_s: float             # ... and would not have
    worst: float               # the largest downward move of a median rate (new / old - 1, most negative)
    worst_metric: str
    best: float                # the largest upward move


def replay(streams: list[tuple[str, list[float]]], rule) -> Replay:
    """``rule`` over every (metric, samples) stream, fed from the recorded samples in order."""
    import numpy as np

    from hwprobe.timing import policy

    early, timed, saved, worst, worst_m, best = 0, 0.0, 0.0, 0.0, "", 0.0
    for metric, s in streams:
        it = iter(s)
        got = policy.sample(lambda k, it=it: [next(it) for _ in range(k)], rule, clock=lambda: 0.0)
        move = float(np.median(s) / np.median(got.samples) - 1)   # rate = work / median time
        early += len(got.samples) < len(s)
        timed += sum(s)
        saved += sum(s) - sum(got.samples)
        if move < worst:
            worst, worst_m = move, metric
        best = max(best, move)
    return Replay(rule.max_noise, len(streams), early, timed, saved, worst, worst_m, best)


def streams_of(run_dirs: list[Path], count: int) -> list[tuple[str, list[float]]]:
    from hwprobe.results import read_measurements

    out = []
    for d in run_dirs:
        out += [(m.metric, list(m.samples_s)) for m in read_measurements(d)
                if len(m.samples_s) == count and m.kind in ("compute", "sweep", "memory")]
    return out


def run_replay(a) -> int:
    from hwprobe.timing import policy

    try:
        base = policy.rule(a.rule)
    except ValueError as e:
        return fail(str(e))
    from hwprobe.results import records_file

    missing = [str(d) for d in a.runs if records_file(d) is None]
    if missing:
        return fail(f"no measurements.jsonl in {', '.join(missing)}")
    streams = streams_of(a.runs, a.count)
    for target in a.noise or [base.max_noise]:
        r = replay(streams, dataclasses.replace(base, max_noise=target))
        print(f"{a.rule} at {target:.2%}: {r.early} of {r.records} stop early, {r.saved_s:.2f} of {r.timed_s:.2f} s "
              f"of samples saved; medians move {r.worst:+.2%} ({r.worst_metric or '-'}) to {r.best:+.2%}")
    return 0


# --- prune -------------------------------------------------------------------------------------------------
CONV_AXES = {"dense1": ("m", "cin", "cout"), "dense": ("m", "cin"), "grouped": ("m", "cin", "groups"),
             "dw": ("m", "cin"), "stem": ("m",)}


PARTS = ("gemm", "curves", "conv")


@dataclass
class Pruned:
    gemm: dict[str, list[tuple[int, int, int]]]       # precision -> (M, N, K) left out
    gemm_points: int
    curves: dict[str, list[int]]                      # "memory.<kind>" / "torch.<kind>" -> nominal sizes left out
    curve_points: int
    conv: list[dict]                                  # convolution cases left out (their point keys)
    conv_points: int
    worst: float                                      # the largest error at a point left out

    def as_json(self, sources: list[str], only: tuple[str, ...] = PARTS, old: dict | None = None) -> dict:
        """The pruned_grid.json document; ``only``: the parts judged now, the others kept from ``old`` (the file as
        it was) with the profiles they were judged on (``sources``, per part)."""
        new = {"gemm": {p: [list(x) for x in pts] for p, pts in self.gemm.items()}, "curves": self.curves,
               "conv": self.conv}
        old = old or {}
        was = old.get("sources", [])
        was = was if isinstance(was, dict) else {part: was for part in PARTS}
        return {"rule": "left out where interpolation from the neighbours predicts the point within 2% on every "
                        "source profile (hwprobe.predict.prune)",
                "sources": {part: sources if part in only else was.get(part, []) for part in PARTS},
                **{part: new[part] if part in only else old.get(part, {} if part != "conv" else [])
                   for part in PARTS}}


def kernel_curves(sec) -> dict[str, tuple]:
    """A calibration section's memory-kernel curves by the names pruned_grid.json gives them ("memory.<kind>",
    "torch.<kind>"): name -> (curve kind, key, KernelCurve)."""
    from hwprobe.calibration import curve_id
    from hwprobe.vocab import Curve

    return {curve_id(kind, k): (kind, k, c) for kind, held in ((Curve.MEMORY, sec.memory),
                                                              (Curve.FRAMEWORK, sec.framework))
            for k, c in held.items()}


def _gemm(secs: list) -> tuple[dict, int, float]:
    import numpy as np

    from hwprobe.predict import prune

    names = sorted(set.intersection(*[set(s.gemm) for s in secs]))
    if not names:
        return {}, 0, 0.0
    first = secs[0].gemm[names[0]]
    axes = [first.m, first.n, first.k]
    tables = []
    for s in secs:
        for n in names:
            g = s.gemm[n]
            if [g.m, g.n, g.k] != axes:
                raise ValueError(f"{n}: the profiles' GEMM grids differ (M, N, K lists)")
            t = np.array([[[np.nan if x is None else x for x in r] for r in pl] for pl in g.time_s], float)
            tables.append(np.log(t))
    errs = prune.errors(tables, axes)
    out = prune.prunable(tables, axes)
    pts = sorted((axes[0][i], axes[1][j], axes[2][q]) for i, j, q in out)
    return {n: pts for n in names}, len(pts), max((errs[i] for i in out), default=0.0)


def _curves(secs: list, sizes: list[int]) -> tuple[dict, int, float]:
    """Curves of one nominal size list (common.SIZES): point i was measured at sizes[i]."""
    import numpy as np

    from hwprobe.predict import prune

    cs = [{n: c for n, (_, _, c) in kernel_curves(s).items()} for s in secs]
    out, worst = {}, 0.0
    for n in sorted(set.intersection(*[set(c) for c in cs])):
        if any(c[n].bytes != cs[0][n].bytes or len(c[n].bytes) != len(sizes) for c in cs):
            continue                   # a failed point: the index no longer names the size
        tables = [np.log(np.asarray(c[n].time_s, float)) for c in cs]
        axes = [cs[0][n].bytes]        # what the predictor interpolates over: bytes moved, not the nominal size
        errs = prune.errors(tables, axes)
        keep = sorted(prune.prunable(tables, axes))
        out[n] = [sizes[i] for (i,) in keep]
        worst = max([worst] + [errs[i] for i in keep])
    return out, sum(len(v) for v in out.values()), worst


def conv_family(p: dict) -> tuple:
    """The table a convolution point is priced from (hwprobe.predict.calibration.ConvTable), per precision: stems by
    kernel, stride and C_out; depthwise by kernel, stride, layout and image regime; grouped by kernel, layout and
    image regime (on the grid's own axes, pixels x channels x groups; the predictor reads them over channels per
    group, and tests/test_prune.py checks it prices each left-out point within 2%); dense by kernel, stride, layout
    and (NCHW) one image or several (1x1 over pixels x C_in x C_out, larger kernels over pixels x C)."""
    prec, layout, k, stride = p.get("precision", "fp16"), p.get("layout", "nhwc"), p["k"], p.get("stride", 1)
    many = p.get("images", 1) > 1
    if p["cin"] < 8:
        return ("stem", prec, k, stride, p["cout"], layout)
    if p.get("dw"):
        return ("dw", prec, k, stride, layout, many)
    if p.get("groups", 1) > 1:
        return ("grouped", prec, k, stride, layout, many)
    return ("dense1" if k == 1 else "dense", prec, k, stride, layout, layout == "nchw" and many)


def _conv(secs: list) -> list[dict]:
    """The convolution points the judging grids leave out (candidates: _conv_confirmed keeps the ones the predictor
    agrees on)."""
    import numpy as np

    from hwprobe.predict import prune
    from hwprobe.probes.calibration.pruned import point_key

    if not all(s.conv is not None for s in secs):
        return []
    sets = [{point_key(p): p for p in s.conv.points} for s in secs]
    common_keys = set.intersection(*[set(s) for s in sets])
    families: dict[tuple, list[tuple]] = {}
    for key in sorted(common_keys):
        families.setdefault(conv_family(dict(key)), []).append(key)
    out = []
    for fam, keys in families.items():
        names = CONV_AXES[fam[0]]
        axes = [sorted({dict(k)[a] for k in keys}) for a in names]
        cells: dict[tuple, list[tuple]] = {}     # a table cell may hold points that differ off its axes (images,
        for k in keys:                           # dilation, a 1x7 kernel): such a cell is never left out, and
            cells.setdefault(tuple(dict(k)[a] for a in names), []).append(k)   # its grid value is their mean
        tables = [prune.as_grid({c: float(np.mean([np.log(s[k]["time_s"]) for k in ks])) for c, ks in cells.items()},
                                axes) for s in sets]
        for idx in prune.prunable(tables, axes):
            ks = cells.get(tuple(axes[d][i] for d, i in enumerate(idx)), [])
            if len(ks) == 1:
                out.append(dict(ks[0]))
    return sorted(out, key=lambda d: json.dumps(d, sort_keys=True))


def conv_price(cal, q: dict) -> float | None:
    """A convolution point's price as the predictor reads its precision's table (ConvTable): depthwise, grouped
    (over channels per group), dense or stem; None where the table has nothing for it."""
    t = cal.conv.only(q.get("precision", "fp16")) if cal.conv is not None else None
    if t is None:
        return None
    layout, images = q.get("layout", "nhwc"), q.get("images", 1)
    if q.get("dw"):
        got = t.dw_time(q["m"], q["cin"], q["k"], q.get("stride", 1), layout, images)
    elif q.get("groups", 1) > 1:
        got = t.grouped(q["m"], q["cin"], q["groups"], q["k"], layout, images)
    else:
        got = t.time(q["m"], q["cin"], q["cout"], q["k"], q.get("stride", 1), layout, images)
    return got[0] if got else None


def _conv_confirmed(profiles: list, sizes: list[int], conv: list[dict]) -> tuple[list[dict], float]:
    """The grid's candidates the predictor itself prices within 2% on every profile with all of them left out: its
    tables differ from the judging grid (grouped points over channels per group, depthwise by image regime), so a
    point that interpolates on the grid can land 80% off in the predictor. Those are put back, and the rest judged
    again until every one left out passes."""
    from hwprobe.predict import prune
    from hwprobe.predict.calibration import Calibration
    from hwprobe.probes.calibration.pruned import point_key

    measured = [{point_key(q): q["time_s"] for q in p.calibration.conv.points} for p in profiles]
    while True:
        p = Pruned({}, 0, {}, 0, conv, 0, 0.0)
        cals = [Calibration.of(pruned_profile(prof, p, sizes)) for prof in profiles]
        errs = []
        for c in conv:
            key = point_key(c)
            got = [conv_price(cal, c) for cal in cals]
            errs.append(max((abs(g / m[key] - 1) if g else float("inf")) for g, m in zip(got, measured, strict=True)))
        keep = [c for c, e in zip(conv, errs, strict=True) if e <= prune.TOL]
        if len(keep) == len(conv):
            return conv, max(errs, default=0.0)
        conv = keep


def prune_profiles(profiles: list, sizes: list[int]) -> Pruned:
    secs = [p.calibration for p in profiles]
    gemm, ng, wg = _gemm(secs)
    curves, nc, wc = _curves(secs, sizes)
    conv, wv = _conv_confirmed(profiles, sizes, _conv(secs))
    return Pruned(gemm, ng, curves, nc, conv, len(conv), max(wg, wc, wv))


def pruned_profile(profile, p: Pruned, sizes: list[int]):
    """``profile`` as the calibration probes make it now: the pruned points left out (GEMM cells None, curve and
    convolution points absent). A GEMM point off the profile's grid and a curve measured with points already left
    out (fewer than ``sizes``: its index no longer names the size) have nothing to leave out."""
    import copy

    from hwprobe.probes.calibration.pruned import point_key

    out = copy.deepcopy(profile)
    sec = out.calibration
    for prec, g in sec.gemm.items():
        if prec in p.gemm:
            pos = [{v: i for i, v in enumerate(axis)} for axis in (g.m, g.n, g.k)]
            for mm, n, k in p.gemm[prec]:
                if mm in pos[0] and n in pos[1] and k in pos[2]:
                    g.time_s[pos[0][mm]][pos[1][n]][pos[2][k]] = None
    for name, (kind, key, c) in kernel_curves(sec).items():
        if name in p.curves and len(c.bytes) == len(sizes):
            keep = [i for i, s in enumerate(sizes) if s not in set(p.curves[name])]
            sec.put(kind, key, dataclasses.replace(c, **{f: [getattr(c, f)[i] for i in keep] for f in
                                                         ("bytes", "time_s", "shapes") if getattr(c, f) is not None}))
    if sec.conv is not None:
        drop_conv = {point_key(d) for d in p.conv}
        sec.conv = dataclasses.replace(sec.conv, points=[q for q in sec.conv.points if point_key(q) not in drop_conv])
    return out


def run_prune(a) -> int:
    from hwprobe.errors import InputError
    from hwprobe.probes.calibration.common import SIZES
    from hwprobe.profile_build import load_profile

    try:
        profiles = [load_profile(d) for d in a.profiles]
        p = prune_profiles(profiles, SIZES)
    except (InputError, OSError, ValueError, KeyError) as e:
        return fail(f"{type(e).__name__}: {e}")
    total = {"gemm": sum(g.points for x, g in profiles[0].calibration.gemm.items() if x in p.gemm)}
    print(f"GEMM grid: {p.gemm_points} points of each precision's grid left out ({', '.join(p.gemm)}; "
          f"{sum(len(v) for v in p.gemm.values())} of {total['gemm']} measured points)")
    print(f"memory-kernel curves: {p.curve_points} points over {len(p.curves)} curves")
    print(f"convolutions: {p.conv_points} points")
    print(f"largest interpolation error at a point left out: {p.worst:.2%}")
    if a.write:
        only = tuple(a.only.split(",")) if a.only else PARTS
        if set(only) - set(PARTS):
            return fail(f"--only takes {', '.join(PARTS)}, not {a.only}")
        old = json.loads(Path(a.write).read_text()) if Path(a.write).exists() and a.only else None
        Path(a.write).write_text(compact_json(p.as_json([str(x) for x in a.profiles], only, old)))
    if a.profile_out:
        out = Path(a.profile_out)
        out.mkdir(parents=True, exist_ok=True)
        pruned_profile(profiles[0], p, SIZES).save(out / "profile.json")
    return 0


def compact_json(d: dict) -> str:
    """JSON with one line per point (a point: a short list or a flat dict), for a readable diff."""
    import re

    text = json.dumps(d, indent=1)
    flat = re.compile(r"[\[{]\n(?:\s+[^\s\[\]{}][^\n]*\n)+?\s*[\]}]")   # a list or dict of scalars only
    return flat.sub(lambda m: re.sub(r"\s*\n\s*", " ", m.group(0)).replace("[ ", "[").replace(" ]", "]")
                    .replace("{ ", "{").replace(" }", "}"), text) + "\n"


def fail(msg: str) -> int:
    print(f"suite_speed: {msg}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("costs", help="where a run's time went, per probe and per record")
    c.add_argument("run", type=Path)
    c.add_argument("--top", type=int, default=15)
    c.add_argument("--against", type=Path, default=None, help="an older run of the same suite: per probe, side by side")
    r = sub.add_parser("replay", help="a stopping rule over committed raw samples")
    r.add_argument("runs", nargs="+", type=Path, help="run directories holding measurements.jsonl")
    r.add_argument("--rule", default="ceiling")
    r.add_argument("--noise", nargs="+", type=float, default=None, help="noise targets (default: the rule's)")
    r.add_argument("--count", type=int, default=10, help="the fixed sample count the records were taken with")
    q = sub.add_parser("prune", help="calibration points interpolation predicts within 2%%")
    q.add_argument("profiles", nargs="+", type=Path)
    q.add_argument("--write", type=Path, default=None)
    q.add_argument("--only", default=None, help="comma list of the parts to rewrite in --write (gemm, curves, conv); "
                   "the others stay as the file has them")
    q.add_argument("--profile-out", type=Path, default=None)
    a = ap.parse_args(argv)
    return {"costs": run_costs, "replay": run_replay, "prune": run_prune}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
