"""CPU discovery: model, usable cores, ISA flags, caches, clocks, and peak FLOPs per clock from the ISA.

Linux is read from /proc/cpuinfo and /sys (lscpu as a fallback); macOS from sysctl. Every reader returns
None on a missing file, so an unknown field degrades to a fallback instead of a crash. The parsers take
text, so tests feed them canned files from other machines (x86 servers, a Jetson).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from functools import cache
from pathlib import Path

from hwprobe.device.info import CpuInfo

SYS_CPU = Path("/sys/devices/system/cpu")

# ISA flags worth keeping: they decide vector width, FMA and low-precision support.
RELEVANT_FLAGS = (
    "sse2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_fp16", "avx512_bf16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16",
    "neon", "asimd", "asimdhp", "asimddp", "fphp", "bf16", "i8mm", "sve", "sve2",
)

# aarch64 /proc/cpuinfo has no model name: "CPU implementer" and "CPU part" name the core.
ARM_IMPLEMENTERS = {0x41: "ARM", 0x42: "Broadcom", 0x4E: "NVIDIA", 0x51: "Qualcomm", 0x61: "Apple", 0xC0: "Ampere"}
ARM_PARTS = {
    (0x41, 0xD03): "Cortex-A53", (0x41, 0xD07): "Cortex-A57", (0x41, 0xD08): "Cortex-A72",
    (0x41, 0xD0B): "Cortex-A76", (0x41, 0xD0C): "Neoverse-N1", (0x41, 0xD40): "Neoverse-V1",
    (0x41, 0xD41): "Cortex-A78", (0x41, 0xD42): "Cortex-A78AE", (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4F): "Neoverse-V2", (0x41, 0xD8E): "Neoverse-N3", (0x4E, 0x003): "Denver 2",
    (0x4E, 0x004): "Carmel", (0xC0, 0xAC3): "AmpereOne",
}
# Cores known to have more than two 128-bit FMA pipes (FP64 FLOPs/clk/core; FP32 is twice that).
ARM_FP64_PER_CLK = {"Neoverse-V1": 16, "Neoverse-V2": 16}


# ---------------------------------------------------------------- small readers and parsers

def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _run(args: list[str]) -> str | None:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=5, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def parse_size(text: str) -> int | None:
    """'48K', '2048K', '32 MiB', '260 MiB (1 instance)', '49152' -> bytes."""
    m = re.match(r"\s*([\d.]+)\s*([KMGT]?)(i?B)?", text.strip(), re.I)
    if not m:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def parse_cpu_list(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def parse_cpuinfo(text: str) -> dict:
    """The fields that matter from /proc/cpuinfo (x86 or ARM), one dict for the whole machine.

    Returns model, vendor, flags (set), mhz (list over processors), core_of ({processor: (package, core)};
    empty when the file has no core ids, as on ARM), family/model numbers and the ARM core name.
    Blocks without a processor number (ARM's trailing Hardware/Serial block) fill in missing fields.
    """
    procs: list[dict[str, str]] = []
    extra: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", text):
        fields = {}
        for line in block.splitlines():
            key, sep, val = line.partition(":")
            if sep:
                fields.setdefault(key.strip(), val.strip())
        if fields.get("processor", "").isdigit():
            procs.append(fields)
        else:
            extra.update({k: v for k, v in fields.items() if k not in extra})
    first = procs[0] if procs else {}

    def get(key: str) -> str | None:
        return first.get(key) or extra.get(key)

    implementer, part = _int(get("CPU implementer")), _int(get("CPU part"))
    arm_name = ARM_PARTS.get((implementer, part)) if implementer is not None else None
    model = get("model name") or get("cpu model") or arm_name
    if not model and extra.get("Processor"):
        model = extra["Processor"]                        # old 32-bit ARM kernels
    vendor = get("vendor_id") or (ARM_IMPLEMENTERS.get(implementer) if implementer is not None else None)
    return {
        "model": model, "vendor": vendor, "flags": set((get("flags") or get("Features") or "").split()),
        "mhz": [v for v in (_float(p.get("cpu MHz")) for p in procs) if v],
        "core_of": {int(p["processor"]): (p.get("physical id", "0"), p["core id"]) for p in procs if "core id" in p},
        "processors": len(procs), "family": _int(get("cpu family")), "model_number": _int(get("model")),
        "arm_part": arm_name,
    }


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def model_string_mhz(model: str | None) -> float | None:
    """The nominal clock in a model string: 'Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz' -> 2500."""
    m = re.search(r"@\s*([\d.]+)\s*([GM])Hz", model or "", re.I)
    if not m:
        return None
    return float(m.group(1)) * (1000.0 if m.group(2).upper() == "G" else 1.0)


# ---------------------------------------------------------------- caches

def read_cache_dir(cache_dir: Path) -> list[dict]:
    """sysfs cache entries of one CPU: level, type, size in bytes and the CPUs that share it."""
    out = []
    for idx in sorted(cache_dir.glob("index*")):
        size = parse_size(_read(idx / "size") or "")
        level = _int((_read(idx / "level") or "").strip())
        if not size or level is None:
            continue
        shared = parse_cpu_list(_read(idx / "shared_cpu_list") or "")
        out.append({"level": level, "type": (_read(idx / "type") or "").strip(), "size": size, "shared": shared})
    return out


def caches_from_sysfs(cpus: list[int], core_of: dict[int, tuple], root: Path = SYS_CPU) -> dict[str, int]:
    """Per-core L1d and L2, and the total of the last level over the instances our CPUs touch.

    ``shared_cpu_list`` says who shares an instance: an L2 shared by a 4-core cluster counts a quarter
    per core; L3 instances are summed once each (AMD has one per CCX).
    """
    by_level: dict[tuple[int, str], dict[tuple[int, ...], int]] = {}
    for cpu in cpus:
        for e in read_cache_dir(root / f"cpu{cpu}" / "cache"):
            if e["type"] == "Instruction":
                continue
            key = (e["level"], "Data" if e["level"] == 1 else "Unified")
            by_level.setdefault(key, {})[tuple(e["shared"]) or (cpu,)] = e["size"]
    out: dict[str, int] = {}

    def per_core(instances: dict[tuple[int, ...], int]) -> int:
        shared, size = next(iter(instances.items()))
        ncores = len({core_of.get(c, (c,)) for c in shared}) or 1
        return size // ncores

    if (1, "Data") in by_level:
        out["l1d"] = per_core(by_level[(1, "Data")])
    if (2, "Unified") in by_level:
        out["l2"] = per_core(by_level[(2, "Unified")])
    if (3, "Unified") in by_level:
        out["l3"] = sum(by_level[(3, "Unified")].values())
    return out


def caches_from_lscpu(text: str) -> dict[str, int]:
    """lscpu's 'L2 cache: 4 MiB (2 instances)': per instance for L1d/L2, the whole figure for L3."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, val = line.partition(":")
        if not sep:
            continue
        name = {"L1d cache": "l1d", "L2 cache": "l2", "L3 cache": "l3"}.get(key.strip())
        size = parse_size(val) if name else None
        if not size:
            continue
        m = re.search(r"\((\d+) instances?\)", val)
        n = int(m.group(1)) if m else 1
        out[name] = size if name == "l3" else size // n
    return out


# ---------------------------------------------------------------- peak FLOPs per clock

def flops_per_clk(flags: set[str], *, arch: str, vendor: str | None = None, family: int | None = None,
                  model_number: int | None = None, arm_part: str | None = None) -> tuple[int, int, str]:
    """Per-core (FP64, FP32) FLOPs per clock and the SIMD name, from the ISA: FMA units x lanes x 2.

    AVX-512: 2 FMA units x 8 FP64 lanes x 2 = 32 (64 FP32). Some Xeon Silver/Bronze and client parts
    have one 512-bit FMA unit; cpuinfo cannot tell, so we assume two: theory is an upper bound. AMD
    Zen 4 (family 0x19) runs 512-bit ops as two 256-bit halves, so it gets the AVX2 rate.
    AVX2+FMA: 2 x 4 x 2 = 16 / 32 (Haswell, as in the seed notes; Zen 1 has 128-bit units: 8 / 16).
    AVX without FMA: one add + one mul port, 4 lanes: 8 / 16. SSE2: 4 / 8.
    aarch64 NEON: 2 FMA pipes x 2 FP64 lanes x 2 = 8 / 16, unless the core is known to have more pipes.
    """
    amd = (vendor or "").lower().startswith("authenticamd")
    if arch in ("x86_64", "amd64", "i686", "i386", "x86"):
        if "avx512f" in flags:
            if amd and family == 0x19:                      # Zen 4: 512-bit ops in two 256-bit halves
                return 16, 32, "avx512"
            return 32, 64, "avx512"
        if "avx2" in flags and "fma" in flags:
            if amd and family == 0x17 and (model_number or 0) < 0x30:   # Zen 1/Zen+: 128-bit FMA units
                return 8, 16, "avx2"
            return 16, 32, "avx2"
        if "avx" in flags:
            return 8, 16, "avx"
        if "sse2" in flags or arch in ("x86_64", "amd64"):
            return 4, 8, "sse2"
        return 0, 0, ""
    if arch in ("aarch64", "arm64"):
        fp64 = ARM_FP64_PER_CLK.get(arm_part or "", 8)
        return fp64, 2 * fp64, "sve" if "sve" in flags and fp64 > 8 else "neon"
    if arch.startswith("arm") and "neon" in flags:
        return 0, 8, "neon"              # ARMv7 NEON has no FP64 lanes
    return 0, 0, ""


# ---------------------------------------------------------------- clocks

def _cpufreq_khz(cpus: list[int], name: str) -> list[float]:
    vals = []
    for cpu in cpus:
        v = _float((_read(SYS_CPU / f"cpu{cpu}" / "cpufreq" / name) or "").strip() or None)
        if v:
            vals.append(v)
    return vals


def _allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def current_mhz() -> float | None:
    """Average current core clock: cpufreq scaling_cur_freq, else /proc/cpuinfo 'cpu MHz'.

    Under a hypervisor with no cpufreq, /proc/cpuinfo shows the fixed TSC rate, not the clock the cores
    run at (a VM here reads 2300 MHz while an add chain runs at ~2950 MHz), so we return None there
    rather than a wrong clock.
    """
    khz = _cpufreq_khz(_allowed_cpus(), "scaling_cur_freq")
    if khz:
        return sum(khz) / len(khz) / 1000.0
    info = parse_cpuinfo(_read("/proc/cpuinfo") or "")
    if info["mhz"] and "hypervisor" not in info["flags"]:
        return sum(info["mhz"]) / len(info["mhz"])
    return None


def _add_chain(n, x):
    # Two dependent 1-cycle integer ops per iteration (xor, add): 2 clocks each on every modern core.
    for _ in range(n):
        x = (x ^ 0x5BD1E995) + 0x27D4EB2F
    return x


@cache
def _add_chain_kernel():
    import numba

    return numba.njit(cache=True)(_add_chain)


def measure_mhz(seconds: float = 0.03) -> float | None:
    """The clock one core runs at, timed on a chain of dependent 1-cycle integer ops (numba).

    For machines that do not report their clock (VMs, macOS): this is the single-core clock under a
    scalar load, which is at or above the all-core clock under wide vector FMA, so theory built on it
    stays an upper bound. Returns None when numba is missing.
    """
    try:
        kern = _add_chain_kernel()
        kern(10, 1)
    except Exception:
        return None
    n = 1 << 20
    while True:                          # grow until one call is long enough to time well
        t0 = time.perf_counter()
        kern(n, 1)
        dt = time.perf_counter() - t0
        if dt > seconds / 4 or n > 1 << 34:
            break
        n *= 4
    best = min(_timed(kern, n) for _ in range(7))
    return 2 * n / best / 1e6


def _clock_cache(cache_file: Path | None) -> tuple[str | None, Path | None]:
    """(this boot's id, the clock cache's file) for boot_mhz and raise_boot_mhz."""
    boot = (_read("/proc/sys/kernel/random/boot_id") or "").strip() or None
    if cache_file is None:
        from hwprobe.caches import cache_root

        root = cache_root()
        cache_file = root / "cpu-clock.json" if root else None
    return boot, cache_file


def _cached_mhz(boot: str | None, model: str, cache_file: Path | None) -> float | None:
    import json

    if not (boot and cache_file is not None):
        return None
    try:
        d = json.loads(cache_file.read_text())
        if d.get("boot_id") == boot and d.get("model") == model and float(d["mhz"]) > 0:
            return float(d["mhz"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _keep_mhz(boot: str | None, model: str, cache_file: Path | None, mhz: float) -> None:
    import json

    if boot and cache_file is not None:
        try:
            cache_file.write_text(json.dumps({"boot_id": boot, "model": model, "mhz": round(mhz, 1)}))
        except OSError:
            pass


def boot_mhz(model: str, cache_file: Path | None = None) -> float | None:
    """The measured single-core clock (``measure_mhz``), measured once per boot and kept in hwprobe's cache:
    each call of ``hwprobe specs`` on a machine without cpufreq then shows the same max clock, not a new
    timing's jitter (2871, 2915, 2940 MHz on three calls). raise_boot_mhz lifts it to a higher reading later."""
    boot, cache_file = _clock_cache(cache_file)
    cached = _cached_mhz(boot, model, cache_file)
    if cached:
        return cached
    mhz = measure_mhz()
    if mhz:
        _keep_mhz(boot, model, cache_file, mhz)
    return round(mhz, 1) if mhz else None


def raise_boot_mhz(model: str, mhz: float | None, cache_file: Path | None = None) -> None:
    """Keep ``mhz`` as this boot's max clock where it is above the one kept: the max is an upper bound, and a first
    reading taken while the machine was busy reads low (a 2-core CI VM kept 2474 MHz where its cores ran at 2.6-3.0
    GHz; two contended acceptance ranks then read FP64 FMA 'above theory'). The CPU FMA probe reads the clock around
    every window and passes it here, so the next run's theory starts from the highest clock seen this boot."""
    boot, cache_file = _clock_cache(cache_file)
    cached = _cached_mhz(boot, model, cache_file)
    if mhz and cached and mhz > cached:
        _keep_mhz(boot, model, cache_file, mhz)


def _timed(kern, n: int) -> float:
    t0 = time.perf_counter()
    kern(n, 1)
    return time.perf_counter() - t0


# ---------------------------------------------------------------- discovery

def _mem_bytes() -> int | None:
    text = _read("/proc/meminfo") or ""
    m = re.search(r"MemTotal:\s+(\d+)\s*kB", text)
    if m:
        return int(m.group(1)) * 1024
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _core_map(cpus: list[int], info: dict) -> dict[int, tuple]:
    """cpu -> (package, core) from sysfs topology, else from /proc/cpuinfo's core ids."""
    out: dict[int, tuple] = {}
    for cpu in cpus:
        topo = SYS_CPU / f"cpu{cpu}" / "topology"
        core = _read(topo / "core_id")
        if core is not None:
            out[cpu] = ((_read(topo / "physical_package_id") or "0").strip(), core.strip())
    for cpu, ids in info["core_of"].items():
        if cpu in cpus:
            out.setdefault(cpu, ids)
    return out


def _sysctl(name: str) -> str | None:
    out = _run(["sysctl", "-n", name])
    return out.strip() if out else None


def _discover_macos(arch: str) -> CpuInfo:
    model = _sysctl("machdep.cpu.brand_string") or platform.processor() or arch
    threads = os.cpu_count() or 1
    cores = _int(_sysctl("hw.physicalcpu")) or threads
    flags = set((_sysctl("machdep.cpu.features") or "").lower().replace(".", "_").split())
    flags |= set((_sysctl("machdep.cpu.leaf7_features") or "").lower().replace(".", "_").split())
    if arch == "arm64":
        flags |= {"neon", "asimd"}
    fp64, fp32, simd = flops_per_clk(flags, arch=arch, vendor=_sysctl("machdep.cpu.vendor"))
    hz = _int(_sysctl("hw.cpufrequency_max") or _sysctl("hw.cpufrequency"))
    max_mhz = hz / 1e6 if hz else None
    if max_mhz is None:
        max_mhz = measure_mhz()
    return CpuInfo(
        model=model, vendor=_sysctl("machdep.cpu.vendor") or ("Apple" if arch == "arm64" else ""),
        cores=cores, threads=threads, flags=sorted(flags & set(RELEVANT_FLAGS)),
        l1d_bytes=_int(_sysctl("hw.l1dcachesize")), l2_bytes=_int(_sysctl("hw.l2cachesize")),
        l3_bytes=_int(_sysctl("hw.l3cachesize")), base_mhz=max_mhz, max_mhz=max_mhz,
        mem_bytes=_int(_sysctl("hw.memsize")), fp64_flops_per_clk=fp64, fp32_flops_per_clk=fp32, simd=simd,
    )


def host_summary(cpuinfo_text: str | None = None) -> dict:
    """The host CPU a GPU run's host-side figures depend on (an eager op's issue cost, the library searches): its
    model and the processors this process may use, read without measuring. Two H200 leases of one kind issued an
    eager PyTorch op in 16.4-17.3 us and in 10.2-10.5 us (2026-11-29), and the run said nothing of why."""
    info = parse_cpuinfo(cpuinfo_text if cpuinfo_text is not None else (_read("/proc/cpuinfo") or ""))
    return {"model": info["model"] or platform.processor() or platform.machine(),
            "processors": info["processors"] or os.cpu_count(), "usable": len(_allowed_cpus())}


def discover(measure_clock: bool = True) -> CpuInfo:
    """Describe the CPU this process may run on (cores and caches limited to its affinity mask).

    Clocks: cpufreq's cpuinfo_max_freq (and base_frequency) when the kernel has a cpufreq driver;
    otherwise the model string's '@ 3.00GHz' or /proc/cpuinfo's 'cpu MHz' is the base clock, and the
    max clock is the larger of that and a measured single-core clock (``measure_clock``, ~0.1 s),
    because a VM's nominal figure can sit below the clock its cores really run at.
    """
    arch = platform.machine().lower()
    if platform.system() == "Darwin":
        return _discover_macos(arch)
    cpus = _allowed_cpus()
    text = _read("/proc/cpuinfo") or ""
    info = parse_cpuinfo(text)
    lscpu = _run(["lscpu"]) or ""
    lscpu_fields = {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in lscpu.splitlines())}

    core_of = _core_map(cpus, info)
    cores = len({core_of[c] for c in cpus if c in core_of}) if core_of else len(cpus)
    flags = set(info["flags"])
    if arch in ("aarch64", "arm64") and "asimd" in flags:
        flags.add("neon")
    if any(f.startswith("amx") for f in flags):
        flags.add("amx")
    model = info["model"] or lscpu_fields.get("Model name") or platform.processor() or arch
    vendor = info["vendor"] or lscpu_fields.get("Vendor ID") or ""

    caches = caches_from_sysfs(cpus, core_of)
    for key, val in caches_from_lscpu(lscpu).items():
        caches.setdefault(key, val)

    max_khz = _cpufreq_khz(cpus, "cpuinfo_max_freq")
    base_khz = _cpufreq_khz(cpus, "base_frequency")
    nominal = model_string_mhz(model) or (max(info["mhz"]) if info["mhz"] else None)
    base_mhz = base_khz[0] / 1000.0 if base_khz else nominal
    if max_khz:
        max_mhz = max(max_khz) / 1000.0
    else:
        measured = boot_mhz(model) if measure_clock else None
        max_mhz = max((x for x in (nominal, measured) if x), default=None)
        base_mhz = base_mhz or max_mhz
    fp64, fp32, simd = flops_per_clk(
        flags, arch=arch, vendor=vendor, family=info["family"], model_number=info["model_number"],
        arm_part=info["arm_part"] or lscpu_fields.get("Model name"),
    )
    keep = set(RELEVANT_FLAGS) | {"amx"}
    return CpuInfo(
        model=model, vendor=vendor, cores=max(1, cores), threads=len(cpus), flags=sorted(flags & keep),
        l1d_bytes=caches.get("l1d"), l2_bytes=caches.get("l2"), l3_bytes=caches.get("l3"),
        base_mhz=base_mhz, max_mhz=max_mhz, mem_bytes=_mem_bytes(),
        fp64_flops_per_clk=fp64, fp32_flops_per_clk=fp32, simd=simd,
    )
