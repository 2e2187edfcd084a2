"""A model as the kernels a runtime launches for it (``KernelOp``, hwprobe.lowering.ops), before any price.

- hwprobe.lowering.layers: a layer model (ONNX graph, layer CSV, built-in architecture) under eager, CUDA-graph
  or fused execution;
- hwprobe.lowering.llm: a decoder LLM's configuration, one step (prefill or decode) under each LLM runtime.

Reads model descriptions (hwprobe.models) only; the predictor (hwprobe.predict) prices what it returns.
"""

from hwprobe.lowering.ops import KINDS, RUNTIMES, KernelOp

__all__ = ["KINDS", "RUNTIMES", "KernelOp"]
