"""Price one kernel from the profile's calibration: its own shape at the measured efficiency, not the peak.

- gemm: the GEMM table's time at (M x batch, N, K) (a batched GEMM has the tile count of one with batch x M
  rows), times the measured alignment price where N or K is off a multiple of 8 and the profile measured what
  the library pays for it (cuBLAS GEMMs only: cuDNN pads channels or runs a first-layer kernel); a convolution's
  implicit GEMM reads its input once where the table's GEMM read the kh x kw times larger im2col matrix, so the
  difference in bytes comes off at the measured DRAM bandwidth (never below its compute or its own bytes);
  weight-only quantization moves fewer weight bytes (K scaled by bits/16 for the byte
  term) but never runs faster than the FP16 math of the full shape.
- convolution (1x1, 3x3): the framework's own conv table (gpu.torch_kernels: cuDNN, channels-last) where the
  profile has one and the runtime is the framework's; the implicit-GEMM rule above otherwise.
- attention (fused, flash-style): the two products at the rate the table gives a GEMM of the P @ V shape (its
  output is small: the scores stay on chip), and never faster than moving Q, K, V and O at the measured
  bandwidth for their size.
- memory kinds: the memory-kernel curve of that kind at the kernel's bytes: the framework's own kernels'
  (gpu.torch_kernels) where the profile has them and the runtime is the framework's (eager, graph), hwprobe's
  lean kernels' otherwise (and for the fused runtime); a fused attention likewise from the framework's SDPA table.
- collectives: the profile's measured collective curve at the message size (missing without one).
- linear layers (framework runtimes): the framework's own linear-layer table (gpu.torch_kernels: cuBLASLt through
  PyTorch, its heuristics and epilogues) where the profile has one, cuBLAS gemmEx's otherwise; never faster than
  the library ceiling.
- convolutions: the conv table's points in the model's layout (``layout``: nhwc or nchw): 1x1/3x3 over pixels and
  channels, and the first-layer (stem, C_in = 3) points by kernel and stride.

The framework's curves were timed as a model meets its kernels: each launch on its own parameters, after L2 was
filled with other data. Per pass (``run_overhead``): the framework's fixed cost of one CUDA-graph replay, and the
measured cost of each change between a library kernel and a framework kernel in the sequence; the switch between
two framework kernels (five kinds alternating against each alone) is added per kernel.

The runtime sets the per-kernel floor: ``graph`` (the curves were measured as CUDA graph replays, so their times
already hold the gap between nodes), ``eager`` (the host issues the kernels one by one, each at the measured host
time per op, and the GPU runs them in order as they come: a queue, ``run_overhead``'s ``host_wait``; a long kernel
lets the host run ahead, so a pass is not the sum of each kernel's larger of host and GPU time), ``fused`` (as
graph; the lowering folds pointwise ops into their producers).
"""

from __future__ import annotations

import copy
import functools

from hwprobe.errors import InputError
from hwprobe.lowering.ops import COMM_KINDS, MEMORY_KINDS, RUNTIMES, KernelOp
from hwprobe.models.conventions import ELEMENT_BYTES as ITEMSIZE
from hwprobe.predict.calibration import STEM_CIN, Calibration, GemmTable, log_between, pow2
from hwprobe.predict.ops import OpTime
from hwprobe.vocab import ExecUnit, Path

MEMORY_CURVE = {"elementwise": "elementwise", "bias": "bias", "norm": "norm", "softmax": "softmax",
                "reduction": "reduction", "pool": "reduction", "transpose": "transpose", "copy": "unary",
                "cat": "unary", "conv_dw": "unary", "embedding": "unary", "batchnorm": "bias", "groupnorm": "norm",
                "resize": "unary", "resize_linear": "unary", "unary": "unary", "expand": "transpose",
                "permute": "transpose", "relayout": "transpose", "gather": "unary",
                "strided": "bias", "sort": "reduction", "cat_strided": "transpose", "topk": "reduction",
                "rotate_cat": "transpose", "cat_cache": "unary"}
# The framework's own curves (gpu.torch_kernels) by kernel kind, preferred for the eager and graph runtimes.
FRAMEWORK_CURVE = {"elementwise": "elementwise", "bias": "bias", "norm": "norm", "softmax": "softmax",
                   "reduction": "reduction", "pool": "pool", "transpose": "copy", "copy": "copy", "cat": "cat",
                   "conv_dw": "copy", "embedding": "copy", "batchnorm": "batch_norm", "groupnorm": "group_norm",
                   "resize": "resize", "resize_linear": "resize_linear", "unary": "unary", "expand": "expand",
                   "permute": "permute", "relayout": "relayout", "gather": "unary",
                   "strided": "bias", "sort": "sort", "cat_strided": "cat_strided", "topk": "topk",
                   "rotate_cat": "rotate_cat", "cat_cache": "unary"}
# cat_cache: a DynamicCache cat of contiguous inputs runs PyTorch's vectorized cat, every element read and written as
# the unary curve's kernel does. Not the copy curve: a contiguous clone is a device-to-device memcpy, whose 1-GiB
# point reads 2.6-2.8 TB/s on an H200 where the unary curve reads 4.1; the tuned families' eager decode lists moved
# their cache cats of 0.8-17 GB at 3.8-4.1 TB/s, the unary curve within -7..+5% of each, the copy curve up to +44%.
# gather: PyTorch's vectorized gather kernel reads and writes whole rows as the unary kernel does, on the SMs. Not the
# copy curve (a contiguous clone): its 1-GiB point reads 2.8 TB/s on an H200 and 2.4 on an H100 where the unary
# curve reads 4.1 and 3.0 there, and the tuned MoE's eager profile (qwen3-30b-a3b, H200, one token) has its expert
# gathers at 4.1 TB/s. strided: a pointwise op over a non-contiguous view runs PyTorch's non-vectorized template,
# the one the bias curve times (its broadcast input is the same offset-calculator path).
# Where a profile lacks a kind's own framework curve: the curve of the kernel nearest in what it does (pool and
# cat: profiles measured before those curves; unary: before the unary curve). The kinds in STAND_IN_UNCOVERED are
# then outside the calibration: an unfused BatchNorm on the broadcast-add curve, GroupNorm/InstanceNorm on
# LayerNorm's, a resize on the copy's, and an expand (a broadcast view made contiguous: ``repeat_kv``) on the cat
# curve (profiles before the expand curve of 2026-11-28): both are strided copies, one 2-byte load and one store per
# element through an index map, not vectorized (the contiguous copy curve is, about three times faster per byte).
# The tuned families' profiler lists put repeat_kv within 2-10% of the cat curve per element (the bias curve, the
# same elementwise template over two inputs, 9-19% slower); Gemma-2's, at 64 x 4096, read 1.34 TB/s where the cat
# curve's 1-GiB point reads 1.88. A cat with a strided input (cat_strided: a DynamicCache's held window, Phi-3's
# values) runs the 4-D form of that cat, slower again (0.62-0.67 TB/s): before its own curve, the cat curve.
# A permute copy (a permute whose reshape cannot view it: ShuffleNet's channel shuffle, Swin's window partition) has
# its own curve (permute: runs of 64 contiguous elements made contiguous); profiles before it: the cat curve.
FRAMEWORK_STAND_IN = {"pool": "reduction", "cat": "copy", "unary": "copy", "batchnorm": "bias", "groupnorm": "norm",
                      "resize": "copy", "resize_linear": "resize", "expand": "cat", "permute": "cat",
                      "relayout": "permute", "sort": "reduction", "cat_strided": "cat", "topk": "reduction",
                      "cat_cache": "copy"}
# A kind priced as another kind where the profile lacks its own curve: RoPE's cat runs the cache cats' generic 4-D cat
# (profiles before the rotate_cat curve price it as they priced it then).
STAND_IN_KIND = {"rotate_cat": "cat_strided"}
STAND_IN_UNCOVERED = ("batchnorm", "groupnorm", "resize", "resize_linear", "expand", "permute", "relayout", "sort",
                      "cat_strided", "topk", "rotate_cat")
STAND_IN_WHY = {"expand": "a strided copy of its output's elements, not vectorized",
                "permute": "a strided copy of its output's elements, not vectorized",
                "resize_linear": "a bilinear resize, not the nearest-neighbour one",
                "relayout": "a map transposed between NCHW and channels-last: no curve times that copy",
                "sort": "a radix sort's passes, not one reduction (profiles before the sort curve)",
                "topk": "a radix select per row and a sort of the k picked, not one reduction (profiles before the "
                        "topk curve: a router's topk over 16384 x 128 took 120 us on an H200, the reduction curve "
                        "priced 10)",
                "rotate_cat": "RoPE's cat on heads held transposed: the cache cats' generic 4-D cat, one input fresh",
                "cat_strided": "PyTorch's 4-D cat with a strided input, not the 2-D cat (profiles before its curve: "
                               "about 2.8x faster per byte at 1 GiB on an H200)"}
# A convolutional model's memory layout as the framework runs it: channels-last (converted, as fast FP16 kernels
# want) or NCHW (PyTorch's default: cuDNN transforms around its kernels). The conv table measures both (profiles
# before 2026-11-26's eighth session: 1x1/3x3 channels-last only, stems in both).
LAYOUTS = ("nhwc", "nchw")
# The code that issues an eager run's kernels: a framework's own ops (a CNN, an ONNX graph), or transformers' modules
# (its LLM runtimes), whose host time per kernel the calibration measures apart where transformers is installed.
HOSTS = ("framework", "transformers")
HOST_WORDS = {"transformers": "transformers' own measured host time per kernel of an eager decode step "
                              "(gpu.torch_kernels)",
              "transformers_family": "transformers' own measured host time per kernel of an eager decode step, "
                                     "times this family's tiny decoder's per kernel over the tiny Llama's "
                                     "(gpu.torch_kernels)",
              "framework": "the framework's measured host time per op (gpu.torch_kernels)",
              "cuda_launch": "a bare CUDA launch from Python (the framework's own per-op overhead comes on top: not "
                             "measured in this profile; run the calibration where the framework is installed)"}
LIBRARY_KINDS = ("gemm", "attention", "conv_dw")    # kernels cuBLAS/cuDNN run (the rest: the framework's own)
# Precisions whose calibration stands in for each other's in the secondary figures only (the alignment price, the
# power cap's burst/sustained ratio): the same Tensor Core datapath at the same width. Times never cross precisions.
SAME_DATAPATH = {"fp16": "bf16", "bf16": "fp16"}


def _own_or_sibling(table, precision: str, what: str):
    """(``table``'s points of ``precision``, "") where it has them; else the other 16-bit type's with a note that
    says so (FP16 and BF16 run one Tensor Core datapath; a kernel priced that way is outside the calibration, so
    the error bar quotes no figure for it); else (None, "")."""
    own = table.only(precision)
    if own is not None:
        return own, ""
    sib = SAME_DATAPATH.get(precision)
    other = table.only(sib) if sib else None
    if other is None:
        return None, ""
    return other, f"no {precision} {what} points: the {sib} ones (same datapath), outside the calibration"


class Predictor:
    """Kernel times for one profile and runtime. ``time(op)`` never raises for a kernel it can price roughly: it
    says so (``covered`` False, ``note``) instead."""

    def __init__(self, profile, runtime: str = "graph", cal: Calibration | None = None, layout: str = "nhwc",
                 host: str = "framework") -> None:
        if runtime not in RUNTIMES:
            raise InputError(f"unknown runtime {runtime!r}; runtimes: {', '.join(RUNTIMES)}")
        if layout not in LAYOUTS:
            raise InputError(f"unknown layout {layout!r}; layouts: {', '.join(LAYOUTS)}")
        if host not in HOSTS:
            raise InputError(f"unknown host code {host!r}; hosts: {', '.join(HOSTS)}")
        self.profile, self.runtime, self.layout = profile, runtime, layout
        self.cal = cal or Calibration.of(profile)
        self.cal.require()
        self.node_s = self.cal.launch.get("graph_node_s", 0.0)
        # eager: the host time per kernel of the code that issues them. ``host`` "transformers" (its LLM runtimes):
        # transformers' own, where the profile measured it; else the framework's bare ops, else a bare CUDA launch
        if host == "transformers" and self.cal.hf_eager_kernel_s:
            self.host_s, self.host_source = self.cal.hf_eager_kernel_s, "transformers"
        elif self.cal.eager_op_s:
            self.host_s, self.host_source = self.cal.eager_op_s, "framework"
        else:
            self.host_s, self.host_source = self.cal.launch.get("host_issue_s", 0.0), "cuda_launch"
        self.host_code = host
        self.family = ""
        self.tp = 1                   # for_tp: the host time per kernel is transformers' under its tp plan
        self.tp_family = ""           # ... priced from that family's own tiny decoder under its (gathering) plan
        self.dram_bw = profile.bandwidth("dram") or 0.0
        self.l2_bw = profile.bandwidth("l2") or 0.0
        self.l2_bytes = float((getattr(profile, "device", None) or {}).get("l2_bytes") or 0.0)
        self.sms = int((getattr(profile, "device", None) or {}).get("sms") or 0)
        self._peaks: dict[str, float] = {}

    def for_family(self, family: str) -> Predictor:
        """This predictor, its transformers host time per kernel scaled to ``family``'s code where the profile
        measured that family against the tiny Llama (hf_host's FAMILIES: Gemma-2's modules issue more kernels a
        call, so each costs the host less); itself otherwise (another host code, or no figure for the family)."""
        ratio = self.cal.hf_family_ratio.get(family) if self.host_source == "transformers" else None
        if not ratio:
            return self
        other = copy.copy(self)
        other.host_s, other.host_source, other.family = self.host_s * ratio, "transformers_family", family
        return other

    def for_tp(self, tp: int, family: str = "") -> Predictor:
        """This predictor, its transformers host time per kernel scaled by the profile's tensor-parallel ratio
        (gpu.tp_host: the tiny Llama's step under transformers' tp plan, per kernel over one GPU's) for ``tp`` over 1;
        itself otherwise (one GPU, another host code, or no figure: then the price under tp is a floor).

        A family whose plan gathers (GATHERED_TP: Phi-3) takes, in place of its one-GPU family ratio, its own tiny
        decoder's per kernel under its plan over the sharded Llama's (``hf_tp_family_ratio``): the gathers' and
        splits' hooks cost the host more than a Llama's, which no one-GPU figure shows. On 2x H200 (2026-11-30)
        phi-3-mini's 4-layer decode step under the plan cost 1.87x the sharded tiny Llama's per kernel in the same
        rounds (llama-3.2-1b's 1.05-1.16x), and Phi-3's tiny decoder 1.71-2.03x over five runs. Every other family
        keeps its one-GPU ratio times the Llama's tp ratio: their tiny decoders under their plans priced the real
        models worse (profiles/h200x2/2026-11-30-tp-host)."""
        if tp <= 1 or not self.tp_host_priced:
            return self
        other = copy.copy(self)
        own = self.cal.hf_tp_family_ratio.get(family)
        if own:
            other.host_s, other.tp_family = self.cal.hf_eager_kernel_s * self.cal.hf_tp_ratio * own, family
            other.host_source, other.family = "transformers", ""
        else:
            other.host_s = self.host_s * self.cal.hf_tp_ratio
        other.tp = tp
        return other

    @property
    def tp_host_priced(self) -> bool:
        """Whether for_tp can price transformers' host under a tp plan (a transformers host and the ratio)."""
        return self.host_source.startswith("transformers") and self.cal.hf_tp_ratio > 0

    @functools.cached_property
    def l2_stream(self) -> tuple[float, str]:
        """(B/s, note) at which a kernel's tiles stream their operands through L2: the profile's measured L2
        bandwidth, else the device's L2 theory (said so; a profile without gpu.cache), else 0 (no L2 term)."""
        if self.l2_bw:
            return self.l2_bw, ""
        from hwprobe import specs

        dev = getattr(self.profile, "device", None) or {}
        sku = specs.match(str(dev.get("name") or ""), dev.get("sms"), dev.get("mem_bytes"))
        th = specs.sku_theory(sku).memory("l2") if sku else None
        if th is None:
            return 0.0, "no L2 bandwidth in the profile or the spec table: tiles priced at the MMA rate alone (low)"
        return th.at_clock, (f"L2 not measured in this profile: its theory, {th.at_clock / 1e12:.1f} TB/s "
                             f"({sku.name})")

    # --- ceilings for the plain roofline bound beside each kernel ----------------------------------------------
    def peak(self, precision: str) -> float:
        """The library ceiling for ``precision`` (else its best), looked up once per precision: every kernel asks."""
        if precision not in self._peaks:
            c = self.profile.peak(precision, ExecUnit.TENSOR_CORE, Path.LIBRARY) or self.profile.peak(precision)
            self._peaks[precision] = c.value if c else 0.0
        return self._peaks[precision]

    # --- pricing ----------------------------------------------------------------------------------------------
    def table(self, precision: str) -> tuple[GemmTable, str]:
        """The GEMM table of ``precision``: the framework's linear layers (eager, graph) where the profile measured
        them, cuBLAS gemmEx's otherwise. A precision without points of its own is refused (Uncalibrated), never
        priced from another precision's points scaled by the ceilings."""
        tables = [self.cal.framework_gemm, self.cal.gemm]          # the framework's own linear layers first
        if self.runtime == "fused":
            tables.reverse()                                         # ... but cuBLAS's for a TensorRT-style run
        for t in tables:
            if precision in t:
                note = "" if t is tables[0] else f"no cuBLAS {precision} table: the framework's linear layers"
                return t[precision], note if self.runtime == "fused" else ""
        self.cal.require_precision(precision)
        raise AssertionError("unreachable: require_precision passed without a table")   # pragma: no cover

    def gemm_s(self, precision: str, m: float, n: float, k: float) -> tuple[float, bool, str]:
        tab, note = self.table(precision)
        return tab.time(m, n, k), tab.covers(m, n, k), note

    def gemm_floor_s(self, precision: str) -> float:
        """The fastest GEMM of the table that prices ``precision``: the fixed cost every GEMM of it pays."""
        return self.table(precision)[0].floor_s()

    def align_factor(self, precision: str, m: float, n: int, k: int) -> tuple[float, str]:
        pts = self.cal.align.get(precision) or self.cal.align.get(SAME_DATAPATH.get(precision, ""), [])
        worst, why = 1.0, ""
        for dim, v in (("n", n), ("k", k)):
            a = v & -v if v > 0 else 8
            if a >= 8 or not pts:
                continue
            cands = [p for p in pts if p["dim"] == dim and p["align"] == min(a, 4)]
            if not cands:
                continue
            p = min(cands, key=lambda p: abs(p["m"] - m) / max(p["m"], m))
            if p["factor"] > worst:
                worst, why = p["factor"], f"{dim}={v} not a multiple of 8: x{p['factor']:.2f} (measured)"
        return worst, why

    def _conv_table(self, precision: str):
        """(the framework's conv points of ``precision``, note) where the runtime is the framework's (not fused)
        and the profile has them; the other 16-bit type's points where it has only those, said so in the note
        (the kernel is then outside the calibration)."""
        if self.runtime == "fused" or self.cal.conv is None:
            return None, ""
        return _own_or_sibling(self.cal.conv, precision, "conv")

    def _conv(self, op: KernelOp) -> OpTime | None:
        """A convolution from the framework's own conv points (cuDNN), where the profile has them: dense ones by
        kernel size over pixels and channels, grouped ones (``op.batch`` groups) from grouped points or else as one
        batched dense convolution, and the first-layer (stem) convolutions of an image's channels. None where no
        point of its kernel size was measured (the implicit-GEMM rule then prices it, flagged)."""
        table, sibling = self._conv_table(op.precision)
        if table is None or not op.conv_kernel:
            return self._conv_by_taps(table, op, sibling) if table is not None and op.conv_taps > 1 else None
        g, k, images = max(op.batch, 1), op.conv_kernel, op.conv_images or 1
        cin = op.k // (k * k)                               # per group
        layout, notes = op.layout or self.layout, [sibling] if sibling else []
        if cin * g >= STEM_CIN and layout not in table.layouts() and table.layouts():
            other = "nhwc" if "nhwc" in table.layouts() else sorted(table.layouts())[0]
            notes.append("NCHW: priced from the channels-last conv table (this profile has no NCHW points); "
                         "cuDNN's layout transforms around it are not calibrated" if other == "nhwc" else
                         f"{layout.upper()}: priced from the {other.upper()} conv points (no {layout.upper()} points "
                         f"at {op.precision}); the layout's own cost is not calibrated")
            layout = other
        source, dilated = "framework.conv", None
        if g == 1 and k == 3 and op.conv_dilation > 1 and op.conv_stride == 1:     # its own dilated points
            dilated = table.dilated(op.m, cin, op.n, op.conv_dilation, layout, images)
        if g == 1:
            got = dilated or table.time(op.m, cin, op.n, k, op.conv_stride, layout, images)
        else:
            source = "framework.conv_grouped"
            got = table.grouped(op.m, (cin * op.n) ** 0.5 * g, g, k, layout, images)
            if got is not None and not got[1] and not pow2(cin) and not table.has_grouped_odd(k, layout):
                notes.append(f"grouped, {cin} channels a group: no points at widths that are not powers of two "
                             "(cuDNN runs them on slower kernels); priced from the power-of-two widths")
            if got is None:
                got = self._grouped_as_dense(table, op, cin, layout, images)
                notes.append(f"grouped ({g} groups of {cin}->{op.n} channels): no grouped points; priced as one "
                             f"dense convolution over {g}x the pixels at the per-group channels")
        if got is None:
            return None
        it = ITEMSIZE.get(op.precision, 2)
        nbytes = (op.conv_input_bytes or it * op.m * op.k * g) + it * g * (op.n * op.k + op.m * op.n)
        t = self._finish(op, got[0], op.gemm_flops, nbytes, got[1] and not notes, source, "; ".join(notes),
                         table.floor_s())
        if dilated is not None:
            t.extra["dilated_points"] = True
        return t

    def _conv_by_taps(self, table, op: KernelOp, sibling: str) -> OpTime | None:
        """A dense convolution of a non-square kernel (Inception's 1x7, 7x1, 1x3) from the measured square kernels
        either side of its taps (kh x kw), log time over log taps at its pixels and channels, outside the
        calibration. Priced so, each measured 3x3 point from the 1x1 and 5x5 ones lands within a median 0-26% of
        its time and each 5x5 point from 3x3 and 7x7 within 26-49% (too slow); the implicit-GEMM rule on the
        linear table prices the 5x5 and 7x7 points 35-77% too fast."""
        taps, layout, images = op.conv_taps, op.layout or self.layout, op.conv_images or 1
        cin = op.k // taps
        if op.batch > 1 or cin < STEM_CIN or layout not in table.layouts():
            return None
        it = ITEMSIZE.get(op.precision, 2)
        nbytes = (op.conv_input_bytes or it * op.m * cin) + it * (op.n * op.k + op.m * op.n)
        if op.conv_kw and op.conv_stride == 1:
            got = table.nonsquare(op.m, cin, op.n, taps // op.conv_kw, op.conv_kw, layout, images)
            if got is not None:
                return self._finish(op, got[0], op.gemm_flops, nbytes, got[1] and not sibling, "framework.conv",
                                    sibling, table.floor_s())
        sizes = sorted(table.kernels())
        lo = max((k for k in sizes if k * k <= taps), default=None)
        hi = min((k for k in sizes if k * k >= taps), default=None)
        if lo is None or hi is None:
            return None
        got = [table.time(op.m, cin, op.n, k, op.conv_stride, layout, images) for k in (lo, hi)]
        if None in got:
            return None
        t = log_between(taps, lo ** 2, hi ** 2, got[0][0], got[1][0])
        note = f"a {taps}-tap non-square kernel: between the {lo}x{lo} and {hi}x{hi} points by taps"
        return self._finish(op, t, op.gemm_flops, nbytes, False, "framework.conv",
                            "; ".join(x for x in (sibling, note) if x), table.floor_s())

    @staticmethod
    def _grouped_as_dense(table, op: KernelOp, cin: int, layout: str, images: int) -> tuple[float, bool] | None:
        """The groups as one batched convolution (the batched-GEMM rule: the tile count of one dense convolution
        over groups x the pixels, at the per-group channels); per-group channels below the dense grid scale its
        time down linearly from the grid's fewest (where a held value would price far more work)."""
        lo = table.min_channels(op.conv_kernel, layout)
        if lo is None:
            return None
        got = table.time(op.m * op.batch, max(cin, lo), max(op.n, lo), op.conv_kernel, op.conv_stride, layout,
                         images)
        if got is None:
            return None
        return got[0] * min(1.0, (cin * op.n) ** 0.5 / lo), False

    def _gemm(self, op: KernelOp) -> OpTime:
        conv = self._conv(op) if op.conv_kernel or op.conv_taps else None
        if conv is not None:
            return conv
        grouped = self._grouped(op) if op.backend == "grouped_mm" and self.runtime != "fused" else None
        if grouped is not None:
            return grouped
        if op.k == 1 and op.precision not in self.cal.precisions:
            return self._outer_product(op)
        m = op.m * op.batch
        k_bytes = op.k * (op.weight_bits / 16 if op.weight_bits else 1.0)
        t, covered, note = self.gemm_s(op.precision, m, op.n, op.k)
        if op.groups:               # a routing given, but no grouped GEMM points to price it with
            covered, note = False, "; ".join(x for x in (note, "no grouped GEMM points in this profile: the routing's "
                                                               "experts as one batched GEMM of their mean rows") if x)
        floor_s = self.gemm_floor_s(op.precision)
        if (op.conv_kernel or op.conv_images) and self.runtime != "fused" and self.cal.conv is not None:
            what = (f"no {op.precision} conv points" if self.cal.conv.only(op.precision) is None else
                    f"no {op.conv_kernel}x{op.conv_kernel} conv points" if op.conv_kernel else "a non-square kernel")
            covered, note = False, "; ".join(x for x in (note, f"{what}: the implicit-GEMM rule on the "
                                                               f"{op.precision} GEMM table") if x)
        source = "framework.linear" if self.runtime != "fused" and op.precision in self.cal.framework_gemm else "gemm"
        pk = self.peak(op.precision)
        ceil_s = op.gemm_flops / pk if pk else 0.0     # the math at the measured library ceiling
        if ceil_s > t:                  # never faster than that (an extrapolation)
            t, covered = ceil_s, False
        if op.weight_bits:          # fewer weight bytes, FP16 math: never faster than the math of the full shape
            tq, _, _ = self.gemm_s(op.precision, m, op.n, k_bytes)
            t = max(tq, ceil_s)
            note = "; ".join(x for x in (note, f"weights in {op.weight_bits} bits: inferred from the FP16 table "
                                               "(no quantized-GEMM calibration)") if x)
        it = ITEMSIZE.get(op.precision, 2)
        if op.conv_input_bytes:     # the table's GEMM read the im2col matrix; the convolution reads its input once
            extra = max(0.0, it * m * op.k - op.conv_input_bytes)
            floor = max(ceil_s, (op.conv_input_bytes + it * (op.batch * op.n * op.k + m * op.n)) / self.dram_bw
                        if self.dram_bw else 0.0)
            t = max(t - extra / self.dram_bw if self.dram_bw else t, floor)
            f, why = 1.0, ""        # cuDNN's channel padding and first-layer kernels: no GEMM alignment price
        else:
            f, why = self.align_factor(op.precision, m, op.n, op.k)
        a_bytes = op.conv_input_bytes or it * m * op.k
        nbytes = op.bytes or a_bytes + it * (op.batch * op.n * k_bytes + m * op.n)
        if op.batch > 1 and self.dram_bw and not op.conv_kernel:
            # a batched GEMM reads a B matrix per batch entry (MoE experts, transformers' batched_mm): the table's
            # GEMM of batch x M rows read one; never faster than its own bytes at the measured DRAM bandwidth
            t = max(t, nbytes / self.dram_bw)
        return self._finish(op, t * f, op.gemm_flops, nbytes, covered, source,
                            "; ".join(x for x in (note, why) if x), floor_s)

    def _grouped(self, op: KernelOp) -> OpTime | None:
        """A grouped GEMM (torch._grouped_mm over ``op.batch`` experts of ``op.m`` rows each, or at ``op.groups``'
        rows per expert where the step has a routing) from the framework's grouped GEMM points where the profile has
        them (same datapath's points otherwise, said so); None without them: then it is priced as the batched GEMM
        it also is."""
        if self.cal.grouped is None:
            return None
        table, sibling = _own_or_sibling(self.cal.grouped, op.precision, "grouped GEMM")
        peak = self.peak(op.precision)
        if table is None:
            got = None
        elif op.groups:         # as routed (hwprobe.lowering.llm.routing)
            l2_bw, l2_note = self.l2_stream
            got = table.routed_time(op.groups, op.n, op.k, peak, self.dram_bw, l2_bw, self.l2_bytes)
            got = got and (got[0], got[1], "; ".join(x for x in (got[2], l2_note) if x))
        else:
            got = table.time(op.batch, op.m, op.n, op.k, peak, self.dram_bw)
        if got is None:
            return None
        t, covered, note = got
        nbytes = table.bytes(op.batch, op.m, op.n, op.k, ITEMSIZE.get(op.precision, 2))
        return self._finish(op, t, op.gemm_flops, nbytes, covered and not sibling, "framework.grouped_mm",
                            "; ".join(x for x in (note, sibling) if x), self.gemm_floor_s(op.precision))

    def _outer_product(self, op: KernelOp) -> OpTime:
        """A K = 1 product (the rotary table's frequencies x positions, in FP32) at a precision without GEMM points:
        no reduction, each output element written once, so it moves like an elementwise kernel of its output
        bytes; priced there and marked outside the calibration (a cuBLAS kernel runs it)."""
        it = ITEMSIZE.get(op.precision, 2)
        nbytes = it * op.batch * (op.m * op.n + op.m + op.n)
        t, _, note, src, floor_s = self._mem_time("elementwise", nbytes)
        why = f"an outer product (K = 1) with no {op.precision} GEMM points: its bytes on the elementwise curve"
        return self._finish(op, t, op.gemm_flops, nbytes, False, src, "; ".join(x for x in (note, why) if x),
                            floor_s)

    def _attention(self, op: KernelOp) -> OpTime:
        it = ITEMSIZE.get(op.precision, 2)
        nbytes = op.bytes or it * op.batch * (2 * op.m * op.k + 2 * op.n * op.k)
        masked = op.backend == "efficient"
        sdpa, sibling = _own_or_sibling(self.cal.sdpa, op.precision, "SDPA") if self.cal.sdpa else (None, "")
        if sdpa is not None and op.m == op.n and self.runtime != "fused":   # the SDPA table's points of its kind
            got = sdpa.time(op.batch, op.m, op.k, op.causal, masked=masked)
            if got is not None:
                return self._finish(op, got[0], op.gemm_flops, nbytes, got[1] and not sibling,
                                    "framework.sdpa_masked" if masked else "framework.sdpa", sibling, sdpa.floor_s())
        if masked:
            return self._efficient_attention(op, nbytes, sdpa)
        rows = op.batch * op.m
        t_pv, covered, note = self.gemm_s(op.precision, rows, op.k, op.n)
        rate = 2.0 * rows * op.k * op.n / t_pv
        mem_s, _, _, _, mem_floor = self._mem_time("copy", nbytes)
        return self._finish(op, max(op.gemm_flops / rate, mem_s), op.gemm_flops, nbytes, covered, "attention",
                            note, max(self.gemm_floor_s(op.precision), mem_floor))

    def _efficient_attention(self, op: KernelOp, nbytes: float, sdpa) -> OpTime:
        """SDPA's masked kernel (what transformers runs with a static cache; cuDNN's fused attention on Hopper under
        torch 2.11, the memory-efficient kernel before) where the SDPA table has no masked points for it
        (``_attention`` prices it from them for a prefill over its own cache, queries = keys): the products at the
        P @ V GEMM rate, and a read stream of its bytes (K and V already expanded to every query head, the mask; the
        output is small) at the profile's measured DRAM bandwidth after the framework's fixed cost of a fused
        attention (``sdpa``'s fastest call; the copy curve's where the profile has no SDPA table). No copy curve
        prices the stream: its kernels write as much as they read. Without a DRAM bandwidth: the copy curve at the
        bytes. This prices the H200's masked prefill calls 15-69% fast (profiles/h200-sxm/2026-11-28-sdpa-masked)."""
        rows = op.batch * op.m
        t_pv, covered, note = self.gemm_s(op.precision, rows, op.k, op.n)
        rate = 2.0 * rows * op.k * op.n / t_pv
        mem_s, _, _, _, mem_floor = self._mem_time("copy", nbytes)
        fixed = sdpa.floor_s() if sdpa is not None else mem_floor
        if self.dram_bw:
            mem_s = fixed + nbytes / self.dram_bw
            note = "; ".join(x for x in (note, "masked SDPA: its bytes read at the DRAM bandwidth") if x)
        floor_s = max(self.gemm_floor_s(op.precision), fixed)
        return self._finish(op, max(op.gemm_flops / rate, mem_s), op.gemm_flops, nbytes, covered,
                            "attention.efficient", note, floor_s)

    def _framework_curve(self, kind: str) -> str:
        name = FRAMEWORK_CURVE.get(kind, "copy")
        if name in self.cal.framework:
            return name
        return FRAMEWORK_STAND_IN.get(kind, name)

    def _mem_time(self, kind: str, nbytes: float) -> tuple[float, bool, str, str, float]:
        """(seconds, covered, note, source: the curve that priced it, that curve's floor: its fastest kernel)."""
        if kind in STAND_IN_KIND and FRAMEWORK_CURVE[kind] not in self.cal.framework and self.runtime != "fused":
            t, _, note, source, floor = self._mem_time(STAND_IN_KIND[kind], nbytes)
            head = f"no {kind} curve: priced as {STAND_IN_KIND[kind]} ({STAND_IN_WHY[kind]})"
            return t, False, "; ".join(x for x in (head, note) if x), source, floor
        fw_name = self._framework_curve(kind)
        fw = self.cal.framework.get(fw_name) if self.runtime != "fused" else None
        if fw is not None:
            own = FRAMEWORK_CURVE.get(kind, "copy")
            if fw_name != own and kind in STAND_IN_UNCOVERED:
                why = f" ({STAND_IN_WHY[kind]})" if kind in STAND_IN_WHY else ""
                return (fw.time(nbytes), False, f"no {own} curve: the {fw_name} curve{why}", f"framework.{fw_name}",
                        fw.floor_s())
            return fw.time(nbytes), fw.covers(nbytes), "", f"framework.{fw_name}", fw.floor_s()
        name = MEMORY_CURVE.get(kind, "unary")
        curve = self.cal.memory.get(name) or self.cal.memory.get("unary") or next(iter(self.cal.memory.values()),
                                                                                   None)
        if curve is None:
            raise InputError("the profile has no memory-kernel calibration (run the 'predict' suite)")
        note = "" if curve.kind == name else f"no {name} curve: the {curve.kind} curve"
        if kind in STAND_IN_WHY and curve.kind == name:
            note = f"no {kind} curve: the {name} curve ({STAND_IN_WHY[kind]})"
        covered = curve.covers(nbytes) and kind not in STAND_IN_UNCOVERED
        return curve.time(nbytes), covered, note, f"memory.{name}", curve.floor_s()

    def _conv_dw(self, op: KernelOp) -> OpTime | None:
        """A depthwise convolution from the conv table's depthwise points (its kernel, stride, layout and image
        regime), where the profile has them (else, and in older profiles: the copy curve at its bytes)."""
        table, sibling = self._conv_table(op.precision)
        if table is None or not (op.conv_kernel and op.m and op.n):
            return None
        k, images = op.conv_kernel, op.conv_images or 1
        layout = op.layout or self.layout
        got = table.dw_time(op.m, op.n, k, op.conv_stride, layout, images, op.conv_dilation) \
            if op.conv_dilation > 1 else None
        dilated = got is not None           # its own dilation's points; else the undilated ones (time() flags it)
        got = got or table.dw_time(op.m, op.n, k, op.conv_stride, layout, images)
        if got is not None:
            t = self._finish(op, got[0], op.flops, op.bytes, got[1] and not sibling, "framework.conv_dw", sibling,
                             table.floor_s(dw=True))
            if dilated:
                t.extra["dilated_points"] = True
            return t
        got = table.dw_time(op.m, op.n, 3, op.conv_stride, layout, images) if k != 3 else None
        if got is None:
            return None
        note = f"no depthwise {k}x{k} points: the 3x3 points x {k * k / 9:.2f} (taps)"
        return self._finish(op, got[0] * k * k / 9, op.flops, op.bytes, False, "framework.conv_dw",
                            "; ".join(x for x in (sibling, note) if x), table.floor_s(dw=True))

    def _nchw_pool(self, op: KernelOp) -> OpTime | None:
        """A windowed pooling in NCHW from the framework's pool_nchw curve (PyTorch's NCHW max pooling). Profiles
        before that curve: from the pool curve, which times channels-last max pooling: that
        kernel runs one block row per image (a one-image 64 x 112 x 112 pooling: 1 x 28 blocks), so the curve sits
        flat from 60 kB to 8 MB; PyTorch's NCHW kernel runs a thread per output over the whole GPU and moves its
        bytes at the rate the curve reaches at its largest size (many images). So: the bytes at that rate, never
        below the curve's fastest kernel; outside the calibration (no NCHW pool curve)."""
        if self.runtime == "fused" or (op.layout or self.layout) != "nchw" or op.kind != "pool" or op.bytes <= 0:
            return None
        own = self._on_curve(op, "pool_nchw")                  # the NCHW kernel's own curve
        if own is not None:
            return own
        curve = self.cal.framework.get("pool")
        if curve is None:
            return None
        t = max(curve.floor_s(), op.bytes * float(curve.time_s[-1] / curve.bytes[-1]))
        return self._finish(op, t, op.flops, op.bytes, False, "framework.pool",
                            "NCHW: the channels-last pool curve's top rate (no NCHW pool curve)", curve.floor_s())

    def _nchw_bias(self, op: KernelOp) -> OpTime | None:
        """A per-channel add over an NCHW map (a convolution's bias, a squeeze-excitation scale) from the framework's
        ``bias_nchw`` curve, where the profile has it: PyTorch runs it on its plain elementwise kernel, which the
        last-dim 'bias' curve prices 19% short at 64 images (a ResNet-50's 53 bias adds: 2.1 ms measured on an
        H200, 1.7 ms priced) and 19% long at one image. Older profiles: None (the 'bias' curve, as before)."""
        if not op.channel_bias or (op.layout or self.layout) != "nchw":
            return None
        return self._on_curve(op, "bias_nchw")

    def _resize_linear(self, op: KernelOp) -> OpTime | None:
        """A bilinear resize from the framework's curve of its layout (resize_linear: channels-last; the _nchw one:
        PyTorch's NCHW kernel); profiles before those curves: None (the nearest-neighbour curve, flagged). In NCHW
        from the curve's grid over output pixels x planes where it has one: that kernel runs a thread per output
        pixel looping over every plane, so a small output over many planes (an ASPP pooling branch's 1 x 1 ->
        14 x 14 over 8 x 256 planes: 113 us on an H200) is latency-bound far above its bytes (8.5 us on the curve);
        from a 1 x 1 input (``op.k``, the input's pixels per plane) the grid's points from one."""
        if (op.layout or self.layout) != "nchw":
            return self._on_curve(op, "resize_linear")
        curve = self.cal.framework.get("resize_linear_nchw") if self.runtime != "fused" else None
        got = curve.grid_time(op.m, op.n, op.k) if curve is not None else None
        if got is None:
            return self._on_curve(op, "resize_linear_nchw")
        return self._finish(op, got[0], op.flops, op.bytes, got[1], "framework.resize_linear_nchw", "",
                            curve.floor_s())

    def _on_curve(self, op: KernelOp, name: str) -> OpTime | None:
        """``op`` at its bytes on the framework's ``name`` curve; None where the profile has no such curve (or the
        runtime is fused, or the op moves no bytes)."""
        curve = self.cal.framework.get(name) if self.runtime != "fused" and op.bytes > 0 else None
        if curve is None:
            return None
        return self._finish(op, curve.time(op.bytes), op.flops, op.bytes, curve.covers(op.bytes), f"framework.{name}",
                            "", curve.floor_s())

    def _memory(self, op: KernelOp) -> OpTime:
        if op.kind == "conv_dw" and (dw := self._conv_dw(op)) is not None:
            return dw
        if op.kind == "resize_linear" and (rs := self._resize_linear(op)) is not None:
            return rs
        if op.kind == "pool" and (pool := self._nchw_pool(op)) is not None:
            return pool
        if op.kind == "bias" and (bias := self._nchw_bias(op)) is not None:
            return bias
        t, covered, note, src, floor_s = self._mem_time(op.kind, op.bytes)
        if op.l2_bytes:             # re-read within the kernel: at the L2 slope, on top of its DRAM bytes' price
            l2_bw, l2_note = self.l2_stream
            t += op.l2_bytes / l2_bw if l2_bw else 0.0
            note = "; ".join(x for x in (note, f"{op.l2_bytes / 1e6:.3g} MB more read from L2", l2_note) if x)
        if op.kind == "conv_dw" and op.conv_kernel != 3:      # the copy curve stood in for 3x3 ones only (validated)
            covered, note = False, "; ".join(x for x in (note, f"no depthwise {op.conv_kernel}x{op.conv_kernel} "
                                                               "points: the copy curve at its bytes") if x)
        return self._finish(op, t, op.flops, op.bytes, covered, src, note, floor_s)

    def _comm(self, op: KernelOp) -> OpTime:
        fn = getattr(self.profile, "collective_time", None)
        if fn is None or op.ranks <= 1:
            return OpTime(op, 0.0, bound="comm", covered=op.ranks <= 1, source="collective",
                          note="" if op.ranks <= 1 else "missing: no measured collective curve in this profile")
        try:
            t, covered, note = fn(op.kind, op.bytes, op.ranks)
        except (InputError, KeyError, ValueError) as e:
            return OpTime(op, 0.0, bound="comm", covered=False, source="collective", note=f"missing: {e}")
        return OpTime(op, t, comm_s=t, bound="comm", covered=covered, source="collective", note=note,
                      roofline_s=t)

    def _finish(self, op: KernelOp, t: float, flops: float, nbytes: float, covered: bool, source: str,
                note: str, floor_s: float = 0.0) -> OpTime:
        """The bound: the roof (compute or memory) a kernel reaches half of; else "latency" where its fixed cost
        is at least half its time (``floor_s``: the fastest kernel its pricing curve measured, the cost every
        kernel of its kind pays whatever its size; or the launch); else the roof its work grows against, the
        larger one: a 100 MB kernel at a third of DRAM speed is a slow memory kernel, not a latency-bound one."""
        if self.runtime != "fused":
            t += self.cal.switch_s      # curves were timed on one kernel back to back; a model alternates kernels
            floor_s += self.cal.switch_s
        pk = self.peak(op.precision)
        compute_s = flops / pk if pk else 0.0
        memory_s = nbytes / self.dram_bw if self.dram_bw else 0.0
        launch_s = self.host_s if self.runtime == "eager" else self.node_s
        top = max(compute_s, memory_s)
        floor = max(compute_s, self.memory_floor(nbytes, op.kind in MEMORY_KINDS))
        extra = {}
        if t < floor:               # faster than the kernel's roofline bound: a curve stretched past what it measured
            extra["held_at_floor_s"] = floor - t
            note = "; ".join(x for x in (note, f"priced at {t / floor:.0%} of its roofline bound: held at the "
                                               "bound") if x)
            t = floor
        floor_s = max(floor_s, launch_s)
        roof = "compute" if compute_s >= memory_s else "memory"
        bound = roof if top >= 0.5 * t else "latency" if floor_s >= 0.5 * t else roof
        return OpTime(op, t, compute_s=compute_s, memory_s=memory_s, launch_s=min(launch_s, t), bound=bound,
                      roofline_s=floor, covered=covered, source=source, note=note, extra=extra)

    def memory_floor(self, nbytes: float, activations: bool = False) -> float:
        """The least time ``nbytes`` can move in: at the DRAM slope; for a memory-bound kernel's activations
        (``activations``) that fit in L2 (a producer's output read by the next kernel need not leave it), at the
        L2 slope where the profile measured one, else no memory term. A GEMM's weights come from DRAM (each
        layer's own, as the calibration read them), so its bytes keep the DRAM slope."""
        if nbytes <= 0:
            return 0.0
        if activations and self.l2_bytes and nbytes <= self.l2_bytes:
            return nbytes / self.l2_bw if self.l2_bw else 0.0
        return nbytes / self.dram_bw if self.dram_bw else 0.0

    def time(self, op: KernelOp) -> OpTime:
        t = self._time(op)
        if op.conv_dilation > 1 and not t.extra.get("dilated_points"):   # priced as the undilated convolution
            t.covered = False
            t.note = "; ".join(x for x in (t.note, f"dilation {op.conv_dilation}: priced as undilated (no dilated "
                                                   "conv points)") if x)
        return t

    def _time(self, op: KernelOp) -> OpTime:
        if op.kind == "gemm":
            return self._gemm(op)
        if op.kind == "attention":
            return self._attention(op)
        if op.kind in MEMORY_CURVE:
            return self._memory(op)
        return self._comm(op)

    # --- what a run of kernels costs beyond their own times ------------------------------------------------------
    def run_overhead(self, ops: list[KernelOp], times: list[OpTime] | None = None) -> dict[str, float]:
        """Seconds a pass pays once or per change of kernel side, not per kernel shape: ``replay``, the framework's
        fixed cost of one CUDA-graph replay (graph runtime; gpu.torch_kernels measured it), ``switches``, the
        measured cost of each change between a library kernel (cuBLAS, cuDNN) and a framework kernel in the
        sequence (both from the profile; absent where it lacks them), and for the eager runtime ``host_wait``: how
        long the GPU waits for the host (``host_queue`` over the kernels' ``times``, in launch order)."""
        out: dict[str, float] = {}
        if self.runtime == "eager" and times and self.host_s:
            out["host_wait"] = host_queue([t.time_s for t in times], self.host_s)
        if self.runtime == "graph" and self.cal.framework_replay_s:
            out["replay"] = self.cal.framework_replay_s
        if self.runtime != "fused" and self.cal.switch_library_s:
            sides = [op.kind in LIBRARY_KINDS for op in ops if op.kind not in COMM_KINDS]
            n = sum(a != b for a, b in zip(sides, sides[1:], strict=False))
            if n:
                out["switches"] = n * self.cal.switch_library_s
        return out

    def eager_note(self, host_wait_s: float, kernels: int) -> str:
        """What the eager runtime's host costs a pass, and where the host time per op comes from."""
        src = HOST_WORDS[self.host_source]
        if self.family:
            src += f" ({self.family}: {self.cal.hf_family_ratio[self.family]:.2f}x)"
        if self.tp > 1:
            src += (f", times {self.cal.hf_tp_ratio:.2f} under the tp plan (gpu.tp_host: the tiny Llama's step sharded "
                    f"over {self.cal.hf_tp} GPUs, per kernel over one GPU's)")
        if self.tp_family:
            src += (f", times {self.cal.hf_tp_family_ratio[self.tp_family]:.2f} for {self.tp_family}'s gathering plan "
                    "(its tiny decoder under its plan, per kernel over the sharded Llama's)")
        if self.host_code == "transformers" and not self.host_source.startswith("transformers"):
            src += ("; transformers' own code costs 1.3-1.6x the bare ops per kernel on the hosts measured, and this "
                    "profile lacks its figure (run the calibration where transformers is installed)")
        return (f"eager: the host issues each of the {kernels} kernels in {self.host_s * 1e6:.1f} us, {src}; the "
                f"GPU waits for it {host_wait_s * 1e6:.0f} us over the kernels' own time (a queue: a long kernel "
                "lets the host run ahead)")

    # --- the power-capped clock of a long compute-bound run ---------------------------------------------------------
    def power_ratio(self, precision: str) -> tuple[float, str]:
        """Burst over sustained library rate at the power cap (gpu.gemm_power), for ``precision`` or the other 16-bit
        type's (the same datapath); none for other precisions without their own measurement."""
        for p in (precision, SAME_DATAPATH.get(precision, precision)):
            c = self.profile.peak(p, ExecUnit.TENSOR_CORE, Path.LIBRARY)
            if c is not None and c.sustained and c.value > c.sustained:
                return c.value / c.sustained, (f"{p} library {c.value / 1e12:.0f} TFLOP/s in bursts, "
                                               f"{c.sustained / 1e12:.0f} sustained at the power cap (gpu.gemm_power)")
        return 1.0, ""

    def power_note(self, times: list[OpTime], precision: str) -> str:
        """What the power cap could cost the run, said and not applied ("" when nothing to say).

        The pricing keeps the calibrated times: the calibration's large GEMM points already ran under the cap (the
        H200's PyTorch linear table reads 616-665 TFLOP/s from 8192 rows up against 750-790 at 1024), and a model
        pass runs its GEMMs between lighter kernels. Scaling the compute-bound kernels by 1 + share x
        (burst/sustained - 1), as the predictor did until 2026-11-28, put the tuned mistral-7b's prefill GEMMs at
        1 x 512 29% above their profiled time (H200) and the `hf` prefills 2-15% high; without it the tuned
        families' `hf` prefill median went 8.5 -> 2.4% (H200) and 7.3 -> 5.4% (H100). The note gives that factor
        as the bound for a run that holds the cap for seconds."""
        ratio, why = self.power_ratio(precision)
        total = sum(t.time_s for t in times)
        comp = sum(t.time_s for t in times if _at_compute_roof(t))
        if ratio <= 1.0 or not total or not comp:
            return ""
        share = comp / total
        return (f"power cap: not applied; a run that held it for seconds could be up to x{1 + share * (ratio - 1):.3f} "
                f"slower (compute-bound kernels {share:.0%} of the run, from {why})")


def _at_compute_roof(t: OpTime) -> bool:
    """A kernel that reaches half its compute roof: it draws the power a long compute-bound run settles at (one
    bound "compute" only because its work grows with FLOPs, far below the roof, does not)."""
    return t.bound == "compute" and t.compute_s >= 0.5 * t.time_s


def host_queue(gpu_s: list[float], host_s: float) -> float:
    """Seconds the GPU idles waiting for the host over a pass launched op by op: the host issues kernel i at
    (i + 1) x ``host_s`` (no earlier), the GPU starts it when both it is issued and the previous kernel is done.
    The pass ends when the last kernel does; what that adds to the kernels' own sum is returned. A run of short
    kernels costs the host's time each; a long kernel lets the host run ahead, and the kernels issued meanwhile
    cost nothing extra."""
    issued = done = 0.0
    for t in gpu_s:
        issued += host_s
        done = max(done, issued) + t
    return max(0.0, done - sum(gpu_s))
