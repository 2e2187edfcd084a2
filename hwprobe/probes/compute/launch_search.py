"""Launch-configuration search for throughput kernels: chains (ILP) x resident warps (TLP).

Peak issue needs enough independent instructions in flight on every SM sub-partition to cover the
pipeline latency; which mix of chains per thread and warps per SM gets there differs per device and
per instruction, so the probe tries a small grid and keeps the fastest. Pure Python (no GPU), so the
planning, the occupancy arithmetic and the cost bound are tested on the CPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

THREADS_PER_BLOCK = 256
BLOCKS_PER_SM = (1, 2, 4, 8)          # x 256 threads = 8, 16, 32, 64 warps per SM
QUICK_BLOCKS_PER_SM = (4, 8)

# Resident-block limit per SM by compute capability (CUDA programming guide, "compute capabilities").
_MAX_BLOCKS_PER_SM = {(7, 5): 16, (8, 6): 16, (8, 7): 16, (8, 9): 24, (12, 0): 32}


@dataclass(frozen=True, order=True)
class Config:
    chains: int                       # independent chains per thread (compile-time)
    blocks_per_sm: int                # grid = SMs x blocks_per_sm: one full wave
    threads: int = THREADS_PER_BLOCK  # per block

    def grid(self, sms: int) -> int:
        return sms * self.blocks_per_sm

    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.threads // 32


@dataclass
class Trial:
    config: Config
    rate: float                       # work per second (the family's unit), from one timed launch
    seconds: float
    iterations: int

    def row(self) -> dict:
        d = asdict(self.config)
        d.update(rate=self.rate, seconds=self.seconds, iterations=self.iterations)
        return d


def max_blocks_per_sm(cc: tuple[int, int]) -> int:
    return _MAX_BLOCKS_PER_SM.get(tuple(cc), 32)


def resident_blocks(regs_per_thread: int, threads: int, *, regs_per_sm: int = 65536, max_threads_per_sm: int = 2048,
                    max_blocks: int = 32, smem_per_block: int = 0, smem_per_sm: int = 0) -> int:
    """Blocks of ``threads`` that fit on one SM at once (registers, threads, block slots, shared memory).

    Registers are allocated per warp in units of 256 (so per thread in steps of 8), as on sm_70..sm_120.
    """
    if threads <= 0:
        return 0
    warps = -(-threads // 32)
    regs_per_warp = -(-max(1, regs_per_thread) * 32 // 256) * 256
    by_regs = regs_per_sm // (regs_per_warp * warps) if regs_per_warp else max_blocks
    by_threads = max_threads_per_sm // (warps * 32)
    by_smem = smem_per_sm // smem_per_block if smem_per_block else max_blocks
    return max(0, min(max_blocks, by_regs, by_threads, by_smem))


def plan(chains: tuple[int, ...], *, quick: bool = False, search: bool = True, default_chains: int = 8,
         blocks_per_sm: tuple[int, ...] | None = None) -> list[Config]:
    """The configurations to try, before occupancy filtering.

    ``search=False`` gives one known-good point: ``default_chains`` (or the nearest compiled count) at the
    highest block count; ``quick`` keeps the two largest chain counts up to 16 and the two largest
    occupancies.
    """
    chains = tuple(sorted(set(chains)))
    if not chains:
        return []
    bps = tuple(sorted(set(blocks_per_sm or (QUICK_BLOCKS_PER_SM if quick else BLOCKS_PER_SM))))
    if not search:
        c = min(chains, key=lambda n: (abs(n - default_chains), n))
        return [Config(c, max(bps))]
    if quick:
        small = [c for c in chains if c <= 16] or list(chains[:1])
        chains = tuple(small[-2:])
    return [Config(c, b) for c in chains for b in bps]


def fit(configs: list[Config], resident: dict[int, int]) -> tuple[list[Config], list[Config]]:
    """Split configs into (runnable in one wave, dropped); ``resident`` maps chains -> blocks per SM that fit.

    When a planned occupancy does not fit, the highest one that does (``resident``) is tried instead, so
    each chain count is still measured at its real maximum occupancy.
    """
    keep, drop = [], []
    for c in configs:
        (keep if c.blocks_per_sm <= resident.get(c.chains, 0) else drop).append(c)
    for c in drop:
        r = resident.get(c.chains, 0)
        if r > 0:
            keep.append(Config(c.chains, r, c.threads))
    return sorted(set(keep)), drop


def best(trials: list[Trial]) -> Trial:
    """The fastest trial; ties go to fewer chains, then fewer blocks (the simpler configuration)."""
    if not trials:
        raise ValueError("no trials")
    return max(trials, key=lambda t: (t.rate, -t.config.chains, -t.config.blocks_per_sm))


def cost_s(n_configs: int, *, search_s: float, calibrate_s: float) -> float:
    """Upper estimate of the device time a search takes: one calibration and one timed launch per config."""
    return n_configs * (search_s + calibrate_s)


def table(trials: list[Trial]) -> list[dict]:
    """The search table for a measurement's params, fastest first."""
    return [t.row() for t in sorted(trials, key=lambda t: -t.rate)]
