"""gpu.fma: CUDA-core multiply-add throughput per precision and instruction (DFMA, FFMA, HFMA2, IMAD, IDP).

Each thread runs many independent chains ``x <- op(x, p1, p2)`` (hwprobe/kernels/cuda_core.cu: one PTX
instruction per step, unrolled, with a runtime trip count). The probe searches chains x occupancy per
device, times the best configuration, checks every output element against a host replay of the same
recurrence (bit-exact for integers, fp32, fp16 and bf16), and disassembles the kernel to show which SASS
instruction ran: a loop whose SASS is not the intended instruction count invalidates the figure. What the
check proves differs by type: integer chains (LCG, dot products) give the exact step count of the timed
launch; float chains contract to a fixed point (1.5), so the timed launch's check shows every thread ran at
least the steps the replay needs to settle, and a one-trip launch checks the count exactly. Experiment
variants (pipe-pure HFMA2, HFMA2+FFMA, IMAD+FFMA) report warp-instructions
per clock per SM sub-partition, which tells whether two instructions share an issue pipe.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hwprobe import keys as K
from hwprobe.errors import Skip, VerificationError
from hwprobe.flags import Code, Flag, has
from hwprobe.kernels import sass
from hwprobe.measurement import Measurement
from hwprobe.probes.base import ProbeContext, probe
from hwprobe.probes.compute import launch_search as S
from hwprobe.timing import time_cuda_once
from hwprobe.timing.hold import MODULE as HOLD_MODULE
from hwprobe.timing.hold import StreamHold
from hwprobe.vocab import ExecUnit, Kind, Path, Precision

KERNEL_FILE = "cuda_core.cu"
BODY = 512                 # instructions per loop trip per thread: loop overhead (3-4 instr) < 1%
MASK32 = 0xFFFFFFFF
MAX_ITERS = (1 << 31) - 1  # the kernel's trip count is an int

# Float recurrence x <- x * 15/16 + 3/32: contracts to 1.5 and stays normal in every format; p1, p2 and
# the start values (at most 4 significant bits) are exact in bf16, so the host replay is exact.
F_P1, F_P2 = 0.9375, 0.09375
# Integer recurrences: an LCG for IMAD (wraps, checked exactly); signed byte/half vectors for IDP.
I_P1, I_P2 = 1664525, 1013904223
DP_P1, DP_P2 = 0x7F80FF01, 0x05FD7F83
DP2_P1 = 0x80017FFF

SIGNIFICAND_BITS = {"f64": 53, "f32": 24, "f16": 11, "bf16": 8}


@dataclass(frozen=True)
class Op:
    """One instruction under test: its C++ struct in cuda_core.cu and everything the host needs about it."""

    struct: str                  # OpF32, ...
    precision: str
    instr: str                   # metric suffix
    fmt: str                     # f64 | f32 | f16 | bf16 | u32
    lanes: int                   # values per register (2 for f16x2 / bf16x2)
    ops_per_step: int            # FLOP or OP per thread-instruction; a multiply-add counts 2
    sass_re: str                 # full SASS opcodes that do this op
    sass_prefixes: tuple[str, ...]
    min_cc: tuple[int, int]
    recurrence: str              # fma | mad | dp4a | dp2a
    sass_per_step: float = 1.0   # SASS instructions per PTX step (0.5: ptxas pairs scalar fp16 into HFMA2)

    @property
    def unit(self) -> str:
        return "OP/s" if self.fmt == "u32" else "FLOP/s"

    @property
    def raw(self) -> np.dtype:
        width = {"f64": 8, "f32": 4}.get(self.fmt, 4 if self.lanes == 2 or self.fmt == "u32" else 2)
        return np.dtype(f"u{width}")


F64 = Op("OpF64", "fp64", "dfma", "f64", 1, 2, r"^DFMA", ("DFMA",), (5, 0), "fma")
F32 = Op("OpF32", "fp32", "ffma", "f32", 1, 2, r"^FFMA", ("FFMA",), (5, 0), "fma")
H2 = Op("OpH2", "fp16", "hfma2", "f16", 2, 4, r"^HFMA2(\.MMA)?$", ("HFMA2",), (5, 3), "fma")
B2 = Op("OpB2", "bf16", "hfma2", "bf16", 2, 4, r"^HFMA2(\.MMA)?\.BF16_V2$", ("HFMA2",), (8, 0), "fma")
H1 = Op("OpH1", "fp16", "hfma", "f16", 1, 2, r"^HFMA2(\.MMA)?$", ("HFMA2",), (5, 3), "fma", sass_per_step=0.5)
I32 = Op("OpI32", "int32", "imad", "u32", 1, 2, r"^IMAD$", ("IMAD",), (5, 0), "mad")
DP4A = Op("OpDP4A", "int8", "dp4a", "u32", 1, 8, r"^IDP\.4A", ("IDP.4A",), (6, 1), "dp4a")
DP2A = Op("OpDP2A", "int8", "dp2a", "u32", 1, 4, r"^IDP\.2A", ("IDP.2A",), (6, 1), "dp2a")


@dataclass(frozen=True)
class Family:
    """A module of kernels: op ``a`` alone, or ``a`` and ``b`` interleaved 1:1, at several chain counts."""

    metric: str
    a: Op
    chains: tuple[int, ...]
    b: Op | None = None
    default_chains: int = 8
    experiment: bool = False
    about: str = ""

    def options(self, body: int = BODY) -> tuple[str, ...]:
        if len(self.chains) > 6:
            raise ValueError("cuda_core.cu has six chain slots")
        opts = [f"-DHWP_A={self.a.struct}", f"-DHWP_B={self.b.struct if self.b else 'OpNone'}",
                f"-DHWP_MIX={1 if self.b else 0}", f"-DHWP_BODY={body}"]
        opts += [f"-DHWP_C{i}={c}" for i, c in enumerate(self.chains)]
        return tuple(opts)

    def unroll(self, chains: int, body: int = BODY) -> int:
        return body // (chains * (2 if self.b else 1))

    @property
    def ops(self) -> tuple[Op, ...]:
        return (self.a, self.b) if self.b else (self.a,)

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.precision for o in self.ops))

    @property
    def min_cc(self) -> tuple[int, int]:
        return max(o.min_cc for o in self.ops)

    def flops_per_trip(self, chains: int) -> int:
        """FLOP (or OP) per thread per loop trip."""
        u = self.unroll(chains)
        return sum(u * chains * o.ops_per_step for o in self.ops)

    def ptx_steps_per_trip(self, chains: int) -> dict[Op, int]:
        u = self.unroll(chains)
        return {o: u * chains for o in self.ops}


FAMILIES = (
    Family("fp64.cuda_core.dfma", F64, (4, 8, 16)),
    Family("fp32.cuda_core.ffma", F32, (4, 8, 16, 32)),
    Family("fp16.cuda_core.hfma2", H2, (4, 8, 16, 32)),
    Family("bf16.cuda_core.hfma2", B2, (4, 8, 16, 32)),
    Family("int32.cuda_core.imad", I32, (4, 8, 16)),
    Family("int8.cuda_core.dp4a", DP4A, (4, 8, 16)),
    Family("int8.cuda_core.dp2a", DP2A, (4, 8, 16)),
)
EXPERIMENTS = (
    Family("experiment.cuda_core.hfma2_fma_pipe", H1, (8, 16, 32), default_chains=16, experiment=True,
           about="scalar fp16 FMAs, paired by ptxas into plain HFMA2 (never HFMA2.MMA): the FMA pipe alone"),
    Family("experiment.cuda_core.hfma2_ffma_mix", H2, (4, 8, 16), b=F32, experiment=True,
           about="HFMA2 and FFMA interleaved 1:1: the sum of their rates shows whether they share a pipe"),
    Family("experiment.cuda_core.imad_ffma_mix", I32, (4, 8, 16), b=F32, experiment=True,
           about="IMAD and FFMA interleaved 1:1: 1 warp-instr/clk/SMSP together means they use separate pipes"),
)
PRECISIONS = (Precision.FP64, Precision.FP32, Precision.FP16, Precision.BF16, Precision.INT32, Precision.INT8)


# ----------------------------------------------------------------------------------------------------
# Host side: the recurrences, their exact replays, and the output check. Pure numpy, tested on the CPU.

def round_to_bits(x: np.ndarray, bits: int) -> np.ndarray:
    """Round float64 values to ``bits`` significant bits, to nearest even (normal range): one IEEE rounding."""
    m, e = np.frexp(np.asarray(x, dtype=np.float64))
    return np.ldexp(np.rint(np.ldexp(m, bits)), e - bits)


def start_values(op: Op, chains: int) -> np.ndarray:
    """Chain start values, shape (chains, lanes); ints hashed, floats 2^e x {1, 1.125, ..} with e = 12, 11, ..

    Large starts keep a chain moving for over 128 steps even in bf16 (x - 1.5 shrinks by 15/16 a step and
    rounding stalls it only near 1.5), so a one-trip launch still shows a wrong step count.
    """
    n = chains * op.lanes
    if op.fmt == "u32":
        k = np.arange(n, dtype=np.uint64)
        mult = 0x9E3779B9 if op.recurrence == "mad" else 1000003
        return ((k * mult + 17) & MASK32).reshape(chains, op.lanes)
    if n > 64:
        raise ValueError("start values are distinct for at most 64 lanes")
    k = np.arange(n)
    return np.ldexp(1.0 + (k // 13) / 8.0, 12 - k % 13).reshape(chains, op.lanes)


def scalars(op: Op) -> tuple[float | int, float | int]:
    return {"fma": (F_P1, F_P2), "mad": (I_P1, I_P2), "dp4a": (DP_P1, DP_P2), "dp2a": (DP2_P1, DP_P2)}[op.recurrence]


def to_bits(values: np.ndarray, op: Op) -> np.ndarray:
    """Values of shape (..., lanes) to raw registers of shape (...,) in ``op.raw``."""
    v = np.asarray(values)
    if op.fmt == "u32":
        return (v.astype(np.uint64) & MASK32).astype(np.uint32)[..., 0]
    if op.fmt == "f64":
        lanes = v.astype(np.float64).view(np.uint64)
    elif op.fmt == "f32":
        lanes = v.astype(np.float32).view(np.uint32)
    elif op.fmt == "f16":
        lanes = v.astype(np.float16).view(np.uint16)
    else:  # bf16: the top half of an fp32 whose low half is zero
        f32 = v.astype(np.float32).view(np.uint32)
        if np.any(f32 & 0xFFFF):
            raise ValueError("value not exact in bf16")
        lanes = (f32 >> 16).astype(np.uint16)
    if op.lanes == 1:
        return lanes[..., 0]
    return lanes[..., 0].astype(np.uint32) | (lanes[..., 1].astype(np.uint32) << 16)


def from_bits(raw: np.ndarray, op: Op) -> np.ndarray:
    """Raw registers (...,) to values (..., lanes): float64 for floats, int64 for u32."""
    r = np.asarray(raw)
    if op.fmt == "u32":
        return r.astype(np.uint32).astype(np.int64)[..., None]
    if op.fmt == "f64":
        return r.astype(np.uint64).view(np.float64)[..., None]
    if op.fmt == "f32":
        return r.astype(np.uint32).view(np.float32).astype(np.float64)[..., None]
    if op.lanes == 2:
        r = r.astype(np.uint32)
        halves = np.stack([r & 0xFFFF, r >> 16], axis=-1).astype(np.uint16)
    else:
        halves = r.astype(np.uint16)[..., None]
    if op.fmt == "f16":
        return halves.view(np.float16).astype(np.float64)
    return (halves.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def params(op: Op, chains: int) -> np.ndarray:
    """The kernel's parameter array: [p1, p2, x0_0, ..., x0_{chains-1}] as raw registers."""
    p1, p2 = scalars(op)
    lanes = np.full((2, op.lanes), 0, dtype=np.float64 if op.fmt != "u32" else np.uint64)
    lanes[0], lanes[1] = p1, p2
    return np.concatenate([to_bits(lanes, op), to_bits(start_values(op, chains), op)]).astype(op.raw)


def replay_fma(x0: np.ndarray, p1: float, p2: float, steps: int, bits: int | None) -> np.ndarray:
    """``steps`` rounds of x <- round(x * p1 + p2). With ``bits`` the product and sum are exact in float64 and
    rounded once, as a fused multiply-add does; without, float64 arithmetic (unfused). The map is monotone,
    so once no lane moves it never will: the loop stops there."""
    return replay_fma_steps(x0, p1, p2, steps, bits)[0]


def replay_fma_steps(x0: np.ndarray, p1: float, p2: float, steps: int, bits: int | None) -> tuple[np.ndarray, int]:
    """``replay_fma`` and the number of steps after which no lane moves any more (the fixed point)."""
    x = np.array(x0, dtype=np.float64)
    for i in range(steps):
        nxt = x * p1 + p2
        if bits is not None:
            nxt = round_to_bits(nxt, bits)
        if np.array_equal(nxt, x):
            return x, i
        x = nxt
    return x, steps


def what_is_checked(op: Op, chains: int, steps: int) -> str:
    """What the timed launch's check proves about ``steps`` steps of ``op`` (for the notes, precisely)."""
    if op.recurrence != "fma":
        return f"step count exact: every chain equals the closed form after {steps} steps"
    bits = None if op.fmt == "f64" else SIGNIFICAND_BITS[op.fmt]
    p1, p2 = scalars(op)
    _, settle = replay_fma_steps(start_values(op, chains), p1, p2, steps, bits)
    if settle >= steps:
        return f"step count exact: the chains still move after {steps} steps"
    return (f"fixed point: the chains settle after {settle} of {steps} steps, so this shows every thread ran at "
            f"least {settle} steps and wrote its own values, not the count; the one-trip launch checks the count")


def affine_power(a: int, b: int, n: int) -> tuple[int, int]:
    """(A, B) with f^n(x) = A x + B (mod 2^32) for f(x) = a x + b: exponentiation by squaring."""
    ra, rb = 1, 0
    ba, bb = a & MASK32, b & MASK32
    while n:
        if n & 1:
            ra, rb = (ba * ra) & MASK32, (ba * rb + bb) & MASK32
        ba, bb = (ba * ba) & MASK32, (ba * bb + bb) & MASK32
        n >>= 1
    return ra, rb


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def dot_increment(op: Op) -> int:
    """What one IDP instruction adds to its accumulator with the probe's operands (signed)."""
    p1, p2 = scalars(op)
    if op.recurrence == "dp4a":
        return sum(_signed(p1 >> (8 * i), 8) * _signed(p2 >> (8 * i), 8) for i in range(4))
    return sum(_signed(p1 >> (16 * i), 16) * _signed(p2 >> (8 * i), 8) for i in range(2))  # .lo: bytes 0, 1


def reference(op: Op, chains: int, steps: int) -> np.ndarray:
    """Expected raw output registers per chain, shape (chains,), after ``steps`` steps."""
    x0 = start_values(op, chains)
    p1, p2 = scalars(op)
    if op.recurrence == "fma":
        bits = None if op.fmt == "f64" else SIGNIFICAND_BITS[op.fmt]
        return to_bits(replay_fma(x0, p1, p2, steps, bits), op)
    if op.recurrence == "mad":
        a, b = affine_power(p1, p2, steps)
        out = (x0.astype(np.uint64) * np.uint64(a) + np.uint64(b)) & np.uint64(MASK32)
    else:
        inc = (steps * dot_increment(op)) % (1 << 32)
        out = (x0.astype(np.uint64) + np.uint64(inc)) & np.uint64(MASK32)
    return to_bits(out, op)


def tolerance_ulps(op: Op) -> int:
    """fp64 is replayed unfused (numpy has no FMA), so it may settle up to 1/(1-p1) = 16 ulps elsewhere."""
    return 32 if op.fmt == "f64" else 0


def verify(op: Op, got_raw: np.ndarray, chains: int, expected_raw: np.ndarray) -> str:
    """Check every thread's every chain against the expected registers; raise VerificationError if off.

    Every thread computes the same values, so the check is: all threads equal thread 0, bit for bit, and
    thread 0 equals the replay (exactly, or within ``tolerance_ulps``). Cheap on millions of outputs.
    """
    got = np.asarray(got_raw).reshape(-1, chains)
    n = got.size * op.lanes
    row = got[0]
    differ = np.any(got != row, axis=1)
    if differ.any():
        t = int(np.argmax(differ))
        raise VerificationError(f"{op.instr}: {int(differ.sum())} of {got.shape[0]} threads disagree with thread 0 "
                                f"(first: thread {t}, {got[t].tolist()} vs {row.tolist()})")
    exp = np.asarray(expected_raw).reshape(chains)
    if op.fmt == "u32":
        bad = row != exp
        if bad.any():
            j = int(np.argmax(bad))
            raise VerificationError(f"{op.instr}: chain {j} of {chains} is {int(row[j])}, expected {int(exp[j])}")
        return f"all {n} values exact"
    g, e = from_bits(row, op), from_bits(exp, op)
    ulp = np.ldexp(1.0, np.floor(np.log2(np.abs(e))).astype(int) - (SIGNIFICAND_BITS[op.fmt] - 1))
    err = np.abs(g - e) / ulp
    bad = ~(err <= tolerance_ulps(op))            # NaN (an unwritten output) counts as bad
    if bad.any():
        j = int(np.argmax(bad.ravel()))
        raise VerificationError(f"{op.instr}: {int(bad.sum())} of {chains * op.lanes} chain values off by more "
                                f"than {tolerance_ulps(op)} ulp (first: got {g.ravel()[j]!r}, "
                                f"expected {e.ravel()[j]!r})")
    worst = float(np.max(err)) if err.size else 0.0
    return f"all {n} values exact" if worst == 0 else f"all {n} values within {worst:.0f} ulp"


def work(fam: Family, chains: int, threads_total: int, iters: int) -> float:
    """FLOP (or OP) done by one launch: multiply-adds x 2, per lane."""
    return float(threads_total) * iters * fam.flops_per_trip(chains)


def sub_partitions(cc: tuple[int, int]) -> int:
    """Warp schedulers per SM: 4 on Maxwell and later except GP100 (2)."""
    return 2 if tuple(cc) == (6, 0) else 4


def sass_counts(sass_text: str | None, function: str, fam: Family) -> dict[Op, int] | None:
    """SASS instructions of each op in the kernel's loop body, or None without SASS."""
    if not sass_text:
        return None
    body = sass.loop_body(sass.instructions(sass_text, function))
    full = sass.full_opcodes(body)
    return {o: sum(n for op, n in full.items() if re.search(o.sass_re, op)) for o in fam.ops}


def expected_sass(fam: Family, chains: int) -> dict[Op, int]:
    return {o: int(n * o.sass_per_step) for o, n in fam.ptx_steps_per_trip(chains).items()}


def sass_flags(counts: dict[Op, int] | None, expect: dict[Op, int]) -> list[str]:
    """The flag of a loop whose SASS is not the intended instructions (none when SASS was not read)."""
    if counts is None or counts == expect:
        return []
    return [Flag(Code.SASS_MISMATCH, f"SASS per trip found {_fmt(counts)}, expected {_fmt(expect)}")]


# ----------------------------------------------------------------------------------------------------
# Device side.

def _resident(cp, kernel, threads: int, dev) -> int:
    """Blocks per SM the driver will co-schedule for this kernel (its occupancy calculator, else ours)."""
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, threads, 0))
    except Exception:
        return S.resident_blocks(int(kernel.num_regs), threads, regs_per_sm=dev.regs_per_sm or 65536,
                                 max_threads_per_sm=dev.max_threads_per_sm or 2048,
                                 max_blocks=S.max_blocks_per_sm((dev.cc_major, dev.cc_minor)))




def _calibrate(cp, launch_iters, min_s: float, hold=None) -> tuple[int, float]:
    """Grow the trip count until one launch lasts ``min_s`` (the timing policy's calibrate, reach 1); returns
    (iters, seconds) of that launch. ``hold``: a StreamHold, so a host stall cannot shrink the trip count."""
    from hwprobe.timing import policy

    cal = policy.calibrate(lambda n: time_cuda_once(lambda: launch_iters(n), hold=hold), 1.5 * min_s, start=4,
                           hi=MAX_ITERS, reach=1 / 1.5, max_steps=16)
    return cal.timed_count, cal.timed_s


class _Family:
    """One family on the device: its module, parameter arrays and a launcher."""

    def __init__(self, cp, fam: Family, dev, hold=None):
        from hwprobe.kernels import load

        self.cp, self.fam, self.dev, self.hold = cp, fam, dev, hold
        self.module = load(KERNEL_FILE, options=fam.options())
        self.sass_options = self.sass_options_for(fam, dev)
        self.kernels = {c: self.module.get_function(f"hwp_fma_c{c}") for c in fam.chains}
        self.params = {(o, c): cp.asarray(params(o, c)) for o in fam.ops for c in fam.chains}

    @staticmethod
    def sass_options_for(fam: Family, dev) -> tuple[str, ...]:
        """The NVRTC options hwprobe.kernels.load uses for this family, plus the -ftz=true CuPy adds."""
        from hwprobe.kernels import arch_flag

        return (arch_flag(dev.cc_major, dev.cc_minor), "-std=c++17", *fam.options(), "-ftz=true")

    def outputs(self, cfg: S.Config) -> list:
        n = cfg.grid(self.dev.sms) * cfg.threads * cfg.chains
        outs = []
        for o in self.fam.ops:
            out = self.cp.empty(n, dtype=o.raw)
            out.fill(np.iinfo(o.raw).max)        # NaN for floats: an unwritten element fails the check
            outs.append(out)
        return outs

    def launch(self, cfg: S.Config, iters: int, outs: list) -> None:
        a = self.fam.a
        b = self.fam.b or a
        pa, pb = self.params[(a, cfg.chains)], self.params[(b, cfg.chains)]
        ob = outs[1] if self.fam.b else outs[0]
        args = (outs[0], pa, ob, pb, np.int32(iters), np.int32(0))      # thread_mask: 0 (see cuda_core.cu)
        self.kernels[cfg.chains]((cfg.grid(self.dev.sms),), (cfg.threads,), args)

    def trial(self, cfg: S.Config, min_s: float, search_s: float) -> S.Trial:
        from hwprobe.timing import iterations_for

        outs = self.outputs(cfg)
        iters, t = _calibrate(self.cp, lambda n: self.launch(cfg, n, outs), min_s, self.hold)
        iters = iterations_for(t / iters, search_s, hi=MAX_ITERS)
        t = time_cuda_once(lambda: self.launch(cfg, iters, outs), hold=self.hold)
        rate = work(self.fam, cfg.chains, cfg.grid(self.dev.sms) * cfg.threads, iters) / t
        return S.Trial(cfg, rate, t, iters)

    def check(self, cfg: S.Config, iters: int, outs: list) -> list[str]:
        """Timed outputs vs the replay, then a one-trip launch (fresh buffers) vs the replay of one trip."""
        u = self.fam.unroll(cfg.chains)
        notes = []
        short = self.outputs(cfg)
        self.launch(cfg, 1, short)
        for o, out, out1 in zip(self.fam.ops, outs, short, strict=True):
            n = iters * u
            notes.append(f"{o.instr} x {n} steps: " + verify(o, out.get(), cfg.chains, reference(o, cfg.chains, n))
                         + f" ({what_is_checked(o, cfg.chains, n)})")
            notes.append(f"{o.instr} one-trip launch, {u} steps: "
                         + verify(o, out1.get(), cfg.chains, reference(o, cfg.chains, u))
                         + f" ({what_is_checked(o, cfg.chains, u)})")
        return notes


def _meta(fam: Family) -> dict:
    return dict(precision=None if fam.experiment else fam.a.precision, exec_unit=ExecUnit.CUDA_CORE,
                path=Path.INSTRUCTION)


def _ahead(dev) -> None:
    """Start compiling every family's module and SASS cubin the device can run (hwprobe.kernels.prefetch)."""
    from hwprobe.kernels import ahead, prefetch

    fams = [f for f in (*FAMILIES, *EXPERIMENTS) if (dev.cc_major, dev.cc_minor) >= f.min_cc]
    prefetch([(KERNEL_FILE, f.options(), None, False) for f in fams] + [(HOLD_MODULE,)])
    for f in fams:
        ahead(*sass.job(KERNEL_FILE, _Family.sass_options_for(f, dev)))


@probe(name="gpu.fma", target="gpu", family="compute", precisions=PRECISIONS, ahead=_ahead,
       summary="CUDA-core multiply-add throughput per precision and instruction (DFMA/FFMA/HFMA2/IMAD/IDP), "
               "chains x occupancy searched, SASS-checked")
def run(ctx: ProbeContext, precisions: tuple[str, ...] = PRECISIONS, search: bool = True,
        experiments: bool = True, target_ms: float = 10.0) -> Iterator[Measurement]:
    if ctx.target != "gpu":
        raise Skip("gpu.fma needs a CUDA GPU")
    try:
        import cupy as cp
    except ImportError as e:
        raise Skip(f"CuPy is not available: {e}") from None

    dev = ctx.device
    cc = (dev.cc_major, dev.cc_minor)
    wanted = set(precisions)
    fams = [f for f in FAMILIES if f.a.precision in wanted]
    if experiments:
        fams += [f for f in EXPERIMENTS if wanted & set(f.precisions)]
    target_s = (min(target_ms, 3.0) if ctx.quick else target_ms) * 1e-3
    warm_s = 0.03 if ctx.quick else 0.2            # the first family ramps the clock; later ones keep it up
    held = _stream_hold(ctx, cp)
    for fam in fams:
        if cc < fam.min_cc:
            need = f"sm_{fam.min_cc[0]}{fam.min_cc[1]}"
            yield ctx.skip(fam.metric, f"needs {need}, device is {dev.arch}", **_meta(fam))
            continue
        try:
            fd = _Family(cp, fam, dev, held)
            yield from _measure_family(ctx, cp, fd, search=search, target_s=target_s, warm_s=warm_s,
                                       report_ipc=experiments)
            warm_s = 0.02
        except Exception as e:  # one family failing must not end the run
            yield ctx.error(fam.metric, fam.metric, e, **_meta(fam))


def _stream_hold(ctx: ProbeContext, cp):
    """The StreamHold of the search and the samples (hwprobe.timing.hold), or None where it cannot be made (both
    then time as before, host stalls included, and the record says so)."""
    try:
        return StreamHold.make(cp)
    except Exception as e:      # noqa: BLE001 - an unheld search still measures
        ctx.log(f"gpu.fma: timings not held ({type(e).__name__}: {e})")
        return None


def _warm_up(cp, fd: _Family, cfg: S.Config, seconds: float) -> None:
    """Run a kernel for a while so the SM clock is up (after compiling, or from idle) before configs compete."""
    from hwprobe.timing import iterations_for

    outs = fd.outputs(cfg)
    iters, t = _calibrate(cp, lambda n: fd.launch(cfg, n, outs), 1e-3, fd.hold)
    n = iterations_for(t / iters, seconds, hi=MAX_ITERS)
    time_cuda_once(lambda: fd.launch(cfg, n, outs), hold=fd.hold)


def _measure_family(ctx: ProbeContext, cp, fd: _Family, *, search: bool, target_s: float, warm_s: float,
                    report_ipc: bool) -> Iterator[Measurement]:
    from hwprobe.timing import iterations_for

    fam, dev = fd.fam, fd.dev
    cc = (dev.cc_major, dev.cc_minor)
    resident = {c: _resident(cp, k, S.THREADS_PER_BLOCK, dev) for c, k in fd.kernels.items()}
    planned = S.plan(fam.chains, quick=ctx.quick, search=search, default_chains=fam.default_chains)
    configs, dropped = S.fit(planned, resident)
    if not configs:
        raise RuntimeError(f"no configuration fits on an SM (resident blocks per chain count: {resident})")
    sass_text = sass.once_of(KERNEL_FILE, fd.sass_options)        # compile for SASS now: no idle gap after the search
    min_s, search_s = (0.3e-3, 1e-3) if ctx.quick else (0.5e-3, 2e-3)
    timeouts = fd.hold.timeouts if fd.hold is not None else 0
    _warm_up(cp, fd, max(configs, key=lambda c: c.blocks_per_sm), warm_s)
    trials = [fd.trial(c, min_s, search_s) for c in configs]
    top = S.best(trials)
    cfg = top.config
    iters = iterations_for(top.seconds / top.iterations, target_s, hi=MAX_ITERS)
    outs = fd.outputs(cfg)
    threads_total = cfg.grid(dev.sms) * cfg.threads
    u = fam.unroll(cfg.chains)

    fn = f"hwp_fma_c{cfg.chains}"
    counts = sass_counts(sass_text, fn, fam)
    expect = expected_sass(fam, cfg.chains)
    notes, flags = _sass_notes(fam, fn, sass_text, counts, expect)
    if dropped:
        notes.append("not run (exceed residency): " + ", ".join(f"c{c.chains}x{c.blocks_per_sm}" for c in dropped))

    verify_notes: list[str] = []

    def check() -> None:
        verify_notes.extend(fd.check(cfg, iters, outs))

    sass_per_trip = sum((counts or expect).values())
    warp_instr = threads_total / 32 * iters * sass_per_trip
    p = {
        "chains": cfg.chains, "threads_per_block": cfg.threads, "blocks_per_sm": cfg.blocks_per_sm,
        "grid": cfg.grid(dev.sms), "iterations": iters, "unroll": u,
        "ptx_steps_per_thread": iters * u * cfg.chains * len(fam.ops),
        "regs_per_thread": int(fd.kernels[cfg.chains].num_regs), "resident_blocks_per_sm": resident[cfg.chains],
        "ops_per_instruction": {o.instr: o.ops_per_step for o in fam.ops},
        "sass_per_trip": {o.instr: n for o, n in (counts or expect).items()},
        "search": S.table(trials),
        "timing": "held" if fd.hold is not None else "unheld",      # the search's and the samples'
    }
    if fam.experiment:
        m = ctx.measure(fam.metric, lambda: fd.launch(cfg, iters, outs), work=warp_instr, unit="warp-instr/s",
                        kind=Kind.SWEEP, check=check, hold=fd.hold, exec_unit=ExecUnit.CUDA_CORE,
                        path=Path.INSTRUCTION, params=p, notes=notes, flags=flags)
        p[K.FLOP_PER_S] = {o.instr: m.value * n / sass_per_trip * 32 * (o.ops_per_step / o.sass_per_step)
                           for o, n in (counts or expect).items()}
    else:
        m = ctx.measure(fam.metric, lambda: fd.launch(cfg, iters, outs),
                        work=work(fam, cfg.chains, threads_total, iters), unit=fam.a.unit, kind=Kind.COMPUTE,
                        check=check, hold=fd.hold, precision=fam.a.precision, exec_unit=ExecUnit.CUDA_CORE,
                        path=Path.INSTRUCTION, params=p, notes=notes, flags=flags)
    m.notes.extend(verify_notes)
    if fd.hold is not None and fd.hold.timeouts > timeouts:
        m.params["hold_timeouts"] = fd.hold.timeouts - timeouts   # timings the hold gave up on may hold host time
    if has(m.flags, Code.SASS_MISMATCH):
        from hwprobe.kernels.sass import invalidate

        invalidate(m)
    ipc, clock_note = _ipc(m, warp_instr, dev, cc)
    m.params["warp_instr_per_clk_per_smsp"] = ipc
    if ipc is not None:
        m.notes.append(f"{ipc:.3f} warp-instr/clk/SMSP ({ipc * sub_partitions(cc):.2f} per SM) {clock_note}")
    ctx.log(f"{fam.metric}: {m.value:.4g} {m.unit} (c{cfg.chains} x {cfg.blocks_per_sm} blocks/SM)")
    yield m
    if report_ipc and ipc is not None:
        yield ctx.derived(fam.metric + ".ipc", ipc, unit="warp-instr/clk/SMSP", kind=Kind.SWEEP, valid=m.valid,
                          exec_unit=ExecUnit.CUDA_CORE, path=Path.INSTRUCTION,
                          params={"sass_per_trip": p["sass_per_trip"], "clock_mhz": _clock(m, dev)[0],
                                  "sub_partitions": sub_partitions(cc), "of": fam.metric},
                          notes=[clock_note] + ([fam.about] if fam.about else []))


def _sass_notes(fam: Family, fn: str, sass_text: str | None, counts, expect) -> tuple[list[str], list[str]]:
    """(notes, flags): the family's description, the SASS evidence line and a mismatch flag."""
    notes, flags = [fam.about] if fam.about else [], []
    if sass_text:
        from hwprobe.kernels import sass

        notes.append(sass.evidence(sass_text, fn, tuple(p for o in fam.ops for p in o.sass_prefixes)))
        flags += sass_flags(counts, expect)
    else:
        notes.append("SASS not checked: no cuobjdump/nvdisasm or no NVRTC cubin here")
    return notes, flags


def _clock(m: Measurement, dev) -> tuple[float | None, str]:
    if m.clocks is not None and m.clocks.sm_mhz:
        return m.clocks.sm_mhz, f"at the sampled {m.clocks.sm_mhz:.0f} MHz"
    if dev.sm_clock_max_mhz:
        return dev.sm_clock_max_mhz, f"at the max clock {dev.sm_clock_max_mhz:.0f} MHz (clock not sampled)"
    return None, "no clock known"


def _ipc(m: Measurement, warp_instr: float, dev, cc) -> tuple[float | None, str]:
    """Warp-instructions issued per clock per SM sub-partition, from the median sample."""
    mhz, note = _clock(m, dev)
    if not mhz or not m.stats:
        return None, note
    rate = warp_instr / m.stats.median_s
    return rate / (dev.sms * sub_partitions(cc) * mhz * 1e6), note


def _fmt(counts: dict[Op, int] | None) -> str:
    return ", ".join(f"{n} {o.instr}" for o, n in (counts or {}).items()) or "nothing"
