"""Files no one here wrote (tests/data/times/real, tests/data/kernels; sources in tests/data/README.md): every
one parses (exit 0) or is refused in one line (exit 2), and real kernel names map to the right unit."""

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe.analysis.classify import classify
from hwprobe.analysis.timings import parse
from hwprobe.errors import InputError
from tests.refs import H200_FULL

REAL = Path(__file__).parent / "data" / "times" / "real"
KERNELS = Path(__file__).parent / "data" / "kernels"
PROFILE = str(H200_FULL / "profile.json")


def test_nsys_stats_logs_new_and_old_formats():
    gcn = parse(REAL / "nsys_stats_torch_gcn.log")          # nsys 2023+: thousands separators, cut names
    assert gcn.format.startswith("Nsight Systems") and len(gcn.records) == 19
    sg = next(r for r in gcn.records if r.name == "ampere_sgemm_64x32_sliced1x4_tn")
    assert (sg.count, sg.total_s, sg.time_s) == (3, pytest.approx(42720e-9), pytest.approx(14240e-9))
    assert gcn.notes and "cut" in gcn.notes[0]
    old = parse(REAL / "nsys_stats_old_paddle.log")          # nsys 2020-21: "CUDA Kernel Statistics"
    assert len(old.records) == 27 and old.records[0].count == 6
    assert old.records[0].total_s == pytest.approx(58366e-9)
    flash = parse(REAL / "nsys_stats_flashattn.log")         # starts with "[1/8] [===": not JSON
    assert flash.records[0].total_s == pytest.approx(1.612880076) and flash.records[0].count == 2


def test_gzipped_chrome_trace_and_bomb(tmp_path):
    t = parse(REAL / "alexnet.pt.trace.json.gz")
    names = [r.name for r in t.kernel_records]
    assert any(n.startswith("sm80_xmma_fprop_implicit_gemm") for n in names) and len(t.kernel_records) > 10
    # the trace has CPU record_function ranges only: each kernel goes to the range that launched it
    fwd = [r for r in t.records if "|measure|forward" in r.name]
    assert fwd and any(k.startswith("sm80_xmma_fprop_implicit_gemm") for k in fwd[0].kernels)
    assert sum(r.total_s for r in t.records) == pytest.approx(sum(r.total_s for r in t.kernel_records))
    bomb = tmp_path / "bomb.pt.trace.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        for _ in range(600):
            f.write(b" " * 2**20)                             # 600 MiB of blanks, a few hundred KiB packed
    assert bomb.stat().st_size < 2**21
    r = subprocess.run([sys.executable, "-m", "hwprobe", "analyze", "resnet18", "--profile", PROFILE, "--times",
                        str(bomb)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "MiB" in r.stderr


def test_key_averages_with_memory_columns():
    t = parse(REAL / "torch_key_averages_memory.txt")
    assert len(t.records) == 21
    mm = next(r for r in t.records if r.name == "aten::mm")
    assert mm.count == 9280 and mm.total_s == pytest.approx(0.424531)
    flash = next(r for r in t.records if r.name.startswith("void flash::flash_fwd_kernel"))
    assert flash.count == 36


def test_tensorrt_fused_names_and_top_kernels():
    from hwprobe.analysis import analyze
    from hwprobe.analysis.advice import kernel_consumers

    times = [str(REAL / "mobilenet_v2_residuals.qat.onnx.engine.profile.json"),
             str(REAL / "mobilenet_v2_residuals.qat.onnx.engine.graph.json")]
    a = analyze("mobilenetv2", PROFILE, precision="int8", times=times)
    top = kernel_consumers(a.timing, n=100)
    assert top, "the top-kernels view must not be empty for TensorRT inputs"
    units = {k.name: k.unit for _, _, k, _ in top}
    assert units["turing_fp16_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1"] == "tensor_core"
    assert "CudaDepthwiseConvolution" in units                    # a layer without a tactic name stays in
    r = subprocess.run([sys.executable, "-m", "hwprobe", "analyze", "mobilenetv2", "--profile", PROFILE, "-p",
                        "int8", "--times", times[0], "--times", times[1]], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "top kernels" in r.stdout


@pytest.mark.parametrize("path", sorted(REAL.iterdir()), ids=lambda p: p.name)
def test_every_real_file_parses(path):
    t = parse(path)
    assert t.records


def test_garbage_is_one_line(tmp_path):
    for body in (b"[1/8] nothing here\n", b"\x1f\x8b\x08garbage", b"{\"traceEvents\": 5}", b"\x00\x01\x02"):
        p = tmp_path / "x.json"
        p.write_bytes(body)
        with pytest.raises(InputError):
            parse(p)


def test_real_kernel_families_map_to_their_unit():
    rows = [ln.rstrip("\n").split("\t") for ln in (KERNELS / "public_kernel_names.tsv").read_text().splitlines()
            if ln and not ln.startswith("#")]
    for name, _src, unit, prec in rows:
        k = classify(name)
        assert (k.unit, k.precision) == (unit, prec), k
    hta = {n: classify(n) for n in (KERNELS / "hta_kernel_names.txt").read_text().splitlines()}
    pick = lambda s: [k for n, k in hta.items() if s in n]  # noqa: E731
    assert {k.unit for k in pick("gemvx::kernel")} == {"cuda_core"}
    assert {k.family for k in pick("gemmk1_kernel")} == {"cublas-gemv"}
    assert {k.unit for k in pick("wgrad_alg0_engine")} == {"cuda_core"}
    assert {k.unit for k in pick("dgrad_engine")} == {"cuda_core"}
    assert {k.unit for k in pick("nchwToNhwcKernel")} == {"memory"}
    assert {k.family for k in pick("bn_fw_tr_1C11")} == {"norm"}
    assert {k.family for k in pick("max_pool_forward")} == {"pooling"}
    assert {k.family for k in pick("at::native::reduce_kernel")} <= {"reduction", "norm"}   # Welford: norm
    assert {(k.unit, k.precision) for k in pick("FillFunctor<c10::Half>")} == {("cuda_core", "fp16")}
    xmma = pick("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32")
    assert {(k.unit, k.precision, k.accumulator) for k in xmma} == {("tensor_core", "tf32", "fp32")}
    assert {k.unit for k in pick("ampere_gcgemm")} == {"cuda_core"}
    # most names say their unit: unknown is the exception (embedding and index bookkeeping kernels)
    assert sum(k.unit == "unknown" for k in hta.values()) < 0.2 * len(hta)


def test_advice_fits_the_unit():
    from hwprobe.analysis.advice import kernel_tip

    for name in ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>",
                 "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>",
                 "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float>"):
        assert "tensor" not in kernel_tip(classify(name)).lower(), name
    assert "Tensor Cores" in kernel_tip(classify("volta_sgemm_128x64_nn"))


def test_cublas_gemv_kernels_take_their_operand_type_not_their_index_type():
    """Issue 35 item 7: gemvx::kernel<int, int, __nv_bfloat16, ...> read as FP32 (its leading index types hid
    the operands). The real BF16/FP16 names (public_kernel_names.tsv) give their type; the FP32 ones of the HTA
    traces stay FP32."""
    gemv = [n for n in (KERNELS / "hta_kernel_names.txt").read_text().splitlines()
            if classify(n).family == "cublas-gemv"]
    assert len(gemv) >= 6 and {classify(n).precision for n in gemv} == {"fp32"}
    rows = [ln.split("\t") for ln in (KERNELS / "public_kernel_names.tsv").read_text().splitlines()
            if "gemv" in ln and not ln.startswith("#")]
    got = {(classify(r[0]).family, classify(r[0]).precision) for r in rows}
    assert got == {("cublas-gemv", "bf16"), ("cublas-gemv", "fp16")}
