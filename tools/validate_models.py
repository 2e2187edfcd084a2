"""Time real models in PyTorch on the GPU and export the same models to ONNX, so hwprobe's predictions
(`hwprobe analyze MODEL.onnx`) can be set against reality (issue 20). A device-side tool: it needs torch,
torchvision and transformers (the GPU image's), never a dependency of hwprobe. Nothing is downloaded:
every model has random weights built from its config.

    python3 tools/validate_models.py --out DIR            # timing + exports: ~2-3 min on an H200 (see below)
    python3 tools/validate_models.py --out DIR --no-export          # timing only
    python3 tools/validate_models.py --out DIR --quick --no-export  # smoke, ~30 s: batch 1, folded, 5 repeats
    python3 tools/validate_models.py --out DIR --only resnet50,bert_base
    python3 tools/validate_models.py --out DIR --device cpu --no-timing   # every export, FP32, no GPU needed
    python3 tools/validate_models.py --out DIR --device cpu --quick --reps 1 --warmup 0   # CPU check of the paths

What it writes under DIR (two files, so the device returns both):
  validate_models.json    every case: median/p10/p90 of 30 eager forwards and 30 CUDA-graph replays (CUDA
                          events, torch.inference_mode, FP16), the CUDA kernels one forward launches (torch
                          profiler's kineto trace: count, summed GPU time, span, each kernel's name, duration,
                          grid and block), output finiteness, nvidia-smi clocks/power before and after, versions;
  validate_models.tar.gz  that JSON plus onnx/<model>-b<batch>[-dynamo|-torchscript].onnx for every export,
                          weights stripped (see Files below).

Cases (model: batches): resnet50 1,8,64; mobilenet_v2 1,64; resnet18 1,32; vit_b_16 1,32 (torchvision);
bert_base 1,32 (BertModel(BertConfig()), seq 128, no pooler); gpt2 1 (GPT2Model, seq 512); llama_prefill 1,8
and llama_prefill_gqa 1,8 (LlamaModel: d=2048, ffn 8192, 4 layers, 16 heads with 16 or 4 KV heads, vocab
32000, seq 512, input_ids -> last hidden state). Transformers use attn_implementation="sdpa".

CNNs run as an inference deployment runs them: BatchNorm folded into the convolutions with
torch.fx.experimental.optimization.fuse (the ONNX exporter folds BN the same way), NCHW; two extra rows per
batch, labelled by `variant`: the same folded model in channels_last (NHWC, the layout TensorRT and cuDNN's
fast FP16 kernels prefer) and the unfolded model (Conv, BN, ReLU as separate kernels). Before folding, each
CNN's BN statistics are set from one training-mode forward of random images (a random-weight net's
activations would otherwise grow through 50 layers and overflow FP16); cudnn.benchmark is on (a deployment
autotunes).

Timing: eager = the forward called back to back 30 times after 10 warm-ups, one CUDA-event pair around
each (steady-state time per forward, host launch cost included where it dominates); cuda_graph = one forward
captured with torch.cuda.CUDAGraph after warm-up on a side stream, 30 replays, one event pair each. The L2
is not flushed between forwards (a served model runs forwards back to back). Inputs are random (never
zeros) and every output is checked finite. host_syncs_per_forward counts the host synchronisations of one
eager forward (CUDA sync-debug warnings). transformers 5 runs a packed-sequence check with a host sync on
every forward without an attention mask; it is turned off (one prompt per row, as a serving engine's
prefill), and its masking code no longer takes graph capture for tracing (it built an explicit mask there,
so the captured graph ran other kernels than the eager forward), see prefill_as_served; graph_kernels_match
says whether one replay launched as many kernels as one eager forward.

Order: every model is built and timed first, then the exports run in priority order until --budget-s (200 s
from the start) has passed; the rest are recorded as skipped. Priority: each model's preferred exporter at
batch 1, then at its larger batches, then the other exporter. Preferred: TorchScript (dynamo=False, opset 17,
do_constant_folding=True) for CNNs; the dynamo exporter (opset 18, its lowest) for transformers, because its
file carries every tensor's static shape, while the TorchScript graph of a transformers model computes its
Expand/Reshape targets at run time (Shape -> Gather -> Concat) and ONNX shape inference leaves about half of
its layers unshaped (seen on BERT, GPT-2, Llama, ViT exports with the weights present and stripped alike).
Files: onnx/<model>-b<batch>.onnx for CNNs (TorchScript); for transformers onnx/<model>-b<batch>-dynamo.onnx
and onnx/<model>-b<batch>-torchscript.onnx (no plain name: a reader that takes the plain name first falls back
to -dynamo, never to the unshaped TorchScript graph). The batch is a fixed dim (hwprobe analyze --batch does
not rescale these files: use the file of the batch you want).

Export: the model as timed (device, dtype, BN folded): FP16 on CUDA, FP32 on the CPU. Then every tensor
payload over 1 KiB (the weights) is removed; dims and data_type stay, and small tensors (shape constants,
scalars) stay so ONNX shape inference still resolves Reshape; the dynamo exporter's per-node stack traces
are dropped too. The file's metadata says so. Each case and each export runs in its own try/except: an
error is recorded in the JSON and the run goes on. The TorchScript export traces with grad mode on, so
ViT's nn.MultiheadAttention is exported as its MatMul/Softmax path (the timed forward runs PyTorch's fused
inference fast path: the same GEMMs and attention). The JSON and the bundle are rewritten after every model
and every export, so a run stopped at the device's time limit keeps what it had.

Wall time: the first version of this script (timing as now, fewer exports) ran in 93 s on an H200 and 105 s
on an H100 (2026-11-26, the first validation runs, since pruned); this one adds the TorchScript exports that failed
there (ViT, GPT-2, Llama) and dynamo at the larger batches, each 3-11 s on those machines: about 2.5 min.

On --device cpu timings are meaningless (wall-clock, FP32, no CUDA graphs, profiler CPU ops instead of
kernels); the JSON says so. That mode exists to check model building, export and stripping off the GPU.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STRIP_OVER = 1024            # bytes: tensors larger than this lose their payload (hwprobe's own cut-off)
TOP_KERNELS = 400            # kernels kept per profiled forward (all of them for these models)
SMI_FIELDS = ["name", "driver_version", "pstate", "clocks.sm", "clocks.mem", "clocks.max.sm",
              "power.draw", "power.limit", "temperature.gpu", "clocks_event_reasons.active"]


@dataclass
class ModelSpec:
    """One model: how to build it (random weights) and its inputs at a batch."""

    name: str
    family: str                                   # "cnn" or "transformer"
    batches: tuple[int, ...]
    build: Callable[[], Any]
    inputs: Callable[[int], tuple[Any, ...]]      # batch -> example inputs on the CPU (float32 / int64)
    shape_note: str


@dataclass
class Settings:
    device: str
    dtype: Any
    warmup: int
    reps: int
    quick: bool
    export: bool
    dynamo: bool
    export_batches: str
    budget_s: float
    t0: float
    timing: bool = True
    cnn_variants: tuple[str, ...] = ("bn_folded", "bn_folded_nhwc", "unfolded")


# ---------------------------------------------------------------- models

def _images(batch: int):
    import torch

    return (torch.randn(batch, 3, 224, 224),)


def _tokens(seq: int, vocab: int):
    def make(batch: int):
        import torch

        return (torch.randint(1, vocab, (batch, seq), dtype=torch.long),)   # token 0 never: no zeros
    return make


class LastHidden:
    """Wraps a transformers model so its forward takes input_ids and returns the last hidden state tensor."""

    @staticmethod
    def wrap(model):
        import torch

        class _Wrap(torch.nn.Module):
            def __init__(self, m) -> None:
                super().__init__()
                self.m = m

            def forward(self, input_ids):
                return self.m(input_ids=input_ids).last_hidden_state

        return _Wrap(model)


def _tv(name: str):
    def build():
        import torchvision

        return getattr(torchvision.models, name)(weights=None)
    return build


def _bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig()
    cfg._attn_implementation = "sdpa"
    return LastHidden.wrap(BertModel(cfg, add_pooling_layer=False))


def _gpt2():
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(use_cache=False)
    cfg._attn_implementation = "sdpa"
    return LastHidden.wrap(GPT2Model(cfg))


def _llama(kv_heads: int):
    def build():
        from transformers import LlamaConfig, LlamaModel

        cfg = LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=4, num_attention_heads=16,
                          num_key_value_heads=kv_heads, vocab_size=32000, max_position_embeddings=2048,
                          use_cache=False)
        cfg._attn_implementation = "sdpa"
        return LastHidden.wrap(LlamaModel(cfg))
    return build


def prefill_as_served() -> str:
    """Make transformers run one forward the same way eagerly and under CUDA-graph capture, as a serving engine's
    prefill does (one unpacked prompt per row, no padding, causal or bidirectional attention by SDPA's own flag).

    Two things in transformers 5 break that. (1) Without an attention mask and a cache it looks for packed
    sequences in the position ids on every forward (torch.diff, then `.all()`: a host sync), which has no
    TorchScript ONNX export (aten::diff); returning None is its own answer for unpacked rows. (2) Its masking
    code takes CUDA stream capture for tracing (is_tracing) and then builds an explicit mask (mask kernels, and
    SDPA's masked kernel instead of flash attention), so a captured graph ran other kernels than the eager
    forward (an H200 run of 5.17: BERT 386 kernels captured vs 163 eager; Llama 207 vs 181). During capture
    it now answers as outside capture; a data-dependent check that then syncs fails the capture loudly.
    """
    try:
        import torch
        from transformers import masking_utils
    except ImportError as e:
        return f"transformers unavailable: {e}"
    done = []
    if hasattr(masking_utils, "find_packed_sequence_indices"):
        masking_utils.find_packed_sequence_indices = lambda position_ids: None
        done.append("find_packed_sequence_indices -> None")
    traced = getattr(masking_utils, "is_tracing", None)
    if traced is not None:
        def is_tracing(tensor=None) -> bool:
            if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
                return bool(torch.jit.is_tracing() or torch.compiler.is_compiling())
            return traced(tensor)
        masking_utils.is_tracing = is_tracing
        done.append("is_tracing ignores CUDA stream capture")
    return "transformers.masking_utils: " + ("; ".join(done) or "nothing to patch in this version")


def model_specs() -> list[ModelSpec]:
    img = "input [B,3,224,224]"
    return [
        ModelSpec("resnet50", "cnn", (1, 8, 64), _tv("resnet50"), _images, img),
        ModelSpec("mobilenet_v2", "cnn", (1, 64), _tv("mobilenet_v2"), _images, img),
        ModelSpec("resnet18", "cnn", (1, 32), _tv("resnet18"), _images, img),
        ModelSpec("vit_b_16", "transformer", (1, 32), _tv("vit_b_16"), _images, img),
        ModelSpec("bert_base", "transformer", (1, 32), _bert, _tokens(128, 30522), "input_ids [B,128]"),
        ModelSpec("gpt2", "transformer", (1,), _gpt2, _tokens(512, 50257), "input_ids [B,512]"),
        ModelSpec("llama_prefill", "transformer", (1, 8), _llama(16), _tokens(512, 32000),
                  "input_ids [B,512], 16 KV heads"),
        ModelSpec("llama_prefill_gqa", "transformer", (1, 8), _llama(4), _tokens(512, 32000),
                  "input_ids [B,512], 4 KV heads (GQA)"),
    ]


def calibrate_bn(model, device: str) -> None:
    """Set every BatchNorm's running statistics from one training-mode forward of random images."""
    import torch

    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None                    # cumulative average: one batch sets the statistics exactly
    model.train()
    with torch.no_grad():
        model(torch.randn(16, 3, 224, 224, device=device))
    model.eval()


def cnn_variants(model, st: Settings) -> list[tuple[str, Any, bool]]:
    """(variant, module, channels_last) per CNN row: BN folded (primary), folded NHWC, unfolded (those of
    st.cnn_variants). A model torch.fx cannot trace is timed as built under the folded names (BN left where it
    is, as the ONNX exporter leaves BN it cannot fold), said so in the row's variant_note."""
    import copy

    from torch.fx.experimental.optimization import fuse

    try:
        folded = fuse(copy.deepcopy(model).eval())
    except Exception as e:          # data-dependent control flow, dict outputs fx cannot trace
        folded = copy.deepcopy(model).eval()
        folded.variant_note = f"not folded (torch.fx: {type(e).__name__})"
    rows = [("bn_folded", folded, False), ("bn_folded_nhwc", copy.deepcopy(folded), True),
            ("unfolded", model, False)]
    rows = [r for r in rows if r[0] in st.cnn_variants]
    return rows if not st.quick else rows[:1]


# ---------------------------------------------------------------- timing

def _stats(ms: list[float]) -> dict:
    q = statistics.quantiles(ms, n=10, method="inclusive") if len(ms) > 1 else [ms[0]] * 9
    return {"median_ms": round(statistics.median(ms), 5), "p10_ms": round(q[0], 5), "p90_ms": round(q[8], 5),
            "min_ms": round(min(ms), 5), "n": len(ms)}


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn: Callable[[], Any], st: Settings) -> dict:
    """Median/p10/p90 of st.reps calls back to back, one CUDA-event pair each (wall clock on the CPU)."""
    import torch

    _sync(st.device)
    ms: list[float] = []
    t0 = time.perf_counter()
    if st.device == "cuda":
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(st.reps)]
        for a, b in ev:
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        ms = [a.elapsed_time(b) for a, b in ev]
    else:
        for _ in range(st.reps):
            t = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t) * 1e3)
    out = _stats(ms)
    out["host_ms_per_call"] = round((time.perf_counter() - t0) * 1e3 / st.reps, 5)
    return out


def capture_graph(fn: Callable[[], Any]):
    """One forward captured as a CUDA graph after three warm-up forwards on a side stream."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    torch.cuda.synchronize()
    return g, out


def _kernel_row(e: dict, t0: float) -> list:
    a = e.get("args", {})
    return [e.get("name", "")[:160], round(float(e.get("dur", 0.0)), 3), a.get("grid"), a.get("block"),
            round(float(e["ts"]) - t0, 3)]


def kernel_profile(fn: Callable[[], Any], device: str) -> dict:
    """The kernels one call launches, from the profiler's kineto trace (CPU ops in CPU mode)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    _sync(device)
    with profile(activities=acts) as prof:
        fn()
        _sync(device)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    cat = "kernel" if device == "cuda" else "cpu_op"
    kern = sorted((e for e in events if e.get("cat") == cat and e.get("ph") == "X"), key=lambda e: e["ts"])
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
    out: dict[str, Any] = {"source": f"torch.profiler kineto trace, cat={cat!r}", "count": len(kern),
                           "sum_us": round(sum(float(e.get("dur", 0)) for e in kern), 3)}
    if gpu:
        out["span_us"] = round(max(e["ts"] + e.get("dur", 0) for e in gpu) - min(e["ts"] for e in gpu), 3)
        out["memcpy_count"] = sum(e.get("cat") == "gpu_memcpy" for e in gpu)
        out["memset_count"] = sum(e.get("cat") == "gpu_memset" for e in gpu)
    out["columns"] = ["name", "duration_us", "grid", "block", "start_us"]     # start: from the first kernel's
    out["kernels"] = [_kernel_row(e, float(kern[0]["ts"])) for e in kern[:TOP_KERNELS]]
    if device != "cuda":
        out["note"] = "CPU mode: nested CPU ops, not kernels; only checks the trace path"
    return out


def count_syncs(fn: Callable[[], Any]) -> int | str:
    """Host synchronisations in one forward, from CUDA sync-debug warnings (0 for a graph-capturable forward)."""
    import torch

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                fn()
            finally:
                torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
    except Exception as e:
        return f"not counted: {_err(e)[:200]}"
    return sum("synchroniz" in str(w.message) for w in caught)


def _finite(out) -> bool:
    import torch

    return bool(torch.isfinite(out.float()).all().item())


def run_case(model, inputs: tuple, st: Settings) -> dict:
    """Eager and CUDA-graph timings, the kernels of one forward of each, output checks."""
    import torch

    row: dict[str, Any] = {}
    with torch.inference_mode():
        fn = lambda: model(*inputs)  # noqa: E731
        for _ in range(st.warmup):
            out = fn()
        _sync(st.device)
        row["eager"] = time_calls(fn, st)
        if st.device == "cuda":
            row["host_syncs_per_forward"] = count_syncs(fn)
        out = fn()
        row["output_shape"] = list(out.shape)
        row["output_finite"] = _finite(out)
        row["kernels_eager"] = kernel_profile(fn, st.device)
        if st.device == "cuda":
            row.update(_graph_part(fn, st, row["kernels_eager"]["count"]))
    return row


def _graph_part(fn: Callable[[], Any], st: Settings, eager_kernels: int) -> dict:
    import torch

    part: dict[str, Any] = {}
    try:
        g, out = capture_graph(fn)
        for _ in range(st.warmup):
            g.replay()
        part["cuda_graph"] = time_calls(g.replay, st)
        part["graph_output_finite"] = _finite(out)
        part["kernels_graph"] = kernel_profile(g.replay, st.device)
        part["graph_kernels_match"] = part["kernels_graph"]["count"] == eager_kernels
        del g, out
    except Exception as e:  # a model that cannot be captured still has its eager row
        part["cuda_graph"] = {"error": _err(e)}
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as e:
        part["cuda_after_graph"] = {"error": _err(e)}
    return part


# ---------------------------------------------------------------- export and strip

def _tensors(graph):
    """Every TensorProto in a graph: initializers, Constant values, tensor attributes, subgraphs."""
    yield from graph.initializer
    for sp in graph.sparse_initializer:
        yield sp.values
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from _tensors(a.g)
            for sub in a.graphs:
                yield from _tensors(sub)


def _nodes(graph):
    for node in graph.node:
        yield node
        for a in node.attribute:
            if a.HasField("g"):
                yield from _nodes(a.g)
            for sub in a.graphs:
                yield from _nodes(sub)


def _payload(t) -> int:
    if t.data_location == 1:                      # EXTERNAL: the bytes live in a side file we never read
        return STRIP_OVER + 1
    n = len(t.raw_data)
    for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        n += 8 * len(getattr(t, f))
    return n + sum(len(s) for s in t.string_data)


def strip_weights(src: Path, dst: Path) -> dict:
    """Save src without tensor payloads over STRIP_OVER bytes; dims and data_type stay."""
    import onnx

    m = onnx.load(str(src), load_external_data=False)
    stripped = kept = 0
    for t in _tensors(m.graph):
        if _payload(t) <= STRIP_OVER:
            kept += 1
            continue
        for f in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                  "string_data", "external_data"):
            t.ClearField(f)
        t.data_location = 0
        stripped += 1
    for node in _nodes(m.graph):                  # the dynamo exporter's per-node stack traces: megabytes, unused
        node.ClearField("metadata_props")
        node.ClearField("doc_string")
    meta = m.metadata_props.add()
    meta.key, meta.value = "weights", (f"stripped by tools/validate_models.py: {stripped} tensors over "
                                       f"{STRIP_OVER} B lost their data (dims and data_type kept); random weights")
    onnx.save(m, str(dst))
    return {"tensors_stripped": stripped, "tensors_kept": kept, "bytes": dst.stat().st_size,
            "nodes": len(m.graph.node), "opset": [[o.domain, o.version] for o in m.opset_import]}


def export_one(model, inputs: tuple, name: str, dynamo: bool, work: Path, onnx_dir: Path) -> dict:
    """Export with one exporter to a scratch file, strip it into onnx_dir, drop the scratch."""
    import torch

    in_names = ["input_ids"] if inputs[0].dtype == torch.long else ["input"]
    out_names = ["last_hidden_state"] if in_names == ["input_ids"] else ["output"]
    scratch = work / f"{name}.full.onnx"
    t = time.perf_counter()
    rec: dict[str, Any] = {}
    kw: dict[str, Any] = ({"dynamo": True, "opset_version": 18, "external_data": True} if dynamo else
                          {"dynamo": False, "opset_version": 17, "do_constant_folding": True})
    with torch.inference_mode(False):   # grad mode on: nn.MultiheadAttention's fused fast path has no ONNX export
        torch.onnx.export(model, inputs, str(scratch), input_names=in_names, output_names=out_names, **kw)
    rec["export_s"] = round(time.perf_counter() - t, 2)
    rec["bytes_unstripped"] = sum(p.stat().st_size for p in work.glob(f"{name}.full.onnx*"))
    rec.update(strip_weights(scratch, onnx_dir / f"{name}.onnx"))
    for p in work.glob(f"{name}.full.onnx*"):
        p.unlink()
    return rec


# ---------------------------------------------------------------- orchestration

def _err(e: BaseException) -> str:
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return f"{type(e).__name__}: {str(e)[:600]} | at {tb[-2].strip()[:300] if len(tb) > 1 else ''}"


def _brief(rec: dict) -> str:
    if "error" in rec:
        return "ERROR " + rec["error"][:200]
    if "skipped" in rec:
        return "skipped: " + rec["skipped"]
    return f"{rec.get('export_s')} s, {rec.get('nodes')} nodes, {rec.get('bytes', 0) / 1e3:.0f} kB stripped"


def _log(msg: str) -> None:
    print(msg, flush=True)


def _to_device(inputs: tuple, st: Settings) -> tuple:
    return tuple(x.to(st.device, st.dtype) if x.is_floating_point() else x.to(st.device) for x in inputs)


def _prepared(module, st: Settings, channels_last: bool):
    import torch

    module = module.to(st.device, st.dtype).eval()
    return module.to(memory_format=torch.channels_last) if channels_last else module


def time_model(spec: ModelSpec, model, st: Settings) -> tuple[list[dict], Any]:
    """Every case row of one model (each variant at each batch), and the primary module (the one exported)."""
    import torch

    variants = cnn_variants(model, st) if spec.family == "cnn" else [("default", model, False)]
    rows, primary = [], None
    for variant, module, nhwc in variants:
        module = _prepared(module, st, nhwc)
        primary = module if primary is None else primary
        for b in spec.batches[:1] if st.quick else spec.batches:
            row: dict[str, Any] = {"model": spec.name, "variant": variant, "batch": b, "input": spec.shape_note,
                                   "primary": variant in ("bn_folded", "default")}
            if getattr(module, "variant_note", None):
                row["variant_note"] = module.variant_note
            t = time.perf_counter()
            try:
                inputs = _to_device(spec.inputs(b), st)
                if nhwc:
                    inputs = tuple(x.contiguous(memory_format=torch.channels_last) for x in inputs)
                row.update(run_case(module, inputs, st))
            except Exception as e:
                row["error"] = _err(e)
            row["wall_s"] = round(time.perf_counter() - t, 2)
            rows.append(row)
            _log(f"  {spec.name:18s} {variant:15s} b{b:<3d} " + _row_brief(row))
    return rows, primary


def _row_brief(row: dict) -> str:
    if "error" in row:
        return "ERROR " + row["error"][:200]
    e, g = row.get("eager", {}), row.get("cuda_graph", {})
    gs = f"graph {g['median_ms']:.3f} ms" if "median_ms" in g else f"graph {g.get('error', '-')[:120]}"
    k, kg = row.get("kernels_eager", {}), row.get("kernels_graph", {})
    warn = "  GRAPH RAN OTHER KERNELS" if row.get("graph_kernels_match") is False else ""
    return (f"eager {e.get('median_ms', float('nan')):.3f} ms  {gs}  kernels {k.get('count')}/{kg.get('count', '-')} "
            f"(sum {k.get('sum_us', 0) / 1e3:.3f} ms)  syncs {row.get('host_syncs_per_forward', '-')}  "
            f"finite {row.get('output_finite')}{warn}")


def build_model(spec: ModelSpec, st: Settings):
    """Random weights, built on the timing device (fast init), BN calibrated for CNNs, float32."""
    import torch

    torch.manual_seed(0)
    with torch.device(st.device):
        model = spec.build()
    model = model.to(st.device).eval()
    if spec.family == "cnn":
        calibrate_bn(model, st.device)
    return model


def smi() -> dict:
    """nvidia-smi's clocks, power and throttle reasons now (a dict of field -> text, or the error)."""
    for fields in (SMI_FIELDS, SMI_FIELDS[:-1]):
        try:
            r = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {"error": str(e)}
        if r.returncode == 0:
            vals = [v.strip() for v in r.stdout.splitlines()[0].split(",")] if r.stdout.strip() else []
            return dict(zip(fields, vals, strict=False))
    return {"error": (r.stderr or r.stdout).strip()[:300]}


def environment(st: Settings) -> dict:
    import torch

    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "cuda": torch.version.cuda, "device": st.device,
                           "dtype": str(st.dtype).replace("torch.", ""), "quick": st.quick,
                           "warmup": st.warmup, "reps": st.reps, "host": platform.node()}
    for mod in ("torchvision", "transformers", "onnx", "onnxscript"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as e:
            env[mod] = f"unavailable: {type(e).__name__}"
    if st.device == "cuda":
        p = torch.cuda.get_device_properties(0)
        env.update({"gpu": p.name, "sms": p.multi_processor_count, "gpu_mem_gib": round(p.total_memory / 2**30, 1),
                    "cudnn": torch.backends.cudnn.version(), "cudnn_benchmark": torch.backends.cudnn.benchmark})
    else:
        env["warning"] = ("CPU mode: timings are wall-clock FP32 on the CPU and MEANINGLESS for validation; no CUDA "
                          "graphs, no kernels. This run only checks model building, export and weight stripping.")
    return env


def save_json(doc: dict, out: Path) -> tuple[Path, bytes]:
    """validate_models.json, replaced whole (after every model and export: a run killed at its limit keeps it)."""
    js = out / "validate_models.json"
    data = json.dumps(doc, indent=1, default=str).encode()
    tmp = js.with_suffix(".json.tmp")
    tmp.write_bytes(data)
    tmp.replace(js)
    return js, data


def write_outputs(doc: dict, out: Path, onnx_dir: Path) -> tuple[Path, Path]:
    """The JSON beside the bundle, and the bundle (JSON + stripped ONNX files) as one tar.gz."""
    js, data = save_json(doc, out)
    bundle = out / "validate_models.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        info = tarfile.TarInfo("validate_models.json")
        info.size, info.mtime = len(data), int(time.time())
        tar.addfile(info, io.BytesIO(data))
        for f in sorted(onnx_dir.glob("*.onnx")):
            tar.add(f, arcname=f"onnx/{f.name}")
    return js, bundle


def run_model(spec: ModelSpec, st: Settings) -> tuple[list[dict], dict, Any]:
    """Build and time one model; any failure becomes a record and the run goes on. Returns the module to export."""
    import torch

    info: dict[str, Any] = {"model": spec.name, "family": spec.family, "input": spec.shape_note}
    rows: list[dict] = []
    primary = None
    t = time.perf_counter()
    try:
        model = build_model(spec, st)
        info["params"] = sum(p.numel() for p in model.parameters())
        info["build_s"] = round(time.perf_counter() - t, 2)
        if st.timing:
            rows, primary = time_model(spec, model, st)
        else:                                     # exports only: the module time_model would have exported
            primary = _prepared(cnn_variants(model, st)[0][1] if spec.family == "cnn" else model, st, False)
        del model
    except Exception as e:
        info["error"] = _err(e)
        _log(f"  {spec.name}: ERROR {info['error'][:300]}")
    if st.device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    info["wall_s"] = round(time.perf_counter() - t, 2)
    info["smi_after"] = smi() if st.device == "cuda" else None
    return rows, info, primary


def export_jobs(specs: list[ModelSpec], st: Settings) -> list[tuple[ModelSpec, int, bool]]:
    """(model, batch, dynamo) in priority order: each model's preferred exporter at batch 1, then at its larger
    batches, then the other exporter. Preferred: TorchScript for CNNs; dynamo for transformers, whose file carries
    every shape (the TorchScript graph computes Expand/Reshape targets at run time: hwprobe cannot shape them)."""
    def preferred(s: ModelSpec) -> bool:
        return st.dynamo and s.family == "transformer"

    later = (lambda s: s.batches[1:]) if st.export_batches == "all" else (lambda s: ())
    jobs = [(s, s.batches[0], preferred(s)) for s in specs]
    jobs += [(s, b, preferred(s)) for s in specs for b in later(s)]
    other = [s for s in specs if preferred(s)]
    jobs += [(s, s.batches[0], False) for s in other] + [(s, b, False) for s in other for b in later(s)]
    return jobs


def export_name(spec: ModelSpec, batch: int, dynamo: bool) -> str:
    """<model>-b<batch>: the plain name for CNNs (TorchScript); for transformers a suffix always names the exporter
    (-dynamo, -torchscript), so a reader that takes the plain name first never gets an unshaped TorchScript graph."""
    if dynamo:
        return f"{spec.name}-b{batch}-dynamo"
    return f"{spec.name}-b{batch}" + ("-torchscript" if spec.family == "transformer" else "")


def export_all(specs: list[ModelSpec], modules: dict, st: Settings, work: Path, onnx_dir: Path,
               recs: list[dict], saved: Callable[[], None]) -> None:
    """Every export job into recs, each in its own try/except, saved() after each (the bundle is rewritten: a run
    killed at its limit keeps what it exported); jobs left when --budget-s has passed are recorded as skipped."""
    for spec, b, dyn in export_jobs(specs, st):
        name = export_name(spec, b, dyn)
        rec: dict[str, Any] = {"file": f"onnx/{name}.onnx", "model": spec.name, "batch": b,
                               "exporter": "dynamo" if dyn else "torchscript"}
        if spec.name not in modules:
            continue
        if time.perf_counter() - st.t0 > st.budget_s:
            rec["skipped"] = f"past --budget-s {st.budget_s:.0f} s"
        else:
            try:
                rec.update(export_one(modules[spec.name], _to_device(spec.inputs(b), st), name, dyn, work, onnx_dir))
                rec.update({"batch_dim": "fixed", "dtype": str(st.dtype).replace("torch.", "")})
            except Exception as e:
                rec["error"] = _err(e)
        for p in work.glob("*"):
            p.unlink()
        recs.append(rec)
        saved()
        _log(f"  export {name}: {_brief(rec)}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory for validate_models.json and validate_models.tar.gz")
    ap.add_argument("--quick", action="store_true",
                    help="smoke: batch 1, BN-folded only, 5 repeats, TorchScript exports at batch 1 only")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--dtype", choices=("fp16", "fp32", "bf16"), default=None,
                    help="default fp16 on cuda, fp32 on cpu")
    ap.add_argument("--reps", type=int, default=None, help="timed calls per runtime (default 30, quick 5)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed calls first (default 10, quick 2)")
    ap.add_argument("--no-export", action="store_true", help="time only")
    ap.add_argument("--no-timing", action="store_true",
                    help="export only (needs no GPU: --device cpu exports FP32 at no device time)")
    ap.add_argument("--no-dynamo", action="store_true", help="TorchScript exports only")
    ap.add_argument("--export-batches", choices=("all", "first"), default="all",
                    help="TorchScript export at every batch (fixed dims) or the first (batch 1) only")
    ap.add_argument("--budget-s", type=float, default=200.0, help="skip exports still to do after this many s")
    ap.add_argument("--cnn-variants", default="bn_folded,bn_folded_nhwc,unfolded",
                    help="CNN rows to time: any of bn_folded, bn_folded_nhwc, unfolded (the first one given is "
                         "exported)")
    return ap.parse_args(argv)


def settings(a: argparse.Namespace) -> Settings:
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no CUDA device (use --device cpu for the CPU check)")
    if (a.reps is not None and a.reps < 1) or (a.warmup is not None and a.warmup < 0):
        raise ValueError("--reps must be >= 1 and --warmup >= 0")
    variants = tuple(v.strip() for v in a.cnn_variants.split(",") if v.strip())
    bad = [v for v in variants if v not in ("bn_folded", "bn_folded_nhwc", "unfolded")]
    if bad or not variants:
        raise ValueError(f"--cnn-variants: unknown variant {bad[0] if bad else '(none)'!r}")
    dt = a.dtype or ("fp16" if a.device == "cuda" else "fp32")
    return Settings(device=a.device, dtype={"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16}[dt],
                    warmup=a.warmup if a.warmup is not None else (2 if a.quick else 10),
                    reps=a.reps if a.reps is not None else (5 if a.quick else 30), quick=a.quick,
                    export=not a.no_export, dynamo=not (a.no_dynamo or a.quick),
                    export_batches="first" if a.quick else a.export_batches,
                    budget_s=a.budget_s, t0=time.perf_counter(), timing=not a.no_timing, cnn_variants=variants)


def select(only: str, catalogue: Callable[[], list[ModelSpec]] = None) -> list[ModelSpec]:
    specs = (catalogue or model_specs)()
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in {s.name for s in specs}]
    if unknown:
        raise ValueError(f"--only: unknown model {unknown[0]!r} (known: {', '.join(s.name for s in specs)})")
    return [s for s in specs if not names or s.name in names]


def main(argv: list[str] | None = None, catalogue: Callable[[], list[ModelSpec]] | None = None,
         tool: str = "tools/validate_models.py") -> int:
    """``catalogue``: the models to choose from (default: model_specs; tools/zoo_heldout.py passes its own)."""
    a = parse_args(argv)
    try:
        specs = select(a.only, catalogue)
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        if not os.access(out, os.W_OK):
            raise ValueError(f"--out {str(out)!r} is not writable")
        import torch

        st = settings(a)
    except (ValueError, OSError, ImportError) as e:
        print(f"validate_models: {e}", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    for cat in (DeprecationWarning, FutureWarning, torch.jit.TracerWarning):   # exporter noise, hundreds of lines
        warnings.filterwarnings("ignore", category=cat)
    patched = prefill_as_served() if any(s.family == "transformer" for s in specs) else "no transformer model"
    doc: dict[str, Any] = {"tool": tool, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "env": environment(st) | {"transformers_patch": patched},
                           "smi_before": smi() if st.device == "cuda" else None,
                           "models": [], "cases": [], "exports": []}
    _log(f"validate_models: {doc['env'].get('gpu', 'CPU')} torch {torch.__version__} {doc['env']['dtype']} "
         f"reps {st.reps} warmup {st.warmup}" + ("  [CPU: timings meaningless]" if st.device == "cpu" else ""))
    with tempfile.TemporaryDirectory(prefix="validate_models_") as tmp:
        work, onnx_dir = Path(tmp) / "scratch", Path(tmp) / "onnx"
        work.mkdir()
        onnx_dir.mkdir()
        modules = {}
        for spec in specs:
            _log(f"{spec.name}:")
            rows, info, primary = run_model(spec, st)
            doc["cases"] += rows
            doc["models"].append(info)
            if primary is not None:
                modules[spec.name] = primary
            save_json(doc, out)
        doc["smi_after"] = smi() if st.device == "cuda" else None
        doc["timing_wall_s"] = round(time.perf_counter() - st.t0, 1)
        if st.export:
            _log("exports:")
            export_all(specs, modules, st, work, onnx_dir, doc["exports"], lambda: write_outputs(doc, out, onnx_dir))
        doc["wall_s"] = round(time.perf_counter() - st.t0, 1)
        js, bundle = write_outputs(doc, out, onnx_dir)
    bad = sum("error" in r for r in doc["cases"] + doc["exports"] + doc["models"])
    _log(f"wrote {js} and {bundle} ({bundle.stat().st_size / 1e3:.0f} kB) in {doc['wall_s']} s; "
         f"{len(doc['cases'])} cases, {len(doc['exports'])} exports, {bad} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
