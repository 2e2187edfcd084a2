"""A model's layers as the kernels a runtime launches for them.

An ONNX graph is not a kernel list: an exporter writes host-side shape arithmetic (Shape -> Gather -> Concat ->
Reshape) that runs no kernel, views (Reshape, Squeeze, a Transpose feeding a MatMul) that move no bytes,
decomposed ops that a framework runs as one kernel (an erf GELU is five ONNX nodes), a bias Add that cuBLAS
folds into its epilogue, and F.scaled_dot_product_attention as MatMul -> Softmax -> MatMul where PyTorch runs
one fused kernel. The lowering follows the graph's edges (``Layer.extra['io']``, from the ONNX reader) and
applies these rules, as PyTorch runs a model in eager mode and when its forward is replayed as a CUDA graph: an
attention pattern is one fused kernel where it carries SDPA's signature (Q and K each scaled before the first
MatMul, as both exporters write SDPA) or is an exporter's Attention node, and otherwise the kernels an explicit
attention launches (batched matmul, scale, mask, softmax, batched matmul); the scales on Q and K and a GELU's
divide run inside their fused kernels; a binary op on operands of different sizes runs PyTorch's broadcast
kernel; a Gather from a weight table reads the rows it gathers; a MatMul or two-operand Einsum of two
activations is a batched GEMM; memory kernels move their tensors' own element types (an FP32 island in an FP16
model); Resize, an unfused BatchNorm and GroupNorm/InstanceNorm are kernels of their own kinds. The ``fused``
runtime also folds pointwise ops into the GEMM or convolution that produces their input, and every attention
pattern into one kernel, as TensorRT does.

Layers without edges (built-in architectures, layer CSV) lower one kernel per layer by their op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from hwprobe.lowering.ops import MEMORY_KINDS, KernelOp
from hwprobe.models.conventions import ELEMENT_BYTES as ITEMSIZE
from hwprobe.models.layers import Layer, Model

VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Split", "Slice", "Shape", "Size",
         "Constant", "ConstantOfShape", "Expand", "Range"}
POINTWISE_OPS = ("act", "eltwise", "bn")
NORM_OPS = {"LayerNormalization": "norm", "RMSNormalization": "norm", "SimplifiedLayerNormalization": "norm",
            "BatchNormalization": "batchnorm", "InstanceNormalization": "groupnorm", "GroupNormalization": "groupnorm"}
RESIZE_OPS = ("Resize", "Upsample")
ATTENTION_OPS = ("Attention", "MultiHeadAttention")     # an exporter's fused attention node: one kernel
REDUCE_OPS = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceSumSquare",
              "ArgMax", "ArgMin", "CumSum"}
SCALE_OPS = ("Mul", "Div")


@dataclass
class Lowered:
    kernels: list[KernelOp]
    notes: list[str] = field(default_factory=list)


def _dims(layer: Layer, name: str) -> list[int] | None:
    return (layer.extra.get("io") or {}).get("dims", {}).get(name)


class _Graph:
    """Producers, consumers and constants of a lowered ONNX model (``Layer.extra['io']``)."""

    def __init__(self, layers: list[Layer]) -> None:
        self.layers = layers
        self.io = [x.extra.get("io") or {"in": [], "out": [], "const": []} for x in layers]
        self.producer: dict[str, int] = {}
        self.consumers: dict[str, list[int]] = {}
        self.const: set[str] = set()
        for i, io in enumerate(self.io):
            for name, c in zip(io["in"], io["const"], strict=False):
                if c:
                    self.const.add(name)
                if name:
                    self.consumers.setdefault(name, []).append(i)
            for name in io["out"]:
                self.producer[name] = i
        self.host = self._host_side()

    def _host_side(self) -> set[int]:
        """Nodes that compute on constants and shapes only (folded or run on the host: no kernel)."""
        host: set[int] = set()
        for i, io in enumerate(self.io):
            src = self.layers[i].source_op
            ins = [x for x in io["in"] if x]
            if src in ("Shape", "Size", "Constant") or all(x in self.const for x in ins):
                host.add(i)
                self.const.update(x for x in io["out"] if x)
        return host

    def data_inputs(self, i: int) -> list[str]:
        return [x for x in self.io[i]["in"] if x and x not in self.const]

    def users(self, i: int) -> list[int]:
        return [c for o in self.io[i]["out"] if o for c in self.consumers.get(o, [])]

    def only_user(self, i: int) -> int | None:
        u = self.users(i)
        return u[0] if len(u) == 1 else None

    def src(self, i: int) -> str:
        return self.layers[i].source_op


def _bytes(layer: Layer, it: float) -> float:
    return float(layer.inputs + layer.outputs + layer.weights) * it


def _conv_shape(layer: Layer, rows: int) -> tuple[int, int, int]:
    """(square kernel size or 0, stride, images) of a convolution with ``rows`` output pixels."""
    kernel = layer.kernel or (1, 1)
    kh = kernel[0] if kernel[0] == kernel[-1] else 0
    # stride from the pixel counts: input pixels per output pixel = stride^2 (batch and padding aside)
    stride = max(1, round(math.sqrt(layer.inputs / (layer.cin * rows)))) if layer.cin and layer.inputs else 1
    images = rows // (layer.out_hw[0] * layer.out_hw[1]) if layer.out_hw and all(layer.out_hw) else 0
    return kh, stride, images


def _gemm_op(layer: Layer, prec: str, it: float) -> KernelOp:
    """Convolutions as implicit GEMMs (rows = output pixels, K = C_in/groups x kh x kw), FC and MatMul as GEMMs."""
    n_total = layer.cout or 1
    rows = layer.rows or max(1, layer.outputs // n_total)
    g = max(layer.groups, 1)
    k = max(1, round(layer.macs / max(rows * n_total, 1)))
    conv = layer.op in ("conv", "convtranspose")
    conv_in = float(layer.inputs) * it if conv and (layer.kernel or (1, 1)) != (1, 1) else 0.0
    kh, stride, images = _conv_shape(layer, rows) if conv else (0, 1, 0)
    bmm = int(layer.extra.get("gemm_batch") or 1)           # a batched GEMM of two activations: batch x (m x n x k)
    if bmm > 1 and not conv and rows % bmm == 0:
        return KernelOp(layer.name, "gemm", prec, m=rows // bmm, n=n_total, k=k, batch=bmm, layers=(layer.name,))
    kernel = layer.kernel or (1, 1)
    taps = kernel[0] * kernel[-1] if conv and not kh else 0          # a non-square kernel (1x7, 3x1)
    return KernelOp(layer.name, "gemm", prec, m=rows, n=max(1, n_total // g), k=k, batch=g, layers=(layer.name,),
                    conv_input_bytes=conv_in, conv_kernel=kh, conv_stride=stride, conv_images=images,
                    conv_taps=taps, conv_kw=kernel[-1] if taps else 0)


def _memory_kind(layer: Layer) -> str:
    src = layer.source_op
    if src in NORM_OPS:
        return NORM_OPS[src]
    if src in RESIZE_OPS:           # bilinear (segmentation heads, U-Nets) runs another kernel than nearest (FPNs)
        return "resize_linear" if layer.extra.get("mode") in ("linear", "cubic") else "resize"
    if layer.op == "bn":
        return "batchnorm"          # an inference BatchNorm left unfused: a per-channel scale and shift kernel
    if src in ("MaxPool", "AveragePool", "LpPool"):
        return "pool"               # a windowed pooling (a CNN stem's 3x3/2): its own kernel, not a reduction
    if src in REDUCE_OPS or layer.op == "pool":
        return "reduction"
    if layer.op == "softmax":
        return "softmax"
    if layer.op == "layernorm":
        return "norm"
    if src == "Concat" or layer.op == "concat":
        return "cat"
    if layer.op == "reshape" or src in ("Gather", "GatherElements", "ScatterND", "Pad", "Tile"):
        return "copy"
    if src == "Transpose":
        return "transpose"
    return "elementwise"


def kernel_of(layer: Layer, prec: str) -> KernelOp | None:
    """One layer as one kernel (no graph context): None for layers that run none."""
    it = ITEMSIZE.get(prec, 2)
    if getattr(layer, "shape_only", False):
        return None
    if layer.op in ("conv", "convtranspose") and layer.depthwise:
        rows = layer.rows or max(1, layer.outputs // max(layer.cout or 1, 1))
        kh, stride, images = _conv_shape(layer, rows)
        return KernelOp(layer.name, "conv_dw", prec, m=rows, n=layer.cout or 0, bytes=_bytes(layer, it),
                        flops=2.0 * layer.macs, layers=(layer.name,), conv_kernel=kh, conv_stride=stride,
                        conv_images=images)
    if layer.op in ("conv", "convtranspose", "gemm", "matmul") and layer.macs > 0:
        return _gemm_op(layer, prec, it)
    if layer.op == "reshape" or layer.source_op in VIEWS:
        return None
    nbytes = _bytes(layer, it)
    if nbytes <= 0:
        return None
    return KernelOp(layer.name, _memory_kind(layer), prec, bytes=nbytes, layers=(layer.name,))


# --- graph rules ------------------------------------------------------------------------------------------------
def _is_scalar_scale(g: _Graph, i: int) -> bool:
    """A Mul/Div of an activation by a constant (the attention scale; one of a decomposed GELU's constants)."""
    ins = [x for x in g.io[i]["in"] if x]
    return g.src(i) in SCALE_OPS and any(x in g.const for x in ins) and len(g.data_inputs(i)) == 1


def _attention(g: _Graph, i: int) -> tuple[list[int], int] | None:
    """MatMul(Q, K^T) [-> scale] [-> mask Add/Where] -> Softmax [-> Cast/Dropout] -> MatMul(P, V): the nodes the
    pattern spans (PyTorch runs them as one scaled-dot-product kernel) and the second MatMul's index."""
    if g.src(i) != "MatMul" or len(g.data_inputs(i)) != 2:
        return None
    chain, j = [i], g.only_user(i)
    while j is not None and g.src(j) in ("Mul", "Div", "Add", "Where", "Cast", "Softmax", "Dropout"):
        chain.append(j)
        if g.src(j) == "Softmax":
            k = _after_softmax(g, j, chain)
            if k is not None and g.src(k) == "MatMul" and g.io[k]["in"][0] == g.io[chain[-1]]["out"][0]:
                return chain + [k], k
            return None
        j = g.only_user(j)
    return None


def _after_softmax(g: _Graph, j: int, chain: list[int]) -> int | None:
    """The node after a Softmax once casts, dropout and the dynamo exporter's NaN guard (Softmax -> IsNaN ->
    Where(isnan, 0, softmax)) are stepped over (appended to ``chain``)."""
    users = g.users(j)
    if len(users) == 2 and {g.src(u) for u in users} == {"IsNaN", "Where"}:
        nan = next(u for u in users if g.src(u) == "IsNaN")
        where = next(u for u in users if g.src(u) == "Where")
        chain += [nan, where]
        j = where
    k = g.only_user(j)
    while k is not None and g.src(k) in ("Cast", "Dropout", "Identity"):
        chain.append(k)
        k = g.only_user(k)
    return k


def _attention_op(g: _Graph, first: int, last: int, prec: str, it: float) -> KernelOp | None:
    a = g.layers[first]
    q_dims = _dims(a, g.io[first]["in"][0])
    s_dims = _dims(a, g.io[first]["out"][0])
    if not q_dims or not s_dims or len(s_dims) < 2:
        return None
    batch = math.prod(s_dims[:-2]) if len(s_dims) > 2 else 1
    m, n, k = s_dims[-2], s_dims[-1], q_dims[-1]
    nbytes = it * batch * (2 * m * k + 2 * n * k)
    return KernelOp(a.name, "attention", prec, m=m, n=n, k=k, batch=batch, bytes=nbytes,
                    layers=tuple(x.name for x in (g.layers[first], g.layers[last])))


def _attention_node(layer: Layer, prec: str, it: float) -> KernelOp | None:
    """An exporter's fused attention node (ONNX Attention, com.microsoft MultiHeadAttention) as one kernel: Q, K
    as [batch, heads, seq, head] or [batch, seq, heads x head] with the node's head count."""
    io = layer.extra.get("io") or {}
    ins = [x for x in io.get("in", []) if x]
    dims = io.get("dims", {})
    q, kv = (dims.get(ins[0]) if ins else None), (dims.get(ins[1]) if len(ins) > 1 else None)
    attrs = io.get("attrs") or {}
    heads = int(attrs.get("q_num_heads") or attrs.get("num_heads") or 0)
    if not q or not kv:
        return None
    if len(q) == 4:
        batch, m, k, n = q[0] * q[1], q[2], q[3], kv[2]
    elif len(q) == 3 and heads:
        batch, m, k, n = q[0] * heads, q[1], q[2] // heads, kv[1]
    else:
        return None
    causal = bool(attrs.get("is_causal") or attrs.get("unidirectional"))
    return KernelOp(layer.name, "attention", prec, m=m, n=n, k=k, batch=batch, causal=causal,
                    bytes=it * batch * (2 * m * k + 2 * n * k), layers=(layer.name,))


def _is_sdpa(g: _Graph, i: int) -> bool:
    """The attention pattern from i is F.scaled_dot_product_attention's decomposition (both exporters scale Q and K
    by sqrt(scale) each before the first MatMul): PyTorch ran one fused kernel. An explicit attention (the scale
    on the scores, or on Q alone) ran as the kernels its nodes name: bmm, the scale, softmax, bmm."""
    return len(_scales_before(g, i)) >= 2


def _scales_before(g: _Graph, i: int) -> list[int]:
    """Scalar scales applied to Q or K on their way (through views) into the attention's first MatMul: SDPA
    applies them inside its kernel."""
    out, todo = [], [g.producer.get(x) for x in g.data_inputs(i)]
    while todo:
        p = todo.pop()
        if p is None or len(g.users(p)) != 1:
            continue
        if _is_scalar_scale(g, p):
            out.append(p)
        elif g.src(p) in ("Transpose", "Reshape", "Squeeze", "Unsqueeze"):
            todo.extend(g.producer.get(x) for x in g.data_inputs(p))
    return out


def _is_select(g: _Graph, i: int) -> bool:
    """Gather of a constant index from an activation (q, k, v = qkv[0], qkv[1], qkv[2]): a view in PyTorch."""
    io = g.io[i]
    return (g.src(i) == "Gather" and len(io["const"]) > 1 and io["const"][1] and not io["const"][0]
            and (g.layers[i].weights or 0) <= 16)


def _gelu_erf(g: _Graph, i: int) -> list[int] | None:
    """Div(x, c) -> Erf -> Add(c) -> Mul(x) -> Mul(c) (any order of the last two): torch.nn.GELU, one kernel."""
    if g.src(i) != "Erf":
        return None
    span = [i]
    p = g.producer.get(g.io[i]["in"][0])
    if p is not None and _is_scalar_scale(g, p):
        span.insert(0, p)
    j = g.only_user(i)
    while j is not None and g.src(j) in ("Add", "Mul") and len(span) < 5:
        span.append(j)
        j = g.only_user(j)
    return span


def _silu(g: _Graph, i: int) -> list[int] | None:
    """Sigmoid(x) -> Mul(x, .): torch.nn.SiLU as the exporter writes it (ONNX before opset 24 has no Swish), one
    kernel in PyTorch (EfficientNet's activations, a Llama MLP's gate)."""
    if g.src(i) != "Sigmoid" or not g.io[i]["in"]:
        return None
    j = g.only_user(i)
    if j is not None and g.src(j) == "Mul" and g.io[i]["in"][0] in g.io[j]["in"]:
        return [i, j]
    return None


def _bias_add(g: _Graph, i: int) -> int | None:
    """The Add of a constant bias right after a weight GEMM (cuBLAS epilogue: no kernel of its own)."""
    if g.src(i) not in ("MatMul", "Gemm") or g.layers[i].weights == 0:
        return None
    j = g.only_user(i)
    if j is not None and g.src(j) == "Add" and len(g.data_inputs(j)) == 1 and g.layers[j].weights <= (
            g.layers[i].cout or 0):
        return j
    return None


def _transpose_is_view(g: _Graph, i: int) -> bool:
    """A permute feeding a GEMM or attention is a stride for the library; one feeding a reshape may be a copy
    (``_permute_copies``)."""
    return all(g.src(u) not in ("Reshape", "Flatten") for u in g.users(i))


def viewable(shape: list[int], strides: list[int], target: list[int]) -> bool:
    """Whether a tensor of ``shape`` and ``strides`` can be viewed as ``target`` without a copy: PyTorch's rule
    (``computeStride``): every run of dims the new shape merges must be contiguous with itself in memory."""
    if math.prod(shape) != math.prod(target):
        return False
    if not shape:
        return True
    view_d, base, numel, view_numel = len(target) - 1, strides[-1], 1, 1
    for d in range(len(shape) - 1, -1, -1):
        numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != numel * base):
            while view_d >= 0 and (view_numel < numel or target[view_d] == 1):
                view_numel *= target[view_d]
                view_d -= 1
            if view_numel != numel:
                return False
            if d > 0:
                base, numel, view_numel = strides[d - 1], 1, 1
    return view_d == -1


LAYOUT_OPS = ("Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze")


def _feeds_only(g: _Graph, i: int, nodes: set[int]) -> bool:
    """Whether every path from ``i``'s output through layout ops (reshapes, permutes) ends in ``nodes``."""
    users = g.users(i)
    return bool(users) and all(u in nodes or (g.src(u) in LAYOUT_OPS and _feeds_only(g, u, nodes)) for u in users)


def _permute_copies(g: _Graph, i: int, fused: set[int]) -> bool:
    """A permute that feeds a reshape is a copy where the reshape cannot view the permuted strides (a run of dims
    merged across the permutation: ShuffleNet's channel shuffle, Swin's window partition), as ``.contiguous()`` or
    ``reshape`` in PyTorch makes it; a head split or merge that the strides allow stays a view. Its input is taken
    as contiguous, except a fused attention's output (``fused``: SDPA writes it sequence-major, so the head merge
    after it is free): never a copy; nor is a permute whose chain of reshapes and permutes ends in the fused
    attention (an exporter's 3-D batched-matmul form of Q, K or V: PyTorch hands SDPA the permuted 4-D tensor)."""
    layer, ins = g.layers[i], g.data_inputs(i)
    perm = layer.extra.get("perm")
    if not ins or not perm or g.producer.get(ins[0]) in fused or _feeds_only(g, i, fused):
        return False          # after a fused attention, or the exporter's layout chain into one: SDPA's strides
    shape = _dims(layer, ins[0])
    if not shape or len(shape) != len(perm):
        return False
    contiguous = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    p_shape, p_strides = [shape[d] for d in perm], [contiguous[d] for d in perm]
    for u in g.users(i):
        if g.src(u) not in ("Reshape", "Flatten"):
            continue
        out = next((x for x in g.io[u]["out"] if x), None)
        target = _dims(g.layers[u], out) if out else None
        if target and not viewable(p_shape, p_strides, target):
            return True
    return False


BINARY_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where")


def _tensor_bytes(g: _Graph, i: int, name: str, it: float) -> float | None:
    io = g.io[i]
    d = io.get("dims", {}).get(name)
    return None if d is None else float(math.prod(d)) * io.get("itemsize", {}).get(name, it)


def _memory_op(g: _Graph, i: int, op: KernelOp, it: float) -> KernelOp:
    """A memory-bound kernel's bytes from its tensors' own element types (an FP32 island in an FP16 model moves
    twice the bytes), and the kernel PyTorch runs for it: a Gather from a weight table reads the rows it gathers
    (an embedding), not the table; a binary op whose operands differ in size (x * weight, q * cos) broadcasts,
    which PyTorch runs on its slower non-vectorized path, priced as the 'bias' kernel (a broadcast add), marked
    ``channel_bias`` where the smaller operand is a (1 or N, C, 1, 1) scale or shift of a 4-D map."""
    io = g.io[i]
    names = [x for x in io["in"] if x] + [x for x in io["out"] if x]
    sizes = {x: _tensor_bytes(g, i, x, it) for x in names}
    if any(v is None for v in sizes.values()):
        return op
    src, ins = g.src(i), [x for x in io["in"] if x]
    kind = op.kind
    if src == "Gather" and ins and ins[0] in g.const:
        out = sum(sizes[x] for x in io["out"] if x)
        return replace(op, kind="embedding", bytes=2 * out + sum(sizes[x] for x in ins[1:]))
    channel = False
    if src in BINARY_OPS and kind == "elementwise" and len(ins) >= 2:
        elems = [math.prod(io["dims"][x]) for x in ins]
        if min(elems) > 1 and max(elems) != min(elems):
            kind = "bias"
            big, small = (io["dims"][ins[elems.index(f(elems))]] for f in (max, min))
            channel = len(big) == len(small) == 4 and tuple(small[2:]) == (1, 1) and small[1] == big[1]
    shape = {}
    if kind == "resize_linear" and io["out"] and len(out := io["dims"].get(io["out"][0]) or ()) == 4:
        # PyTorch's NCHW bilinear kernel runs a thread per output pixel over every plane: priced by both (m, n) and
        # the input's pixels per plane (k; 1: a pooled 1 x 1 map broadcast back)
        src = io["dims"].get(ins[0]) or ()
        shape = {"m": int(out[2] * out[3]), "n": int(out[0] * out[1]),
                 "k": int(src[2] * src[3]) if len(src) == 4 else 0}
    return replace(op, kind=kind, bytes=sum(sizes.values()), channel_bias=channel, **shape)


def _fuse_pointwise(g: _Graph, owner: dict[int, int], i: int) -> int | None:
    """The fused runtime: a pointwise layer whose data input comes from a GEMM/conv (or from a layer already
    folded into one) with no other user is folded into that kernel's epilogue."""
    if g.layers[i].op not in POINTWISE_OPS:
        return None
    for name in g.data_inputs(i):
        p = g.producer.get(name)
        if p is None or p not in owner or len(g.consumers.get(name, [])) != 1:
            continue
        host = owner[p]
        if g.layers[host].op in ("conv", "convtranspose", "gemm", "matmul"):
            return host
    return None


def _patterns(g: _Graph, model: Model, prec: str, runtime: str, it: float, done: set[int], counts: dict[str, int]
              ) -> tuple[dict[int, tuple[KernelOp, list[int]]], dict[int, list[int]], set[int]]:
    """The fused patterns, found once: (first MatMul -> its attention kernel and the nodes it runs, Erf -> the
    nodes of its GELU, the nodes claimed before their owner). Scales on Q and K before an attention, the Div before
    a GELU's Erf come before the node that owns them in graph order, so they are claimed first (the fused kernel
    applies them)."""
    attention: dict[int, tuple[KernelOp, list[int]]] = {}
    gelus: dict[int, list[int]] = {}
    claimed: set[int] = set()
    for i in range(len(model.layers)):
        if i in done:
            continue
        att = _attention(g, i)
        if att and runtime != "fused" and not _is_sdpa(g, i):
            counts["explicit"] += 1        # PyTorch runs each node's kernel; TensorRT (fused) fuses the pattern
            att = None
        op = _attention_op(g, att[0][0], att[1], prec, it) if att else None
        if op is not None:
            scales = _scales_before(g, i)
            attention[i] = (op, att[0] + scales)
            claimed.update(scales)
        gelu = _gelu_erf(g, i) or _silu(g, i)
        if gelu:
            gelus[i] = gelu
            claimed.update(gelu[:gelu.index(i)])
    return attention, gelus, claimed


TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
FORMAT_KEEPING = ("conv", "convtranspose", "act", "eltwise", "bn", "pool")


def _channels_last(g: _Graph) -> set[int]:
    """Layers of an NCHW model whose data input is channels-last in memory: PyTorch's permute of a plain NHWC
    tensor back to NCHW order (an ONNX Transpose with perm 0,3,1,2, as ConvNeXt writes around its LayerNorm) is a
    view with channels-last strides, convolutions (cuDNN runs channels-last where its input or weight is),
    pointwise ops and pooling keep their input's format, and anything else (a reshape, a GEMM, another permute)
    gives a plain tensor."""
    cl_tensors: set[str] = set()
    out: set[int] = set()
    for i, layer in enumerate(g.layers):
        ins = g.data_inputs(i)
        cl_in = any(x in cl_tensors for x in ins)
        if cl_in:
            out.add(i)
        if layer.source_op == "Transpose":
            cl_out = layer.extra.get("perm") == TO_NCHW and not cl_in
        else:
            cl_out = cl_in and layer.op in FORMAT_KEEPING
        if cl_out:
            cl_tensors.update(x for x in g.io[i]["out"] if x)
    return out


VIEW_OPS = ("Reshape", "Flatten", "Split", "Slice", "Squeeze", "Unsqueeze", "Identity")
LAYOUT_KINDS = ("pool", "resize", "resize_linear")          # memory kinds whose kernel depends on the map's layout


def _layer_op(g: _Graph, i: int, prec: str, it: float, memory_format: str) -> KernelOp | None:
    """A layer's own kernel: memory kinds with their tensors' bytes, a dilation said, and ``memory_format`` (nhwc:
    a channels-last input in an NCHW model; nchw: an NCHW-ordered input in a channels-last one) on the kinds whose
    kernel it changes."""
    layer = g.layers[i]
    op = kernel_of(layer, prec)
    if op is None:
        return None
    if op.kind in MEMORY_KINDS and op.kind != "conv_dw":
        op = _memory_op(g, i, op, it)
    if memory_format == "nhwc" and (op.conv_kernel or op.conv_taps or op.kind == "conv_dw" or op.kind in LAYOUT_KINDS):
        op = replace(op, layout="nhwc")
    if memory_format == "nchw" and op.kind in LAYOUT_KINDS:
        op = replace(op, layout="nchw")
    if layer.extra.get("dilation", 1) > 1 and op.kind in ("gemm", "conv_dw"):
        op = replace(op, conv_dilation=int(layer.extra["dilation"]))
    return op


def _plain_in_channels_last(g: _Graph, copies: set[int]) -> tuple[set[int], set[int], set[int]]:
    """A channels-last model's layers whose data input a permute copy left in NCHW order (PyTorch's
    ``.contiguous()`` of a permuted channels-last map writes a plain tensor: ShuffleNet's channel shuffle). Views and
    format-keeping ops pass that order on (their first input's), a concatenation with any plain input is plain
    (``cat`` keeps a format only where every input has it), a convolution converts its plain input back to
    channels-last (a copy of its own, per convolution) and writes channels-last. Returns (convolutions that
    convert their input, permute copies whose input is channels-last: a transposition of the map, other layers
    that run on plain input: pooling and resizes in NCHW)."""
    plain: set[str] = set()
    converts, relayout, nchw = set(), set(), set()
    for i, layer in enumerate(g.layers):
        ins = g.data_inputs(i)
        first = bool(ins) and ins[0] in plain
        if i in copies:
            out_plain = True
            if not first:
                relayout.add(i)
        elif layer.op in ("conv", "convtranspose"):
            out_plain = False
            if first:
                converts.add(i)
        elif layer.source_op == "Concat":
            out_plain = any(x in plain for x in ins)
        else:
            out_plain = first and (layer.op in FORMAT_KEEPING or layer.source_op in VIEW_OPS)
            if first:
                nchw.add(i)
        if out_plain:
            plain.update(x for x in g.io[i]["out"] if x)
    return converts, relayout, nchw


def _lower_graph(model: Model, prec: str, runtime: str, layout: str = "") -> Lowered:
    g = _Graph(model.layers)
    cl = _channels_last(g) if layout == "nchw" else set()
    it = ITEMSIZE.get(prec, 2)
    out = Lowered([])
    done: set[int] = set(g.host)
    owner: dict[int, int] = {}          # layer -> the layer whose kernel runs it
    counts = {"attention": 0, "gelu": 0, "silu": 0, "bias": 0, "fused": 0, "views": 0, "host": len(g.host),
              "conv_bias": 0, "explicit": 0, "permute_copies": 0, "relayouts": 0}

    def emit(op: KernelOp | None, span: list[int]) -> None:
        done.update(span)
        if op is None:
            counts["views"] += 1
            return
        out.kernels.append(op)
        for s in span:
            owner[s] = span[0]

    attention, gelus, claimed = _patterns(g, model, prec, runtime, it, done, counts)
    fused = {n for _, nodes in attention.values() for n in nodes}
    copies = {i for i, x in enumerate(model.layers) if x.source_op == "Transpose" and not _transpose_is_view(g, i)
              and _permute_copies(g, i, fused)}
    converts, relayout, nchw = _plain_in_channels_last(g, copies) if layout == "nhwc" else (set(), set(), set())
    for i, layer in enumerate(model.layers):
        if i in done or i in claimed:
            continue
        if i in attention:
            counts["attention"] += 1
            emit(*attention[i])
            continue
        gelu = gelus.get(i)
        if gelu:
            counts["silu" if g.src(i) == "Sigmoid" else "gelu"] += 1
            x = model.layers[gelu[0]]
            emit(KernelOp(layer.name, "elementwise", prec, bytes=2.0 * x.outputs * it,
                          layers=tuple(model.layers[s].name for s in gelu)), gelu)
            continue
        if runtime == "fused":
            host = _fuse_pointwise(g, owner, i)
            if host is not None:
                counts["fused"] += 1
                owner[i] = host
                done.add(i)
                continue
        view = layer.source_op == "Transpose" and _transpose_is_view(g, i)
        if i in copies:
            counts["permute_copies"] += 1         # a strided copy of the permuted elements (the permute curve)
            emit(KernelOp(layer.name, "relayout" if i in relayout else "permute", prec, bytes=2.0 * layer.outputs * it,
                          layers=(layer.name,)), [i])
            continue
        if view or _is_select(g, i):
            emit(None, [i])
            continue
        if layer.source_op in ATTENTION_OPS and (node := _attention_node(layer, prec, it)) is not None:
            counts["attention"] += 1
            emit(node, [i])
            continue
        span = [i]
        bias = _bias_add(g, i)
        if bias is not None:
            counts["bias"] += 1
            span.append(bias)
        op = _layer_op(g, i, prec, it, "nhwc" if i in cl else "nchw" if i in nchw else "")
        if i in converts:                # PyTorch converts the plain input to channels-last for cuDNN, per call
            counts["relayouts"] += 1
            out.kernels.append(KernelOp(layer.name + ".to_channels_last", "relayout", prec,
                                        bytes=2.0 * layer.inputs * it, layers=(layer.name,)))
        emit(op, span)
        if runtime != "fused" and layer.op in ("conv", "convtranspose") and len([x for x in g.io[i]["in"] if x]) > 2:
            counts["conv_bias"] += 1     # aten's cuDNN convolution adds the bias in a kernel of its own
            out.kernels.append(KernelOp(layer.name + ".bias", "bias", prec, bytes=2.0 * layer.outputs * it,
                                        layers=(layer.name,), channel_bias=True, layout="nhwc" if i in cl else ""))
    out.notes.append(_graph_note(len(out.kernels), len(model.layers), counts, runtime))
    return out


def _graph_note(kernels: int, layers: int, counts: dict[str, int], runtime: str) -> str:
    """What the graph rules did, counted (the lowering's first note)."""
    return (
        f"{kernels} kernels from {layers} layers: {counts['host']} shape/constant nodes run "
        f"none, {counts['views']} views, {counts['attention']} attention patterns as one fused kernel each, "
        f"{counts['gelu']} erf GELUs as one kernel, "
        + (f"{counts['silu']} SiLUs (sigmoid, multiply) as one kernel, " if counts["silu"] else "")
        + f"{counts['bias']} bias adds in the GEMM epilogue, "
        f"{counts['conv_bias']} convolution biases as kernels of their own"
        + (f", {counts['explicit']} explicit attention patterns (no SDPA signature) as the kernels PyTorch runs for "
           "them: matmul, scale, softmax, matmul" if counts["explicit"] else "")
        + (f", {counts['permute_copies']} permutes whose reshape cannot view them as strided copies"
           if counts["permute_copies"] else "")
        + (f", {counts['relayouts']} convolutions converting an NCHW-ordered input back to channels-last"
           if counts["relayouts"] else "")
        + (f", {counts['fused']} pointwise ops folded into their producers" if runtime == "fused" else ""))


def lower(model: Model, precision: str, runtime: str = "graph", layout: str = "") -> Lowered:
    """The kernels ``model`` launches at ``precision`` under ``runtime`` (eager, graph or fused); ``layout`` nchw:
    convolutions and pooling whose input is channels-last in memory say so (``KernelOp.layout``)."""
    if any("io" in x.extra for x in model.layers):
        return _lower_graph(model, precision, runtime, layout)
    out = Lowered([])
    prev_gemm = False
    for layer in model.layers:
        op = kernel_of(layer, precision)
        if op is None:
            continue
        if runtime == "fused" and prev_gemm and layer.op in POINTWISE_OPS:
            continue
        out.kernels.append(op)
        prev_gemm = op.kind == "gemm"
    out.notes.append(f"{len(out.kernels)} kernels from {len(model.layers)} layers (one kernel per layer"
                     + (", pointwise layers after a GEMM folded into it)" if runtime == "fused" else ")"))
    return out
