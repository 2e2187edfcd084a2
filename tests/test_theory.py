"""The theory formulas reproduce the seeds' worked numbers (seeds 002), within the seeds' rounding."""

import pytest

from hwprobe.judge import judge
from hwprobe.roofline import RooflineError, ridge
from hwprobe.specs import theory as th
from hwprobe.vocab import PROFILE_PRECISIONS

T = 1e12
G = 1e9

# The seeds' A100 per-SM table (multiply-adds per clock per SM), 108 SMs at 1.41 GHz.
SEEDS_A100 = [
    ("fp64", "cuda_core", 32, 9.7),
    ("fp32", "cuda_core", 64, 19.5),
    ("fp16", "cuda_core", 256, 78),
    ("int8", "cuda_core", 256, 78),
    ("fp64", "tensor_core", 64, 19.5),
    ("tf32", "tensor_core", 512, 156),
    ("fp16", "tensor_core", 1024, 312),
    ("int8", "tensor_core", 2048, 624),
    ("int4", "tensor_core", 4096, 1248),
]


@pytest.mark.parametrize(("precision", "unit", "fma", "tera"), SEEDS_A100)
def test_a100_seeds_table(precision, unit, fma, tera):
    assert th.rates("sm_80", precision, unit) == fma
    assert th.peak_ops(fma, 108, 1410) == pytest.approx(tera * T, rel=0.006)


def test_a100_int1_and_sparse():
    assert th.rates("sm_80", "int1", "tensor_core") == 16384
    assert th.sparse_factor("sm_80") == 2
    assert th.sparse_factor("sm_70") is None


def test_multiply_add_counts_two():
    assert th.peak_ops(1, 1, 1) == 2e6


def test_haswell_cpu_peak():
    assert th.cpu_peak(8, 3000, 16) == pytest.approx(0.38 * T, rel=0.015)   # seeds: 0.38 TFLOPS FP64
    assert th.cpu_peak(8, 3000, 32) == pytest.approx(0.76 * T, rel=0.015)   # seeds: 0.76 TFLOPS FP32
    assert th.cpu_peak(8, 3000, 16) == 384e9


@pytest.mark.parametrize(
    ("clock", "bits", "rate", "channels", "expect", "rel"),
    [
        (1333.33, 64, 2, 6, 128 * G, 0.002),       # Xeon Gold 6000: DDR4-2666 x 8 B x 6 ch
        (1333.33, 64, 2, 2, 42 * G, 0.02),         # i7-8700: x 2 ch (the seeds truncate 42.67)
        (1750, 384, 8, 1, 672 * G, 1e-9),          # Quadro RTX 6000: 14 Gbps x 48 B
        (877, 4096, 2, 1, 898 * G, 0.001),         # V100: 877 MHz x 512 B x 2
        (1188, 320, 16, 1, 760.32 * G, 1e-9),      # RTX 3080: GDDR6X 19.008 Gbps x 40 B
        (2133, 256, 2, 1, 137 * G, 0.005),         # Jetson AGX Xavier LPDDR4x
        (3201, 6016, 2, 1, 4.81e12, 0.001),        # H200 as the device reports it
    ],
)
def test_seed_bandwidths(clock, bits, rate, channels, expect, rel):
    assert th.dram_bandwidth(clock, bits, rate, channels) == pytest.approx(expect, rel=rel)


def test_ridge_points_from_seed_figures():
    # Jetson AGX Xavier: 1.4 / 11.2 / 22.4 T over 137 GB/s -> 10.2 / 81.8 / 163
    assert ridge(1.4 * T, 137 * G) == pytest.approx(10.2, rel=0.005)
    assert ridge(11.2 * T, 137 * G) == pytest.approx(81.8, rel=0.005)
    assert ridge(22.4 * T, 137 * G) == pytest.approx(163, rel=0.005)
    # RTX 3080: 29.8 / 119 / 238 T over 760.32 GB/s -> 39.2 / 156 / 313
    assert ridge(29.8 * T, 760.32 * G) == pytest.approx(39.2, rel=0.005)
    assert ridge(119 * T, 760.32 * G) == pytest.approx(156, rel=0.005)
    assert ridge(238 * T, 760.32 * G) == pytest.approx(313, rel=0.005)
    with pytest.raises(RooflineError):
        ridge(None, 1.0)
    with pytest.raises(RooflineError):
        ridge(1.0, 0)


def test_rtx3080_from_rates():
    # 68 SMs at 1710 MHz: FP32 29.8 T (128 FMA/clk/SM), FP16 tensor 119 T (512), INT8 tensor 238 T (1024)
    assert th.peak_ops(th.rates("sm_86", "fp32", "cuda_core"), 68, 1710) == pytest.approx(29.8 * T, rel=0.005)
    assert th.peak_ops(th.rates("sm_86", "fp16", "tensor_core"), 68, 1710) == pytest.approx(119 * T, rel=0.005)
    assert th.peak_ops(th.rates("sm_86", "int8", "tensor_core"), 68, 1710) == pytest.approx(238 * T, rel=0.005)


def test_xavier_from_rates():
    # 8 SMs; the seeds' figures imply 1.37 GHz (max clock 1377 MHz)
    for precision, unit, tera in (("fp32", "cuda_core", 1.4), ("fp16", "tensor_core", 11.2),
                                  ("int8", "tensor_core", 22.4)):
        assert th.peak_ops(th.rates("sm_72", precision, unit), 8, 1370) == pytest.approx(tera * T, rel=0.005)
        assert th.peak_ops(th.rates("sm_72", precision, unit), 8, 1377) == pytest.approx(tera * T, rel=0.01)


def test_hopper_rates():
    # H100 SXM whitepaper: FP32 66.9 and FP16 non-tensor 133.8 at 1980 MHz, FP16 tensor 989.4 at 1830 MHz
    assert th.peak_ops(th.rates("sm_90", "fp32", "cuda_core"), 132, 1980) == pytest.approx(66.9 * T, rel=0.001)
    assert th.peak_ops(th.rates("sm_90", "fp16", "cuda_core"), 132, 1980) == pytest.approx(133.8 * T, rel=0.001)
    assert th.peak_ops(th.rates("sm_90", "fp64", "tensor_core"), 132, 1980) == pytest.approx(66.9 * T, rel=0.001)
    assert th.peak_ops(th.rates("sm_90", "fp16", "tensor_core"), 132, 1830) == pytest.approx(989.4 * T, rel=0.001)
    assert th.rates("sm_90", "int4", "tensor_core") is None      # no int4 in wgmma


def test_precision_normalisation():
    assert th.rates("sm_90", "fp8_e4m3", "tensor_core") == th.rates("sm_90", "fp8", "tensor_core") == 4096
    assert th.rates("sm_90", "FP8_E5M2", "tensor_core") == 4096
    assert th.op_unit("int8") == "OP/s" and th.op_unit("bf16") == "FLOP/s"
    assert th.rates("sm_80", "fp8", "tensor_core") is None
    assert th.rates("sm_999", "fp32", "cuda_core") is None
    assert th.rates("sm_80", "fp32", "cpu") is None


def test_pcie_per_direction():
    assert th.pcie_bandwidth(3, 16) == pytest.approx(15.75e9, rel=0.001)
    assert th.pcie_bandwidth(4, 16) == pytest.approx(31.5e9, rel=0.001)
    assert th.pcie_bandwidth(5, 16) == pytest.approx(63.0e9, rel=0.001)
    assert th.pcie_bandwidth(6, 16) == pytest.approx(121e9, rel=0.001)
    assert th.pcie_bandwidth(4, 8) == pytest.approx(th.pcie_bandwidth(4, 16) / 2)
    assert th.pcie_bandwidth(7, 16) is None


def test_every_arch_names_known_precisions():
    for arch, facts in th.arch_table().items():
        assert arch.startswith("sm_")
        assert facts["source"]
        assert facts["shared_bytes_per_clk_per_sm"] == 128
        assert facts["l1_smem_bytes_per_sm"] >= facts["smem_max_bytes_per_sm"]
        for unit in th.UNITS:
            assert set(facts.get(unit, {})) <= set(PROFILE_PRECISIONS), (arch, unit)
        assert facts["cuda_core"]["fp32"] in (64, 128)


def test_attach_prefers_the_kernels_own_clock():
    from hwprobe.device import GpuInfo
    from hwprobe.measurement import ClockSummary, Measurement
    from hwprobe.specs.live import device_theory

    gpu = GpuInfo(index=0, name="NVIDIA H200", cc_major=9, cc_minor=0, sms=132, l2_bytes=60 << 20,
                  mem_bytes=141 << 30, mem_clock_mhz=3201, bus_width_bits=6016, sm_clock_max_mhz=1980)
    m = Measurement(probe="gpu.wgmma", metric="fp16.tensor_core.wgmma", kind="compute", value=900e12,
                    unit="FLOP/s", precision="fp16", exec_unit="tensor_core", path="instruction",
                    clocks=ClockSummary(sm_mhz=1980, sm_mhz_max=1980), params={"kernel_sm_mhz": [1740, 1750, 1760]})
    judge(m, device_theory(gpu))
    assert m.theory.clock_mhz == 1750
    assert m.theory.at_clock == pytest.approx(132 * 2048 * 2 * 1750e6)
    assert m.valid


def test_theory_edges():
    """Issue 35 (mutation run): PCIe Gen5 x16 exactly, an architecture without facts, a unit an arch lacks."""
    assert th.pcie_bandwidth(5, 16) == 32e9 * (128 / 130) * 16 / 8
    assert th.pcie_bandwidth(9, 16) is None and th.pcie_bandwidth(4, 0) is None
    assert th.sparse_factor("sm_999") is None and th.rates("sm_999", "fp16", "tensor_core") is None
    assert th.rates("sm_90", "fp16", "npu") is None
    assert th.rates("sm_53", "fp16", "tensor_core") is None                # Maxwell/Pascal Tegra: no tensor cores
    assert th.dram_bandwidth(1000, 64) == 1000e6 * 2 * 64 / 8              # DDR, one channel by default
