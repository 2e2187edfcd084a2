"""gpu.roofline: the measured roofline. One kernel whose arithmetic intensity is set at run time streams an
array of >= 4x L2 from DRAM and runs a chain of FMAs on every loaded lane; sweeping the chain length traces
the curve from bandwidth-bound to compute-bound, per precision (FP32, FP64, FP16 as half2, INT32).

The ridge point is fitted from the sweep (hwprobe.curves.fit_roofline): the intersection of the
measured bandwidth slope and the measured compute roof.

No cool start (``cool_start=False``): neither power nor temperature limits these kernels. In two `full` runs on
H200s (2026-11-28) every point ran at 1980 MHz (its lowest sampled SM clock) with no throttle reason, at most
308 / 326 W of the 700-W limit, from 35-47 C; the runner's settle before it waited its full 6 s for a cooler card.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from hwprobe import keys as K
from hwprobe.curves import fit_roofline, ridge_note
from hwprobe.errors import Skip, VerificationError
from hwprobe.kernels import compile_ahead
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory.common import blocks_per_sm, calibrate, free_bytes, info, release, repeat, time_call
from hwprobe.probes.memory.plan import (
    ROOF_PRECISIONS,
    VECTOR_BYTES,
    align_up,
    roofline_flops_per_vector,
    roofline_plan,
    stream_array_bytes,
)
from hwprobe.timing import policy
from hwprobe.vocab import ExecUnit, Kind, Path

BLOCK = 256
ROOF_U = 4                 # vectors per thread per iteration (mem_roofline.cu)
MAX_LAUNCH_S = 0.05        # stop a precision's sweep once one launch takes longer (slow FP64 parts)
PATTERN = 64               # the input repeats every 64 elements
CONSTS = {"fp32": (0.5, 0.75), "fp64": (0.5, 0.75), "fp16": (0.5, 0.75), "int32": (1664525, 1013904223)}
ELEM = {"fp32": (np.float32, 4), "fp64": (np.float64, 2), "fp16": (np.float16, 8), "int32": (np.uint32, 4)}
RTOL = {"fp32": 1e-3, "fp64": 1e-9, "fp16": 1e-3}


def pattern(precision: str) -> np.ndarray:
    """The 64 input values: 1 + k/64 (exact in fp16/fp32/fp64) or 1..64 for int32."""
    dtype, _ = ELEM[precision]
    k = np.arange(PATTERN)
    return (k + 1).astype(dtype) if precision == "int32" else (1.0 + k / PATTERN).astype(dtype)


def chain(precision: str, x: np.ndarray, m: int) -> np.ndarray:
    """Host model of m steps x = x * ca + cb, rounded as the device rounds (an FMA is exact here: with
    ca = 0.5, x * ca + cb is exact in float64, so one rounding to the target type matches the fused op)."""
    ca, cb = CONSTS[precision]
    if precision == "int32":
        v = x.astype(np.uint64)
        for _ in range(m):
            v = (v * np.uint64(ca) + np.uint64(cb)) & np.uint64(0xFFFFFFFF)
        return v
    dtype = x.dtype
    v = x.copy()
    for _ in range(m):
        nxt = (v.astype(np.float64) * ca + cb).astype(dtype)
        if np.array_equal(nxt, v):  # reached the fixed point: further steps change nothing
            break
        v = nxt
    return v


def expected_total(precision: str, m: int, n_elem: int) -> float | int:
    """Sum over all elements of the chain's result (the kernel's per-block sums added)."""
    per = chain(precision, pattern(precision), m)
    count = n_elem // PATTERN
    if precision == "int32":
        return (sum(int(v) for v in per) * count) % (1 << 64)
    return float(per.astype(np.float64).sum()) * count


MODULE = ("mem_roofline.cu",)   # ``load``'s arguments: run loads it, compile_ahead compiles it early


@probe(name="gpu.roofline", target="gpu", family="compute", cool_start=False, ahead=compile_ahead(MODULE),
       summary="Measured roofline: FLOP/s vs arithmetic intensity (1/8..1024 FLOP/B) and the ridge point",
       precisions=tuple(ROOF_PRECISIONS))
def run(ctx, precisions: tuple[str, ...] = tuple(ROOF_PRECISIONS), lo: float = 0.125, hi: float = 1024.0,
        per_octave: int | None = None) -> Iterator[Measurement]:
    """``lo``/``hi``: intensity range in FLOP/B (the kernel's lowest is 1/8 FP64, 1/4 FP32/INT32, 1/2 FP16).
    ``per_octave``: points per doubling of intensity (default 2, quick 1)."""
    import cupy as cp

    from hwprobe.kernels import load

    release()
    dev = ctx.device
    ppo = per_octave or (1 if ctx.quick else 2)
    try:
        need = stream_array_bytes(dev.l2_bytes, free_bytes(), n_arrays=1, target_bytes=4 * dev.l2_bytes)
    except ValueError as e:
        raise Skip(str(e)) from None
    mod = load(*MODULE)
    kernels, nvecs = {}, {}
    for prec in precisions:
        k = mod.get_function(ROOF_PRECISIONS[prec].kernel)
        grid = dev.sms * min(blocks_per_sm(k, BLOCK, fallback=4), 2048 // BLOCK)
        kernels[prec] = (k, grid)
        # no tail in the kernel: a multiple of (threads x vectors per iteration); that is also a multiple of
        # 64 elements, so the pattern tiles the array exactly
        nvecs[prec] = align_up(need // VECTOR_BYTES, grid * BLOCK * ROOF_U)
    nbytes = max(nvecs.values()) * VECTOR_BYTES
    if nbytes > 0.25 * free_bytes():
        raise Skip(f"the roofline array ({nbytes / 2**20:.0f} MiB) does not fit in 25% of free memory")
    buf = cp.empty(nbytes, dtype=cp.uint8)
    out = cp.zeros(max(g for _, g in kernels.values()), dtype=cp.float64)
    trace = policy.rule("trace")

    for prec in precisions:
        k, grid = kernels[prec]
        nvec = nvecs[prec]
        dtype, per_vec = ELEM[prec]
        n_elem = nvec * per_vec
        view = buf[: nvec * VECTOR_BYTES].view(dtype)
        view.reshape(-1, PATTERN)[:] = cp.asarray(pattern(prec))
        ca, cb = CONSTS[prec]
        scal = (np.uint32(ca), np.uint32(cb)) if prec == "int32" else (
            (np.float64(ca), np.float64(cb)) if prec == "fp64" else (np.float32(ca), np.float32(cb)))
        unit = "OP/s" if prec == "int32" else "FLOP/s"
        xs, ys = [], []
        for m, intensity in roofline_plan(prec, lo, hi, ppo):
            metric = f"roofline.{prec}.sweep.{intensity:g}"
            try:
                args = (buf, np.uint64(nvec), np.int32(m), *scal, out)

                def launch(k=k, grid=grid, args=args) -> None:
                    k((grid,), (BLOCK,), args)

                launch()
                one = time_call(launch)
                if one > MAX_LAUNCH_S:
                    ctx.log(f"{prec}: one launch at {intensity:g} FLOP/B takes {one * 1e3:.0f} ms; sweep stops")
                    yield info(ctx, metric, "sweep stopped", f"one launch takes {one * 1e3:.0f} ms",
                               precision=prec)
                    break
                reps = calibrate(launch, trace.sample_s, hi=4096)
                flops = roofline_flops_per_vector(prec, m) * nvec
                meas = ctx.measure(
                    metric, repeat(launch, reps), work=flops * reps, unit=unit, kind=Kind.SWEEP,
                    check=_check(prec, m, n_elem, out, grid), warmup=1, rule=trace.name, precision=prec,
                    exec_unit=ExecUnit.CUDA_CORE, path=Path.INSTRUCTION,
                    params={K.INTENSITY: intensity, "precision": prec, "flops": flops,
                            K.BYTES: nvec * VECTOR_BYTES, "fma_chain": m, "launches_per_sample": reps,
                            "grid": grid, "block": BLOCK, "lanes": "half2" if prec == "fp16" else prec},
                    bytes_counted="bytes read from DRAM (the array, once per launch)",
                )
                if meas.verified:
                    xs.append(intensity)
                    ys.append(meas.value)
                yield meas
            except Exception as e:
                yield info(ctx, metric, f"roofline point {prec} @ {intensity:g} failed", e, precision=prec)
        yield from _ridge(ctx, prec, xs, ys)
    buf = out = None
    release()


def _check(prec: str, m: int, n_elem: int, out, grid: int) -> Callable[[], None]:
    def fn() -> None:
        if prec == "int32":
            got = sum(int(v) for v in out[:grid].view(np.uint64).get()) % (1 << 64)
            want = expected_total(prec, m, n_elem)
            if got != want:
                raise VerificationError(f"int32 sum {got} != {want}")
            return
        got = float(out[:grid].get().sum())
        want = expected_total(prec, m, n_elem)
        if not abs(got - want) <= RTOL[prec] * abs(want):
            raise VerificationError(f"{prec} sum {got!r} != {want!r} (rtol {RTOL[prec]:g})")
    return fn


def theoretical_ridge(theory, prec: str) -> tuple[float | None, str]:
    """Theoretical CUDA-core peak / theoretical DRAM bandwidth at max clocks (the run's DeviceTheory), with its
    basis."""
    if theory is None:
        return None, "no theory for this device"
    try:
        peak, bw = theory.compute(prec, ExecUnit.CUDA_CORE), theory.memory("dram")
        if peak and bw and peak.at_max_clock and bw.at_max_clock:
            return peak.at_max_clock / bw.at_max_clock, f"{peak.basis} / {bw.basis}"
        return None, "no theory for this device/precision"
    except Exception as e:  # theory is context for the note, never a reason to lose the measurement
        return None, f"theory unavailable ({type(e).__name__}: {e})"


def _ridge(ctx, prec: str, xs: list[float], ys: list[float]) -> Iterator[Measurement]:
    unit = "OP/B" if prec == "int32" else "FLOP/B"
    if len(xs) < 4:
        yield info(ctx, f"roofline.{prec}.ridge", "too few verified points for a ridge fit", f"{len(xs)} points",
                   precision=prec)
        return
    fit = fit_roofline(xs, ys)
    theory, basis = theoretical_ridge(ctx.theory, prec)
    notes = [ridge_note(prec, fit.ridge, fit.roof, fit.bandwidth, unit, theory, basis)]
    if fit.n_memory_points == 0:
        notes.append("no clearly bandwidth-bound point: the slope is a lower bound from the lowest intensity")
    yield ctx.derived(f"roofline.{prec}.ridge", fit.ridge, unit=unit, kind=Kind.INFO, precision=prec,
                      exec_unit=ExecUnit.CUDA_CORE,
                      params={"bandwidth_Bps": fit.bandwidth, K.ROOF: fit.roof, "reach_90pct_intensity": fit.reach,
                              "memory_bound_points": fit.n_memory_points, "theoretical_ridge": theory},
                      notes=notes)
