"""A decoder LLM's step (prefill or decode) lowered to the kernels each runtime launches
(hwprobe.lowering.llm.runtimes names them): ``graph`` (the minimal hand-written model, graph.py, which also holds
what every runtime shares: Case, Quant, the split-KV rule), ``hf``/``eager``/``hf-compiled``'s prefill
(transformers' modules, hf.py), ``hf-compiled``'s decode (Inductor, inductor.py) and ``fused`` (a serving engine's
plan, serving.py)."""

from __future__ import annotations

from hwprobe.lowering.llm.graph import Case, Quant, lower
from hwprobe.lowering.ops import KernelOp
from hwprobe.models.llm.config import LLMConfig


def lower_runtime(cfg: LLMConfig, case: Case, q: Quant, runtime: str, sms: int | None = None,
                  cache_len: int | None = None) -> list[KernelOp]:
    """The kernels ``runtime`` launches for one step. ``cache_len``: transformers' StaticCache length (None: the
    step's own length: the prompt in prefill, the context in decode, as generate sizes a cache it fills to its
    end; transformers does not round it, ``max_cache_len = max_length - 1``)."""
    from hwprobe.lowering.llm.hf import Step, lower_hf

    n = cache_len or case.context
    if runtime == "graph":
        return lower(cfg, case, q, sms)
    if runtime == "fused":
        from hwprobe.lowering.llm.serving import lower_serving

        return lower_serving(cfg, case, q, sms)
    if runtime == "eager":
        return lower_hf(cfg, Step("dynamic", case, case.context), q, sms)
    if runtime == "hf-compiled" and case.phase == "decode":
        from hwprobe.lowering.llm.inductor import lower_compiled

        return lower_compiled(cfg, Step("captured", case, n), q)
    mode = "captured" if runtime == "hf" else "generate"
    return lower_hf(cfg, Step(mode, case, n), q, sms)


__all__ = ["Case", "Quant", "lower_runtime"]
