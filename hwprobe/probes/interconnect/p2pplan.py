"""What gpu.p2p measures and in which order: methods, sizes, rounds, samples, and the time that takes.

Methods (each unidirectional and bidirectional):
- "ce": the copy engines, cudaMemcpyPeerAsync issued on the source GPU's stream (a push);
- "sm.read": a copy kernel on the destination GPU that loads from the peer's memory (a pull);
- "sm.write": a copy kernel on the source GPU that stores into the peer's memory (a push).
Bytes counted: the bytes that cross the link, once (the local read or write of the copy is not link traffic);
bidirectional rounds count both directions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwprobe.probes.interconnect.collectives import sizes as geometric_sizes
from hwprobe.probes.interconnect.pairs import Schedule, schedule
from hwprobe.timing import policy

METHODS = ("ce", "sm.read", "sm.write")
MIN_BYTES = 4 << 10
LATENCY_STEPS = 4096        # pointer-chase steps per timed launch (timed as the policy's "latency" rule says)
PINGPONG_ITERS = 2000       # round trips per ping-pong launch
# Pointer-chase working sets (buffer bytes, lines in the cycle): every 64-byte line of 1 MiB (it stays in the peer's
# L2), and 4M random lines of a 512 MiB buffer: 256 MiB of distinct lines, walked on from launch to launch and
# reader to reader, so no line is revisited while timed (each step misses L2: the peer's DRAM).
CHASE_SETS = {"l2": (1 << 20, 1 << 14), "dram": (512 << 20, 1 << 22)}


def ceiling_key(method: str, bidirectional: bool) -> str:
    """The profile's ceiling key: 'ce.uni', 'ce.bi', 'sm.read', 'sm.read.bi', 'sm.write', 'sm.write.bi'."""
    if method == "ce":
        return "ce.bi" if bidirectional else "ce.uni"
    return f"{method}.bi" if bidirectional else method


def transfer_sizes(max_bytes: int, step: int = 4, lo: int = MIN_BYTES) -> list[int]:
    """4 KiB, 4 KiB x step, ... below ``max_bytes``, and ``max_bytes`` itself (the collectives' geometric sizes)."""
    return geometric_sizes(lo, max_bytes, step)


@dataclass
class Plan:
    schedule: Schedule
    sizes: list[int]
    methods: tuple[str, ...] = METHODS
    bidirectional: bool = True
    chase_sets: dict[str, tuple[int, int]] = field(default_factory=lambda: dict(CHASE_SETS))
    pingpong: bool = True

    @classmethod
    def of(cls, devices: list[int], *, concurrent: bool, max_bytes: int, step: int = 4,
           methods: tuple[str, ...] = METHODS, bidirectional: bool = True) -> Plan:
        bad = [m for m in methods if m not in METHODS]
        if bad:
            raise ValueError(f"unknown method {', '.join(bad)}; methods: {', '.join(METHODS)}")
        return cls(schedule(devices, concurrent), transfer_sizes(max_bytes, step), tuple(methods), bidirectional)

    def rounds(self) -> list[tuple[str, bool, list[tuple[int, int]]]]:
        """(method, bidirectional, pairs) for every round to time, in order."""
        out = []
        for m in self.methods:
            out += [(m, False, r) for r in self.schedule.uni]
            if self.bidirectional:
                out += [(m, True, r) for r in self.schedule.bi]
        return out

    def to_dict(self) -> dict:
        return {"schedule": self.schedule.to_dict(), "sizes": self.sizes, "methods": list(self.methods),
                "bidirectional": self.bidirectional, "chase_sets": self.chase_sets, "pingpong": self.pingpong}


def estimate_seconds(plan: Plan, *, bw_Bps: float, launch_s: float = 4e-6, per_point_s: float = 0.006,
                     chase_latency_s: float = 1.5e-6, setup_s: float = 6.0) -> float:
    """Wall time of a plan at a link bandwidth of ``bw_Bps``: per round and size a calibration call and
    (1 warm-up + the sweep rule's samples) of at least its sample length (or one transfer), Python and the check
    per point; a ceiling rule's samples per round; latency chases per ordered pair and working set,
    a ping-pong per unordered pair; NVRTC, buffers and peer mappings once (``setup_s``)."""
    total = setup_s
    sweep, ceiling, latency = policy.rule("sweep"), policy.rule("ceiling"), policy.rule("latency")
    for _method, bi, _pairs in plan.rounds():
        for s in plan.sizes:
            one = launch_s + s / bw_Bps * (1.0 if not bi else 1.05)
            sample = max(sweep.sample_s, one)
            total += 2 * one + (1 + sweep.max_samples) * sample + per_point_s + s / 1.5e12
        total += (1 + ceiling.max_samples) * max(ceiling.sample_s, plan.sizes[-1] / bw_Bps) + per_point_s
    pairs = len(plan.schedule.ordered_pairs)
    for ws, lines in plan.chase_sets.values():   # one cycle per working set, one buffer per GPU read from
        total += 0.05 * lines / (1 << 20) + len(plan.schedule.devices) * (0.02 + ws / 100e9)
        total += pairs * ((1 + latency.max_samples) * LATENCY_STEPS * chase_latency_s + 0.005)
    if plan.pingpong:
        total += len(plan.schedule.unordered_pairs) * (1 + latency.max_samples) * PINGPONG_ITERS * 2 * chase_latency_s
    return total
