"""The GEMM points' CuPy kernels, compiled ahead in worker processes (hwprobe.kernels.warm, issue 33): a task per
point configuration runs that point's operands, call, check and precision check on a tiny problem."""

from __future__ import annotations

from hwprobe.kernels.warm import Warm
from hwprobe.probes.compute import gemm_common as gc
from hwprobe.probes.compute.cublas import CublasEnv, CublasGemm, cublas_env, cublas_mode
from hwprobe.probes.compute.cublaslt import LtGemm, LtGemmI8Out

WARM_SIZE = 64      # the kernels CuPy compiles depend on dtypes and array layouts, not on sizes


def _warm_env() -> CublasEnv:
    from types import SimpleNamespace

    return cublas_env(SimpleNamespace(device=SimpleNamespace(l2_bytes=0)))


def warm_point(key: str, layout: str = "", data: str = "uniform", lt: bool = False) -> None:
    """A worker's task: one GEMM point's operands (``data``), call, check and precision check at WARM_SIZE^3 in
    ``layout`` (default: the variant's), through cuBLASLt's classes where ``lt``: what a point at any size runs
    through CuPy."""
    v = gc.variant(key)
    v = v.with_layout(layout) if layout else v
    env = _warm_env()
    cls = CublasGemm
    if lt:
        cls = LtGemmI8Out if v.out == "int8" else LtGemm
    n = WARM_SIZE
    with cublas_mode(env, v.math):
        g = cls(env, v, n, n, n, data=data, max_sets=1)
        try:
            g.call(0)
            g.check(16)
            g.precision_check(16)
        finally:
            close = getattr(g, "close", None)
            if close:
                close()


def gemm_warm(key: str, layout: str = "", data: str = "uniform", lt: bool = False):
    """warm_point's task, spelled one way for equal points (the variant's own layout where none is given), so
    probes that share a point share its task."""
    return Warm(warm_point, key, layout or gc.variant(key).layout, data, lt)


def warm_gemm_tasks(lt_keys: tuple[str, ...] = (), layouts: tuple[str, ...] = ("NN", "TN")) -> tuple:
    """gpu.gemm's warm tasks: every gemmEx variant in its own layout and each of ``layouts``, and the cuBLASLt
    variants ``lt_keys``, on the ceilings' uniform operands."""
    tasks = [gemm_warm(v.key, lay) for vs in gc.GEMM_VARIANTS.values() for v in vs
             for lay in dict.fromkeys((v.layout, *layouts))]
    return tuple(tasks + [gemm_warm(k, lt=True) for k in lt_keys])
