"""Kernel names -> unit and precision, with honest confidence."""

import pytest

from hwprobe.analysis.classify import classify

CASES = [
    # the seeds' names (002: h884 = HMMA = FP16 Tensor Core, i8816 = IMMA, scudnn = CUDA cores)
    ("volta_h884gemm_256x128_ldg8_nn", "tensor_core", "fp16", "heuristic"),
    ("turing_h1688gemm_128x128_ldg8_tn", "tensor_core", "fp16", "heuristic"),
    ("turing_fp16_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1", "tensor_core", "int8", "heuristic"),
    ("trt_turing_imma_int8x4_64x64", "tensor_core", "int8", "heuristic"),
    ("volta_hcudnn_128x64_relu_interior_nn_v1", "cuda_core", "fp16", "heuristic"),
    ("volta_scudnn_128x64_relu_interior_nn_v1", "cuda_core", "fp32", "heuristic"),
    ("volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1", "cuda_core", "int8", "heuristic"),
    # today's cuBLAS/cuDNN names
    ("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
     "tensor_core", "fp16", "heuristic"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
     "__5x_cublas", "tensor_core", "bf16", "heuristic"),
    ("sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16", "tensor_core", "tf32",
     "heuristic"),
    ("sm75_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_"
     "tilesize64x32x64_stage1_warpsize2x1x1_g1_tensor8x8x16_simple_t1r1s1", "tensor_core", "int8", "heuristic"),
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT", "tensor_core", "fp16", "heuristic"),
    ("nvjet_tst_128x128_64x4_1x2_h_bz_coopA", "tensor_core", "tf32", "heuristic"),
    ("sm90_gemm_f16_f16_f32_gmma_ss_warpspecialized", "tensor_core", "fp16", "heuristic"),
    ("ampere_sgemm_128x64_nn", "cuda_core", "fp32", "heuristic"),
    ("maxwell_hgemm_256x128_nt", "cuda_core", "fp16", "heuristic"),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x3_nn", "tensor_core", "fp16", "heuristic"),
    # CUTLASS 2.x: the letter before the instruction shape is the accumulator; simt = CUDA cores
    ("cutlass_tensorop_s16816gemm_f16_256x128_32x3_nn_align8", "tensor_core", "fp16", "documented"),
    ("cutlass_tensorop_h16816gemm_f16_256x128_32x3_nn_align8", "tensor_core", "fp16", "documented"),
    ("cutlass_tensorop_s1688tf32gemm_256x128_16x3_tn_align4", "tensor_core", "tf32", "documented"),
    ("cutlass_tensorop_i16832gemm_s8_256x128_64x3_tn_align16", "tensor_core", "int8", "documented"),
    ("cutlass_simt_sgemm_128x128_8x2_nn_align1", "cuda_core", "fp32", "documented"),
    ("cutlass_simt_dgemm_128x128_8x2_nn_align1", "cuda_core", "fp64", "documented"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(Params)",
     "tensor_core", "bf16", "documented"),
    ("cutlass_tensorop_s16816fprop_optimized_f16_128x128_64x4_nhwc", "tensor_core", "fp16", "documented"),
    # CUTLASS 3.x: cutlass3x_sm90_tensorop_[shape]gemm_<A>_<B>_<acc>_<C>_<D>_...
    ("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f32_128x128x64_2x1x1_0_ntn_align8", "tensor_core", "fp16",
     "documented"),
    ("cutlass3x_sm90_tensorop_s64x128x32gemm_e4m3_e4m3_f32_bf16_bf16_64x128x128_2x1x1_0_tnt_align16_"
     "warpspecialized_epi_nosmem", "tensor_core", "fp8", "documented"),
    ("cutlass3x_sm90_tensorop_tf32gemm_f32_f32_f32_f32_f32_128x128x32_2x1x1_0_tnn_align4", "tensor_core", "tf32",
     "documented"),
    ("cutlass3x_sm90_simt_gemm_f32_f32_f32_f32_f32_128x128x8_1x1x1_0_nnn_align1", "cuda_core", "fp32",
     "documented"),
]


@pytest.mark.parametrize("name,unit,precision,confidence", CASES)
def test_known_names(name, unit, precision, confidence):
    k = classify(name)
    assert (k.unit, k.precision, k.confidence) == (unit, precision, confidence), k


def test_accumulator_letters():
    assert classify("cutlass_tensorop_s16816gemm_f16_256x128_32x3_nn_align8").accumulator == "fp32"
    assert classify("cutlass_tensorop_h16816gemm_f16_256x128_32x3_nn_align8").accumulator == "fp16"
    assert classify("cutlass_tensorop_i16832gemm_s8_256x128_64x3_tn_align16").accumulator == "int32"
    assert classify("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f32_128x128x64").accumulator == "fp32"


def test_unknown_is_said_not_guessed():
    for name in ("my_custom_kernel", "kernel_42"):
        k = classify(name)
        assert (k.unit, k.precision, k.confidence) == ("unknown", None, "unknown")
    # fused attention is Tensor Core work; with no template arguments the precision stays unsaid
    k = classify("flash_fwd_kernel")
    assert (k.unit, k.precision, k.family) == ("tensor_core", None, "attention")
    # an xmma kernel with FP32 operands only: TF32 Tensor Cores or CUDA cores, the name does not say
    k = classify("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8")
    assert k.unit == "unknown" and k.precision == "fp32"


def test_pointwise_and_copies():
    assert classify("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>").unit \
        == "cuda_core"
    assert classify("genericReformat::copyPackedKernel").unit == "memory"


def test_short_name_drops_void_and_namespaces_before_the_tail():
    from hwprobe.analysis.classify import short_name

    name = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >"
    assert short_name(name, len(name)) == name                                  # a name that fits stays whole
    assert short_name(name, 60) == "vectorized_elementwise_kernel<4, CUDAFunctor_add<float> >"
    assert short_name(name, 24) == "vectorized_elementwise.."
    assert all(len(short_name(name, w)) <= w for w in range(3, 90))
