"""Small GPU helpers the memory probes share: the memory budget, occupancy, calibrated repeat counts."""

from __future__ import annotations

from collections.abc import Callable

from hwprobe.measurement import Measurement
from hwprobe.timing import launches_for, repeat, time_cuda_once

__all__ = ["CACHE_KERNELS", "MEM_FRACTION", "free_bytes", "budget_bytes", "release", "blocks_per_sm", "time_call",
           "calibrate", "repeat", "info"]

CACHE_KERNELS = ("sweep_read<0>", "sweep_read<1>", "chase<0>", "chase<1>")  # mem_cache.cu
MEM_FRACTION = 0.25          # at most this share of free device memory per probe

# ---------------------------------------------------------------------------------------------------------------
# Helpers shared by the memory probes

def free_bytes() -> int:
    import cupy as cp

    return int(cp.cuda.runtime.memGetInfo()[0])


def budget_bytes(fraction: float = MEM_FRACTION) -> int:
    """Device bytes a probe may allocate: a share of what is free now (CuPy's pool is emptied first)."""
    import cupy as cp

    cp.get_default_memory_pool().free_all_blocks()
    return int(fraction * free_bytes())


def release() -> None:
    """Hand cached device and pinned blocks back, so the next probe sees the memory as free."""
    import cupy as cp

    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def blocks_per_sm(kernel, block: int, smem: int = 0, fallback: int = 1) -> int:
    """Resident blocks per SM for ``kernel`` at ``block`` threads (CUDA occupancy API)."""
    import cupy as cp

    try:
        n = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block, smem))
        return max(1, n)
    except Exception:
        return fallback


def time_call(fn: Callable[[], object]) -> float:
    """Seconds of one call of ``fn`` on the current stream (CUDA events), after it has run once."""
    return time_cuda_once(fn)


def calibrate(launch: Callable[[], object], target_s: float, hi: int = 1 << 20) -> int:
    """How many back-to-back ``launch`` calls last about ``target_s`` (hwprobe.timing.launches_for)."""
    return launches_for(launch, target_s, hi)


def info(ctx, metric: str, what: str, err: BaseException | str, **meta) -> Measurement:
    """An "info" measurement standing for a point or variant that could not run; the probe goes on."""
    if isinstance(err, BaseException):
        return ctx.error(metric, what, err, **meta)
    return ctx.skip(metric, f"{what}: {err}", **meta)


