"""Library GEMM at the power cap: sustained rate, SM clock, power and J/op against the operands' data.

Tensor-core power follows how many operand bits toggle, and at the board's power limit power sets the SM
clock: on an H200 (700 W) a cuBLASLt INT8 GEMM on random operands settles near 1400 MHz, while the same GEMM
on zeros stays at 1980 MHz. gpu.gemm's ceilings are short samples on full-entropy data; this probe runs one
GEMM per precision back to back for ``sustain_s`` after ``settle_s`` of the same work (the limiter has
settled), once per operand distribution (gpu_gemm.DATA), so that

- the rate is the sustained one, and the NVML energy counter gives joules per operation;
- rate / theory at the measured clock (per-clock efficiency) is given beside the clock, the power and the
  throttle reasons NVML read, for every operand distribution. The finding states those measurements; where
  it names a cause it says it is inferred from them (zero operands run neither at the max clock nor at the
  power cap necessarily: their clock and power are stated, not assumed).

The points are "sweep" records (zeros must never become a ceiling); one finding per precision sums them up.

No cool start (``cool_start=False``): every point but the first already starts from the previous point's load at
the cap, and the limiter's state is what is measured. Measured in two `full` runs on H200s (2026-11-28, records
under profiles/h200-sxm/2026-11-27-predict-generic/added/): the sustained points ran at 53-55 C in one and 59-62 C
in the other, and their rates agreed within 1.3% (INT8 1.238 / 1.237 POP/s, FP16 619.6 / 621.1 TFLOP/s, FP8 1.205
/ 1.221 PFLOP/s on uniform data), while the runner's settle before the probe waited its full 6 s for a cooler card.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwprobe import keys as K
from hwprobe.errors import Skip
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.compute import f64_copy
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.timing import policy
from hwprobe.timing.sentinel import clock_of
from hwprobe.units import si
from hwprobe.vocab import ExecUnit, Kind, Path, Precision


@dataclass(frozen=True)
class PowerPath:
    """One library GEMM a precision is sustained on."""

    variant: str        # gemm_common variant key
    api: str            # "cublaslt" (gpu_fp8.LtGemm, autotuned; LtGemmI8Out for INT8 output) | "cublas" (gemmEx)
    stem: str           # metric stem: <stem>.sustained.<data>, <stem>.power_data

    def metric(self, data: str) -> str:
        return f"{self.stem}.sustained.{data}"


PATHS = {   # INT8's fastest library paths (gpu.gemm): cuBLASLt with INT32 and with INT8 output
    "int8": (PowerPath("int8.tn", "cublaslt", "int8.tensor_core.cublaslt"),
             PowerPath("int8.tn.i8out", "cublaslt", "int8.tensor_core.cublaslt.i8out")),
    "fp16": (PowerPath("fp16.f32acc", "cublas", "fp16.tensor_core.cublas"),),
    "bf16": (PowerPath("bf16", "cublas", "bf16.tensor_core.cublas"),),
    # FP8 E4M3 -> BF16, raw cuBLASLt (TN, fast accumulation, fastest heuristic algo), on full-range codes
    "fp8": (PowerPath("fp8.fast", "cublaslt", "fp8_e4m3.tensor_core.cublaslt"),),
}
ALL_PATHS = tuple(p.variant for paths in PATHS.values() for p in paths)


def paths_of(precision: str, paths: tuple[str, ...]) -> tuple[PowerPath, ...]:
    """``precision``'s power paths among the variant keys ``paths`` (gpu.gemm_power's parameter), in PATHS' order."""
    return tuple(p for p in PATHS[precision] if p.variant in paths)


def per_clock(m: Measurement, theory) -> float | None:
    """Rate over tensor-core theory at the window's median NVML clock (settled: NVML's lag is out)."""
    clk = m.clocks.sm_mhz if m.clocks else None
    t = theory.compute(m.precision, ExecUnit.TENSOR_CORE, clk) if clk else None
    return m.value / t.at_clock if t and t.at_clock else None


def summarize(precision: str, size: int, points: list[Measurement], power_limit_w: float | None) -> tuple[float, str]:
    """(zeros / uniform rate, text) of one precision's points: rate, clock, power, J/op and per-clock share."""
    by = {p.params["data"]: p for p in points if p.valid}
    parts = []
    for data, p in by.items():
        c = p.clocks
        part = f"{data} {si(p.value, p.unit)}"
        if c and c.sm_mhz:
            part += f" at {c.sm_mhz:.0f} MHz"
        if c and c.power_w:
            part += f", {c.power_w:.0f} W"
        if c and c.throttle_reasons:
            part += f" ({', '.join(c.throttle_reasons)})"
        if (sent := clock_of(p.params)) is not None:
            part += f", sentinel {sent:.0f} MHz"
        if p.energy_per_op_j:
            part += f", {p.energy_per_op_j * 1e12:.3f} pJ/op"
        if p.params.get("per_clock") is not None:
            part += f", {p.params['per_clock']:.1%} of theory at that clock"
        parts.append(part)
    cap = f" (power limit {power_limit_w:.0f} W)" if power_limit_w else ""
    text = f"{precision} library GEMM {size}^3 sustained{cap}: " + "; ".join(parts) + "."
    ratio = 0.0
    u, z = by.get("uniform"), by.get("zeros")
    if u and z and u.value > 0:
        ratio = z.value / u.value
        text += f" Full-entropy data runs {1 - u.value / z.value:.0%} slower than zero operands (measured)"
        cu, cz = u.params.get("per_clock"), z.params.get("per_clock")
        if cu and cz and u.clocks and z.clocks and u.clocks.sm_mhz and z.clocks.sm_mhz:
            text += (f"; per clock {cu:.0%} vs {cz:.0%} of theory at NVML's {u.clocks.sm_mhz:.0f} vs "
                     f"{z.clocks.sm_mhz:.0f} MHz")
            if abs(cu / cz - 1) < 0.05:
                text += (": the same share per clock, so the difference goes with the clock (inferred from the "
                         "rates and NVML's clocks; the clock itself is set by the power limiter where a throttle "
                         "reason says so)")
            else:
                text += ": the share per clock differs too, so not all of the difference is clock"
        text += "."
    return ratio, text


@probe(name="gpu.gemm_power", target="gpu", family="compute", cool_start=False,
       summary="Library GEMM sustained at the power cap: rate, clock, power and J/op against operand data",
       precisions=tuple(PATHS), choices={"paths": ALL_PATHS}, ahead=f64_copy.ahead)
def run(ctx, precisions=(Precision.INT8, Precision.FP16, Precision.FP8), size=8192,
        data=("uniform", "normal", "relu", "zeros"), settle_s=0.5, sustain_s=policy.SUSTAINED.min_total_s,
        check_rows=8, paths=ALL_PATHS):
    """``paths``: the PATHS variants sustained (a precision runs those of its paths named here). ``full`` keeps
    INT8's INT8-output path alone: INT32 output sustained 8.5-13% slower in all 17 committed runs on H200 and
    H100, so it never set the profile's sustained figure (profile_build keeps the faster), and it cost ~9.5 s;
    ``power`` runs both."""
    from hwprobe.probes.compute.cublas import DATA, cublas_env, failure
    from hwprobe.specs.live import device_theory

    bad = [d for d in data if d not in DATA]
    if bad:
        raise Skip(f"unknown operand data {bad}; known: {', '.join(DATA)}")
    dev = ctx.device
    if (dev.cc_major, dev.cc_minor) < (7, 0):
        raise Skip(f"no tensor cores on {dev.arch}")
    env = cublas_env(ctx)
    theory = ctx.theory if ctx.theory is not None else device_theory(dev)
    if ctx.quick:
        size, settle_s, sustain_s = min(size, 4096), 0.1, 0.3
    limit = (getattr(dev, "nvml", None) or {}).get("power_limit_w")
    lt_missing = ""
    try:
        import nvmath.bindings.cublasLt  # noqa: F401
    except Exception as e:
        lt_missing = f"cuBLASLt paths need nvmath-python ({type(e).__name__}: {e})"
    for prec in precisions:
        for path in paths_of(prec, paths):
            notes: tuple[str, ...] = ()
            if path.api == "cublaslt" and lt_missing:
                if path.variant in gc.LT_VARIANTS:      # no gemmEx equivalent
                    yield failure(ctx, f"{path.stem}.power_data", f"{prec} {path.variant}", RuntimeError(lt_missing),
                                  precision=prec, path=Path.LIBRARY)
                    continue
                path = PowerPath(path.variant, "cublas", path.stem.replace("cublaslt", "cublas"))
                notes = (f"{lt_missing}; gemmEx instead",)
            yield from _sustain(ctx, env, theory, prec, path, size, data, settle_s, sustain_s, check_rows, limit,
                                notes)


def _sustain(ctx, env, theory, prec: str, path: PowerPath, size: int, data, settle_s: float, sustain_s: float,
             check_rows: int, limit: float | None, notes: tuple[str, ...]):
    """One path's sustained points (one per operand distribution), then their finding."""
    from hwprobe.probes.compute.cublas import DATA, failure, measure_gemm
    from hwprobe.probes.compute.cublaslt import LtGemm, LtGemmI8Out
    from hwprobe.timing.steady import Sustain

    v = gc.variant(path.variant)
    cls = None if path.api == "cublas" else (LtGemmI8Out if v.out == "int8" else LtGemm)
    points: list[Measurement] = []
    for d in data:
        metric = path.metric(d)
        ctx.log(f"{path.variant} ({path.api}) {size}^3, {d} operands, sustained {sustain_s:g} s")
        try:
            m = measure_gemm(ctx, env, v, size, size, size, metric=metric, kind=Kind.SWEEP, rows=check_rows,
                             gemm_cls=cls, data=d, sustain=Sustain(settle_s, sustain_s),
                             extra={"data_desc": DATA[d]},
                             notes=(f"operands: {DATA[d]}", *notes))
        except Exception as e:
            yield failure(ctx, metric, f"{path.variant} with {d} operands", e, precision=prec, path=Path.LIBRARY)
            continue
        m.params["per_clock"] = per_clock(m, theory)
        points.append(m)
        yield m
    if points:
        ratio, text = summarize(f"{prec} ({path.variant}, {path.api})", size, points, limit)
        yield ctx.derived(f"{path.stem}.power_data", ratio, unit="x", kind=Kind.INFO, precision=prec,
                          exec_unit=ExecUnit.TENSOR_CORE, path=Path.LIBRARY, notes=[text],
                          params={"size": size, K.POWER_LIMIT_W: limit, K.VARIANT: path.variant,
                                  K.POINTS: {p.params["data"]: {**p.power_summary(),
                                                                "per_clock": p.params.get("per_clock")}
                                             for p in points}})
