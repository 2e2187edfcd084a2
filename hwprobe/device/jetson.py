"""Jetson (Tegra) readout without NVML: identity, GPU and EMC clocks, power mode, live TPCs, thermals, rails.

NVML is a stub before JetPack 6 and says "Not Supported" for clocks and load on Orin after it, so everything
here comes from files. The paths follow jetson-stats' readers (rbonghi/jetson_stats, jtop/core/: gpu.py,
memory.py, power.py, temperature.py, nvpmodel.py, jetson_variables.py) and the nvgpu driver's sysfs
(tpc_fs_mask, tpc_pg_mask, load, the gpu.0 link). Paths move between releases (the Orin GPU is
``17000000.ga10b`` on JetPack 5 and ``bus@0/17000000.gpu`` on JetPack 6), so the GPU is found through
``/sys/class/devfreq/*/device/of_node/name`` or nvgpu's ``gpu.0`` link, never one fixed path.

Every path hangs off one ``root`` ("/" on a board, a built tree in tests). hwprobe only reads: it never
changes the power mode or the clocks. What could not be read is listed with the reason (missing, or root
needed: debugfs under /sys/kernel/debug is root-only).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

GPU_NODE_NAMES = ("gv11b", "ga10b", "gp10b", "gpu")          # jtop/core/gpu.py find_igpu
GPU0_LINKS = ("sys/devices/gpu.0", "sys/devices/platform/gpu.0", "sys/devices/platform/bus@0/gpu.0")
PHYSICAL_TPCS = {"tegra194": 4, "tegra234": 8}                 # TPC_PG_MASK bits (nvpmodel.conf)
SMS_PER_TPC = {"tegra194": 2, "tegra234": 2}                   # Volta and Ampere: 2 SMs per TPC
SOC_ARCH = {"tegra210": "sm_53", "tegra186": "sm_62", "tegra194": "sm_72", "tegra234": "sm_87"}
EMC_RATE_FILES = (                                             # jtop/core/memory.py read_emc, in order
    ("sys/kernel/debug/bpmp/debug/clk/emc/rate", "sys/kernel/debug/bpmp/debug/clk/emc/max_rate"),
    ("sys/kernel/debug/clk/override.emc/clk_rate", "sys/kernel/debug/tegra_bwmgr/emc_max_rate"),
    ("sys/kernel/debug/clk/emc/clk_rate", None),
)
EMC_CAP_FILES = ("sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "sys/kernel/nvpmodel_clk_cap/emc")  # JP5, JP6
GPU_ONLY_RAILS = {"GPU", "VDD_GPU", "VDD_SYS_GPU", "POM_5V_GPU"}
SHARED_GPU_RAILS = {"VDD_GPU_SOC": "the GPU and the SOC", "VDD_CPU_GPU_CV": "the CPU, the GPU and the CV cores"}
INPUT_RAILS = {"VDD_IN", "POM_5V_IN"}
# L4T release -> JetPack (NVIDIA's JetPack archive; jtop/core/jetson_variables.py NVIDIA_JETPACK)
JETPACK = {"32.4.3": "4.4", "32.4.4": "4.4.1", "32.5.0": "4.5", "32.5.1": "4.5.1", "32.5.2": "4.5.1",
           "32.6.1": "4.6", "32.7.1": "4.6.1", "32.7.2": "4.6.2", "32.7.3": "4.6.3", "32.7.4": "4.6.4",
           "32.7.5": "4.6.5", "34.1.0": "5.0 DP", "34.1.1": "5.0.1 DP", "35.1.0": "5.0.2", "35.2.1": "5.1",
           "35.3.1": "5.1.1", "35.4.1": "5.1.2", "35.5.0": "5.1.3", "35.6.0": "5.1.4", "36.2.0": "6.0 DP",
           "36.3.0": "6.0", "36.4.0": "6.1", "36.4.3": "6.2", "36.4.4": "6.2.1"}
JETPACK_MAJOR = {"32": "4", "34": "5", "35": "5", "36": "6", "38": "7"}


@dataclass
class Unread:
    """An item that could not be read: which, where, and why ("missing", "root needed", or a parse error)."""

    item: str
    path: str
    why: str


@dataclass
class JetsonReadout:
    root: str
    model: str | None = None                 # /proc/device-tree/model
    compatible: list[str] = field(default_factory=list)
    soc: str | None = None                   # tegra194, tegra234, ...
    part_numbers: list[str] = field(default_factory=list)   # p3701-0005, p3737-0000 (module and carrier)
    module: str | None = None                # the skus.toml entry
    l4t: str | None = None                   # "35.4.1"
    jetpack: str | None = None               # "5.1.2"
    mem_total_bytes: int | None = None       # /proc/meminfo MemTotal (picks 32 vs 64 GB modules)
    gpu: dict = field(default_factory=dict)      # node, devfreq, device, cur/min/max_mhz, governor, load_pct
    emc: dict = field(default_factory=dict)      # cur_mhz, max_mhz, cap_mhz, theory_mhz, source
    nvpmodel: dict = field(default_factory=dict)  # id, name, source, default_id, modes (from nvpmodel.conf)
    jetson_clocks: bool | None = None
    jetson_clocks_basis: str = ""
    tpc: dict = field(default_factory=dict)      # fs_mask, pg_mask, live_tpcs, live_sms, max_sms, source
    thermal: dict = field(default_factory=dict)  # zone type -> degrees C
    rails: list[dict] = field(default_factory=list)   # name, mv, ma, mw, role
    rails_note: str = ""
    unread: list[Unread] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def live_sms(self) -> int | None:
        return self.tpc.get("live_sms")


# ------------------------------------------------------------------------------------------------ files

class _Files:
    """Reads under one root; every failed read is recorded with why."""

    def __init__(self, root: str | Path):
        self.root = Path(os.path.realpath(root))
        self.unread: list[Unread] = []

    def exists(self, rel: str | Path) -> bool:
        return os.path.exists(self.at(rel))      # False (never an exception) where a parent cannot be entered

    def at(self, rel: str | Path) -> Path:
        p = Path(rel)
        return p if p.is_absolute() and self.root in p.parents else self.root / str(rel).lstrip("/")

    def show(self, p: Path) -> str:
        """The path as it is on the board (root stripped)."""
        try:
            return "/" + str(p.relative_to(self.root))
        except ValueError:
            return str(p)

    def why(self, p: Path) -> str:
        """'root needed' where an ancestor exists but cannot be entered (debugfs is 0700), else 'missing'."""
        for anc in [p, *p.parents]:
            try:
                os.stat(anc)
            except PermissionError:
                return "root needed"
            except OSError:
                continue
            if anc != p and not os.access(anc, os.R_OK | os.X_OK):
                return "root needed"
            return "missing" if anc != p else ("root needed" if not os.access(anc, os.R_OK) else "unreadable")
        return "missing"

    def text(self, rel: str | Path, item: str, *, quiet: bool = False) -> str | None:
        p = self.at(rel)
        if not os.access(p, os.R_OK):
            why = self.why(p)                      # missing, or a parent (debugfs) only root may enter
        else:
            try:
                return p.read_text(errors="replace").replace("\x00", "\n").strip()
            except PermissionError:
                why = "root needed"
            except OSError as e:
                why = self.why(p) if isinstance(e, FileNotFoundError) else f"unreadable: {e.strerror or e}"
        if not quiet:
            self.unread.append(Unread(item, self.show(p), why))
        return None

    def number(self, rel: str | Path, item: str, base: int = 10, *, quiet: bool = False) -> int | None:
        t = self.text(rel, item, quiet=quiet)
        if t is None:
            return None
        try:
            return int(t.split()[0], base)
        except (ValueError, IndexError):
            self.unread.append(Unread(item, self.show(self.at(rel)), f"not a number: {t[:40]!r}"))
            return None

    def glob(self, pattern: str) -> list[Path]:
        return sorted(self.root.glob(pattern), key=lambda q: [int(x) if x.isdigit() else x
                                                               for x in re.split(r"(\d+)", str(q))])


def _mhz(hz: int | None) -> float | None:
    return round(hz / 1e6, 3) if hz else None


# ------------------------------------------------------------------------------------------------ identity

def _identity(fs: _Files, r: JetsonReadout) -> None:
    model = fs.text("proc/device-tree/model", "device-tree model", quiet=True) or fs.text(
        "sys/firmware/devicetree/base/model", "device-tree model")
    r.model = model.splitlines()[0] if model else None
    compat = fs.text("proc/device-tree/compatible", "device-tree compatible")
    r.compatible = [c for c in (compat or "").splitlines() if c]
    r.soc = next((m.group(0) for c in r.compatible if (m := re.search(r"tegra\d+", c))), None)
    dts = fs.text("proc/device-tree/nvidia,dtsfilename", "device-tree dtsfilename", quiet=True) or ""
    r.part_numbers = list(dict.fromkeys(re.findall(r"p\d{4}-\d{4}", " ".join([*r.compatible, dts]))))
    mem = fs.text("proc/meminfo", "MemTotal (/proc/meminfo)")
    if mem and (m := re.search(r"MemTotal:\s*(\d+)\s*kB", mem)):
        r.mem_total_bytes = int(m.group(1)) * 1024
    rel = fs.text("etc/nv_tegra_release", "L4T release (/etc/nv_tegra_release)")
    m = re.search(r"R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)", rel or "")
    if m:
        r.l4t = f"{m.group(1)}.{m.group(2)}"
        r.jetpack = JETPACK.get(r.l4t) or (f"{JETPACK_MAJOR[m.group(1)]}.x" if m.group(1) in JETPACK_MAJOR else None)


# ------------------------------------------------------------------------------------------------ GPU

def _find_gpu(fs: _Files) -> tuple[str | None, Path | None, Path | None]:
    """(of_node name, devfreq dir, device dir): devfreq entries first (jtop's way), then nvgpu's gpu.0 link."""
    for entry in fs.glob("sys/class/devfreq/*"):
        name = fs.text(entry / "device" / "of_node" / "name", "devfreq of_node name", quiet=True)
        if name and name.splitlines()[0] in GPU_NODE_NAMES:
            return name.splitlines()[0], Path(os.path.realpath(entry)), Path(os.path.realpath(entry / "device"))
    for link in GPU0_LINKS:
        dev = fs.at(link)
        if fs.exists(dev):
            dev = Path(os.path.realpath(dev))
            freq = next(iter(fs.glob(f"{fs.show(dev).lstrip('/')}/devfreq/*")), None) or (
                dev / "devfreq_dev" if fs.exists(dev / "devfreq_dev") else None)
            node = fs.text(dev / "of_node" / "name", "GPU of_node name", quiet=True)
            return (node.splitlines()[0] if node else "gpu.0"), freq, dev
    return None, None, None


def _gpu(fs: _Files, r: JetsonReadout) -> Path | None:
    node, freq, dev = _find_gpu(fs)
    if node is None:
        fs.unread.append(Unread("GPU devfreq node", "/sys/class/devfreq/*/device/of_node/name",
                                f"no node named {', '.join(GPU_NODE_NAMES)} and no gpu.0 link"))
        return None
    g: dict = {"node": node, "devfreq": fs.show(freq) if freq else None, "device": fs.show(dev) if dev else None}
    if freq is not None:
        for key in ("cur", "min", "max"):
            g[f"{key}_mhz"] = _mhz(fs.number(freq / f"{key}_freq", f"GPU {key}_freq"))
        g["governor"] = fs.text(freq / "governor", "GPU devfreq governor")
        avail = fs.text(freq / "available_frequencies", "GPU available_frequencies")
        g["available_mhz"] = sorted(_mhz(int(x)) for x in avail.split() if x.isdigit()) if avail else []
    if dev is not None:
        load = fs.number(dev / "load", "GPU load (nvgpu, per mille)")
        g["load_pct"] = load / 10 if load is not None else None
    r.gpu = g
    return dev


def _tpc(fs: _Files, r: JetsonReadout, dev: Path | None, sku) -> None:
    """Live TPCs from nvgpu's tpc_fs_mask (TPCs on, hex) or tpc_pg_mask (TPCs power-gated, decimal)."""
    t: dict = {"fs_mask": None, "pg_mask": None, "live_tpcs": None, "live_sms": None, "source": None}
    if sku is not None:
        t["max_sms"] = sku.sms
    per_tpc = SMS_PER_TPC.get(r.soc or "")
    if dev is None or per_tpc is None:
        t["source"] = "no TPC power gating on this SoC" if dev is not None else "no GPU device"
        t["live_sms"] = sku.sms if sku is not None and dev is not None else None
        r.tpc = t
        return
    t["fs_mask"] = fs.number(dev / "tpc_fs_mask", "tpc_fs_mask (nvgpu)", base=16)
    t["pg_mask"] = fs.number(dev / "tpc_pg_mask", "tpc_pg_mask (nvgpu)")
    physical = PHYSICAL_TPCS.get(r.soc or "")
    from_pg = physical - bin(t["pg_mask"] & ((1 << physical) - 1)).count("1") if (
        t["pg_mask"] is not None and physical) else None
    if t["fs_mask"]:
        t["live_tpcs"], t["source"] = bin(t["fs_mask"]).count("1"), "tpc_fs_mask"
        if from_pg is not None and from_pg != t["live_tpcs"]:
            r.notes.append(f"tpc_fs_mask says {t['live_tpcs']} TPCs, tpc_pg_mask {t['pg_mask']} leaves {from_pg}: "
                           "using tpc_fs_mask (the driver's live configuration)")
    elif from_pg is not None:
        t["live_tpcs"], t["source"] = from_pg, f"tpc_pg_mask ({physical} TPCs - gated)"
    if t["live_tpcs"] is not None:
        t["live_sms"] = t["live_tpcs"] * per_tpc
    r.tpc = t


# ------------------------------------------------------------------------------------------------ EMC, mode

def _emc(fs: _Files, r: JetsonReadout, sku) -> None:
    e: dict = {"cur_mhz": None, "max_mhz": None, "cap_mhz": None, "theory_mhz": None, "source": None}
    for rate, top in EMC_RATE_FILES:
        if fs.exists(rate) or fs.why(fs.at(rate)) == "root needed":
            e["cur_mhz"] = _mhz(fs.number(rate, "EMC rate"))
            e["max_mhz"] = _mhz(fs.number(top, "EMC max rate")) if top else None
            break
    else:
        fs.unread.append(Unread("EMC rate", "/" + EMC_RATE_FILES[0][0], fs.why(fs.at(EMC_RATE_FILES[0][0]))))
    for cap in EMC_CAP_FILES:
        if fs.exists(cap):
            hz = fs.number(cap, "nvpmodel EMC cap")
            e["cap_mhz"] = _mhz(hz) if hz and 0 < hz < 1e10 and hz != 2**31 - 1 else None   # 0, -1, INT_MAX: none
            e["cap_file"] = "/" + cap
            break
    module_max = sku.mem_clock_mhz if sku is not None else None
    top = e["max_mhz"] or module_max
    if e["cap_mhz"] and top:
        e["theory_mhz"], e["source"] = min(e["cap_mhz"], top), "min(nvpmodel EMC cap, EMC max)"
    elif top:
        e["theory_mhz"], e["source"] = top, "EMC max rate" if e["max_mhz"] else f"module max ({sku.name})"
    r.emc = e


def parse_nvpmodel_conf(text: str) -> tuple[dict[int, dict], int | None]:
    """POWER_MODEL blocks of /etc/nvpmodel.conf: id -> {name, gpu_max_hz, tpc_pg_mask, emc_max_hz}; default id."""
    modes: dict[int, dict] = {}
    cur: dict | None = None
    default = None
    for raw in text.splitlines():
        line = raw.split("#")[0].strip()
        if m := re.match(r"<\s*POWER_MODEL\s+ID=(\d+)\s+NAME=(\S+?)\s*>", line):
            cur = modes.setdefault(int(m.group(1)), {"name": m.group(2)})
        elif m := re.match(r"<\s*PM_CONFIG\s+DEFAULT=(\d+)\s*>", line):
            default, cur = int(m.group(1)), None
        elif line.startswith("<"):
            cur = None                                   # a PARAM block: its MAX_FREQ lines are paths
        elif cur is not None and (m := re.match(r"(GPU|EMC)\s+MAX_FREQ\s+(-?\d+)", line)):
            cur[f"{m.group(1).lower()}_max_hz"] = int(m.group(2))
        elif cur is not None and (m := re.match(r"TPC_POWER_GATING\s+TPC_PG_MASK\s+(\d+)", line)):
            cur["tpc_pg_mask"] = int(m.group(1))
    return modes, default


def _nvpmodel(fs: _Files, r: JetsonReadout, run: Callable[[list[str]], str] | None) -> None:
    n: dict = {"id": None, "name": None, "source": None, "default_id": None, "modes": {}}
    conf = fs.text("etc/nvpmodel.conf", "nvpmodel.conf", quiet=True)
    if conf:
        n["modes"], n["default_id"] = parse_nvpmodel_conf(conf)
    status = fs.text("var/lib/nvpmodel/status", "nvpmodel status (/var/lib/nvpmodel/status)")
    if status and (m := re.search(r"pmode:(\d+)", status)):
        n["id"], n["source"] = int(m.group(1)), "/var/lib/nvpmodel/status"
    elif run is not None:
        try:
            out = run(["nvpmodel", "-q"])
        except (OSError, subprocess.SubprocessError) as e:
            fs.unread.append(Unread("nvpmodel -q", "nvpmodel -q", f"failed: {e}"))
            out = ""
        lines = [x.strip() for x in out.splitlines() if x.strip()]
        for i, line in enumerate(lines):
            if m := re.match(r"NV Power Mode:\s*(\S+)", line):
                n["name"], n["source"] = m.group(1), "nvpmodel -q"
                if i + 1 < len(lines) and lines[i + 1].isdigit():
                    n["id"] = int(lines[i + 1])
    if n["id"] is not None and n["id"] in n["modes"]:
        n["name"] = n["modes"][n["id"]]["name"]
    r.nvpmodel = n


def _jetson_clocks(fs: _Files, r: JetsonReadout) -> None:
    """jetson_clocks pins devfreq min_freq to max_freq (jtop/core/jetson_clocks.py compares MinFreq/MaxFreq)."""
    g = r.gpu
    lo, hi = g.get("min_mhz"), g.get("max_mhz")
    if lo is None or hi is None:
        r.jetson_clocks, r.jetson_clocks_basis = None, "GPU devfreq min/max unreadable"
        return
    r.jetson_clocks = abs(lo - hi) < 0.5
    r.jetson_clocks_basis = (f"GPU devfreq min_freq {lo:g} {'=' if r.jetson_clocks else '<'} max_freq {hi:g} MHz")


# ------------------------------------------------------------------------------------------------ health

def _thermal(fs: _Files, r: JetsonReadout) -> None:
    for zone in fs.glob("sys/devices/virtual/thermal/thermal_zone*"):
        kind = fs.text(zone / "type", "thermal zone type")
        milli = fs.number(zone / "temp", f"temperature of {kind or zone.name}")
        if kind and milli is not None and milli > -40000:        # jtop: -256 C marks an offline sensor
            r.thermal[kind if kind not in r.thermal else f"{kind}:{zone.name}"] = milli / 1000


def _rail_role(name: str) -> str:
    if name in GPU_ONLY_RAILS:
        return "gpu"
    if name in SHARED_GPU_RAILS:
        return "gpu_shared"
    return "input" if name in INPUT_RAILS else "other"


def _rails(fs: _Files, r: JetsonReadout) -> None:
    """INA3221 rails: JetPack 5/6 hwmon (inN_label, inN_input mV, currN_input mA; hwmon index by glob),
    JetPack 4 iio (rail_name_N, in_powerN_input mW, in_voltageN_input mV, in_currentN_input mA)."""
    for dev in fs.glob("sys/bus/i2c/devices/*"):
        if "ina3221" not in (fs.text(dev / "name", "i2c device name", quiet=True) or ""):
            continue
        for label in fs.glob(f"{fs.show(dev).lstrip('/')}/hwmon/hwmon*/in*_label"):
            name, n = fs.text(label, "INA3221 label"), re.match(r"in(\d+)_label", label.name).group(1)
            if not name or "NC" in name.split() or n == "7":         # not connected; 7 = sum of shunts
                continue
            mv, ma = fs.number(label.parent / f"in{n}_input", f"{name} mV"), fs.number(
                label.parent / f"curr{n}_input", f"{name} mA")
            r.rails.append({"name": name, "mv": mv, "ma": ma, "mw": mv * ma / 1000 if mv is not None and ma is not None
                            else None, "role": _rail_role(name)})
        for label in fs.glob(f"{fs.show(dev).lstrip('/')}/iio:device*/rail_name_*"):
            name, n = fs.text(label, "INA3221 rail name"), label.name.rsplit("_", 1)[1]
            if not name:
                continue
            d = label.parent
            r.rails.append({"name": name, "mv": fs.number(d / f"in_voltage{n}_input", f"{name} mV"),
                            "ma": fs.number(d / f"in_current{n}_input", f"{name} mA"),
                            "mw": fs.number(d / f"in_power{n}_input", f"{name} mW"), "role": _rail_role(name)})
    roles = {x["role"] for x in r.rails}
    shared = [x["name"] for x in r.rails if x["role"] == "gpu_shared"]
    if not r.rails:
        r.rails_note = "no INA3221 power monitor found under /sys/bus/i2c/devices (the Nano 2GB has none)"
    elif "gpu" not in roles:
        r.rails_note = ("no GPU-only rail on this module: " + "; ".join(
            f"{s} carries {SHARED_GPU_RAILS[s]}" for s in shared) if shared else
            "no GPU-only rail on this module: GPU power is only in the module input")


# ------------------------------------------------------------------------------------------------ read

MODEL_KEYS = (("agx orin", "AGX Orin"), ("orin nx", "Orin NX"), ("orin nano", "Orin Nano"),
              ("agx xavier", "AGX Xavier"), ("xavier nx", "Xavier NX"), ("tx2", "TX2"), ("nano", "Jetson Nano"))


def _module_sku(r: JetsonReadout, hardware_max_mhz: float | None):
    """The skus.toml entry for this board: by device-tree part number, else by the model string; among
    entries left (32 vs 64 GB; Orin Nano and its Super modes) by memory size, then the GPU's top frequency."""
    from hwprobe import specs

    gpus = [s for s in specs.skus().values() if s.kind == "gpu" and s.integrated]
    found = [s for s in gpus if set(s.part_numbers) & set(r.part_numbers)]
    if not found and r.model:
        needle = next((name for key, name in MODEL_KEYS if key in r.model.lower()), None)
        found = [s for s in gpus if needle and needle in s.name]
    if len(found) > 1 and r.mem_total_bytes:
        best = min(abs((s.mem_bytes or 0) - r.mem_total_bytes) for s in found)
        found = [s for s in found if abs((s.mem_bytes or 0) - r.mem_total_bytes) == best]
    if len(found) > 1 and hardware_max_mhz:
        best = min(abs((s.boost_clock_mhz or 0) - hardware_max_mhz) for s in found)
        found = [s for s in found if abs((s.boost_clock_mhz or 0) - hardware_max_mhz) == best]
    return found[0] if len(found) == 1 else None


def _default_run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=4, check=False).stdout


def read(root: str | Path = "/", run: Callable[[list[str]], str] | None = None,
         use_commands: bool | None = None) -> JetsonReadout | None:
    """Everything the files under ``root`` say about this Jetson, or None when it is not one (no Tegra in
    the device tree and no GPU devfreq node). ``run`` executes ``nvpmodel -q`` when the status file is
    missing (default: subprocess, only when ``root`` is "/")."""
    fs = _Files(root)
    r = JetsonReadout(root=str(root))
    _identity(fs, r)
    dev = _gpu(fs, r)
    if not r.soc and not r.gpu:
        return None
    if use_commands is None:
        use_commands = str(root) == "/"
    avail = r.gpu.get("available_mhz") or []
    sku = _module_sku(r, max(avail) if avail else r.gpu.get("max_mhz"))
    r.module = sku.name if sku else None
    if sku is None:
        r.notes.append(f"no skus.toml entry for part numbers {r.part_numbers or '-'} / model {r.model!r}")
    _tpc(fs, r, dev, sku)
    _emc(fs, r, sku)
    _nvpmodel(fs, r, (run or _default_run) if use_commands else None)
    _jetson_clocks(fs, r)
    _thermal(fs, r)
    _rails(fs, r)
    r.unread = fs.unread
    return r


def readout_dict(root: str | Path = "/") -> dict | None:
    """``read`` as a plain dict for GpuInfo.jetson and the environment record; None off a Jetson. Never raises."""
    try:
        r = read(root)
    except Exception as e:  # a readout is context: it must never stop device discovery
        return {"error": f"{type(e).__name__}: {e}"}
    return r.to_dict() if r is not None else None
