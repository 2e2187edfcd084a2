"""The SM clock around a timed window that cannot time its own: a clock64 / %globaltimer sentinel kernel.

A library GEMM (cuBLAS, cuBLASLt, cuSPARSELt) runs kernels hwprobe did not write, so unlike wgmma it cannot
stamp its own cycles. NVML's reading lags by ~100 ms and, on some boards, differs from the clock the SMs
really run at. The sentinel (hwprobe/kernels/sentinel.cu) is one 32-thread block per SM that spins on the
global timer for ``spin_us`` and counts SM cycles over the same interval: the effective SM clock, measured
the way the instruction probes measure theirs. Probes run it right before and right after the timed
window and record both (``params["sentinel_sm_mhz"]`` and friends, see ``record``), so a library's share of
theory and an instruction kernel's are taken at clocks measured alike.

What it cannot see: the clock *during* the window, if the window's own load changes it (a light kernel
runs at the clock the GPU is set to now; a heavy one may run slower). The probes say so beside the value.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

import numpy as np

from hwprobe import keys as K

SPIN_US = 200.0        # long against the global timer's tick (<= 1 us on Hopper), short against everything else


@dataclass(frozen=True)
class SentinelReading:
    """The SM clock over one sentinel launch: median, min and max over the SMs it ran on (MHz)."""

    mhz: float
    min_mhz: float
    max_mhz: float
    sms: int                 # distinct SMs the blocks ran on
    spin_s: float

    def to_dict(self) -> dict:
        return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def reading(rec: np.ndarray, spin_s: float) -> SentinelReading | None:
    """A SentinelReading from the kernel's output, rows of (cycles, ns, smid, start ns); None if empty."""
    rec = np.asarray(rec, dtype=np.float64).reshape(-1, 4)
    ok = (rec[:, 0] > 0) & (rec[:, 1] > 0)
    if not ok.any():
        return None
    mhz = rec[ok, 0] / rec[ok, 1] * 1e3
    return SentinelReading(float(np.median(mhz)), float(mhz.min()), float(mhz.max()),
                           int(len(np.unique(rec[ok, 2]))), spin_s)


_KERNEL: dict[int, object] = {}


def sentinel_clock(sms: int, spin_us: float = SPIN_US, cp=None) -> SentinelReading | None:
    """Run the sentinel once (one block per SM) on the current stream and return the clock it saw; None when
    it cannot run (no CuPy, no NVRTC). Synchronizes the stream (it is meant to sit at a window's edges)."""
    try:
        if cp is None:
            import cupy as cp
        dev = cp.cuda.Device().id
        if dev not in _KERNEL:
            from hwprobe.kernels import load

            _KERNEL[dev] = load("sentinel.cu").get_function("hwp_clock_sentinel")
        out = cp.zeros(4 * sms, dtype=cp.uint64)
        _KERNEL[dev]((sms,), (32,), (out, np.int64(spin_us * 1e3)))
        cp.cuda.get_current_stream().synchronize()
        return reading(cp.asnumpy(out), spin_us * 1e-6)
    except Exception:          # a clock we cannot read is left out, never a failed measurement
        return None


def record(params: dict, before: SentinelReading | None, after: SentinelReading | None) -> None:
    """The params keys the judge and the report read (hwprobe.judge: ``sentinel_sm_mhz``):

    - ``sentinel_sm_mhz``: [before, after] medians, the higher one last (the judge takes a list's upper median
      and its max: the higher edge). A short burst can start at one DVFS step and end several steps lower (the
      H200's power limiter acts within ~50 ms), so the higher edge is the clock that bounds the window's rate;
      a mean of the two would put theory below what the window ran at;
    - ``sentinel_sm_mhz_before`` / ``sentinel_sm_mhz_after``: each reading, with min/max over the SMs;
    - ``sentinel_sm_mhz_mean``: their mean, for reference.
    """
    got = [r for r in (before, after) if r is not None]
    if not got:
        return
    params[K.SENTINEL_SM_MHZ] = sorted(round(r.mhz, 1) for r in got)
    params["sentinel_sm_mhz_mean"] = round(statistics.fmean(r.mhz for r in got), 1)
    if before is not None:
        params[K.SENTINEL_BEFORE] = before.to_dict()
    if after is not None:
        params[K.SENTINEL_AFTER] = after.to_dict()


def clock_of(params: dict) -> float | None:
    """The sentinel clock a record's params carry (the higher edge, as the judge takes it); None without one."""
    v = params.get(K.SENTINEL_SM_MHZ)
    if not v:
        return None
    return float(max(v) if isinstance(v, list) else v)


NOTE = ("sentinel clock: clock64 over %globaltimer of one light block per SM, run right before and right after "
        "the timed window (the clock the SMs were set to at its edges, the higher edge taken; on the H200 the SM "
        "clock runs ~9% below that set clock while HMMA/HGMMA work runs, which a light sentinel does not see)")
