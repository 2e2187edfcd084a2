"""Layers from an ONNX file, shapes from ONNX shape inference. onnx is imported here only (an optional extra).

Modelled ops: Conv (grouped and depthwise), ConvTranspose, Gemm, MatMul, two-operand Einsum (a batched GEMM),
BatchNormalization, the activations, pooling, Add/Sub/Mul/Div/Sum/Max/Min, Concat, Reshape/Transpose/Flatten
(and Squeeze, Unsqueeze, Identity, Dropout, Split, Slice: data movement), Softmax and LayerNormalization. Any
other op is listed as "not modelled" with its bytes and no operations (its kernel, where the predictor knows
one, comes from its name: Resize, GroupNormalization, an Attention node). Initializers are counted from their
dims: weight data is never read (large models load fast; external data is not even opened).
"""

from __future__ import annotations

import math
from pathlib import Path

from hwprobe.errors import InputError
from hwprobe.models.layers import Layer, Model
from hwprobe.models.onnxfold import _attr  # one attribute reader for the reader and the folder

ACTIVATIONS = {"Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish", "Elu", "Selu",
               "Celu", "Gelu", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "Erf", "Exp", "Log", "Sqrt",
               "Reciprocal", "Neg", "Abs"}
ELTWISE = {"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Mean", "Pow"}
POOLS = {"MaxPool", "AveragePool", "LpPool"}
GLOBAL_POOLS = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}
ATTENTION_OPS = {"Attention", "MultiHeadAttention"}   # ONNX Attention (opset 23), com.microsoft's: one fused kernel
MOVES = {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Split", "Slice"}
SHAPE_ARGS = {"Reshape", "Squeeze", "Unsqueeze", "Slice", "Split"}   # only input 0 is data
LARGE = 1024                                                          # bytes of raw data worth dropping


def _prod(dims) -> int:
    return math.prod(dims) if dims else 1


# ONNX TensorProto element types -> bytes per element (FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, BOOL,
# FLOAT16, DOUBLE, UINT32, UINT64, BFLOAT16, FLOAT8 E4M3FN/E4M3FNUZ/E5M2/E5M2FNUZ, UINT4, INT4)
ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2, 17: 1, 18: 1, 19: 1,
            20: 1, 21: 0.5, 22: 0.5}


class _Graph:
    """Shapes of every tensor after inference, and which tensors are constants (weights)."""

    def __init__(self, graph, folded: set[str] | None = None) -> None:
        self.shapes: dict[str, list[int | None]] = {}
        self.itemsize: dict[str, float] = {}  # bytes per element where the file says (value_info, initializers)
        self.consts: set[str] = set()
        self.folded = folded or set()        # host-evaluated shape tensors: neither weights nor data
        for t in graph.initializer:
            self.shapes[t.name] = list(t.dims)
            if t.data_type in ITEMSIZE:
                self.itemsize[t.name] = ITEMSIZE[t.data_type]
            if t.name not in self.folded:
                self.consts.add(t.name)
        for vi in list(graph.value_info) + list(graph.input) + list(graph.output):
            if vi.name in self.consts or not vi.type.HasField("tensor_type"):
                continue
            tt = vi.type.tensor_type
            if tt.elem_type in ITEMSIZE:
                self.itemsize[vi.name] = ITEMSIZE[tt.elem_type]
            if tt.HasField("shape"):
                self.shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        for node in graph.node:
            if node.op_type == "Constant" and node.output:
                for a in node.attribute:
                    if a.name == "value":
                        self.shapes[node.output[0]] = list(a.t.dims)
                self.consts.add(node.output[0])

    def dims(self, name: str) -> list[int] | None:
        d = self.shapes.get(name)
        return d if d is not None and all(x is not None for x in d) else None

    def elems(self, name: str) -> int | None:
        d = self.dims(name)
        return _prod(d) if d is not None else None




def _io(g: _Graph, node, data_inputs: int | None = None) -> tuple[int, int, int, bool]:
    """(weights, inputs, outputs, shapes known) in elements; constants among the inputs are weights."""
    ins = [x for x in node.input if x]
    if data_inputs is not None:
        ins = ins[:data_inputs]
    w = i = o = 0
    known = True
    for name in ins:
        if name in g.folded:
            continue
        e = g.elems(name)
        if e is None:
            known = False
            continue
        if name in g.consts:
            w += e
        else:
            i += e
    for name in node.output:
        if not name:
            continue
        e = g.elems(name)
        if e is None:
            known = False
        else:
            o += e
    return w, i, o, known


def _conv(g: _Graph, node, name: str) -> Layer | None:
    x, w = g.dims(node.input[0]), g.dims(node.input[1])
    y = g.dims(node.output[0])
    if not (x and w and y):
        return None
    groups = int(_attr(node, "group", 1))
    wts, ins, outs, _ = _io(g, node)
    k = tuple(w[2:]) or (1,)
    if node.op_type == "Conv":
        macs = _prod(y) * w[1] * _prod(k)              # N x Cout x spatial_out x Cin/g x kernel
        cin, cout = x[1], y[1]
    else:                                              # ConvTranspose: W is [Cin, Cout/g, k...]
        macs = _prod(x) * w[1] * _prod(k)
        cin, cout = x[1], y[1]
    op = "conv" if node.op_type == "Conv" else "convtranspose"
    layer = Layer(name, op, macs=macs, weights=wts, inputs=ins, outputs=outs, cin=cin, cout=cout, groups=groups,
                  kernel=(k[0], k[-1]), out_hw=(y[2], y[-1]) if len(y) > 2 else None, source_op=node.op_type)
    dilation = max(int(d) for d in _attr(node, "dilations", [1]) or [1])
    if dilation > 1 and _prod(k) > 1:
        layer.extra["dilation"] = dilation          # atrous (DeepLab's ASPP, a dilated backbone): no points of its own
    return layer


def _gemm(g: _Graph, node, name: str) -> Layer | None:
    a, b, y = g.dims(node.input[0]), g.dims(node.input[1]), g.dims(node.output[0])
    if not (a and b and y):
        return None
    wts, ins, outs, _ = _io(g, node)
    if node.op_type == "Gemm":
        k = a[0] if _attr(node, "transA", 0) else a[-1]
        m, n = y[0], y[-1]
        return Layer(name, "gemm", macs=m * n * k, weights=wts, inputs=ins, outputs=outs, cin=k, cout=n, rows=m,
                     source_op="Gemm")
    k = a[-1]
    n = y[-1] if len(b) > 1 else 1
    macs = _prod(y) * k
    op = "gemm" if node.input[1] in g.consts else "matmul"
    layer = Layer(name, op, macs=macs, weights=wts, inputs=ins, outputs=outs, cin=k, cout=n,
                  rows=_prod(y) // max(n, 1), source_op="MatMul")
    if op == "matmul" and len(b) > 2 and len(y) > 2:     # two activations with batch dims: a batched GEMM (bmm)
        layer.extra["gemm_batch"] = _prod(y[:-2])
    return layer


def _einsum(g: _Graph, node, name: str) -> Layer | None:
    """A two-operand Einsum as the batched GEMM torch.einsum runs for it (bmm): letters in both operands and the
    output are the batch, in the first operand and the output M, in the second and the output N, in both operands
    only K. Other equations (one operand, ellipses, a letter summed within one operand) are not modelled."""
    eq = _attr(node, "equation")
    eq = (eq.decode() if isinstance(eq, bytes) else str(eq or "")).replace(" ", "")
    ins = [x for x in node.input if x]
    if "->" not in eq or "..." in eq or len(ins) != 2:
        return None
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    dims = [g.dims(x) for x in ins]
    if len(terms) != 2 or not all(dims) or any(len(t) != len(d) for t, d in zip(terms, dims, strict=True)):
        return None
    size: dict[str, int] = {}
    for t, d in zip(terms, dims, strict=True):
        for c, v in zip(t, d, strict=True):
            size[c] = max(size.get(c, 1), v)
    a, b, o = set(terms[0]), set(terms[1]), set(out)
    if (a ^ b) - o:
        return None
    part = lambda cs: _prod([size[c] for c in sorted(cs)])  # noqa: E731
    batch, m, n, k = part(a & b & o), part((a & o) - b), part((b & o) - a), part((a & b) - o)
    wts, i, outs, _ = _io(g, node)
    layer = Layer(name, "gemm" if ins[1] in g.consts else "matmul", macs=batch * m * n * k, weights=wts, inputs=i,
                  outputs=outs, cin=k, cout=n, rows=batch * m, source_op="Einsum")
    if batch > 1:
        layer.extra["gemm_batch"] = batch
    return layer


def _pointwise(g: _Graph, node, name: str) -> Layer | None:
    t = node.op_type
    wts, ins, outs, known = _io(g, node, 1 if t in SHAPE_ARGS else None)
    if not known:
        return None
    y = g.dims(node.output[0]) or []
    c = y[1] if len(y) > 1 else (y[0] if y else None)
    base = {"weights": wts, "inputs": ins, "outputs": outs, "cout": c, "source_op": t}
    if t == "BatchNormalization":
        stats = sum(g.elems(x) or 0 for x in node.input[3:5] if x in g.consts)
        return Layer(name, "bn", macs=outs, state=stats, **base)
    if t in ACTIVATIONS:
        return Layer(name, "act", elem_ops=outs, **base)
    if t in ELTWISE:
        return Layer(name, "eltwise", elem_ops=outs * max(len([x for x in node.input if x]) - 1, 1), **base)
    if t in POOLS:
        k = _attr(node, "kernel_shape", [1])
        return Layer(name, "pool", elem_ops=outs * _prod(k), kernel=(k[0], k[-1]), **base)
    if t in GLOBAL_POOLS:
        return Layer(name, "pool", elem_ops=ins, **base)
    if t == "Concat":
        return Layer(name, "concat", **base)
    if t in MOVES:
        return Layer(name, "reshape", **base)
    if t in ("Softmax", "LogSoftmax"):
        return Layer(name, "softmax", elem_ops=5 * outs, **base)
    if t == "LayerNormalization":
        return Layer(name, "layernorm", macs=outs, elem_ops=6 * outs, **base)
    return None


def _layer(g: _Graph, node, name: str) -> Layer:
    t = node.op_type
    layer = None
    if t in ("Conv", "ConvTranspose"):
        layer = _conv(g, node, name)
    elif t in ("Gemm", "MatMul"):
        layer = _gemm(g, node, name)
    elif t == "Einsum":
        layer = _einsum(g, node, name)
    else:
        layer = _pointwise(g, node, name)
    if layer is not None:
        return layer
    wts, ins, outs, known = _io(g, node)
    # every tensor's size known: the op's reader gave up on the op itself (an Einsum equation it does not model)
    why = "not modelled" if known else "shape not inferred (symbolic or unknown dims)"
    return Layer(name, "other", weights=wts, inputs=ins, outputs=outs, source_op=t, modelled=False,
                 note=f"{t}: {why}; bytes only" + ("" if known else " (partly unknown)"))


def _edges(g: _Graph, node) -> dict:
    """The node's tensors by name, which are constants, and their dims: what a lowering to kernels needs to follow
    producers and consumers (hwprobe.lowering.layers)."""
    names = [x for x in node.input] + [x for x in node.output]
    out = {"in": list(node.input), "out": list(node.output), "const": [x in g.consts for x in node.input],
           "dims": {x: g.dims(x) for x in names if x},
           "itemsize": {x: g.itemsize[x] for x in names if x in g.itemsize}}
    if node.op_type in ATTENTION_OPS:              # a fused attention node: its heads and causality
        out["attrs"] = {a: _attr(node, a) for a in ("q_num_heads", "kv_num_heads", "num_heads", "is_causal",
                                                    "unidirectional") if _attr(node, a) is not None}
    return out


def _load(path: Path):
    import onnx
    from google.protobuf.message import DecodeError

    if not path.exists():
        raise InputError(f"ONNX file {str(path)!r} does not exist")
    try:
        return onnx.load(str(path), load_external_data=False)
    except DecodeError as e:
        raise InputError(f"ONNX file {str(path)!r} is malformed (not an ONNX protobuf): {e}") from None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read ONNX file {str(path)!r}: {e}") from None


def _drop_payloads(model) -> None:
    """Drop large weight payloads: inference needs dims only."""
    for t in model.graph.initializer:
        if len(t.raw_data) > LARGE:
            t.ClearField("raw_data")
        for f in ("float_data", "int32_data", "int64_data", "double_data"):
            if len(getattr(t, f)) * 4 > LARGE:
                t.ClearField(f)


def _pin_dims(model, batch: int, dims: dict[str, int]) -> list[str]:
    """Give the graph inputs' free dimensions values: ``dims`` by name, else ``batch`` for a free first
    dimension. Returns the names still free. A name in ``dims`` that no input has is an error."""
    g = model.graph
    init = {t.name for t in g.initializer}
    seen: set[str] = set()
    free: list[str] = []
    for vi in g.input:
        if vi.name in init or not vi.type.tensor_type.HasField("shape"):
            continue
        for j, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                continue
            name = d.dim_param
            seen.add(name)
            if name and name in dims:
                d.dim_value = dims[name]
            elif j == 0:
                d.dim_value = batch
            elif name not in free:
                free.append(name or f"{vi.name}[{j}]")
    unknown = sorted(set(dims) - seen)
    if unknown:
        named = sorted(x for x in seen if x)
        raise InputError(f"--dim {unknown[0]}: no graph input has a free dimension of that name; free dimensions: "
                         + (", ".join(named) if named else "none"))
    return free


def _seed(model, base: Path) -> dict:
    """Values of the small constants (initializers with data, Constant nodes) shape arithmetic may read; small
    tensors kept in an external data file are read from it where the file is there."""
    import numpy as np
    from onnx import numpy_helper

    from hwprobe.models.onnxfold import MAX_ELEMS

    out = {}
    for t in model.graph.initializer:
        if _prod(t.dims) > MAX_ELEMS:
            continue
        try:
            if t.data_location == 1:                                  # EXTERNAL
                info = {e.key: e.value for e in t.external_data}
                f = base / info.get("location", "")
                if not f.is_file() or int(info.get("length", LARGE + 1)) > LARGE:
                    continue
                with open(f, "rb") as fh:
                    fh.seek(int(info.get("offset", 0)))
                    raw = fh.read(int(info["length"]))
                tc = type(t)()
                tc.CopyFrom(t)
                del tc.external_data[:]
                tc.data_location = 0
                tc.raw_data = raw
                t = tc
            a = numpy_helper.to_array(t)
        except (ValueError, KeyError, OSError, TypeError):
            continue
        if a.size == _prod(t.dims):
            out[t.name] = np.asarray(a)
    for node in model.graph.node:
        v = _attr(node, "value") if node.op_type == "Constant" and node.output else None
        if v is not None and hasattr(v, "dims") and _prod(v.dims) <= MAX_ELEMS:
            try:                    # a Constant whose payload was stripped (weights removed) has dims, no data
                out[node.output[0]] = numpy_helper.to_array(v)
            except (ValueError, TypeError):
                continue
    return out


def _infer(path: Path):
    from onnx import shape_inference

    def run(m):
        try:
            return shape_inference.infer_shapes(m, check_type=False, strict_mode=False, data_prop=True)
        except Exception as e:  # onnx raises its own InferenceError/ValidationError types
            raise InputError(f"ONNX shape inference failed on {str(path)!r}: {str(e).splitlines()[0]}") from None

    return run


def _names(model) -> list[str]:
    out, seen = [], {}
    for i, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{i}"
        if name in seen:                         # ONNX allows duplicate node names; a layer table does not
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 0
        out.append(name)
    return out


def load_onnx(path: str | Path, batch: int = 1, dims: dict[str, int] | None = None) -> Model:
    """Layers of an ONNX file. ``dims`` gives free input dimensions values by name (``--dim seq=128``); a free
    first dimension takes ``batch``. Shape arithmetic (Shape/Gather/Concat chains) is evaluated on the host
    (hwprobe.models.onnxfold) so Reshapes fed by it get their shapes; those nodes become shape-only layers."""
    p = Path(path)
    try:
        import onnx
    except ImportError:
        raise InputError("reading ONNX needs the onnx package: pip install 'hwprobe[models]'") from None
    from hwprobe.models.onnxfold import fold

    model = _load(p)
    if not model.graph.node:
        raise InputError(f"ONNX file {str(p)!r} has no graph nodes (malformed or empty)")
    _drop_payloads(model)
    free = _pin_dims(model, batch, dims or {})
    inferred, folded = fold(model, _infer(p), _seed(model, p.parent))
    nodes = model.graph.node
    g = _Graph(inferred.graph, {o for i in folded.shape_only for o in nodes[i].output})
    layers = []
    for i, (node, name) in enumerate(zip(model.graph.node, _names(model), strict=False)):
        if node.op_type == "Constant":
            continue
        if i in folded.shape_only:
            layer = Layer(name, "reshape", source_op=node.op_type, shape_only=True,
                          note="shape arithmetic: evaluated on the host, no kernel, no bytes")
        else:
            layer = _layer(g, node, name)
        layer.extra["io"] = _edges(g, node)
        if node.op_type == "Transpose":
            layer.extra["perm"] = list(_attr(node, "perm", []))     # NCHW <-> NHWC permutes set a memory format
        if node.op_type in ("Resize", "Upsample"):                   # nearest or (bi)linear: other kernels
            mode = _attr(node, "mode", b"nearest")
            layer.extra["mode"] = mode.decode() if isinstance(mode, bytes) else str(mode)
        layers.append(layer)
    notes = []
    if free:
        notes.append(f"free input dimension(s) without a value: {', '.join(free)} (give --dim NAME=VALUE); "
                     "layers that depend on them have no shape")
    skipped = sorted({x.source_op for x in layers if not x.modelled})
    if skipped:
        notes.append(f"not modelled (bytes only): {', '.join(skipped)}")
    n_shape = sum(x.shape_only for x in layers)
    if n_shape:
        notes.append(f"{n_shape} shape-only layer(s) (host-side shape arithmetic): no kernel time, no bytes")
    if any(onnx.TensorProto.DataType.Name(t.data_type) == "FLOAT16" for t in model.graph.initializer):
        notes.append("the file stores FP16 weights; the analysis uses --precision for every tensor")
    return Model(p.stem, layers, "onnx", batch, notes)
