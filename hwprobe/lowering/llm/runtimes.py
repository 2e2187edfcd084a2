"""The runtimes an LLM is lowered for (``--runtime``): what each one is, which predictor floor prices each phase,
and whether a device run has validated it.

- ``hf``: Hugging Face transformers' own modules (5.x, ``attn_implementation="sdpa"``, BF16) with a ``StaticCache``,
  the model's inputs prepared as ``generate`` prepares them, and one forward step captured once as a CUDA graph and
  replayed (hwprobe.lowering.llm.hf).
- ``hf-compiled``: ``generate(cache_implementation="static")``: the decode step ``torch.compile``-d as generate does it
  (Inductor, mode reduce-overhead: a CUDA graph of Triton-fused pointwise kernels around cuBLAS and SDPA); the prefill
  as generate runs it, not compiled, launched op by op (hwprobe.lowering.llm.inductor, hwprobe.lowering.llm.hf).
- ``eager``: ``generate`` with transformers' default ``DynamicCache``: every kernel issued by the host.
- ``fused``: a serving engine's plan (vLLM / TensorRT-LLM style: fused QKV and gate/up, add + RMSNorm, rotary with the
  cache write, flash decoding over a paged cache; hwprobe.lowering.llm.serving). Not validated against any engine.
- ``graph``: the minimal hand-written static-cache Llama of tools/validate_llm.py, replayed as a CUDA graph (the
  reference of hwprobe.lowering.llm.graph): the lower bound of what PyTorch launches for the model, not a runtime
  anyone serves with.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Runtime:
    name: str
    words: str
    prefill: str          # the predictor runtime (hwprobe.lowering.ops.RUNTIMES) that prices the prefill's kernels
    decode: str           # ... and the decode step's
    validated: bool       # a committed device run backs its numbers
    hf: bool = False      # transformers' modules (BF16/FP16 weights and cache; tp_plan for hf and eager)

    def pricing(self, phase: str) -> str:
        return self.prefill if phase == "prefill" else self.decode


RUNTIMES: dict[str, Runtime] = {
    "hf": Runtime("hf", "transformers modules, static cache, each step replayed as a CUDA graph", "graph", "graph",
                  False, True),
    "hf-compiled": Runtime("hf-compiled", "transformers generate() with a static cache: the decode step "
                           "torch.compile-d (reduce-overhead), the prefill launched op by op", "eager", "graph",
                           False, True),
    "eager": Runtime("eager", "transformers generate() with its dynamic cache, every kernel issued by the host",
                     "eager", "eager", False, True),
    "fused": Runtime("fused", "a serving engine's fused plan (vLLM/TensorRT-LLM style), NOT validated", "fused",
                     "fused", False),
    "graph": Runtime("graph", "the minimal hand-written static-cache Llama (tools/validate_llm.py), CUDA graph",
                     "graph", "graph", True),
}
DEFAULT = "hf"
NAMES = tuple(RUNTIMES)
