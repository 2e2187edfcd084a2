"""Float64 copies of GEMM operands and outputs on the GPU, for the probes' result checks.

CuPy's fancy indexing and casts compile an element-wise kernel per dtype pair and layout on first use: a cold run of
the library GEMM probes made 90 NVRTC compiles (10.8 s), most of them these (profiles/h200-sxm/2026-11-29-sparse-sweep,
cupy_compiles). kernels/f64_copy.cu has one kernel per storage kind in one module: one compile, made ahead on a thread
(``ahead``, a probe's hook)."""

from __future__ import annotations

import numpy as np

from hwprobe import kernels
from hwprobe.probes.compute import gemm_common as gc

MODULE = "f64_copy.cu"
THREADS = 256
MAX_BLOCKS = 8192       # a grid-stride loop past this
ahead = kernels.compile_ahead((MODULE,))


def to_f64(cp, x, kind: str, rows=None):
    """A C-contiguous float64 copy of the 2-D array ``x`` (any strides: a transposed view too) of storage kind
    ``kind`` (a gc.ITEMSIZE key: bf16 as uint16 bits, fp8 as E4M3 uint8 codes), keeping the rows ``rows`` (host
    indices, in order) or all rows (None). A numpy ``x`` is copied on the host."""
    if kind not in gc.ITEMSIZE:
        raise ValueError(f"unknown storage kind {kind!r}; known: {', '.join(gc.ITEMSIZE)}")
    if x.ndim != 2 or x.itemsize != gc.ITEMSIZE[kind]:
        raise ValueError(f"to_f64 takes a 2-D array of {kind} ({gc.ITEMSIZE[kind]} B elements), "
                         f"not {x.ndim}-D of {x.dtype}")
    if rows is not None:
        rows = np.asarray(rows, dtype=np.int64)          # checked on the host: a CuPy min/max compiles reductions
        if rows.size and (rows.min() < 0 or rows.max() >= x.shape[0]):
            raise IndexError(f"row index out of range for {x.shape[0]} rows")
    if isinstance(x, np.ndarray):       # a host array (the CPU tests' fake CuPy): numpy does it
        return cp.asarray(host_f64(x if rows is None else x[rows], kind))
    s0, s1 = (s // x.itemsize for s in x.strides)
    idx = None if rows is None else cp.asarray(rows)
    nr = x.shape[0] if idx is None else idx.size
    out = cp.empty((nr, x.shape[1]), dtype=cp.float64)
    if out.size:
        null = np.uint64(0)
        table = cp.asarray(gc.fp8_decode_table("e4m3")) if kind == "fp8" else null
        blocks = min(-(-out.size // THREADS), MAX_BLOCKS)
        kernels.load(MODULE).get_function(f"f64_{kind}")(
            (blocks,), (THREADS,),
            (x, np.int64(s0), np.int64(s1), null if idx is None else idx, np.int64(nr), np.int64(x.shape[1]), table,
             out))
    return out


def host_f64(x: np.ndarray, kind: str) -> np.ndarray:
    """The same copy on the host, in numpy: the reference the GPU test holds to_f64 to (NaN bit patterns decode
    to NaN without numpy's cast warning)."""
    with np.errstate(invalid="ignore"):
        if kind == "bf16":
            return gc.bf16_bits_to_f32(x).astype(np.float64)
        if kind == "fp8":
            return gc.fp8_decode_table("e4m3")[np.asarray(x, dtype=np.int64)]
        return np.asarray(x).astype(np.float64)
