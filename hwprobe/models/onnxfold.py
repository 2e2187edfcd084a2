"""Shape arithmetic in an ONNX graph, evaluated on the host so that every Reshape/Expand gets its shape.

Exporters that trace Python (torch's TorchScript exporter above all) write a model's ``x.size()`` calls as
``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` chains. ONNX's own shape inference, even with data
propagation, leaves many of those Reshapes without an output shape, and with them every layer downstream.
This module evaluates such chains with numpy, on small tensors only (``MAX_ELEMS``), given the shapes
inference found, and repeats inference with the results written in as constants until nothing changes.

The nodes it evaluates are *shape-only*: their inputs derive only from Shape ops and constants; a runtime
(TensorRT, ONNX Runtime, torch) computes them on the host or folds them away, so they run no GPU kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

MAX_ELEMS = 4096            # a tensor this small is shape arithmetic, not activations
ROUNDS = 200               # inference/evaluation rounds; a layer-deep chain resolves one layer per round


@dataclass
class Folded:
    """What host-side evaluation found: values of small tensors, and the nodes that produced them."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    shape_only: set[int] = field(default_factory=set)       # node indices whose outputs were all evaluated
    rounds: int = 0


def _attr(node, name: str, default=None):
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _axes(node, ins: list, idx: int) -> list[int] | None:
    """``axes`` from the attribute (older opsets) or from input ``idx`` (opset 13+)."""
    a = _attr(node, "axes")
    if a is not None:
        return [int(x) for x in a]
    if len(ins) > idx and ins[idx] is not None:
        return [int(x) for x in np.asarray(ins[idx]).reshape(-1)]
    return None


def _unsqueeze(node, ins):
    x, axes = ins[0], _axes(node, ins, 1)
    rank = x.ndim + len(axes)
    for a in sorted(ax % rank for ax in axes):
        x = np.expand_dims(x, a)
    return x


def _squeeze(node, ins):
    axes = _axes(node, ins, 1)
    return np.squeeze(ins[0], axis=tuple(a % ins[0].ndim for a in axes)) if axes else np.squeeze(ins[0])


def _slice(node, ins):
    x = ins[0]
    if len(ins) > 1:
        starts, ends = ins[1].reshape(-1), ins[2].reshape(-1)
        axes = ins[3].reshape(-1) if len(ins) > 3 and ins[3] is not None else range(len(starts))
        steps = ins[4].reshape(-1) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    else:
        starts, ends = _attr(node, "starts"), _attr(node, "ends")
        axes, steps = _attr(node, "axes") or range(len(starts)), [1] * len(starts)
    sl = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps, strict=False):
        big = np.iinfo(np.int64).max
        sl[int(a) % x.ndim] = slice(int(s), None if abs(int(e)) >= big // 2 else int(e), int(st))
    return x[tuple(sl)]


def _shape(node, ins, shape):
    dims = shape
    start, end = _attr(node, "start", 0), _attr(node, "end")
    return np.array(dims[start:end] if end is not None else dims[start:], dtype=np.int64)


def _cast(node, ins):
    from onnx import helper

    return ins[0].astype(helper.tensor_dtype_to_np_dtype(int(_attr(node, "to"))))


def _constant_of_shape(node, ins):
    from onnx import numpy_helper

    v = _attr(node, "value")
    fill = numpy_helper.to_array(v).reshape(-1)[0] if v is not None else np.float32(0)
    shape = [int(x) for x in ins[0].reshape(-1)]
    if int(np.prod(shape)) > MAX_ELEMS:
        raise _TooBig
    return np.full(shape, fill, dtype=np.asarray(fill).dtype)


def _div(node, ins):
    a, b = ins
    if np.issubdtype(a.dtype, np.integer):
        return (np.trunc(a / b)).astype(a.dtype)        # ONNX integer Div truncates
    return a / b


def _expand(node, ins):
    shape = [int(x) for x in ins[1].reshape(-1)]
    out = np.broadcast_shapes(ins[0].shape, tuple(shape))
    if int(np.prod(out)) > MAX_ELEMS:
        raise _TooBig
    return np.broadcast_to(ins[0], out).copy()


def _gather(node, ins):
    return np.take(ins[0], ins[1].astype(np.int64), axis=int(_attr(node, "axis", 0)))


def _concat(node, ins):
    return np.concatenate([np.asarray(x).reshape(-1) if x.ndim == 0 else x for x in ins],
                          axis=int(_attr(node, "axis", 0)))


def _range(node, ins):
    out = np.arange(ins[0].item(), ins[1].item(), ins[2].item())
    if out.size > MAX_ELEMS:
        raise _TooBig
    return out.astype(ins[0].dtype)


def _reshape(node, ins):
    shape = [int(x) for x in ins[1].reshape(-1)]
    shape = [ins[0].shape[i] if s == 0 and not _attr(node, "allowzero", 0) else s for i, s in enumerate(shape)]
    return ins[0].reshape(shape)


class _TooBig(Exception):
    """An output above MAX_ELEMS: data, not shape arithmetic."""


_UNARY: dict[str, Callable] = {"Identity": lambda x: x, "Neg": np.negative, "Abs": np.abs, "Sqrt": np.sqrt,
                               "Floor": np.floor, "Ceil": np.ceil, "Not": np.logical_not,
                               "Reciprocal": lambda x: 1 / x}
_BINARY: dict[str, Callable] = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal,
                                "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
                                "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
                                "Max": np.maximum, "Min": np.minimum, "Mod": np.mod, "Pow": np.power}
_OTHER: dict[str, Callable] = {"Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Slice": _slice, "Cast": _cast,
                               "ConstantOfShape": _constant_of_shape, "Div": _div, "Expand": _expand,
                               "Gather": _gather, "Concat": _concat, "Range": _range, "Reshape": _reshape,
                               "Where": lambda n, i: np.where(i[0], i[1], i[2]),
                               "ReduceProd": lambda n, i: np.prod(i[0], keepdims=bool(_attr(n, "keepdims", 1))),
                               "Transpose": lambda n, i: np.transpose(i[0], _attr(n, "perm"))}
OPS = frozenset(_UNARY) | frozenset(_BINARY) | frozenset(_OTHER) | {"Shape", "Size"}


def evaluate(node, values: dict[str, np.ndarray], shapes: dict[str, list]) -> list[np.ndarray] | None:
    """The node's outputs, where its op is shape arithmetic and every input it needs is known; else None."""
    t = node.op_type
    if t not in OPS or (node.domain or "") not in ("", "ai.onnx"):
        return None
    if t in ("Shape", "Size"):
        dims = shapes.get(node.input[0])
        if dims is None or any(d is None for d in dims):
            return None
        return [_shape(node, [], dims) if t == "Shape" else np.array(int(np.prod(dims)), dtype=np.int64)]
    ins = [values.get(x) if x else None for x in node.input]
    if any(x is None for x, name in zip(ins, node.input, strict=False) if name):
        return None
    try:
        with np.errstate(all="ignore"):
            if t in _UNARY:
                out = _UNARY[t](ins[0])
            elif t in _BINARY:
                out = _BINARY[t](ins[0], ins[1])
            else:
                out = _OTHER[t](node, ins)
    except (_TooBig, ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError):
        return None
    out = np.asarray(out)
    return [out] if out.size <= MAX_ELEMS else None


def _shapes(graph) -> dict[str, list]:
    out: dict[str, list] = {}
    for t in graph.initializer:
        out[t.name] = list(t.dims)
    for vi in list(graph.value_info) + list(graph.input) + list(graph.output):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.HasField("shape") and vi.name not in out:
            out[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
    return out


def _with_values(model, folded: Folded):
    """A copy of ``model`` whose evaluated nodes are replaced by initializers holding their values."""
    from onnx import numpy_helper

    m = type(model)()
    m.CopyFrom(model)
    g = m.graph
    keep = [n for i, n in enumerate(g.node) if i not in folded.shape_only]
    del g.node[:]
    g.node.extend(keep)
    del g.value_info[:]           # the exporter's symbolic guesses would contradict the values now known
    have = {t.name for t in g.initializer}
    for name, v in folded.values.items():
        if name not in have:
            g.initializer.append(numpy_helper.from_array(np.ascontiguousarray(v), name))
    return m


def _agrees(v: np.ndarray, known: list | None) -> np.ndarray | None:
    """The value in the shape the exporter's value_info gives it where the element counts agree (a 0-d scalar
    declared [1]); None where they contradict: such a value is not trusted."""
    if known is None:
        return v
    if len(known) == v.ndim and all(k is None or k == d for k, d in zip(known, v.shape, strict=True)):
        return v
    if all(k is not None for k in known) and int(np.prod(known)) == v.size:
        return v.reshape(known)
    return None


def fold(model, infer: Callable, seed: dict[str, np.ndarray]) -> tuple[object, Folded]:
    """Alternate ONNX shape inference (``infer``) and host evaluation until no new value appears. Returns the
    inferred model (evaluated nodes folded into initializers) and what was evaluated. A round whose inference
    fails ends the loop with the last good round's result."""
    f = Folded(values=dict(seed))
    declared = _shapes(model.graph)          # what the exporter wrote (value_info): the exporter knew
    inferred = infer(model)
    for f.rounds in range(1, ROUNDS + 1):
        shapes = _shapes(inferred.graph)
        added: list[int] = []
        for i, node in enumerate(model.graph.node):
            if i in f.shape_only:
                continue
            out = evaluate(node, f.values, shapes)
            out = [_agrees(v, declared.get(n)) for n, v in zip(node.output, out, strict=False)] if out else None
            if not out or any(v is None for v in out):
                continue
            for name, v in zip(node.output, out, strict=False):
                f.values[name] = v
                shapes[name] = list(v.shape)
            f.shape_only.add(i)
            added.append(i)
        if not added:
            break
        try:
            inferred = infer(_with_values(model, f))
        except Exception:  # noqa: BLE001 - onnx's own error types; this round's values are dropped
            f.shape_only.difference_update(added)
            break
    return inferred, f
