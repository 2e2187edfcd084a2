"""The 'predict' suite's calibration grids for PyTorch's kernels, and what they cost.

Generic, log-spaced shapes, not any validation model's: a grid built around the models it is validated on fits
them and says nothing of the next one (issue 31: grouped and 5x5/7x7 depthwise convolutions, small GEMMs and
stems of other patch sizes fell outside a grid tuned on ResNet, MobileNetV2 and BERT). Convolutions at kernel
1, 3, 5 and 7; groups 1, 2, 4, 8, 32 and depthwise; stride 1 and 2; channels-last and NCHW; one image and
many; stems (an image's 3 channels) over patch sizes 3 to 32. Linear layers down to N, K = 16. Each precision a
user can ask for has points (FP16 and BF16 on the full grids; TF32, FP32, INT8 and FP8 on reduced ones, PyTorch's
own kernels: cuDNN and cuBLAS with TF32 allowed or not, torch._int_mm, torch._scaled_mm); FP64 has none.

Every case is a plain dict (the measuring code's keyword arguments, and the point the predictor reads back:
hwprobe.predict.calibration.ConvTable, GemmTable, SdpaTable). ``estimate_s`` prices a grid from the committed
H200 run's per-point costs, so a change to a grid is checked against the suite's time budget on a CPU.
"""

from __future__ import annotations

from collections.abc import Iterable

# --- precisions -------------------------------------------------------------------------------------------------
PRECISIONS = ("fp16", "bf16", "tf32", "fp32", "int8", "fp8")
FULL_LINEAR = ("fp16", "bf16")                       # full linear-layer grids; the rest get reduced ones
FULL_CONV = ("fp16",)                                 # the full conv grid; BF16, TF32, FP32 a reduced one
CONV_PRECISIONS = ("fp16", "bf16", "tf32", "fp32")   # PyTorch runs no INT8/FP8 convolution of its own
SDPA_PRECISIONS = ("fp16", "bf16", "fp32")           # TF32/INT8/FP8 attention: from their own GEMM tables
# Multiply-adds per point at most (a point's device time stays ~1 ms or less at the precision's rate)
MAX_MACS = {"fp16": 1 << 38, "bf16": 1 << 38, "tf32": 1 << 36, "fp32": 1 << 34, "int8": 1 << 38, "fp8": 1 << 38}

# --- convolutions -----------------------------------------------------------------------------------------------
IMAGES_FEW = 8                                       # depthwise also at a few images, sides SIDES_FEW: its time
SIDES_FEW = (7, 14, 28)                              # follows images x side, not pixels alone (below)
IMAGES_MANY = 32                                     # the "many images" regime (a batched CNN); 32 x side^2 is
SIDES_ONE = (7, 14, 28, 56, 112)                     # never a one-image point's pixel count (one grid holds both)
SIDES_MANY = (3, 7, 28, 80)                          # ... output sides of IMAGES_MANY-image points: 288 .. 204800
SIDES_ONE_FEW, SIDES_MANY_FEW = (7, 28, 112), (7, 80)  # rarer families: fewer sizes
SE_SIZES = [(1, 1), (IMAGES_MANY, 1)]                # 1x1 convolutions on 1 x 1 maps (squeeze-excitation)
LAYOUTS = ("nhwc", "nchw")
C1 = (16, 64, 256, 1024)                             # 1x1: C_in x C_out, plus the two wide pairs below
C1_WIDE = ((2048, 512), (512, 2048))
C3 = (16, 32, 64, 128, 256, 512, 1024)               # 3x3: C_in = C_out
C57 = (16, 64, 256, 1024)                            # 5x5, 7x7
C_STRIDED = (64, 256, 1024)                          # stride 2 (1x1 to 2C, 3x3 at C)
GROUPS = (2, 4, 8, 32)                               # grouped 3x3 (1 < groups < channels)
C_GROUPED = (64, 256, 1024)
# Grouped 3x3 at group widths that are not powers of two (RegNet's 24, 48, 120): cuDNN runs them on other, slower
# kernels. An H100 (PyTorch 2.11, cudnn.benchmark, 32 x 56 x 56, 8 groups, channels-last) ran 16 channels a group
# at 97 TFLOP/s, 24 at 35, 32 at 205, 48 at 87, 64 at 431, 120 at 104 and 128 at 691 (NCHW: 40, 40, 86, 92, 179,
# 235, 328), so no power-of-two point prices them. C_in = 240, 720, 1680 hold each width a whole number of times.
CPG_ODD = (24, 48, 120)
C_GROUPED_ODD = (72, 240, 720, 1680)                 # each width where it divides C (72: RegNetX's first stage)
SIZES_GROUPED = ((1, 7), (1, 28), (1, 56), (IMAGES_MANY, 7), (IMAGES_MANY, 28))
SIZES_GROUPED_ODD = ((1, 7), (1, 56), (IMAGES_MANY, 7), (IMAGES_MANY, 28), (IMAGES_MANY, 56))
CONV_FAMILIES = ("dense", "dense_large", "strided", "dilated", "nonsquare", "grouped", "grouped_odd", "depthwise",
                 "depthwise_dilated", "stem")
DW = ((3, 1), (3, 2), (5, 1), (5, 2), (7, 1))        # depthwise (kernel, stride)
C_DW = (32, 128, 512)
C_DW_WIDE = 1024                                     # stride-1 3x3 and 5x5 (plain and dilated) also at 1024 channels:
#                                                      MobileNetV3's 672-960 and EfficientNet's 1152 lie past 512
DW_DILATED = ((3, 2), (5, 2))                        # depthwise at stride 1, (kernel, dilation): a dilated backbone's
#                                                      last stage (DeepLab's and LR-ASPP's MobileNetV3)
# Stems on an image's 3 channels: (kernel, stride, C_out), patch embeddings of 4 to 32 and overlapping stems
STEMS = ((3, 1, 32), (3, 2, 32), (7, 2, 64), (11, 4, 64), (4, 4, 96), (8, 8, 384), (14, 14, 768), (16, 16, 768),
         (32, 32, 768))
STEM_BATCH = (1, 8, 64)
STEM_HW = 224
# Dense convolutions past the body grid's pixels (one NCHW image at 224 x 224: a U-Net's or VGG's first stage;
# IMAGES_MANY images at 160 x 160, 819200 pixels: 64 images at 112 x 112), at the few channels such maps have
SIDE_ONE_LARGE, SIDE_MANY_LARGE = 224, 160
C_LARGE = (16, 64, 256)                              # 1x1: C_in x C_out
C3_LARGE = (16, 32, 64, 128)                         # 3x3: C_in = C_out
# Dilated dense 3x3 (stride 1): FCN's and DeepLab's backbones (dilation 2 and 4) and ASPP heads (12, 24, 36)
DILATIONS = (2, 12, 36)
C_DILATED = (64, 512)
SIZES_DILATED = ((1, 14), (1, 28), (IMAGES_MANY, 7), (IMAGES_MANY, 28))
# Non-square kernels (kernel height, width): Inception's factorized 1x7 / 7x1 and 1x3 / 3x1
NONSQUARE = ((1, 7), (7, 1), (1, 3), (3, 1))
C_NONSQUARE = (128, 512)
SIZES_NONSQUARE = ((1, 7), (1, 28), (IMAGES_MANY, 7), (IMAGES_MANY, 28))
# Reduced grids (BF16, TF32, FP32): dense 1x1 and 3x3, 3x3 depthwise and four stems, in NCHW (PyTorch's default
# layout, where FP32 models run; BF16's channels-last convolutions are priced from FP16's points, flagged)
C1_REDUCED = ((16, 16), (64, 64), (256, 256), (1024, 1024), (64, 256), (256, 64), (256, 1024), (1024, 256))
C3_REDUCED = (16, 64, 256, 1024)
DW_REDUCED, C_DW_REDUCED = ((3, 1), (3, 2)), (32, 512)
STEMS_REDUCED = ((3, 2, 32), (7, 2, 64), (4, 4, 96), (16, 16, 768))
STEM_BATCH_REDUCED = (1, 64)


def stem_geometry(k: int, stride: int) -> tuple[int, int]:
    """(padding, output side) of a stem on a STEM_HW x STEM_HW image ('same' where the kernel overlaps its
    neighbours, none for patch embeddings)."""
    pad = k // 2 if k > stride else 0
    return pad, (STEM_HW + 2 * pad - k) // stride + 1


def _sizes(few: bool) -> list[tuple[int, int]]:
    """(images, output side) pairs: one image and IMAGES_MANY images."""
    one, many = (SIDES_ONE_FEW, SIDES_MANY_FEW) if few else (SIDES_ONE, SIDES_MANY)
    return [(1, s) for s in one] + [(IMAGES_MANY, s) for s in many]


def _conv(precision: str, k: int, cin: int, cout: int, images: int, side: int, layout: str, stride: int = 1,
          groups: int = 1, dilation: int = 1, kw: int = 0) -> dict:
    """One point; ``k`` is the kernel's height, ``kw`` its width where that differs (a non-square kernel)."""
    out = {"k": k, "cin": cin, "cout": cout, "m": images * side * side, "layout": layout, "images": images,
           "stride": stride, "groups": groups, "precision": precision}
    if groups == cin == cout and groups > 1:
        out["dw"] = True
    if dilation > 1:
        out["dilation"] = dilation
    if kw and kw != k:
        out["kw"] = kw
    return out


def conv_cases(precision: str, quick: bool = False, families: Iterable[str] | None = None) -> list[dict]:
    """Every convolution point of ``precision``: dense (kernel 1, 3, 5, 7), strided, grouped (power-of-two and other
    group widths), depthwise and stems, in both layouts, one image and many; the reduced grid for the other
    precisions; none for those PyTorch cannot convolve in (INT8, FP8). ``families`` (CONV_FAMILIES): only those
    (a run that adds one family to a profile). ``quick``: every seventh point (a smoke run)."""
    if precision not in CONV_PRECISIONS:
        return []
    full = precision in FULL_CONV
    layouts = LAYOUTS if full else ("nchw",)
    fam: dict[str, list[dict]] = {f: [] for f in CONV_FAMILIES}
    pairs = [(a, b) for a in C1 for b in C1] + list(C1_WIDE) if full else list(C1_REDUCED)
    dense = [(1, a, b, False) for a, b in pairs] + [(3, c, c, False) for c in (C3 if full else C3_REDUCED)]
    if full:
        dense += [(k, c, c, True) for k in (5, 7) for c in C57]
    for k, cin, cout, few in dense:
        sizes = _sizes(few) + (SE_SIZES if k == 1 else [])
        fam["dense"] += [_conv(precision, k, cin, cout, n, s, lay) for lay in layouts for n, s in sizes]
    if full:
        for c in C_STRIDED:
            for k, cout in ((1, 2 * c), (3, c)):
                fam["strided"] += [_conv(precision, k, c, cout, n, s, lay, stride=2) for lay in LAYOUTS
                                   for n, s in ((1, 7), (1, 28), (IMAGES_MANY, 7), (IMAGES_MANY, 28))]
        fam["grouped"] += [_conv(precision, 3, c, c, n, s, lay, groups=g) for g in GROUPS for c in C_GROUPED
                           if c // g >= 2 for lay in LAYOUTS for n, s in SIZES_GROUPED]
        fam["grouped_odd"] += [_conv(precision, 3, c, c, n, s, lay, groups=c // w) for w in CPG_ODD
                               for c in C_GROUPED_ODD if c % w == 0 and c // w >= 2 for lay in LAYOUTS
                               for n, s in SIZES_GROUPED_ODD]
        large = [(1, a, b) for a in C_LARGE for b in C_LARGE] + [(3, c, c) for c in C3_LARGE]
        where = ((1, SIDE_ONE_LARGE, ("nchw",)), (IMAGES_MANY, SIDE_MANY_LARGE, LAYOUTS))   # channels-last reads
        fam["dense_large"] += [_conv(precision, k, cin, cout, n, s, lay) for k, cin, cout in large  # one image from
                               for n, s, lays in where for lay in lays]                            # all points
        fam["dilated"] += [_conv(precision, 3, c, c, n, s, lay, dilation=d) for d in DILATIONS for c in C_DILATED
                           for lay in LAYOUTS for n, s in SIZES_DILATED]
        fam["nonsquare"] += [_conv(precision, kh, c, c, n, s, lay, kw=kw) for kh, kw in NONSQUARE for c in C_NONSQUARE
                             for lay in LAYOUTS for n, s in SIZES_NONSQUARE]
    # depthwise at IMAGES_FEW images too: cuDNN's channels-last dilated 5x5 depthwise ran 8 images of 14 x 14 at 1.4x
    # the time of 32 images of 7 x 7 (the same pixels) on an H200, so a layer of 2-31 images is priced between the
    # image counts either side at its pixels per image (hwprobe.predict.calibration.ConvTable.dw_time)
    dw_sizes = _sizes(True) + ([(IMAGES_MANY, 28)] + [(IMAGES_FEW, s) for s in SIDES_FEW] if full else [])
    for k, stride in (DW if full else DW_REDUCED):
        wide = (C_DW_WIDE,) if full and stride == 1 and k in (3, 5) else ()
        fam["depthwise"] += [_conv(precision, k, c, c, n, s, lay, stride=stride, groups=c)
                             for c in (C_DW if full else C_DW_REDUCED) + wide for lay in layouts for n, s in dw_sizes]
    if full:
        fam["depthwise_dilated"] += [_conv(precision, k, c, c, n, s, lay, groups=c, dilation=d) for k, d in DW_DILATED
                                     for c in C_DW + (C_DW_WIDE,) for lay in LAYOUTS for n, s in dw_sizes]
    for k, stride, cout in (STEMS if full else STEMS_REDUCED):
        side = stem_geometry(k, stride)[1]
        fam["stem"] += [_conv(precision, k, 3, cout, b, side, lay, stride=stride)
                        for b in (STEM_BATCH if full else STEM_BATCH_REDUCED) for lay in layouts]
    unknown = set(families or ()) - set(CONV_FAMILIES)
    if unknown:
        raise ValueError(f"unknown convolution families {sorted(unknown)}; families: {', '.join(CONV_FAMILIES)}")
    cases = [c for f in (families or CONV_FAMILIES) for c in fam[f] if macs(c) <= MAX_MACS[precision]]
    return cases[::7] if quick else cases


def conv_family(point: dict) -> str | None:
    """The family (CONV_FAMILIES) whose grid holds a point of this shape at its precision; None for a shape no grid
    holds (an older profile's). tools/add_calibration.py merges a run's points by it."""
    return _families(point.get("precision", "fp16")).get(shape_key(point))


def shape_key(point: dict) -> tuple:
    return tuple(point.get(k, d) for k, d in (("k", 0), ("kw", 0), ("cin", 0), ("cout", 0), ("m", 0),
                                               ("layout", "nhwc"), ("images", 1), ("stride", 1), ("groups", 1),
                                               ("dilation", 1)))


_FAMILIES: dict[str, dict[tuple, str]] = {}


def _families(precision: str) -> dict[tuple, str]:
    if precision not in _FAMILIES:
        _FAMILIES[precision] = {shape_key(c): f for f in CONV_FAMILIES for c in conv_cases(precision, families=[f])}
    return _FAMILIES[precision]


def macs(case: dict) -> int:
    """Multiply-adds of a convolution case (output pixels x C_out x C_in per group x kernel taps)."""
    return case["m"] * case["cout"] * (case["cin"] // case.get("groups", 1)) * case["k"] * (case.get("kw") or case["k"])


# --- linear layers ----------------------------------------------------------------------------------------------
LINEAR_M = (1, 16, 128, 1024, 8192, 32768)                   # rows (tokens x batch)
LINEAR_NK = (16, 128, 768, 2048, 4096, 8192, 16384)          # output and input features
LINEAR_M_REDUCED = (1, 16, 256, 4096)
LINEAR_NK_REDUCED = (16, 128, 1024, 4096, 16384)
LINEAR_M_LOWP = (32, 256, 4096, 32768)                        # torch._int_mm / _scaled_mm want M > 16


def linear_axes(precision: str, quick: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(rows, features) of ``precision``'s linear-layer grid (the same list for N and K)."""
    if precision in FULL_LINEAR:
        ms, nks = LINEAR_M, LINEAR_NK
    elif precision in ("int8", "fp8"):
        ms, nks = LINEAR_M_LOWP, LINEAR_NK_REDUCED
    else:
        ms, nks = LINEAR_M_REDUCED, LINEAR_NK_REDUCED
    return (ms[::2], nks[::3]) if quick else (ms, nks)


def linear_cases(precision: str, quick: bool = False) -> list[dict]:
    """Every linear-layer point of ``precision`` (none for a precision PyTorch's probe does not measure: FP64)."""
    if precision not in PRECISIONS:
        return []
    ms, nks = linear_axes(precision, quick)
    return [{"m": m, "n": n, "k": k} for m in ms for n in nks for k in nks if m * n * k <= MAX_MACS[precision] * 8]


# --- attention --------------------------------------------------------------------------------------------------
SDPA_BH = (12, 96, 384, 1536)
SDPA_SEQ = (128, 256, 512, 1024, 2048, 4096)
SDPA_DIM = (64, 128)
SDPA_MAX_ELEMS = 1 << 29                                      # batch x heads x seq x dim of Q at most
SDPA_REDUCED = ((12, 96, 384), (128, 512, 2048), (64, 128))


# transformers' masked call under a static cache: an additive (batch, 1, queries, keys) mask in the activations'
# dtype, K and V already expanded to every query head. PyTorch runs its masked kernel, at about half the unmasked
# rate in a prefill (profiles/h200-sxm/2026-11-28-sdpa-masked), so these points are a table of their own. BF16 (what
# transformers' checkpoints run in), the prefills of the hf validation (queries = keys): batch 1 and 8 at 32 query
# heads (16 at head dim 256, as Gemma-2), 512-4096 tokens, batch x tokens at most 16384.
SDPA_MASKED_PRECISIONS = ("bf16",)
SDPA_MASKED_BATCH = (1, 8)
SDPA_MASKED_SEQ = (512, 1024, 2048, 4096)
SDPA_MASKED_DIM_HEADS = ((64, 32), (96, 32), (128, 32), (256, 16))
SDPA_MASKED_TOKENS = 16384


def sdpa_cases(precision: str, quick: bool = False) -> list[dict]:
    """F.scaled_dot_product_attention points: FP16 on the full grid, BF16 and FP32 on a reduced one; then BF16's
    masked points (``masked``: with transformers' additive mask, ``batch`` of its ``bh``)."""
    if precision not in SDPA_PRECISIONS:
        return []
    bhs, seqs, dims = (SDPA_BH, SDPA_SEQ, SDPA_DIM) if precision == "fp16" else SDPA_REDUCED
    if quick:
        bhs, seqs = bhs[:2], seqs[::2]
    plain = [{"bh": bh, "seq": s, "dim": d, "causal": causal, "precision": precision} for causal in (False, True)
             for d in dims for bh in bhs for s in seqs if bh * s * d <= SDPA_MAX_ELEMS
             and (precision != "fp32" or s <= 2048)]
    if precision not in SDPA_MASKED_PRECISIONS:
        return plain
    seqs, dim_heads = SDPA_MASKED_SEQ, SDPA_MASKED_DIM_HEADS
    if quick:
        seqs, dim_heads = seqs[::2], dim_heads[::2]
    return plain + [{"bh": b * h, "seq": s, "dim": d, "causal": False, "masked": True, "batch": b,
                     "precision": precision} for d, h in dim_heads for b in SDPA_MASKED_BATCH for s in seqs
                    if b * s <= SDPA_MASKED_TOKENS]


# torch._grouped_mm as transformers' MoE experts run it in a prefill (grouped_mm_experts_forward): (experts, N, K) of
# the gate/up and down projections of Qwen3-30B-A3B (128 experts), Qwen2-MoE / DeepSeek-V2-Lite (64), Mixtral-8x7B
# (8), over rows per expert (tokens x experts per token / experts: 32 for one 512-token prompt of Qwen3-30B-A3B,
# 1024 for eight of 2048). BF16: the precision transformers' MoE checkpoints run in.
GROUPED_SHAPES = ((128, 1536, 2048), (128, 2048, 768), (64, 2816, 2048), (64, 2048, 1408), (8, 28672, 4096),
                  (8, 4096, 14336))
GROUPED_ROWS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
GROUPED_PRECISIONS = ("bf16",)


def grouped_cases(precision: str, quick: bool = False) -> list[dict]:
    """torch._grouped_mm points of ``precision`` (none for a precision the MoE experts do not run in)."""
    if precision not in GROUPED_PRECISIONS:
        return []
    shapes, rows = (GROUPED_SHAPES[:2], GROUPED_ROWS[::4]) if quick else (GROUPED_SHAPES, GROUPED_ROWS)
    return [{"experts": e, "rows": r, "n": n, "k": k, "precision": precision} for e, n, k in shapes for r in rows]


# --- what a grid costs ------------------------------------------------------------------------------------------
# Host seconds per point by family (tensor set-up, a pilot and a timed capture, cuDNN's autotuning for a new conv
# shape, the check), from the committed 2026-11-26 H200 'predict' run: gpu.torch_kernels took 122 s for 162 curve,
# 950 conv, 294 linear and 94 SDPA points; the split between families is an estimate (curves 40 ms and linear/SDPA
# 60 ms per point, conv the rest: 94 ms), gpu.gemm_shapes 117 s for 2784 cuBLAS points (42 ms).
POINT_S = {"curve": 0.040, "conv": 0.094, "linear": 0.060, "sdpa": 0.060, "gemm": 0.042}
# Device rate a point's math runs at (FLOP/s, H200-like), for the time its replays take beyond the host's
RATE = {"fp16": 6e14, "bf16": 6e14, "tf32": 3e14, "fp32": 5e13, "int8": 1.2e15, "fp8": 1.2e15}
REPLAYS = 70                                  # calls timed per point (pilot + capture + 3 replays of >= 16 calls)
FIXED_S = 55.0                                # the suite's other probes (FMA, library GEMM, power, DRAM, launch,
#                                               memory kernels): 52 s on the committed H200 run
CURVE_KINDS = 16                              # gpu.torch_kernels' memory-bound curves, 18 sizes each
CURVE_SIZES = 18


def point_s(family: str, flops: float = 0.0, precision: str = "fp16") -> float:
    return POINT_S[family] + REPLAYS * flops / RATE.get(precision, 6e14)


def estimate_s(precisions: Iterable[str] = PRECISIONS, gemm_points: int = 0) -> dict[str, float]:
    """Seconds the 'predict' suite's calibration takes with these grids (per family, and 'total' with the
    suite's other probes and ``gemm_points`` cuBLAS points of gpu.gemm_shapes)."""
    out = {"curve": CURVE_KINDS * CURVE_SIZES * POINT_S["curve"], "conv": 0.0, "linear": 0.0, "sdpa": 0.0,
           "gemm": gemm_points * POINT_S["gemm"]}
    for p in precisions:
        out["conv"] += sum(point_s("conv", 2.0 * macs(c), p) for c in conv_cases(p))
        out["linear"] += sum(point_s("linear", 2.0 * c["m"] * c["n"] * c["k"], p) for c in linear_cases(p))
        out["sdpa"] += sum(point_s("sdpa", (2 if c.get("masked") else 1) * 4.0 * c["bh"] * c["seq"] ** 2 * c["dim"], p)
                           for c in sdpa_cases(p))                 # the masked kernel: about half the rate
    out["total"] = FIXED_S + sum(out.values())
    return out

