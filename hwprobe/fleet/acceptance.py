"""Node acceptance: one pass/fail per node from one or more runs (an srun/mpirun job's merged run, or one run per
node as a Slurm prolog leaves them), each rank's ceilings judged against a reference with validate's rules and
its health verdicts beside them.

A merged run's profile keeps the best figure of any rank in each slot, which hides the slow node; so the ranks
are taken apart again from measurements.jsonl (every record carries its rank and host), each becomes a run of
its own, and ``hwprobe.fleet.validate.validate`` judges it. A node fails when any of its ranks has
- a ceiling below the reference by more than the tolerance (validate's rule, per clock where power-limited),
- a failed health verdict (hwprobe.health), or a world-scope verdict that names it (gpu.nccl_pairs),
- a probe that failed while measuring, or a ceiling other ranks measured and it did not.
Figures made once for the whole job (NCCL collectives) belong to the node when the job ran on one host, else to
the job's own row. With 3 ranks or more of one device, ``hwprobe compare``'s median/MAD rule also names the ranks
slower than their peers (a warning: the reference decides).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwprobe import keys as K
from hwprobe.errors import InputError
from hwprobe.fleet.records import PROFILE, RunRecord, expand, labels_for, load_run, record_of
from hwprobe.fleet.validate import Check, Tolerances, Validation, load_reference, validate
from hwprobe.health import HealthVerdict, from_measurement
from hwprobe.vocab import Status, Verdict

WORLD = -1                     # the rank key of records made once for the whole job


@dataclass
class RankPart:
    """One rank of one run: its own run record (ceilings of its records only), health verdicts and errors."""

    run: str                   # the run's label
    rank: int
    host: str
    record: RunRecord
    health: list[HealthVerdict]
    errors: list[str]
    validation: Validation | None = None
    failed_checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.host}:rank{self.rank}" if self.rank != WORLD else f"{self.run}:job"

    @property
    def who(self) -> str:
        """How a node's line names it: the rank (the node is the host), or the job for world-scope figures."""
        return f"rank{self.rank}" if self.rank != WORLD else "job"


@dataclass
class NodeResult:
    node: str
    parts: list[RankPart]
    health: list[tuple[str, HealthVerdict]] = field(default_factory=list)   # (who, verdict), job verdicts too
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[tuple[str, list[str]]]:
        """Each failure's line and its likely causes (a ceiling's, from validate; none for errors and health)."""
        out: list[tuple[str, list[str]]] = []
        for p in self.parts:
            out += [(f"{p.who}: {c.key}: {_check_text(c)}", list(c.causes)) for c in p.failed_checks]
            out += [(f"{p.who}: probe error: {e}", []) for e in p.errors]
        out += [(f"{who}: health {v.check}: {v.reason}", []) for who, v in self.health if v.verdict == Verdict.FAIL]
        return out

    @property
    def failures(self) -> list[str]:
        return [line for line, _ in self.failed]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def ranks(self) -> list[int]:
        return sorted(p.rank for p in self.parts if p.rank != WORLD)

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "passed": self.passed, "ranks": self.ranks,
                "devices": sorted({p.record.device_name for p in self.parts if p.rank != WORLD}),
                "failures": self.failures, "warnings": self.warnings,
                "health": [{"who": who, **v.to_dict()} for who, v in self.health],
                "ranks_detail": [{"run": p.run, "rank": p.rank, "host": p.host, "errors": p.errors,
                                  "checks": [vars(c) for c in (p.validation.checks if p.validation else [])],
                                  "notes": p.notes} for p in self.parts]}


def _check_text(c: Check) -> str:
    from hwprobe.fleet.render import check_line

    return check_line(c).split(": ", 1)[1]


@dataclass
class Acceptance:
    runs: list[RunRecord]
    ref: RunRecord
    tolerances: Tolerances
    nodes: list[NodeResult]
    notes: list[str] = field(default_factory=list)

    @property
    def failed_nodes(self) -> list[NodeResult]:
        return [n for n in self.nodes if not n.passed]

    @property
    def exit_code(self) -> int:
        return 1 if self.failed_nodes else 0

    def to_dict(self) -> dict[str, Any]:
        return {"passed": not self.failed_nodes, "exit_code": self.exit_code, "per_node": True,
                "runs": [r.path for r in self.runs],
                "reference": {"path": self.ref.path, "device": self.ref.device_name, "measured": self.ref.measured},
                "tolerance": {"default": self.tolerances.default, "patterns": dict(self.tolerances.patterns),
                              "source": self.tolerances.source},
                "nodes": [n.to_dict() for n in self.nodes], "notes": self.notes,
                "summary": {"nodes": len(self.nodes), "passed": len(self.nodes) - len(self.failed_nodes),
                            "failed": len(self.failed_nodes),
                            "failed_nodes": [n.node for n in self.failed_nodes]}}


# --- taking a run apart -------------------------------------------------------------------------------------------

def _records(run_dir: Path) -> list[dict[str, Any]]:
    from hwprobe.results import load_records, records_file

    if records_file(run_dir) is None:
        return []
    return [m.to_dict() for m in load_records(run_dir).measurements]


def _rank_of(d: dict[str, Any]) -> int:
    p = d.get("params") or {}
    if p.get(K.SCOPE) == "world":
        return WORLD
    r = p.get(K.RANK)
    return int(r) if isinstance(r, int) else 0


def split(rec: RunRecord, run_dir: Path | None) -> list[RankPart]:
    """The run's ranks apart (and its world-scope records as rank WORLD), each as a run record of its own."""
    from hwprobe.measurement import Measurement
    from hwprobe.profile_build import from_measurements

    recs = _records(run_dir) if run_dir is not None else []
    host0 = str(rec.environment.get("host") or "")
    if not recs:                                 # a profile.json alone: one rank, verdicts from its findings
        health = [v for v in (from_measurement(f) for f in rec.health) if v]
        return [RankPart(rec.label, 0, host0, rec, health, [])]
    devices = {d.get("rank", i): d for i, d in enumerate(rec.devices or [rec.device])}
    by_rank: dict[int, list[dict[str, Any]]] = {}
    for d in recs:
        by_rank.setdefault(_rank_of(d), []).append(d)
    parts = []
    for r, ds in sorted(by_rank.items()):
        ms = []
        for d in ds:
            m = Measurement.from_dict(d)
            m.metric = m.metric.removeprefix(f"rank{r}.")
            ms.append(m)
        host = next((str(d["params"][K.HOST]) for d in ds if (d.get("params") or {}).get(K.HOST)), host0)
        dev = devices.get(r, rec.device) if r != WORLD else rec.device
        prof = from_measurements(dev, ms, environment=rec.environment)
        sub = record_of(prof.to_dict(), f"{rec.path}#rank{r}", f"{host}:rank{r}" if r != WORLD else rec.label)
        health = [v for v in (from_measurement(d) for d in ds) if v]
        errors = [f"{d.get('metric')}: {d.get('reason')}" for d in ds if d.get("status") == Status.ERROR]
        parts.append(RankPart(rec.label, r, host, sub, health, errors))
    return parts


def _load(path: Path, label: str) -> tuple[RunRecord, Path]:
    rec = load_run(path, label, strict=True)
    return rec, (path if path.is_dir() else path.parent)


def needs_nodes(paths: list[Path]) -> bool:
    """Whether runs call for the per-node view: several runs, several ranks, or health verdicts in one."""
    if len(paths) != 1:
        return len(paths) > 1
    rec = load_run(paths[0])
    return (rec.environment.get("world") or {}).get("size", 1) > 1 or bool(rec.health)


# --- judging ------------------------------------------------------------------------------------------------------

def judge(inputs: list[str], ref: str, tolerances: Tolerances, expect: float | None = None,
          require_all: bool = False) -> Acceptance:
    paths = expand(inputs)
    if not paths:
        raise InputError(f"no {PROFILE} found in {', '.join(inputs)}")
    runs, parts = [], []
    for p, label in zip(paths, labels_for(paths), strict=True):
        rec, run_dir = _load(p, label)
        runs.append(rec)
        parts += split(rec, run_dir)
    reference = None
    for part in parts:
        if not part.record.ceilings:
            continue
        reference = reference or load_reference(ref, part.record, expect)
        try:
            part.validation = validate(part.record, reference, tolerances, require_all=require_all)
        except InputError as e:
            if "share no ceiling" not in str(e):
                raise
            part.notes.append("no ceiling in common with the reference (" + ", ".join(sorted(part.record.ceilings)[:4])
                              + ")")
            continue
        part.failed_checks = list(part.validation.failed)
    if reference is None:
        raise InputError(f"no ceiling measured in {', '.join(inputs)}: nothing to judge against {ref!r}")
    _missing_on_some_ranks(parts)
    acc = Acceptance(runs, reference, tolerances, _nodes(parts))
    _peer_outliers(acc, parts)
    if not reference.measured:
        acc.notes.append(f"the reference is spec-derived, not measured: {reference.environment.get('theory')}")
    return acc


def _missing_on_some_ranks(parts: list[RankPart]) -> None:
    """A reference ceiling other ranks measured and this one did not fails this one (its probe skipped or died
    there). Link ceilings are left out: one rank per host times the host's GPU pairs for all of them."""
    ranks = [p for p in parts if p.rank != WORLD and p.validation]
    measured = {c.key for p in ranks for c in p.validation.checks if c.status in ("pass", "fail")}
    for p in ranks:
        for c in p.validation.checks:
            if c.status == "not measured" and c.key in measured and not c.key.startswith("link."):
                c.status = "fail"
                c.notes.append("measured on other ranks, not on this one")
                p.failed_checks.append(c)


def _nodes(parts: list[RankPart]) -> list[NodeResult]:
    hosts = sorted({p.host for p in parts if p.rank != WORLD})
    nodes = {h: NodeResult(h, []) for h in hosts}
    job = NodeResult("(job)", [])
    for p in parts:
        if p.rank != WORLD:
            nodes[p.host].parts.append(p)
            nodes[p.host].health += [(p.who, v) for v in p.health]
            continue
        target = nodes[hosts[0]] if len(hosts) == 1 else job      # one host: the job's figures are its own
        target.parts.append(p)
        for v in p.health:
            named = [h for h in (v.values.get("nodes") or []) if h in nodes]
            for h in named or [None]:
                (nodes[h] if h else target).health.append((p.who, v))
    for n in [*nodes.values(), job]:
        n.warnings += [f"{who}: health {v.check}: {v.reason}" for who, v in n.health if v.verdict == Verdict.WARN]
        said: dict[str, list[str]] = {}            # validate's notes (a contended run, a partial one), once a node
        for p in n.parts:
            for note in [*(p.validation.notes if p.validation else []), *p.notes]:
                said.setdefault(note, []).append(p.who)
        n.warnings += [f"{', '.join(who)}: {note}" for note, who in said.items()]
    out = list(nodes.values())
    if job.parts or job.health:
        out.append(job)
    return out


def _peer_outliers(acc: Acceptance, parts: list[RankPart]) -> None:
    """compare's median/MAD rule over the ranks: a rank slower than its peers is told as a warning."""
    from hwprobe.fleet.compare import MIN_GROUP, compare

    ranks = [p for p in parts if p.rank != WORLD and p.record.ceilings]
    if len(ranks) < MIN_GROUP:
        return
    keys = sorted({k for p in ranks for k in p.record.ceilings if not k.startswith("link.")})
    if not keys:
        return
    recs = [p.record for p in ranks]
    for i, r in enumerate(recs):
        r.label = f"{ranks[i].run}/{ranks[i].label}" if len(acc.runs) > 1 else ranks[i].label
    fleet = compare(recs, patterns=keys)
    by_label = {p.record.label: p for p in ranks}
    node_of = {n.node: n for n in acc.nodes}
    for o in fleet.outliers:
        if o.direction != "low":
            continue
        part = by_label[o.run]
        node_of[part.host].warnings.append(f"{part.who}: {o.key} {o.vs_median:.1%} of the median of its peers "
                                           "(compare's median/MAD rule)")


def per_rank_records(runs: list[RunRecord]) -> list[RunRecord]:
    """Each run's ranks as runs of their own (labelled host:rankN, prefixed with the run where there are several
    runs); a run of one rank stays as it is. World-scope figures (collectives) are left out: no rank owns them."""
    out = []
    for run in runs:
        if (run.environment.get("world") or {}).get("size", 1) <= 1:
            out.append(run)
            continue
        for part in split(run, Path(run.path)):
            if part.rank == WORLD or not part.record.ceilings:
                continue
            part.record.label = part.label if len(runs) == 1 else f"{run.label}/{part.label}"
            out.append(part.record)
    return out
