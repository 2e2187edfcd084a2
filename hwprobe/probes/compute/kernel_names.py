"""The names of the kernels a library call launches, read from a CUDA graph of that call (no profiler needed).

cuBLAS and cuBLASLt pick their kernels at run time and do not say which. Capturing one call into a graph
(driver API, through cuda-python's ``cuda.bindings``) and asking each kernel node's function for its name
(``cuFuncGetName``) shows what really ran: ``sm90_xmma_gemm_f64f64_...`` for an FP64 GEMM on tensor cores,
a ``gemv``/``gemmSN`` style name for a fallback. ``tensor_evidence`` reads a name only for tokens NVIDIA's
tensor-core kernels carry; a name without one is reported, never taken as proof of the CUDA cores.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Tokens of NVIDIA's tensor-core GEMM kernels: the MMA instruction families and the MMA template libraries.
TENSOR_TOKENS = re.compile(r"(?i)(tensorop|wmma|gmma|hmma|imma|dmma|qmma|xmma|nvjet|tensor\d+x\d+x\d+|"
                           r"_s1688|_s16816|_i16832|_i8816|_h1688|_h16816|_d884)")


def tensor_evidence(names: list[str] | None) -> tuple[bool | None, str]:
    """(True if a kernel name carries a tensor-core token, None if no name says either way, evidence text)."""
    if not names:
        return None, "kernel names not read"
    hits = [n for n in names if TENSOR_TOKENS.search(n)]
    shown = ", ".join(sorted(set(names)))[:300]
    if hits:
        tok = TENSOR_TOKENS.search(hits[0]).group(1)
        return True, f"kernel name {hits[0][:120]!r} carries the tensor-core token {tok!r} (read from a CUDA graph)"
    return None, f"kernel names (read from a CUDA graph): {shown}; no tensor-core token in them"


def captured_kernel_names(cp, call: Callable[[int], None],
                          set_stream: Callable[[int], None] | None = None) -> list[str] | None:
    """Names of the kernels one ``call(0)`` launches, or None where they cannot be read (no cuda-python, a
    library that refuses capture). The call is captured on a side stream; nothing is timed."""
    try:
        from cuda.bindings import driver as drv
    except Exception:
        return None
    side = cp.cuda.Stream(non_blocking=True)
    graph = None
    try:
        with side:
            if set_stream:
                set_stream(side.ptr)
            call(0)
            side.synchronize()
            h = drv.CUstream(side.ptr)
            _ok(drv.cuStreamBeginCapture(h, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
            try:
                call(0)
            finally:
                graph = _ok(drv.cuStreamEndCapture(h))
        nodes, count = _ok(drv.cuGraphGetNodes(graph, 0))
        if count and not nodes:
            nodes, count = _ok(drv.cuGraphGetNodes(graph, count))
        names = []
        for node in nodes or []:
            if _ok(drv.cuGraphNodeGetType(node)) != drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
                continue
            params = _ok(drv.cuGraphKernelNodeGetParams(node))
            name = _ok(drv.cuFuncGetName(params.func))
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    except Exception:
        return None
    finally:
        if set_stream:
            set_stream(cp.cuda.get_current_stream().ptr)
        if graph is not None:
            try:
                drv.cuGraphDestroy(graph)
            except Exception:
                pass


def _ok(res):
    """cuda-python returns (err, *values): raise on an error, return the value(s)."""
    err, *vals = res if isinstance(res, tuple) else (res,)
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {err}")
    return vals[0] if len(vals) == 1 else tuple(vals)
