"""One kernel a runtime launches (``KernelOp``): what every lowering produces and the predictor prices.

A model is lowered to a list of kernels (hwprobe.lowering.layers for layer tables and ONNX graphs,
hwprobe.lowering.llm for transformer configs); each kernel is priced from the profile's calibration curves
(hwprobe.predict.model). Shapes, not layer names, decide the price.
"""

from __future__ import annotations

from dataclasses import dataclass

# Kernel kinds the calibration covers. gemm: C[batch, m, n] = A[batch, m, k] @ B[batch, k, n]; attention:
# a fused (flash) attention over ``batch`` = sequences x heads, ``m`` queries, ``n`` keys, head size ``k``;
# the memory kinds move ``bytes`` (read + written) with little arithmetic (norm: a row norm such as LayerNorm;
# batchnorm: an unfused inference BatchNorm, a per-channel scale and shift; groupnorm: GroupNorm or InstanceNorm,
# statistics per group of channels; resize: an upsampling or downsampling; expand: a broadcast (expanded) view
# made contiguous, such as transformers' ``repeat_kv``: ``bytes`` = 2 x its output's, each output element read and
# written by PyTorch's non-vectorized copy kernel); gather: rows picked by an index and written contiguous
# (``index_select``, advanced indexing: an MoE's per-token expert weights and tokens), read and written whole by
# PyTorch's vectorized gather kernel; strided: a pointwise op over a non-contiguous view (a ``chunk`` of a fused
# projection's output), which PyTorch runs on its non-vectorized template, the bias curve's kernel; sort:
# ``torch.sort`` of int64 keys with their positions (an MoE's token-expert pairs), ``bytes`` = 32 a key (the
# calibration's sort curve counts the same); cat_strided: a ``torch.cat`` with an input that is not contiguous
# (a DynamicCache update of a sliding window's held slice or of a fused projection's view), which PyTorch runs on
# its non-vectorized 4-D cat kernel, about a sixth of a contiguous copy's speed; topk: ``torch.topk`` along the last
# dim of FP32 scores (an MoE router's), ``bytes`` = the scores read and the values and int64 indices written (the
# calibration's topk curve counts the same); rotate_cat: RoPE's ``rotate_half`` cat on q or k held transposed
# ([batch, heads, tokens, head] over a [batch, tokens, heads, head] projection), the generic 4-D cat again but with
# the other input a fresh tensor; cat_cache: a ``torch.cat`` of contiguous inputs (a DynamicCache update), PyTorch's
# vectorized cat, which reads and writes every element as its unary kernels do; allreduce: ``bytes`` per rank.
GEMM_KINDS = ("gemm", "attention")
MEMORY_KINDS = ("elementwise", "bias", "reduction", "norm", "softmax", "transpose", "copy", "cat", "pool", "conv_dw",
                "embedding", "batchnorm", "groupnorm", "resize", "resize_linear", "unary", "expand", "permute",
                "relayout", "gather", "strided", "sort", "cat_strided", "topk", "rotate_cat", "cat_cache")
COMM_KINDS = ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "sendrecv")
KINDS = GEMM_KINDS + MEMORY_KINDS + COMM_KINDS
RUNTIMES = ("eager", "graph", "fused")


@dataclass(frozen=True)
class KernelOp:
    """One kernel. ``flops`` counts a multiply-add as 2 (filled from the shape for GEMM kinds when 0)."""

    name: str
    kind: str
    precision: str = "fp16"           # the math's precision (fp16, bf16, fp8, int8, tf32, fp32, fp64)
    m: int = 0                        # GEMM rows; conv_dw: output pixels; resize_linear: output pixels per plane
    n: int = 0                        # GEMM N; conv_dw: channels; resize_linear: planes (images x channels)
    k: int = 0                        # GEMM K; resize_linear: input pixels per plane (0: not known)
    batch: int = 1
    bytes: float = 0.0                # memory kinds: bytes read + written; GEMM kinds: 0 = from the shape
    flops: float = 0.0
    causal: bool = False              # attention: only the lower triangle is computed
    weight_bits: int | None = None    # gemm: B stored in 4 or 8 bits (weight-only quantization), math in precision
    ranks: int = 1                    # collectives: the number of ranks
    layers: tuple[str, ...] = ()      # the model layers this kernel covers (several where fused)
    conv_kernel: int = 0              # gemm from a convolution: its kernel size (kh; 0 = a plain GEMM)
    conv_input_bytes: float = 0.0     # gemm from a convolution: the input tensor's bytes (0: a plain GEMM). An
    #                                   implicit GEMM reads its input once, not the kh x kw times larger im2col matrix
    conv_stride: int = 1              # gemm from a convolution: its stride
    conv_images: int = 0              # a convolution: images in the batch (0: not known)
    conv_taps: int = 0                # a convolution of a non-square kernel (conv_kernel 0): kh x kw (0: square)
    conv_kw: int = 0                  # ... and its width (kh = conv_taps // conv_kw; 0: not known)
    conv_dilation: int = 1            # a convolution's dilation (its largest; 1: none)
    layout: str = ""                  # a convolution or pooling of an NCHW model run channels-last ("nhwc": its
    #                                   input is); "" = the model's layout
    channel_bias: bool = False        # bias: a per-channel (1, C, 1, 1) operand over a 4-D feature map (a
    #                                   convolution's bias, a squeeze-excitation scale); in NCHW PyTorch runs it on its
    #                                   plain elementwise kernel, not the last-dim broadcast the 'bias' curve times
    backend: str = ""                 # attention: "efficient" = SDPA's masked kernel (cuDNN's or the
    #                                   memory-efficient one) over K/V already expanded to every head; "" = flash.
    #                                   gemm: "grouped_mm" = torch._grouped_mm over ``batch`` experts of ``m`` rows
    l2_bytes: float = 0.0             # memory kinds: bytes a kernel reads again from L2 within itself, on top of
    #                                   ``bytes`` (a gather of rows that repeat, read by neighbouring blocks)
    groups: tuple[int, ...] = ()      # gemm "grouped_mm" as routed: rows per expert, every expert of the layer
    #                                   (hwprobe.lowering.llm.routing); () = ``batch`` experts of ``m`` rows each

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kernel kind {self.kind!r}; kinds: {', '.join(KINDS)}")

    @property
    def gemm_flops(self) -> float:
        """2 m n k per batch entry (attention: both products, halved where causal)."""
        if self.kind == "gemm":
            return 2.0 * self.batch * self.m * self.n * self.k
        if self.kind == "attention":
            f = 4.0 * self.batch * self.m * self.n * self.k
            return f / 2 if self.causal and self.m > 1 else f
        return self.flops

    @property
    def total_flops(self) -> float:
        return self.flops or self.gemm_flops
