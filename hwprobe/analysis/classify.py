"""Kernel name -> execution unit and precision.

Confidence says how much the name can be trusted:
- ``documented``: the naming is documented: CUTLASS 2.x and 3.x procedural names (``tensorop``/``simt``, the
  accumulator letter, the operand types);
- ``heuristic``: cuBLAS/cuDNN/TensorRT names are undocumented: the seeds' families (h884/h1688 = HMMA,
  i8816/imma = IMMA, hcudnn/scudnn/icudnn = CUDA cores), sgemm/hgemm, ``sm90_xmma_...``, ``nvjet_...``,
  ``gmma``; the reading follows their observed structure;
- ``unknown``: nothing in the name says; hwprobe does not guess.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache

from hwprobe.vocab import ExecUnit, Precision

# CUTLASS element tokens -> hwprobe precision
_TYPES = {"f64": "fp64", "f32": "fp32", "tf32": "tf32", "f16": "fp16", "bf16": "bf16", "e4m3": "fp8",
          "e5m2": "fp8", "s8": "int8", "u8": "int8", "s4": "int4", "u4": "int4", "b1": "int1", "s32": "int32",
          "fp16": "fp16", "fp32": "fp32", "int8": "int8", "i8": "int8", "i32": "int32", "f8": "fp8"}
_ACC = {"s": "fp32", "h": "fp16", "d": "fp64", "i": "int32", "c": "fp32 (complex)", "z": "fp64 (complex)"}


GEMM_FAMILIES = ("cutlass3x", "cutlass2x", "cublas/cudnn xmma", "named", "cudnn-legacy")


@dataclass(frozen=True)
class KernelClass:
    name: str
    unit: str                 # "tensor_core" | "cuda_core" | "memory" | "unknown"
    precision: str | None     # operand precision, where the name says
    accumulator: str | None
    family: str               # cutlass3x, cutlass2x, cublas-xmma, cublas-nvjet, seed-hmma, ...
    confidence: str           # documented | heuristic | unknown
    why: str

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def gemm_on_cuda_cores(self) -> bool:
        """A GEMM/convolution kernel that ran on CUDA cores although Tensor Cores could have taken it (not a
        matrix-vector product, which is bandwidth-bound on any unit)."""
        return self.unit == ExecUnit.CUDA_CORE and self.family in GEMM_FAMILIES


def _cutlass3(n: str, name: str) -> KernelClass | None:
    # cutlass3x_sm90_tensorop_[s64x128x16|tf32]gemm_f16_f16_f32_f16_f16_128x128x64_...
    m = re.search(r"cutlass3x_sm\d+_(tensorop|simt)_([a-z]?)(?:\d+x\d+x\d+)?(tf32)?gemm_([a-z0-9]+)_([a-z0-9]+)_"
                  r"([a-z0-9]+)", n)
    if not m:
        return None
    unit = ExecUnit.TENSOR_CORE if m.group(1) == "tensorop" else ExecUnit.CUDA_CORE
    a, acc = _TYPES.get(m.group(4)), _TYPES.get(m.group(6))
    prec = "tf32" if (m.group(3) and a == "fp32") else a
    return KernelClass(name, unit, prec, acc, "cutlass3x", "documented",
                       f"CUTLASS 3.x name: {m.group(1)}, operands A={m.group(4)} B={m.group(5)}, "
                       f"accumulator {m.group(6)}")


def _cutlass2(n: str, name: str) -> KernelClass | None:
    # cutlass_tensorop_s16816gemm_f16_..., cutlass_80_tensorop_bf16_s16816gemm_relu_..., cutlass_simt_sgemm_...
    m = re.search(r"cutlass(?:_\d+)?_(tensorop|simt|wmma_tensorop)_(?:([a-z0-9]+)_)?([shdizc])(\d*)(tf32|bf16|f16)?"
                  r"(gemm|fprop|dgrad|wgrad)([a-z0-9_]*)", n)
    if not m:
        return None
    unit = ExecUnit.CUDA_CORE if m.group(1) == "simt" else ExecUnit.TENSOR_CORE
    acc = _ACC.get(m.group(3))
    after = next((t for t in m.group(7).split("_") if t in _TYPES), None)   # ..._optimized_f16_...: operand type
    op_type = m.group(5) or (m.group(2) if m.group(2) in _TYPES else None) or after
    prec = _TYPES.get(op_type) if op_type else None
    if prec is None and unit == ExecUnit.CUDA_CORE:
        prec = {"s": "fp32", "h": "fp16", "d": "fp64", "i": "int8"}.get(m.group(3))
    if prec is None and m.group(3) == "i":
        prec = "int8"
    shape = f" instruction {m.group(4)}" if m.group(4) else ""
    return KernelClass(name, unit, prec, acc, "cutlass2x", "documented",
                       f"CUTLASS 2.x name: {m.group(1)}, accumulator letter {m.group(3)!r}{shape}")


_XMMA_TYPES = re.compile(r"(?:gemm|fprop|dgrad|wgrad|conv)[a-z0-9_]*?_((?:bf16|f16|f32|tf32|i8|f8|e4m3|e5m2|f64)+)_"
                         r"((?:bf16|f16|f32|tf32|i8|i32|f8|e4m3|f64)+)")


_XMMA_TOKENS = re.compile(r"bf16|tf32|f16|f32|i8|i32|e4m3|e5m2|f8|f64")
_TENSOR_TOKENS = ("tf32", "bf16", "f16", "i8", "e4m3", "e5m2", "f8")   # not vocab: name tokens of Tensor Core types


def _xmma(n: str, name: str) -> KernelClass | None:
    m = re.search(r"sm(\d+)_xmma_", n)
    if not m:
        return None
    t = _XMMA_TYPES.search(n)
    acc_tok = _XMMA_TOKENS.findall(t.group(2)) if t else []
    ops = (_XMMA_TOKENS.findall(t.group(1)) + acc_tok) if t else []
    acc = _TYPES.get(acc_tok[-1]) if acc_tok else None      # f16f16_f16f32: C=f16, accumulator f32
    if re.search(r"_(?:ffma|dfma|hfma2?|simt|idp4a)(?:_|$)", n):
        unit_op = re.search(r"_(ffma|dfma|hfma2?|simt|idp4a)(?:_|$)", n).group(1)
        prec = _TYPES.get(ops[0]) if ops else {"ffma": "fp32", "dfma": "fp64"}.get(unit_op, "fp16")
        return KernelClass(name, ExecUnit.CUDA_CORE, prec, acc, "cublas/cudnn xmma", "heuristic",
                           f"sm{m.group(1)} xmma kernel built on {unit_op.upper()} (CUDA-core instructions), "
                           f"operands {prec}")
    prec = next((_TYPES[x] for x in ops if x in _TENSOR_TOKENS), None)
    if prec is None and "tensor" in n:
        prec = _TYPES.get(ops[0]) if ops else None
    if prec:
        return KernelClass(name, ExecUnit.TENSOR_CORE, prec, acc, "cublas/cudnn xmma", "heuristic",
                           f"sm{m.group(1)} xmma kernel with {prec} operands (xmma = Tensor Core MMA family; "
                           "cuBLAS/cuDNN names are undocumented)")
    return KernelClass(name, "unknown", _TYPES.get(ops[0]) if ops else None, acc, "cublas/cudnn xmma", "unknown",
                       "xmma kernel with FP32/FP64 operands only: Tensor Cores (TF32, DMMA) or CUDA cores; "
                       "the name does not say")


_NVJET_LETTERS = {"h": "fp16", "b": "bf16", "t": "tf32", "s": "fp32", "d": "fp64", "q": "fp8", "e": "fp8"}


def _nvjet(n: str, name: str) -> KernelClass | None:
    m = re.search(r"nvjet_(?:sm\d+_)?([a-z]{3,5})_", n)
    if not m:
        return None
    code = m.group(1)
    prec = _NVJET_LETTERS.get(code[0])
    return KernelClass(name, ExecUnit.TENSOR_CORE, prec, _NVJET_LETTERS.get(code[1]) if len(code) > 1 else None,
                       "cublas-nvjet", "heuristic",
                       f"cuBLAS nvjet kernel (Hopper+ warpgroup GEMMs), type code {code!r} read as "
                       f"A/B={prec or '?'}; nvjet naming is undocumented")


# The seeds' families (002 "Nsight System/trtexec") and the classic cuBLAS/cuDNN names.
_SEED = [
    (r"(?:^|[_\W])h(?:884|1688|16816)", ExecUnit.TENSOR_CORE, "fp16", "HMMA: FP16 Tensor Core (h884/h1688/h16816)"),
    (r"(?:^|[_\W])s(?:884|1688|16816)(?:gemm|cudnn)?", ExecUnit.TENSOR_CORE, None,
     "s884/s1688/s16816: Tensor Core MMA with FP32 accumulation"),
    (r"i(?:8816|16832)|imma", ExecUnit.TENSOR_CORE, "int8", "IMMA: INT8 Tensor Core (i8816/imma)"),
    (r"hcudnn", ExecUnit.CUDA_CORE, "fp16", "hcudnn: FP16 on CUDA cores"),
    (r"scudnn", ExecUnit.CUDA_CORE, "fp32", "scudnn: FP32 on CUDA cores"),
    (r"icudnn", ExecUnit.CUDA_CORE, "int8", "icudnn: INT8 (dp4a) on CUDA cores"),
    (r"(?:^|[_\W])hgemm", ExecUnit.CUDA_CORE, "fp16", "hgemm: FP16 GEMM on CUDA cores"),
    (r"(?:^|[_\W])sgemm", ExecUnit.CUDA_CORE, "fp32", "sgemm: FP32 GEMM on CUDA cores"),
    (r"(?:^|[_\W])dgemm", ExecUnit.CUDA_CORE, "fp64", "dgemm: FP64 GEMM on CUDA cores"),
    (r"(?:^|[_\W])g?cgemm", ExecUnit.CUDA_CORE, "fp32",
     "cgemm/gcgemm: complex FP32 GEMM on CUDA cores (FFT convolution)"),
    (r"(?:^|[_\W])zgemm", ExecUnit.CUDA_CORE, "fp64", "zgemm: complex FP64 GEMM on CUDA cores"),
    (r"wgmma|gmma", ExecUnit.TENSOR_CORE, None, "(w)gmma: Hopper warpgroup MMA on Tensor Cores"),
    (r"hmma", ExecUnit.TENSOR_CORE, "fp16", "HMMA: FP16 Tensor Core"),
]
_ELEMENTWISE = [
    (r"nchwtonhwc|nhwctonchw|nchw2nhwc|nhwc2nchw|reformat|copypacked|memcpy|memset|transpose|permute|"
     r"catarray|cat_array|direct_copy|copy_kernel|splittensor|concattensor|gather|scatter|index_select",
     "memory", "layout", "data movement (layout conversion, copy, concat, gather): no arithmetic"),
    (r"ncclkernel|nccldevkernel|nccl_", "memory", "communication", "NCCL collective: link and memory traffic"),
    (r"bn_fw|bn_bw|bnforward|bnbackward|batch_?norm", ExecUnit.CUDA_CORE, "norm",
     "batch normalization: CUDA cores, memory-bound"),
    (r"layer_?norm|rms_?norm|rowwisemoments|groupnorm|group_norm|welford", ExecUnit.CUDA_CORE, "norm",
     "layer/RMS/group normalization: CUDA cores, memory-bound"),
    (r"pool", ExecUnit.CUDA_CORE, "pooling", "pooling: CUDA cores, memory-bound"),
    (r"reduce|splitkreduce|devicereduce|devicescan|devicesegmented|argmax|argmin|\bsum_|cub::", ExecUnit.CUDA_CORE,
     "reduction", "reduction/scan: CUDA cores, memory-bound"),
    (r"softmax", ExecUnit.CUDA_CORE, "pointwise", "softmax: CUDA cores, memory-bound"),
    (r"triton_(?:poi|red|per)_", ExecUnit.CUDA_CORE, "pointwise",
     "Triton (Inductor) pointwise/reduction kernel: CUDA cores"),
    (r"elementwise|vectorized_|relu|activation|generickernel|pointwise|fill_kernel|functor|epilogue|"
     r"silu|gelu|rotary|dropout|distribution|bias", ExecUnit.CUDA_CORE, "pointwise", "pointwise kernel: CUDA cores"),
]
# C++ template arguments naming the element type (PyTorch, cuDNN, CUTLASS, flash-attention), earliest wins
_TEMPLATE_TYPES = [(r"c10::bfloat16|__nv_bfloat16|cutlass::bfloat16_t|\bbfloat16\b|\bbf16\b", "bf16"),
                   (r"c10::half|__half\b|cutlass::half_t|\bhalf\b|\bfp16\b|\bf16\b", "fp16"),
                   (r"c10::float8_e4m3|__nv_fp8|e4m3|e5m2", "fp8"),
                   (r"\bdouble\b", "fp64"), (r"\bfloat\b|\bf32\b", "fp32"),
                   (r"\bint8_t\b|\bsigned char\b", "int8"), (r"\blong\b|\bint\b", "int")]


def template_precision(n: str) -> str | None:
    """The element type a kernel's template arguments (or suffix) name first: ``<c10::BFloat16>`` -> bf16."""
    n = re.sub(r"\((?:int|bool|long|unsigned [a-z ]+|signed [a-z ]+)\)", "", n)     # nsys's "(int)4" casts
    best = None
    for pat, prec in _TEMPLATE_TYPES:
        m = re.search(pat, n)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), prec)
    return best[1] if best and best[1] != "int" else None


def _attention(n: str, name: str) -> KernelClass | None:
    """FlashAttention (flash_fwd/flash_bwd), PyTorch's memory-efficient attention (fmha_cutlassF/B), cuDNN's
    SDPA engines: fused attention, its two GEMMs on Tensor Cores at the operand precision."""
    if not re.search(r"flash_(?:fwd|bwd|attn)|flash::|fmha|flashattention|sdpa.*(?:flash|fprop|bprop)|"
                     r"fused_multihead_attention|attention_?kernel", n):
        return None
    prec = template_precision(n)
    if prec == "fp32":
        return KernelClass(name, "unknown", "fp32", None, "attention", "heuristic",
                           "fused attention with FP32 operands: TF32 Tensor Cores or CUDA cores; the name does not "
                           "say")
    acc = "fp32" if prec in (Precision.FP16, Precision.BF16) else None
    return KernelClass(name, ExecUnit.TENSOR_CORE, prec, acc, "attention",
                       "heuristic", f"fused attention kernel (flash/fmha/SDPA) with {prec or 'unnamed'} operands: "
                       "Q.K^T and P.V on Tensor Cores")


# cuBLAS matrix-vector and skinny kernels: CUDA cores, bound by reading the matrix once
_GEMV = re.compile(r"gemv|gemmk1|gemmsn|gemvx|dot_kernel|scal_kernel|axpy_kernel")


_GEMV_TENSOR = re.compile(r"cublasgemvtensor\w*<([^<>]+)>")
_INDEX_ARGS = re.compile(r"<(?:\s*(?:int|long|unsigned int)\s*,)+")


def gemv_precision(n: str) -> str | None:
    """The operand type of a cuBLAS gemv kernel: its matrix's ``cublasGemvTensor...<__nv_bfloat16 const>``, else
    the first element type after the leading index types (``gemvx::kernel<int, int, __half, ...``; nsys cuts
    names short). Read plainly, ``<int, int, ...`` names an integer kernel, and a BF16 gemvx read as FP32."""
    m = _GEMV_TENSOR.search(n)
    if m and (prec := template_precision(m.group(1))):
        return prec
    return template_precision(_INDEX_ARGS.sub("<", n, count=1))


def _gemv(n: str, name: str) -> KernelClass | None:
    if not _GEMV.search(n):
        return None
    return KernelClass(name, ExecUnit.CUDA_CORE, gemv_precision(n) or "fp32", None, "cublas-gemv", "heuristic",
                       "cuBLAS matrix-vector/skinny GEMM (gemv, gemmk1, gemmSN): CUDA cores, memory-bound by "
                       "construction (each weight is read once per vector)")


def _cudnn_legacy(n: str, name: str) -> KernelClass | None:
    """cuDNN's pre-xmma engines: implicit-GEMM, wgrad/dgrad, Winograd and FFT convolutions on CUDA cores."""
    m = re.search(r"wgrad_alg\d|dgrad_engine|dgrad2d|wgrad2d|implicit_convolve|explicit_convolve|winograd|"
                  r"fft2d_|fft_|conv2d_grouped_direct|conv_depthwise|depthwise_conv", n)
    if not m:
        return None
    return KernelClass(name, ExecUnit.CUDA_CORE, template_precision(n) or "fp32", None, "cudnn-legacy", "heuristic",
                       f"cuDNN {m.group(0).rstrip('_')} engine: convolution on CUDA cores (no Tensor Core MMA)")


def _type_hint(n: str) -> str | None:
    """The first operand-type token in a name (``..._f16_...``, ``..._fp16_...``), if any."""
    return next((_TYPES[t] for t in re.split(r"[^a-z0-9]+", n) if t in _TYPES), None)


@lru_cache(maxsize=65536)
def classify(name: str) -> KernelClass:
    """The unit and precision a kernel name shows, with how far to trust it."""
    n = name.strip().lower()
    for rule in (_attention, _cutlass3, _cutlass2, _xmma, _nvjet, _gemv, _cudnn_legacy):
        k = rule(n, name)
        if k:
            return k
    for pat, unit, prec, why in _SEED:
        if re.search(pat, n):
            p = prec or _type_hint(n)
            return KernelClass(name, unit, p, "fp32" if pat.startswith(r"(?:^|[_\W])s(") else None, "named",
                               "heuristic", why)
    for pat, unit, family, why in _ELEMENTWISE:
        if re.search(pat, n):
            return KernelClass(name, unit, template_precision(n), None, family, "heuristic", why)
    return KernelClass(name, "unknown", None, None, "unknown", "unknown", "no known naming pattern")


SHORTENED = "kernel names shortened to fit ('..' marks a cut): --wide shows them whole"
_QUALIFIER = re.compile(r"\b(?:[A-Za-z_]\w*::)+")


def short_name(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters for a table that must fit the terminal: a name that fits stays whole;
    else 'void ' and namespace qualifiers (at::native::, cudnn::engines_precompiled::) go first, as they tell
    kernels apart least, then the tail, marked '..' (no ellipsis character: '…' marks a cell rich cut)."""
    if len(name) <= width:
        return name
    s = " ".join(_QUALIFIER.sub("", re.sub(r"^void\s+", "", name.strip())).split())
    if len(s) <= width:
        return s
    return s[: max(width - 2, 1)].rstrip(" ,<") + ".."
