"""cuBLAS GEMM ceilings per precision (gemmEx), the size sweep, alignment and the INT8 pitfall.

These are the library-path ceilings a performance engineer compares with: what cuBLAS delivers per
precision, how the rate grows with size ("bigger operators run more efficiently"), what an odd size
costs, and whether INT8 ends up slower than FP16 (it does, in the NN layout). cupy.matmul and
torch.matmul run in the same process as comparisons.

A ceiling is the best valid point over sizes, layouts (NN/TN) and gemmEx algos, and cuBLASLt (autotuned,
gpu_fp8) has its own ceiling beside it: the library's best is the best of the two. The top size of every
precision runs first, since the 700 W power cap lowers the clock as the GPU heats; every candidate's SM
clock is kept in the ceiling's params. FP64 goes first, after a tighter settle: its peer is a plain cupy.matmul.
Where the power limiter cut a ceiling's best window short, that configuration runs once more after a rest
(``_rested``), as gpu.gemm_fp8's sizes do; cupy/torch matmul are timed under the same rule as gemmEx's points.

Timing: one sample is a CUDA graph of ``reps`` GEMMs lasting >= ~5 ms, so launch overhead is out even at
1024^3 (a 2 us kernel). gemmEx is called through nvmath-python's cuBLAS binding on a handle of its own:
CuPy's binding refuses stream capture. Without nvmath, samples fall back to Python loops, flagged.
Operand sets rotate when one set would sit in L2. Every point is checked against a
float64 product of sampled rows, outside the timed region.
"""

from __future__ import annotations

from collections.abc import Callable

from hwprobe import keys as K
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.compute import cublaslt, f64_copy
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.probes.compute.cublas import (
    FP32_UNIT_NOTE,
    CublasEnv,
    build_runner,
    ceiling_of,
    check_rows,
    cublas_env,
    failure,
    measure_gemm,
    random_operand,
)
from hwprobe.probes.compute.cublaslt import REST_S
from hwprobe.probes.compute.f64_copy import to_f64
from hwprobe.vocab import ExecUnit, Kind, Path, Precision


# --- framework comparisons -------------------------------------------------------------------------------
def _framework_points(ctx, env: CublasEnv, n: int, rows: int, frameworks: tuple[str, ...]):
    cp = env.cp
    cp.get_default_memory_pool().free_all_blocks()
    if "cupy" in frameworks:
        try:
            a = random_operand(cp, "float16", (n, n), 11, n ** -0.25)
            b = random_operand(cp, "float16", (n, n), 12, n ** -0.25)
            c = cp.empty((n, n), dtype=cp.float16)
            runner = build_runner(cp, lambda i: cp.matmul(a, b, out=c), graph=False)

            def check() -> None:
                idx = gc.sample_rows(n, rows)
                check_rows(cp, to_f64(cp, a, "float16", idx), to_f64(cp, b, "float16"), to_f64(cp, c, "float16", idx),
                           gc.tolerance("fp16.f32acc"), f"cupy.matmul fp16 {n}^3")

            m = ctx.measure("fp16.tensor_core.cupy_matmul", runner.fn, work=gc.gemm_flops(n, n, n) * runner.reps,
                            unit="FLOP/s", kind=Kind.SWEEP, check=check, precision="fp16",
                            exec_unit=ExecUnit.TENSOR_CORE, path=Path.LIBRARY,
                            params={"m": n, "n": n, "k": n, "reps": runner.reps, "api": "cupy.matmul"},
                            notes=["comparison: cupy.matmul in this process (CuPy picks the compute type)",
                                   *runner.notes])
            del a, b, c
            yield m
        except Exception as e:
            yield failure(ctx, "fp16.tensor_core.cupy_matmul", "cupy.matmul", e)
    if "torch" in frameworks:
        try:
            import torch
        except Exception as e:
            yield failure(ctx, "torch_matmul", "import torch", e)
            return
        stream_ok = torch.cuda.current_stream().cuda_stream == cp.cuda.get_current_stream().ptr
        for prec, tdt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
            metric = f"{prec}.tensor_core.torch_matmul"
            if not stream_ok:
                yield failure(ctx, metric, "torch.matmul", RuntimeError("torch's current stream is not CuPy's"))
                continue
            try:
                gen = torch.Generator(device="cuda").manual_seed(5)
                a = (torch.rand(n, n, device="cuda", generator=gen) * 2 - 1).mul_(n ** -0.25).to(tdt)
                b = (torch.rand(n, n, device="cuda", generator=gen) * 2 - 1).mul_(n ** -0.25).to(tdt)
                c = torch.empty(n, n, device="cuda", dtype=tdt)
                runner = build_runner(cp, lambda i, a=a, b=b, c=c: torch.matmul(a, b, out=c), graph=False)

                def check(a=a, b=b, c=c, prec=prec) -> None:
                    idx = torch.as_tensor(gc.sample_rows(n, rows), device="cuda")
                    ref = a[idx].double() @ b.double()
                    gc.check_close(c[idx].double().cpu().numpy(), ref.cpu().numpy(),
                                   gc.tolerance("bf16" if prec == "bf16" else "fp16.f32acc"),
                                   f"torch.matmul {prec} {n}^3")

                m = ctx.measure(metric, runner.fn, work=gc.gemm_flops(n, n, n) * runner.reps, unit="FLOP/s",
                                kind=Kind.SWEEP, check=check, precision=prec, exec_unit=ExecUnit.TENSOR_CORE,
                                path=Path.LIBRARY,
                                params={"m": n, "n": n, "k": n, "reps": runner.reps, "api": "torch.matmul",
                                        "torch": torch.__version__},
                                notes=["comparison: torch.matmul in this process", *runner.notes])
                del a, b, c
                torch.cuda.empty_cache()
                yield m
            except Exception as e:
                yield failure(ctx, metric, "torch.matmul", e)


def _cupy_fp64(ctx, env: CublasEnv, n: int, rows: int):
    """cupy.matmul FP64 at n^3 on the same operand distribution as gemmEx's FP64 points: the library ceiling must
    be at least this (issue 10); measured right after gemmEx's own top point, before gemmEx runs once more."""
    cp = env.cp
    metric = "fp64.tensor_core.cupy_matmul"
    try:
        cp.get_default_memory_pool().free_all_blocks()
        a = random_operand(cp, "float64", (n, n), 21)
        b = random_operand(cp, "float64", (n, n), 22)
        c = cp.empty((n, n), dtype=cp.float64)
        runner = build_runner(cp, lambda i: cp.matmul(a, b, out=c), graph=False)

        def check() -> None:
            idx = gc.sample_rows(n, rows)
            check_rows(cp, to_f64(cp, a, "float64", idx), b, to_f64(cp, c, "float64", idx), gc.tolerance("fp64"),
                       f"cupy.matmul fp64 {n}^3")

        m = ctx.measure(metric, runner.fn, work=gc.gemm_flops(n, n, n) * runner.reps, unit="FLOP/s", kind=Kind.SWEEP,
                        check=check, precision="fp64", exec_unit=ExecUnit.TENSOR_CORE, path=Path.LIBRARY,
                        params={"m": n, "n": n, "k": n, "reps": runner.reps, "api": "cupy.matmul",
                                "operands": "float64 uniform in (-1, 1)"},
                        notes=["comparison: cupy.matmul FP64 in this process, right after gemmEx's top point",
                               *runner.notes])
        return m
    except Exception as e:
        return failure(ctx, metric, "cupy.matmul fp64", e, precision="fp64", path=Path.LIBRARY)


def _settle(ctx, cool: bool = False) -> dict | None:
    """The GPU's state before a precision's points, as hwprobe.timing.settle's rule judges it, read without waiting;
    ``cool``: first wait by the tighter rule of COOL_SETTLE (FP64's top size, whose peer is a plain cupy.matmul on a
    cool GPU). The other precisions do not wait: where the power limiter touched a ceiling, its best configuration is
    measured again after a rest (_rested). The ~1-s settles before each precision and size (NVML's averaged power is
    what they wait on) took 10.9 s of gpu.gemm's 33.7 in an H200 `full` (profiles/h200-sxm/2026-11-29-ab-s43). The
    rest does not make the burst independent of how warm the sweep ran: without the settles the limited ceilings of
    the next `full` read 1-2.6% lower, and one rested window opened 14% under the clock (2026-11-29-ab-s44)."""
    try:
        from hwprobe.timing.settle import settle
    except ImportError:
        return None
    try:
        if not cool:
            return settle(ctx.sampler, max_wait_s=0.0)
        return settle(ctx.sampler, max_wait_s=0.5) if ctx.quick else settle(ctx.sampler, **COOL_SETTLE)
    except Exception:
        return None


def _unit_evidence(ctx, m: Measurement) -> None:
    """FP64: the unit from a measured bound where there is one: a rate above the DFMA peak at the max clock can
    only come from DMMA tensor cores. Otherwise the unit stays the architecture's, marked inferred."""
    theory = getattr(ctx, "theory", None)
    if theory is None:
        try:
            from hwprobe.specs.live import device_theory

            theory = device_theory(ctx.device)
        except Exception:
            theory = None
    t = theory.compute("fp64", ExecUnit.CUDA_CORE, None) if theory is not None else None
    dfma = t.at_max_clock if t else None
    if dfma and m.value > 1.03 * dfma:
        m.exec_unit = ExecUnit.TENSOR_CORE
        m.params["exec_unit_evidence"] = (f"measured: {m.value / 1e12:.1f} TFLOP/s > 1.03 x the DFMA peak at the "
                                          f"max clock ({dfma / 1e12:.1f}): only DMMA tensor cores reach it")
    else:
        m.params[K.EXEC_UNIT_INFERRED] = True
        m.params["exec_unit_evidence"] = ("inferred from the architecture: the rate does not exceed the DFMA peak"
                                          + (f" ({dfma / 1e12:.1f} TFLOP/s)" if dfma else ""))


# --- probes ----------------------------------------------------------------------------------------------
def _unit_for(ctx, v: gc.GemmVariant) -> tuple[str, str]:
    if v.precision == "fp64":
        return gc.fp64_exec_unit(ctx.device.cc_major, ctx.device.cc_minor)
    if v.precision == "fp32":
        return ExecUnit.CUDA_CORE, FP32_UNIT_NOTE
    return v.exec_unit, ""


# Before FP64's top size: within 2 C of the run's coolest reading (the usual rule: 5 C) and back at idle power, for
# at most 8 s. Its peer, cupy.matmul at 8192^3 run alone on a cool H200, read 62.2 TFLOP/s where the FP64 ceiling,
# taken after the tensor-core GEMMs behind the usual rule, read 60.1 (issue 33); 8192^3 DGEMM meets the 700 W cap
# within its warm-up (1740 MHz, 57 TFLOP/s in the 2026-11-26 full run), so its clock depends on how cool it starts.
# Idle power is the usual rule's (1.5x the lowest seen): at 1.2x this settle waited its full 8 s in every full run
# (an H200 idles at 119 W after work against 93 W at the start of the run; 35 C against 34 + 2, met at once).
COOL_SETTLE = {"max_wait_s": 8.0, "temp_margin_c": 2.0, "power_factor": 1.5}


# Ceilings run before the GPU heats up and the 700 W cap lowers the clock. FP64 first (issue 33): its library
# ceiling must be at least what a plain cupy.matmul reads on a cool GPU, and its top size runs into the cap
# within its warm-up; its top-size phase is short (gemmEx, cupy.matmul, gemmEx: ~1 s). Then INT8: it draws the
# most power per clock, so it loses the most to a hot card (run 2: 1440 MHz when it ran after FP16/BF16); each
# precision records the state it starts from (only FP64 waits for it: _settle).
PRIORITY = (Precision.FP64, Precision.INT8, Precision.FP16, Precision.BF16, Precision.TF32, Precision.FP32)
# variants also tried above the sweep (their keys, not precisions)
BIG_SIZE_KEYS = ("fp16.f32acc", "fp16.f16acc", "bf16", "int8.tn", "tf32")   # not vocab
LT_PRECISIONS = (Precision.FP16, Precision.BF16, Precision.INT8, Precision.TF32)    # cuBLASLt paths (gpu_fp8)
GEMM_PRECISIONS = (Precision.FP64, Precision.FP32, Precision.TF32, Precision.FP16, Precision.BF16, Precision.INT8)
ALIGN_PRECISIONS = (Precision.FP16, Precision.BF16, Precision.INT8, Precision.TF32, Precision.FP8)
NOT_CEILINGS = ("int8.nn",)     # variant keys whose points give no ceiling (the pitfall's layout): never rested
# A group's fastest sample over its best median by more than this: its window lost the clock (to_rest). Ten
# clean samples of one window spread under 0.5% (the ceiling rule's 0.3% noise target); a limiter's drop, 3-17%
CLOCK_LOST_MARGIN = 0.01


def _ahead(dev) -> None:
    """gpu.gemm's run-start hook: PyTorch and nvmath's linalg imported for its cuBLASLt and torch.matmul points
    (cublaslt.ahead, which never raises), and the checks' float64 module compiled (f64_copy)."""
    cublaslt.ahead(dev)
    f64_copy.ahead(dev)


@probe(name="gpu.gemm", target="gpu", family="compute",
       summary="cuBLAS gemmEx and cuBLASLt ceilings per precision (best over sizes, layouts, algos), size sweep, "
               "INT8 NN/TN pitfall, cupy/torch matmul beside",
       precisions=GEMM_PRECISIONS, ahead=_ahead)
def run_gemm(ctx, precisions=GEMM_PRECISIONS, sizes=(1024, 2048, 4096, 8192),
             check_rows=16, frameworks=("cupy", "torch"), layouts=("NN", "TN"), tensor_op=True, big_sizes=(16384,),
             lt_sizes=(8192, 16384), int8_sizes=(6144, 12288)):
    """Phase 1, per precision in PRIORITY order: the top sweep size, the other layouts/algos there, the best
    configuration at ``big_sizes`` (INT8 also at ``int8_sizes``: its rate/power optimum can sit below the
    largest size), and cuBLASLt (autotuned) at ``lt_sizes`` (+ ``int8_sizes`` for INT8); cupy/torch matmul
    right after FP16/BF16. Phase 2: the rest of the size sweep (the efficiency curve). Then the configurations
    whose windows lost the clock, rested; the ceilings; the pitfall.
    """
    env = cublas_env(ctx)
    plan = gc.plan_sizes(sizes, ctx.quick)
    top, big = gc.plan_top(plan, big_sizes, ctx.quick)
    int8_extra = gc.int8_extra_sizes(int8_sizes, plan, big, ctx.quick)
    order = sorted(precisions, key=lambda p: PRIORITY.index(p) if p in PRIORITY else len(PRIORITY))
    points: dict[str, list[Measurement]] = {}    # variant key -> all its points (sweep, layouts, algos, sizes)
    sweeps: dict[str, list[Measurement]] = {}    # variant key -> its size sweep (own layout, default algo)
    rates: dict[str, dict[int, float]] = {}      # variant key -> sweep rate per size (the pitfall)
    lt: dict[str, list[Measurement]] = {}
    comparisons: dict[str, Measurement] = {}
    # start: the GPU's state per precision
    fw_after, start = [p for p in order if p in (Precision.FP16, Precision.BF16)][-1:], {}
    again: dict[str, Callable[[str], Measurement]] = {}    # point metric -> its configuration measured rested

    def gemm_point(v: gc.GemmVariant, n: int, metric: str, rest_s: float = 0.0) -> Measurement:
        unit, unit_note = _unit_for(ctx, v)
        ctx.log(f"cuBLAS {v.key} {v.layout} {gc.ALGO_NAMES[v.algo]} {n}^3" + (" rested" if rest_s else ""))
        m = measure_gemm(ctx, env, v, n, n, n, metric=metric, kind=Kind.SWEEP, rows=check_rows, exec_unit=unit,
                         notes=(unit_note,) if unit_note else (), rest_s=rest_s,
                         extra={K.START_STATE: start["state"]} if start.get("state") and not rest_s else None)
        if v.precision == "fp64":
            _unit_evidence(ctx, m)
        return m

    def run_point(v: gc.GemmVariant, n: int, metric: str, sweep: bool):
        try:
            m = gemm_point(v, n, metric)
        except Exception as e:
            return failure(ctx, metric, f"cuBLAS {v.key} {v.layout} {n}^3", e, precision=v.precision,
                           path=Path.LIBRARY), None
        again[metric] = lambda name, v=v, n=n: gemm_point(v, n, name, rest_s=REST_S)
        if v.key == "int8.nn":    # the kernel's name where it was read, else the rate against TN (measured first)
            m.exec_unit, note, inferred = gc.kernel_unit(
                m.params.get(K.KERNEL_TENSOR_CORE), m.params.get(K.KERNEL_EVIDENCE, ""),
                gc.int8_layout_exec_unit(m.value, rates.get("int8.tn", {}).get(n)))
            m.notes.append(note)
            m.params[K.EXEC_UNIT_INFERRED] = inferred
        points.setdefault(v.key, []).append(m)
        if sweep:
            sweeps.setdefault(v.key, []).append(m)
            rates.setdefault(v.key, {})[n] = m.value
        return m, v

    for prec in order:
        start["state"] = _settle(ctx, cool=prec == Precision.FP64)
        for v in gc.GEMM_VARIANTS[prec]:
            tried = [run_point(v, top, f"{v.metric}.n{top}", sweep=True)]
            tried += [run_point(c, top, c.candidate_metric(top), sweep=False)
                      for c in gc.gemm_candidates(v, layouts, tensor_op)]
            if prec == "fp64" and "cupy" in (frameworks or ()):   # gemmEx, cupy.matmul, gemmEx again (A-B-A)
                yield (comparisons.setdefault("fp64", _cupy_fp64(ctx, env, top, check_rows)))
                tried.append(run_point(v, top, f"{v.metric}.again.n{top}", sweep=False))
            yield from (m for m, _ in tried)
            ran = [(m, c) for m, c in tried if c is not None and m.valid]
            more = (int8_extra if v.key == "int8.tn" else []) + (big if v.key in BIG_SIZE_KEYS else [])
            if more and ran:
                best = max(ran, key=lambda t: t[0].value)[1]
                for n in more:      # the variant's own configuration keeps its sweep name and joins the curve
                    own = best == v
                    yield run_point(best, n, f"{v.metric}.n{n}" if own else best.candidate_metric(n), sweep=own)[0]
        if prec in LT_PRECISIONS:
            lt_n = gc.lt_plan(tuple(lt_sizes) + (tuple(int8_extra) if prec == "int8" else ()), plan, ctx.quick)
            yield from _lt(ctx, env, prec, lt_n, check_rows, lt, again)
        if prec in fw_after and frameworks:
            yield from _framework_points(ctx, env, top, check_rows, tuple(frameworks))

    yield from _phase2(ctx, plan, order, power_capped(sweeps), start, run_point)
    yield from _rested(ctx, {**{k: pts for k, pts in points.items() if k not in NOT_CEILINGS}, **lt}, again)
    yield from _ceilings(order, points, sweeps, lt, comparisons)
    yield from _pitfall(ctx, rates)


def _lt(ctx, env: CublasEnv, prec: str, sizes: list[int], rows: int, lt: dict[str, list[Measurement]],
        again: dict[str, Callable[[str], Measurement]]):
    """One precision's cuBLASLt points, each grouped by configuration (its metric less ".n<size>") into ``lt``
    and kept in ``again`` as a configuration that can run once more, rested."""
    from hwprobe.probes.compute.cublaslt import lt_point, lt_points

    for m in lt_points(ctx, env, prec, sizes, rows):
        if m.kind != Kind.INFO:
            stem = m.metric.rsplit(".n", 1)[0]
            lt.setdefault(stem, []).append(m)
            again[m.metric] = lambda name, stem=stem, n=m.params["n"]: lt_point(ctx, env, stem, n, rows, metric=name,
                                                                               rest_s=REST_S)
        yield m


def _phase2(ctx, plan, order, capped: set[str], start: dict, run_point):
    """The efficiency curve below the top size, each precision's sizes from the largest down, with no settles: a
    power-capped precision's smaller size may give its ceiling (on an H200 FP64's n4096 read 61.6 TFLOP/s against
    57.7 at n8192), and where its window met the limiter it is measured again rested (_rested). Each point of a
    power-capped precision records the state it started from (issue 23: an FP64 ceiling taken from a hot GPU
    carried the precision's first, cool, start state)."""
    for prec in order:
        for n in sorted(plan, reverse=True)[1:]:
            start["state"] = _settle(ctx) if prec in capped else None
            for v in gc.GEMM_VARIANTS[prec]:
                yield run_point(v, n, f"{v.metric}.n{n}", sweep=True)[0]


def _rested(ctx, groups: dict[str, list[Measurement]], again: dict[str, Callable[[str], Measurement]]):
    """Each ceiling's best configuration where the power limiter acted on its candidates (to_rest), measured once
    more after a rest of REST_S under the rested rule, as gpu.gemm_fp8 measures every size: the library's burst.
    Under the 700 W cap a window of ten samples catches the limiter wherever it acts: an H200's gemmEx TF32 at 8192
    ran ~415 TFLOP/s, then 345-360, and its windows' medians read 378-415 across runs
    (profiles/h200-sxm/2026-11-29-ab-s42); a window that ran flat a level lower reads under the burst too (BF16
    cuBLASLt 824.5 where rested it read 832.5 and 832.8; profiles/h200-sxm/2026-11-29-ab-s43). The rested point joins
    its group as a candidate (its metric ``.rested.n<size>``), ~0.4 s each."""
    for key, pts in groups.items():
        m = to_rest(pts)
        if m is None or m.metric not in again:
            continue
        stem, _, size = m.metric.rpartition(".n")
        metric = f"{stem}.rested.n{size}"
        try:
            r = again[m.metric](metric)
        except Exception as e:
            yield failure(ctx, metric, f"{key} {size}^3 rested", e, precision=m.precision, path=Path.LIBRARY)
            continue
        r.notes.append(f"measured again after a {REST_S:g}-s rest: {m.metric}'s window ran at most "
                       f"{m.best / 1e12:.1f} T{r.unit} against a median of {m.value / 1e12:.1f}")
        pts.append(r)
        yield r


def to_rest(pts: list[Measurement], margin: float = CLOCK_LOST_MARGIN) -> Measurement | None:
    """The point whose fastest sample is the group's fastest, where the power limiter acted on its window (limited)
    or that sample beats every valid point's median by over ``margin`` (the window lost the clock where neither NVML
    nor the sentinel saw it): the group's ceiling is a window's luck until it is measured rested. None where the
    best window ran clear of the limiter (on an H200, FP32's CUDA-core GEMM at 8192: 1980 MHz throughout)."""
    valid = [p for p in pts if p.valid and p.best]
    if not valid:
        return None
    top = max(valid, key=lambda p: p.best)
    lost = top.best > (1 + margin) * max(p.value for p in valid)
    return top if lost or limited(top) else None


def limited(m: Measurement) -> bool:
    """Whether the power limiter acted on a point's window: NVML named the power cap, or the sentinel clock fell by
    more than the report's CLOCK_AGREEMENT (3%) inside it (the limiter acts within ~50 ms, where NVML's samples may
    see nothing)."""
    from hwprobe.judge import CLOCK_AGREEMENT
    from hwprobe.profile import window_edges, window_fall

    fall = window_fall(window_edges(m.params))
    return nvml_capped(m) or (fall is not None and fall < -CLOCK_AGREEMENT)


def power_capped(sweeps: dict[str, list[Measurement]]) -> set[str]:
    """Precisions whose top-size points ran against the power cap (sw_power_cap among their throttle reasons)."""
    return {m.precision for pts in sweeps.values() for m in pts if nvml_capped(m)}


def nvml_capped(m: Measurement) -> bool:
    """Whether NVML named the power cap among a point's throttle reasons over its window."""
    return bool(m.clocks and "sw_power_cap" in (m.clocks.throttle_reasons or []))


def start_note(m: Measurement) -> str | None:
    """Where a ceiling's point started from and where it ended: a power-capped figure depends on both."""
    st = m.params.get(K.START_STATE) or {}
    end = m.clocks.temp_c if m.clocks else None
    if not st and end is None:
        return None
    how = "settled" if st.get("settled") else "not settled: the GPU was still warm"
    head = (f"started at {st['temp_c']:.0f} C ({how})" if st.get("temp_c") is not None
            else f"started after a {m.params['rest_s']:g}-s rest" if m.params.get("rest_s")
            else "start state not read")
    return head + (f", reached {end:.0f} C" if end is not None else "")


def _ceilings(order, points: dict, sweeps: dict, lt: dict, comparisons: dict):
    """Each variant's ceiling (gemmEx over sizes, layouts, algos) and each cuBLASLt configuration's."""
    for prec in order:
        for v in gc.GEMM_VARIANTS[prec]:
            if points.get(v.key):
                yield _ceiling(points[v.key], v, sweeps.get(v.key), comparisons.get(prec))
        for stem, pts in lt.items():
            if stem.startswith(f"{prec}."):
                yield ceiling_of(pts, stem)


def _ceiling(points: list[Measurement], v: gc.GemmVariant, sweep, comparison: Measurement | None) -> Measurement:
    """The best point of a variant as its ceiling; INT8 NN, whose unit is inferred from its rate, stays a sweep
    record (never the profile's int8/cuda_core slot); FP64 says how it compares with cupy.matmul."""
    c = ceiling_of(points, v.metric, curve_points=sweep)
    if nvml_capped(c) and (note := start_note(c)):
        again = [p for p in points if ".again." in p.metric and p.valid]
        c.notes.append(f"power-capped ceiling: {note}" + (
            f"; the same point run again right after (a warmer GPU): {again[0].value / 1e12:.1f} TFLOP/s at "
            f"{again[0].clocks.sm_mhz:.0f} MHz" if again and again[0].clocks and again[0].clocks.sm_mhz else ""))
    if v.key == "int8.nn":      # the pitfall's layout: a comparison (the INT8 pitfall finding), never a ceiling
        c.kind = "sweep"
        c.notes.append("not a ceiling: the INT8 NN layout is the pitfall's slow path"
                       + (" (its unit inferred from the rate)" if c.params.get(K.EXEC_UNIT_INFERRED) else ""))
    if comparison is not None and comparison.kind != "info" and comparison.value > 0:
        c.params["vs_cupy_matmul"] = {"cupy_matmul": comparison.value, "ratio": c.value / comparison.value,
                                      "cupy_sm_mhz": comparison.clocks.sm_mhz if comparison.clocks else None}
        c.notes.append(f"{c.value / comparison.value:.3f}x cupy.matmul FP64 at the same size in the same run "
                       f"({comparison.value / 1e12:.1f} TFLOP/s)")
    return c


def _pitfall(ctx, rates: dict[str, dict[int, float]]):
    fp16 = rates.get("fp16.f32acc", {})
    int8 = {key.split(".")[1]: r for key, r in rates.items() if key.startswith("int8.")}
    common = sorted(set(fp16).intersection(*[set(r) for r in int8.values()])) if int8 else []
    if not common:
        return
    n = common[-1]
    found, text, details = gc.pitfall_int8_vs_fp16({lay: r[n] for lay, r in int8.items()}, fp16[n], n)
    worst = min(r[n] for r in int8.values())
    yield ctx.derived("pitfall.int8_vs_fp16", fp16[n] / worst if worst > 0 else 0.0, unit="x", kind=Kind.INFO,
                      precision="int8", path=Path.LIBRARY, params={**details, "found": found}, notes=[text])


ALIGN_VARIANTS = {"fp16": "fp16.f32acc", "bf16": "bf16", "int8": "int8.tn", "tf32": "tf32"}


@probe(name="gpu.gemm_align", target="gpu", family="compute",
       summary="GEMM throughput at sizes aligned to 8/16/32/64 vs the same size + 1 (tensor-core alignment rule)",
       precisions=ALIGN_PRECISIONS, ahead=f64_copy.ahead)
def run_align(ctx, precisions=ALIGN_PRECISIONS, base=4096, aligns=(8, 16, 32, 64), check_rows=8):
    env = cublas_env(ctx)
    plan = gc.alignment_sizes(base, aligns[:1] if ctx.quick else aligns)
    for prec in precisions:
        rows = []
        if prec == "fp8":
            from hwprobe.probes.compute.cublaslt import fp8_align_points

            gen = fp8_align_points(ctx, plan, check_rows)
        else:
            gen = _align_points(ctx, env, gc.variant(ALIGN_VARIANTS[prec]), plan, check_rows)
        for m, row in gen:
            yield m
            if row is not None:
                rows.append(row)
        if rows:
            worst, text = gc.alignment_finding(prec, rows)
            yield ctx.derived(f"align.{prec}.slowdown", worst or 0.0, unit="x", kind=Kind.INFO, precision=prec,
                              path=Path.LIBRARY, params={K.POINTS: rows}, notes=[text])


def _align_points(ctx, env: CublasEnv, v: gc.GemmVariant, plan, rows_checked: int):
    """Yield (measurement, row) per aligned/odd pair; row is None when the aligned size itself failed."""
    for align, n, odd in plan:
        try:
            ma = measure_gemm(ctx, env, v, n, n, n, metric=f"align.{v.precision}.{n}", kind=Kind.SWEEP,
                              rows=rows_checked, exec_unit=v.exec_unit, extra={"align": align})
        except Exception as e:
            yield failure(ctx, f"align.{v.precision}.{n}", f"cuBLAS {v.key} {n}^3", e, precision=v.precision), None
            continue
        yield ma, None
        row = {"align": align, "n": n, "rate": ma.value, "odd_rate": None}
        try:
            mo = measure_gemm(ctx, env, v, odd, odd, odd, metric=f"align.{v.precision}.{odd}", kind=Kind.SWEEP,
                              rows=rows_checked, exec_unit=v.exec_unit, extra={"align": 1})
            row["odd_rate"] = mo.value
            yield mo, row
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            yield failure(ctx, f"align.{v.precision}.{odd}", f"cuBLAS {v.key} {odd}^3 (odd size)", e,
                          precision=v.precision, path=Path.LIBRARY), row
