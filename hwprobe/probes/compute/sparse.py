"""2:4 structured-sparse GEMM through cuSPARSELt (nvmath.bindings.cusparseLt) against dense cuBLAS.

Sparse tensor cores promise 2x the dense rate; the seeds add that compression costs something. This probe
measures both: the sparse/dense speedup at each size, and the prune + compress time of A on its own.

FLOP convention: a sparse GEMM is credited with the work of the dense problem it replaces, 2*M*N*K
("effective" FLOP/s), so the speedup is the ratio of the two rates and the promise is 2x. The product
is checked against a float64 product of the *pruned* A, so pruning is what changes the answer, nothing else.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwprobe.errors import Skip, VerificationError
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.probes.compute.cublas import (
    build_runner,
    ceiling_of,
    check_rows,
    cublas_env,
    failure,
    measure_gemm,
    random_operand,
)
from hwprobe.timing import time_cuda

CONVENTION = "effective FLOPs = 2*M*N*K of the dense problem (the pruned half of A is credited as work done)"


@dataclass(frozen=True)
class SparseSpec:
    precision: str      # measurement precision
    storage: str        # A/B storage kind
    ab_type: int
    c_type: int
    out: str            # C storage kind
    compute: str        # cusparseLt ComputeType member
    tol_key: str
    dense_key: str      # gc variant of the dense cuBLAS baseline ("" = FP8 through cuBLASLt)
    unit: str = "FLOP/s"


SPECS = {
    "fp16": SparseSpec("fp16", "float16", gc.R_16F, gc.R_16F, "float16", "COMPUTE_32F", "fp16.f32acc", "fp16.f32acc"),
    "int8": SparseSpec("int8", "int8", gc.R_8I, gc.R_32I, "int32", "COMPUTE_32I", "int8", "int8.tn", "OP/s"),
    "fp8": SparseSpec("fp8_e4m3", "fp8", gc.R_8F_E4M3, gc.R_16F, "float16", "COMPUTE_32F", "fp8", ""),
}


def _libs(ctx):
    dev = ctx.device
    if dev.cc_major < 8:
        raise Skip(f"2:4 sparse tensor cores need compute capability 8.0+, this GPU is {dev.arch}")
    try:
        from nvmath.bindings import cusparse as cs
        from nvmath.bindings import cusparseLt as lt
    except Exception as e:
        raise Skip(f"cuSPARSELt bindings need nvmath-python (pip install nvmath-python): {e}") from None
    try:
        handle = lt.init()
    except Exception as e:
        raise Skip(f"cuSPARSELt library not loadable (pip install nvidia-cusparselt-cu13): "
                   f"{type(e).__name__}: {e}") from None
    return lt, cs, handle


def _sparse_operand(cp, kind: str, shape, seed: int, scale: float = 1.0):
    if kind == "fp8":   # E4M3 codes of values exact in FP8 (CuPy has no FP8 dtype)
        codes = cp.asarray(gc.fp8_encode_exact(np.array(gc.FP8_EXACT_VALUES), "e4m3"))
        idx = cp.random.RandomState(seed).randint(0, len(gc.FP8_EXACT_VALUES), size=shape)
        return codes[idx]
    return random_operand(cp, kind, shape, seed, scale)


def _to_f64(cp, x, kind: str):
    if kind == "fp8":
        table = cp.asarray(gc.fp8_decode_table("e4m3"))
        return table[x.astype(cp.int32)]
    return cp.ascontiguousarray(x).astype(cp.float64)


class SparseGemm:
    """A cuSPARSELt plan for C (m x n) = A (m x k, 2:4, row-major) @ B^T (B stored n x k, row-major)."""

    def __init__(self, cp, lt, cs, handle, spec: SparseSpec, m: int, n: int, k: int, sets: int, seed: int = 7):
        self.cp, self.lt, self.h, self.spec = cp, lt, handle, spec
        self.m, self.n, self.k = m, n, k
        self._descs: list[tuple[Any, int]] = []
        self.ops: list[list] = []
        try:
            self._setup(cs, sets, seed)
        except Exception:
            self.close()
            raise

    def _setup(self, cs, sets: int, seed: int) -> None:
        cp, lt, handle, spec, m, n, k = self.cp, self.lt, self.h, self.spec, self.m, self.n, self.k
        row, sparsity = cs.Order.ROW, lt.Sparsity.SPARSITY_50_PERCENT
        self.mat_a = self._keep(lt.mat_descriptor_destroy,
                                lt.structured_descriptor_init(handle, m, k, k, 16, spec.ab_type, row, sparsity))
        self.mat_b = self._keep(lt.mat_descriptor_destroy,
                                lt.dense_descriptor_init(handle, n, k, k, 16, spec.ab_type, row))
        self.mat_c = self._keep(lt.mat_descriptor_destroy,
                                lt.dense_descriptor_init(handle, m, n, n, 16, spec.c_type, row))
        self.desc = self._keep(lt.matmul_descriptor_destroy, lt.matmul_descriptor_init(
            handle, cs.Operation.NON_TRANSPOSE, cs.Operation.TRANSPOSE, self.mat_a, self.mat_b, self.mat_c,
            self.mat_c, getattr(lt.ComputeType, spec.compute)))
        self.alg = self._keep(lt.matmul_alg_selection_destroy,
                              lt.matmul_alg_selection_init(handle, self.desc, lt.MatmulAlg.DEFAULT))
        self.plan = self._keep(lt.matmul_plan_destroy, lt.matmul_plan_init(handle, self.desc, self.alg))
        self.alpha = np.ones((), dtype=np.float32)     # cuSPARSELt scalars are float for every compute type
        self.beta = np.zeros((), dtype=np.float32)
        self.streams = np.zeros(1, dtype=np.uint64)
        self.valid = cp.zeros(1, dtype=cp.int32)
        self.sparse_ptr = np.zeros(1, dtype=np.uint64)
        csize, bsize = lt.sp_mma_compressed_size(handle, self.plan)
        self.compressed_bytes = int(csize)
        self.cbuf = cp.empty(max(int(bsize), 1), dtype=cp.uint8)
        scale = k ** -0.25 if spec.storage == "float16" else 1.0
        for i in range(sets):
            a = _sparse_operand(cp, spec.storage, (m, k), seed + 2 * i, scale)
            b = _sparse_operand(cp, spec.storage, (n, k), seed + 2 * i + 1, scale)
            c = cp.zeros((m, n), dtype={"float16": cp.float16, "int32": cp.int32}[spec.out])
            self.ops.append([a, b, c, cp.empty(max(self.compressed_bytes, 1), dtype=cp.uint8)])
        self.prune_s = time_cuda(lambda: self.prune(0), warmup=0, repeats=3, cp=cp)
        self.compress_s = time_cuda(lambda: self.compress(0), warmup=0, repeats=3, cp=cp)
        for i in range(1, sets):
            self.prune(i)
            self.compress(i)
        self._check_pruned()
        self.ws = cp.empty(max(int(lt.matmul_get_workspace(handle, self.plan)), 1), dtype=cp.uint8)
        self._matmul(lt.matmul_search, 0)      # picks the kernel (and split-k) for this plan; untimed
        ws = int(lt.matmul_get_workspace(handle, self.plan))
        if ws > self.ws.size:
            self.ws = cp.empty(ws, dtype=cp.uint8)

    def _keep(self, destroy, obj):
        self._descs.append((destroy, obj))
        return obj

    def _stream(self) -> int:
        return self.cp.cuda.get_current_stream().ptr

    def prune(self, i: int) -> None:
        a = self.ops[i][0]
        self.sparse_ptr[0] = a.data.ptr
        self.lt.matmul_desc_set_attribute(self.h, self.desc, self.lt.MatmulDescAttribute.SPARSE_MAT_POINTER,
                                          self.sparse_ptr.ctypes.data, 8)
        self.lt.sp_mma_prune(self.h, self.desc, a.data.ptr, a.data.ptr, self.lt.PruneAlg.SPMMA_TILE, self._stream())

    def compress(self, i: int) -> None:
        a, ac = self.ops[i][0], self.ops[i][3]
        self.lt.sp_mma_compress(self.h, self.plan, a.data.ptr, ac.data.ptr, self.cbuf.data.ptr, self._stream())

    def _check_pruned(self) -> None:
        for i, op in enumerate(self.ops):
            self.lt.sp_mma_prune_check(self.h, self.desc, op[0].data.ptr, self.valid.data.ptr, self._stream())
            if int(self.valid.get()[0]) != 0:
                raise VerificationError(f"cuSPARSELt prune check failed on operand set {i}")

    def _matmul(self, fn, i: int) -> None:
        a, b, c, ac = self.ops[i]
        self.streams[0] = self._stream()
        fn(self.h, self.plan, self.alpha.ctypes.data, ac.data.ptr, b.data.ptr, self.beta.ctypes.data,
           c.data.ptr, c.data.ptr, self.ws.data.ptr, self.streams.ctypes.data, 1)

    def call(self, i: int) -> None:
        self._matmul(self.lt.matmul, i)

    def check(self, rows: int) -> float:
        cp, spec = self.cp, self.spec
        a, b, c, _ = self.ops[0]
        idx = cp.asarray(gc.sample_rows(self.m, rows))
        a_rows = _to_f64(cp, a[idx], spec.storage)
        if not gc.is_2to4(cp.asnumpy(a_rows)):
            raise VerificationError("pruned A is not 2:4 along K")
        return check_rows(cp, a_rows, _to_f64(cp, b, spec.storage).T, _to_f64(cp, c[idx], spec.out),
                          gc.tolerance(spec.tol_key), f"cuSPARSELt {spec.precision} {self.m}x{self.n}x{self.k}")

    def close(self) -> None:
        gc.release_all(self._descs)
        self.ops.clear()


def _dense(ctx, prec: str, spec: SparseSpec, n: int, rows: int) -> Measurement:
    metric = f"sparse.{prec}.dense.n{n}"
    if spec.dense_key:
        env = cublas_env(ctx)
        return measure_gemm(ctx, env, gc.variant(spec.dense_key), n, n, n, metric=metric, kind="sweep", rows=rows,
                            notes=("dense baseline for the 2:4 sparse speedup",))
    from hwprobe.probes.compute.cublaslt import fp8_env, measure_fp8

    return measure_fp8(ctx, fp8_env(ctx), n, n, n, "e4m3", "e4m3", metric=metric, kind="sweep",
                       precision=spec.precision, rows=rows, out="fp16", extra={"note": "dense baseline"})


@probe(name="gpu.sparse", target="gpu", family="compute",
       summary="2:4 structured-sparse GEMM (cuSPARSELt) vs dense cuBLAS: speedup vs size, compression cost",
       precisions=("fp16", "int8", "fp8"))
def run_sparse(ctx, precisions=("fp16", "int8", "fp8"), sizes=(4096, 8192, 16384), check_rows=16):
    lt, cs, handle = _libs(ctx)
    try:
        import cupy as cp
    except Exception as e:
        raise Skip(f"CuPy not importable: {e}") from None
    l2 = int(getattr(ctx.device, "l2_bytes", 0) or 50 << 20)
    version = lt.get_version(handle)
    plan = gc.plan_sizes(sizes, ctx.quick)
    try:
        for prec in precisions:
            spec = SPECS[prec]
            yield from _one_precision(ctx, cp, lt, cs, handle, prec, spec, plan, check_rows, l2, version)
    finally:
        lt.destroy(handle)


def _one_precision(ctx, cp, lt, cs, handle, prec, spec, plan, rows, l2, version):
    base = f"{spec.precision}.tensor_core.sparse24"
    points, summary = [], []
    for n in plan:
        metric = f"{base}.n{n}"
        ctx.log(f"cuSPARSELt 2:4 {prec} {n}^3")
        try:
            dense = _dense(ctx, prec, spec, n, rows)
            yield dense
        except Exception as e:
            dense = None
            yield failure(ctx, f"sparse.{prec}.dense.n{n}", f"dense {prec} {n}^3", e, precision=spec.precision)
        cp.get_default_memory_pool().free_all_blocks()
        g = None
        try:
            itemsize = gc.ITEMSIZE[spec.storage]
            sets = gc.rotation_sets(gc.gemm_bytes(n, n, n, itemsize, gc.ITEMSIZE[spec.out]), l2)
            g = SparseGemm(cp, lt, cs, handle, spec, n, n, n, sets)
            runner = build_runner(cp, g.call, sets)
            err: dict = {}

            def check(g=g, err=err) -> None:
                err["rel"] = g.check(rows)

            prune_s, compress_s = statistics.median(g.prune_s), statistics.median(g.compress_s)
            params = {"m": n, "n": n, "k": n, "sparse": True, "sparsity": "2:4 (A)", "reps": runner.reps,
                      "operand_sets": sets, "cuda_graph": runner.graph, "cusparselt_version": version,
                      "compressed_bytes": g.compressed_bytes, "prune_s": prune_s, "compress_s": compress_s,
                      "flop_convention": CONVENTION}
            m = ctx.measure(metric, runner.fn, work=gc.gemm_flops(n, n, n) * runner.reps, unit=spec.unit,
                            kind="sweep", check=check, precision=spec.precision, exec_unit="tensor_core",
                            path="library", params=params, notes=[CONVENTION, *runner.notes])
            if "rel" in err:
                m.params["rel_error"] = err["rel"]
            if runner.launch_bound:
                m.flags.append("launch_bound")
        except Exception as e:
            yield failure(ctx, metric, f"cuSPARSELt {prec} {n}^3", e, precision=spec.precision, path="library")
            continue
        finally:
            if g is not None:
                g.close()
        row = {"n": n, "sparse": m.value, "dense": dense.value if dense else None, "prep_s": prune_s + compress_s}
        if dense and dense.value > 0:
            row["speedup"] = m.value / dense.value
            m.params["speedup_vs_dense"] = row["speedup"]
            m.params["dense_rate"] = dense.value
        points.append(m)
        summary.append(row)
        yield m
        yield _prep_measurement(ctx, prec, spec, n, g, row)
    if points:
        ceil = ceiling_of(points, base)
        ceil.params["speedups"] = {r["n"]: r.get("speedup") for r in summary}
        ceil.params["speedup_best_vs_best"] = gc.sparse_speedups(summary)["best_vs_best"]
        yield ceil
        yield _speedup_summary(ctx, prec, spec, summary)


def _prep_measurement(ctx, prec, spec, n, g: SparseGemm, row: dict) -> Measurement:
    """Prune + compress time of A (one-off per weight matrix), and how many GEMMs it takes to pay back."""
    params = {"n": n, "prune_s": g.prune_s, "compress_s": g.compress_s, "compressed_bytes": g.compressed_bytes}
    notes = ["prune (cusparseLtSpMMAPrune, tile) + compress (cusparseLtSpMMACompress) of A, timed apart from the "
             "GEMM by CUDA events"]
    if row.get("dense") and row["sparse"] > row["dense"]:
        work = gc.gemm_flops(n, n, n)
        saved = work / row["dense"] - work / row["sparse"]
        params["break_even_gemms"] = row["prep_s"] / saved
        notes.append(f"pays back after {params['break_even_gemms']:.1f} GEMMs of {n}^3")
    elif row.get("dense"):
        notes.append("never pays back here: the sparse GEMM is not faster than dense")
    return ctx.derived(f"sparse.{prec}.compress.n{n}", row["prep_s"], unit="s", kind="latency",
                       precision=spec.precision, path="library", params=params, notes=notes)


def _speedup_summary(ctx, prec, spec, summary: list[dict]) -> Measurement:
    """Sparse ceiling / dense ceiling (best vs best) is the finding; same-size ratios are listed beside it."""
    sp = gc.sparse_speedups(summary)
    if sp["best_vs_best"] is None:
        return ctx.derived(f"sparse.{prec}.speedup", 0.0, unit="x", kind="info", precision=spec.precision,
                           path="library", params={"points": summary},
                           notes=["no dense baseline ran: speedup unknown"])
    curve = ", ".join(f"{n}: {s:.2f}x" for n, s in sorted(sp["per_size"].items()))
    prep = {r["n"]: r["prep_s"] for r in summary}
    text = (f"2:4 sparse {prec.upper()}: best sparse ({sp['best_sparse_n']}^3) / best dense "
            f"({sp['best_dense_n']}^3) = {sp['best_vs_best']:.2f}x (promised 2x); same-size ratios {curve}; "
            f"pruning + compressing A takes {prep[sp['best_sparse_n']] * 1e3:.2f} ms at {sp['best_sparse_n']}^3")
    if sp["suspect"]:
        text += (f"; same-size ratios above 2x at {', '.join(map(str, sp['suspect']))} come from an inefficient "
                 f"dense baseline there, not from the sparse tensor cores")
    return ctx.derived(f"sparse.{prec}.speedup", sp["best_vs_best"], unit="x", kind="info",
                       precision=spec.precision, path="library",
                       params={"points": summary, "promised": 2.0, **sp}, notes=[text])
