"""How a layer's counts become operations and bytes. Two conventions, named in every output:

- ``standard``: a multiply-add is 2 operations (as peak FLOP/s are counted), other arithmetic 1 each; bytes
  are weights + inputs + outputs at the storage precision.
- ``seed``: the seeds' tables (002): a multiply-add is 1 operation; bytes are (weights + outputs) x bytes per
  element (x 4 for FP32): the input tensor is left out; a reshape counts its output bytes and no work; an
  activation runs in place (as the seeds' whole-model table counts it: no tensor of its own, so no bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from hwprobe.errors import InputError
from hwprobe.models.layers import Layer

# Bytes per stored element. TF32 is a math mode over FP32 storage.
ELEMENT_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int32": 4, "int4": 0.5}


@dataclass(frozen=True)
class Convention:
    name: str
    ops_per_mac: int
    count_inputs: bool
    inplace_activations: bool
    description: str

    def ops(self, layer: Layer) -> int:
        return self.ops_per_mac * layer.macs + layer.elem_ops

    def elements(self, layer: Layer) -> int:
        if self.inplace_activations and layer.op == "act":
            return layer.weights
        return layer.weights + layer.outputs + (layer.inputs if self.count_inputs else 0)

    def bytes(self, layer: Layer, precision: str) -> float:
        return self.elements(layer) * element_bytes(precision)


STANDARD = Convention("standard", 2, True, False,
                      "operations: a multiply-add = 2, other arithmetic = 1 per element; "
                      "bytes: weights + inputs + outputs at the storage precision")
SEED = Convention("seed", 1, False, True,
                  "as the source notes' model tables count: a multiply-add = 1 operation; bytes: (weights + "
                  "outputs) x bytes per "
                  "element (x4 for FP32), inputs not counted; a reshape: its output bytes, no work; activations "
                  "in place (no bytes)")
CONVENTIONS = {c.name: c for c in (STANDARD, SEED)}


def get(name: str) -> Convention:
    key = (name or "").strip().lower()
    if key not in CONVENTIONS:
        raise InputError(f"unknown convention {name!r}; conventions: {', '.join(CONVENTIONS)}")
    return CONVENTIONS[key]


def element_bytes(precision: str) -> float:
    if precision not in ELEMENT_BYTES:
        raise InputError(f"no storage size for precision {precision!r}; known: {', '.join(ELEMENT_BYTES)}")
    return ELEMENT_BYTES[precision]
