"""hwprobe analyze on an LLM (a config.json or a built-in name): the options, and a thin call into
hwprobe.analysis.llm. Options that only mean something for one kind of model are refused for the other."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import click

from hwprobe.cli import console
from hwprobe.cli.outputs import show, write_text
from hwprobe.errors import InputError
from hwprobe.lowering.llm.graph import KV, WEIGHTS

# option name -> (click declaration kwargs); defaults live in hwprobe.analysis.llm.LLMOptions.
LLM_OPTIONS = {
    "phase": dict(type=click.Choice(["prefill", "decode", "both"]), help="LLM: which phase (default both)."),
    "prompt": dict(type=int, help="LLM: prompt length of the prefill (default 1024)."),
    "context": dict(type=int, help="LLM: context length of a decode step, keys attended (default 1024)."),
    "weights": dict(type=click.Choice([str(w) for w in WEIGHTS]),
                    help="LLM: weight precision (int8/int4 weight-only, fp8 W8A8; default bf16)."),
    "kv": dict(type=click.Choice([str(k) for k in KV]), help="LLM: KV-cache precision (default bf16)."),
    "tp": dict(type=int, help="LLM: tensor-parallel ranks (default 1)."),
    "comm_profile": dict(type=click.Path(exists=True),
                         help="LLM with --tp: a profile whose measured collectives (a multigpu run on this node kind) "
                              "price the all-reduces where --profile has none."),
    "cache_len": dict(type=int, help="LLM, runtimes hf/hf-compiled: the StaticCache's max_cache_len (default: the "
                                     "step's own length; generate sizes it prompt + max_new_tokens - 1)."),
    "routing": dict(type=str, metavar="FILE",
                    help="LLM, an MoE under transformers' runtimes: JSON {\"counts\": [[rows per expert], ...]}, one "
                         "list per MoE layer, for the prefill's grouped expert GEMMs (default: uniform routing)."),
}
ONNX_ONLY = ("precision", "convention", "path", "level", "times", "dims", "layout", "plot_path")
FLAGS = {"plot_path": "--plot", "dims": "--dim"}


def llm_options(f):
    for name, kw in reversed(LLM_OPTIONS.items()):
        f = click.option(f"--{name.replace('_', '-')}", f"llm_{name}", default=None, **kw)(f)
    return f


def refuse_llm_options(llm: dict) -> None:
    given = [f"--{k.replace('_', '-')}" for k in LLM_OPTIONS if llm.get(f"llm_{k}") is not None]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise InputError(f"{', '.join(given)} {verb} to an LLM (a config.json or a built-in LLM name), not this model")


def _refuse_onnx_options() -> None:
    """Every option given that only a layer model (ONNX, CSV, a built-in CNN) reads, named in one line."""
    ctx = click.get_current_context()
    given = [FLAGS.get(n, f"--{n}") for n in ONNX_ONLY
             if ctx.get_parameter_source(n) not in (None, click.core.ParameterSource.DEFAULT)]
    if given:
        hint = " (use --weights)" if "--precision" in given else ""
        verb = "does" if len(given) == 1 else "do"
        raise InputError(f"{', '.join(given)} {verb} not apply to an LLM{hint}")


def write_csv(a, path: str) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["phase", "op", "kind", "count", "shape", "flops", "bytes", "bound", "time_s", "roofline_s"])
    for r in a.phases.values():
        for x in r.rows:
            w.writerow([r.phase, x.group, x.kind, x.count, x.shape, x.flops, x.bytes, x.bound,
                        x.time_s if r.time_s is not None else "", x.roofline_s if r.time_s else ""])
    write_text(Path(path), buf.getvalue(), "--csv")


def run_llm(model, profile_path, spec, batch, runtime, as_json, csv_path, show_all, llm: dict,
            wide: bool = False) -> None:
    from hwprobe.analysis.llm import LLMOptions, analyze, to_dict
    from hwprobe.analysis.llm.render import render

    _refuse_onnx_options()
    if spec:
        raise InputError("an LLM is priced from a measured profile: give --profile, not --spec")
    given = {k.removeprefix("llm_"): v for k, v in llm.items() if v is not None}
    comm = given.pop("comm_profile", None)
    if "routing" in given:
        from hwprobe.lowering.llm.routing import Routing

        given["routing"] = Routing.read(given["routing"])
    if comm and not profile_path:
        raise InputError("--comm-profile adds collectives to a --profile: give --profile too")
    opts = LLMOptions(batch=batch, **given, **({"runtime": runtime} if runtime else {}))
    a = analyze(model, profile_path, opts, comm=comm)
    if csv_path:
        write_csv(a, csv_path)
    show(as_json, lambda: to_dict(a), lambda: render(a, console(), show_all, wide), (csv_path,))
