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

KINDS = ("elementwise", "unary", "bias", "norm", "softmax", "reduction", "copy")
SIZES = common.geometric(1 << 13, 1 << 30, 2)
QUICK_SIZES = common.geometric(1 << 13, 1 << 26, 8)
HIDDEN = 1024             # norm/softmax rows; bias channels
POOL = 49                 # reduction: mean over a 7 x 7 map per channel (global average pooling)
SDPA_BH = (12, 96, 384, 1536)
SDPA_SEQ = (128, 256, 512, 1024, 2048, 4096)
SDPA_DIM = (64, 128)
SDPA_MAX_ELEMS = 1 << 29  # batch x heads x seq x dim of Q at most (memory and time)


def _graph_time(torch, fn, reps: int | None = None) -> tuple[float, int]:
    """Seconds per call of ``fn`` replayed ``reps`` times back to back in a CUDA graph (median of 3 replays)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()

    def capture(n: int):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n):
                fn()
        return g

    def timed(g) -> float:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e-3

    if reps is None:
        g = capture(common.MIN_REPS)
        g.replay()
        reps = common.reps_for_time(timed(g) / common.MIN_REPS)
    g = capture(reps)
    g.replay()
    return float(np.median([timed(g) for _ in range(common.point_rule().min_samples)])) / reps, reps


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
    if kind == "bias":
        rows = max(1, nbytes // (4 * HIDDEN))
        b = rnd(HIDDEN)
        return _pack(_chain(lambda a: a + b, rnd(rows, HIDDEN), lambda a: a + b.float()), 4 * rows * HIDDEN,
                     f"{rows} x {HIDDEN} + {HIDDEN}")
    if kind in ("norm", "softmax"):
        rows = max(1, nbytes // (4 * HIDDEN))
        if kind == "norm":
            w, b = rnd(HIDDEN), rnd(HIDDEN)
            step = lambda a: F.layer_norm(a, (HIDDEN,), w, b)
            ref = lambda a: F.layer_norm(a, (HIDDEN,), w.float(), b.float())
        else:
            step, ref = (lambda a: torch.softmax(a, dim=-1)), (lambda a: torch.softmax(a, dim=-1))
        return _pack(_chain(step, rnd(rows, HIDDEN), ref), 4 * rows * HIDDEN, f"{rows} x {HIDDEN}")
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
        for nbytes in sizes:
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
    """Time every case (``measure(**case)``) into ``rows``; a case that fails is an error record, the rest go on."""
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


def _conv_point(torch, m: int, cin: int, cout: int, k: int) -> float:
    """One channels-last FP16 convolution (stride 1, 'same' padding) over an output of m pixels, as cuDNN runs it
    for PyTorch (cudnn.benchmark picks the algorithm, as a deployment does); checked on a few outputs in FP32."""
    F = torch.nn.functional
    side = int(round(m ** 0.5))
    n, hw = (max(1, m // 3136), 56) if side * side != m and m >= 3136 else (1, side)
    x = torch.randn(n, cin, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    w = (torch.randn(cout, cin, k, k, device="cuda", dtype=torch.float16) / (cin * k * k) ** 0.5).to(
        memory_format=torch.channels_last)
    holder = {}
    t, _ = _graph_time(torch, lambda: holder.__setitem__("y", F.conv2d(x, w, padding=k // 2)))
    ref = F.conv2d(x[:1, :, :8, :8].float(), w.float(), padding=k // 2)
    got = holder["y"][:1, :, :8, :8].float()
    inner = slice(k // 2, 8 - k // 2)        # away from the crop's border, where the padding differs
    _check((got[..., inner, inner], ref[..., inner, inner]), f"conv {k}x{k} {cin}->{cout} at {m}")
    return t


def _convs(ctx, torch, quick: bool):
    torch.backends.cudnn.benchmark = True
    ms = CONV_M[::3] if quick else CONV_M
    shapes = [(1, a, b) for a in CONV1_C for b in CONV1_C] + [(3, c, c) for c in CONV3_C]
    if quick:
        shapes = shapes[::7]
    cases = [{"k": k, "cin": cin, "cout": cout, "m": m} for k, cin, cout in shapes for m in ms
             if m * cin * cout * k * k <= CONV_MAX_MACS]
    rows: list[dict] = []
    yield from _sweep(ctx, torch, cases, lambda **c: _conv_point(torch, **c), "predict.torch.conv", "torch conv2d",
                      rows)
    if rows:
        yield ctx.derived("predict.torch.conv", len(rows), unit="points", kind="info",
                          params={"points": rows, "framework": f"torch {torch.__version__}", "dtype": "float16",
                                  "layout": "channels_last", "cudnn_benchmark": True},
                          notes=["PyTorch conv2d (cuDNN), channels-last FP16, stride 1: seconds per convolution over "
                                 "output pixels x C_in x C_out for 1x1 and 3x3 kernels, replayed in a CUDA graph"])


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


@probe(name="gpu.torch_kernels", target="gpu", family="calibration",
       summary="Prediction calibration with PyTorch's own kernels (optional: skipped without torch): elementwise, "
               "bias, norm, softmax, reduction, copy, cuDNN convolutions and SDPA attention, in CUDA graphs",
       choices={"kinds": KINDS})
def run(ctx, kinds: list[str] | None = None, sdpa: bool = True, convs: bool = True, max_bytes: int = 1 << 30):
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
        yield from _eager(ctx, torch)
        if convs:
            yield from _convs(ctx, torch, ctx.quick)
        if sdpa:
            yield from _sdpa(ctx, torch, ctx.quick)
