"""Decoder-only LLMs as configurations: a Hugging Face ``config.json`` read into an ``LLMConfig`` (config.py), and
the built-in models' published fields (builtin.py). Lowered to kernels in hwprobe.lowering.llm, analysed on a
profile in hwprobe.analysis.llm."""

from __future__ import annotations

from hwprobe.models.llm import builtin
from hwprobe.models.llm.config import LLMConfig, load


def is_llm(model: str) -> bool:
    """A .json file (a Hugging Face config.json) or a built-in LLM name."""
    return str(model).lower().endswith(".json") or builtin.find(str(model)) is not None


__all__ = ["LLMConfig", "is_llm", "load"]
