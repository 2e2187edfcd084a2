"""Datasheet entries, matching device names, theory beside measurements, and disagreements."""

import pytest

from hwprobe import specs
from hwprobe.device import CpuInfo, GpuInfo
from hwprobe.errors import InputError
from hwprobe.judge import judge
from hwprobe.measurement import ClockSummary, Measurement
from hwprobe.specs import live
from hwprobe.specs import theory as th
from hwprobe.vocab import PROFILE_PRECISIONS

T = 1e12
G = 1e9

REQUIRED = [
    "V100 SXM2", "V100 PCIe", "T4", "A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB", "A100 PCIe 80GB",
    "A10", "L4", "L40S", "RTX 3080", "RTX 4090", "H100 SXM", "H100 PCIe", "H200 SXM", "Quadro RTX 6000",
    "Jetson AGX Xavier", "Jetson Xavier NX", "Jetson AGX Orin 64GB", "Jetson AGX Orin 32GB",
    "Jetson Orin NX 16GB", "Jetson Orin Nano 8GB",
    "Haswell 8C 3.0GHz", "Xeon Gold 6000 (DDR4-2666 x6)", "i7-8700 (DDR4-2666 x2)",
]

# Datasheet figures that differ from theory at their own clock by more than TOL, and why.
TOL = 0.02
KNOWN_GAPS: dict[tuple[str, str], str] = {}


def gpu(name, cc, sms, clock, mem_clock, bus, mem_gib=80, integrated=False, **nvml):
    return GpuInfo(index=0, name=name, cc_major=cc[0], cc_minor=cc[1], sms=sms, l2_bytes=50 << 20,
                   mem_bytes=int(mem_gib * 2**30), mem_clock_mhz=mem_clock, bus_width_bits=bus,
                   sm_clock_max_mhz=clock, integrated=integrated, nvml=dict(nvml))


def h200(**kw):
    args = dict(name="NVIDIA H200", cc=(9, 0), sms=132, clock=1980, mem_clock=3201, bus=6016, mem_gib=140.4,
                pcie_gen_max=5, pcie_width_max=16)
    args.update(kw)
    return gpu(**args)


def measurement(value, kind="compute", precision="fp16", unit="tensor_core", level=None, sm_mhz=None,
                sm_mhz_max=None, mem_mhz=None, op_unit="FLOP/s", params=None):
    clocks = ClockSummary(sm_mhz=sm_mhz, sm_mhz_max=sm_mhz_max, mem_mhz=mem_mhz) if (sm_mhz or mem_mhz) else None
    return Measurement(probe="t", metric="m", kind=kind, value=value, unit=op_unit, precision=precision,
                       exec_unit=unit, level=level, clocks=clocks, params=params or {})


# ------------------------------------------------------------------------------------------------ the table

def test_every_required_sku_loads():
    table = specs.skus()
    missing = [n for n in REQUIRED if n not in table]
    assert not missing
    for sku in table.values():
        assert sku.source, sku.name
        if sku.kind == "gpu":
            assert th.arch_facts(sku.arch), sku.name
            assert sku.sms > 0 and sku.boost_clock_mhz and sku.mem_clock_mhz and sku.bus_width_bits
            assert sku.match, sku.name
            assert sku.datasheet_bandwidth, sku.name
        for key in sku.datasheet:
            precision, unit = key.split(".")
            assert precision in PROFILE_PRECISIONS and unit in (*th.UNITS, "cpu"), (sku.name, key)


def test_every_datasheet_agrees_with_its_own_theory():
    """Each published figure, recomputed at the clock the datasheet assumes, within TOL (2%)."""
    gaps = {}
    for sku in specs.skus().values():
        dt = specs.sku_theory(sku)
        for key in sku.datasheet:
            precision, unit = key.split(".")
            sheet = sku.datasheet_value(key)
            t = dt.compute(precision, unit, clock_mhz=sheet.clock_mhz)
            assert t is not None, (sku.name, key)
            if abs(t.at_clock / sheet.value - 1) > TOL:
                gaps[(sku.name, key)] = t.at_clock / sheet.value - 1
        bw = dt.bandwidth
        if sku.datasheet_bandwidth:
            assert bw is not None, sku.name
            if abs(bw.at_max_clock / sku.datasheet_bandwidth - 1) > TOL:
                gaps[(sku.name, "dram")] = bw.at_max_clock / sku.datasheet_bandwidth - 1
    assert set(gaps) == set(KNOWN_GAPS), gaps


# ------------------------------------------------------------------------------------------------ find / match

def test_find_by_name_alias_and_device_name():
    assert specs.find("h200").name == "H200 SXM"
    assert specs.find("H100-SXM").name == "H100 SXM"
    assert specs.find("tesla t4").name == "T4"
    assert specs.find("NVIDIA H100 PCIe").name == "H100 PCIe"
    assert specs.find("L4").name == "L4"          # not L40S
    assert specs.find("a10").name == "A10"        # not A100


def test_find_unknown_lists_close_matches():
    with pytest.raises(InputError, match=r"unknown spec 'H201'; close matches: .*H200"):
        specs.find("H201")
    with pytest.raises(InputError, match="unknown spec"):
        specs.find("zzzz-not-a-gpu")


def test_find_ambiguous_prefix():
    with pytest.raises(InputError, match="ambiguous.*A100 PCIe 40GB.*A100 SXM4 80GB"):
        specs.find("A100")
    with pytest.raises(InputError, match="ambiguous: H100 PCIe, H100 SXM"):
        specs.find("h100")


@pytest.mark.parametrize(
    ("device_name", "sms", "expect"),
    [
        ("NVIDIA H200", 132, "H200 SXM"),
        ("NVIDIA H100 80GB HBM3", 132, "H100 SXM"),
        ("NVIDIA H100 PCIe", 114, "H100 PCIe"),
        ("NVIDIA A100-SXM4-80GB", 108, "A100 SXM4 80GB"),
        ("NVIDIA A100-SXM4-40GB", 108, "A100 SXM4 40GB"),
        ("NVIDIA A100 80GB PCIe", 108, "A100 PCIe 80GB"),
        ("Tesla V100-SXM2-16GB", 80, "V100 SXM2"),
        ("Tesla V100-PCIE-32GB", 80, "V100 PCIe"),
        ("NVIDIA GeForce RTX 3080", 68, "RTX 3080"),
        ("NVIDIA GeForce RTX 4090", 128, "RTX 4090"),
        ("Tesla T4", 40, "T4"),
        ("NVIDIA L40S", 142, "L40S"),
        ("NVIDIA L4", 58, "L4"),
        ("NVIDIA A10", 72, "A10"),
        ("Quadro RTX 6000", 72, "Quadro RTX 6000"),
    ],
)
def test_match_device_names(device_name, sms, expect):
    assert specs.match(device_name, sms=sms).name == expect


def test_match_refuses_lookalikes():
    assert specs.match("NVIDIA GeForce RTX 3080 Ti", sms=80) is None
    assert specs.match("NVIDIA GeForce RTX 3080", sms=70) is None      # the 12 GB 3080
    assert specs.match("NVIDIA H200 NVL", sms=132) is None
    assert specs.match("NVIDIA A100-SXM4-80GB", sms=98) is None       # a cut-down part
    assert specs.match("NVIDIA A10G", sms=80) is None


def test_match_jetsons_by_sms_memory_and_clock():
    assert specs.match("Xavier", sms=8).name == "Jetson AGX Xavier"
    assert specs.match("Xavier", sms=6).name == "Jetson Xavier NX"
    assert specs.match("Orin", sms=16).name == "Jetson AGX Orin 64GB"
    assert specs.match("Orin", sms=14).name == "Jetson AGX Orin 32GB"
    assert specs.match("Orin", sms=8, mem_bytes=15 * 2**30, clock_mhz=918).name == "Jetson Orin NX 16GB"
    assert specs.match("Orin", sms=8, mem_bytes=7 * 2**30, clock_mhz=624.75).name == "Jetson Orin Nano 8GB"
    assert specs.match("Orin", sms=8, mem_bytes=7 * 2**30, clock_mhz=1020).name == "Jetson Orin Nano 8GB Super"
    assert specs.match("Orin", sms=8) is None                         # ambiguous without memory and clock


# ------------------------------------------------------------------------------------------------ sku theory

def test_a100_seed_numbers_from_the_sku():
    dt = specs.sku_theory(specs.find("A100 SXM4 80GB"))
    for precision, unit, tera in (("fp64", "cuda_core", 9.7), ("fp32", "cuda_core", 19.5),
                                  ("fp16", "cuda_core", 78), ("tf32", "tensor_core", 156),
                                  ("fp16", "tensor_core", 312), ("int8", "tensor_core", 624)):
        assert dt.compute(precision, unit).at_max_clock == pytest.approx(tera * T, rel=0.006)
    assert dt.compute("int8", "tensor_core", sparse=True).at_max_clock == pytest.approx(1248 * T, rel=0.006)
    assert dt.compute("fp32", "cuda_core", sparse=True) is None


def test_rtx3080_seed_numbers_and_ridges():
    dt = specs.sku_theory(specs.find("RTX 3080"))
    rows = {(r["precision"], r["unit"]): r for r in dt.table()}
    assert dt.bandwidth.at_max_clock == pytest.approx(760.32 * G, rel=1e-6)
    for key, tera, ridge in ((("fp32", "cuda_core"), 29.8, 39.2), (("fp16", "tensor_core"), 119, 156),
                             (("int8", "tensor_core"), 238, 313)):
        assert rows[key]["peak"] == pytest.approx(tera * T, rel=0.005)
        assert rows[key]["ridge"] == pytest.approx(ridge, rel=0.006)
    # GeForce: TF32 and BF16 tensor at half rate
    assert rows[("bf16", "tensor_core")]["peak"] == pytest.approx(59.5 * T, rel=0.005)
    assert rows[("tf32", "tensor_core")]["peak"] == pytest.approx(29.8 * T, rel=0.005)


def test_xavier_seed_numbers_and_ridges():
    dt = specs.sku_theory(specs.find("Jetson AGX Xavier"))
    rows = {(r["precision"], r["unit"]): r for r in dt.table()}
    assert dt.bandwidth.at_max_clock == pytest.approx(137 * G, rel=0.005)
    for key, tera, ridge in ((("fp32", "cuda_core"), 1.4, 10.2), (("fp16", "tensor_core"), 11.2, 81.8),
                             (("int8", "tensor_core"), 22.4, 163)):
        assert rows[key]["peak"] == pytest.approx(tera * T, rel=0.01)
        assert rows[key]["ridge"] == pytest.approx(ridge, rel=0.02)
        assert rows[key]["datasheet"] == pytest.approx(tera * T)


def test_haswell_and_cpu_bandwidth_examples():
    dt = specs.sku_theory(specs.find("Haswell"))
    assert dt.compute("fp64", "cpu").at_max_clock == pytest.approx(0.38 * T, rel=0.015)
    assert dt.compute("fp32", "cpu").at_max_clock == pytest.approx(0.76 * T, rel=0.015)
    assert dt.compute("fp64", "cuda_core") is None
    assert specs.sku_theory(specs.find("Xeon Gold")).bandwidth.at_max_clock == pytest.approx(128 * G, rel=0.002)
    assert specs.sku_theory(specs.find("i7-8700")).bandwidth.at_max_clock == pytest.approx(42 * G, rel=0.02)
    assert specs.sku_theory(specs.find("Quadro RTX 6000")).bandwidth.at_max_clock == pytest.approx(672 * G)
    assert specs.sku_theory(specs.find("V100 SXM2")).bandwidth.at_max_clock == pytest.approx(898 * G, rel=0.001)


def test_h100_sxm_tensor_datasheet_assumes_1830_mhz():
    dt = specs.sku_theory(specs.find("H100 SXM"))
    t = dt.compute("fp16", "tensor_core", clock_mhz=1830)
    assert t.at_clock == pytest.approx(989.4 * T, rel=0.001)
    assert t.datasheet == pytest.approx(989.4 * T)
    assert t.at_max_clock == pytest.approx(1070.4 * T, rel=0.001)
    assert dt.compute("fp32", "cuda_core").at_max_clock == pytest.approx(66.9 * T, rel=0.001)
    msgs = dt.disagreements()
    assert any("fp16 tensor_core" in m and "1830 MHz" in m for m in msgs)
    assert not any(m.startswith("fp32 cuda_core") for m in msgs)
    assert "132 SM x 2048 FMA/clk/SM x 2 x 1980 MHz" in dt.compute("fp16", "tensor_core").basis


# ------------------------------------------------------------------------------------------------ live devices

def test_h200_device_bandwidth_disagrees_with_datasheet():
    dt = live.device_theory(h200())
    assert dt.sku.name == "H200 SXM"
    bw = dt.memory("dram")
    assert bw.at_max_clock == pytest.approx(4.81e12, rel=0.001)
    assert bw.datasheet == 4.8e12
    flagged = [m for m in dt.disagreements() if m.startswith("dram")]
    assert flagged and "4.814 TB/s" in flagged[0] and "4.8 TB/s" in flagged[0] and "6016-bit" in flagged[0]
    # with a tolerance above the 0.3% gap nothing is flagged
    assert not [m for m in dt.disagreements(memory_tol=0.01) if m.startswith("dram")]


def test_device_configuration_differences_are_flagged():
    dt = live.device_theory(h200(bus=6144))
    assert any("bus width: device reports 6144 bits" in m and "6016" in m for m in dt.disagreements())
    g = gpu("NVIDIA GeForce RTX 3080", (8, 6), 68, 2100, 9501, 320, mem_gib=10)
    dt = live.device_theory(g)
    msgs = dt.disagreements()
    assert any("max SM clock: device reports 2100 MHz" in m for m in msgs)
    assert not any(m.startswith("memory clock") for m in msgs)       # 9501 vs 1188 x 16 / 2 = 9504
    assert any(m.startswith("fp32 cuda_core") and "1710 MHz" in m for m in msgs)


def test_device_theory_at_measured_clock():
    dt = live.device_theory(h200())
    t = dt.compute("bf16", "tensor_core", clock_mhz=1755)
    assert t.at_clock == pytest.approx(132 * 2048 * 2 * 1755e6)
    assert t.at_max_clock == pytest.approx(132 * 2048 * 2 * 1980e6)
    assert t.basis.startswith("132 SM x 2048 FMA/clk/SM x 2 x 1755 MHz")
    assert dt.memory("host_h2d").at_clock == pytest.approx(63.0e9, rel=0.001)
    assert dt.memory("host_bidir").at_clock == pytest.approx(126.0e9, rel=0.001)
    assert dt.memory("shared", clock_mhz=1500).at_clock == pytest.approx(132 * 128 * 1500e6)
    l2 = dt.memory("l2")     # the H200: 94 slices x 64 B x 1708 MHz (Nsight Compute), not a published figure
    assert l2.at_clock == pytest.approx(94 * 64 * 1708e6) and l2.clock_mhz == 1708
    assert l2.basis.startswith("inferred: 94 L2 slices x 64 B/clk") and "one lent H200" in l2.basis


def test_unmatched_geforce_gets_half_rate_tf32_and_no_datasheet():
    g = gpu("NVIDIA GeForce RTX 3070", (8, 6), 46, 1725, 7001, 256, mem_gib=8)
    dt = live.device_theory(g)
    assert dt.sku is None
    assert dt.compute("tf32", "tensor_core").at_max_clock == pytest.approx(46 * 128 * 2 * 1725e6)
    assert dt.compute("fp16", "tensor_core").datasheet is None
    assert any("no datasheet entry" in m for m in dt.disagreements())


def test_unknown_arch_has_no_compute_theory_but_has_bandwidth():
    g = gpu("NVIDIA B200", (10, 0), 148, 1965, 4000, 8192)
    dt = live.device_theory(g)
    assert dt.compute("fp32", "cuda_core") is None
    assert dt.table() == []
    assert dt.bandwidth.at_max_clock == pytest.approx(4000e6 * 2 * 1024)
    assert any("no per-SM rates for sm_100" in m for m in dt.disagreements())


def test_jetson_uses_module_memory_not_reported_clock():
    # Tegra reports the GPU clock as the "memory clock"; theory must use the module's LPDDR4x.
    g = gpu("Xavier", (7, 2), 8, 1377, 1377, 256, mem_gib=31, integrated=True)
    dt = live.device_theory(g)
    assert dt.sku.name == "Jetson AGX Xavier"
    assert dt.bandwidth.at_max_clock == pytest.approx(136.5 * G, rel=0.001)
    assert dt.memory("host_h2d") is None


# ------------------------------------------------------------------------------------------------ attach

def test_attach_marks_value_above_theory_invalid():
    dt = live.device_theory(h200())
    ok = measurement(800 * T, sm_mhz=1755, sm_mhz_max=1800)
    judge(ok, dt)
    assert ok.valid and not ok.flags
    assert ok.theory.at_clock == pytest.approx(132 * 2048 * 2 * 1755e6)
    assert ok.theory.clock_mhz == 1755
    assert ok.theory.datasheet == pytest.approx(989.5 * T)
    too_high = measurement(1150 * T, sm_mhz=1755, sm_mhz_max=1800)      # above 1.03 x theory at 1980 = 1103 T
    judge(too_high, dt)
    assert not too_high.valid
    assert too_high.flags and too_high.flags[0].startswith("above_theory:")


def test_attach_names_a_lagging_nvml_clock():
    # above theory at every NVML reading (1.03 x 1800 MHz = 1002 T) but possible at the 1980 MHz max clock:
    # NVML's clock lags short probes, so theory moves to the max clock and the measurement says why
    dt = live.device_theory(h200())
    m = measurement(1050 * T, sm_mhz=1755, sm_mhz_max=1800)
    judge(m, dt)
    assert m.valid and m.flags == ["clock_lag"]
    assert m.theory.at_clock == pytest.approx(132 * 2048 * 2 * 1980e6)
    assert "needs at least 1942 MHz" in m.notes[-1]
    k = measurement(1050 * T, sm_mhz=1755, sm_mhz_max=1800, params={"kernel_sm_mhz": [1700.0]})
    judge(k, dt)                                       # the kernel timed its own clock: no excuse, invalid
    assert not k.valid


def test_attach_uses_highest_sampled_clock_as_the_bound():
    dt = live.device_theory(h200())
    m = measurement(960 * T, sm_mhz=1700, sm_mhz_max=1980)   # above 1.03 x median-clock theory, below max
    judge(m, dt)
    assert m.valid
    assert m.theory.at_clock == pytest.approx(132 * 2048 * 2 * 1980e6)     # never a ratio above 1.03
    assert m.flags == ["theory_clock_moved: NVML median 1700 -> highest sampled 1980 MHz"]   # every move flagged


def test_attach_memory_cpu_and_sparse():
    dt = live.device_theory(h200())
    m = measurement(4.2e12, kind="memory", precision=None, unit=None, level="dram", op_unit="B/s", mem_mhz=3201)
    judge(m, dt)
    assert m.valid and m.theory.at_clock == pytest.approx(4.814e12, rel=0.001)
    m = measurement(5.2e12, kind="memory", precision=None, unit=None, level="dram", op_unit="B/s")
    judge(m, dt)
    assert not m.valid
    sp = measurement(1500 * T, precision="fp8_e4m3", params={"sparse": True}, sm_mhz=1980)
    judge(sp, dt)
    assert sp.valid and sp.theory.at_clock == pytest.approx(2 * 132 * 4096 * 2 * 1980e6)
    other = measurement(1.0, kind="latency", op_unit="cycles")
    judge(other, dt)
    assert other.theory is None and other.valid
    cpu = CpuInfo(model="Test CPU", vendor="x", cores=8, threads=16, flags=["avx2", "fma"], max_mhz=3000,
                  fp64_flops_per_clk=16, fp32_flops_per_clk=32)
    cdt = live.device_theory(cpu)
    m = measurement(300e9, precision="fp64", unit="cpu", sm_mhz=2800)
    judge(m, cdt)
    # a CPU's theory is at its max clock (sysfs), never the current reading (a VM reports that wrongly)
    assert m.valid and m.theory.at_clock == pytest.approx(8 * 3000e6 * 16)
    assert m.theory.at_max_clock == pytest.approx(384e9)
    m = measurement(500e9, precision="fp64", unit="cpu", sm_mhz=2800)
    judge(m, cdt)
    assert not m.valid
    assert cdt.bandwidth is None


def test_render_mentions_every_row():
    from hwprobe.report.specs import render_text

    text = render_text(specs.sku_theory(specs.find("H200")))
    assert "fp16       tensor  PFLOP/s     1.071   2.141  0.9895" in text and "DRAM" in text
    assert "theory 4.814 TB/s" in text


def test_l2_theory_lies_between_what_others_measured_and_nsight_computes_peak():
    """The L2 theory is inferred, so it is checked against figures from outside hwprobe's own rule: it must not
    be below what the established cache benchmark (gpu-benches, 2-20 MiB median, same leases) measured on each
    part, H100 8.32 TB/s and H200 9.71 TB/s (issue 23), and not above Nsight Compute's own per-slice peak, 3
    sectors (96 B) per slice per L2 clock. The slice counts and L2 clocks are Nsight Compute's readings (H100 240
    sectors/clk = 80 x 3, H200 282 = 94 x 3, 1708 MHz). An A100 entry carries no slice count: no L2 theory."""
    from hwprobe import specs

    for name, measured_elsewhere, sectors_per_clk in (("H100 SXM", 8.32e12, 240), ("H200 SXM", 9.71e12, 282)):
        t = specs.sku_theory(specs.find(name)).memory("l2")
        ncu_peak = sectors_per_clk * 32 * 1708e6
        assert measured_elsewhere <= t.at_clock <= ncu_peak, (name, t.at_clock)
        assert t.basis.startswith("inferred: ") and "96 B/clk" in t.basis and "read once" in t.basis
    assert specs.sku_theory(specs.find("A100 SXM4 80GB")).memory("l2") is None
