"""LLM inference on the measured roofline: a Hugging Face config.json (or a built-in name) lowered to the kernels of
prefill and decode with a static KV cache, priced by the calibrated predictor (hwprobe.predict.model).

``analyze(model, profile, LLMOptions(...))`` -> ``LLMAnalysis``: time to first token, time per output token,
tokens/s, the per-op table (bound, time, share), the share of compute, memory, launch and communication, the
plain roofline bound beside, parameters, KV-cache bytes and whether it all fits the device's memory.
No weights are read and nothing is downloaded; torch is never imported.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hwprobe.errors import InputError
from hwprobe.models.llm import builtin
from hwprobe.models.llm.config import LLMConfig, load
from hwprobe.models.llm.lower import KV, WEIGHTS, Case, Quant, fuse, lower
from hwprobe.models.llm.memory import Fit, Params, fit, kv_bytes_per_token, params
from hwprobe.models.llm.report import PhaseResult, Pricer, phase_dict, price
from hwprobe.predict.ops import RUNTIMES

LIMIT = 1 << 20


@dataclass
class LLMOptions:
    phase: str = "both"          # prefill | decode | both
    prompt: int = 1024
    context: int = 1024
    batch: int = 1
    weights: str = "bf16"
    kv: str = "bf16"
    tp: int = 1
    runtime: str = "graph"

    def check(self) -> None:
        """Ranges and names, each refused in one line."""
        if self.phase not in ("prefill", "decode", "both"):
            raise InputError(f"--phase must be prefill, decode or both, got {self.phase!r}")
        for flag, v, hi in (("--prompt", self.prompt, LIMIT), ("--context", self.context, LIMIT),
                            ("--batch", self.batch, 65536), ("--tp", self.tp, 64)):
            if not 1 <= v <= hi:
                raise InputError(f"{flag} must be between 1 and {hi}, got {v}")
        if self.weights not in WEIGHTS:
            raise InputError(f"--weights must be one of {', '.join(WEIGHTS)}, got {self.weights!r}")
        if self.kv not in KV:
            raise InputError(f"--kv must be one of {', '.join(KV)}, got {self.kv!r}")
        if self.runtime not in RUNTIMES:
            raise InputError(f"--runtime must be one of {', '.join(RUNTIMES)}, got {self.runtime!r}")


@dataclass
class LLMAnalysis:
    cfg: LLMConfig
    opts: LLMOptions
    params: Params
    kv_bytes_per_token: float
    fits: dict[str, Fit]
    phases: dict[str, PhaseResult]
    device: str = ""
    profile: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ttft_s(self) -> float | None:
        p = self.phases.get("prefill")
        return p.time_s if p else None

    @property
    def tpot_s(self) -> float | None:
        d = self.phases.get("decode")
        return d.time_s if d else None


def is_llm(model: str) -> bool:
    """A .json file (a Hugging Face config.json) or a built-in LLM name."""
    return str(model).lower().endswith(".json") or builtin.find(str(model)) is not None


def listing() -> list[tuple[str, str, str, str]]:
    """(name, parameters, layers and experts, family and other names) per built-in LLM; an MoE's active
    parameters per token beside its experts."""
    aliases: dict[str, list[str]] = {}
    for alias, key in builtin.ALIASES.items():
        aliases.setdefault(key, []).append(alias)
    out = []
    for key in builtin.CONFIGS:
        cfg = load(key)
        p = params(cfg)
        moe = f", {cfg.experts} experts ({cfg.experts_per_tok} active: {p.active / 1e9:.1f} B)" if cfg.experts else ""
        also = f"; also {', '.join(aliases[key])}" if key in aliases else ""
        kind = builtin.CONFIGS[key]["model_type"]
        out.append((key, f"{p.total / 1e9:.2f} B", f"{cfg.layers} layers{moe}", f"{kind} config.json{also}"))
    return out


def cases(opts: LLMOptions) -> list[Case]:
    out = []
    if opts.phase in ("prefill", "both"):
        out.append(Case.prefill(opts.batch, opts.prompt, opts.tp))
    if opts.phase in ("decode", "both"):
        out.append(Case.decode(opts.batch, opts.context, opts.tp))
    return out


def predictor(profile, runtime: str) -> tuple[Pricer, Any]:
    """The calibrated predictor over a profile (path or Profile) and the loaded Profile."""
    from hwprobe.predict.model import Predictor
    from hwprobe.profile import Profile
    from hwprobe.profile_build import load_profile

    prof = profile if isinstance(profile, Profile) else load_profile(profile)
    return Predictor(prof, runtime=runtime), prof


def analyze(model: str | LLMConfig, profile=None, opts: LLMOptions | None = None,
            pricer: Pricer | None = None, sms: int | None = None) -> LLMAnalysis:
    """Lower and price ``model``. ``pricer`` overrides the profile's predictor (tests use a fake one); with neither,
    the counts only (FLOPs, bytes, kernels, memory). ``sms`` (else the profile's device) decides FlashAttention's
    split-KV kernels."""
    opts = opts or LLMOptions()
    opts.check()
    cfg = model if isinstance(model, LLMConfig) else load(str(model))
    q = Quant(opts.weights, opts.kv)
    device, device_bytes, prof = "", None, None
    if pricer is None and profile is not None:
        pricer, prof = predictor(profile, opts.runtime)
    if prof is not None:
        device = str(prof.device.get("name") or "")
        device_bytes = prof.device.get("mem_bytes")
        sms = sms or prof.device.get("sms")
    a = LLMAnalysis(cfg, opts, params(cfg), kv_bytes_per_token(cfg, q, opts.tp), {}, {}, device,
                    str(profile) if isinstance(profile, (str, Path)) else "")
    for case in cases(opts):
        ops = lower(cfg, case, q, sms)
        if opts.runtime == "fused":
            ops = fuse(ops)
        a.phases[case.phase] = price(case.phase, case.batch, case.tokens, case.context, ops, pricer)
        a.fits[case.phase] = fit(cfg, case, q, device_bytes)
    if not device_bytes:
        a.notes.append("device memory unknown (no profile, or the profile's device lacks mem_bytes): fit not judged")
    if cfg.family == "gemma2":
        a.notes.append("Gemma2's attention logit soft-capping is assumed fused in the attention kernel")
    if cfg.experts:
        a.notes.append("experts: grouped GEMMs over the experts the batch touches under uniform routing")
    return a


def to_dict(a: LLMAnalysis) -> dict[str, Any]:
    cfg, p = a.cfg, a.params
    return {
        "model": cfg.name, "family": cfg.family, "source": cfg.source,
        "config": {k: v for k, v in asdict(cfg).items() if k not in ("name", "source", "moe_layers")},
        "options": asdict(a.opts), "device": a.device, "profile": a.profile,
        "params": {"total": p.total, "active_per_token": p.active, "layer": p.layer, "embedding": p.embedding,
                   "lm_head": p.lm_head, "norms": p.norms},
        "kv_cache_bytes_per_token": a.kv_bytes_per_token,
        "memory": {ph: f.to_dict() for ph, f in a.fits.items()},
        "ttft_s": a.ttft_s, "tpot_s": a.tpot_s,
        "decode_tokens_per_s": a.phases["decode"].tokens_per_s if "decode" in a.phases else None,
        "phases": {ph: phase_dict(r) for ph, r in a.phases.items()},
        "notes": a.notes,
    }


__all__ = ["LLMAnalysis", "LLMConfig", "LLMOptions", "analyze", "is_llm", "load", "to_dict"]
