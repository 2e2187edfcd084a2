"""LLM inference on the measured roofline: a Hugging Face config.json (or a built-in name) lowered to the kernels a
runtime launches for prefill and decode (hwprobe.lowering.llm.runtimes: transformers with a static cache replayed as a
CUDA graph, generate's compiled step, transformers' dynamic cache, a serving engine's plan, the minimal hand-written
model), priced by the calibrated predictor (hwprobe.predict.model).

``analyze(model, profile, LLMOptions(...))`` -> ``LLMAnalysis``: time to first token, time per output token,
tokens/s, the per-op table (bound, time, share), the share of compute, memory, launch and communication, the
plain roofline bound beside, parameters, KV-cache bytes and whether it all fits the device's memory.
No weights are read and nothing is downloaded; torch is never imported.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hwprobe.analysis.llm.memory import Fit, Params, fit, kv_bytes_per_token, params
from hwprobe.analysis.llm.report import PhaseResult, Pricer, phase_dict, price
from hwprobe.errors import InputError
from hwprobe.lowering.llm import lower_runtime
from hwprobe.lowering.llm.graph import KV, WEIGHTS, Case, Quant
from hwprobe.lowering.llm.routing import Routing
from hwprobe.lowering.llm.runtimes import DEFAULT, RUNTIMES
from hwprobe.models.llm import builtin, is_llm
from hwprobe.models.llm.config import LLMConfig, load

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
    runtime: str = DEFAULT
    cache_len: int | None = None     # transformers' StaticCache max_cache_len (None: the step's own length)
    routing: Routing | None = None   # an MoE prefill's rows per expert per layer (None: uniform routing)

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
        if self.cache_len is not None:
            if not RUNTIMES[self.runtime].hf:
                raise InputError(f"--cache-len applies to transformers' runtimes (hf, hf-compiled), not "
                                 f"{self.runtime!r}")
            if not 1 <= self.cache_len <= LIMIT:
                raise InputError(f"--cache-len must be between 1 and {LIMIT}, got {self.cache_len}")
        if self.routing is not None:
            if not RUNTIMES[self.runtime].hf:
                raise InputError(f"--routing prices transformers' grouped_mm experts (runtimes hf, hf-compiled, "
                                 f"eager), not {self.runtime!r}")
            if self.phase == "decode":
                raise InputError("--routing prices the prefill's grouped expert GEMMs: give --phase prefill or both "
                                 "(decode gathers each token's experts whatever the routing)")


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
        out.append(Case.prefill(opts.batch, opts.prompt, opts.tp, opts.routing))
    if opts.phase in ("decode", "both"):
        out.append(Case.decode(opts.batch, opts.context, opts.tp))
    return out


def with_collectives(prof, comm):
    """``prof`` with ``comm``'s measured collective curves (NCCL all-reduce, all-gather, ...) where it has none of its
    own, and its tensor-parallel host ratio (gpu.tp_host) likewise: the kernel calibration is a one-GPU run, these a
    multigpu run on the node (two suites, often two leases). A profile without them prices a tensor-parallel step's
    all-reduces at zero, flagged missing."""
    import dataclasses

    from hwprobe.profile_build import as_profile

    other = as_profile(comm)
    links = {k: v for k, v in other.links.items() if v.kind == "collective"}
    if not links:
        raise InputError(f"{comm}: no measured collective curves (run --suite multigpu on two or more GPUs)")
    out = dataclasses.replace(prof, links={**links, **prof.links})
    if other.calibration.tp_host is not None and prof.calibration.tp_host is None:
        out = dataclasses.replace(out, calibration=dataclasses.replace(prof.calibration,
                                                                       tp_host=other.calibration.tp_host))
    return out


def predictor(profile, runtime: str, host: str = "framework", comm=None) -> tuple[Pricer, Any]:
    """The calibrated predictor over a profile (path or Profile) and the loaded Profile; ``host``: the code that
    issues an eager run's kernels (hwprobe.predict.model.HOSTS); ``comm``: a profile whose collective curves price
    the communication where ``profile`` has none (with_collectives)."""
    from hwprobe.predict.model import Predictor
    from hwprobe.profile_build import as_profile

    prof = as_profile(profile)
    if comm is not None:
        prof = with_collectives(prof, comm)
    return Predictor(prof, runtime=runtime, host=host), prof


def host_pricer(pricer: Pricer | None, family: str, tp: int = 1) -> Pricer | None:
    """``pricer`` with transformers' host time of ``family``'s own code where it can say it (Predictor.for_family),
    under transformers' tp plan over ``tp`` GPUs (Predictor.for_tp); any other pricer as it is."""
    scale = getattr(pricer, "for_family", None)
    pricer = scale(family) if scale is not None else pricer
    sharded = getattr(pricer, "for_tp", None)
    return sharded(tp, family) if sharded is not None else pricer


def analyze(model: str | LLMConfig, profile=None, opts: LLMOptions | None = None,
            pricer: Pricer | None = None, sms: int | None = None, comm=None) -> LLMAnalysis:
    """Lower and price ``model``. ``pricer`` overrides the profile's predictor (tests use a fake one); with neither,
    the counts only (FLOPs, bytes, kernels, memory). ``sms`` (else the profile's device) decides FlashAttention's
    split-KV kernels; ``comm``: the collectives' profile (predictor)."""
    opts = opts or LLMOptions()
    opts.check()
    cfg = model if isinstance(model, LLMConfig) else load(str(model))
    q = Quant(opts.weights, opts.kv)
    device, device_bytes, prof = "", None, None
    rt = RUNTIMES[opts.runtime]
    pricers: dict[str, Pricer] = {}
    if pricer is None and profile is not None:
        for phase in ("prefill", "decode"):
            kind = rt.pricing(phase)
            if kind not in pricers:
                pricers[kind], prof = predictor(profile, kind, "transformers" if rt.hf else "framework", comm)
    if prof is not None:
        device = str(prof.device.get("name") or "")
        device_bytes = prof.device.get("mem_bytes")
        sms = sms or prof.device.get("sms")
    a = LLMAnalysis(cfg, opts, params(cfg), kv_bytes_per_token(cfg, q, opts.tp), {}, {}, device,
                    str(profile) if isinstance(profile, (str, Path)) else "")
    for case in cases(opts):
        ops = lower_runtime(cfg, case, q, opts.runtime, sms, opts.cache_len)
        a.phases[case.phase] = price(case.phase, case.batch, case.tokens, case.context, ops,
                                     host_pricer(pricer or pricers.get(rt.pricing(case.phase)), cfg.family,
                                                 opts.tp))
        a.fits[case.phase] = fit(cfg, case, q, device_bytes)
    eager = pricer or pricers.get("eager")
    a.notes += notes(cfg, opts, device_bytes, bool(getattr(eager, "tp_host_priced", False)))
    return a


TP_HOST_FLOOR = ("transformers' tensor-parallel hooks and c10d's collective calls add host time that this "
                 "calibration (one GPU's eager step) does not measure: give --comm-profile a multigpu run with "
                 "gpu.tp_host. Without it, on an H200 x2 (2026-11-28) the measured tp 2 eager steps took 0.96-3.1x "
                 "this price (median 1.9x in decode, 1.4x in the prefill): read it as a floor")


def notes(cfg: LLMConfig, opts: LLMOptions, device_bytes, tp_host: bool = False) -> list[str]:
    """The analysis's caveats; ``tp_host``: the eager pricing has transformers' host under its tp plan (for_tp)."""
    rt = RUNTIMES[opts.runtime]
    out = [f"runtime {rt.name}: {rt.words}" + ("" if rt.validated else " (not yet validated on a device)")]
    if opts.tp > 1 and opts.runtime == "eager" and not tp_host:
        out.append("eager with --tp: " + TP_HOST_FLOOR)
    if opts.tp > 1 and rt.hf and opts.runtime != "hf" and tp_host:
        out.append("transformers' host under the tp plan is one GPU's times gpu.tp_host's ratio, which read 1.20-2.17x "
                   "over five 2x H200 leases (2026-11-30); held busy for 300 steps the same steps read 1.61x, while "
                   "steps after a rank's idle wait ran up to 1.5x slower: the host-bound steps carry that spread")
    if opts.tp > 1 and opts.runtime == "hf-compiled":
        out.append("hf-compiled with --tp: the decode figure is the GPU's step; issuing one compiled step under the "
                   "tp plan took the host 0.65-1.6 ms on an H200 x2 (2026-11-29, 4-layer models), so generate's loop "
                   "runs at the longer of the two (llama-3.2-1b 16 x 2048: GPU 0.87 ms, loop 1.52). The prefill is "
                   "launched op by op under the tp hooks"
                   + (", priced with their host (gpu.tp_host)" if tp_host else ": " + TP_HOST_FLOOR))
    if not device_bytes:
        out.append("device memory unknown (no profile, or the profile's device lacks mem_bytes): fit not judged")
    if rt.hf and opts.runtime != "eager":
        size = f"{opts.cache_len} positions" if opts.cache_len else "the step's own length (--cache-len to change)"
        out.append(f"static cache of {size}: a masked SDPA reads every cached position, filled or not")
    if cfg.family == "gemma2" and rt.hf:
        out.append("Gemma2 under sdpa: transformers drops the attention soft-cap (only eager attention applies it)")
    elif cfg.family == "gemma2":
        out.append("Gemma2's attention logit soft-capping is assumed fused in the attention kernel")
    if cfg.experts and rt.hf and opts.routing is not None:
        out.append("experts as generate runs them: grouped_mm in the prefill at the routing given ("
                   f"{opts.routing.summary()}), batched_mm (weights gathered per token) in decode")
    elif cfg.experts and rt.hf:
        out.append("experts as generate runs them: grouped_mm in the prefill, batched_mm (weights gathered per "
                   "token) in decode, over the experts the batch touches under uniform routing")
    elif cfg.experts:
        out.append("experts: grouped GEMMs over the experts the batch touches under uniform routing")
    return out


def to_dict(a: LLMAnalysis) -> dict[str, Any]:
    cfg, p = a.cfg, a.params
    return {
        "model": cfg.name, "family": cfg.family, "source": cfg.source,
        "config": {k: v for k, v in asdict(cfg).items() if k not in ("name", "source", "moe_layers")},
        "options": {**asdict(a.opts), "routing": a.opts.routing and a.opts.routing.summary()},
        "device": a.device, "profile": a.profile,
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
