"""Layers from a CSV with the source notes' table columns: ``name,op,m,k,cin,cout,groups`` plus ``n`` for GEMMs.

Per op (sizes per image; the batch multiplies activations):
- conv (dwconv: groups = cin), convtranspose: ``m`` the output's side (``56`` for 56x56 pixels, or ``56x28``
  for height x width; never the pixel count 3136: a single square number from 1024 up is refused as one),
  ``k`` the kernel's side (3 for 3x3), ``cin``, ``cout``, ``groups``; optional ``stride`` (1) and ``min`` (input
  size; default m x stride, i.e. same padding)
- fc: ``cin``, ``cout``; ``m`` rows per image (blank or ``-``: 1)
- gemm / matmul: ``m``, ``k``, ``n`` (M x K times K x N); gemm's K x N operand is a weight, matmul's is not
- bn, act (relu, sigmoid, ...), add, concat, softmax, layernorm: ``m`` and ``cout`` (channels)
- pool (maxpool, avgpool): ``m`` output size, ``k`` window, ``cout``; optional ``stride`` (k) and ``min``
- reshape (transpose, flatten): ``m``, ``cout`` (and ``cin``): moves its tensor, no arithmetic
Optional ``bias`` (0/1) adds Cout bias weights to conv, fc and gemm. Unknown extra columns are ignored.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from hwprobe.errors import InputError
from hwprobe.models.layers import Layer, Model

REQUIRED = ("name", "op", "m", "k", "cin", "cout", "groups")
# A single spatial size this large that is a square (3136 = 56 x 56) is a pixel count given as a side: squared
# again it would price 3136^2 pixels, 3136x the work. An output really that wide is written 3136x3136.
PIXEL_COUNT_FROM = 1024
OP_ALIASES = {
    "conv": "conv", "conv2d": "conv", "dwconv": "dwconv", "depthwise": "dwconv", "groupconv": "conv",
    "convtranspose": "convtranspose", "deconv": "convtranspose",
    "fc": "fc", "linear": "fc", "fullyconnected": "fc", "gemm": "gemm", "matmul": "matmul",
    "bn": "bn", "batchnorm": "bn", "batchnormalization": "bn", "scale": "bn",
    "act": "act", "activation": "act", "relu": "act", "relu6": "act", "sigmoid": "act", "tanh": "act",
    "gelu": "act", "silu": "act", "swish": "act", "hardswish": "act", "leakyrelu": "act", "clip": "act",
    "pool": "pool", "maxpool": "pool", "avgpool": "pool", "averagepool": "pool", "pooling": "pool",
    "add": "eltwise", "eltwise": "eltwise", "elementwise": "eltwise", "mul": "eltwise", "sum": "eltwise",
    "concat": "concat", "reshape": "reshape", "transpose": "reshape", "flatten": "reshape", "shuffle": "reshape",
    "softmax": "softmax", "layernorm": "layernorm", "layernormalization": "layernorm",
}


class _Row:
    """One CSV row with typed, checked access; errors name the file, row and field."""

    def __init__(self, where: str, lineno: int, d: dict[str, str]) -> None:
        self.where, self.lineno, self.d = where, lineno, d

    def fail(self, field: str, msg: str) -> InputError:
        return InputError(f"{self.where} row {self.lineno} field {field}: {msg}")

    def int(self, field: str, default: int | None = None, required: bool = True, minimum: int = 0) -> int | None:
        raw = (self.d.get(field) or "").strip()
        if raw in ("", "-"):
            if default is None and required:
                raise self.fail(field, f"{self.op} needs a value here")
            return default
        try:
            v = float(raw)
        except ValueError:
            raise self.fail(field, f"{raw!r} is not a number") from None
        if not math.isfinite(v) or v != int(v):
            raise self.fail(field, f"{raw!r} is not a whole number")
        if v < 0:
            raise self.fail(field, f"{raw} is negative")
        if v < minimum:
            raise self.fail(field, f"{raw} must be at least {minimum}")
        return int(v)

    def hw(self, field: str, default: tuple[int, int] | None = None) -> tuple[int, int]:
        raw = (self.d.get(field) or "").strip().lower()
        if raw in ("", "-"):
            if default is None:
                raise self.fail(field, f"{self.op} needs a size here (e.g. 56 or 56x28)")
            return default
        parts = raw.split("x")
        if len(parts) > 2:
            raise self.fail(field, f"{raw!r} is not a size (56 or 56x28)")
        vals = []
        for p in parts:
            try:
                v = int(p)
            except ValueError:
                raise self.fail(field, f"{raw!r} is not a size (56 or 56x28)") from None
            if v < 0:
                raise self.fail(field, f"{raw} is negative")
            vals.append(v)
        side = math.isqrt(vals[0])
        if len(vals) == 1 and vals[0] >= PIXEL_COUNT_FROM and side * side == vals[0]:
            raise self.fail(field, f"{raw} looks like a pixel count ({side} x {side}): {field} is one side of the "
                                   f"output, {side} for {side}x{side} (write {raw}x{raw} if one side really is {raw})")
        return (vals[0], vals[-1])

    @property
    def op(self) -> str:
        return (self.d.get("op") or "").strip()


def _conv(r: _Row, name: str, op: str, batch: int) -> Layer:
    mh, mw = r.hw("m")
    k = r.int("k", minimum=1)
    cin = r.int("cin", minimum=1)
    groups = cin if op == "dwconv" else r.int("groups", default=1, minimum=1)
    cout = r.int("cout", default=cin if op == "dwconv" else None, minimum=1)
    stride = r.int("stride", default=1, required=False, minimum=1)
    if cin % groups or cout % groups:
        raise r.fail("groups", f"{groups} does not divide cin={cin} and cout={cout}")
    bias = cout if r.int("bias", default=0, required=False) else 0
    w = k * k * (cin // groups) * cout + bias
    if op == "convtranspose":
        ih, iw = r.hw("min", (-(-mh // stride), -(-mw // stride)))
        macs = batch * ih * iw * cin * (cout // groups) * k * k
        kind = "convtranspose"
    else:
        ih, iw = r.hw("min", (mh * stride, mw * stride))
        macs = batch * mh * mw * cout * (cin // groups) * k * k
        kind = "conv"
    return Layer(name, kind, macs=macs, weights=w, inputs=batch * ih * iw * cin, outputs=batch * mh * mw * cout,
                 cin=cin, cout=cout, groups=groups, kernel=(k, k), out_hw=(mh, mw), source_op=r.op)


def _gemm(r: _Row, name: str, op: str, batch: int) -> Layer:
    if op == "fc":
        cin, cout = r.int("cin", minimum=1), r.int("cout", minimum=1)
        rows = batch * r.int("m", default=1)
        bias = cout if r.int("bias", default=0, required=False) else 0
        return Layer(name, "gemm", macs=rows * cin * cout, weights=cin * cout + bias, inputs=rows * cin,
                     outputs=rows * cout, cin=cin, cout=cout, rows=rows, source_op=r.op)
    m, k, n = r.int("m", minimum=1), r.int("k", minimum=1), r.int("n", minimum=1)
    if op == "gemm":
        bias = n if r.int("bias", default=0, required=False) else 0
        return Layer(name, "gemm", macs=batch * m * k * n, weights=k * n + bias, inputs=batch * m * k,
                     outputs=batch * m * n, cin=k, cout=n, rows=batch * m, source_op=r.op)
    return Layer(name, "matmul", macs=batch * m * k * n, inputs=batch * (m * k + k * n), outputs=batch * m * n,
                 cin=k, cout=n, rows=batch * m, source_op=r.op)


def _pointwise(r: _Row, name: str, op: str, batch: int) -> Layer:
    mh, mw = r.hw("m", (1, 1))
    c = r.int("cout", minimum=1)
    cin = r.int("cin", default=c, required=False, minimum=1)
    e = batch * mh * mw * c
    base = {"cin": cin, "cout": c, "out_hw": (mh, mw), "source_op": r.op}
    if op == "bn":
        return Layer(name, "bn", macs=e, weights=4 * c, state=2 * c, inputs=e, outputs=e, **base)
    if op == "act":
        return Layer(name, "act", elem_ops=e, inputs=e, outputs=e, **base)
    if op == "eltwise":
        return Layer(name, "eltwise", elem_ops=e, inputs=2 * e, outputs=e, **base)
    if op == "concat":
        return Layer(name, "concat", inputs=e, outputs=e, **base)
    if op == "softmax":
        return Layer(name, "softmax", elem_ops=5 * e, inputs=e, outputs=e, **base)
    if op == "layernorm":
        return Layer(name, "layernorm", macs=e, elem_ops=6 * e, weights=2 * c, inputs=e, outputs=e, **base)
    if op == "reshape":
        return Layer(name, "reshape", inputs=batch * mh * mw * cin, outputs=e, **base)
    k = r.int("k", minimum=1)
    stride = r.int("stride", default=k, required=False, minimum=1)
    ih, iw = r.hw("min", (mh * stride, mw * stride))
    return Layer(name, "pool", elem_ops=e * k * k, inputs=batch * ih * iw * cin, outputs=e, kernel=(k, k), **base)


def layer_from_row(r: _Row, batch: int) -> Layer:
    name = (r.d.get("name") or "").strip()
    if not name:
        raise r.fail("name", "empty layer name")
    key = r.op.lower().replace("_", "").replace("-", "").replace(" ", "")
    op = OP_ALIASES.get(key)
    if op is None:
        raise r.fail("op", f"unknown op {r.op!r}; ops: {', '.join(sorted(set(OP_ALIASES.values())))} "
                           "(and spellings such as relu, maxpool, linear, batchnorm, transpose)")
    if op in ("conv", "dwconv", "convtranspose"):
        return _conv(r, name, op, batch)
    if op in ("fc", "gemm", "matmul"):
        return _gemm(r, name, op, batch)
    return _pointwise(r, name, op, batch)


def load_csv(path: str | Path, batch: int = 1) -> Model:
    p = Path(path)
    where = p.name
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"layer CSV {str(p)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read layer CSV {str(p)!r}: {e}") from None
    reader = csv.DictReader(text.splitlines())
    cols = [c.strip().lower() for c in (reader.fieldnames or [])]
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}; a layer CSV has the columns "
                         f"{','.join(REQUIRED)} (plus n for GEMMs)")
    reader.fieldnames = cols
    layers, seen = [], set()
    for i, d in enumerate(reader, start=2):
        if not any((v or "").strip() for v in d.values() if isinstance(v, str)):
            continue
        r = _Row(where, i, d)
        if "n" not in cols and OP_ALIASES.get(r.op.lower()) in ("gemm", "matmul"):
            raise InputError(f"{where} row {i}: a {r.op} row needs the column n (M x K times K x N)")
        layer = layer_from_row(r, batch)
        if layer.name in seen:
            raise r.fail("name", f"duplicate layer name {layer.name!r}")
        seen.add(layer.name)
        layers.append(layer)
    if not layers:
        raise InputError(f"{where}: no layer rows")
    return Model(p.stem, layers, "csv", batch)
