"""hwprobe analyze: a model's layers on the measured roofline (the seeds' analysis, with measured ceilings)."""

from __future__ import annotations

import click

from hwprobe.cli import cli, console
from hwprobe.cli.analyze_llm import llm_options, refuse_llm_options, run_llm
from hwprobe.cli.outputs import show
from hwprobe.vocab import Path


def parse_dims(items) -> dict[str, int]:
    """``NAME=VALUE`` pairs (``--dim``) as a dict; a malformed pair is one line and exit 2."""
    from hwprobe.errors import InputError

    out = {}
    for it in items:
        name, sep, val = it.partition("=")
        if not sep or not name.strip() or not val.strip().isdigit() or int(val) < 1:
            raise InputError(f"--dim {it!r}: expected NAME=VALUE with a positive integer VALUE (e.g. sequence=128)")
        out[name.strip()] = int(val)
    return out


MAX_BATCH = 1_000_000    # past this no layer's tensors fit any device's memory: a typo, not a batch


@cli.command("analyze")
@click.argument("model", required=False)
@click.option("--profile", "profile_path", default=None, type=click.Path(),
              help="Results directory or profile.json whose measured ceilings to use.")
@click.option("--spec", default=None, help="Datasheet entry instead of a profile (hwprobe specs lists them).")
@click.option("--precision", "-p", default="fp32", show_default=True,
              help="fp32, tf32, fp16, bf16, fp8, int8 (storage and math; TF32 stores FP32).")
@click.option("--batch", "-b", default=1, show_default=True, type=click.IntRange(1, MAX_BATCH),
              help=f"Batch size (1 to {MAX_BATCH:,}).")
@click.option("--convention", default="standard", show_default=True, type=click.Choice(["standard", "seed"]),
              help="standard: multiply-add = 2 ops, bytes = weights + inputs + outputs; seed: as the source "
                   "notes' (TensorRT notes) model tables count.")
@click.option("--path", "path", default="auto", show_default=True,
              type=click.Choice(["auto", Path.LIBRARY.value, Path.INSTRUCTION.value, "best"]),
              help="Which measured ceilings: auto = library for conv/GEMM, instruction for pointwise layers.")
@click.option("--level", default="dram", show_default=True, type=click.Choice(["dram", "l2", "auto"]),
              help="Memory slope: DRAM, L2, or auto (L2 where a layer's bytes fit the measured L2).")
@click.option("--times", "times", multiple=True, type=click.Path(),
              help="Measured times to join (trtexec profile/layer info JSON, TensorRT profiler table, PyTorch "
                   "table or chrome trace, nsys cuda_gpu_kern_sum CSV); repeatable.")
@click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE",
              help="Value of a free ONNX input dimension (e.g. --dim sequence=128); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole analysis as JSON.")
@click.option("--csv", "csv_path", default=None, type=click.Path(dir_okay=False), help="Write the layer table.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Draw the layers on the measured roofline (PNG).")
@click.option("--runtime", default=None, type=click.Choice(["graph", "eager", "fused", "hf", "hf-compiled"]),
              help="How the model runs, for the predicted time: graph (a CUDA graph replay; the default for ONNX "
                   "and layer models), eager (each kernel issued by the host), fused (pointwise ops folded into "
                   "their producers, as TensorRT does). An LLM: hf (the default: transformers with a static cache, "
                   "replayed as a CUDA graph), hf-compiled (generate's compiled step), eager (transformers' dynamic "
                   "cache), fused (a serving engine's plan, not validated), graph (the minimal hand-written model).")
@click.option("--layout", default="nhwc", show_default=True, type=click.Choice(["nhwc", "nchw"]),
              help="The memory layout a convolutional model runs in, for the predicted time: nhwc (converted to "
                   "channels-last) or nchw (PyTorch's default; cuDNN transforms around first-layer kernels).")
@click.option("--all", "show_all", is_flag=True, help="Show every layer, not the top 25 of long models.")
@click.option("--wide", "-w", is_flag=True, help="Every table column, whatever the terminal's width.")
@llm_options
def analyze_(model, profile_path, spec, precision, batch, convention, path, level, times, dims, as_json, csv_path,
             plot_path, runtime, layout, show_all, wide, **llm) -> None:
    """Operations, bytes, intensity, attainable rate, bound and time per layer of MODEL (an ONNX file, a layer
    CSV or a built-in name: hwprobe list models), the precision what-if and the top-5 time consumers.
    MODEL may also be an LLM: a Hugging Face config.json or a built-in LLM name (llama-3-8b, ...): time to
    first token and per output token from the measured profile (the --phase ... --runtime options).
    Without MODEL, --times files alone: the kernels against the roofs that apply to them (a times-only view)."""
    from hwprobe.analysis import analyze
    from hwprobe.cli.outputs import PLOT_SUFFIXES, output_file, write_text
    from hwprobe.models.llm import is_llm

    if model is None:
        return _times_only(times, profile_path, as_json, show_all, wide)
    csv_path = output_file(csv_path, "--csv") if csv_path else None           # before any work
    plot_path = output_file(plot_path, "--plot", PLOT_SUFFIXES) if plot_path else None
    if is_llm(model):
        run_llm(model, profile_path, spec, batch, runtime, as_json, str(csv_path) if csv_path else None, show_all,
                llm, wide)
        return
    refuse_llm_options(llm)
    from hwprobe.errors import InputError

    if runtime in ("hf", "hf-compiled"):
        raise InputError(f"--runtime {runtime} applies to an LLM (a config.json or a built-in LLM name)")
    runtime = runtime or "graph"
    from hwprobe.analysis.render import render, to_dict

    a = analyze(model, profile_path, spec=spec, precision=precision, batch=batch, convention=convention,
                path=path, level=level, times=list(times), runtime=runtime, dims=parse_dims(dims), layout=layout)
    if csv_path:
        write_text(csv_path, a.layers.to_csv(index=False), "--csv")
    if plot_path:
        from hwprobe.report.plots.layers import plot_layers

        plot_layers(a, plot_path)
    show(as_json, lambda: to_dict(a), lambda: render(a, console(), show_all, wide), (csv_path, plot_path))


def _times_only(times, profile_path, as_json: bool, show_all: bool, wide: bool = False) -> None:
    from hwprobe.analysis.kernelview import kernel_view, render_kernel_view
    from hwprobe.analysis.timings import parse
    from hwprobe.errors import InputError

    if not times:
        raise InputError("analyze needs a MODEL, or --times FILE for the kernel view without a model")
    prof = None
    if profile_path:
        from hwprobe.profile_build import load_profile

        prof = load_profile(profile_path)
    v = kernel_view([parse(t) for t in times], prof)
    show(as_json, v.to_dict, lambda: render_kernel_view(v, console(), show_all, wide=wide))
