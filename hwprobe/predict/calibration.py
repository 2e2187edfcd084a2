"""The calibration curves a profile holds (from the 'predict' suite), read into interpolating tables.

- GemmTable: seconds per cuBLAS GEMM over a grid of M x N x K, interpolated in log-log space (time grows as a
  power of each size between grid points). Beyond the largest measured size the time scales linearly (the
  library's rate has reached its plateau there); below the smallest it is held (a floor): both are marked not
  covered.
- MemCurve: seconds per memory-bound kernel against bytes moved, log-log; linear beyond the largest size.
- Floors: the launch figures (graph node, host issue, round trip).

Nothing here is fitted: every number comes from the profile's typed calibration section (hwprobe.calibration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hwprobe import calibration as C
from hwprobe.calibration import points_with_precision
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
    def of(cls, grid: C.GemmGrid) -> GemmTable:
        t = np.array([[[np.nan if x is None else x for x in row] for row in plane] for plane in grid.time_s],
                     dtype=float)
        if t.ndim != 3 or not np.isfinite(t).any():
            raise InputError(f"GEMM calibration for {grid.precision} holds no measured point")
        log_t = np.log(t)
        _fill(log_t, [grid.m, grid.n, grid.k])
        return cls(grid.precision, np.asarray(grid.m, float), np.asarray(grid.n, float), np.asarray(grid.k, float),
                   log_t)

    @classmethod
    def from_finding(cls, params: dict) -> GemmTable:
        """From a calibration record's params (the GemmGrid's fields, hwprobe.calibration)."""
        return cls.of(C.GemmGrid.from_params(params))

    def covers(self, m: float, n: float, k: float) -> bool:
        return all(a[0] <= x <= a[-1] for a, x in ((self.m, m), (self.n, n), (self.k, k)))

    def floor_s(self) -> float:
        """The fastest GEMM the table measured: the fixed cost every GEMM of this library pays, whatever its size."""
        return float(np.exp(np.nanmin(self.log_t)))

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
    grid: tuple | None = None      # (axes, log time) over output pixels x planes, where the curve has a grid
    broadcast: tuple | None = None  # ... of its points from a 1 x 1 input (``source`` 1), where it has them

    @classmethod
    def of(cls, curve: C.KernelCurve) -> MemCurve:
        b, t = np.asarray(curve.bytes, float), np.asarray(curve.time_s, float)
        order = np.argsort(b)
        pts = list(curve.grid or ())
        grids = [_grid(part, ("pixels", "planes"), 2) if part else None
                 for part in ([p for p in pts if p.get("source", 0) != 1], [p for p in pts if p.get("source") == 1])]
        return cls(curve.kind, b[order], t[order], *grids)

    def grid_time(self, pixels: float, planes: float, source: float = 0.0) -> tuple[float, bool] | None:
        """Seconds at ``pixels`` output pixels per plane x ``planes`` from the curve's grid (log-log, each node held
        at most at the time of a larger one): from a 1 x 1 input (``source`` 1) the points from one where the curve
        has them, else those from larger maps; None without a grid."""
        grid = self.broadcast if source == 1 and self.broadcast is not None else self.grid
        if grid is None or pixels <= 0 or planes <= 0:
            return None
        axes, log_t = grid
        return _interp(log_t, axes, (pixels, planes, 1.0))

    @classmethod
    def from_finding(cls, params: dict) -> MemCurve:
        """From a calibration record's params (the KernelCurve's fields, hwprobe.calibration)."""
        return cls.of(C.KernelCurve.from_params(params))

    def covers(self, nbytes: float) -> bool:
        return nbytes <= self.bytes[-1]

    def floor_s(self) -> float:
        """The fastest kernel of the curve (its smallest sizes): the fixed cost each kernel of this kind pays."""
        return float(self.time_s.min())

    def time(self, nbytes: float) -> float:
        if nbytes <= self.bytes[0]:
            return float(self.time_s[0])
        if nbytes >= self.bytes[-1]:
            return float(self.time_s[-1] * nbytes / self.bytes[-1])
        return float(np.exp(np.interp(np.log(nbytes), np.log(self.bytes), np.log(self.time_s))))


def _one_precision(table, cache: dict, precision: str):
    """``table``'s points of one precision as a table of its own kind, kept in the table's ``cache`` (None without
    any)."""
    key = ("precision", precision)
    if key not in cache:
        pts = _of_precision(table.points, precision)
        cache[key] = type(table)(pts) if pts else None
    return cache[key]


def _of_precision(points: list[dict], precision: str) -> list[dict]:
    return [p for p in points if p.get("precision", "fp16") == precision]


@dataclass
class SdpaTable:
    """A framework's fused attention: seconds per call over (batch x heads, sequence) per head size and causality,
    interpolated log-log; beyond the measured batch it scales linearly, beyond the sequence quadratically. Points
    marked ``masked`` were called with an additive mask of (batch, 1, queries, keys), as transformers calls SDPA
    under a static cache; the others without one. The two never stand in for each other: with a mask PyTorch's
    cuDNN kernel took twice the unmasked time at 4096 tokens on an H200 (profiles/h200-sxm/2026-11-28-sdpa-masked)."""

    points: list[dict]
    _grids: dict = field(default_factory=dict, repr=False, compare=False)

    def floor_s(self) -> float:
        """The fastest call measured: the fixed cost of the framework's fused attention."""
        return _fastest(self.points)

    def only(self, precision: str) -> SdpaTable | None:
        """The table of one precision's points (None without any)."""
        return _one_precision(self, self._grids, precision)

    def time(self, bh: float, seq: float, dim: int, causal: bool, masked: bool = False
             ) -> tuple[float, bool] | None:
        """(seconds, covered) of one call with queries = keys = ``seq``; None without two sequences measured of
        the kind asked for (masked or not)."""
        kind = [p for p in self.points if bool(p.get("masked")) == masked]
        dims = sorted({p["dim"] for p in kind})
        if not dims:
            return None
        d = min(dims, key=lambda x: abs(np.log(x / max(dim, 1))))
        key = (d, bool(causal), masked)
        if key not in self._grids:
            self._grids[key] = _grid([p for p in kind if p["dim"] == d and bool(p["causal"]) == key[1]],
                                     ("bh", "seq"))
        if self._grids[key] is None or len(self._grids[key][0][1]) < 2:
            return None
        axes, log_t = self._grids[key]
        t, covered = _interp(log_t, axes, (bh, seq, 1.0))
        return t * max(1.0, seq / axes[1][-1]), covered and d == dim     # attention grows as seq^2 past the grid


class Uncalibrated(InputError):
    """A precision the profile's calibration has no points for."""

    def __init__(self, precision: str, have: list[str]) -> None:
        self.precision = precision
        super().__init__(f"no predicted time at {precision}: this profile's calibration has no {precision} points "
                         f"(it has {', '.join(have) or 'none'}) and a precision is not priced from another's; "
                         f"{calibration_hint(precision)}")


def calibration_hint(precision: str) -> str:
    """The calibration run that adds ``precision``'s points: the 'predict' suite where its probes list it, else
    what they would need to list."""
    from hwprobe import suites

    try:
        entries = suites.load("predict").entries
    except InputError:
        entries = []
    lists = {e.probe: tuple(e.params.get("precisions") or ()) for e in entries}  # a probe's arguments
    probes = [p for p in ("gpu.torch_kernels", "gpu.gemm_shapes") if precision in lists.get(p, ())]
    if probes:
        return (f"`hwprobe run --suite predict` on this GPU measures {precision} ({' and '.join(probes)}"
                + (", PyTorch installed" if "gpu.torch_kernels" in probes else "") + ")")
    return (f"no calibration run measures {precision} yet: the 'predict' suite's gpu.torch_kernels would need "
            f"{precision} among its precisions")


STEM_CIN = 8     # C_in below this is a first-layer (stem) convolution on an image's channels


@dataclass
class ConvTable:
    """A framework's convolutions (cuDNN through PyTorch), from its measured points, each naming its kernel (``k``),
    ``stride`` (none: 1), ``groups`` (none: 1), layout (nhwc or nchw; none: nhwc), images and precision:

    - dense (groups 1, C_in >= STEM_CIN): seconds over output pixels x C_in x C_out per kernel size, interpolated
      log-log (1x1 over C_in and C_out; larger kernels at C = sqrt(C_in x C_out)), from the points of the asked
      stride where there are some, else of stride 1 at the same output pixels; NCHW points of several images
      price convolutions of batched models (cuDNN transforms NCHW data around those; an NCHW 1x1 stride-1 layer of
      fewer images than they hold is a strided-batched GEMM: affine in images between one image and them);
    - grouped (1 < groups < channels): over output pixels x C x channels per group from grouped points of the kernel;
      ``grouped`` is None without any (the predictor then prices the groups as one batched dense convolution);
    - depthwise (``dw``): over output pixels x channels by kernel, stride, layout and image regime;
    - stems (C_in < STEM_CIN, an image's channels): by kernel and stride over output pixels; a stem never measured
      is priced as the nearest measured one (im2col GEMM shape: K = C_in x k^2, N = C_out) at equal work.

    A layout is priced only from its own points."""

    points: list[dict]
    _cache: dict = field(default_factory=dict, repr=False, compare=False)   # built grids, the layout set

    def floor_s(self, dw: bool = False) -> float:
        """The fastest convolution measured (``dw``: of the depthwise points): the fixed cost of one."""
        return _fastest([p for p in self.points if bool(p.get("dw")) == dw])

    def only(self, precision: str) -> ConvTable | None:
        """The table of one precision's points (points without one are FP16: older profiles); None without any."""
        return _one_precision(self, self._cache, precision)

    def time(self, m: float, cin: float, cout: float, k: int, stride: int = 1, layout: str = "nhwc",
             images: int = 1) -> tuple[float, bool] | None:
        """A dense convolution (or a stem); None where no point of its kernel size was measured. A 1x1 convolution of
        fewer than STEM_CIN input channels is no stem (a squeeze-excitation's expansion, C_in 4 to 6 on a 1 x 1 map):
        the 1x1 grid, its C_in held at the fewest measured (outside the calibration)."""
        if cin < STEM_CIN and k > 1:
            return self._stem(m, cin, cout, k, stride, layout)
        key = ("dense", k, stride, layout)
        if key not in self._cache:
            self._cache[key] = self._dense(k, stride, layout)
        single, batched, many = self._cache[key]
        at = (lambda pixels: (pixels, cin, cout)) if k == 1 else (lambda pixels: (pixels, (cin * cout) ** 0.5, 1.0))
        if k == 1 and stride == 1 and 1 < images < many and single is not None and batched is not None:
            return self._batched_gemm(single, batched, many, m / images, images, at)
        grid = batched if images > 1 and batched is not None else single
        if grid is None:
            return None
        axes, log_t = grid
        return _interp(log_t, axes, at(m))

    @staticmethod
    def _batched_gemm(single, batched, many: int, pixels: float, images: int, at) -> tuple[float, bool]:
        """An NCHW 1x1 stride-1 convolution of fewer images than the batched points hold (``many``, 32): PyTorch
        runs it as one strided-batched GEMM over the images (one nvjet or CUTLASS kernel, no layout transforms),
        a fixed cost and a cost per image. So: affine in the images between the one-image point and the
        ``many``-image point at its pixels per image (ResNet-50's at 8 images, H200, seen: within -14% to +34% of
        each layer's time; scaled by images alone they came out 8-40% short). Read at the layer's total pixels
        instead, the batched grid prices 8 images of 28 x 28 between 32 images of 7 x 7 and 32 of 28 x 28: those
        layers came out 1.4-2.7x their measured 3.8-13.9 us."""
        (a1, t1), (ab, tb) = single, batched
        one, c1 = _interp(t1, a1, at(pixels))
        full, c2 = _interp(tb, ab, at(pixels * many))
        return one + (full - one) * (images - 1) / (many - 1), c1 and c2

    def min_channels(self, k: int, layout: str) -> float | None:
        """The fewest channels (sqrt(C_in x C_out)) among the dense points of kernel ``k`` in ``layout``."""
        cs = [(p["cin"] * p["cout"]) ** 0.5 for p in self.points if _is_dense(p) and p["k"] == k
              and p.get("layout", "nhwc") == layout]
        return min(cs) if cs else None

    def kernels(self) -> frozenset[int]:
        """The dense kernel sizes measured (C_in >= STEM_CIN, groups 1)."""
        if "kernels" not in self._cache:
            self._cache["kernels"] = frozenset(p["k"] for p in self.points if _is_dense(p))
        return self._cache["kernels"]

    def dilated(self, m: float, cin: float, cout: float, dilation: int, layout: str = "nhwc",
                images: int = 1) -> tuple[float, bool] | None:
        """A dilated dense 3x3 convolution (stride 1) from the dilated points of its layout and image regime (a
        one-image layer from one-image points only): per measured dilation over output pixels x sqrt(C_in x C_out),
        log time interpolated over log dilation between the measured dilations either side; past the measured
        ones, the nearest, outside the calibration. None without dilated points. cuDNN runs a dilated convolution
        on other kernels than the undilated one (no Winograd, other implicit-GEMM tilings)."""
        key = ("dilated", layout, images > 1)
        if key not in self._cache:
            pts = self._regime(layout, images, lambda p: p.get("dilation", 1) > 1 and not p.get("dw")
                               and p.get("groups", 1) == 1 and p["k"] == 3)
            by = {d: _over_channels([p for p in pts if p["dilation"] == d]) for d in {p["dilation"] for p in pts}}
            self._cache[key] = {d: g for d, g in sorted(by.items()) if g is not None}
        by = self._cache[key]
        if not by:
            return None
        c = (cin * cout) ** 0.5
        ds = sorted(by)
        lo, hi = _bracket(ds, dilation)
        (t_lo, c_lo), (t_hi, c_hi) = (_interp(by[d][1], by[d][0], (m, c, 1.0)) for d in (lo, hi))
        return log_between(dilation, lo, hi, t_lo, t_hi), c_lo and c_hi and ds[0] <= dilation <= ds[-1]

    def nonsquare(self, m: float, cin: float, cout: float, kh: int, kw: int, layout: str = "nhwc",
                  images: int = 1) -> tuple[float, bool] | None:
        """A dense convolution of a non-square kernel (stride 1) from the points of that kernel (kh x kw: a 1x7
        and a 7x1 run on different kernels), its layout and image regime, over output pixels x sqrt(C_in x C_out);
        None where that kernel was not measured."""
        key = ("nonsquare", kh, kw, layout, images > 1)
        if key not in self._cache:
            self._cache[key] = _over_channels(self._regime(
                layout, images, lambda p: p.get("kw") == kw and p["k"] == kh and p.get("groups", 1) == 1
                and p.get("stride", 1) == 1))
        if self._cache[key] is None:
            return None
        axes, log_t = self._cache[key]
        return _interp(log_t, axes, (m, (cin * cout) ** 0.5, 1.0))

    def _regime(self, layout: str, images: int, keep) -> list[dict]:
        """The points of ``layout`` that ``keep`` takes, for a layer of ``images`` images: a one-image layer from
        one-image points only (cuDNN picks other kernels for one image), a batched one from all."""
        return [p for p in self.points if p.get("layout", "nhwc") == layout and (images > 1 or p.get("images", 1) == 1)
                and keep(p)]

    def _dense(self, k: int, stride: int, layout: str) -> tuple:
        """The grids of one kernel size and layout: one image per point, and (NCHW) several, kept apart because cuDNN
        transforms NCHW data around a convolution of several images and not around a one-image 1x1 (a GEMM). The
        asked stride's points where there are some, else stride 1's (priced at the same output pixels)."""
        pts = [p for p in self.points if _is_dense(p) and p["k"] == k and p.get("layout", "nhwc") == layout]
        strides = {p.get("stride", 1) for p in pts}
        pts = [p for p in pts if p.get("stride", 1) == (stride if stride in strides else 1)]
        single = [p for p in pts if not (layout == "nchw" and p.get("images", 1) > 1)]
        batched = [p for p in pts if layout == "nchw" and p.get("images", 1) > 1]
        keys = ("m", "cin", "cout") if k == 1 else ("m", "cin")
        counts = {p["images"] for p in batched}
        many = counts.pop() if len(counts) == 1 else 0      # the generic grid's one count (32); older grids mixed them
        return _grid(single, keys), _grid(batched, keys) if batched else None, many

    def grouped(self, m: float, channels: float, groups: int, k: int, layout: str = "nhwc",
                images: int = 1) -> tuple[float, bool] | None:
        """A grouped convolution (C_in = C_out = ``channels`` in ``groups`` groups) from the grouped points of its
        kernel and layout (one-image points for a one-image layer), over pixels x channels x channels per group;
        None without any.

        Channels per group, not the group count, is the third axis: cuDNN's grouped kernels are chosen by the
        width of a group. Each point left out of the generic grids and priced from the rest lands a median 10-28%
        from its time this way, 20-52% over pixels x channels x groups (H200 and H100 profiles of 2026-11-27, every
        layout and image regime). A width that is not a power of two (RegNet's 24, 48, 120) runs on other, slower
        kernels (grids.CPG_ODD): it is priced from the points of such widths only, and where the profile has none,
        from the power-of-two ones, outside the calibration (``covered`` False)."""
        odd = not pow2(channels / groups)
        got = self._grouped_grid(k, layout, images, odd)
        if got is None and odd:
            got = self._grouped_grid(k, layout, images, False)
            if got is None:
                return None
            t, _ = _interp(got[1], got[0], (m, channels, channels / groups))
            return t, False
        if got is None:
            return None
        return _interp(got[1], got[0], (m, channels, channels / groups))

    def has_grouped_odd(self, k: int, layout: str) -> bool:
        """Whether the profile measured grouped points of ``k`` at widths that are not powers of two (read once;
        every grouped layer asks)."""
        key = ("has_grouped_odd", k, layout)
        if key not in self._cache:
            self._cache[key] = any(p["k"] == k and 1 < p.get("groups", 1) < p["cin"] and not p.get("dw")
                                   and not pow2(p["cin"] / p["groups"]) and p.get("layout", "nhwc") == layout
                                   for p in self.points)
        return self._cache[key]

    def _grouped_grid(self, k: int, layout: str, images: int, odd: bool):
        key = ("grouped", k, layout, images > 1, odd)
        if key not in self._cache:
            pts = [dict(p, cpg=p["cin"] / p["groups"]) for p in self._regime(
                layout, images, lambda p: p["k"] == k and 1 < p.get("groups", 1) < p["cin"] and not p.get("dw")
                and pow2(p["cin"] / p["groups"]) != odd)]
            self._cache[key] = _grid(pts, ("m", "cin", "cpg"), 2) if pts else None
        return self._cache[key]

    def dw_time(self, m: float, channels: float, k: int, stride: int, layout: str = "nhwc",
                images: int = 1, dilation: int = 1) -> tuple[float, bool] | None:
        """A depthwise convolution from the depthwise points (output pixels x channels) of its kernel, stride,
        dilation and layout; None where none was measured. A one-image layer from one-image points; a layer of
        more images than any point holds from all but the few-image points, at its total pixels; a layer of a few
        images (between one and the most measured), where the profile measured an image count between those, by
        log time over log images between the measured image counts either side, each read at the layer's pixels
        per image: cuDNN's time follows images x side, not pixels alone (channels-last dilated 5x5, 960 channels,
        H200: 8 images of 14 x 14 took 144 us, 32 images of 7 x 7 with the same pixels 103 us)."""
        counts = sorted({p.get("images", 1) for p in self._dw_points(k, stride, layout, dilation)})
        if not counts:
            return None
        few = [n for n in counts if 1 < n < counts[-1]]
        lo, hi = _bracket(counts, images)
        ends = sorted({lo, hi})
        grids = [(self._dw_grid(k, stride, layout, dilation, n, few), n) for n in ends]
        per_image = m / max(images, 1)
        # the few-image rule only inside both image counts' measured maps: past them (a detector's 256 x 256 maps)
        # the GPU is full and time follows total pixels
        if images <= 1 or images >= counts[-1] or not few or any(
                g is None or not g[0][0][0] <= per_image * n <= g[0][0][-1] for g, n in grids):
            regime = 1 if images <= 1 else 0            # 0: every image count but the few-image ones
            return self._dw_read(self._dw_grid(k, stride, layout, dilation, regime, few), m, channels)
        got = [self._dw_read(g, per_image * n, channels) for g, n in grids]
        if len(got) == 1:
            return got[0]
        return log_between(images, lo, hi, got[0][0], got[1][0]), got[0][1] and got[1][1]

    def _dw_points(self, k: int, stride: int, layout: str, dilation: int) -> list[dict]:
        """The depthwise points of one kernel, stride, layout and dilation (every image count)."""
        key = ("dw_points", k, stride, layout, dilation)
        if key not in self._cache:
            self._cache[key] = [p for p in self.points if p.get("dw") and p["k"] == k and p.get("stride", 1) == stride
                                and p.get("dilation", 1) == dilation and p.get("layout", "nhwc") == layout]
        return self._cache[key]

    def _dw_grid(self, k: int, stride: int, layout: str, dilation: int, images: int, few: list[int]):
        """The depthwise grid over output pixels x channels of one image count (``images``; 0: all but ``few``)."""
        key = ("dw", k, stride, layout, dilation, images)
        if key not in self._cache:
            self._cache[key] = _grid([p for p in self._dw_points(k, stride, layout, dilation)
                                      if (p.get("images", 1) == images if images else p.get("images", 1) not in few)],
                                     ("m", "cin"), 2)
        return self._cache[key]

    @staticmethod
    def _dw_read(grid, m: float, channels: float) -> tuple[float, bool] | None:
        if grid is None:
            return None
        axes, log_t = grid
        cs = axes[1]
        if channels <= cs[-1] or len(cs) < 2:
            return _interp(log_t, axes, (m, channels, 1.0))
        # past the most channels measured: the power of the channels the last measured step had (0 to 1), not
        # linear growth. A small map is latency-bound: one-image 3x3 points at 7 x 7 take 2.6, 2.7, 2.8 us at 32,
        # 128, 512 channels (linear past 512 gave MobileNetV2's 960-channel layers 5.3 us; they ran in 2.4 us).
        # With the top channel count left out of each depthwise family, linear growth prices it a median 83-88% too
        # slow, this rule 17-18% too fast (H200, H100 generic grids)
        top, prev = (_interp(log_t, axes, (m, c, 1.0))[0] for c in (cs[-1], cs[-2]))
        power = min(1.0, max(0.0, float(np.log(top / prev) / np.log(cs[-1] / cs[-2]))))
        return top * (channels / cs[-1]) ** power, False

    def layouts(self) -> frozenset[str]:
        """The layouts the dense table was measured in (points without one are channels-last: older profiles);
        read once, every convolution asks."""
        if "layouts" not in self._cache:
            self._cache["layouts"] = frozenset(p.get("layout", "nhwc") for p in self.points if _is_dense(p))
        return self._cache["layouts"]

    def _stem(self, m: float, cin: float, cout: float, k: int, stride: int,
              layout: str) -> tuple[float, bool] | None:
        """A stem from the points of its kernel, stride and C_in (the nearest measured C_out, scaled); a stem never
        measured from the measured stem nearest in im2col GEMM shape (log K = C_in x k^2, log N = C_out) at equal
        multiply-adds (its output pixels scaled by the ratio of K x N), outside the calibration."""
        stems = [p for p in self.points if p["cin"] < STEM_CIN and p.get("layout", "nhwc") == layout]
        pts = [p for p in stems if p["k"] == k and p.get("stride", 1) == stride and p["cin"] == cin]
        if pts:
            c = min({p["cout"] for p in pts}, key=lambda x: abs(np.log(x / max(cout, 1))))
            t, inside = _row_time([p for p in pts if p["cout"] == c], m)
            return t * cout / c, c == cout and inside
        if not stems:
            return None
        shape = lambda p: (np.log(p["cin"] * p["k"] ** 2), np.log(p["cout"]))   # noqa: E731
        want = (np.log(cin * k * k), np.log(max(cout, 1)))
        near = min(stems, key=lambda p: (shape(p)[0] - want[0]) ** 2 + (shape(p)[1] - want[1]) ** 2)
        row = [p for p in stems if (p["k"], p.get("stride", 1), p["cin"], p["cout"]) ==
               (near["k"], near.get("stride", 1), near["cin"], near["cout"])]
        scale = (cin * k * k * cout) / (near["cin"] * near["k"] ** 2 * near["cout"])
        return _row_time(row, m * scale)[0], False


def _is_dense(p: dict) -> bool:
    """A point of the dense grids: square, undilated, ungrouped, not a stem (dilated and non-square points have
    grids of their own)."""
    return p["cin"] >= STEM_CIN and not p.get("dw") and p.get("groups", 1) == 1 and p.get("dilation", 1) == 1 \
        and not p.get("kw")


def _over_channels(points: list[dict]):
    """A grid of ``points`` over output pixels x sqrt(C_in x C_out) (None without points)."""
    return _grid([dict(p, c=(p["cin"] * p["cout"]) ** 0.5) for p in points], ("m", "c")) if points else None


def _row_time(row: list[dict], m: float) -> tuple[float, bool]:
    """Seconds at ``m`` output pixels along one measured row (log-log; linear past its end, held below its start),
    and whether ``m`` lies inside it."""
    r = sorted((p["m"], p["time_s"]) for p in row)
    ms, ts = np.log([x[0] for x in r]), np.log([x[1] for x in r])
    t = float(np.exp(np.interp(np.log(m), ms, ts))) * max(1.0, m / r[-1][0])
    return t, r[0][0] <= m <= r[-1][0]


def _fastest(points: list[dict]) -> float:
    """The smallest measured time among ``points`` (0 where none)."""
    return min((float(p["time_s"]) for p in points if p.get("time_s")), default=0.0)


@dataclass
class GroupedTable:
    """A framework's grouped GEMM (torch._grouped_mm: one GEMM per expert over its rows, MoE experts in a prefill):
    seconds per call at experts x rows per expert x N x K. Between and beyond the measured row counts it is priced by
    its efficiency against its roofline (the larger of the FLOPs at the library ceiling and the bytes, every
    expert's weights and its rows in and out, at DRAM speed), interpolated over log rows: at a measured point that
    is the measured time; a shape not measured takes the efficiency of the nearest measured one (log distance over
    experts, N and K) and is marked outside the calibration."""

    points: list[dict]
    _series: dict = field(default_factory=dict, repr=False, compare=False)

    def only(self, precision: str) -> GroupedTable | None:
        """The table of one precision's points (None without any)."""
        return _one_precision(self, self._series, precision)

    def shapes(self) -> dict[tuple[int, int, int], list[tuple[int, float]]]:
        """(experts, n, k) -> its (rows, seconds) in rows' order."""
        if "shapes" not in self._series:
            out: dict[tuple[int, int, int], list[tuple[int, float]]] = {}
            for p in self.points:
                out.setdefault((int(p["experts"]), int(p["n"]), int(p["k"])), []).append(
                    (int(p["rows"]), float(p["time_s"])))
            self._series["shapes"] = {s: sorted(v) for s, v in out.items()}
        return self._series["shapes"]

    @staticmethod
    def bytes(experts: int, rows: float, n: int, k: int, itemsize: int = 2) -> float:
        """What one grouped GEMM moves: every expert's weights, and its rows in and out."""
        return itemsize * experts * (n * k + rows * (n + k))

    @classmethod
    def roof_s(cls, experts: int, rows: float, n: int, k: int, peak: float, dram_bw: float) -> float:
        flops = 2.0 * experts * rows * n * k
        nbytes = cls.bytes(experts, rows, n, k)
        return max(flops / peak if peak else 0.0, nbytes / dram_bw if dram_bw else 0.0)

    def time(self, experts: int, rows: float, n: int, k: int, peak: float, dram_bw: float
             ) -> tuple[float, bool, str] | None:
        """(seconds, covered, note) of one grouped GEMM; None without points or without a roofline to scale by."""
        shapes = self.shapes()
        if not shapes or not (peak or dram_bw):
            return None
        want = (experts, n, k)
        near = min(shapes, key=lambda s: sum(abs(math.log(a / b)) for a, b in zip(s, want, strict=True)))
        series = shapes[near]
        eff = {r: self.roof_s(near[0], r, near[1], near[2], peak, dram_bw) / t for r, t in series}
        lo, hi = _bracket(list(eff), rows)
        e = log_between(rows, lo, hi, eff[lo], eff[hi])
        t = self.roof_s(experts, rows, n, k, peak, dram_bw) / e
        inside = series[0][0] <= rows <= series[-1][0]
        notes = []
        if near != want:
            notes.append(f"no grouped GEMM points at {experts} experts x {n} x {k}: the efficiency of "
                         f"{near[0]} x {near[1]} x {near[2]}")
        if not inside:
            notes.append(f"{rows:.0f} rows an expert, outside the {series[0][0]}-{series[-1][0]} measured: the "
                         "nearest one's efficiency")
        return t, near == want and inside, "; ".join(notes)

    def routed_time(self, counts: tuple[int, ...], n: int, k: int, peak: float, dram_bw: float, l2_bw: float,
                    l2_bytes: float = 0.0) -> tuple[float, bool, str] | None:
        """(seconds, covered, note) of one grouped GEMM at a routing: ``counts`` rows per expert, every expert of the
        layer. The calibration's even point (every expert the mean rows, ``time``) scaled by the kernel's roofline
        at the routing over the same at even rows (grouped_roof_s): the tile shape is the same (PyTorch picks it
        from the mean), so what the routing moves is the tile pairs (a partly filled pair costs a whole one: the
        busiest expert's rows), the weights of the experts touched, and their re-reads where they outgrow L2
        (``l2_bytes``, 0: never)."""
        experts, rows = len(counts), sum(counts)
        got = self.time(experts, rows / experts, n, k, peak, dram_bw)
        if got is None or not rows:
            return got
        t, covered, note = got
        even = [rows // experts + (1 if e < rows % experts else 0) for e in range(experts)]
        scale = (grouped_roof_s(counts, n, k, peak, dram_bw, l2_bw, l2_bytes)
                 / grouped_roof_s(even, n, k, peak, dram_bw, l2_bw, l2_bytes))
        touched = sum(1 for c in counts if c)
        why = (f"routed: {touched} of {experts} experts touched, at most {max(counts)} rows on one: "
               f"{scale:.2f}x the even rows' time")
        return t * scale, covered, "; ".join(x for x in (note, why) if x)


# torch._grouped_mm's tile on sm90 (PyTorch's GroupMM.cu, dispatch_bf16_grouped_kernel_on_tile_size): 64 x 128 (K
# steps of 128, ping-pong) where the mean rows per group (all rows over all groups, empty ones too) or N is 128 or
# less, else 128 x 256 (K steps of 64, cooperative). The tile is chosen from the mean, never from the routing.
GROUPED_SMALL_TILE, GROUPED_LARGE_TILE = (64, 128), (128, 256)
# Both run in clusters of 2 x 1 CTAs (GroupMM.cu's ClusterShape): two M tiles of one expert share each B slab
# (TMA multicast), so an expert's rows are taken 2 x the tile's rows at a time. On an H200 (torch 2.11,
# profiles/h200-sxm/2026-11-29-ab-s39/grouped_shift.jsonl) moving 8 rows from one of Mixtral-8x7B's experts to
# another at 128 rows each (the small tile) took 19-26% longer, and 64 rows at 160 each (the large tile) none.
GROUPED_CLUSTER_M = 2


def grouped_tile(mean_rows: float, n: int) -> tuple[int, int]:
    """(rows, columns) of the output tile torch._grouped_mm runs at ``mean_rows`` rows per group and N = ``n``."""
    return GROUPED_SMALL_TILE if mean_rows <= 128 or n <= 128 else GROUPED_LARGE_TILE


def grouped_roof_s(counts, n: int, k: int, peak: float, dram_bw: float, l2_bw: float, l2_bytes: float = 0.0,
                   itemsize: int = 2) -> float:
    """A grouped GEMM's roofline at a routing, in the kernel's own terms: the larger of (a) the bytes from DRAM, the
    touched experts' weights and every row in and out, and (b) its tile pairs (GROUPED_CLUSTER_M tiles of one
    expert sharing their B slab), each streaming (pair rows + tile columns) x K through L2 and doing a whole pair's
    multiply-adds, whatever rows it holds. An expert whose weights outgrow L2 (``l2_bytes``; 0: never) reads them
    from DRAM again for each further pair of tiles down its rows: the first pass over its columns has evicted them
    (ncu on an H200, Mixtral-8x7B's gate/up at 128 rows an expert: 1.90 GB read at even rows, 2.37 GB where three of
    the eight experts took a third 64-row tile).
    Against the H200's torch._grouped_mm at 556 routings of six expert shapes (s39's random and shifted routings,
    and the 40 seen qwen3-30b-a3b layer GEMMs), this over the even rows' roofline, times the even rows' time, read a
    median error of 6.5%, 19.6% at the 90th percentile, 44% at worst (single tiles: 6.5%, 23.9%, 54%)."""
    experts, rows = len(counts), sum(counts)
    tm, tn = grouped_tile(rows / experts, n)
    pair = GROUPED_CLUSTER_M * tm
    pairs = [math.ceil(c / pair) for c in counts]
    weights = itemsize * n * k
    reread = bool(l2_bytes) and weights > l2_bytes
    reads = sum(pairs) if reread else sum(1 for c in counts if c)
    dram_s = (reads * weights + itemsize * rows * (n + k)) / dram_bw if dram_bw else 0.0
    per_pair = max(itemsize * (pair + tn) * k / l2_bw if l2_bw else 0.0, 2.0 * pair * tn * k / peak if peak else 0.0)
    return max(dram_s, sum(pairs) * math.ceil(n / tn) * per_pair)


def _bracket(xs: list, x: float) -> tuple:
    """The measured values either side of ``x`` in the sorted ``xs`` (the end one twice past either end)."""
    return max((v for v in xs if v <= x), default=xs[0]), min((v for v in xs if v >= x), default=xs[-1])


def log_between(x: float, x0: float, x1: float, t0: float, t1: float) -> float:
    """Log time interpolated over log x between (x0, t0) and (x1, t1) (t0 where x0 == x1): a quantity measured at
    a few values either side (dilations, image counts, kernel taps)."""
    w = 0.0 if x1 == x0 else math.log(x / x0) / math.log(x1 / x0)
    return math.exp((1 - w) * math.log(t0) + w * math.log(t1))


def pow2(n: float) -> bool:
    """Whether ``n`` channels a group is a power of two (cuDNN's fast grouped kernels; other widths run slower)."""
    i = int(n)
    return i == n and i > 0 and not i & (i - 1)


def _grid(points: list[dict], keys: tuple[str, ...], work_axes: int = 0) -> tuple[list[list[float]], np.ndarray] | None:
    """Measured points as a log-time grid over ``keys`` (up to three; a missing axis is held at one value), the
    holes filled from their neighbours; None with fewer than two values on the first axis. ``work_axes``: the
    leading axes along which the work only grows (pixels, channels): there each node is held at most at the
    time of every node with as much or more on all of them (``envelope``)."""
    axes = [sorted({p[k] for p in points}) for k in keys] + [[1.0]] * (3 - len(keys))
    if len(axes[0]) < 2:
        return None
    grid = np.full(tuple(len(a) for a in axes), np.nan)
    for p in points:
        grid[tuple(axes[i].index(p[k]) for i, k in enumerate(keys)) + (0,) * (3 - len(keys))] = np.log(p["time_s"])
    _fill(grid, axes)
    envelope(grid, work_axes)
    return axes, grid


def envelope(log_t: np.ndarray, axes: int) -> None:
    """In place: each node at most the time of any node with as much or more work along each of the first ``axes``
    axes (a reverse running minimum along each). A convolution never needs longer than a larger one of its family:
    the library can run the smaller one with the larger one's algorithm. A measured point above a larger one is
    cudnn.benchmark's pick for that one shape in the calibration (the 3x3 depthwise channels-last one-image points
    of an H200 take 7.5 us at 7 x 7 x 512 and 3.4 us at 28 x 28 x 512), not a cost the shapes around it share.
    Depthwise and grouped grids only: in the dense grids such a point is a cost its neighbours share (the same
    bumps on both GPUs; the 2026-11-26 conv profiles' left-out dense points, recovered within 2% by plain
    interpolation, come out 8-22% low for 6-7 of 28 under the envelope), so they keep their measured times."""
    for ax in range(axes):
        flipped = np.flip(log_t, ax)
        np.minimum.accumulate(flipped, axis=ax, out=flipped)


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


# Families whose tiny decoder's ratio to the tiny Llama did not repeat: five readings on H200 leases (2026-11-29,
# profiles/h200-sxm/2026-11-29-s47) spread mixtral 0.96-1.22, qwen2_moe 0.82-1.35, qwen3_moe 0.86-1.53, where every
# dense family's stayed within 1.13x of itself (gemma2 0.82-0.89, qwen3 0.90-0.95). They are priced at the Llama's.
UNSTEADY_FAMILIES = ("mixtral", "qwen2_moe", "qwen3_moe")


def tp_family_ratios(tp_host) -> dict[str, float]:
    """family -> its tiny decoder's host per kernel under its tp plan over the sharded Llama's, for the families whose
    plan gathers (hwprobe.models.llm.config.GATHERED_TP), from gpu.tp_host's record (``tp_host``, a TpHostCost): its
    ``vs_llama``, or for records before 2026-11-30 the median over rounds of the two sharded steps' ratio."""
    from hwprobe.models.llm.config import GATHERED_TP

    out = {}
    llama_s, llama_k = (tp_host.step_s or []), tp_host.kernels_per_step or 0
    for fam, v in (tp_host.families or {}).items():
        if fam not in GATHERED_TP or not v:
            continue
        ratio = v.get("vs_llama")
        if not ratio and llama_k and v.get("kernels_per_step") and len(v.get("step_s") or []) == len(llama_s) > 0:
            ratio = float(np.median([(f / v["kernels_per_step"]) / (t / llama_k)
                                     for f, t in zip(v["step_s"], llama_s, strict=True)]))
        if ratio:
            out[fam] = float(ratio)
    return out


def family_ratios(hf: dict) -> dict[str, float]:
    """family -> host per kernel over the tiny Llama's, from hf_host.measure's record (``families``; none before
    2026-11-29, none for a family it could not build, and none for UNSTEADY_FAMILIES)."""
    return {f: float(v["vs_llama"]) for f, v in (hf.get("families") or {}).items()
            if (v or {}).get("vs_llama") and f not in UNSTEADY_FAMILIES}


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
    hf_eager_kernel_s: float = 0.0  # transformers' own host time per kernel of an eager decode step (0: not measured)
    # family -> its host time per kernel over the tiny Llama's (hf_host's FAMILIES; profiles since 2026-11-29)
    hf_family_ratio: dict[str, float] = field(default_factory=dict)
    # transformers' host per kernel under its tp plan over one GPU's (gpu.tp_host, a multigpu run), and its tp
    hf_tp_ratio: float = 0.0
    hf_tp: int = 0
    # family -> its host per kernel under its tp plan over the sharded Llama's, for the plans that gather (gpu.tp_host)
    hf_tp_family_ratio: dict[str, float] = field(default_factory=dict)
    switch_library_s: float = 0.0  # ... per kernel where library (cuBLAS/cuDNN) and framework kernels alternate
    framework_replay_s: float = 0.0  # the framework's fixed cost of one CUDA-graph replay (0: not measured)
    framework_gemm: dict[str, GemmTable] = field(default_factory=dict)   # the framework's linear layers
    grouped: GroupedTable | None = None   # the framework's grouped GEMM (MoE experts)

    @classmethod
    def of(cls, profile) -> Calibration:
        """The tables of a profile's calibration section (v2 profiles: their findings lifted into one on load)."""
        sec: C.CalibrationSection = profile.calibration
        cal = cls()
        cal.align = {p: list(a.points) for p, a in sec.gemm_align.items()}
        cal.gemm = {p: GemmTable.of(g) for p, g in sec.gemm.items()}
        cal.memory = {c.kind or k: MemCurve.of(c) for k, c in sec.memory.items()}
        cal.framework = {c.kind or k: MemCurve.of(c) for k, c in sec.framework.items()}
        cal.framework_gemm = {g.precision or p: GemmTable.of(g) for p, g in sec.framework_linear.items()}
        cal.launch = {k: float(f.seconds or f.median_s or 0.0) for k, f in sec.launch.items()}
        if sec.launch_replay is not None:
            cal.launch["graph_replay_s"] = float(sec.launch_replay.seconds or sec.launch_replay.median_s or 0.0)
        cal.eager_op_s = float(sec.eager.seconds or 0.0) if sec.eager else 0.0
        hf = (sec.eager.transformers or {}) if sec.eager else {}
        cal.hf_eager_kernel_s = float(hf.get("kernel_s") or 0.0)
        cal.hf_family_ratio = family_ratios(hf)
        if sec.tp_host is not None and sec.tp_host.vs_one_gpu:
            cal.hf_tp_ratio, cal.hf_tp = float(sec.tp_host.vs_one_gpu), int(sec.tp_host.tp or 2)
            cal.hf_tp_family_ratio = tp_family_ratios(sec.tp_host)
        cal.switch_s = float(sec.switch.seconds or 0.0) if sec.switch else 0.0
        cal.switch_library_s = float(sec.switch_library.seconds or 0.0) if sec.switch_library else 0.0
        cal.framework_replay_s = float(sec.framework_replay.seconds or 0.0) if sec.framework_replay else 0.0
        if sec.conv is not None:
            cal.conv = ConvTable(points_with_precision(list(sec.conv.points), sec.conv.dtype))
        if sec.sdpa is not None:
            cal.sdpa = SdpaTable(points_with_precision(list(sec.sdpa.points), sec.sdpa.dtype))
        if sec.grouped_gemm is not None:
            cal.grouped = GroupedTable(list(sec.grouped_gemm.points))
        return cal

    @property
    def empty(self) -> bool:
        return not (self.gemm or self.memory)

    @property
    def precisions(self) -> list[str]:
        """The precisions with GEMM points of their own (cuBLAS gemmEx or the framework's linear layers)."""
        return sorted(set(self.gemm) | set(self.framework_gemm))

    def require_precision(self, precision: str) -> None:
        """Refuse a precision without points of its own (Uncalibrated: one line, exit 2), naming the run that adds
        them: a time measured at one precision says nothing dependable of another's kernels."""
        if precision not in self.precisions:
            raise Uncalibrated(precision, self.precisions)

    def require(self) -> None:
        if self.empty:
            raise InputError("this profile has no prediction calibration (run `hwprobe run --suite predict`, or the "
                             "full suite): predicted times need the measured GEMM and memory-kernel curves")
