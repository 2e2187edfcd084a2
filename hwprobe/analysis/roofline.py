"""A model on the roofline: per layer the operations, bytes, intensity, the ceiling it meets (measured and
datasheet), its bound and predicted time; totals; the precision what-if; the alignment flags.

Which ceiling a layer meets: GEMM-shaped layers (conv, FC, matmul) run through libraries (cuDNN, cuBLAS,
TensorRT tactics): Tensor Cores at the chosen precision where it has them (FP32 stays on CUDA cores; TF32 is
its Tensor Core mode), on the *library* path. The other layers are pointwise kernels on CUDA cores, on the
*instruction* path. ``path=`` overrides both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hwprobe.analysis.placement import Options, Placement
from hwprobe.analysis.roofs import Source
from hwprobe.errors import InputError
from hwprobe.models import conventions as conv
from hwprobe.models.layers import GEMM_OPS, Layer, Model
from hwprobe.roofline import Roof, RooflineError
from hwprobe.vocab import ExecUnit, Path, Precision

if TYPE_CHECKING:
    import pandas as pd

PRECISIONS = (Precision.FP64, Precision.FP32, Precision.TF32, Precision.FP16, Precision.BF16, Precision.FP8,
              Precision.INT8)
TENSOR_CORE_PRECISIONS = (Precision.FP64, Precision.TF32, Precision.FP16, Precision.BF16, Precision.FP8,
                          Precision.INT8)
# Pointwise layers compute in a CUDA-core precision: FP8 data is converted to FP16, INT8 to INT32 arithmetic.
CUDA_CORE_COMPUTE = {Precision.FP64: Precision.FP64, Precision.FP32: Precision.FP32, Precision.TF32: Precision.FP32,
                     Precision.FP16: Precision.FP16, Precision.BF16: Precision.BF16, Precision.FP8: Precision.FP16,
                     Precision.INT8: Precision.INT32}
# GEMM-shaped layers that can't use Tensor Cores (depthwise) keep INT8 on CUDA cores (dp4a).
CUDA_CORE_GEMM = {**CUDA_CORE_COMPUTE, Precision.INT8: Precision.INT8}
LEVELS = ("dram", "l2", "auto")


@dataclass
class Analysis:
    model: Model
    options: Options
    source_label: str
    layers: pd.DataFrame
    totals: dict[str, Any]
    whatif: pd.DataFrame
    by_precision: dict[str, list[Placement]] = field(default_factory=dict)   # what-if placements per layer
    notes: list[str] = field(default_factory=list)
    timing: Any = None            # hwprobe.analysis.join.Joined, when a times file was given
    source: Source | None = None
    prediction: Any = None        # hwprobe.predict.estimate.Prediction, where the profile holds calibration curves

    @property
    def convention(self) -> conv.Convention:
        return conv.get(self.options.convention)

    def top(self, n: int = 5) -> pd.DataFrame:
        col = "measured_s" if "measured_s" in self.layers and self.layers["measured_s"].notna().any() else "time_s"
        return self.layers.sort_values(col, ascending=False).head(n)


def compute_precision(layer: Layer, precision: str) -> tuple[str, str]:
    """(precision, unit) of the arithmetic: Tensor Cores for GEMM-shaped layers where the precision has them."""
    if layer.tensor_core_capable and precision in TENSOR_CORE_PRECISIONS:
        return precision, ExecUnit.TENSOR_CORE
    if layer.op in ("conv", "convtranspose", "gemm", "matmul"):
        return CUDA_CORE_GEMM[precision], ExecUnit.CUDA_CORE
    return CUDA_CORE_COMPUTE[precision], ExecUnit.CUDA_CORE


def _path(layer: Layer, opts: Options) -> tuple[str, ...]:
    if opts.path != "auto":
        return (opts.path,)
    return (Path.LIBRARY, Path.INSTRUCTION) if layer.op in ("conv", "convtranspose", "gemm", "matmul") else (
        Path.INSTRUCTION, Path.LIBRARY)


def _level(source: Source, opts: Options, nbytes: float) -> str:
    if opts.level != "auto":
        return opts.level
    cap = source.capacity("l2")
    return "l2" if cap and nbytes <= cap else "dram"


# CUDA-core math a profile may lack (no INT32 or DP4A probe ran): the next precision that can do the work
CUDA_CORE_FALLBACK = {Precision.INT32: (Precision.FP32,), Precision.INT8: (Precision.INT32, Precision.FP32),
                      Precision.FP16: (Precision.FP32,), Precision.BF16: (Precision.FP32,)}


def _roof(source: Source, layer: Layer, prec: str, unit: str, opts: Options, level: str) -> tuple[Roof, str]:
    paths = _path(layer, opts)
    precs = (prec,) + (CUDA_CORE_FALLBACK.get(prec, ()) if unit == ExecUnit.CUDA_CORE else ())
    err = None
    for q in precs:
        for i, p in enumerate(paths):
            try:
                r = source.roof(q, unit, p, level)
            except RooflineError as e:
                err = err or e
                continue
            note = f"no {prec} {unit} ceiling: {q} used" if q != prec else (
                f"no {paths[0]} ceiling for {prec} {unit}: {p} used" if i else "")
            return r, note
    if unit == ExecUnit.TENSOR_CORE:     # e.g. a profile without this Tensor Core precision: say so, don't guess
        raise RooflineError(f"{err} (layer {layer.name!r} needs {prec} on Tensor Cores)")
    if unit == ExecUnit.CUDA_CORE and layer.op not in GEMM_OPS:
        for q in precs:         # a profile without CUDA-core probes (the 'predict' suite): pointwise work is
            try:                # memory-bound at any plausible rate, so the precision's best ceiling stands in, said so
                r = source.roof(q, None, "best", level)
            except RooflineError:
                continue
            return r, (f"no {prec} CUDA-core ceiling in this profile: the {r.peak_metric} {r.unit} ceiling stands "
                       "in (an upper bound; the layer's bytes set its time)")
    raise err


def place(source: Source, layer: Layer, precision: str, opts: Options) -> Placement:
    """Put one layer on the roof for ``precision`` (storage and math)."""
    c = conv.get(opts.convention)
    prec, unit = (precision, ExecUnit.CPU) if source.cpu else compute_precision(layer, precision)
    ops, nbytes = float(c.ops(layer)), float(c.bytes(layer, precision))
    level = _level(source, opts, nbytes)
    roof, note = _roof(source, layer, prec, unit, opts, level)
    prec = roof.precision                 # where the profile lacked the math's precision, the one used
    align = source.alignment(prec, layer.align_dims()) if unit == ExecUnit.TENSOR_CORE else None
    peak = roof.peak / align.factor if (align and align.factor and not align.advice_only) else roof.peak
    t_compute, t_memory = ops / peak, nbytes / roof.bandwidth
    bound = "compute" if t_compute >= t_memory and ops > 0 else "memory"
    return Placement(prec, unit, roof.path, level, ops, nbytes, roof, max(t_compute, t_memory), bound, align, note,
                     precision)


def _datasheet_time(source: Source, layer: Layer, p: Placement) -> tuple[float | None, float | None]:
    ds = source.datasheet(p.precision, p.unit, p.path, "dram")
    if ds is None:
        return None, None
    return max(p.ops / ds.peak, p.bytes / ds.bandwidth), ds.attainable(p.ops / p.bytes if p.bytes else 0.0)


def counts(layer: Layer, i: int, c: conv.Convention, precision: str) -> dict[str, Any]:
    """The counting columns of one layer (no ceilings needed)."""
    ops, nbytes = float(c.ops(layer)), float(c.bytes(layer, precision))
    return {
        "index": i, "name": layer.name, "op": layer.op, "source_op": layer.source_op, "modelled": layer.modelled,
        "macs": layer.macs, "ops": ops, "bytes": nbytes, "intensity": ops / nbytes if nbytes else None,
        "weights": layer.weights, "inputs": layer.inputs, "outputs": layer.outputs,
        "cin": layer.cin, "cout": layer.cout, "groups": layer.groups, "note": layer.note,
    }


def _row(layer: Layer, i: int, p: Placement, source: Source, c: conv.Convention, precision: str) -> dict[str, Any]:
    ds_time, ds_att = _datasheet_time(source, layer, p)
    row = counts(layer, i, c, precision)
    row.update({
        "precision": p.precision, "unit": p.unit, "path": p.path, "level": p.level,
        "ceiling": p.roof.peak_metric, "peak": p.roof.peak, "bandwidth": p.roof.bandwidth,
        "attainable": p.ops / p.time_s if p.time_s and p.ops else 0.0,
        "bound": p.bound, "time_s": p.time_s,
        "datasheet_time_s": ds_time, "datasheet_attainable": ds_att,
        "align_factor": p.alignment.factor if p.alignment and not p.alignment.advice_only else None,
        "align": p.alignment.text() if p.alignment else "",
        "align_short": p.alignment.short() if p.alignment else "",
        "note": "; ".join(x for x in (layer.note, p.note) if x),
    })
    return row


def analyze(model: Model, source: Source | None, options: Options | None = None) -> Analysis:
    """The per-layer table, the totals and the precision what-if of ``model`` on ``source``'s ceilings
    (``source=None``: the counting columns only, as the seeds' tables)."""
    import pandas as pd

    opts = options or Options()
    _check(opts)
    c = conv.get(opts.convention)
    if not model.layers:
        raise InputError(f"model {model.name!r} has no layers")
    notes = list(model.notes)
    notes.append(f"convention {c.name}: {c.description}")
    if source is None:
        df = pd.DataFrame([counts(x, i, c, opts.precision) for i, x in enumerate(model.layers)])
        return Analysis(model, opts, "no ceilings (counts only)", df, totals(df), pd.DataFrame(), {}, notes)
    rows = [_row(layer, i, place(source, layer, opts.precision, opts), source, c, opts.precision)
            for i, layer in enumerate(model.layers)]
    df = pd.DataFrame(rows)
    if source.kind == "measured" and opts.path == "auto":
        notes.append("ceilings: GEMM-shaped layers (conv, FC, matmul) on the profile's *library* ceilings "
                     "(cuBLAS/cuBLASLt), pointwise layers on its *instruction* ceilings (--path to change)")
    from hwprobe.analysis.whatif import whatif

    wi, placed = whatif(model, source, opts, place)
    for p, ps in placed.items():
        df[f"whatif_{p}_s"] = [x.time_s for x in ps]
    return Analysis(model, opts, source.label, df, totals(df), wi, placed, notes, source=source)


def _check(opts: Options) -> None:
    conv.get(opts.convention)
    if opts.precision not in PRECISIONS:
        raise InputError(f"unknown precision {opts.precision!r}; precisions: {', '.join(PRECISIONS)}")
    if opts.path not in ("auto", Path.LIBRARY, Path.INSTRUCTION, "best"):
        raise InputError(f"unknown path {opts.path!r}; paths: auto, library, instruction, best")
    if opts.level not in LEVELS:
        raise InputError(f"unknown level {opts.level!r}; levels: {', '.join(LEVELS)}")


def totals(df: pd.DataFrame) -> dict[str, Any]:
    ops, nbytes = float(df["ops"].sum()), float(df["bytes"].sum())
    out = {"layers": int(len(df)), "not_modelled": int((~df["modelled"]).sum()), "macs": int(df["macs"].sum()),
           "ops": ops, "bytes": nbytes, "intensity": ops / nbytes if nbytes else None}
    if "time_s" not in df:
        return out
    t, ds = float(df["time_s"].sum()), df["datasheet_time_s"]
    mem_t = float(df.loc[df["bound"] == "memory", "time_s"].sum())
    out.update({
        "time_s": t, "attainable": ops / t if t else None,
        "datasheet_time_s": float(ds.sum()) if ds.notna().all() else None,
        "memory_bound_time_share": mem_t / t if t else None,
        "misaligned_layers": int(df["align_factor"].notna().sum()),
    })
    return out
