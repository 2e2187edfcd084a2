"""The calibration curves of a profile, typed: profile schema v3's ``calibration`` section.

The 'predict' suite's probes (hwprobe.probes.calibration) measure what kernels cost at the shapes models run:
cuBLAS GEMM grids, memory-bound kernel curves, launch floors, and the framework's own kernels, linear layers,
convolutions and attention. Each kind of curve is one frozen dataclass here, and CalibrationSection holds them (by
precision, kernel kind or launch figure where there are several). A probe names its record with ``metric`` (the
names v2 profiles kept these curves under, as findings), hwprobe.profile_build files the record here
(``CalibrationSection.add``), and hwprobe.predict.calibration reads the section into interpolating tables. So the
findings hold only what a reader reads.

Plain data (no numpy, no predictor): hwprobe.profile holds this section without importing hwprobe.predict.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from hwprobe.vocab import Curve

PREFIX = "predict"
# Each curve's record metric; a keyed curve's (several per profile) is this, a dot and its key (a precision, a
# kernel kind or a launch figure). These are the names v2 profiles filed as findings: the migration reads them.
_METRIC: dict[Curve, str] = {
    Curve.GEMM: "predict.gemm", Curve.GEMM_ALIGN: "predict.gemm_align", Curve.MEMORY: "predict.memory",
    Curve.LAUNCH: "predict.launch", Curve.LAUNCH_REPLAY: "predict.launch.graph_replay_s",
    Curve.FRAMEWORK: "predict.torch", Curve.FRAMEWORK_LINEAR: "predict.torch.linear",
    Curve.CONV: "predict.torch.conv", Curve.SDPA: "predict.torch.sdpa",
    Curve.FRAMEWORK_REPLAY: "predict.torch.graph_replay_s", Curve.EAGER: "predict.torch.eager_op_s",
    Curve.SWITCH: "predict.torch.switch_s", Curve.SWITCH_LIBRARY: "predict.torch.switch_library_s",
    Curve.GROUPED_GEMM: "predict.torch.grouped_mm", Curve.TP_HOST: "predict.torch.tp_host",
}
KEYED = frozenset({Curve.GEMM, Curve.GEMM_ALIGN, Curve.MEMORY, Curve.LAUNCH, Curve.FRAMEWORK,
                   Curve.FRAMEWORK_LINEAR})
# Curves added after profile schema v3's first files: a section without one writes no key for it (not null), so
# those files read back as written
LATER = frozenset({Curve.GROUPED_GEMM, Curve.TP_HOST})

# The launch floors (Curve.LAUNCH's keys)
GRAPH_NODE_S, HOST_ISSUE_S, STREAM_S, ROUND_TRIP_S = "graph_node_s", "host_issue_s", "stream_s", "round_trip_s"

# A point's precision from its curve's one dtype (convolution and attention points of older profiles name none)
DTYPE_PRECISION = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "tf32": "tf32", "int8": "int8",
                   "float8_e4m3fn": "fp8"}


def family(curve: Curve) -> str:
    """A curve's metric without its key: what a probe names a skip or an error of the whole family by."""
    return _METRIC[curve]


def metric(curve: Curve, key: str = "") -> str:
    """The metric a probe records ``curve`` (of ``key``: precision, kernel kind, launch figure) under."""
    name = f"{_METRIC[curve]}.{key}" if key else _METRIC[curve]
    if parse(name) != (curve, key):
        raise ValueError(f"{curve} {key!r} names no calibration curve")
    return name


def parse(name: str) -> tuple[Curve, str] | None:
    """(curve, key) of a curve's metric; None for any other metric (a curve's single points included)."""
    for curve, m in _METRIC.items():
        if curve not in KEYED and name == m:
            return curve, ""
    head, _, key = name.rpartition(".")
    for curve in KEYED:
        if key and head == _METRIC[curve]:
            return curve, key
    return None


def curve_id(curve: Curve, key: str = "") -> str:
    """A curve's metric without the "predict." every one starts with: how hwprobe.predict.prune's file names the
    curves it leaves points out of ("memory.norm", "torch.norm")."""
    return metric(curve, key).removeprefix(PREFIX + ".")


def point_metric(curve_metric: str, *parts: object, **dims: object) -> str:
    """The metric of one measured point of a curve: the curve's metric, then ``parts`` (each after a dot), then the
    point's dimensions run together ("predict.gemm.fp16.m1n16k16", "predict.memory.norm.b8192")."""
    name = ".".join([curve_metric, *map(str, parts)])
    return name + "." + "".join(f"{k}{v}" for k, v in dims.items()) if dims else name


def points_with_precision(points: list[dict], dtype: str | None) -> list[dict]:
    """Each point naming its precision (older profiles: the curve's one dtype, FP16 where none)."""
    default = DTYPE_PRECISION.get(dtype or "float16", dtype or "fp16")
    return [p if "precision" in p else {**p, "precision": default} for p in points]


_META = ("probe", "note", "extra", "seconds")


@dataclass(frozen=True, kw_only=True)
class _Curve:
    probe: str = ""                                   # the probe that measured it
    note: str = ""                                    # what it is, in words (the record's notes)
    extra: dict[str, Any] = field(default_factory=dict)   # params it does not name (wall_s, round, rank), as recorded
    # fields added after profiles were written with the curve: left out of to_dict while unset, so those profiles
    # read back as written
    LATER_FIELDS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_params(cls, params: dict[str, Any], *, value: float | None = None, probe: str = "",
                    note: str = "") -> _Curve:
        """The curve of a record's (or a v2 finding's) params; a scalar curve's figure is the record's value."""
        names = {f.name for f in fields(cls)} - set(_META)
        known = {str(k): v for k, v in params.items() if k in names}
        extra = {str(k): v for k, v in params.items() if k not in names}
        if "seconds" in {f.name for f in fields(cls)}:
            known["seconds"] = value
        return cls(**known, probe=str(probe or ""), note=str(note or ""), extra=extra)

    def params(self) -> dict[str, Any]:
        """The params it was recorded with (fields left unset omitted)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _META}
        return {**{k: v for k, v in out.items() if v is not None}, **self.extra}

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in self.LATER_FIELDS or getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> _Curve:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True, kw_only=True)
class GemmGrid(_Curve):
    """Seconds per GEMM over rows (M) x output features (N) x K at one precision, replayed in a CUDA graph: cuBLAS
    gemmEx (gpu.gemm_shapes) or the framework's linear layers. ``time_s[i][j][q]`` is at m[i], n[j], k[q], None
    where not measured (left out as interpolation predicts it, failed, past a size cap): the predictor fills it."""

    precision: str
    m: list[int]
    n: list[int]
    k: list[int]
    time_s: list[list[list[float | None]]]
    api: str | None = None
    variant: str | None = None
    layout: str | None = None
    runtime: str | None = None
    framework: str | None = None
    sm_mhz_median: float | None = None
    pruned: list[list[int]] | None = None            # [M, N, K] left out of the measured grid

    @property
    def points(self) -> int:
        return sum(x is not None for plane in self.time_s for row in plane for x in row)


@dataclass(frozen=True, kw_only=True)
class AlignPoints(_Curve):
    """GEMMs with N or K off a multiple of eight at one precision: each point's misaligned and aligned seconds and
    their ratio, scaled for the extra elements (``factor``)."""

    precision: str
    points: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class KernelCurve(_Curve):
    """Seconds per memory-bound kernel of one kind against the bytes it moves (read + written), in size order,
    replayed in a CUDA graph: hwprobe's own kernels (gpu.mem_kernels) or the framework's (``framework`` named)."""

    kind: str
    bytes: list[float]
    time_s: list[float]
    shapes: list[str] | None = None
    dtype: str | None = None
    runtime: str | None = None
    sm_mhz_median: float | None = None
    framework: str | None = None
    grid: list[dict[str, Any]] | None = None   # a kind whose time is not a function of bytes alone (NCHW bilinear):
    #                                            points of output ``pixels`` per plane x ``planes``, and ``time_s``
    LATER_FIELDS: ClassVar[tuple[str, ...]] = ("grid",)

    @property
    def points(self) -> int:
        return len(self.bytes)


@dataclass(frozen=True, kw_only=True)
class ConvPoints(_Curve):
    """The framework's convolutions: each point names its kernel ``k``, ``cin``, ``cout``, output pixels ``m``,
    ``stride``, ``groups``, ``layout``, ``images``, ``precision`` (older profiles: the one ``dtype``) and
    ``time_s``; ``dw`` marks a depthwise one."""

    points: list[dict[str, Any]]
    framework: str | None = None
    precisions: list[str] | None = None
    layouts: list[str] | None = None
    cudnn_benchmark: bool | None = None
    dtype: str | None = None                      # older profiles: every point's element type
    layout: str | None = None                     # older profiles: a note on the layouts measured


@dataclass(frozen=True, kw_only=True)
class SdpaPoints(_Curve):
    """The framework's fused attention: seconds per call by ``bh`` (batch x heads), ``seq``, head ``dim``,
    ``causal`` and ``precision`` (older profiles: the one ``dtype``)."""

    points: list[dict[str, Any]]
    framework: str | None = None
    precisions: list[str] | None = None
    dtype: str | None = None


@dataclass(frozen=True, kw_only=True)
class GroupedPoints(_Curve):
    """The framework's grouped GEMM (torch._grouped_mm: transformers' MoE experts in a prefill): seconds per call by
    ``experts``, ``rows`` per expert, ``n``, ``k`` and ``precision``."""

    points: list[dict[str, Any]]
    framework: str | None = None
    api: str | None = None


@dataclass(frozen=True, kw_only=True)
class Floor(_Curve):
    """A launch floor in seconds (the median of repeated samples): what every kernel pays whatever its shape."""

    seconds: float | None
    samples_s: list[float] | None = None
    median_s: float | None = None
    min_s: float | None = None
    nodes: int | None = None


@dataclass(frozen=True, kw_only=True)
class ReplayFit(_Curve):
    """The fixed cost of one CUDA-graph replay timed alone (``seconds``): the intercept of the median replay time
    against the graph's node count, beside the slope per node."""

    seconds: float | None
    nodes: list[int] | None = None
    replay_s: list[float] | None = None
    per_node_s: float | None = None
    median_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class EagerCost(_Curve):
    """The framework's host seconds per eagerly issued op (the median over kinds of small ops)."""

    seconds: float | None
    per_op_s: dict[str, float] | None = None
    ops_per_sample: int | None = None
    # transformers' own host seconds per kernel of an eager decode step, with what it came from
    # (hwprobe.probes.calibration.hf_host.measure); None where transformers was not installed, and before 2026-11-28
    transformers: dict[str, Any] | None = None
    LATER_FIELDS: ClassVar[tuple[str, ...]] = ("transformers",)


@dataclass(frozen=True, kw_only=True)
class SwitchCost(_Curve):
    """Seconds a framework kernel costs beyond its back-to-back time when it follows a different kernel."""

    seconds: float | None
    alone_s: list[float] | None = None
    mixed_per_kernel_s: float | None = None
    bytes: int | None = None
    kernels: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class TpHostCost(_Curve):
    """transformers' host seconds per kernel of an eager decode step under its tensor-parallel plan (the tiny Llama
    sharded over ``tp`` GPUs), and ``vs_one_gpu``: that over the same step's on one GPU, timed in turn (the figure the
    predictor scales a one-GPU profile's transformers host by; hwprobe.probes.calibration.tp_host)."""

    seconds: float | None
    tp: int | None = None
    vs_one_gpu: float | None = None
    kernels_per_step: int | None = None
    one_gpu_kernel_s: float | None = None
    one_gpu_kernels_per_step: int | None = None
    step_s: list[float] | None = None
    one_gpu_step_s: list[float] | None = None
    version: str | None = None
    # family -> the same figures of the tiny decoder in that family's classes (hf_host.FAMILIES), and its check
    families: dict[str, dict[str, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class LibrarySwitchCost(_Curve):
    """Seconds per kernel where library (cuBLAS, cuDNN) and framework kernels alternate (the median over pairs)."""

    seconds: float | None
    pairs: dict[str, dict[str, float]] | None = None


CLASS: dict[Curve, type[_Curve]] = {
    Curve.GEMM: GemmGrid, Curve.GEMM_ALIGN: AlignPoints, Curve.MEMORY: KernelCurve, Curve.LAUNCH: Floor,
    Curve.LAUNCH_REPLAY: ReplayFit, Curve.FRAMEWORK: KernelCurve, Curve.FRAMEWORK_LINEAR: GemmGrid,
    Curve.CONV: ConvPoints, Curve.SDPA: SdpaPoints, Curve.FRAMEWORK_REPLAY: ReplayFit, Curve.EAGER: EagerCost,
    Curve.SWITCH: SwitchCost, Curve.SWITCH_LIBRARY: LibrarySwitchCost, Curve.GROUPED_GEMM: GroupedPoints,
    Curve.TP_HOST: TpHostCost,
}


@dataclass
class CalibrationSection:
    """Every calibration curve of one profile, one field per Curve (named as its value)."""

    gemm: dict[str, GemmGrid] = field(default_factory=dict)               # precision -> cuBLAS grid
    gemm_align: dict[str, AlignPoints] = field(default_factory=dict)      # precision -> alignment points
    memory: dict[str, KernelCurve] = field(default_factory=dict)          # kind -> hwprobe's kernels
    launch: dict[str, Floor] = field(default_factory=dict)                # GRAPH_NODE_S, HOST_ISSUE_S, ...
    launch_replay: ReplayFit | None = None
    framework: dict[str, KernelCurve] = field(default_factory=dict)       # kind -> the framework's kernels
    framework_linear: dict[str, GemmGrid] = field(default_factory=dict)   # precision -> its linear layers
    conv: ConvPoints | None = None
    sdpa: SdpaPoints | None = None
    framework_replay: ReplayFit | None = None
    eager: EagerCost | None = None
    switch: SwitchCost | None = None
    switch_library: LibrarySwitchCost | None = None
    grouped_gemm: GroupedPoints | None = None
    tp_host: TpHostCost | None = None

    def put(self, curve: Curve, key: str, c: _Curve) -> None:
        """File ``c`` as ``curve`` (of ``key``); a later one of the same replaces it (the last round's)."""
        if not isinstance(c, CLASS[curve]):
            raise TypeError(f"a {curve} curve is a {CLASS[curve].__name__}, not a {type(c).__name__}")
        if curve in KEYED:
            getattr(self, curve.value)[key] = c
        else:
            setattr(self, curve.value, c)

    def add(self, name: str, value: float | None, params: dict[str, Any] | None, probe: str = "",
            note: str = "") -> bool:
        """File the record (or v2 finding) ``name`` with its value and params; False where ``name`` is no curve's."""
        got = parse(name)
        if got is None:
            return False
        curve, key = got
        self.put(curve, key, CLASS[curve].from_params(params or {}, value=value, probe=probe, note=note))
        return True

    def curves(self) -> Iterator[tuple[Curve, str, _Curve]]:
        """(curve, key, curve data) of every curve held, in Curve order ("" as the key of an unkeyed curve)."""
        for curve in Curve:
            held = getattr(self, curve.value)
            if curve in KEYED:
                yield from ((curve, k, c) for k, c in held.items())
            elif held is not None:
                yield curve, "", held

    @property
    def empty(self) -> bool:
        return next(self.curves(), None) is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for curve in Curve:
            held = getattr(self, curve.value)
            if held is None and curve in LATER:
                continue
            out[curve.value] = ({k: c.to_dict() for k, c in held.items()} if curve in KEYED
                                else held.to_dict() if held is not None else None)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CalibrationSection:
        sec = cls()
        for curve in Curve:
            held = d.get(curve.value)
            if curve in KEYED:
                for k, c in (held or {}).items():
                    sec.put(curve, k, CLASS[curve].from_dict(c))
            elif held is not None:
                sec.put(curve, "", CLASS[curve].from_dict(held))
        return sec

    def summary(self) -> str:
        """One line: what the calibration holds ("" when empty)."""
        def precs(pts) -> str:
            return ", ".join(sorted({p["precision"] for p in pts}))

        parts = []
        if self.gemm:
            parts.append(f"{sum(g.points for g in self.gemm.values())} GEMM points ({', '.join(self.gemm)})")
        if self.gemm_align:
            parts.append(f"{sum(len(a.points) for a in self.gemm_align.values())} alignment points")
        for curves, what in ((self.memory, "kernel curves"), (self.framework, "framework kernel curves")):
            if curves:
                parts.append(f"{len(curves)} {what} ({sum(c.points for c in curves.values())} sizes)")
        if self.launch or self.launch_replay:
            parts.append(f"{len(self.launch) + (self.launch_replay is not None)} launch figures")
        if self.framework_linear:
            parts.append(f"{sum(g.points for g in self.framework_linear.values())} framework linear points "
                         f"({', '.join(self.framework_linear)})")
        for pts, what in ((self.conv, "conv"), (self.sdpa, "SDPA"), (self.grouped_gemm, "grouped GEMM")):
            if pts is not None:
                held = points_with_precision(pts.points, getattr(pts, "dtype", None))
                parts.append(f"{len(pts.points)} {what} points ({precs(held)})")
        costs = [name for name, c in (("replay", self.framework_replay), ("eager", self.eager),
                                      ("switch", self.switch), ("library switch", self.switch_library),
                                      ("tensor-parallel host", self.tp_host)) if c]
        if costs:
            parts.append(f"framework {', '.join(costs)} costs")
        return "calibration: " + ", ".join(parts) if parts else ""


def lift(findings: list[dict[str, Any]]) -> tuple[CalibrationSection, list[dict[str, Any]]]:
    """A v2 profile's findings split in two: its calibration curves filed into a section, and the rest (what a
    reader reads), in their order."""
    sec, rest = CalibrationSection(), []
    for f in findings:
        if not sec.add(str(f.get("metric", "")), f.get("value"), f.get("params"), str(f.get("probe") or ""),
                       str(f.get("text") or "")):
            rest.append(f)
    return sec, rest
