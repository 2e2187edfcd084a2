"""Which GPU pairs are measured together: schedules of disjoint pairs, so N GPUs take N-1 rounds, not N(N-1)/2.

A round is a perfect matching of the GPUs (the circle method of round-robin tournaments): every GPU is in at
most one pair, so on an NVSwitch or a full NVLink mesh each pair has its own links and the pairs of a round
can be timed at once. Over the N-1 rounds (N for odd N, one GPU idle per round) every unordered pair appears
exactly once. A unidirectional round is a matching with one direction per pair (a round per direction), so a
GPU only sends or only receives; a bidirectional round is the matching itself.

On PCIe (shared switches, the root complex) pairs do interfere: there every pair is its own round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

Pair = tuple[int, int]


def matchings(n: int) -> list[list[Pair]]:
    """Rounds of disjoint pairs over positions 0..n-1 covering every unordered pair once (circle method):
    n-1 rounds of n/2 pairs for even n, n rounds of (n-1)/2 pairs for odd n. Pairs are (low, high)."""
    if n < 2:
        return []
    m = n if n % 2 == 0 else n + 1          # odd n: a phantom position n; its partner sits the round out
    ring = list(range(1, m))
    rounds = []
    for _ in range(m - 1):
        line = [0, *ring]
        rnd = []
        for i in range(m // 2):
            a, b = line[i], line[m - 1 - i]
            if a < n and b < n:
                rnd.append((min(a, b), max(a, b)))
        rounds.append(sorted(rnd))
        ring = ring[-1:] + ring[:-1]
    return rounds


@dataclass
class Schedule:
    """The rounds of one run: ``uni`` rounds hold ordered pairs (source, destination), ``bi`` rounds unordered
    pairs; each round's pairs are timed together. ``devices`` are the GPU ordinals the positions stand for."""

    devices: list[int]
    uni: list[list[Pair]] = field(default_factory=list)
    bi: list[list[Pair]] = field(default_factory=list)
    concurrent: bool = True

    @property
    def ordered_pairs(self) -> list[Pair]:
        return [p for rnd in self.uni for p in rnd]

    @property
    def unordered_pairs(self) -> list[Pair]:
        return [p for rnd in self.bi for p in rnd]

    def to_dict(self) -> dict:
        return {"devices": self.devices, "concurrent": self.concurrent,
                "uni_rounds": [[list(p) for p in r] for r in self.uni],
                "bi_rounds": [[list(p) for p in r] for r in self.bi]}


def schedule(devices: Sequence[int], concurrent: bool = True) -> Schedule:
    """The schedule over GPU ordinals ``devices``: disjoint matchings when ``concurrent``, else one pair per
    round (every ordered pair alone, then every unordered pair alone)."""
    devs = list(devices)
    if len(set(devs)) != len(devs):
        raise ValueError(f"a GPU is named twice: {devs}")
    s = Schedule(devs, concurrent=concurrent)
    for rnd in matchings(len(devs)):
        pairs = [(devs[a], devs[b]) for a, b in rnd]
        if concurrent:
            s.uni += [pairs, [(b, a) for a, b in pairs]]
            s.bi.append(pairs)
        else:
            s.uni += [[p] for p in pairs] + [[(b, a)] for a, b in pairs]
            s.bi += [[p] for p in pairs]
    return s


def check(s: Schedule) -> None:
    """Raise ValueError unless every ordered pair is in exactly one uni round, every unordered pair in exactly
    one bi round, and no GPU is twice in a round (the invariants the timing relies on)."""
    devs = s.devices
    want_uni = {(a, b) for a in devs for b in devs if a != b}
    want_bi = {(min(a, b), max(a, b)) for a in devs for b in devs if a != b}
    for name, rounds, want in (("uni", s.uni, want_uni), ("bi", s.bi, want_bi)):
        seen: list[Pair] = []
        for rnd in rounds:
            used = [g for p in rnd for g in p]
            if len(used) != len(set(used)):
                raise ValueError(f"{name} round {rnd}: a GPU is in two pairs")
            seen += [p if name == "uni" else (min(p), max(p)) for p in rnd]
        if len(seen) != len(set(seen)):
            raise ValueError(f"{name}: a pair is measured twice")
        if set(seen) != want:
            raise ValueError(f"{name}: pairs missing {sorted(want - set(seen))}, extra {sorted(set(seen) - want)}")


def pair_key(a: int, b: int) -> str:
    """The link key of an unordered pair: 'p2p.0-1' (low index first)."""
    return f"p2p.{min(a, b)}-{max(a, b)}"
