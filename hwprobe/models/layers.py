"""A model as a list of layers, each with the counts a roofline needs: multiply-adds, other operations, and
the elements it reads and writes. Counts are in elements (not bytes) so one model serves every precision and
every counting convention (hwprobe.models.conventions turns them into operations and bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Canonical layer kinds. The first group is GEMM-shaped: it can run on Tensor Cores (through cuDNN/cuBLAS).
GEMM_OPS = ("conv", "convtranspose", "gemm", "matmul")
OPS = GEMM_OPS + ("bn", "act", "pool", "eltwise", "concat", "reshape", "softmax", "layernorm", "other")


@dataclass
class Layer:
    """One layer. ``macs`` are multiply-adds; ``elem_ops`` are the other arithmetic operations (compares,
    adds, exponentials...), each counted once; ``weights``/``inputs``/``outputs`` are element counts."""

    name: str
    op: str
    macs: int = 0
    elem_ops: int = 0
    weights: int = 0                # stored elements read: parameters and state (BN running statistics)
    state: int = 0                  # the non-learnable part of ``weights``
    inputs: int = 0
    outputs: int = 0
    cin: int | None = None          # input channels (conv), K (gemm)
    cout: int | None = None         # output channels (conv), N (gemm)
    groups: int = 1
    kernel: tuple[int, int] | None = None
    out_hw: tuple[int, int] | None = None
    rows: int | None = None         # GEMM M (batch x tokens)
    source_op: str = ""             # what the file called it (ONNX op type, CSV op)
    modelled: bool = True           # False: an op hwprobe does not model; only its bytes count
    shape_only: bool = False        # host-side shape arithmetic (Shape/Gather/Concat chains): no kernel, no bytes
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def depthwise(self) -> bool:
        return self.op in ("conv", "convtranspose") and self.groups > 1 and self.cin == self.groups

    @property
    def tensor_core_capable(self) -> bool:
        """GEMM-shaped layers run on Tensor Cores through cuDNN/cuBLAS; depthwise convolutions (one channel
        per group) run on CUDA cores."""
        return self.op in GEMM_OPS and not self.depthwise and self.macs > 0

    def align_dims(self) -> dict[str, int]:
        """The sizes the Tensor Core alignment rule applies to: channels per group (conv) or K and N (GEMM)."""
        if not self.tensor_core_capable:
            return {}
        g = max(self.groups, 1)
        if self.op in ("conv", "convtranspose"):
            return {k: v // g for k, v in (("cin", self.cin), ("cout", self.cout)) if v}
        return {k: v for k, v in (("k", self.cin), ("n", self.cout)) if v}


@dataclass
class Model:
    name: str
    layers: list[Layer]
    source: str                      # "builtin", "csv", "onnx"
    batch: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def params(self) -> int:
        """Learnable parameters (what papers count): stored weights less BN running statistics."""
        return sum(x.weights - x.state for x in self.layers)

    @property
    def macs(self) -> int:
        return sum(x.macs for x in self.layers)

    @property
    def gemm_macs(self) -> int:
        """Multiply-adds of the GEMM-shaped layers (conv, FC, matmul): what papers count."""
        return sum(x.macs for x in self.layers if x.op in GEMM_OPS)

    def __len__(self) -> int:
        return len(self.layers)
