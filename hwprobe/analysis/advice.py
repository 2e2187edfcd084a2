"""The top time consumers and what to do about each, from its bound, its efficiency and the what-if:
fuse, quantize, align, or write a custom kernel (the choices 004 makes from its top-5 table)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hwprobe.analysis.classify import KernelClass
from hwprobe.analysis.whatif import CHAIN
from hwprobe.vocab import ExecUnit

if TYPE_CHECKING:
    from hwprobe.analysis.join import Joined
    from hwprobe.analysis.roofline import Analysis

NO_WORK = ("reshape", "concat", "other")
SLOW = 0.5          # below half of the attainable rate the kernel, not the hardware, is the limit
TOO_SMALL = 0.05    # below 5%: a layer too small to fill the GPU (launch and latency, not throughput)
NEAR_ROOF = 0.7
FUSE_HOW = {"conv": " (Conv+BN+ReLU)", "bn": " (Conv+BN+ReLU)", "act": " (Conv+BN+ReLU)",
            "eltwise": " (into the producing conv's epilogue)", "gemm": " (bias and activation in the GEMM epilogue)",
            "pool": " (into the producer)", "softmax": " (attention kernels fuse softmax)"}


@dataclass
class Consumer:
    name: str
    layers: list[int]
    time_s: float
    measured: bool
    share: float
    ops: float
    bytes: float
    bound: str
    of_attainable: float | None
    kernel: KernelClass | None
    advice: list[str] = field(default_factory=list)


def _whatif(a: Analysis, layers: list[int]) -> tuple[str, float] | None:
    """The best lower-precision step's speed-up for these layers, from the what-if placements."""
    cur = a.options.precision
    later = CHAIN[CHAIN.index(cur) + 1:] if cur in CHAIN else ()
    base = sum(a.by_precision[cur][i].time_s for i in layers) if cur in a.by_precision else None
    best = None
    for p in later:
        if p in a.by_precision and base:
            s = base / sum(a.by_precision[p][i].time_s for i in layers)
            if best is None or s > best[1]:
                best = (p, s)
    return best


def advise(a: Analysis, c: Consumer) -> list[str]:
    df = a.layers.iloc[c.layers]
    ops_kinds = set(df["op"])
    out = []
    if ops_kinds <= set(NO_WORK) or c.ops == 0:
        return ["moves bytes and does no arithmetic: remove it or fuse it into a neighbour"]
    tc = any(a.model.layers[i].tensor_core_capable for i in c.layers)
    if c.kernel and tc and c.kernel.unit == ExecUnit.CUDA_CORE:
        out.append(f"ran on CUDA cores, not Tensor Cores (kernel {c.kernel.name[:48]}, {c.kernel.confidence}): "
                   "check the precision flags and the channel alignment")
    aligns = [x for x in df.get("align", []) if x]
    if aligns:
        out.append(f"align: {aligns[0]}")
    if any(a.model.layers[i].depthwise for i in c.layers):
        out.append("depthwise conv: low intensity by construction: fuse it with the following 1x1 conv "
                   "(a custom kernel/plugin)")
    eff = c.of_attainable
    wi = _whatif(a, c.layers)
    q = f"{wi[0].upper()} what-if {wi[1]:.2g}x" if wi and wi[1] > 1.05 else ""
    if eff is not None and eff > 1.05:
        out.append(f"runs at {eff:.0%} of the per-layer roofline: fused or served from cache (L2); the prediction "
                   "is pessimistic here")
    elif eff is not None and eff < TOO_SMALL:
        out.append(f"reaches {100 * eff:.2g}% of the roofline's rate: at this size launch and latency bound it, not "
                   "compute or bandwidth: fuse layers, raise the batch, or capture CUDA graphs")
    elif eff is not None and eff < SLOW:
        out.append(f"reaches {eff:.0%} of its attainable rate: the kernel, not the hardware, is the limit: "
                   "try other tactics/kernels or write a custom kernel")
    elif c.bound == "memory":
        how = FUSE_HOW.get(next(iter(sorted(ops_kinds & set(FUSE_HOW))), ""), "")
        out.append(f"memory-bound: fuse it with its neighbours{how} to cut bytes" + (f"; quantize ({q})" if q else ""))
    elif aligns:
        out.append("compute-bound because misaligned: padding the channels recovers the roof first"
                   + (f"; then {q}" if q else ""))
    else:
        lead = ("compute-bound near the roof: " if eff is not None and eff >= NEAR_ROOF else
                "compute-bound on the roofline: ")
        out.append(lead + (f"lower precision helps ({q})" if q else "only a smaller model or sparsity helps"))
    return out


def top_consumers(a: Analysis, joined: Joined | None = None, n: int = 5) -> list[Consumer]:
    """The ``n`` biggest time consumers: measured groups where times were joined, else predicted layers."""
    out: list[Consumer] = []
    df = a.layers
    if joined and any(g.measured_s for g in joined.groups):
        total = sum(g.measured_s for g in joined.groups)
        if not joined.nested:
            total += sum(r.time_s or 0 for r in joined.unmatched + joined.reformats)
        for g in sorted(joined.groups, key=lambda g: g.measured_s, reverse=True)[:n]:
            sub = df.iloc[g.layers]
            bound = "compute" if (sub.loc[sub["bound"] == "compute", "time_s"].sum() >
                                  sub.loc[sub["bound"] == "memory", "time_s"].sum()) else "memory"
            out.append(Consumer(g.name, g.layers, g.measured_s, True, g.measured_s / total if total else 0.0,
                                g.ops, g.bytes, bound, g.of_attainable, g.kernel))
    else:
        total = float(df["time_s"].sum())
        for i, r in df.sort_values("time_s", ascending=False).head(n).iterrows():
            out.append(Consumer(r["name"], [int(i)], float(r["time_s"]), False,
                                float(r["time_s"]) / total if total else 0.0, float(r["ops"]), float(r["bytes"]),
                                r["bound"], None, None))
    for c in out:
        c.advice = advise(a, c)
    return out


KERNEL_TIPS = {
    "cublas-gemv": "matrix-vector product: memory-bound on CUDA cores by construction: batch more rows per weight "
                   "read, or quantize the weights to cut bytes",
    "attention": "fused attention: compare its rate with the roof at its precision; longer sequences or larger "
                 "head dims fill the Tensor Cores better",
    "layout": "data movement: remove the layout conversion (one layout end to end, e.g. channels_last) or fuse it",
    "communication": "collective: overlap it with compute, or shrink the bytes exchanged",
    "norm": "normalization: memory-bound: fuse it into the neighbouring GEMM's epilogue or prologue",
    "pooling": "pooling: memory-bound: fuse it into the producer",
    "reduction": "reduction: memory-bound: fuse it into the producer's epilogue",
    "pointwise": "pointwise kernel: memory-bound: fuse it into the producer's epilogue",
}


def kernel_tip(k: KernelClass) -> str:
    """What to do about one kernel, in terms of the unit it runs on (a CUDA-core or memory kernel is never told
    to look at the tensor pipe)."""
    if k.gemm_on_cuda_cores:
        return "GEMM/conv on CUDA cores: make it eligible for Tensor Cores (precision, alignment)"
    if k.family in KERNEL_TIPS:
        return KERNEL_TIPS[k.family]
    if k.unit == "memory":
        return "data movement: remove it or fuse it"
    if k.unit == ExecUnit.TENSOR_CORE:
        return "on Tensor Cores: compare its rate with the measured roof (ncu or a per-layer join)"
    if k.unit == ExecUnit.CUDA_CORE:
        return "CUDA-core kernel: compare its rate with the CUDA-core roof at its precision"
    return "unit unknown from the name: ncu's pipe utilisation (tensor vs FMA pipes) tells which roof applies"


def kernel_consumers(joined: Joined, n: int = 5) -> list[tuple[float, float, KernelClass, str]]:
    """(total time, share, class, advice) of the biggest kernels: for kernel-level files (nsys), and for layer
    records whose names match no layer (a TensorRT profile with its layer info). Unclassified kernels stay in."""
    ks = [(r.total_s or (r.time_s or 0) * (r.count or 1), k) for r, k in joined.kernels
          if r.is_kernel or r.time_s]
    total = sum(t for t, _ in ks) or 1.0
    return [(t, t / total, k, kernel_tip(k)) for t, k in sorted(ks, key=lambda x: x[0], reverse=True)[:n]]
