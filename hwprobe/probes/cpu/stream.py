"""CPU DRAM bandwidth, STREAM style: copy, scale, add, triad over all cores (numba prange).

Each array is at least ``llc_multiple`` x the last-level cache, so the caches hold a small fraction of
the working set (STREAM's rule). Arrays are first touched in parallel by the same loop split as the
kernels, so pages sit near the threads that use them. Bytes are counted as STREAM counts them.

What STREAM's compiled loops do, this probe does. The figure is the best of the timed passes, as STREAM
reports it (the median stays beside it in ``params``; issue 23). Copy is stream.c's own loop, ``c[i] = a[i]``:
gcc -O3 turns that loop into a libc memcpy per thread's share, and so does numba (LLVM), and libc's memcpy
switches to non-temporal stores above a size threshold, so neither pays the write-allocate read. Issue 23 had
made copy ``a[i] * 1.0`` to keep it a vector loop of regular stores; beside ``gcc -O3 -march=native`` stream.c
on a 2-core VM that read 0.59x (issue 35), because stream.c's copy is a memcpy. Bytes are still STREAM's
count (read + write, no write-allocate), whatever store kind the copy uses. ``tools/cpu_stream_compare.py``
runs both, interleaved, on the machine at hand.
"""

from __future__ import annotations

import gc
import re
import warnings
from functools import cache

import numpy as np

from hwprobe.errors import InputError, Skip
from hwprobe.probes.base import probe
from hwprobe.probes.memory.plan import STREAM_ARRAYS
from hwprobe.vocab import ExecUnit

SCALAR = 3.0
QUICK_BYTES = 64 << 20
OPS = ("copy", "scale", "add", "triad")
# STREAM's count: 8-byte elements read + written per element; write-allocate reads are not counted.
BYTES_PER_ELEM = {op: 8 * STREAM_ARRAYS[op] for op in OPS}
BYTES_COUNTED = ("STREAM convention: copy and scale read 1 and write 1 array, add and triad read 2 and "
                 "write 1 (8 B per element each); write-allocate (read-for-ownership) traffic not counted")
COPY_NOTE = ("copy is stream.c's loop c[i] = a[i], compiled as gcc -O3 compiles stream.c's (a memcpy per thread's "
             "share, non-temporal stores above libc's threshold); bytes counted as STREAM: read + write, "
             "no write-allocate")

prange = range   # replaced by numba.prange when the kernels are built (numba is imported lazily)


def _init(a, b, c, va, vb, vc):
    for i in prange(a.size):
        a[i] = va
        b[i] = vb
        c[i] = vc


def _copy(a, b, c, s):
    for i in prange(a.size):
        c[i] = a[i]                 # stream.c's loop: the compiler makes each thread's share a memcpy


def _scale(a, b, c, s):
    for i in prange(a.size):
        b[i] = s * c[i]


def _add(a, b, c, s):
    for i in prange(a.size):
        c[i] = a[i] + b[i]


def _triad(a, b, c, s):
    for i in prange(a.size):
        a[i] = b[i] + s * c[i]


def step(op: str, v: dict[str, float], s: float = SCALAR) -> tuple[str, float]:
    """(array written, its value) after ``op`` on arrays holding the constants ``v``; ops are idempotent."""
    if op == "copy":
        return "c", v["a"]
    if op == "scale":
        return "b", s * v["c"]
    if op == "add":
        return "c", v["a"] + v["b"]
    return "a", v["b"] + s * v["c"]


@cache
def _kernels():
    from hwprobe.caches import configure

    cache_ok = configure()            # a writable cache dir, or compile every time (never a failed probe)
    import numba

    global prange
    prange = numba.prange
    jit = numba.njit(parallel=True, fastmath=True, cache=cache_ok)
    return jit(_init), {"copy": jit(_copy), "scale": jit(_scale), "add": jit(_add), "triad": jit(_triad)}


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"MemAvailable:\s+(\d+)\s*kB", f.read())
        return int(m.group(1)) * 1024 if m else None
    except OSError:
        return None


def array_bytes(llc_bytes: int, llc_multiple: float, min_bytes_per_array: int | None, quick: bool,
                mem_available: int | None) -> tuple[int, bool, list[str]]:
    """Bytes per array, whether the set meets the LLC rule, and notes on why not."""
    want = int(max(llc_multiple * llc_bytes, min_bytes_per_array or 0))
    if quick:
        return QUICK_BYTES, QUICK_BYTES >= want, [
            f"quick: {QUICK_BYTES >> 20} MiB arrays, not {llc_multiple:g}x the {llc_bytes >> 20} MiB LLC"]
    if mem_available and 3 * want > 0.8 * mem_available:
        fit = int(0.8 * mem_available / 3)
        return fit, False, [f"only {mem_available >> 20} MiB available: arrays cut to {fit >> 20} MiB from "
                            f"{want >> 20} MiB ({llc_multiple:g}x LLC)"]
    return want, True, []


def _check(arr: np.ndarray, want: float, rng: np.random.Generator):
    def check():
        idx = np.concatenate([[0, arr.size - 1], rng.integers(0, arr.size, 4096)])
        bad = np.flatnonzero(arr[idx] != want)
        if bad.size:
            i = idx[bad[0]]
            raise AssertionError(f"element {i} is {arr[i]!r}, want {want!r}")
        total = float(np.sum(arr))          # every partial sum is an integer below 2^53: exact
        if total != want * arr.size:
            raise AssertionError(f"sum is {total!r}, want {want * arr.size!r}")
    return check


def _asm_notes(kern) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asm = "\n".join(kern.inspect_asm().values())
    if caught:                              # numba cannot show the assembly of code loaded from its cache
        return ["assembly not inspected (kernel loaded from numba's cache)"]
    notes = []
    if "memcpy" in asm:
        notes.append("compiled to memcpy: libc picks the store kind (non-temporal above its size threshold)")
    elif re.search(r"\bv?movnt", asm):
        notes.append("non-temporal stores")
    else:
        notes.append("regular stores: DRAM also serves write-allocate reads, which are not counted")
    regs = set(re.findall(r"%(zmm|ymm|xmm)\d+", asm))
    if re.search(r"\bv\d+\.2d", asm):
        regs.add("neon v.2d")
    if regs:
        notes.append(f"vector registers seen: {', '.join(sorted(regs))}")
    return notes


def best_of(m):
    """STREAM's figure: the best timed pass (its median kept in params and said in a note)."""
    if m.best and m.value and m.best > m.value:
        m.params["median_Bps"] = m.value
        m.notes.append(f"best of {len(m.samples_s)} passes, as STREAM reports it; median {m.value / 1e9:.2f} GB/s")
        m.value = m.best
    return m


@probe(name="cpu.stream", target="cpu", family="memory",
       summary="DRAM bandwidth on all cores: STREAM copy, scale, add, triad (arrays >= 4x LLC)",
       choices={"ops": OPS}, ranges={"llc_multiple": (1, 64), "threads": (1, 4096), "min_bytes_per_array": (1, None)})
def run(ctx, ops=OPS, min_bytes_per_array: int | None = None, llc_multiple: int = 4, threads: int | None = None):
    try:
        import numba
    except ImportError as e:
        raise Skip(f"numba is not installed: {e}") from None
    unknown = [op for op in ops if op not in BYTES_PER_ELEM]
    if unknown:
        raise InputError(f"unknown STREAM op(s) {', '.join(unknown)}; known: {', '.join(OPS)}")
    nthreads = int(threads or numba.config.NUMBA_NUM_THREADS)
    if not 1 <= nthreads <= numba.config.NUMBA_NUM_THREADS:
        raise InputError(f"threads={nthreads}: numba allows 1..{numba.config.NUMBA_NUM_THREADS}")
    llc = int(ctx.device.llc_bytes)
    nbytes, ok, notes = array_bytes(llc, llc_multiple, min_bytes_per_array, ctx.quick, _mem_available())
    n = nbytes // 8
    init, kernels = _kernels()
    prev_threads = numba.get_num_threads()
    numba.set_num_threads(nthreads)
    try:
        ctx.log(f"cpu.stream: 3 arrays x {nbytes / 2**20:.0f} MiB, {nthreads} threads (first touch in parallel)")
        a, b, c = np.empty(n), np.empty(n), np.empty(n)
        vals = {"a": 1.0, "b": 2.0, "c": 0.0}
        init(a, b, c, vals["a"], vals["b"], vals["c"])
        arrays = {"a": a, "b": b, "c": c}
        rng = np.random.default_rng(0)
        for op in ops:
            kern = kernels[op]
            kern(a, b, c, SCALAR)                     # compile or load from cache: untimed
            name, want = step(op, vals)
            vals[name] = want
            m = ctx.measure(
                f"dram.stream.{op}", lambda kern=kern: kern(a, b, c, SCALAR),
                work=float(BYTES_PER_ELEM[op] * n), unit="B/s", kind="memory", check=_check(arrays[name], want, rng),
                warmup=1, level="dram", exec_unit=ExecUnit.CPU, bytes_counted=BYTES_COUNTED,
                params={"bytes_per_array": nbytes, "elements": n, "threads": nthreads, "llc_bytes": llc,
                        "llc_multiple": llc_multiple, "working_set_ok": ok},
                notes=notes + ([COPY_NOTE] if op == "copy" else []) + _asm_notes(kern),
            )
            yield best_of(m)
    finally:
        numba.set_num_threads(prev_threads)
        a = b = c = arrays = None
        gc.collect()
