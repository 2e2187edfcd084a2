"""CPU discovery: the parsers on canned files from other machines, and discover() on this one."""

from __future__ import annotations

import importlib
import platform

import pytest

from hwprobe.device.cpu import (
    caches_from_lscpu,
    caches_from_sysfs,
    current_mhz,
    discover,
    flops_per_clk,
    model_string_mhz,
    parse_cpu_list,
    parse_cpuinfo,
    parse_size,
)

X86_CPUINFO = """\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
cpu MHz\t\t: 2300.000
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse sse2 ht avx fma avx2 avx512f avx512bw avx512_bf16 avx512_fp16 amx_tile hypervisor

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
cpu MHz\t\t: 2400.000
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu sse sse2 ht avx fma avx2 avx512f avx512bw avx512_bf16 avx512_fp16 amx_tile hypervisor
"""

# Jetson AGX Orin: no model name, no MHz, no core ids; a trailing block without a processor number.
JETSON_CPUINFO = """\
processor\t: 0
BogoMIPS\t: 62.50
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd42
CPU revision\t: 1

processor\t: 1
BogoMIPS\t: 62.50
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd42
CPU revision\t: 1

Serial\t\t: 0x1234567890
"""

# Not ``from hwprobe.device import cpu``: that name is also a function in hwprobe/device/__init__.py.
cpumod = importlib.import_module("hwprobe.device.cpu")

LSCPU = """\
Architecture:                            x86_64
Model name:                              Intel(R) Xeon(R) Processor
L1d cache:                               96 KiB (2 instances)
L1i cache:                               64 KiB (2 instances)
L2 cache:                                4 MiB (2 instances)
L3 cache:                                260 MiB (1 instance)
"""


def test_parse_helpers():
    assert parse_size("48K") == 48 << 10
    assert parse_size("260 MiB (1 instance)") == 260 << 20
    assert parse_size("49152") == 49152
    assert parse_size("n/a") is None
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("") == []
    assert model_string_mhz("Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz") == 2500
    assert model_string_mhz("Intel(R) Xeon(R) Processor") is None


def test_parse_x86_cpuinfo():
    info = parse_cpuinfo(X86_CPUINFO)
    assert info["model"] == "Intel(R) Xeon(R) Processor"
    assert info["vendor"] == "GenuineIntel"
    assert {"sse2", "avx512f", "fma", "hypervisor"} <= info["flags"]
    assert info["mhz"] == [2300.0, 2400.0]
    assert info["core_of"] == {0: ("0", "0"), 1: ("0", "1")}
    assert (info["family"], info["model_number"]) == (6, 207)


def test_parse_jetson_cpuinfo_without_model_name():
    info = parse_cpuinfo(JETSON_CPUINFO)
    assert info["model"] == "Cortex-A78AE"
    assert info["vendor"] == "ARM"
    assert {"asimd", "fphp"} <= info["flags"]
    assert info["mhz"] == [] and info["core_of"] == {}
    assert info["processors"] == 2
    assert flops_per_clk(info["flags"], arch="aarch64", arm_part=info["arm_part"]) == (8, 16, "neon")


def test_host_summary_names_the_cpu_a_gpu_run_issued_from(monkeypatch):
    """A GPU run's environment names its host CPU: model, processors, those this process may use."""
    from hwprobe.device import cpu as cpumod

    monkeypatch.setattr(cpumod, "_allowed_cpus", lambda: [1])
    assert cpumod.host_summary(X86_CPUINFO) == {"model": "Intel(R) Xeon(R) Processor", "processors": 2, "usable": 1}
    assert cpumod.host_summary(JETSON_CPUINFO)["model"] == "Cortex-A78AE"
    empty = cpumod.host_summary("")                       # no /proc/cpuinfo (macOS): the platform's names
    assert empty["model"] and empty["processors"] >= 1 and empty["usable"] == 1


def test_parse_empty_cpuinfo_degrades():
    info = parse_cpuinfo("")
    assert info["model"] is None and info["flags"] == set() and info["processors"] == 0


@pytest.mark.parametrize("flags,kw,want", [
    ({"sse2", "avx", "fma", "avx2", "avx512f"}, {"vendor": "GenuineIntel"}, (32, 64, "avx512")),
    ({"sse2", "avx", "fma", "avx2", "avx512f"}, {"vendor": "AuthenticAMD", "family": 0x19}, (16, 32, "avx512")),
    ({"sse2", "avx", "fma", "avx2"}, {"vendor": "GenuineIntel"}, (16, 32, "avx2")),
    ({"sse2", "avx", "fma", "avx2"}, {"vendor": "AuthenticAMD", "family": 0x17, "model_number": 1}, (8, 16, "avx2")),
    ({"sse2", "avx"}, {}, (8, 16, "avx")),
    ({"sse2"}, {}, (4, 8, "sse2")),
])
def test_flops_per_clk_x86(flags, kw, want):
    assert flops_per_clk(flags, arch="x86_64", **kw) == want


def test_flops_per_clk_arm_and_unknown():
    assert flops_per_clk({"asimd"}, arch="aarch64") == (8, 16, "neon")
    assert flops_per_clk({"asimd", "sve"}, arch="aarch64", arm_part="Neoverse-V2") == (16, 32, "sve")
    assert flops_per_clk(set(), arch="riscv64") == (0, 0, "")


def _cache(root, cpu, index, level, typ, size, shared):
    d = root / f"cpu{cpu}" / "cache" / f"index{index}"
    d.mkdir(parents=True)
    for name, val in {"level": level, "type": typ, "size": size, "shared_cpu_list": shared}.items():
        (d / name).write_text(f"{val}\n")


def test_caches_from_sysfs_private_and_shared(tmp_path):
    for cpu in (0, 1):
        _cache(tmp_path, cpu, 0, 1, "Data", "48K", str(cpu))
        _cache(tmp_path, cpu, 1, 1, "Instruction", "32K", str(cpu))
        _cache(tmp_path, cpu, 2, 2, "Unified", "2048K", str(cpu))
        _cache(tmp_path, cpu, 3, 3, "Unified", "266240K", "0-1")
    core_of = {0: ("0", "0"), 1: ("0", "1")}
    assert caches_from_sysfs([0, 1], core_of, root=tmp_path) == {"l1d": 48 << 10, "l2": 2 << 20, "l3": 260 << 20}


def test_caches_from_sysfs_cluster_l2_and_two_l3_instances(tmp_path):
    # 4 cores: L2 shared by a cluster of 2 cores, one L3 per pair (like AMD CCXs): L3 is summed.
    for cpu in range(4):
        pair = "0-1" if cpu < 2 else "2-3"
        _cache(tmp_path, cpu, 0, 1, "Data", "64K", str(cpu))
        _cache(tmp_path, cpu, 2, 2, "Unified", "1024K", pair)
        _cache(tmp_path, cpu, 3, 3, "Unified", "16384K", pair)
    core_of = {c: ("0", str(c)) for c in range(4)}
    got = caches_from_sysfs(list(range(4)), core_of, root=tmp_path)
    assert got == {"l1d": 64 << 10, "l2": 512 << 10, "l3": 32 << 20}


def test_caches_from_lscpu():
    assert caches_from_lscpu(LSCPU) == {"l1d": 48 << 10, "l2": 2 << 20, "l3": 260 << 20}


def test_current_mhz_skips_static_vm_clock(monkeypatch):
    monkeypatch.setattr(cpumod, "_cpufreq_khz", lambda cpus, name: [])
    monkeypatch.setattr(cpumod, "_read", lambda path: X86_CPUINFO if str(path) == "/proc/cpuinfo" else None)
    assert current_mhz() is None                                 # hypervisor: /proc/cpuinfo is the TSC rate
    monkeypatch.setattr(cpumod, "_read",
                        lambda path: X86_CPUINFO.replace(" hypervisor", "") if str(path) == "/proc/cpuinfo" else None)
    assert current_mhz() == pytest.approx(2350.0)
    monkeypatch.setattr(cpumod, "_cpufreq_khz", lambda cpus, name: [3.0e6, 2.0e6])
    assert current_mhz() == pytest.approx(2500.0)


def test_discover_this_machine():
    info = discover()
    assert info.cores >= 1 and info.threads >= info.cores
    assert info.model and info.label.startswith("CPU: ")
    arch = platform.machine().lower()
    if arch in ("x86_64", "amd64"):
        assert "sse2" in info.flags
    if platform.system() == "Linux":
        assert info.l1d_bytes and info.l1d_bytes > 0
        assert info.l2_bytes and info.l2_bytes > 0
        assert info.llc_bytes > 0
        assert info.mem_bytes and info.mem_bytes > 1 << 28
    assert info.max_mhz and 100 < info.max_mhz < 10_000
    raw = parse_cpuinfo(cpumod._read("/proc/cpuinfo") or "")
    fp64, fp32, simd = flops_per_clk(set(info.flags), arch=arch, vendor=info.vendor, family=raw["family"],
                                     model_number=raw["model_number"], arm_part=raw["arm_part"])
    assert (info.fp64_flops_per_clk, info.fp32_flops_per_clk, info.simd) == (fp64, fp32, simd)
    if info.fp64_flops_per_clk:
        assert info.fp32_flops_per_clk == 2 * info.fp64_flops_per_clk
    if "avx512f" in info.flags:
        assert info.simd == "avx512" and info.fp64_flops_per_clk in (16, 32)
    d = info.to_dict()
    assert d["kind"] == "cpu" and d["cores"] == info.cores


def test_measure_mhz_is_plausible():
    mhz = cpumod.measure_mhz(seconds=0.01)
    assert mhz is not None and 200 < mhz < 7000
