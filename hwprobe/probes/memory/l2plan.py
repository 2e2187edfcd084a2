"""The L2 read-bandwidth pattern and its plan: "a region per block" (mem_cache.cu l2_region), the variants the
probe screens, how a working set is cut into regions, and what each block must sum. Pure Python, tested on
the CPU.

The private plan: the set is cut into rows (a row = block x U 16-byte vectors, U loads in flight per thread),
one region per row, and the number of regions is a multiple of the grid, so each block owns set / grid bytes
and no two requests in flight anywhere ask for the same line. That matters: on an H200 the same kernel with
blocks of different SMs reading the same lines at the same time "read" 16-21 TB/s (bytes requested), against
~9-10 TB/s for every pattern free of it: requests for a line already on its way are merged, and counting them
reports more than the L2 served. A grid can own a set only when set >= grid x row, so small sets use variants
with fewer bytes in flight (``choose``).

The peer method (``PEER``): a flat grid in which block b reads region b mod n of 512 KiB, as the established
cache benchmark (gpu-benches' gpu-l2-cache) does; co-running blocks share lines, so it is reported beside the
ceiling, never as it. ``PEER_PLAIN`` is the same with the benchmark's own kind of load (plain, so L1 hits count
too), over the benchmark's own sets (``peer_sizes``): the figure a user compares with it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

VEC = 16                    # bytes per load (ld.global.*.v4.u32)
LOADS = {0: "ld.global.cg (L2 only)", 1: "ld.global.L1::no_allocate", 2: "ld.global (may hit L1)"}
L2_LOADS = (0, 1)           # the loads that bypass L1: only these give an L2 figure
UNROLLS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class L2Variant:
    block: int              # threads per block
    unroll: int             # U: 16-byte loads in flight per thread
    load: int               # LOADS key
    blocks_per_sm: int      # the persistent grid is SMs x blocks_per_sm

    @property
    def kernel(self) -> str:
        return kernel_name(self.unroll, self.load)

    @property
    def row_bytes(self) -> int:
        return self.block * self.unroll * VEC

    def min_set(self, sms: int) -> int:
        """The smallest set the grid can own privately: one row per block."""
        return sms * self.blocks_per_sm * self.row_bytes

    def label(self) -> str:
        return (f"{LOADS[self.load].split()[0]}, block {self.block} x {self.unroll} loads of 16 B, "
                f"{self.blocks_per_sm} blocks/SM ({self.row_bytes * self.blocks_per_sm >> 10} KiB in flight per SM)")

    def as_dict(self) -> dict:
        return {**asdict(self), "load_name": LOADS[self.load],
                "bytes_in_flight_per_sm": self.row_bytes * self.blocks_per_sm}


def kernel_name(unroll: int, load: int) -> str:
    return f"l2_region<{unroll}, {load}>"


def kernel_names() -> tuple[str, ...]:
    return tuple(kernel_name(u, ld) for u in UNROLLS for ld in (0, 1, 2))


# What gpu.cache screens beside its stream kernel (both L1-bypassing loads, 32-128 KiB in flight per SM; fewer
# bytes in flight are latency-bound: 12 KiB per SM read 4.6 TB/s on an H200). CAPACITY: the variant of the
# shared-data curve (32 KiB per SM, so a 132-SM grid owns sets in steps of 4.1 MiB).
_SHAPES = ((256, 4, 8), (512, 4, 4), (256, 8, 4), (512, 2, 4), (256, 4, 4), (128, 4, 8), (256, 4, 2), (128, 2, 8),
           (64, 4, 8))
SCREEN = tuple(L2Variant(b, u, ld, k) for ld in L2_LOADS for b, u, k in _SHAPES)
CAPACITY = L2Variant(64, 4, 0, 8)
LOW_MLP = L2Variant(64, 4, 0, 1)          # 4 KiB in flight per SM: latency-bound, shows the near/far step
LOW_MLP_REGION = 256 << 10                # its regions (shared by several SMs: the step needs data all SMs read)
PEER = L2Variant(1024, 8, 0, 0)           # flat grid, 512 KiB regions (4 rows), b mod n
PEER_PLAIN = L2Variant(1024, 8, 2, 0)     # the same with plain loads (may hit L1), as the benchmark loads
PEER_REGION = 512 << 10
MIB = 1 << 20


def peer_sizes(lo: float, hi: float, region: int = PEER_REGION) -> list[int]:
    """The established benchmark's sets inside [lo, hi]: k regions for k = 3, 4, ... stepping by max(1, k/10)
    (truncated, as its C++ loop does: 3..20, 22, 24, ..., 30, 33, 36, 39): 25 sets in 2-20 MiB, dense at small
    sets, so its median over that window is the 8 MiB point."""
    out, k = [], 3
    while k * region <= hi:
        if k * region >= lo:
            out.append(k * region)
        k = int(k + max(1.0, k * 0.1))
    return out


def l2_window(l2: int) -> tuple[float, float]:
    """Sizes surely inside L2 and well above L1 x SMs: L2/30 to L2/3 (2-20 MiB on a 60 MiB L2)."""
    return l2 / 30, l2 / 3


def peer_window(l2: int) -> tuple[float, float]:
    """The window the benchmark's figure is quoted over (2-20 MiB) where 20 MiB is at most half the L2; on a
    smaller L2, the probe's own window (``l2_window``)."""
    return (2 * MIB, 20 * MIB) if 20 * MIB <= l2 / 2 else l2_window(l2)


def choose(ranked: list[L2Variant], size: int, sms: int, tol: float = 0.12) -> L2Variant | None:
    """The first variant of ``ranked`` (fastest first) whose grid can own a set of ``size`` bytes losing at most
    ``tol`` of it (the private plan rounds the set down to whole rows for every block); failing that, the feasible
    one that rounds least; None when no grid can own the set."""
    fits = [v for v in ranked if v.min_set(sms) <= size]
    if not fits:
        return None
    loss = {v: (size % v.min_set(sms)) / size for v in fits}
    return next((v for v in fits if loss[v] <= tol), min(fits, key=lambda v: loss[v]))


def sweep_plan(ranked: list[L2Variant], sizes: list[int], sms: int) -> dict[int, L2Variant]:
    """{set size actually read: variant} for a list of wanted sizes: each rounded down to what its chosen
    variant's grid owns (so a curve's x is the bytes really read), duplicates dropped."""
    out: dict[int, L2Variant] = {}
    for size in sizes:
        v = choose(ranked, size, sms)
        if v is not None:
            out.setdefault(private_plan(size, v, sms).set_bytes, v)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class RegionPlan:
    region_vecs: int
    nregions: int
    grid: int
    private: bool

    @property
    def set_bytes(self) -> int:
        return self.region_vecs * self.nregions * VEC


def private_plan(size: int, v: L2Variant, sms: int) -> RegionPlan:
    """One row per region, the region count rounded down to a multiple of the grid (every block owns the same
    number of rows). Raises ValueError when the set is smaller than one row per block."""
    grid = sms * v.blocks_per_sm
    rows = size // v.row_bytes // grid * grid
    if rows < grid:
        raise ValueError(f"a {size} B set is smaller than one {v.row_bytes} B row for each of {grid} blocks")
    return RegionPlan(v.row_bytes // VEC, rows, grid, True)


def shared_plan(size: int, v: L2Variant, grid: int, region_bytes: int) -> RegionPlan:
    """Regions of about ``region_bytes`` (whole rows) that several blocks read: LOW_MLP and PEER."""
    region_vecs = max(1, region_bytes // v.row_bytes) * v.row_bytes // VEC
    return RegionPlan(region_vecs, max(1, size // (region_vecs * VEC)), grid, False)


def launch_bytes(plan: RegionPlan, iters: int) -> int:
    return plan.grid * iters * plan.region_vecs * VEC


def block_sum(plan: RegionPlan, iters: int) -> int:
    """What every block's sum must be (each word is 1): iters x region_vecs x 4 words, mod 2^32."""
    return (iters * plan.region_vecs * 4) % (1 << 32)


def owners(plan: RegionPlan, iters: int, off: int = 0) -> dict[int, set[int]]:
    """region -> the blocks that read it in one launch (a host model of the kernel's indexing, for tests)."""
    out: dict[int, set[int]] = {}
    for b in range(plan.grid):
        v = (b + off) % plan.grid
        for k in range(iters):
            out.setdefault((v + k * plan.grid) % plan.nregions, set()).add(b)
    return out
