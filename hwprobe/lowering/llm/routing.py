"""An MoE prefill's routing: the rows each expert got, per MoE layer (a router's top-k picks counted).

A grouped expert GEMM's time follows the routing, not only the rows in all: on an H200, torch._grouped_mm over
qwen3-30b-a3b's 128 experts ran 0.42-1.44x its time at the same rows spread evenly, as random routers touched 34-128
experts and sent one expert up to 4086 of a prompt's 4096 tokens
(profiles/h200-sxm/2026-11-28-suite-workers/moe_grouped.jsonl).
Without a routing the lowering assumes uniform routing (a trained router is trained towards balance). With one
(``hwprobe analyze --routing FILE``: a user's own trace, or tools/validate_hf_llm.py's record of the model it ran)
each grouped GEMM is priced at that layer's rows per expert (hwprobe.predict.calibration.GroupedTable.routed_time).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hwprobe.errors import InputError


@dataclass(frozen=True)
class Routing:
    """Rows per expert of each MoE layer, in layer order (``counts[j][e]``: rows routed to expert e in the j-th
    MoE layer); each layer's rows add up to tokens x experts_per_tok."""

    counts: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, counts, what: str = "routing") -> Routing:
        """From a list of per-layer lists of non-negative integers; refused in one line otherwise."""
        if not isinstance(counts, (list, tuple)) or not counts:
            raise InputError(f"{what}: 'counts' must be a non-empty list of per-layer lists of rows per expert")
        out = []
        for j, layer in enumerate(counts):
            if (not isinstance(layer, (list, tuple)) or not layer
                    or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in layer)):
                raise InputError(f"{what}: layer {j} must be a non-empty list of non-negative integers (rows per "
                                 "expert)")
            if not any(layer):
                raise InputError(f"{what}: layer {j} routes no rows")
            out.append(tuple(layer))
        if len({len(c) for c in out}) != 1:
            raise InputError(f"{what}: every layer must list the same number of experts, got "
                             f"{sorted({len(c) for c in out})}")
        return cls(tuple(out))

    @classmethod
    def read(cls, path: str | Path) -> Routing:
        """A JSON file: ``{"counts": [[rows per expert], ...]}`` (one list per MoE layer), as tools/validate_hf_llm.py
        records it in a case's ``routing``."""
        from hwprobe.profile import read_json_object

        doc = read_json_object(Path(path), f"--routing {path}", "a routing record")
        return cls.of(doc.get("counts"), f"--routing {path}")

    @property
    def experts(self) -> int:
        return len(self.counts[0])

    def layer(self, j: int) -> tuple[int, ...]:
        """The j-th MoE layer's rows per expert."""
        return self.counts[j]

    def check(self, experts: int, moe_layers: int, per_token: int, tokens: int) -> None:
        """Refuse a routing that does not fit the model and the step: its experts, its MoE layers, and each layer's
        rows (tokens x experts_per_tok)."""
        if self.experts != experts:
            raise InputError(f"--routing lists {self.experts} experts a layer; the model has {experts}")
        if len(self.counts) != moe_layers:
            raise InputError(f"--routing lists {len(self.counts)} MoE layers; the model has {moe_layers}")
        want = tokens * per_token
        for j, c in enumerate(self.counts):
            if sum(c) != want:
                raise InputError(f"--routing: layer {j} routes {sum(c)} rows; the prefill's {tokens} tokens x "
                                 f"{per_token} experts each make {want}")
            if max(c) > tokens:             # (so every token's experts are distinct: k of them touched at least)
                raise InputError(f"--routing: layer {j} gives one expert {max(c)} rows; a token picks an expert at "
                                 f"most once, so {tokens} tokens give it at most {tokens}")

    def summary(self) -> str:
        touched = [sum(1 for c in layer if c) for layer in self.counts]
        busiest = max(max(layer) for layer in self.counts)
        return (f"{len(self.counts)} MoE layers, {min(touched)}-{max(touched)} of {self.experts} experts touched, "
                f"at most {busiest} rows on one")
