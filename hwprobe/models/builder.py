"""A small shape-tracking builder: each call appends a Layer with its counts and returns the output shape.

Counting rules (per image, times the batch):
- conv: multiply-adds = Ho x Wo x Cout x (Cin / groups) x Kh x Kw; weights = Cout x Cin/groups x Kh x Kw (+ bias)
- fully connected: multiply-adds = Cin x Cout; weights = Cin x Cout + Cout
- batch norm (inference): one multiply-add per element (scale and shift); weights = 4 x C (gamma, beta and the
  running mean and variance, which inference reads; only gamma and beta are parameters)
- activation: one operation per element; pooling: one per window element per output
- add: one per element per extra input; concat and reshape: data movement only
"""

from __future__ import annotations

from dataclasses import dataclass

from hwprobe.errors import InputError
from hwprobe.models.layers import Layer, Model


@dataclass(frozen=True)
class Shape:
    c: int
    h: int = 1
    w: int = 1

    @property
    def size(self) -> int:
        return self.c * self.h * self.w


def _out(n: int, k: int, s: int, p: int, ceil: bool = False) -> int:
    span = n + 2 * p - k
    o = (-(-span // s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= n + p:       # the last window must start inside the input (PyTorch's rule)
        o -= 1
    if o < 1:
        raise InputError(f"kernel {k} with stride {s} and padding {p} does not fit an input of {n}")
    return o


class Net:
    def __init__(self, name: str, batch: int = 1) -> None:
        if batch < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        self.name, self.batch, self.layers = name, batch, []
        self._count: dict[str, int] = {}

    def _name(self, name: str | None, op: str) -> str:
        if name:
            return name
        self._count[op] = self._count.get(op, 0) + 1
        return f"{op}{self._count[op]}"

    def _add(self, layer: Layer) -> None:
        self.layers.append(layer)

    def model(self, notes: list[str] | None = None) -> Model:
        return Model(self.name, self.layers, "builtin", self.batch, notes or [])

    # ------------------------------------------------------------------------------ GEMM-shaped
    def conv(self, x: Shape, cout: int, k: int, stride: int = 1, pad: int | None = None, groups: int = 1,
             bias: bool = False, name: str | None = None) -> Shape:
        p = k // 2 if pad is None else pad
        y = Shape(cout, _out(x.h, k, stride, p), _out(x.w, k, stride, p))
        n, cg = self.batch, x.c // groups
        self._add(Layer(self._name(name, "conv"), "conv", macs=n * y.h * y.w * cout * cg * k * k,
                        weights=cout * cg * k * k + (cout if bias else 0), inputs=n * x.size, outputs=n * y.size,
                        cin=x.c, cout=cout, groups=groups, kernel=(k, k), out_hw=(y.h, y.w), source_op="Conv",
                        extra={"stride": stride}))
        return y

    def fc(self, x: Shape, cout: int, bias: bool = True, name: str | None = None) -> Shape:
        n, cin = self.batch, x.size
        self._add(Layer(self._name(name, "fc"), "gemm", macs=n * cin * cout, weights=cin * cout + (cout if bias else 0),
                        inputs=n * cin, outputs=n * cout, cin=cin, cout=cout, rows=n, source_op="Gemm"))
        return Shape(cout)

    # ------------------------------------------------------------------------------ elementwise and data movement
    def bn(self, x: Shape, name: str | None = None) -> Shape:
        e = self.batch * x.size
        self._add(Layer(self._name(name, "bn"), "bn", macs=e, weights=4 * x.c, state=2 * x.c, inputs=e, outputs=e,
                        cin=x.c, cout=x.c, out_hw=(x.h, x.w), source_op="BatchNormalization"))
        return x

    def act(self, x: Shape, kind: str = "relu", name: str | None = None) -> Shape:
        e = self.batch * x.size
        self._add(Layer(self._name(name, kind), "act", elem_ops=e, inputs=e, outputs=e, cin=x.c, cout=x.c,
                        out_hw=(x.h, x.w), source_op=kind))
        return x

    def pool(self, x: Shape, k: int, stride: int, pad: int = 0, kind: str = "max", ceil: bool = False,
             name: str | None = None) -> Shape:
        y = Shape(x.c, _out(x.h, k, stride, pad, ceil), _out(x.w, k, stride, pad, ceil))
        n = self.batch
        self._add(Layer(self._name(name, f"{kind}pool"), "pool", elem_ops=n * y.size * k * k, inputs=n * x.size,
                        outputs=n * y.size, cin=x.c, cout=x.c, kernel=(k, k), out_hw=(y.h, y.w),
                        source_op=f"{kind.capitalize()}Pool"))
        return y

    def global_pool(self, x: Shape, name: str | None = None) -> Shape:
        n = self.batch
        self._add(Layer(self._name(name, "avgpool"), "pool", elem_ops=n * x.size, inputs=n * x.size,
                        outputs=n * x.c, cin=x.c, cout=x.c, out_hw=(1, 1), source_op="GlobalAveragePool"))
        return Shape(x.c)

    def add(self, xs: list[Shape], name: str | None = None) -> Shape:
        y = xs[0]
        if any(s != y for s in xs):
            raise InputError(f"add of different shapes: {xs}")
        e = self.batch * y.size
        self._add(Layer(self._name(name, "add"), "eltwise", elem_ops=e * (len(xs) - 1), inputs=e * len(xs),
                        outputs=e, cin=y.c, cout=y.c, out_hw=(y.h, y.w), source_op="Add"))
        return y

    def concat(self, xs: list[Shape], name: str | None = None) -> Shape:
        if any((s.h, s.w) != (xs[0].h, xs[0].w) for s in xs):
            raise InputError(f"concat of different spatial sizes: {xs}")
        y = Shape(sum(s.c for s in xs), xs[0].h, xs[0].w)
        e = self.batch * y.size
        self._add(Layer(self._name(name, "concat"), "concat", inputs=e, outputs=e, cout=y.c, out_hw=(y.h, y.w),
                        source_op="Concat"))
        return y

    def softmax(self, x: Shape, name: str | None = None) -> Shape:
        e = self.batch * x.size
        # max, subtract, exp, sum, divide: 5 operations per element
        self._add(Layer(self._name(name, "softmax"), "softmax", elem_ops=5 * e, inputs=e, outputs=e, cout=x.c,
                        source_op="Softmax"))
        return x
