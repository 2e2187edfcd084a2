"""gpu.torch_kernels' library half: PyTorch's cuDNN convolutions, linear layers (cuBLAS/cuBLASLt, torch._int_mm,
torch._scaled_mm) and scaled-dot-product attention, per precision, over hwprobe.probes.calibration.grids.

Each point is timed like the rest of gpu.torch_kernels (replayed in a CUDA graph, each launch on its own cold
weights after L2 was filled with other data) and checked against FP32 arithmetic on a slice of its output. A
precision is measured in PyTorch's own mode for it: FP32 with TF32 off for cuBLAS and cuDNN, TF32 with it on
(PyTorch's default turns it on for convolutions only: a default FP32 CNN's convolutions are TF32 points), INT8 as
torch._int_mm (int8 x int8 -> int32), FP8 as torch._scaled_mm (E4M3, per-tensor scales, BF16 out).

Results: the calibration curves (hwprobe.calibration) ``conv`` (every convolution point, each naming its precision,
kernel, stride, groups, layout and images), ``framework_linear`` (a rows x N x K grid per precision) and ``sdpa``
(points naming their precision).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from hwprobe import calibration as C
from hwprobe import keys as K
from hwprobe.probes.calibration import grids
from hwprobe.probes.calibration.torch_timing import check_close, graph_time, param_copies, reference_mode, sweep
from hwprobe.vocab import Curve

CHECK_TOL = {"fp16": 2e-2, "bf16": 4e-2, "tf32": 2e-2, "fp32": 1e-3, "int8": 1e-6, "fp8": 6e-2}


def _dtype(torch, precision: str):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "fp32": torch.float32,
            "int8": torch.int8, "fp8": getattr(torch, "float8_e4m3fn", None)}[precision]


@contextmanager
def math_mode(torch, precision: str):
    """PyTorch's TF32 switches as ``precision`` wants them (on for TF32, off for everything else), restored after."""
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


# --- convolutions -----------------------------------------------------------------------------------------------
def conv_geometry(case: dict) -> tuple[tuple, tuple, tuple[int, int], int]:
    """(input shape, weight shape, padding (height, width), crop) of a conv case: 'same' padding at its stride for the
    body's kernels (output side = input side / stride; a non-square kernel, ``kw``, padded per side), whole STEM_HW
    images for stems; the check's crop of the first image (an 8 x 8 output corner; 0: the whole image, for stems and
    maps under 16 x 16)."""
    k, s, cin, cout, g = case["k"], case.get("stride", 1), case["cin"], case["cout"], case.get("groups", 1)
    kw = case.get("kw") or k
    images = case.get("images", 1)
    if cin < 8:
        pad, _ = grids.stem_geometry(k, s)
        return (images, cin, grids.STEM_HW, grids.STEM_HW), (cout, cin, k, k), (pad, pad), 0
    side = int(round((case["m"] // images) ** 0.5))
    d = case.get("dilation", 1)
    pads = (d * (k // 2), d * (kw // 2))                          # a dilated kernel reaches d x (k // 2) each side
    reach = max(pads)
    crop = 8 + 2 * (reach if kw != k else reach - k // 2)       # the corner keeps 8 x 8 outputs clear of the border
    return (images, cin, side * s, side * s), (cout, cin // g, k, kw), pads, crop if side >= 2 * crop else 0


def conv_search(torch, case: dict):
    """One case's operands and F.conv2d call, called once (cudnn.benchmark's algorithm search for its shape: host
    work, the same whichever process runs it); returns ``(call, check)`` for conv_time."""
    F = torch.nn.functional
    precision = case["precision"]
    x_shape, w_shape, pad, crop = conv_geometry(case)
    dtype = _dtype(torch, precision)
    fmt = torch.channels_last if case["layout"] == "nhwc" else torch.contiguous_format
    x = torch.randn(*x_shape, device="cuda", dtype=dtype).to(memory_format=fmt)
    fan_in = w_shape[1] * w_shape[2] * w_shape[3]
    weights = param_copies(torch, w_shape, lambda s: torch.randn(*s, device="cuda", dtype=dtype).mul_(fan_in ** -0.5),
                           dtype, channels_last=case["layout"] == "nhwc")
    conv = {"stride": case.get("stride", 1), "padding": pad, "groups": case.get("groups", 1),
            "dilation": case.get("dilation", 1)}
    holder = {}

    def call() -> None:
        holder["w"] = weights()
        holder["y"] = F.conv2d(x, holder["w"], **conv)

    def check() -> None:
        w = holder["w"].float()
        with reference_mode(torch):
            if crop:
                s, border = conv["stride"], max(pad)
                inner = slice(border, crop - border)
                ref = F.conv2d(x[:1, :, :crop * s, :crop * s].float(), w, **conv)[..., inner, inner]
                got = holder["y"][:1, :, inner, inner].float()
            else:
                ref, got = F.conv2d(x[:1].float(), w, **conv), holder["y"][:1].float()
        check_close((got, ref), f"{precision} conv {w_shape[2]}x{w_shape[3]}/{conv['stride']} g{conv['groups']} "
                           f"d{conv['dilation']} "
                           f"{case['cin']}->{case['cout']} at {case['m']}", CHECK_TOL[precision])

    with math_mode(torch, precision):
        call()
        torch.cuda.synchronize()
    return call, check


def conv_time(torch, case: dict, searched) -> float:
    """Seconds per call of a searched case (conv_search), timed in a CUDA graph; its output checked in FP32."""
    call, check = searched
    with math_mode(torch, case["precision"]):
        t, _ = graph_time(torch, call)
        check()
    return t


def _conv_point(torch, **case) -> float:
    """F.conv2d of one case as cuDNN runs it for PyTorch (cudnn.benchmark picks the algorithm), timed in a CUDA
    graph, each launch on its own weight copy, in its layout (nchw: cuDNN's transforms included); the first image
    checked in FP32 on a corner away from the border (or whole, for stems)."""
    return conv_time(torch, case, conv_search(torch, case))


def _pooled(measured, family: str):
    """sweep's ``measured`` for ``family``: library_workers.measuring's ``measured``, or None (this process)."""
    return None if measured is None else (lambda cases: measured(cases, family))


def _how(measured, family: str, workers: int) -> dict:
    """The record's params saying how its points were measured: in this process, or by the worker processes (with
    the seconds each phase of the pool took for this family)."""
    if measured is None:
        return {"search_workers": 1}
    return {"search_workers": workers,
            "pool_s": {k: round(v, 2) for k, v in measured.phases.get(family, {}).items()}}


def convs(ctx, torch, precisions, quick: bool, families: list[str] | None = None, measured=None, workers: int = 1):
    """Every convolution point of ``precisions``, in this process or, given ``measured``, by the ``workers`` worker
    processes behind it (library_workers.measuring: cuDNN's searches in parallel, each point timed alone)."""
    torch.backends.cudnn.benchmark = True
    rows: list[dict] = []
    for prec in precisions:
        with math_mode(torch, prec):
            yield from sweep(ctx, torch, grids.conv_cases(prec, quick, families), lambda **c: _conv_point(torch, **c),
                              C.point_metric(C.metric(Curve.CONV), prec), f"torch conv2d {prec}", rows,
                              _pooled(measured, "conv"))
    if rows:
        yield ctx.derived(C.metric(Curve.CONV), len(rows), unit="points", kind="info",
                          params={K.POINTS: rows, "framework": f"torch {torch.__version__}",
                                  "precisions": sorted({r["precision"] for r in rows}),
                                  "layouts": sorted({r["layout"] for r in rows}), "cudnn_benchmark": True,
                                  **_how(measured, "conv", workers)},
                          notes=["PyTorch conv2d (cuDNN) per precision: seconds per convolution over output pixels "
                                 "x C_in x C_out at kernels 1, 3, 5, 7 (3x3 also dilated by 2, 12, 36) and 1x7, "
                                 "7x1, 1x3, 3x1, strides 1 and 2, groups 1, 2, 4, 8, 32, "
                                 "group widths 24, 48 and 120, and depthwise (3x3 and 5x5 also dilated by 2), "
                                 "channels-last (nhwc) and NCHW (cuDNN's transforms included), one image and many, "
                                 "and the stems on an image's 3 channels, replayed in a CUDA graph; each "
                                 "point names its precision, kernel, stride, groups, layout and images"])


# --- linear layers ----------------------------------------------------------------------------------------------
def _linear_call(torch, precision: str, m: int, n: int, k: int):
    """(call, check) of one linear layer at ``precision``, each launch on its own (cold) weight copy."""
    F = torch.nn.functional
    holder = {}
    if precision == "int8":
        x = torch.randint(-4, 5, (m, k), device="cuda", dtype=torch.int8)
        weights = param_copies(torch, (n, k), lambda s: torch.randint(-4, 5, s, device="cuda", dtype=torch.int8),
                               torch.int8)

        def call() -> None:
            holder["w"] = weights()
            holder["y"] = torch._int_mm(x, holder["w"].t())
    elif precision == "fp8":
        f8 = _dtype(torch, "fp8")
        x = (torch.rand(m, k, device="cuda") * 2 - 1).to(f8)
        one = torch.ones((), device="cuda")
        weights = param_copies(torch, (n, k), lambda s: ((torch.rand(*s, device="cuda") * 2 - 1) / k ** 0.5).to(f8),
                               f8)

        def call() -> None:
            holder["w"] = weights()
            holder["y"] = torch._scaled_mm(x, holder["w"].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        dtype = _dtype(torch, precision)
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        weights = param_copies(torch, (n, k), lambda s: torch.randn(*s, device="cuda", dtype=dtype).div_(k ** 0.5),
                               dtype)

        def call() -> None:
            holder["w"] = weights()
            holder["y"] = F.linear(x, holder["w"])

    def check() -> None:
        with reference_mode(torch):
            want = x[:4].float() @ holder["w"].float().T
        check_close((holder["y"][:4].float(), want), f"{precision} linear {m}x{k}->{n}", CHECK_TOL[precision])

    return call, check


def _linear_point(torch, precision: str, m: int, n: int, k: int) -> float:
    call, check = _linear_call(torch, precision, m, n, k)
    t, _ = graph_time(torch, call)
    check()
    return t


def linears(ctx, torch, precisions, quick: bool):
    """PyTorch's own GEMM for a linear layer over rows x N x K per precision: the framework's library calls and
    heuristics (cuBLASLt, its epilogues) where gpu.gemm_shapes times cublasGemmEx's default algorithm."""
    for prec in precisions:
        curve = C.metric(Curve.FRAMEWORK_LINEAR, prec)
        if _dtype(torch, prec) is None:
            yield ctx.skip(curve, f"torch {torch.__version__} has no {prec} dtype")
            continue
        ms, nks = grids.linear_axes(prec, quick)
        rows: list[dict] = []
        with math_mode(torch, prec):
            yield from sweep(ctx, torch, grids.linear_cases(prec, quick),
                              lambda prec=prec, **c: _linear_point(torch, prec, **c),
                              curve, f"torch linear {prec}", rows)
        if not rows:
            continue
        t = {(r["m"], r["n"], r["k"]): r["time_s"] for r in rows}
        grid = [[[t.get((m, n, k)) for k in nks] for n in nks] for m in ms]
        yield ctx.derived(curve, len(rows), unit="points", kind="info",
                          params={"precision": prec, "m": list(ms), "n": list(nks), "k": list(nks), "time_s": grid,
                                  "framework": f"torch {torch.__version__}", "api": _API[prec],
                                  "runtime": "cuda_graph"},
                          notes=[f"PyTorch linear layers ({prec}): seconds per GEMM over rows x N x K, each launch on "
                                 "its own (cold) weights, replayed in a CUDA graph"])


_API = {"fp16": "torch.nn.functional.linear", "bf16": "torch.nn.functional.linear",
        "tf32": "torch.nn.functional.linear (allow_tf32)", "fp32": "torch.nn.functional.linear (no TF32)",
        "int8": "torch._int_mm", "fp8": "torch._scaled_mm (e4m3, bf16 out)"}


# --- attention --------------------------------------------------------------------------------------------------
def sdpa_search(torch, case: dict):
    """One F.scaled_dot_product_attention case's operands and call, called once (PyTorch builds its cuDNN graph for
    the shape then: host work, kept per process); returns ``(call, check)`` for sdpa_time. The case: (batch,
    bh / batch heads, seq, dim); ``masked``: as transformers calls it under a static cache, no ``is_causal`` but an
    additive causal mask of (batch, 1, seq, seq) in the dtype (0 where a query may attend, the dtype's min
    elsewhere), so its output must equal the causal call's."""
    F = torch.nn.functional
    precision, batch, masked = case["precision"], case.get("batch", 1), case.get("masked", False)
    bh, seq, dim, causal = case["bh"], case["seq"], case["dim"], case["causal"]
    dtype = _dtype(torch, precision)
    q, k, v = (torch.randn(batch, bh // batch, seq, dim, device="cuda", dtype=dtype) for _ in range(3))
    mask = None
    if masked:
        allowed = torch.ones(seq, seq, device="cuda", dtype=torch.bool).tril_()
        mask = torch.zeros(batch, 1, seq, seq, device="cuda", dtype=dtype).masked_fill_(~allowed,
                                                                                       torch.finfo(dtype).min)
    holder = {}

    def call() -> None:
        holder["o"] = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    def check() -> None:
        with reference_mode(torch):
            ref = F.scaled_dot_product_attention(q[:, :2].float(), k[:, :2].float(), v[:, :2].float(),
                                                 is_causal=causal or masked)
        what = f"{precision} sdpa {bh}x{seq}x{dim}" + (f" masked (batch {batch})" if masked else "")
        check_close((holder["o"][:, :2].float(), ref), what, CHECK_TOL[precision])

    call()
    torch.cuda.synchronize()
    return call, check


def sdpa_time(torch, case: dict, searched) -> float:
    """Seconds per call of a case made by sdpa_search, timed in a CUDA graph; two heads checked in FP32."""
    call, check = searched
    t, _ = graph_time(torch, call)
    check()
    return t


def _sdpa_point(torch, **case) -> float:
    return sdpa_time(torch, case, sdpa_search(torch, case))


def sdpa(ctx, torch, precisions, quick: bool, measured=None, workers: int = 1):
    """Every SDPA point of ``precisions``, in this process or by the worker processes behind ``measured`` (as
    convs)."""
    cases = [c for p in precisions for c in grids.sdpa_cases(p, quick)]
    rows: list[dict] = []
    yield from sweep(ctx, torch, cases, lambda **c: _sdpa_point(torch, **c), C.metric(Curve.SDPA), "torch SDPA",
                      rows, _pooled(measured, "sdpa"))
    if rows:
        yield ctx.derived(C.metric(Curve.SDPA), len(rows), unit="points", kind="info",
                          params={K.POINTS: rows, "framework": f"torch {torch.__version__}",
                                  "precisions": sorted({r["precision"] for r in rows}),
                                  **_how(measured, "sdpa", workers)},
                          notes=["PyTorch scaled_dot_product_attention (its fused kernels), seconds per call over "
                                 "batch x heads, sequence (queries = keys) and head size per precision, replayed "
                                 "in a CUDA graph; the points marked masked with transformers' additive causal "
                                 "mask of (batch, 1, seq, seq) in place of is_causal (its masked kernel)"])


def conv_kind(case: dict) -> tuple:
    """What a process compiles once for all the shapes of a convolution (library_workers.plan_queues keeps a kind on
    one worker): its precision, layout, kernel, stride, grouping and whether it is dilated. In one worker's timeline
    of an FP16 sample (profiles/h200-sxm/2026-11-28-suite-s27, search-trace) the first 1x1, 3x3, depthwise 3x3 or
    5x5 search of a layout took 0.3-1.3 s, the next ones of that kind mostly 0.04-0.1 s."""
    groups = case.get("groups", 1)
    grouping = "stem" if case["cin"] < 8 else "depthwise" if case.get("dw") else "grouped" if groups > 1 else "dense"
    return ("conv", case["precision"], case["layout"], case["k"], case.get("kw") or case["k"], case.get("stride", 1),
            grouping, case.get("dilation", 1) > 1)


def sdpa_kind(case: dict) -> tuple:
    """An SDPA case's kind, as conv_kind's: precision, head size, causal and masked."""
    return ("sdpa", case["precision"], case["dim"], case["causal"], bool(case.get("masked")))


@dataclass(frozen=True)
class SearchFamily:
    """A library family whose first call of a shape is host work (a cuDNN or SDPA search), for library_workers:
    ``search`` makes that first call, ``time`` times the searched call, ``kind`` names what a process compiles once
    for all the shapes of it."""
    search: Callable
    time: Callable
    kind: Callable

    @staticmethod
    def check(searched) -> None:
        """Check the output of a searched case's first call (``search`` returns ``(call, check)``)."""
        searched[1]()


SEARCH_FAMILIES = {"conv": SearchFamily(conv_search, conv_time, conv_kind),
                   "sdpa": SearchFamily(sdpa_search, sdpa_time, sdpa_kind)}


# --- grouped GEMM (MoE experts) ---------------------------------------------------------------------------------
def _grouped_point(torch, experts: int, rows: int, n: int, k: int, precision: str) -> float:
    """torch._grouped_mm as transformers' ``_grouped_linear`` calls it: the tokens sorted by expert (``rows`` each),
    the experts' (E, N, K) weights transposed, int32 offsets; timed in a CUDA graph (the weights, 100 MB and more,
    stream from DRAM on every call), two rows of the first and last expert checked in FP32."""
    dtype = _dtype(torch, precision)
    w = torch.randn(experts, n, k, device="cuda", dtype=dtype).mul_(k ** -0.5)
    x = torch.randn(experts * rows, k, device="cuda", dtype=dtype)
    offs = torch.arange(rows, experts * rows + 1, rows, device="cuda", dtype=torch.int32)
    wt, holder = w.transpose(-2, -1), {}
    t, _ = graph_time(torch, lambda: holder.__setitem__("y", torch._grouped_mm(x, wt, offs=offs)))
    for g in (0, experts - 1):
        got = holder["y"][g * rows:g * rows + 2].float()
        with reference_mode(torch):
            want = x[g * rows:g * rows + 2].float() @ w[g].float().T
        check_close((got, want), f"{precision} grouped_mm {experts} x {rows} rows x {n} x {k}", CHECK_TOL[precision])
    return t


def grouped(ctx, torch, precisions, quick: bool):
    """The grouped GEMM of MoE experts (torch._grouped_mm) per precision where PyTorch has it on this GPU."""
    cases = [c for p in precisions for c in grids.grouped_cases(p, quick)]
    if not cases:
        return
    metric = C.metric(Curve.GROUPED_GEMM)
    try:
        _grouped_point(torch, 2, 8, 64, 64, cases[0]["precision"])
    except (AttributeError, NotImplementedError, RuntimeError) as e:
        yield ctx.skip(metric, f"torch {torch.__version__} has no grouped GEMM on this GPU: {type(e).__name__}: "
                               f"{str(e)[:200]}")
        return
    rows: list[dict] = []
    yield from sweep(ctx, torch, cases, lambda **c: _grouped_point(torch, **c), metric, "torch grouped_mm", rows)
    if rows:
        yield ctx.derived(metric, len(rows), unit="points", kind="info",
                          params={K.POINTS: rows, "framework": f"torch {torch.__version__}",
                                  "api": "torch._grouped_mm"},
                          notes=["torch._grouped_mm as transformers' MoE experts run it in a prefill: seconds per "
                                 "call over experts x rows per expert x N x K (the gate/up and down projections of "
                                 "128-, 64- and 8-expert models), replayed in a CUDA graph"])
