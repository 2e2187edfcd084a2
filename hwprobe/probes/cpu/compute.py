"""CPU peak FLOP/s: independent vector FMA chains on every core (numba, all threads).

The chains are written as explicit LLVM vectors (``<8 x double>`` on AVX-512) through a numba intrinsic,
so the width does not depend on LLVM's auto-vectorizer, which packs nothing here (scalar chains stay
scalar) and prefers 256-bit vectors on Intel server parts. Each thread runs ``chains`` independent
vector chains ``x = x * a + b``: at least FMA units x FMA latency of them, so the pipes never wait.
The compiled assembly is inspected and what it shows (instruction, register width) goes into the notes.
"""

from __future__ import annotations

import math
import platform
import re
from functools import cache

import numpy as np

from hwprobe import keys as K
from hwprobe.errors import InputError, Skip
from hwprobe.probes.base import probe
from hwprobe.vocab import ExecUnit, Kind, Path, Precision

MAX_RTOL = 1e-4         # the check's tolerance may not be looser than this

# Replaced by numba's objects when the kernel is built (numba is imported lazily, not at registry time).
prange = range
_fma_chains = None


def _fma_kernel(n, a, b, x0, out):
    for t in prange(out.shape[0]):
        _fma_chains(n, a, b, x0[t], out[t])


def _make_fma_chains(chains: int, use_fma: bool):
    """A numba intrinsic: run ``n`` steps of x = x*a + b on the row ``x0`` held as vectors, write ``out``.

    ``a`` and ``b`` are tuples with one value per vector lane: their length sets the vector width, so
    each width is its own (cached) compiled signature. The chains stay in registers as loop phis.
    """
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def fma_chains(typingctx, n, a, b, x0, out):
        if not (isinstance(a, types.UniTuple) and isinstance(x0, types.Array) and a.dtype == x0.dtype):
            return None
        lanes, dtype = a.count, a.dtype

        def codegen(context, builder, sig, args):
            n_v, a_v, b_v, x0_v, out_v = args
            ety = context.get_value_type(dtype)
            vty = ir.VectorType(ety, lanes)
            i64 = ir.IntType(64)
            src = context.make_array(sig.args[3])(context, builder, x0_v)
            dst = context.make_array(sig.args[4])(context, builder, out_v)
            nvec = builder.udiv(builder.extract_value(src.shape, 0), ir.Constant(i64, lanes))
            psrc = builder.bitcast(src.data, vty.as_pointer())
            pdst = builder.bitcast(dst.data, vty.as_pointer())

            def vec(tup):
                v = ir.Constant(vty, ir.Undefined)
                for j in range(lanes):
                    v = builder.insert_element(v, builder.extract_value(tup, j), ir.Constant(ir.IntType(32), j))
                return v

            va, vb = vec(a_v), vec(b_v)
            fma = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(vty, [vty] * 3), f"llvm.fma.v{lanes}f{dtype.bitwidth}")
            # The chain count is a compile-time constant: a row of another length is left untouched.
            with cgutils.if_likely(builder, builder.icmp_unsigned("==", nvec, ir.Constant(i64, chains))):
                init = [builder.load(builder.gep(psrc, [ir.Constant(i64, k)]), align=dtype.bitwidth // 8)
                        for k in range(chains)]
                pre = builder.block
                loop = builder.append_basic_block("fma.loop")
                done = builder.append_basic_block("fma.done")
                builder.cbranch(builder.icmp_signed(">", n_v, ir.Constant(n_v.type, 0)), loop, done)
                builder.position_at_end(loop)
                i = builder.phi(n_v.type)
                xs = [builder.phi(vty) for _ in range(chains)]
                if use_fma:
                    new = [builder.call(fma, [x, va, vb]) for x in xs]
                else:                      # no FMA unit (AVX1, SSE2): a multiply and an add, still 2 FLOPs
                    new = [builder.fadd(builder.fmul(x, va), vb) for x in xs]
                i_next = builder.add(i, ir.Constant(n_v.type, 1))
                i.add_incoming(ir.Constant(n_v.type, 0), pre)
                i.add_incoming(i_next, loop)
                for x, x_init, x_new in zip(xs, init, new, strict=True):
                    x.add_incoming(x_init, pre)
                    x.add_incoming(x_new, loop)
                builder.cbranch(builder.icmp_signed("<", i_next, n_v), loop, done)
                builder.position_at_end(done)
                results = [builder.phi(vty) for _ in range(chains)]     # all phis first, then the stores
                for k, (res, x_init, x_new) in enumerate(zip(results, init, new, strict=True)):
                    res.add_incoming(x_init, pre)
                    res.add_incoming(x_new, loop)
                    builder.store(res, builder.gep(pdst, [ir.Constant(i64, k)]), align=dtype.bitwidth // 8)
            return context.get_dummy_value()

        return types.void(n, a, b, x0, out), codegen

    return fma_chains


@cache
def _kernel():
    """The kernel and its plan (vector bits, chains, FMA) for the compile target.

    Not cached on disk: numba cannot show the assembly of cached code, and the assembly is the evidence
    of the vector width and the FMA instruction. Compiling both precisions takes about 1.5 s.
    """
    import numba

    global prange, _fma_chains
    bits, chains, use_fma = vector_plan(llvm_features(), platform.machine().lower())
    prange = numba.prange
    _fma_chains = _make_fma_chains(chains, use_fma)
    return numba.njit(parallel=True, cache=False)(_fma_kernel), bits, chains, use_fma


def llvm_features() -> set[str]:
    """The ISA features numba compiles for ('+avx512f', ...): the host's, unless NUMBA_CPU_FEATURES says."""
    import llvmlite.binding as ll
    from numba.core import config

    text = config.CPU_FEATURES if config.CPU_FEATURES is not None else ll.get_host_cpu_features().flatten()
    return {f[1:] for f in text.split(",") if f.startswith("+")}


def vector_plan(features: set[str], arch: str) -> tuple[int, int, bool]:
    """(vector bits, chains per thread, FMA available) for the compile target.

    Chains cover FMA units x latency (2 x 4-5 cycles) with room to spare, within the register file:
    32 vector registers on AVX-512 and aarch64, 16 on AVX2/SSE (12 chains + a and b).
    """
    if arch in ("x86_64", "amd64", "i686", "i386", "x86"):
        if "avx512f" in features:
            return 512, 16, "fma" in features
        if "avx" in features:
            return 256, 12, "fma" in features
        return 128, 12, False
    return 128, 16, True


def asm_evidence(asm: str) -> dict:
    """FMA (or mul/add) instructions in the kernel's assembly, by register width."""
    x86 = re.findall(r"\b(v?fmadd\w*p[sd]|v?mulp[sd]|v?addp[sd])\s+[^\n]*?%(zmm|ymm|xmm)", asm)
    arm = re.findall(r"\b(fmla|fmul|fadd)\s+v\d+\.(2d|4s)", asm)
    counts: dict[str, int] = {}
    for ins, reg in x86 + arm:
        key = f"{ins} {reg}"
        counts[key] = counts.get(key, 0) + 1
    width = {"zmm": 512, "ymm": 256, "xmm": 128, "2d": 128, "4s": 128}
    widest = max((width[reg] for _, reg in x86 + arm), default=0)
    return {"counts": counts, "widest_bits": widest}


def closed_form(x0: np.ndarray, a: float, b: float, n: int) -> np.ndarray:
    """x_n for x_{k+1} = a x_k + b (a != 1): c + a^n (x0 - c), c = b / (1 - a), in float64."""
    c = b / (1.0 - a)
    an = math.exp(n * math.log1p(-(1.0 - a)))
    return c + an * (x0.astype(np.float64) - c)


def chain_constants(n: int, dtype) -> tuple[float, float, float]:
    """a = 1 - k, b = k (fixed point 1) with k a power of two, and the check's relative tolerance.

    Each rounding error is damped by a per step, so the accumulated error stays under ~eps/k; k near 1/n
    makes a^n ~ 1/e, so the result depends on every iteration having run (FP64). FP32 cannot have both
    (k >= 2^-7 for a 1e-4 tolerance): its chains converge to the fixed point and the check is on that.
    """
    eps = float(np.finfo(dtype).eps)
    s = min(max(1, round(math.log2(max(n, 2)))), math.floor(math.log2(MAX_RTOL / (4 * eps))))
    k = 2.0 ** -s
    return 1.0 - k, k, 4 * eps / k


@probe(name="cpu.fma", target="cpu", family="compute", precisions=(Precision.FP64, Precision.FP32),
       summary="Peak FP64/FP32 FLOP/s on all cores: independent vector FMA chains (numba, explicit vectors)",
       ranges={"threads": (1, 4096)})
def run(ctx, precisions=(Precision.FP64, Precision.FP32), threads: int | None = None):
    try:
        import numba
    except ImportError as e:
        raise Skip(f"numba is not installed: {e}") from None

    nthreads = int(threads or numba.config.NUMBA_NUM_THREADS)
    if not 1 <= nthreads <= numba.config.NUMBA_NUM_THREADS:
        raise InputError(f"threads={nthreads}: numba allows 1..{numba.config.NUMBA_NUM_THREADS}")
    kern, bits, chains, use_fma = _kernel()
    prev_threads = numba.get_num_threads()
    numba.set_num_threads(nthreads)
    try:
        for prec in precisions:
            yield _measure(ctx, kern, prec, nthreads, bits, chains, use_fma)
    finally:
        numba.set_num_threads(prev_threads)


def _measure(ctx, kern, prec: str, nthreads: int, bits: int, chains: int, use_fma: bool):
    import numba

    from hwprobe.timing import iterations_for, policy

    dtype = {"fp64": np.float64, "fp32": np.float32}[prec]
    lanes = bits // (8 * np.dtype(dtype).itemsize)
    idx = np.arange(nthreads * chains * lanes).reshape(nthreads, chains * lanes)
    x0 = (0.5 + (idx % 97) / 97.0).astype(dtype)        # distinct starts in [0.5, 1.5): no denormals
    out = np.full_like(x0, np.nan)

    def call(n, a, b):
        kern(n, (dtype(a),) * lanes, (dtype(b),) * lanes, x0, out)

    ctx.log(f"cpu.fma {prec}: compile/calibrate ({nthreads} threads x {chains} chains x {bits}-bit)")
    call(1 << 10, 0.5, 0.5)                              # compile (or load from the cache): untimed
    n = 1 << 16
    while True:
        t = _time_once(call, n, 0.5, 0.5)
        if t > 0.01 or n >= 1 << 40:
            break
        n *= 8
    n = iterations_for(t / n, policy.rule("cpu_quick" if ctx.quick else "cpu_ceiling").sample_s)
    a, b, rtol = chain_constants(n, dtype)

    def check():
        want = closed_form(x0, a, b, n)
        got = out.astype(np.float64)
        if not np.all(np.isfinite(got)):
            raise AssertionError("non-finite values in the FMA chain output")
        err = float(np.max(np.abs(got - want) / np.abs(want)))
        if err > rtol:
            raise AssertionError(f"FMA chains differ from the closed form: max rel err {err:.2e} > {rtol:.1e}")

    sig = next(sg for sg in kern.signatures if sg[3].dtype == numba.from_dtype(np.dtype(dtype)))
    ev = asm_evidence(kern.inspect_asm(sig))
    seen = ", ".join(f"{v} x {k}" for k, v in sorted(ev["counts"].items())) or "no FMA/mul seen"
    notes = [f"asm: {seen} (widest {ev['widest_bits']}-bit, planned {bits}-bit)"]
    if ev["widest_bits"] and ev["widest_bits"] < bits:
        notes.append(f"LLVM split the {bits}-bit vectors into {ev['widest_bits']}-bit instructions")
    if not use_fma:
        notes.append("no FMA in the target ISA: a multiply and an add per step (still 2 FLOPs)")
    from hwprobe.device.cpu import measure_mhz

    around = [measure_mhz()]            # the core clock right before and right after the timed window
    m = ctx.measure(
        f"{prec}.cpu.fma", lambda: call(n, a, b), work=2.0 * nthreads * chains * lanes * n, unit="FLOP/s",
        kind=Kind.COMPUTE, check=check, warmup=1, precision=prec, exec_unit=ExecUnit.CPU, path=Path.INSTRUCTION,
        params={"threads": nthreads, "chains": chains, "lanes": lanes, "vector_bits": bits, "iterations": n,
                "fma": use_fma, "asm_widest_bits": ev["widest_bits"]},
        notes=notes,
    )
    around.append(measure_mhz())
    if all(around):
        m.params[K.CPU_MHZ_AROUND] = [round(x, 1) for x in around]
        if getattr(ctx.device, "model", None):
            from hwprobe.device.cpu import raise_boot_mhz

            raise_boot_mhz(ctx.device.model, max(around))
    return m


def _time_once(fn, *args) -> float:
    import time

    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0
