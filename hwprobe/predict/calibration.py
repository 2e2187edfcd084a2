"""The calibration curves a profile holds (from the 'predict' suite), read into interpolating tables.

- GemmTable: seconds per cuBLAS GEMM over a grid of M x N x K, interpolated in log-log space (time grows as a
  power of each size between grid points). Beyond the largest measured size the time scales linearly (the
  library's rate has reached its plateau there); below the smallest it is held (a floor): both are marked not
  covered.
- MemCurve: seconds per memory-bound kernel against bytes moved, log-log; linear beyond the largest size.
- Floors: the launch figures (graph node, host issue, round trip).

Nothing here is fitted: every number comes from the profile's findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hwprobe.errors import InputError


def _axis_pos(axis: np.ndarray, x: float) -> tuple[int, float, float]:
    """(i, w, scale): x lies between axis[i] and axis[i+1] at log weight w; ``scale`` multiplies the time where x
    is beyond the axis' top (linear growth), 1 inside; below the bottom x is held at the bottom."""
    if x >= axis[-1]:
        return len(axis) - 2, 1.0, x / axis[-1]
    if x <= axis[0]:
        return 0, 0.0, 1.0
    i = int(np.searchsorted(axis, x, side="right") - 1)
    w = (np.log(x) - np.log(axis[i])) / (np.log(axis[i + 1]) - np.log(axis[i]))
    return i, float(w), 1.0


@dataclass
class GemmTable:
    precision: str
    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    log_t: np.ndarray                  # log seconds, NaN where a point failed (filled from neighbours)

    @classmethod
    def from_finding(cls, params: dict) -> GemmTable:
        t = np.array([[[np.nan if x is None else x for x in row] for row in plane] for plane in params["time_s"]],
                     dtype=float)
        if t.ndim != 3 or not np.isfinite(t).any():
            raise InputError(f"GEMM calibration for {params.get('precision')} holds no measured point")
        log_t = np.log(t)
        _fill(log_t, [params["m"], params["n"], params["k"]])
        return cls(params["precision"], np.asarray(params["m"], float), np.asarray(params["n"], float),
                   np.asarray(params["k"], float), log_t)

    def covers(self, m: float, n: float, k: float) -> bool:
        return all(a[0] <= x <= a[-1] for a, x in ((self.m, m), (self.n, n), (self.k, k)))

    def time(self, m: float, n: float, k: float) -> float:
        """Seconds for one (m x k) @ (k x n) GEMM, trilinear in log space over the grid."""
        return _interp(self.log_t, (self.m, self.n, self.k), (m, n, k))[0]


def _fill(log_t: np.ndarray, axes: list) -> None:
    """Missing points (a point pruned from the grid, a failed one, or one past a sweep's size cap) from the measured
    ones: where an axis has measured points on both sides, the log-log line between the nearest two (the
    interpolation by which a pruned point was judged redundant: hwprobe.predict.prune), averaged over such axes;
    the rest repeatedly, along each axis, from the log-log line through the two nearest known points on one side,
    continued (time keeps the power of the size it had there: a corner past the cap is extrapolated, not averaged
    down to its smaller neighbours); where no axis has two, the mean of the nearest neighbours."""
    logs = [np.log(np.asarray(a, float)) for a in axes]
    measured = np.isfinite(log_t)
    if measured.all():
        return
    between = {idx: interpolations(log_t, logs, idx, measured) for idx in zip(*np.nonzero(~measured), strict=True)}
    for idx, values in between.items():
        if values:
            log_t[idx] = float(np.mean(values))
    for _ in range(sum(log_t.shape)):
        bad = ~np.isfinite(log_t)
        if not bad.any():
            return
        for idx in zip(*np.nonzero(bad), strict=True):
            lines, near = [], []
            for ax in range(log_t.ndim):
                for d in (-1, 1):
                    a, b = list(idx), list(idx)
                    a[ax] += d
                    b[ax] += 2 * d
                    if not 0 <= a[ax] < log_t.shape[ax] or not np.isfinite(log_t[tuple(a)]):
                        continue
                    near.append(log_t[tuple(a)])
                    if 0 <= b[ax] < log_t.shape[ax] and np.isfinite(log_t[tuple(b)]):
                        xa, xb, x = logs[ax][a[ax]], logs[ax][b[ax]], logs[ax][idx[ax]]
                        lines.append(log_t[tuple(a)] + (log_t[tuple(a)] - log_t[tuple(b)]) / (xa - xb) * (x - xa))
            if lines or near:
                log_t[idx] = float(np.mean(lines or near))


def interpolations(log_t: np.ndarray, logs: list[np.ndarray], idx: tuple, measured: np.ndarray) -> list[float]:
    """Log time at ``idx`` interpolated log-log, along each axis where ``measured`` has points on both sides of it,
    between the nearest two; ``logs`` are the axes' log sizes."""
    out = []
    for ax in range(log_t.ndim):
        line = tuple(slice(None) if a == ax else idx[a] for a in range(log_t.ndim))
        known = np.flatnonzero(measured[line])
        i = idx[ax]
        lo, hi = known[known < i], known[known > i]
        if lo.size and hi.size:
            lo_i, hi_i = list(idx), list(idx)
            lo_i[ax], hi_i[ax] = lo[-1], hi[0]
            a, b = log_t[tuple(lo_i)], log_t[tuple(hi_i)]
            w = (logs[ax][i] - logs[ax][lo[-1]]) / (logs[ax][hi[0]] - logs[ax][lo[-1]])
            out.append(float(a + w * (b - a)))
    return out


@dataclass
class MemCurve:
    kind: str
    bytes: np.ndarray
    time_s: np.ndarray

    @classmethod
    def from_finding(cls, params: dict) -> MemCurve:
        b, t = np.asarray(params["bytes"], float), np.asarray(params["time_s"], float)
        order = np.argsort(b)
        return cls(params["kind"], b[order], t[order])

    def covers(self, nbytes: float) -> bool:
        return nbytes <= self.bytes[-1]

    def time(self, nbytes: float) -> float:
        if nbytes <= self.bytes[0]:
            return float(self.time_s[0])
        if nbytes >= self.bytes[-1]:
            return float(self.time_s[-1] * nbytes / self.bytes[-1])
        return float(np.exp(np.interp(np.log(nbytes), np.log(self.bytes), np.log(self.time_s))))


@dataclass
class SdpaTable:
    """A framework's fused attention: seconds per call over (batch x heads, sequence) per head size and causality,
    interpolated log-log; beyond the measured batch it scales linearly, beyond the sequence quadratically."""

    points: list[dict]
    _grids: dict = field(default_factory=dict, repr=False, compare=False)

    def time(self, bh: float, seq: float, dim: int, causal: bool) -> tuple[float, bool] | None:
        dims = sorted({p["dim"] for p in self.points})
        if not dims:
            return None
        d = min(dims, key=lambda x: abs(np.log(x / max(dim, 1))))
        key = (d, bool(causal))
        if key not in self._grids:
            self._grids[key] = _grid([p for p in self.points if p["dim"] == d and bool(p["causal"]) == key[1]],
                                     ("bh", "seq"))
        if self._grids[key] is None or len(self._grids[key][0][1]) < 2:
            return None
        axes, log_t = self._grids[key]
        t, covered = _interp(log_t, axes, (bh, seq, 1.0))
        return t * max(1.0, seq / axes[1][-1]), covered and d == dim     # attention grows as seq^2 past the grid


STEM_CIN = 8     # C_in below this is a first-layer (stem) convolution on an image's channels


@dataclass
class ConvTable:
    """A framework's convolutions (cuDNN through PyTorch): seconds over output pixels x C_in x C_out, for 1x1 and
    3x3 kernels at stride 1, interpolated log-log on the measured grid (3x3 at C = sqrt(C_in x C_out)); and the
    stem convolutions (C_in = 3) by kernel and stride, over output pixels (the nearest measured C_out, scaled).
    Each point names its layout (nhwc or nchw; none: nhwc), and a layout is priced only from its own points; NCHW
    points of several images (``images``) price convolutions of batched models. Depthwise points (``dw``) over
    output pixels x channels, by kernel, stride and layout."""

    points: list[dict]
    _cache: dict = field(default_factory=dict, repr=False, compare=False)   # built grids, the layout set

    def time(self, m: float, cin: float, cout: float, k: int, stride: int = 1, layout: str = "nhwc",
             images: int = 1) -> tuple[float, bool] | None:
        if cin < STEM_CIN:
            return self._stem(m, cin, cout, k, stride, layout)
        if k not in (1, 3):
            return None
        if (k, layout) not in self._cache:
            self._cache[(k, layout)] = self._dense(k, layout)
        single, batched = self._cache[(k, layout)]
        grid = batched if images > 1 and batched is not None else single
        if grid is None:
            return None
        axes, log_t = grid
        return _interp(log_t, axes, (m, cin, cout) if k == 1 else (m, (cin * cout) ** 0.5, 1.0))

    def _dense(self, k: int, layout: str) -> tuple:
        """The 1x1/3x3 grids of one layout: one image per point, and (NCHW) several, kept apart because cuDNN
        transforms NCHW data around a convolution of several images and not around a one-image 1x1 (a GEMM)."""
        single: list[dict] = []
        batched: list[dict] = []
        for p in self.points:
            if p["k"] == k and p.get("stride", 1) == 1 and p["cin"] >= STEM_CIN and not p.get("dw") \
                    and p.get("layout", "nhwc") == layout:
                (batched if layout == "nchw" and p.get("images", 1) > 1 else single).append(p)
        keys = ("m", "cin", "cout") if k == 1 else ("m", "cin")
        return _grid(single, keys), _grid(batched, keys) if batched else None

    def dw_time(self, m: float, channels: float, k: int, stride: int, layout: str = "nhwc",
                images: int = 1) -> tuple[float, bool] | None:
        """A depthwise convolution from the depthwise points (output pixels x channels) of its kernel, stride,
        layout and image regime (one image, or several: the points hold several images per pixel count where
        they can, so a one-image layer is priced only from one-image points); None where none was measured."""
        key = ("dw", k, stride, layout, images > 1)
        if key not in self._cache:
            self._cache[key] = _grid([p for p in self.points if p.get("dw") and p["k"] == k
                                      and p.get("stride", 1) == stride and p.get("layout", "nhwc") == layout
                                      and (images > 1 or p.get("images", 1) == 1)], ("m", "cin"))
        if self._cache[key] is None:
            return None
        axes, log_t = self._cache[key]
        return _interp(log_t, axes, (m, channels, 1.0))

    def layouts(self) -> frozenset[str]:
        """The layouts the 1x1/3x3 table was measured in (points without one are channels-last: older profiles);
        read once, every convolution asks."""
        if "layouts" not in self._cache:
            self._cache["layouts"] = frozenset(p.get("layout", "nhwc") for p in self.points
                                               if p["cin"] >= STEM_CIN and not p.get("dw"))
        return self._cache["layouts"]

    def _stem(self, m: float, cin: float, cout: float, k: int, stride: int,
              layout: str) -> tuple[float, bool] | None:
        pts = [p for p in self.points if p["k"] == k and p.get("stride", 1) == stride and p["cin"] == cin
               and p.get("layout", "nhwc") == layout]
        if not pts:
            return None
        c = min({p["cout"] for p in pts}, key=lambda x: abs(np.log(x / max(cout, 1))))
        row = sorted((p["m"], p["time_s"]) for p in pts if p["cout"] == c)
        ms, ts = np.log([r[0] for r in row]), np.log([r[1] for r in row])
        t = float(np.exp(np.interp(np.log(m), ms, ts))) * max(1.0, m / row[-1][0])
        return t * cout / c, c == cout and row[0][0] <= m <= row[-1][0]


def _grid(points: list[dict], keys: tuple[str, ...]) -> tuple[list[list[float]], np.ndarray] | None:
    """Measured points as a log-time grid over ``keys`` (up to three; a missing axis is held at one value), the
    holes filled from their neighbours; None with fewer than two values on the first axis."""
    axes = [sorted({p[k] for p in points}) for k in keys] + [[1.0]] * (3 - len(keys))
    if len(axes[0]) < 2:
        return None
    grid = np.full(tuple(len(a) for a in axes), np.nan)
    for p in points:
        grid[tuple(axes[i].index(p[k]) for i, k in enumerate(keys)) + (0,) * (3 - len(keys))] = np.log(p["time_s"])
    _fill(grid, axes)
    return axes, grid


def _interp(log_t: np.ndarray, axes, xs) -> tuple[float, bool]:
    """Multilinear interpolation of log time in log coordinates over up to three axes (length-1 axes held)."""
    pos = [_axis_pos(np.asarray(a, float), x) if len(a) > 1 else (0, 0.0, 1.0) for a, x in zip(axes, xs, strict=True)]
    acc, scale = 0.0, 1.0
    for (_, _, sc) in pos:
        scale *= sc
    corners = [((0, 1 - w), (1, w)) if len(a) > 1 else ((0, 1.0),) for a, (_, w, _) in zip(axes, pos, strict=True)]
    for c0 in corners[0]:
        for c1 in corners[1]:
            for c2 in corners[2]:
                f = c0[1] * c1[1] * c2[1]
                if f:
                    acc += f * log_t[pos[0][0] + c0[0], pos[1][0] + c1[0], pos[2][0] + c2[0]]
    covered = all(len(a) == 1 or a[0] <= x <= a[-1] for a, x in zip(axes, xs, strict=True))
    return float(np.exp(acc)) * scale, covered


@dataclass
class Calibration:
    """Every curve of one profile. ``missing`` lists what the profile lacks (the predictor says so per kernel)."""

    gemm: dict[str, GemmTable] = field(default_factory=dict)
    align: dict[str, list[dict]] = field(default_factory=dict)
    memory: dict[str, MemCurve] = field(default_factory=dict)
    launch: dict[str, float] = field(default_factory=dict)
    framework: dict[str, MemCurve] = field(default_factory=dict)   # the framework's own kernels (gpu.torch_kernels)
    sdpa: SdpaTable | None = None
    conv: ConvTable | None = None
    switch_s: float = 0.0          # a framework kernel's cost beyond its back-to-back time among other kernels
    eager_op_s: float = 0.0        # the framework's host time per eagerly issued op (0: not measured)
    switch_library_s: float = 0.0  # ... per kernel where library (cuBLAS/cuDNN) and framework kernels alternate
    framework_replay_s: float = 0.0  # the framework's fixed cost of one CUDA-graph replay (0: not measured)
    framework_gemm: dict[str, GemmTable] = field(default_factory=dict)   # the framework's linear layers

    @classmethod
    def of(cls, profile) -> Calibration:
        cal = cls()
        for f in profile.findings:
            metric, params = f.get("metric", ""), f.get("params") or {}
            if metric.startswith("predict.gemm_align."):
                cal.align[metric.rsplit(".", 1)[1]] = list(params.get("points") or [])
            elif metric.startswith("predict.gemm."):
                cal.gemm[metric.rsplit(".", 1)[1]] = GemmTable.from_finding(params)
            elif metric.startswith("predict.memory."):
                cal.memory[params.get("kind") or metric.rsplit(".", 1)[1]] = MemCurve.from_finding(params)
            elif metric == "predict.torch.eager_op_s":
                cal.eager_op_s = float(f.get("value") or 0.0)
            elif metric == "predict.torch.switch_s":
                cal.switch_s = float(f.get("value") or 0.0)
            elif metric == "predict.torch.graph_replay_s":
                cal.framework_replay_s = float(f.get("value") or 0.0)
            elif metric == "predict.torch.switch_library_s":
                cal.switch_library_s = float(f.get("value") or 0.0)
            elif metric.startswith("predict.torch.linear."):
                cal.framework_gemm[params.get("precision") or metric.rsplit(".", 1)[1]] = GemmTable.from_finding(
                    params)
            elif metric == "predict.torch.conv":
                cal.conv = ConvTable(list(params.get("points") or []))
            elif metric == "predict.torch.sdpa":
                cal.sdpa = SdpaTable(list(params.get("points") or []))
            elif metric.startswith("predict.torch."):
                cal.framework[params.get("kind") or metric.rsplit(".", 1)[1]] = MemCurve.from_finding(params)
            elif metric.startswith("predict.launch."):
                cal.launch[metric.rsplit(".", 1)[1]] = float(f.get("value") or params.get("median_s") or 0.0)
        return cal

    @property
    def empty(self) -> bool:
        return not (self.gemm or self.memory)

    def require(self) -> None:
        if self.empty:
            raise InputError("this profile has no prediction calibration (run `hwprobe run --suite predict`, or the "
                             "full suite): predicted times need the measured GEMM and memory-kernel curves")
