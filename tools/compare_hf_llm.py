#!/usr/bin/env python3
"""Predicted vs measured LLM steps as transformers runs them: every case of tools/validate_hf_llm.py's JSON priced
by hwprobe (the same cut config, runtime, batch, length and static-cache length) over a profile, as a Markdown
table per runtime, with the families held out from tuning marked; and each step's kernel count (and its GEMM,
attention and other kernels) from the lowering beside torch.profiler's.

    .venv/bin/python tools/compare_hf_llm.py hf_llm_measured.json --profile profiles/h200-sxm/<run> \\
        [--tuned llama,qwen2] [--out table.md]

Error = predicted / measured - 1 (medians). Targets (issue 32): hf and hf-compiled within 15% (prefill and decode),
median 7% or less; eager decode within 25%. Exit 1 when a targeted case misses, 2 on bad input.
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGET = {("hf", "prefill"): 0.15, ("hf", "decode"): 0.15, ("hf-compiled", "prefill"): 0.15,
          ("hf-compiled", "decode"): 0.15, ("eager", "decode"): 0.25}
MEDIAN_TARGET = 0.07


@dataclass
class Row:
    model: str
    family: str
    held_out: bool
    runtime: str
    phase: str
    batch: int
    length: int
    cache_len: int
    measured_s: float | None
    predicted_s: float | None
    kernels: int
    skipped: str = ""
    refused: str = ""       # the lowering's NotModelled reason (hwprobe analyze refuses the case with it too)

    @property
    def error(self) -> float | None:
        if self.measured_s is None or self.predicted_s is None:
            return None
        return self.predicted_s / self.measured_s - 1.0

    @property
    def target(self) -> float | None:
        return TARGET.get((self.runtime, self.phase))

    @property
    def ok(self) -> bool:
        return self.target is None or (self.error is not None and abs(self.error) <= self.target)


def load_measured(path: str) -> dict:
    from compare_predictions import read_json  # beside this file: JSON, gzipped (committed runs) or not

    from hwprobe.errors import InputError

    doc = read_json(Path(path))          # one line of InputError on a missing, damaged or non-JSON file
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list) or not isinstance(doc.get("models"), dict):
        raise InputError(f"{path!r} is not tools/validate_hf_llm.py output (no 'cases' and 'models')")
    return doc


def configs(doc: dict) -> dict:
    """model name -> hwprobe's LLMConfig of the cut config the device ran."""
    from hwprobe.errors import InputError
    from hwprobe.models.llm.config import parse

    out = {}
    for name, m in doc["models"].items():
        if not isinstance(m, dict) or not isinstance(m.get("config"), dict):
            raise InputError(f"model {name!r} has no 'config'")
        out[name] = parse(m["config"], name, source=str(m.get("source", "")))
    return out


def run_host_s(doc: dict, key: str = "eager_op_s") -> float | None:
    """A host time hwprobe measured in the validation's own process (the mean of its before and after readings), or
    None where the run has none: ``key`` "eager_op_s", the bare-op time per op (runs since 2026-11-28), or
    "hf_eager_kernel_s", transformers' own per kernel of an eager decode step (hwprobe.probes.calibration.hf_host)."""
    got = [doc[k][key] for k in ("host_before", "host_after") if (doc.get(k) or {}).get(key)]
    return sum(got) / len(got) if got else None


def run_family_ratios(doc: dict) -> dict[str, float]:
    """Each family's host per kernel over the tiny Llama's as the validation's own process measured them (hf_host's
    FAMILIES, in its before and after readings: their mean per family); empty for runs before 2026-11-29."""
    from hwprobe.predict.calibration import family_ratios

    got: dict[str, list[float]] = {}
    for k in ("host_before", "host_after"):
        for fam, r in family_ratios((doc.get(k) or {}).get("hf") or {}).items():
            got.setdefault(fam, []).append(r)
    return {fam: sum(v) / len(v) for fam, v in got.items()}


def family_host(doc: dict, host: str, families: bool) -> dict[str, float] | None:
    """The family ratios a comparison prices with (run_pricer's ``ratios``): none at all without ``families`` ({}),
    the run's own under ``host`` "run" or "case" where it measured them, else the profile's (None)."""
    if not families:
        return {}
    return (run_family_ratios(doc) or None) if host in ("run", "case") else None


@functools.lru_cache(maxsize=4)
def _loaded(profile: str, comm: str | None = None):
    """(profile, its calibration), read once however many pricers are made over it; with ``comm``'s collective
    curves where the profile has none (a tensor-parallel run's all-reduces)."""
    from hwprobe.analysis.llm import with_collectives
    from hwprobe.predict.calibration import Calibration
    from hwprobe.profile_build import load_profile

    prof = load_profile(profile)
    prof = with_collectives(prof, comm) if comm else prof
    return prof, Calibration.of(prof)


def run_pricers(profile, host_s: float | None, hf_s: float | None = None, comm: str | None = None,
                ratios: dict[str, float] | None = None) -> dict:
    """A predictor per pricing runtime over ``profile``; the eager one prices transformers' host (the transformers
    runtimes are all this compares), with the run's own readings where given: ``hf_s`` its transformers figure,
    ``host_s`` its bare-op one (used where neither the run nor the profile has transformers'). A lent machine's host
    is not the one the profile was measured on, and eager time is mostly host time."""
    return {kind: run_pricer(profile, kind, host_s, hf_s, comm, ratios) for kind in ("graph", "eager", "fused")}


def run_pricer(profile, kind: str, host_s: float | None = None, hf_s: float | None = None, comm: str | None = None,
               ratios: dict[str, float] | None = None, sharded: bool = False):
    """One of run_pricers' predictors: ``kind`` "eager" with the run's host readings where given (``ratios``: its
    families' host per kernel over the tiny Llama's, run_family_ratios; None keeps the profile's, {} prices every
    family at the Llama's). ``sharded``: ``hf_s`` was read from the tiny Llama under the tp plan (a case's reading of
    a ``host_clock`` "tp" run), so the profile's tp ratio (gpu.tp_host) is 1 on top of it; a family whose plan
    gathers still takes its own ratio to the sharded Llama (Predictor.for_tp)."""
    from dataclasses import replace

    from hwprobe.predict.model import Predictor

    prof, cal = _loaded(str(profile), comm)
    if kind == "eager":
        cal = replace(cal, **({"eager_op_s": host_s} if host_s else {}),
                      **({"hf_eager_kernel_s": hf_s} if hf_s else {}),
                      **({"hf_family_ratio": ratios} if ratios is not None else {}),
                      **({"hf_tp_ratio": 1.0} if sharded and hf_s else {}))
    return Predictor(prof, kind, cal, host="transformers")


def case_routing(doc: dict, c: dict):
    """The rows per expert an MoE prefill case ran (hwprobe.lowering.llm.routing.Routing), or None: the case's own
    record (runs since 2026-11-29: counted on the case's own tokens), else the kernel list's of the same model,
    phase, batch and length (earlier runs: counted once a case, on other random tokens of the same model)."""
    from hwprobe.lowering.llm.routing import Routing

    if c.get("phase") != "prefill":
        return None
    r = c.get("routing")
    if not r:
        r = next((k.get("routing") for k in doc.get("kernels") or [] if k.get("routing")
                  and (k.get("model"), k.get("phase"), k.get("batch"), k.get("length"))
                  == (c["model"], "prefill", c["batch"], c.get("prompt"))), None)
    return Routing.of(r["counts"], f"{c['model']} routing") if r and r.get("counts") else None


def predict(doc: dict, profile=None, pricer=None, tuned: tuple[str, ...] = ("llama",),
            host: str = "run", comm: str | None = None, routed: bool = True, families: bool = True) -> list[Row]:
    """Every case priced. ``host``: "run" prices the eager runtime with the host time the validation measured in its
    own process (where it did), "case" with the reading taken around each case's rounds (``host_kernel_s``, runs
    since 2026-11-28; the run's where a case has none), "profile" with the profile's. Under "run" and "case" each
    family's ratio to the tiny Llama is the run's own where it measured them (run_family_ratios), else the
    profile's; ``families`` False prices every family at the tiny Llama's host per kernel (as before 2026-11-29).
    ``routed``: an MoE prefill is priced at the routing the validation counted (case_routing), else under uniform
    routing."""
    from hwprobe.analysis.llm import LLMOptions, analyze
    from hwprobe.errors import NotModelled
    from hwprobe.lowering.llm.runtimes import RUNTIMES

    cfgs = configs(doc)
    own = (run_host_s(doc), run_host_s(doc, "hf_eager_kernel_s")) if host in ("run", "case") else (None, None)
    ratios = family_host(doc, host, families)
    pricers = run_pricers(profile, *own, comm, ratios) if pricer is None and profile is not None else {}
    rows = []
    for c in doc["cases"]:
        cfg = cfgs[c["model"]]
        length = c.get("prompt") or c.get("context")
        held = cfg.family not in tuned and c["model"] not in tuned
        row = Row(c["model"], cfg.family, held, c["runtime"], c["phase"], c["batch"], length,
                  c.get("cache_len") or length, c.get("median_s"), None, 0, c.get("skipped", ""))
        if not row.skipped:
            opts = LLMOptions(phase=c["phase"], prompt=length, context=length, batch=c["batch"], runtime=c["runtime"],
                              cache_len=row.cache_len if c["runtime"] != "eager" else None, tp=doc.get("tp", 1),
                              routing=case_routing(doc, c) if routed else None)
            kind = RUNTIMES[c["runtime"]].pricing(c["phase"])
            by = pricers.get(kind)
            if host == "case" and kind == "eager" and c.get("host_kernel_s") and pricer is None and profile:
                by = run_pricer(profile, "eager", own[0], c["host_kernel_s"], comm, ratios,
                                sharded=doc.get("host_clock") == "tp")
            try:
                a = analyze(cfg, profile, opts, pricer=pricer or by, sms=doc.get("sms"))
            except NotModelled as e:
                row.refused = str(e)
            else:
                r = a.phases[c["phase"]]
                row.predicted_s, row.kernels = r.time_s, r.kernels
        rows.append(row)
    return rows


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.3f}"


def table(rows: list[Row], doc: dict, profile: str, host: str = "run", comm: str | None = None,
          routed: bool = True, families: bool = True) -> str:
    with_comm = f" with the collectives of `{comm}`" if comm else ""
    lines = [f"transformers {doc.get('transformers', '?')}, torch {doc.get('torch', '?')}, {doc.get('gpu', '?')}; "
             f"{doc.get('layers')} layers per model (the cut config priced); profile `{profile}`{with_comm}. "
             "Held-out families (not used to tune the lowering) are marked *.", ""]
    if doc.get("routing") == "balanced":
        lines += ["MoE routing: balanced (`--routing balanced`: each router's top-k ids replaced so that every expert "
                  "gets tokens x k / E rows, as a trained router aims for).", ""]
    if any(case_routing(doc, c) for c in doc.get("cases", [])):
        lines += ["MoE prefills priced " + ("at the rows per expert the validation counted (hwprobe analyze "
                                            "--routing)" if routed else "under uniform routing (--uniform-routing)")
                  + ".", ""]
    got, hf = run_host_s(doc), run_host_s(doc, "hf_eager_kernel_s")
    per_case = [c["host_kernel_s"] for c in doc.get("cases", []) if c.get("host_kernel_s")]
    if per_case and host == "case":
        lines += [f"Eager-priced cases use transformers' host time per kernel read around each case's own rounds (a "
                  f"tiny Llama's eager decode step timed around them): "
                  f"{min(per_case) * 1e6:.1f}-{max(per_case) * 1e6:.1f} us over {len(per_case)} cases, median "
                  f"{statistics.median(per_case) * 1e6:.1f}; the run's before-and-after reading "
                  f"{(hf or 0) * 1e6:.1f} us.", ""]
    elif hf and host in ("run", "case"):
        lines += [f"Eager-priced passes (eager; hf-compiled's prefill) use transformers' host time per kernel hwprobe "
                  f"measured in the validation's own process, {hf * 1e6:.1f} us (gpu.torch_kernels' eager "
                  "calibration: a tiny Llama's eager decode step, before and after the models), not the profile's: "
                  "each lent machine's host differs.", ""]
    elif got and host in ("run", "case"):
        lines += [f"Eager-priced passes (eager; hf-compiled's prefill) use the host time per op hwprobe measured in "
                  f"the validation's own process, {got * 1e6:.1f} us (gpu.torch_kernels' eager calibration, before and "
                  "after the models), not the profile's: each lent machine's host differs.", ""]
    tp_cal = _loaded(str(profile), comm)[1] if (doc.get("tp") or 1) > 1 and comm else None
    if doc.get("host_clock") == "tp" and host == "case":
        lines += [f"Under tp {doc.get('tp')} the tiny Llama of the host readings is sharded by the tp plan as the "
                  "models are: its hooks' host time is in the price.", ""]
    elif tp_cal and (r := tp_cal.hf_tp_ratio):
        lines += [f"Under tp {doc.get('tp')} transformers' host per kernel is scaled by {r:.2f}, the tp plan's over "
                  f"one GPU's as `{comm}` measured it (gpu.tp_host).", ""]
    if tp_cal and (own := tp_cal.hf_tp_family_ratio):
        lines += ["A family whose tp plan gathers its fused projections is priced, in place of its one-GPU ratio "
                  "below, at its own tiny decoder's per kernel under its plan over the sharded Llama's (gpu.tp_host): "
                  + ", ".join(f"{f} {r:.2f}x" for f, r in sorted(own.items())) + ".", ""]
    ratios = run_family_ratios(doc)
    if not families:
        lines += ["Every family priced at the tiny Llama's host per kernel (--no-family-host).", ""]
    elif ratios and host in ("run", "case"):
        lines += ["Each other family's host per kernel is that times its own tiny decoder's per kernel over the tiny "
                  "Llama's, as the validation's own process measured them (before and after the models): "
                  + ", ".join(f"{f} {r:.2f}x" for f, r in sorted(ratios.items())) + ".", ""]
    for rt in dict.fromkeys(r.runtime for r in rows):
        lines += [f"### {rt}", "", "| model | phase | batch | length | cache | measured ms | predicted ms | error | "
                  "target |", "|---|---|---|---|---|---|---|---|---|"]
        for r in (x for x in rows if x.runtime == rt):
            name = r.model + (" *" if r.held_out else "")
            if r.skipped:
                lines.append(f"| {name} | {r.phase} | {r.batch} | {r.length} | {r.cache_len} | skipped: "
                             f"{r.skipped[:60]} | | | |")
                continue
            if r.refused:
                lines.append(f"| {name} | {r.phase} | {r.batch} | {r.length} | {r.cache_len} | {_ms(r.measured_s)} | "
                             f"not modelled | | |")
                continue
            err = "-" if r.error is None else f"{100 * r.error:+.1f}%"
            verdict = "-" if r.target is None else ("ok" if r.ok else "MISS") + f" (±{100 * r.target:.0f}%)"
            lines.append(f"| {name} | {r.phase} | {r.batch} | {r.length} | {r.cache_len} | {_ms(r.measured_s)} | "
                         f"{_ms(r.predicted_s)} | {err} | {verdict} |")
        lines += ["", summary([r for r in rows if r.runtime == rt]), ""]
        lines += loop_lines(doc, [r for r in rows if r.runtime == rt])
    return "\n".join(lines)


def loop_lines(doc: dict, rows: list[Row]) -> list[str]:
    """The decode cases with generate's loop time beside their GPU-only one (validate_hf_llm's ``loop_s_rounds``:
    hf-compiled under tp, whose host issue can outlast the GPU step): the loop against the price."""
    loops = {(c["model"], c["batch"], c.get("context")): statistics.median(c["loop_s_rounds"])
             for c in doc.get("cases", []) if c.get("loop_s_rounds")}
    out = []
    for r in rows:
        loop = loops.get((r.model, r.batch, r.length)) if r.phase == "decode" else None
        if loop and r.predicted_s:
            out.append(f"- {r.model} {r.batch} x {r.length}: generate's loop {loop * 1e3:.3f} ms a step against "
                       f"the GPU's {_ms(r.measured_s)}; the price {_ms(r.predicted_s)} is "
                       f"{100 * (r.predicted_s / loop - 1):+.1f}% off the loop")
    return ["Decode in generate's loop (20 steps without a sync; the price is the GPU's step):", "", *out, ""] if out \
        else []


def summary(rows: list[Row]) -> str:
    """Median and worst |error| per phase and split, then the cases issue 32 targets: how many, median, worst,
    missed (of them held out)."""
    out = []
    for phase in ("prefill", "decode"):
        for held in (False, True):
            errs = [abs(r.error) for r in rows if r.phase == phase and r.held_out == held and r.error is not None]
            if errs:
                out.append(f"- {phase}, {'held-out' if held else 'tuned'} families: {len(errs)} cases, median "
                           f"|error| {100 * statistics.median(errs):.1f}%, max {100 * max(errs):.1f}%")
    targeted = [r for r in rows if r.target is not None and r.error is not None]
    if targeted:
        errs = [abs(r.error) for r in targeted]
        missed = [r for r in targeted if not r.ok]
        out.append(f"- against the target: {len(targeted)} cases, median |error| {100 * statistics.median(errs):.1f}%, "
                   f"worst {100 * max(errs):.1f}%, {len(missed)} missed ({sum(r.held_out for r in missed)} held out)")
    for reason in dict.fromkeys(r.refused for r in rows if r.refused):
        out.append(f"- not modelled ({sum(r.refused == reason for r in rows)} cases, no prediction): {reason}")
    return "\n".join(out)


def kernel_class(name: str) -> str:
    """gemm | attention | other, from the kernel's name. A grouped GEMM's ``prepare_grouped_gemm_data`` (its
    problem sizes and pointers, written before each ``torch._grouped_mm``) is not a GEMM: the lowering prices it
    within the grouped GEMM's curve."""
    n = name.lower()
    if "prepare_grouped_gemm_data" in n:
        return "other"
    if re.search(r"fmha|flash|attention|attn", n):
        return "attention"
    if re.search(r"gemm|gemv|cutlass|nvjet|xmma|cublas|sm\d+_.*(tensorop|mma)", n):
        return "gemm"
    return "other"


def lowered_classes(ops) -> dict[str, int]:
    out = {"gemm": 0, "attention": 0, "other": 0}
    for o in ops:
        out["gemm" if o.kind == "gemm" else "attention" if o.kind == "attention" else "other"] += 1
    return out


def kernel_lines(doc: dict, sms: int | None = None) -> str:
    """Per model, runtime and phase: kernels lowered vs measured, in total and by class."""
    from hwprobe.errors import NotModelled
    from hwprobe.lowering.llm import Case, Quant, lower_runtime

    cfgs = configs(doc)
    lines = ["| model | runtime | phase | batch x length | kernels lowered / measured | gemm | attention | other |",
             "|---|---|---|---|---|---|---|---|"]
    for k in doc.get("kernels") or []:
        if "error" in k or "total" not in k:
            lines.append(f"| {k.get('model')} | {k.get('runtime')} | {k.get('phase')} | | error: "
                         f"{str(k.get('error'))[:60]} | | | |")
            continue
        case = (Case.prefill if k["phase"] == "prefill" else Case.decode)(k["batch"], k["length"], doc.get("tp", 1))
        try:
            ops = lower_runtime(cfgs[k["model"]], case, Quant(), k["runtime"], sms or doc.get("sms"),
                                k.get("cache_len") if k["runtime"] != "eager" else None)
        except NotModelled:
            lines.append(f"| {k['model']} | {k['runtime']} | {k['phase']} | {k['batch']} x {k['length']} | "
                         f"not modelled / {k['total']} | | | |")
            continue
        low = lowered_classes(ops)
        meas = {"gemm": 0, "attention": 0, "other": 0}
        for r in k["by_name"]:
            meas[kernel_class(r["name"])] += r["count"]
        cells = " | ".join(f"{low[c]} / {meas[c]}" for c in ("gemm", "attention", "other"))
        lines.append(f"| {k['model']} | {k['runtime']} | {k['phase']} | {k['batch']} x {k['length']} | "
                     f"{len(ops)} / {k['total']} | {cells} |")
    return "\n".join(lines)


def routing_lines(doc: dict) -> str:
    """The MoE cases' rows per expert as the validation counted them (tools/validate_hf_llm.py Bench.routing):
    what a grouped expert GEMM's time follows. Empty where no kernel list carries a routing record."""
    lines = []
    for k in doc.get("kernels") or []:
        r = k.get("routing")
        if not r or "layers" not in r:
            continue
        lay = r["layers"]
        span = {key: f"{min(x[key] for x in lay):g}-{max(x[key] for x in lay):g}"
                for key in ("touched", "min", "median", "max")}
        lines.append(f"| {k['model']} | {k['phase']} | {k['batch']} x {k['length']} | {r['experts']} | "
                     f"{span['touched']} | {span['min']} / {span['median']} / {span['max']} | "
                     f"{max(x['cv'] for x in lay):.2f} |")
    if not lines:
        return ""
    return ("\n### MoE routing (rows per expert, over the layers)\n\n| model | phase | batch x length | experts | "
            "touched | rows per touched expert: min / median / max | cv, worst layer |\n|---|---|---|---|---|---|---|\n"
            + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    from hwprobe.errors import InputError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--comm-profile", default=None, help="a tensor-parallel run's collectives: a multigpu profile "
                    "of the node (the all-reduces are priced at zero without one)")
    ap.add_argument("--tuned", default="llama", help="families or models (config names) used to tune the lowering "
                    "(the rest: held out)")
    ap.add_argument("--out", default=None, help="write the Markdown here (default: stdout)")
    ap.add_argument("--host", choices=("case", "run", "profile"), default="case",
                    help="the eager host time: read around each case's rounds (case, where the run has it), the "
                         "validation run's before-and-after reading (run), or the profile's")
    ap.add_argument("--uniform-routing", action="store_true",
                    help="price MoE prefills under uniform routing, not at the rows per expert the validation counted")
    ap.add_argument("--no-family-host", dest="families", action="store_false",
                    help="price every family at the tiny Llama's host per kernel, not at its own tiny decoder's ratio "
                         "to it (the pricing before 2026-11-29)")
    args = ap.parse_args(argv)
    try:
        doc = load_measured(args.measured)
        rows = predict(doc, args.profile, tuned=tuple(x.strip() for x in args.tuned.split(",") if x.strip()),
                       host=args.host, comm=args.comm_profile, routed=not args.uniform_routing, families=args.families)
        md = (table(rows, doc, args.profile, args.host, args.comm_profile, not args.uniform_routing, args.families)
              + "\n### kernels per step\n\n"
              + kernel_lines(doc) + "\n" + routing_lines(doc))
    except InputError as e:
        print(f"compare_hf_llm: error: {e}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(md)
        print(f"wrote {args.out}")
    else:
        print(md, end="")
    targeted = [r for r in rows if r.target is not None and not r.skipped]
    med_ok = True
    for rt in ("hf", "hf-compiled"):
        errs = sorted(abs(r.error) for r in targeted if r.runtime == rt and r.error is not None)
        if errs and errs[len(errs) // 2] > MEDIAN_TARGET:
            med_ok = False
    return 0 if all(r.ok for r in targeted) and med_ok else 1


if __name__ == "__main__":
    sys.exit(main())
