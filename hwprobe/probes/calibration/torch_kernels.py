"""gpu.torch_kernels: the framework's own kernels, where PyTorch is installed (optional; skipped otherwise).

A prediction of a PyTorch model's time is only as good as its price for PyTorch's kernels, and those are not
hwprobe's: at small sizes a framework's generic elementwise path (index arithmetic, broadcasting, type
promotion) can take longer than a lean kernel moving the same bytes, and its attention runs as one fused
scaled-dot-product kernel whose efficiency no GEMM shows. So, when torch imports (never a dependency of
hwprobe: imported here only, lazily), this probe times PyTorch's kernels the same way the other calibration
probes time theirs, replayed in a CUDA graph (torch.cuda.CUDAGraph), per-kernel time against bytes moved, on
FP16 data, but as a model runs them: a chain in which each kernel consumes the previous one's output and writes a
fresh tensor (the graph pool's own addresses), not one kernel rewriting one buffer; and
F.scaled_dot_product_attention over (batch x heads, sequence, head size), causal and not. Each point's output
is checked against float32 arithmetic.

Results: ``predict.torch.<kind>`` curve findings (the same form as gpu.mem_kernels') and ``predict.torch.sdpa``
(a table); hwprobe.predict prefers them, for the framework they describe, over its own kernels' curves.
"""

from __future__ import annotations

import numpy as np

from hwprobe.probes.base import probe
from hwprobe.probes.calibration import common

KINDS = ("elementwise", "unary", "bias", "norm", "softmax", "reduction", "pool", "cat", "copy")
SIZES, QUICK_SIZES = common.SIZES, common.QUICK_SIZES
HIDDEN = 1024             # norm/softmax rows; bias channels
POOL = 49                 # reduction: mean over a 7 x 7 map per channel (global average pooling)
POOL_C, POOL_HW = 64, 112  # pool: a CNN stem's 3x3 stride-2 max pooling, channels-last, 64 channels at 112 x 112
SDPA_BH = (12, 96, 384, 1536)
SDPA_SEQ = (128, 256, 512, 1024, 2048, 4096)
SDPA_DIM = (64, 128)
SDPA_MAX_ELEMS = 1 << 29  # batch x heads x seq x dim of Q at most (memory and time)


_FLUSH: dict = {}


def _l2_bytes(torch) -> int:
    return int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)) or 50 << 20


def _flush(torch) -> None:
    """Write 3 x L2 of other data, as the rest of a model's forward does between two uses of one layer: every timed
    replay starts with L2 full of someone else's (dirty) lines and no parameter of the chain in it."""
    if "buf" not in _FLUSH:
        _FLUSH["buf"] = torch.empty(3 * _l2_bytes(torch), dtype=torch.uint8, device="cuda")
    _FLUSH["buf"].fill_(1)


def _params(torch, make, nbytes: int):
    """A callable giving a different copy of a layer's parameters (weights, bias, norm scale) on each call, as each
    layer of a model reads its own: enough copies that one pass over them moves 3 x L2 (so none is L2-resident
    when it comes round again), at most one per launch of a replay."""
    import itertools

    from hwprobe.probes.compute.gemm_common import rotation_sets

    copies = rotation_sets(max(int(nbytes), 1), _l2_bytes(torch), 3.0, cap=common.MAX_REPS)
    it = itertools.cycle([make() for _ in range(copies)])
    return lambda: next(it)


def _warm(torch, fn, calls: int = 2) -> None:
    """Run ``fn`` on a side stream first (allocations and library handles settle before a capture)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(calls):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


def _capture(torch, fn, n: int):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    return g


def _replay_s(torch, g, flush: bool = True) -> float:
    """Seconds of one replay of ``g`` timed alone between two events (after an L2 flush, outside the window)."""
    if flush:
        _flush(torch)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e-3


def _graph_time(torch, fn, reps: int | None = None) -> tuple[float, int]:
    """Seconds per call of ``fn`` replayed ``reps`` times back to back in a CUDA graph (median of the rule's
    replays), each replay after a flush of L2 (_flush) and timed alone, as a model's replay is."""
    _warm(torch, fn)
    if reps is None:
        g = _capture(torch, fn, common.MIN_REPS)
        g.replay()
        reps = common.reps_for_time(_replay_s(torch, g) / common.MIN_REPS)
    g = _capture(torch, fn, reps)
    g.replay()
    return float(np.median([_replay_s(torch, g) for _ in range(common.point_rule().min_samples)])) / reps, reps


def _chain(step, x0, ref_step):
    """A model-like kernel sequence: each call consumes the previous call's output and allocates its own (fresh
    addresses from the graph's pool, a true read-after-write dependency), not one kernel rewriting one buffer."""
    st = {"x": x0}

    def fn() -> None:
        st["x"] = step(st["x"])

    def check():
        prev = st["x"].clone()
        fn()
        return st["x"].float(), ref_step(prev.float())

    return fn, check


def _case(torch, kind: str, nbytes: int):
    """(fn, bytes moved, check, shape) for one kind at about ``nbytes`` moved."""
    F = torch.nn.functional
    half = torch.float16
    gen = torch.Generator(device="cuda").manual_seed(7)
    rnd = lambda *shape: (torch.rand(*shape, device="cuda", generator=gen) * 2 - 1).to(half)
    if kind in ("elementwise", "unary", "copy"):
        streams = 3 if kind == "elementwise" else 2
        n = max(1024, nbytes // (2 * streams) // 1024 * 1024)
        x, y = rnd(n), rnd(n)
        step, ref = {"elementwise": (lambda a: a + y, lambda a: a + y.float()),
                     "unary": (lambda a: torch.relu(a), lambda a: a.clamp_min(0)),
                     "copy": (lambda a: a.clone(), lambda a: a)}[kind]
        return _pack(_chain(step, x, ref), 2 * streams * n, f"{n}")
    if kind == "cat":             # concatenation along the last dim (RoPE's rotate_half: cat(-x2, x1) on 128 lanes)
        rows = max(1, nbytes // (4 * 128))
        return _pack(_chain(lambda a: torch.cat((a[..., 64:], a[..., :64]), dim=-1), rnd(rows, 128),
                            lambda a: torch.cat((a[..., 64:], a[..., :64]), dim=-1)), 4 * rows * 128,
                     f"{rows} x (64 + 64)")
    if kind == "bias":            # each launch adds its own bias vector (a layer's), read cold
        rows = max(1, nbytes // (4 * HIDDEN))
        bias = _params(torch, lambda: rnd(HIDDEN), 2 * HIDDEN)
        last = {}

        def step(a):
            last["b"] = bias()
            return a + last["b"]

        return _pack(_chain(step, rnd(rows, HIDDEN), lambda a: a + last["b"].float()), 4 * rows * HIDDEN,
                     f"{rows} x {HIDDEN} + {HIDDEN}")
    if kind in ("norm", "softmax"):
        rows = max(1, nbytes // (4 * HIDDEN))
        if kind == "norm":        # each launch with its own scale and shift (a layer's), read cold
            wb = _params(torch, lambda: (rnd(HIDDEN), rnd(HIDDEN)), 4 * HIDDEN)
            last = {}

            def step(a):
                last["wb"] = wb()
                return F.layer_norm(a, (HIDDEN,), *last["wb"])

            ref = lambda a: F.layer_norm(a, (HIDDEN,), last["wb"][0].float(), last["wb"][1].float())
        else:
            step, ref = (lambda a: torch.softmax(a, dim=-1)), (lambda a: torch.softmax(a, dim=-1))
        return _pack(_chain(step, rnd(rows, HIDDEN), ref), 4 * rows * HIDDEN, f"{rows} x {HIDDEN}")
    if kind == "pool":                           # max pooling 3x3 stride 2 (a CNN stem's), channels-last
        per_px = 2 * POOL_C * 1.25                   # input bytes per pixel, plus a quarter for the output
        n = max(1, int(nbytes // (per_px * POOL_HW * POOL_HW)))
        hw = POOL_HW if n > 1 else max(8, int((nbytes / per_px) ** 0.5) // 2 * 2)
        x = rnd(n, POOL_C, hw, hw).to(memory_format=torch.channels_last)
        holder = {}
        out_px = n * POOL_C * ((hw + 1) // 2) ** 2
        return ((lambda: holder.__setitem__("y", F.max_pool2d(x, 3, 2, 1))), 2 * (x.numel() + out_px),
                lambda: (holder["y"].float(), F.max_pool2d(x.float(), 3, 2, 1)), f"{n} x {POOL_C} x {hw} x {hw}")
    rows = max(1, nbytes // (2 * POOL))          # reduction: NHWC global average pooling, [rows/C, 7, 7, C]
    c = 256 if rows >= 256 else rows
    x = rnd(max(1, rows // c), POOL, c)
    holder = {}
    return (lambda: holder.__setitem__("y", x.mean(dim=1))), 2 * x.numel() + 2 * x.shape[0] * c, lambda: (
        holder["y"].float(), x.float().mean(dim=1)), f"{x.shape[0]} x {POOL} x {c}"


def _pack(chain, moved: int, shape: str):
    fn, check = chain
    return fn, moved, check, shape


def _check(got_want, what: str, tol: float = 2e-2) -> None:
    got, want = got_want
    err = float((got - want).abs().max() / want.abs().max().clamp_min(1e-6))
    if not np.isfinite(err) or err > tol:
        raise AssertionError(f"{what}: max relative error {err:.3g} > {tol}")


def _curves(ctx, torch, kinds, sizes):
    for kind in kinds:
        pts = []
        for nbytes in common.curve_sizes(ctx, f"torch.{kind}", sizes):
            metric = f"predict.torch.{kind}.b{nbytes}"
            try:
                fn, moved, check, shape = _case(torch, kind, nbytes)
                t, reps = _graph_time(torch, fn)
                fn()
                torch.cuda.synchronize()
                _check(check(), f"torch {kind} {shape}")
            except Exception as e:
                yield ctx.error(metric, f"torch {kind} at {nbytes} B", e)
                continue
            finally:
                torch.cuda.empty_cache()
            pts.append((moved, t, shape))
            yield ctx.derived(metric, moved / t, unit="B/s", kind="sweep", verified=True,
                              params={"kernel": kind, "bytes": moved, "time_s": t, "shape": shape, "reps": reps})
        if pts:
            pts.sort()
            yield ctx.derived(f"predict.torch.{kind}", len(pts), unit="points", kind="info",
                              params={"kind": kind, "bytes": [p[0] for p in pts], "time_s": [p[1] for p in pts],
                                      "shapes": [p[2] for p in pts], "dtype": "float16", "runtime": "cuda_graph",
                                      "framework": f"torch {torch.__version__}"},
                              notes=[f"PyTorch {kind} kernel: seconds per kernel against bytes moved, replayed in a "
                                     "CUDA graph"])


def _sdpa_point(torch, bh: int, seq: int, dim: int, causal: bool) -> float:
    F = torch.nn.functional
    q, k, v = (torch.randn(1, bh, seq, dim, device="cuda", dtype=torch.float16) for _ in range(3))
    holder = {}
    t, _ = _graph_time(torch, lambda: holder.__setitem__(
        "o", F.scaled_dot_product_attention(q, k, v, is_causal=causal)))
    ref = F.scaled_dot_product_attention(q[:, :2].float(), k[:, :2].float(), v[:, :2].float(), is_causal=causal)
    _check((holder["o"][:, :2].float(), ref), f"sdpa {bh}x{seq}x{dim}")
    return t


def _sweep(ctx, torch, cases: list[dict], measure, metric: str, what: str, rows: list[dict]):
    """Time every case (``measure(**case)``) into ``rows``; a case that fails is an error record, the rest go on.
    Convolution cases interpolation predicts within 2% (hwprobe.predict.prune) are left out, not in quick runs."""
    from hwprobe.predict.prune import point_key, pruned

    if not ctx.quick:
        cases = [c for c in cases if point_key(c) not in pruned().conv]
    for case in cases:
        try:
            rows.append({**case, "time_s": measure(**case)})
        except Exception as e:
            yield ctx.error(metric + "." + "".join(f"{k}{v}" for k, v in case.items()), what, e)
        finally:
            torch.cuda.empty_cache()


def _sdpa(ctx, torch, quick: bool):
    bhs, seqs = (SDPA_BH[:2], SDPA_SEQ[::2]) if quick else (SDPA_BH, SDPA_SEQ)
    cases = [{"bh": bh, "seq": s, "dim": d, "causal": causal} for causal in (False, True) for d in SDPA_DIM
             for bh in bhs for s in seqs if bh * s * d <= SDPA_MAX_ELEMS]
    rows: list[dict] = []
    yield from _sweep(ctx, torch, cases, lambda **c: _sdpa_point(torch, **c), "predict.torch.sdpa", "torch SDPA",
                      rows)
    if rows:
        yield ctx.derived("predict.torch.sdpa", len(rows), unit="points", kind="info",
                          params={"points": rows, "framework": f"torch {torch.__version__}", "dtype": "float16"},
                          notes=["PyTorch scaled_dot_product_attention (its fused kernels), seconds per call over "
                                 "batch x heads, sequence (queries = keys) and head size, replayed in a CUDA graph"])


CONV_M = (49, 196, 784, 3136, 12544, 50176, 200704)        # output pixels x batch
CONV1_C = (64, 128, 256, 512, 1024, 2048)                   # 1x1: C_in and C_out each
CONV3_C = (64, 128, 256, 512)                               # 3x3: C_in = C_out
CONV_MAX_MACS = 1 << 38


def batched_images(m: int) -> int:
    """Images of a batched point of m output pixels: up to 64 images of at least 7 x 7 (a late CNN stage at batch
    64): 196 -> 4 x 7^2, 3136 -> 64 x 7^2, 200704 -> 64 x 56^2."""
    return max(1, min(64, m // 49))


def _conv_time(torch, x_shape: tuple, w_shape: tuple, layout: str, what: str, crop: int = 8, **conv) -> float:
    """F.conv2d(x, w, **conv) in FP16 as cuDNN runs it for PyTorch, timed in a CUDA graph, each launch on its own
    weight copy (cold), in ``layout`` (nhwc: channels-last; nchw: PyTorch's default, cuDNN's layout transforms
    included); the first image checked in FP32: its ``crop`` x ``crop`` corner away from the crop's border (where
    the padding differs), or all of it (crop 0)."""
    F = torch.nn.functional
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    x = torch.randn(*x_shape, device="cuda", dtype=torch.float16).to(memory_format=fmt)
    fan_in = w_shape[1] * w_shape[2] * w_shape[3]
    weights = _params(torch, lambda: (torch.randn(*w_shape, device="cuda", dtype=torch.float16)
                                      / fan_in ** 0.5).to(memory_format=fmt), 2 * w_shape[0] * fan_in)
    holder = {}

    def call() -> None:
        holder["w"] = weights()
        holder["y"] = F.conv2d(x, holder["w"], **conv)

    t, _ = _graph_time(torch, call)
    w = holder["w"].float()
    if crop:
        s, border = conv.get("stride", 1), w_shape[2] // 2
        inner = slice(border, crop - border)
        ref = F.conv2d(x[:1, :, :crop * s, :crop * s].float(), w, **conv)[..., inner, inner]
        got = holder["y"][:1, :, inner, inner].float()
    else:
        ref, got = F.conv2d(x[:1].float(), w, **conv), holder["y"][:1].float()
    _check((got, ref), what)
    return t


def _conv_point(torch, m: int, cin: int, cout: int, k: int, layout: str = "nhwc", images: int = 1) -> float:
    """One convolution (stride 1, 'same' padding) over an output of m pixels in ``images`` images (cudnn.benchmark
    picks the algorithm, as a deployment does). In NCHW, a one-image 1x1 convolution is a plain GEMM; around one
    of several images cuDNN transforms the layout."""
    hw = int(round((m // images) ** 0.5))
    return _conv_time(torch, (images, cin, hw, hw), (cout, cin, k, k), layout, f"conv {k}x{k} {cin}->{cout} at {m}",
                      padding=k // 2)


DW_C = (32, 144, 384, 960)          # depthwise: channels (MobileNetV2 / EfficientNet widths)


def _dw_point(torch, m: int, cin: int, k: int, stride: int, layout: str, images: int) -> float:
    """A depthwise convolution (groups = channels, 'same' padding) over m output pixels in ``images`` images, stride
    1 or 2."""
    hw = int(round((m // images) ** 0.5)) * stride
    return _conv_time(torch, (images, cin, hw, hw), (cin, 1, k, k), layout, f"depthwise {k}x{k}/{stride} {cin}",
                      stride=stride, padding=k // 2, groups=cin)


# First-layer convolutions on an RGB image (C_in = 3): cuDNN runs kernels of their own for these (channel padding,
# non-Tensor-Core paths), which no 1x1/3x3 point shows. (kernel, stride, C_out) of the common stems: ResNet's
# 7x7/2, ViT's 16x16/16 patches, MobileNet/EfficientNet's 3x3/2, ConvNeXt/Swin's 4x4/4.
STEMS = ((7, 2, 64), (16, 16, 768), (3, 2, 32), (4, 4, 96), (4, 4, 128))
STEM_BATCH = (1, 8, 32, 64, 128)
STEM_HW = 224


def _stem_geometry(k: int, stride: int) -> tuple[int, int]:
    """(padding, output side) of a stem convolution on a STEM_HW x STEM_HW image ('same' where the kernel overlaps
    its neighbours, none for patch embeddings)."""
    pad = k // 2 if k > stride else 0
    return pad, (STEM_HW + 2 * pad - k) // stride + 1


def _stem_point(torch, k: int, stride: int, cin: int, cout: int, m: int, layout: str) -> float:
    """A stem convolution over ``m`` output pixels (whole 224 x 224 images; nchw: as a model runs by default, cuDNN
    transforming around its kernel), the first image checked whole."""
    pad, side = _stem_geometry(k, stride)
    return _conv_time(torch, (max(1, m // (side * side)), cin, STEM_HW, STEM_HW), (cout, cin, k, k), layout,
                      f"conv {k}x{k}/{stride} {cin}->{cout} at {m}", crop=0, stride=stride, padding=pad)


def _convs(ctx, torch, quick: bool):
    torch.backends.cudnn.benchmark = True
    ms = CONV_M[::3] if quick else CONV_M
    shapes = [(1, a, b) for a in CONV1_C for b in CONV1_C] + [(3, c, c) for c in CONV3_C]
    if quick:
        shapes = shapes[::7]
    # one image per point in both layouts; NCHW also batched (its transforms depend on the image count)
    cases = [{"k": k, "cin": cin, "cout": cout, "m": m, "layout": layout, "images": images}
             for layout, batched in (("nhwc", False), ("nchw", False), ("nchw", True))
             for k, cin, cout in shapes for m in ms if m * cin * cout * k * k <= CONV_MAX_MACS
             for images in [batched_images(m) if batched else 1] if not batched or images > 1]
    rows: list[dict] = []
    yield from _sweep(ctx, torch, cases, lambda **c: _conv_point(torch, **c), "predict.torch.conv", "torch conv2d",
                      rows)
    dws = [{"k": 3, "dw": True, "cin": c, "cout": c, "stride": s, "m": m, "layout": layout,
            "images": batched_images(m)}
           for layout in ("nhwc", "nchw") for s in (1, 2) for c in (DW_C[::2] if quick else DW_C) for m in ms]
    yield from _sweep(ctx, torch, dws, lambda dw, cout, **c: _dw_point(torch, **c), "predict.torch.conv.dw",
                      "torch depthwise conv2d", rows)
    stems = [{"k": k, "stride": s, "cin": 3, "cout": cout, "layout": layout, "m": b * _stem_geometry(k, s)[1] ** 2}
             for k, s, cout in (STEMS[:1] if quick else STEMS) for b in (STEM_BATCH[::2] if quick else STEM_BATCH)
             for layout in ("nhwc", "nchw")]
    yield from _sweep(ctx, torch, stems, lambda **c: _stem_point(torch, **c), "predict.torch.conv.stem",
                      "torch stem conv2d", rows)
    if rows:
        from hwprobe.predict.prune import point_key, pruned

        left_out = 0 if quick else sum(point_key(c) in pruned().conv for c in cases + dws + stems)
        yield ctx.derived("predict.torch.conv", len(rows), unit="points", kind="info",
                          params={"points": rows, "framework": f"torch {torch.__version__}", "dtype": "float16",
                                  "layouts": ["nhwc", "nchw"], "cudnn_benchmark": True, "pruned": left_out},
                          notes=["PyTorch conv2d (cuDNN), FP16, channels-last (nhwc) and PyTorch's default layout "
                                 "(nchw, cuDNN's transforms around its kernel included): seconds per convolution over "
                                 "output pixels x C_in x C_out for 1x1 and 3x3 kernels at stride 1 (NCHW also over "
                                 "several images), 3x3 depthwise ones at stride 1 and 2 (points with 'dw'), and the "
                                 "first-layer (stem) convolutions of C_in = 3 (points with 'stride'), replayed in a "
                                 "CUDA graph; each point names its layout and image count"])


LINEAR_M = (1, 16, 128, 1024, 8192, 32768)                 # rows (tokens x batch)
LINEAR_NK = (768, 2048, 4096, 8192, 16384)                   # output and input features
LINEAR_MAX_MACS = 1 << 41


def _linear_point(torch, m: int, n: int, k: int, dtype) -> float:
    """One F.linear (cuBLASLt through PyTorch, its own heuristics) of m rows x k -> n, each launch on its own
    weight copy (cold, as a model's layers); checked on a few rows in FP32."""
    F = torch.nn.functional
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    weights = _params(torch, lambda: torch.randn(n, k, device="cuda", dtype=dtype) / k ** 0.5, 2 * n * k)
    holder = {}

    def call() -> None:
        holder["w"] = weights()
        holder["y"] = F.linear(x, holder["w"])

    t, _ = _graph_time(torch, call)
    _check((holder["y"][:4].float(), x[:4].float() @ holder["w"].float().T), f"linear {m}x{k}->{n}")
    return t


def _linears(ctx, torch, quick: bool):
    """PyTorch's own GEMM for a linear layer over rows x N x K, FP16 and BF16: the framework's library calls and
    heuristics (cuBLASLt, its epilogues) where gpu.gemm_shapes times cublasGemmEx's default algorithm."""
    ms, nks = (LINEAR_M[::2], LINEAR_NK[::2]) if quick else (LINEAR_M, LINEAR_NK)
    for prec, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        cases = [{"m": m, "n": n, "k": k} for m in ms for n in nks for k in nks if m * n * k <= LINEAR_MAX_MACS]
        rows: list[dict] = []
        yield from _sweep(ctx, torch, cases, lambda dtype=dtype, **c: _linear_point(torch, dtype=dtype, **c),
                          f"predict.torch.linear.{prec}", f"torch linear {prec}", rows)
        if not rows:
            continue
        t = {(r["m"], r["n"], r["k"]): r["time_s"] for r in rows}
        grid = [[[t.get((m, n, k)) for k in nks] for n in nks] for m in ms]
        yield ctx.derived(f"predict.torch.linear.{prec}", len(rows), unit="points", kind="info",
                          params={"precision": prec, "m": list(ms), "n": list(nks), "k": list(nks), "time_s": grid,
                                  "framework": f"torch {torch.__version__}", "api": "torch.nn.functional.linear",
                                  "runtime": "cuda_graph"},
                          notes=[f"PyTorch linear layers ({prec}): seconds per GEMM over rows x N x K, each launch on "
                                 "its own (cold) weights, replayed in a CUDA graph"])


EAGER_OPS = 2000          # ops per host-overhead sample


def _eager_ops(torch):
    """Small ops of the kinds a model calls eagerly: the GPU finishes each long before the host issues the next."""
    F = torch.nn.functional
    x = torch.randn(1, 64, 16, 16, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    a, lw = torch.randn(64, 256, device="cuda", dtype=torch.float16), torch.randn(256, 256, device="cuda").half()
    return {"relu": lambda: F.relu(x), "add": lambda: x + x, "layer_norm": lambda: F.layer_norm(a, (256,)),
            "linear": lambda: F.linear(a, lw), "conv2d": lambda: F.conv2d(x, w, padding=1)}


def _eager(ctx, torch):
    """The framework's host time per op when it runs eagerly (no CUDA graph): what an eager model pays per kernel
    once its kernels are faster than the host can issue them."""
    import time

    per = {}
    try:
        for name, fn in _eager_ops(torch).items():
            for _ in range(50):
                fn()
            torch.cuda.synchronize()
            samples = []
            for _ in range(3):
                t0 = time.perf_counter()
                for _ in range(EAGER_OPS):
                    fn()
                torch.cuda.synchronize()
                samples.append((time.perf_counter() - t0) / EAGER_OPS)
            per[name] = float(np.median(samples))
    except Exception as e:
        yield ctx.error("predict.torch.eager_op_s", "torch eager host time", e)
        return
    yield ctx.derived("predict.torch.eager_op_s", float(np.median(list(per.values()))), unit="s", kind="info",
                      params={"per_op_s": per, "ops_per_sample": EAGER_OPS},
                      notes=["host time per eagerly issued PyTorch op (small relu, add, layer norm, linear, conv2d in "
                             "Python loops; the GPU finishes each before the next is issued): the median over kinds"])


def _replay(ctx, torch):
    """The framework's fixed cost of one CUDA-graph replay timed alone (torch.cuda.CUDAGraph.replay between two
    events, as a model's forward is timed): graphs of 1 to 256 small chained adds, the intercept of replay time
    against kernel count. A model's graph pays it once per forward."""
    med = []
    try:
        for n in common.REPLAY_NODES:
            x, y = (torch.rand(4096, device="cuda").half() for _ in range(2))
            st = {"x": x}

            def fn(n=n, st=st, y=y) -> None:
                for _ in range(n):
                    st["x"] = st["x"] + y

            _warm(torch, fn, 1)
            g = _capture(torch, fn, 1)
            samples = [_replay_s(torch, g, flush=False) for _ in range(common.REPLAY_SAMPLES)][common.REPLAY_WARM:]
            med.append(float(np.median(samples)))
    except Exception as e:
        yield ctx.error("predict.torch.graph_replay_s", "torch graph replay cost", e)
        return
    intercept, slope = common.replay_fit(med)
    yield ctx.derived("predict.torch.graph_replay_s", intercept, unit="s", kind="info",
                      params={"nodes": list(common.REPLAY_NODES), "replay_s": med, "per_node_s": slope},
                      notes=["fixed cost of one torch CUDA-graph replay timed alone (events around replay()): the "
                             "intercept of replay time against kernel count, 1-256 small adds"])


SWITCH_BYTES = 1 << 18          # the switch-cost kernels move 256 KiB each (L2-resident, latency-bound)
SWITCH_REPS = 64


def _switch_kernels(torch):
    F = torch.nn.functional
    n = SWITCH_BYTES // 4
    x, y, out = (torch.rand(n, device="cuda").half() for _ in range(3))
    rows = torch.rand(n // HIDDEN, HIDDEN, device="cuda").half()
    return [lambda: torch.add(x, y, out=out), lambda: torch.clamp_min(x, 0, out=out),
            lambda: F.layer_norm(rows, (HIDDEN,)), lambda: torch.softmax(rows, dim=-1), lambda: out.copy_(x)]


def _switch(ctx, torch):
    """What a kernel costs beyond its own back-to-back time when its neighbours are other kernels, as in a model:
    five kinds alternating in one graph against each kind replayed alone (the difference per kernel)."""
    try:
        fns = _switch_kernels(torch)
        alone = [_graph_time(torch, f, SWITCH_REPS)[0] for f in fns]

        def mixed() -> None:
            for f in fns:
                f()

        t_mixed = _graph_time(torch, mixed, SWITCH_REPS)[0] / len(fns)
    except Exception as e:
        yield ctx.error("predict.torch.switch_s", "torch kernel switch cost", e)
        return
    switch = max(0.0, t_mixed - float(np.mean(alone)))
    yield ctx.derived("predict.torch.switch_s", switch, unit="s", kind="info",
                      params={"alone_s": alone, "mixed_per_kernel_s": t_mixed, "bytes": SWITCH_BYTES,
                              "kernels": ["add", "clamp_min", "layer_norm", "softmax", "copy"]},
                      notes=["per-kernel cost of following a different kernel (alternating add, relu, layer norm, "
                             "softmax, copy in one CUDA graph) over the same kernels replayed alone"])
    yield from _switch_library(ctx, torch)


def _library_pairs(torch) -> dict:
    """(library kernel, framework kernel, first input) pairs as models alternate them: a cuBLAS linear and the
    residual add after it (BERT-base's 128 x 768 x 768), a cuDNN 3x3 convolution and its bias add (ResNet's
    64 channels at 56 x 56, channels-last)."""
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(11)
    rnd = lambda *shape: (torch.rand(*shape, device="cuda", generator=gen) - 0.5).half()
    w, y = rnd(768, 768) / 14.0, rnd(128, 768)
    cw = (rnd(64, 64, 3, 3) / 12.0).to(memory_format=torch.channels_last)
    cb = rnd(1, 64, 1, 1)
    return {"linear+add": (lambda a: F.linear(a, w), lambda a: a + y, rnd(128, 768)),
            "conv+bias": (lambda a: F.conv2d(a, cw, padding=1), lambda a: a + cb,
                          rnd(1, 64, 56, 56).to(memory_format=torch.channels_last))}


def _switch_library(ctx, torch):
    """What a kernel costs beyond its back-to-back time when it alternates with a kernel of the other side: a
    library kernel (cuBLAS, cuDNN: large shared-memory tiles) after a framework kernel and back, as every linear
    or convolution and its bias, activation or residual add do in a model."""
    per: dict[str, dict] = {}
    try:
        for name, (lib, fw, x0) in _library_pairs(torch).items():
            st = {"x": x0}

            def chain(*steps, st=st):
                def fn() -> None:
                    for f in steps:
                        st["x"] = f(st["x"])
                return fn

            t_lib = _graph_time(torch, chain(lib), SWITCH_REPS)[0]
            t_fw = _graph_time(torch, chain(fw), SWITCH_REPS)[0]
            t_pair = _graph_time(torch, chain(lib, fw), SWITCH_REPS)[0] / 2
            if not bool(torch.isfinite(st["x"]).all()):
                raise AssertionError(f"{name}: the chain's output is not finite")
            per[name] = {"library_s": t_lib, "framework_s": t_fw, "alternating_per_kernel_s": t_pair,
                         "switch_s": max(0.0, t_pair - (t_lib + t_fw) / 2)}
    except Exception as e:
        yield ctx.error("predict.torch.switch_library_s", "torch library/framework switch cost", e)
        return
    yield ctx.derived("predict.torch.switch_library_s", float(np.median([p["switch_s"] for p in per.values()])),
                      unit="s", kind="info", params={"pairs": per},
                      notes=["per-kernel cost of alternating a library kernel (cuBLAS linear, cuDNN convolution) "
                             "with a framework kernel (add, bias add) in one CUDA graph, over each replayed alone: "
                             "the median over pairs"])


@probe(name="gpu.torch_kernels", target="gpu", family="calibration",
       summary="Prediction calibration with PyTorch's own kernels (optional: skipped without torch): elementwise, "
               "bias, norm, softmax, reduction, pooling, copy, linear layers, cuDNN convolutions and SDPA "
               "attention, in CUDA graphs",
       choices={"kinds": KINDS})
def run(ctx, kinds: list[str] | None = None, sdpa: bool = True, convs: bool = True, linears: bool = True,
        max_bytes: int = 1 << 30):
    try:
        import torch
    except Exception as e:
        yield ctx.skip("predict.torch", f"PyTorch is not installed ({type(e).__name__}); the predictor uses "
                                        "hwprobe's own kernels' curves")
        return
    if not torch.cuda.is_available():
        yield ctx.skip("predict.torch", "torch sees no CUDA device")
        return
    sizes = [s for s in (QUICK_SIZES if ctx.quick else SIZES) if s <= max_bytes]
    with torch.inference_mode():
        yield from _curves(ctx, torch, kinds or KINDS, sizes)
        yield from _switch(ctx, torch)
        yield from _replay(ctx, torch)
        yield from _eager(ctx, torch)
        if convs:
            yield from _convs(ctx, torch, ctx.quick)
        if linears:
            yield from _linears(ctx, torch, ctx.quick)
        if sdpa:
            yield from _sdpa(ctx, torch, ctx.quick)
