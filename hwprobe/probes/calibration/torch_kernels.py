"""gpu.torch_kernels: the framework's own kernels, where PyTorch is installed (optional; skipped otherwise).

A prediction of a PyTorch model's time is only as good as its price for PyTorch's kernels, and those are not
hwprobe's: at small sizes a framework's generic elementwise path (index arithmetic, broadcasting, type
promotion) can take longer than a lean kernel moving the same bytes, and its attention runs as one fused
scaled-dot-product kernel whose efficiency no GEMM shows. So, when torch imports (never a dependency of
hwprobe: imported here only, lazily), this probe times PyTorch's kernels the same way the other calibration
probes time theirs, replayed in a CUDA graph (torch.cuda.CUDAGraph), per-kernel time against bytes moved, on
FP16 data, but as a model runs them: a chain in which each kernel consumes the previous one's output and writes a
fresh tensor (the graph pool's own addresses), not one kernel rewriting one buffer (the curves price kernels by
bytes moved, whatever the element type). Its library half (hwprobe.probes.calibration.torch_library) times
PyTorch's convolutions, linear layers and F.scaled_dot_product_attention per precision over the generic grids of
hwprobe.probes.calibration.grids. Each point's output is checked against float32 arithmetic.

Results: the profile's calibration curves (hwprobe.calibration) ``framework`` (one per kernel kind, the same form
as gpu.mem_kernels'), ``framework_linear`` (per precision), ``conv``, ``sdpa``, and the framework's overheads
(``framework_replay``, ``eager``, ``switch``, ``switch_library``); hwprobe.predict prefers them, for the framework
they describe, over its own kernels' curves and cuBLAS's table.
"""

from __future__ import annotations

import numpy as np

from hwprobe import calibration as C
from hwprobe import keys as K
from hwprobe.probes.base import probe
from hwprobe.probes.calibration import common, grids
from hwprobe.probes.calibration.torch_timing import capture, check_close, graph_time, param_copies, replay_s, warm
from hwprobe.vocab import Curve

KINDS = ("elementwise", "unary", "bias", "norm", "softmax", "reduction", "pool", "pool_nchw", "cat", "copy",
         "permute", "batch_norm", "group_norm", "resize", "resize_linear", "resize_linear_nchw", "bias_nchw", "sort",
         "cat_strided", "expand", "topk", "rotate_cat")
MAP_KINDS = ("batch_norm", "group_norm", "resize", "resize_linear", "resize_linear_nchw", "bias_nchw")
LINEAR_UP, LINEAR_C = 4, 32   # resize_linear(_nchw): bilinear 4x upsampling (half-pixel) of 32 channels, the way a
#                              segmentation head or a U-Net's decoder scales its maps up; channels-last, and NCHW
MAP_C, MAP_HW = 64, 56    # feature maps of batch_norm and resize: 64 channels at 56 x 56 per image
GN_C, GN_GROUPS = 128, 32  # group_norm: 128 channels in 32 groups (GroupNorm's usual 32)
SIZES, QUICK_SIZES = common.SIZES, common.QUICK_SIZES
HIDDEN = 1024             # norm/softmax rows; bias channels
POOL = 49                 # reduction: mean over a 7 x 7 map per channel (global average pooling)
POOL_C, POOL_HW = 64, 112  # pool: a CNN stem's 3x3 stride-2 max pooling, channels-last, 64 channels at 112 x 112
#                            (pool_nchw: the same in NCHW, PyTorch's other kernel: a thread per output)
# permute: a permuted tensor made contiguous (ShuffleNet's channel shuffle, Swin's window partition: a permute whose
# reshape cannot view it), [rows, 2, 32, 64] -> [rows, 32, 2, 64]: runs of 64 contiguous elements, moved element by
# element by PyTorch's strided copy
PERMUTE_SHAPE = (2, 32, 64)
# sort: torch.sort of int64 keys (an MoE's expert ids, 128 experts) with their positions, as transformers' grouped_mm
# experts sort their token-expert pairs; 32 bytes a key (the lowering's count: keys in, keys copied, values and
# indices out). PyTorch sorts up to 4096 keys in one CTA and more with cub's radix sort, about twice as long at
# 4097 as at 4096 on an H100 (39 and 78 us), so a point sits on each side of that step. Up to 64 MiB (2M keys).
SORT_KEY_BYTES, SORT_EXPERTS = 32, 128
# cat_strided: transformers' DynamicCache update, torch.cat((held, new), dim=2) over [batch, kv heads, tokens, head]
# with an input that is not contiguous: the sliding-window layer's held keys (a slice of the last cat) and Phi-3's
# values (a view of the fused qkv output at batch > 1). PyTorch then runs its non-vectorized 4-D cat, a flat
# 0.62-0.67 TB/s from 25 MB to 3.2 GB on an H200 where the same cat of contiguous inputs (the copy curve's speed)
# read 3.5-3.9 (.ab/strided_cat.py, 2026-11-28). expand: transformers' repeat_kv, [b, kv heads, n, d] expanded to
# a query-head count and made contiguous (PyTorch's non-vectorized copy through the broadcast view), each launch
# from its own cache (read cold). Both with Llama-3-8B's heads: 8 kv heads of 128, 32 query heads.
# rotate_cat: RoPE's rotate_half, torch.cat((-x2, x1), dim=-1), on q as transformers holds it with more than one
# token: a [batch, tokens, heads, head] projection viewed [batch, heads, tokens, head] (transposed), so x1 is a strided
# slice and -x2 a fresh tensor in the projection's order. PyTorch runs its generic 4-D cat on that too, faster than
# on the cache's slice: on an H200 (2026-11-29) 0.8-1.0 TB/s from 8 MB up where cat_strided reads 0.6-0.7, and priced
# on it the tuned families' `hf` prefill rope cats came within 4% of their profiler lists (on cat_strided 20-47% slow;
# Phi-3's 96-wide heads 13% fast). 32 heads of 128.
KV_HEADS, Q_HEADS, HEAD_DIM = 8, 32, 128
SORT_MAX_BYTES, SORT_STEP_KEYS = 1 << 26, 4096
# topk: an MoE router's torch.topk(scores, k, dim=-1) over FP32 softmax scores, Qwen3-MoE's 128 experts and top 8: a
# radix select per row and a bitonic sort of the k picked, two launches timed as one call; bytes = the scores read
# and the values and int64 indices written (608 a row). From one row (a decode step) up to SORT_MAX_BYTES.
TOPK_EXPERTS, TOPK_K = 128, 8
TOPK_ROW_BYTES = 4 * TOPK_EXPERTS + 12 * TOPK_K
# resize_linear_nchw's grid: PyTorch's NCHW bilinear kernel runs a thread per output pixel, each looping over every
# plane (image x channel), so its time is not a function of bytes alone: 8 x 256 planes upsampled 1 -> 14 x 14 (an
# ASPP pooling branch) took 113 us on an H200 where the bytes curve reads 8.5 us. Output sides x planes, each from a
# map of side // 2 (a 2x upsampling: a decoder's) and from a 1 x 1 map (a pooled global context broadcast back: its
# four taps are one element, and a 2x upsampling's plane took 3.7x as long at 14 x 14 on an H200), up to max_bytes
BILINEAR_SIDES = (7, 14, 28, 56, 112, 224)
BILINEAR_PLANES = (32, 256, 2048, 16384)


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
    if kind in ("cat_strided", "expand"):
        return _cache_case(torch, kind, nbytes, rnd)
    if kind == "rotate_cat":
        return _rotate_case(torch, nbytes, rnd)
    if kind == "bias":            # each launch adds its own bias vector (a layer's), read cold
        rows = max(1, nbytes // (4 * HIDDEN))
        bias = param_copies(torch, (HIDDEN,), lambda s: rnd(*s), half)
        last = {}

        def step(a):
            last["b"] = bias()
            return a + last["b"]

        return _pack(_chain(step, rnd(rows, HIDDEN), lambda a: a + last["b"].float()), 4 * rows * HIDDEN,
                     f"{rows} x {HIDDEN} + {HIDDEN}")
    if kind in ("norm", "softmax"):
        rows = max(1, nbytes // (4 * HIDDEN))
        if kind == "norm":        # each launch with its own scale and shift (a layer's), read cold
            scale, shift = (param_copies(torch, (HIDDEN,), lambda s: rnd(*s), half) for _ in range(2))
            wb = lambda: (scale(), shift())  # noqa: E731
            last = {}

            def step(a):
                last["wb"] = wb()
                return F.layer_norm(a, (HIDDEN,), *last["wb"])

            ref = lambda a: F.layer_norm(a, (HIDDEN,), last["wb"][0].float(), last["wb"][1].float())
        else:
            step, ref = (lambda a: torch.softmax(a, dim=-1)), (lambda a: torch.softmax(a, dim=-1))
        return _pack(_chain(step, rnd(rows, HIDDEN), ref), 4 * rows * HIDDEN, f"{rows} x {HIDDEN}")
    if kind in MAP_KINDS:
        return _map_case(torch, kind, nbytes, rnd)
    if kind in ("pool", "pool_nchw"):            # max pooling 3x3 stride 2 (a CNN stem's), channels-last or NCHW
        per_px = 2 * POOL_C * 1.25                   # input bytes per pixel, plus a quarter for the output
        n = max(1, int(nbytes // (per_px * POOL_HW * POOL_HW)))
        hw = POOL_HW if n > 1 else max(8, int((nbytes / per_px) ** 0.5) // 2 * 2)
        x = rnd(n, POOL_C, hw, hw)
        x = x.to(memory_format=torch.channels_last) if kind == "pool" else x
        holder = {}
        out_px = n * POOL_C * ((hw + 1) // 2) ** 2
        return ((lambda: holder.__setitem__("y", F.max_pool2d(x, 3, 2, 1))), 2 * (x.numel() + out_px),
                lambda: (holder["y"].float(), F.max_pool2d(x.float(), 3, 2, 1)), f"{n} x {POOL_C} x {hw} x {hw}")
    if kind == "permute":
        rows = max(1, nbytes // (4 * int(np.prod(PERMUTE_SHAPE))))
        swap = lambda a: a.transpose(1, 2).contiguous().view(a.shape)  # noqa: E731
        return _pack(_chain(swap, rnd(rows, *PERMUTE_SHAPE), swap), 4 * rows * int(np.prod(PERMUTE_SHAPE)),
                     f"{rows} x {' x '.join(map(str, PERMUTE_SHAPE))} -> (0, 2, 1, 3)")
    if kind in ("sort", "topk"):
        return _moe_case(torch, kind, nbytes, gen)
    rows = max(1, nbytes // (2 * POOL))          # reduction: NHWC global average pooling, [rows/C, 7, 7, C]
    c = 256 if rows >= 256 else rows
    x = rnd(max(1, rows // c), POOL, c)
    holder = {}
    return (lambda: holder.__setitem__("y", x.mean(dim=1))), 2 * x.numel() + 2 * x.shape[0] * c, lambda: (
        holder["y"].float(), x.float().mean(dim=1)), f"{x.shape[0]} x {POOL} x {c}"


def _moe_case(torch, kind: str, nbytes: int, gen):
    """sort and topk (see SORT_KEY_BYTES, TOPK_EXPERTS): an MoE's routing, its expert ids sorted and its router's
    top k."""
    if kind == "sort":
        n = max(256, nbytes // SORT_KEY_BYTES)
        keys = torch.randint(0, SORT_EXPERTS, (n,), device="cuda", generator=gen)
        holder = {}

        def check():
            values, order = holder["y"]
            return torch.stack((values, keys[order])).float(), torch.sort(keys.cpu()).values.float().cuda().expand(2, n)

        return (lambda: holder.__setitem__("y", torch.sort(keys))), SORT_KEY_BYTES * n, check, f"{n} int64 keys"
    rows = max(1, nbytes // TOPK_ROW_BYTES)         # topk
    x = torch.rand(rows, TOPK_EXPERTS, device="cuda", generator=gen).softmax(dim=-1)
    holder = {}

    def check():        # the values and the scores at the indices, against a full sort's first k
        values, idx = holder["y"]
        want = torch.sort(x, dim=-1, descending=True).values[:, :TOPK_K]
        return torch.stack((values, x.gather(-1, idx))), want.expand(2, rows, TOPK_K)

    return ((lambda: holder.__setitem__("y", torch.topk(x, TOPK_K, dim=-1))), TOPK_ROW_BYTES * rows, check,
            f"{rows} x {TOPK_EXPERTS} fp32, top {TOPK_K}")


def _map_shape(elems: float, c: int) -> tuple[int, int]:
    """(images, side) of an N x c x side x side map of about ``elems`` elements (side 56 once one image is full)."""
    n = int(elems // (c * MAP_HW * MAP_HW))
    if n >= 1:
        return n, MAP_HW
    return 1, max(4, int((elems / c) ** 0.5))


def _map_case(torch, kind: str, nbytes: int, rnd):
    """A CNN's feature-map kernels: inference BatchNorm (channels-last, a per-channel scale and shift), GroupNorm
    (NCHW, 32 groups: statistics per group, then the affine), a nearest 2x upsampling (channels-last; its output
    is four times its input) and an NCHW convolution's bias add (PyTorch runs a per-channel (1, C, 1, 1) operand
    over an NCHW map on its plain, non-vectorized elementwise kernel: a ResNet-50's 53 of them took 2.1 ms at 64
    images on an H200 where the channels-last-style 'bias' curve priced 1.7 ms). BatchNorm, GroupNorm and the bias
    add chain; the upsampling reads one map each launch."""
    F = torch.nn.functional
    cl = torch.channels_last
    if kind in ("resize_linear", "resize_linear_nchw"):
        per_in = 2 * (1 + LINEAR_UP ** 2)                # 2 bytes in + 2 x 16 out per input element
        n, hw = _map_shape(nbytes / per_in, LINEAR_C)
        x = rnd(n, LINEAR_C, hw, hw)
        x = x.to(memory_format=cl) if kind == "resize_linear" else x
        holder = {}
        up = lambda a: F.interpolate(a, scale_factor=float(LINEAR_UP), mode="bilinear")  # noqa: E731
        return ((lambda: holder.__setitem__("y", up(x))), per_in * x.numel(), lambda: (holder["y"].float(),
                up(x.float())), f"{n} x {LINEAR_C} x {hw} x {hw} -> {LINEAR_UP}x bilinear")
    if kind == "resize":
        n, hw = _map_shape(nbytes / 10, MAP_C)          # 2 bytes in + 8 out per input element
        x = rnd(n, MAP_C, hw, hw).to(memory_format=cl)
        holder = {}
        up = lambda a: F.interpolate(a, scale_factor=2.0, mode="nearest")  # noqa: E731
        return ((lambda: holder.__setitem__("y", up(x))), 10 * x.numel(), lambda: (holder["y"].float(),
                up(x.float())), f"{n} x {MAP_C} x {hw} x {hw} -> 2x")
    c = GN_C if kind == "group_norm" else MAP_C
    n, hw = _map_shape(nbytes / 4, c)
    x = rnd(n, c, hw, hw)
    if kind == "bias_nchw":       # an NCHW convolution's bias: x + b over (1, C, 1, 1), each launch its own b, cold
        bias = param_copies(torch, (c, 1, 1), lambda s: rnd(*s), torch.float16)
        last = {}

        def add(a):
            last["b"] = bias()
            return a + last["b"]

        return _pack(_chain(add, x, lambda a: a + last["b"].float()), 4 * x.numel(), f"{n} x {c} x {hw} x {hw} + "
                     f"{c} x 1 x 1")
    w, b = rnd(c).abs() + 0.5, rnd(c)
    if kind == "batch_norm":
        # a chain of inference BNs applies the same affine map again and again: keep it a contraction (scale
        # w / sqrt(var) <= 0.75), or FP16 overflows within the chain (seen on an H200: NaN at 8 KiB and 32 MiB)
        x = x.to(memory_format=cl)
        w = rnd(c).abs() * 0.5 + 0.25
        mean, var = rnd(c), rnd(c).abs() + 1.0
        step = lambda a: F.batch_norm(a, mean, var, w, b, training=False)  # noqa: E731
        ref = lambda a: F.batch_norm(a, mean.float(), var.float(), w.float(), b.float(), training=False)  # noqa
    else:
        step = lambda a: F.group_norm(a, GN_GROUPS, w, b)  # noqa: E731
        ref = lambda a: F.group_norm(a, GN_GROUPS, w.float(), b.float())  # noqa: E731
    return _pack(_chain(step, x, ref), 4 * x.numel(), f"{n} x {c} x {hw} x {hw}")


def _cache_case(torch, kind: str, nbytes: int, rnd):
    """cat_strided and expand (see KV_HEADS): the KV cache's copies under transformers' eager and static caches."""
    d, kvh = HEAD_DIM, KV_HEADS
    if kind == "cat_strided":       # the window slides: drop the oldest token, add one from a fused projection
        b, n = _batch_tokens(nbytes, kvh, 2 * kvh)       # b * kvh * n rows, each element read once and written once
        qkv = rnd(b, 1, (Q_HEADS + 2 * kvh) * d)
        new = qkv[..., (Q_HEADS + kvh) * d:].view(b, 1, kvh, d).transpose(1, 2)
        step = lambda a: torch.cat((a[:, :, 1:], new), dim=2)  # noqa: E731
        ref = lambda a: torch.cat((a[:, :, 1:], new.float()), dim=2)  # noqa: E731
        return _pack(_chain(step, rnd(b, kvh, n, d), ref), 4 * b * kvh * n * d,
                     f"{b} x {kvh} x ({n} - 1 + 1) x {d}, new token strided")
    rep = Q_HEADS // kvh
    b, n = _batch_tokens(nbytes, Q_HEADS, Q_HEADS)     # b * heads * n output rows, each written and read once
    cache = param_copies(torch, (b, kvh, n, d), lambda s: rnd(*s), torch.float16)
    holder = {}

    def step():
        holder["x"] = cache()
        holder["y"] = holder["x"][:, :, None].expand(b, kvh, rep, n, d).reshape(b, kvh * rep, n, d)

    return step, 4 * b * Q_HEADS * n * d, lambda: (holder["y"].float(), holder["x"].float().repeat_interleave(
        rep, dim=1)), f"{b} x {kvh} x {n} x {d} -> {Q_HEADS} heads"


def _rotate_case(torch, nbytes: int, rnd):
    """rotate_cat (see KV_HEADS): each step reads the previous output as a [b, n, heads, d] projection, transposes
    it and cats the fixed -x2 (laid out as PyTorch's neg lays out a transposed slice) before its first half."""
    d, h = HEAD_DIM, Q_HEADS
    b, n = _batch_tokens(nbytes, h, 2 * h)               # b * h * n rows of d, n >= 2 (one token's q is contiguous)
    neg = -(rnd(b, n, h, d).transpose(1, 2)[..., d // 2:])
    heads = lambda a: a.view(b, n, h, d).transpose(1, 2)  # noqa: E731
    step = lambda a: torch.cat((neg, heads(a)[..., :d // 2]), dim=-1)  # noqa: E731
    ref = lambda a: torch.cat((neg.float(), heads(a)[..., :d // 2]), dim=-1)  # noqa: E731
    return _pack(_chain(step, rnd(b, h, n, d), ref), 4 * b * h * n * d,
                 f"{b} x {h} x {n} x ({d // 2} + {d // 2}), heads transposed")


def _batch_tokens(nbytes: int, heads: int, min_rows: int) -> tuple[int, int]:
    """(batch, tokens) of a [batch, heads, tokens, HEAD_DIM] cache whose rows moved twice (read and written) come to
    ``nbytes``: up to 1024 tokens, then more sequences."""
    rows = max(min_rows, nbytes // (4 * HEAD_DIM))
    n = min(1024, rows // heads)
    return max(1, rows // (heads * n)), n


def _pack(chain, moved: int, shape: str):
    fn, check = chain
    return fn, moved, check, shape


def _sizes_of(kind: str, sizes: list[int]) -> list[int]:
    """The bytes a kind's curve is measured at: the common sizes; sort's up to SORT_MAX_BYTES, with a point just past
    PyTorch's one-CTA sort (SORT_STEP_KEYS + 1 keys); topk's up to SORT_MAX_BYTES, from one row and four (decode
    steps); rotate_cat's from two tokens."""
    if kind == "sort":
        return sorted({n for n in sizes if n <= SORT_MAX_BYTES} | {SORT_KEY_BYTES * (SORT_STEP_KEYS + 1)})
    if kind == "topk":
        return sorted({n for n in sizes if n <= SORT_MAX_BYTES} | {TOPK_ROW_BYTES, 4 * TOPK_ROW_BYTES})
    if kind == "rotate_cat":        # from two tokens' q (one token's is contiguous: the 'cat' kind)
        return [n for n in sizes if n >= 4 * HEAD_DIM * 2 * Q_HEADS]
    return sizes


def _bilinear_point(torch, side: int, planes: int, src: int) -> float:
    """Seconds per NCHW bilinear upsampling of ``planes`` planes from ``src`` x ``src`` to ``side`` x ``side``,
    replayed in a CUDA graph; the output checked against FP32."""
    F = torch.nn.functional
    x = (torch.rand(1, planes, src, src, device="cuda") * 2 - 1).half()
    up = lambda a: F.interpolate(a, size=(side, side), mode="bilinear")  # noqa: E731
    holder = {}
    t, _ = graph_time(torch, lambda: holder.__setitem__("y", up(x)))
    check_close((holder["y"].float(), up(x.float())), f"torch bilinear {planes} planes {src} -> {side}")
    return t


def _bilinear_grid(ctx, torch, max_bytes: int, rows: list[dict]):
    """resize_linear_nchw's grid (BILINEAR_SIDES x BILINEAR_PLANES, from side // 2 and from 1 x 1) into ``rows``
    (``source``: the input's pixels per plane); a point that fails is an error record, the rest go on."""
    metric = C.metric(Curve.FRAMEWORK, "resize_linear_nchw")
    for src_of in (lambda side: side // 2, lambda side: 1):
        for side in BILINEAR_SIDES:
            for planes in BILINEAR_PLANES:
                src = src_of(side)
                if 2 * planes * (side * side + src * src) > max_bytes:
                    continue
                try:
                    t = _bilinear_point(torch, side, planes, src)
                    rows.append({"pixels": side * side, "planes": planes, "source": src * src, "time_s": t})
                except Exception as e:
                    yield ctx.error(C.point_metric(metric, side=side, planes=planes, src=src), "torch bilinear grid",
                                    e)
                finally:
                    torch.cuda.empty_cache()


def _curves(ctx, torch, kinds, sizes):
    for kind in kinds:
        pts = []
        curve = C.metric(Curve.FRAMEWORK, kind)
        for nbytes in common.curve_sizes(ctx, C.curve_id(Curve.FRAMEWORK, kind), _sizes_of(kind, sizes)):
            metric = C.point_metric(curve, b=nbytes)
            try:
                fn, moved, check, shape = _case(torch, kind, nbytes)
                t, reps = graph_time(torch, fn)
                fn()
                torch.cuda.synchronize()
                check_close(check(), f"torch {kind} {shape}")
            except Exception as e:
                yield ctx.error(metric, f"torch {kind} at {nbytes} B", e)
                continue
            finally:
                torch.cuda.empty_cache()
            pts.append((moved, t, shape))
            yield ctx.derived(metric, moved / t, unit="B/s", kind="sweep", verified=True,
                              params={"kernel": kind, K.BYTES: moved, "time_s": t, "shape": shape, "reps": reps})
        grid: list[dict] = []
        if kind == "resize_linear_nchw" and not ctx.quick:
            yield from _bilinear_grid(ctx, torch, max(sizes, default=0), grid)
        if pts:
            pts.sort()
            also = "; and a grid over output pixels x planes from 2x and 1 x 1 maps (loops over planes)" if grid else ""
            yield ctx.derived(curve, len(pts), unit="points", kind="info",
                              params={"kind": kind, K.BYTES: [p[0] for p in pts], "time_s": [p[1] for p in pts],
                                      "shapes": [p[2] for p in pts], "dtype": "float16", "runtime": "cuda_graph",
                                      "framework": f"torch {torch.__version__}", **({"grid": grid} if grid else {})},
                              notes=[f"PyTorch {kind} kernel: seconds per kernel against bytes moved, replayed in a "
                                     f"CUDA graph{also}"])


EAGER_OPS = 2000          # ops per host-overhead sample


def _eager_ops(torch):
    """Small ops of the kinds a model calls eagerly: the GPU finishes each long before the host issues the next."""
    F = torch.nn.functional
    x = torch.randn(1, 64, 16, 16, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    a, lw = torch.randn(64, 256, device="cuda", dtype=torch.float16), torch.randn(256, 256, device="cuda").half()
    return {"relu": lambda: F.relu(x), "add": lambda: x + x, "layer_norm": lambda: F.layer_norm(a, (256,)),
            "linear": lambda: F.linear(a, lw), "conv2d": lambda: F.conv2d(x, w, padding=1)}


def eager_host_s(torch, ops: int = EAGER_OPS) -> dict[str, float]:
    """Host seconds per eagerly issued op, per kind of small op (each the median of three loops of ``ops``): what
    an eager model pays per kernel once its kernels are faster than the host can issue them. The host differs from
    machine to machine (the medians were 11.6 us on an H100 lease and 18.4 on an H200 lease on 2026-11-27, and 10.1
    then 15.2 us within one H100 run on 2026-11-28): tools/validate_hf_llm.py takes it in the same process as the
    model timings it validates."""
    import time

    per = {}
    for name, fn in _eager_ops(torch).items():
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        samples = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(ops):
                fn()
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - t0) / ops)
        per[name] = float(np.median(samples))
    return per


def _eager(ctx, torch):
    """The framework's host time per op when it runs eagerly (no CUDA graph), the median over kinds; beside it, where
    transformers is installed, transformers' own host time per kernel of an eager decode step (hf_host)."""
    try:
        per = eager_host_s(torch)
    except Exception as e:
        yield ctx.error(C.metric(Curve.EAGER), "torch eager host time", e)
        return
    hf, notes = transformers_host(torch)
    yield ctx.derived(C.metric(Curve.EAGER), float(np.median(list(per.values()))), unit="s", kind="info",
                      params={"per_op_s": per, "ops_per_sample": EAGER_OPS, "transformers": hf},
                      notes=["host time per eagerly issued PyTorch op (small relu, add, layer norm, linear, conv2d in "
                             "Python loops; the GPU finishes each before the next is issued): the median over kinds",
                             *notes])


def transformers_host(torch) -> tuple[dict | None, list[str]]:
    """hf_host.measure where it can run, else None and the reason (the bare-op figure stands alone then)."""
    from hwprobe.probes.calibration import hf_host

    try:
        got = hf_host.measure(torch)
    except ImportError as e:
        return None, [f"transformers' host time not measured: transformers is not installed ({e})"]
    except Exception as e:
        return None, [f"transformers' host time not measured: {type(e).__name__}: {e}"[:300]]
    fams = ", ".join(f"{k} {v['vs_llama']:.2f}x" for k, v in sorted((got.get("families") or {}).items()))
    lacking = ", ".join(sorted(got.get("family_errors") or {}))
    return got, [f"transformers {got['version']}: {got['kernel_s'] * 1e6:.1f} us of host per kernel of an eager "
                 f"decode step ({got['kernels_per_step']} kernels, a 4-layer Llama of hidden 64 over a DynamicCache)"
                 + (f"; the same decoder in each family's classes, per kernel against it: {fams}" if fams else "")
                 + (f"; not measured: {lacking}" if lacking else "")]


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

            warm(torch, fn, 1)
            g = capture(torch, fn, 1)
            samples = [replay_s(torch, g, flush=False) for _ in range(common.REPLAY_SAMPLES)][common.REPLAY_WARM:]
            med.append(float(np.median(samples)))
    except Exception as e:
        yield ctx.error(C.metric(Curve.FRAMEWORK_REPLAY), "torch graph replay cost", e)
        return
    intercept, slope = common.replay_fit(med)
    yield ctx.derived(C.metric(Curve.FRAMEWORK_REPLAY), intercept, unit="s", kind="info",
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
        alone = [graph_time(torch, f, SWITCH_REPS)[0] for f in fns]

        def mixed() -> None:
            for f in fns:
                f()

        t_mixed = graph_time(torch, mixed, SWITCH_REPS)[0] / len(fns)
    except Exception as e:
        yield ctx.error(C.metric(Curve.SWITCH), "torch kernel switch cost", e)
        return
    switch = max(0.0, t_mixed - float(np.mean(alone)))
    yield ctx.derived(C.metric(Curve.SWITCH), switch, unit="s", kind="info",
                      params={"alone_s": alone, "mixed_per_kernel_s": t_mixed, K.BYTES: SWITCH_BYTES,
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

            t_lib = graph_time(torch, chain(lib), SWITCH_REPS)[0]
            t_fw = graph_time(torch, chain(fw), SWITCH_REPS)[0]
            t_pair = graph_time(torch, chain(lib, fw), SWITCH_REPS)[0] / 2
            if not bool(torch.isfinite(st["x"]).all()):
                raise AssertionError(f"{name}: the chain's output is not finite")
            per[name] = {"library_s": t_lib, "framework_s": t_fw, "alternating_per_kernel_s": t_pair,
                         "switch_s": max(0.0, t_pair - (t_lib + t_fw) / 2)}
    except Exception as e:
        yield ctx.error(C.metric(Curve.SWITCH_LIBRARY), "torch library/framework switch cost", e)
        return
    yield ctx.derived(C.metric(Curve.SWITCH_LIBRARY), float(np.median([p["switch_s"] for p in per.values()])),
                      unit="s", kind="info", params={"pairs": per},
                      notes=["per-kernel cost of alternating a library kernel (cuBLAS linear, cuDNN convolution) "
                             "with a framework kernel (add, bias add) in one CUDA graph, over each replayed alone: "
                             "the median over pairs"])


@probe(name="gpu.torch_kernels", target="gpu", family="calibration", precisions=grids.PRECISIONS,
       summary="Prediction calibration with PyTorch's own kernels (optional: skipped without torch): elementwise, "
               "bias (last-dim and NCHW per-channel), norm, softmax, reduction, pooling (both layouts), copy, "
               "permuted copy, KV-cache cat and repeat_kv, BatchNorm, GroupNorm, resize, sort, topk, and per precision "
               "linear layers, cuDNN convolutions, SDPA attention and MoE grouped GEMMs, in CUDA graphs",
       choices={"kinds": KINDS, "conv_families": grids.CONV_FAMILIES})
def run(ctx, kinds: list[str] | None = None, sdpa: bool = True, convs: bool = True, linears: bool = True,
        max_bytes: int = 1 << 30, precisions: list[str] | None = None, conv_families: list[str] | None = None,
        library_workers: int | None = None, grouped: bool = True):
    try:
        import torch
    except Exception as e:
        yield ctx.skip(C.family(Curve.FRAMEWORK), f"PyTorch is not installed ({type(e).__name__}); the predictor uses "
                                        "hwprobe's own kernels' curves")
        return
    if not torch.cuda.is_available():
        yield ctx.skip(C.family(Curve.FRAMEWORK), "torch sees no CUDA device")
        return
    sizes = [s for s in (QUICK_SIZES if ctx.quick else SIZES) if s <= max_bytes]
    from hwprobe.probes.calibration import hf_host
    from hwprobe.probes.calibration import library_workers as pool
    from hwprobe.probes.calibration import torch_library as lib

    precs = list(precisions or ("fp16", "bf16"))
    if library_workers is None:            # worker processes where the grids are large enough to pay for them
        library_workers = pool.count(sum(len(grids.conv_cases(p, ctx.quick, conv_families)) for p in precs if convs)
                                     + sum(len(grids.sdpa_cases(p, ctx.quick)) for p in precs if sdpa))
    with torch.inference_mode():
        yield from _switch(ctx, torch)     # the host-sensitive points first, on a quiet host
        yield from _replay(ctx, torch)
        with pool.measuring(torch, library_workers) as measured:
            yield from _curves(ctx, torch, kinds or KINDS, sizes)     # GPU-timed, while the workers import PyTorch
            if library_workers:            # this process waits on the first calls in the workers meanwhile
                hf_host.import_ahead()
            if convs:
                yield from lib.convs(ctx, torch, precs, ctx.quick, conv_families, measured, library_workers)
            if sdpa:
                yield from lib.sdpa(ctx, torch, precs, ctx.quick, measured, library_workers)
        yield from _eager(ctx, torch)
        if linears:
            yield from lib.linears(ctx, torch, precs, ctx.quick)
        if grouped:
            yield from lib.grouped(ctx, torch, precs, ctx.quick)
