"""Jetson readout from built sysfs trees (tests/fixtures/jetson/make_fixtures.py: the paths jetson-stats reads,
the nvgpu driver's formats and NVIDIA's nvpmodel configs; not recorded on a board, sources in each tree's
README.md), and the live theory built from it. test_nvpmodel_modes.py checks the trees' mode values against
NVIDIA's configs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hwprobe import specs
from hwprobe.device import GpuInfo, jetson
from hwprobe.specs import jetpack, live, modes

FIX = Path(__file__).resolve().parent / "fixtures" / "jetson"
G, T = 1e9, 1e12


def tree(name: str) -> Path:
    return FIX / name


def copy_tree(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(tree(name), dst, symlinks=True)
    return dst


def orin_gpu(readout: dict, sms: int = 16, clock: float = 1300.5) -> GpuInfo:
    # What CUDA reports on Orin: the name, a 64-bit bus and a memory clock that is not the EMC's.
    return GpuInfo(index=0, name="Orin", cc_major=8, cc_minor=7, sms=sms, l2_bytes=4 << 20, mem_bytes=62 << 30,
                   mem_clock_mhz=1300.5, bus_width_bits=64, sm_clock_max_mhz=clock, integrated=True, jetson=readout)


# ------------------------------------------------------------------------------------------------ fixtures

def test_agx_xavier_jetpack4_readout():
    r = jetson.read(tree("agx-xavier-jp4"))
    assert r.module == "Jetson AGX Xavier"                      # from the dtsfilename's p2888-0004
    assert (r.soc, r.l4t, r.jetpack) == ("tegra194", "32.7.4", "4.6.4")
    assert r.gpu["node"] == "gv11b" and r.gpu["max_mhz"] == 1377 and r.gpu["cur_mhz"] == 114.75
    assert r.gpu["governor"] == "nvhost_podgov" and r.gpu["available_mhz"][-1] == 1377
    assert r.tpc["live_tpcs"] == 4 and r.live_sms == 8 and r.tpc["source"] == "tpc_fs_mask"
    assert r.emc["cur_mhz"] == 2133 and r.emc["theory_mhz"] == 2133 and r.emc["cap_mhz"] is None   # cap 0 = none
    assert (r.nvpmodel["id"], r.nvpmodel["name"], r.nvpmodel["default_id"]) == (0, "MAXN", 2)
    assert r.jetson_clocks is False and "114.75 < max_freq 1377" in r.jetson_clocks_basis
    # JetPack 4: INA3221 through iio (rail_name_N, in_powerN_input in mW); AGX Xavier has a GPU-only rail
    gpu = next(x for x in r.rails if x["name"] == "GPU")
    assert gpu["role"] == "gpu" and gpu["mw"] == 19072 * 80 // 1000 and gpu["mv"] == 19072
    assert {x["name"] for x in r.rails} == {"GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"} and r.rails_note == ""
    assert r.thermal["GPU-therm"] == 40.0 and r.thermal["Tdiode_tegra"] == 38.25
    assert r.unread == []


def test_agx_orin_maxn_jetpack5_readout():
    r = jetson.read(tree("agx-orin-maxn-jp5"))
    assert r.module == "Jetson AGX Orin 64GB" and r.part_numbers == ["p3737-0000", "p3701-0005"]
    assert (r.l4t, r.jetpack, r.gpu["node"]) == ("35.4.1", "5.1.2", "ga10b")
    assert r.gpu["devfreq"] == "/sys/devices/17000000.ga10b/devfreq/17000000.ga10b"   # JetPack 5 GPU node
    assert r.live_sms == 16 and r.tpc["fs_mask"] == 0xFF and r.tpc["pg_mask"] == 0
    assert r.gpu["load_pct"] == 99.8
    assert r.jetson_clocks is True and r.nvpmodel["name"] == "MAXN"
    assert r.emc["theory_mhz"] == 3199 and r.emc["source"] == "EMC max rate"
    names = [x["name"] for x in r.rails]
    assert "NC" not in names and "sum of shunt voltages" not in names           # skipped as jtop does
    assert r.rails[0] == {"name": "VDD_GPU_SOC", "mv": 4984, "ma": 4120, "mw": pytest.approx(20534.08),
                          "role": "gpu_shared"}
    assert r.rails_note == "no GPU-only rail on this module: VDD_GPU_SOC carries the GPU and the SOC"


def test_agx_orin_lower_power_mode_jetpack6_readout():
    r = jetson.read(tree("agx-orin-15w-jp6"))
    assert r.module == "Jetson AGX Orin 64GB" and r.jetpack == "6.2"
    assert r.gpu["node"] == "gpu" and r.gpu["device"] == "/sys/devices/platform/bus@0/17000000.gpu"
    assert (r.nvpmodel["id"], r.nvpmodel["name"]) == (1, "MODE_15W")
    assert r.nvpmodel["modes"][1] == {"name": "MODE_15W", "tpc_pg_mask": 248, "gpu_max_hz": 408000000,
                                      "emc_max_hz": 2133000000}
    assert r.tpc["live_tpcs"] == 3 and r.live_sms == 6 and r.tpc["max_sms"] == 16
    assert r.gpu["max_mhz"] == 408 and r.jetson_clocks is False
    assert r.emc["cap_mhz"] == 2133 and r.emc["theory_mhz"] == 2133
    assert r.emc["cap_file"] == "/sys/kernel/nvpmodel_clk_cap/emc"
    assert [(u.item, u.why) for u in r.unread] == [("EMC rate", "missing")]


def test_orin_nano_super_readout():
    r = jetson.read(tree("orin-nano-super-jp6"))
    assert r.module == "Jetson Orin Nano 8GB Super"             # same part number as the Nano: the 1020 MHz top picks
    assert r.nvpmodel["name"] == "MAXN_SUPER" and r.live_sms == 8 and r.gpu["max_mhz"] == 1020
    assert r.emc["cap_mhz"] == 3199 and r.emc["theory_mhz"] == 3199
    assert {x["role"] for x in r.rails} == {"input", "gpu_shared", "other"}
    assert "VDD_CPU_GPU_CV carries the CPU, the GPU and the CV cores" in r.rails_note


def test_every_fixture_names_its_sources():
    for d in FIX.iterdir():
        if d.is_dir():
            text = (d / "README.md").read_text()
            assert "jetson-stats jtop/core/" in text and "nvgpu" in text, d.name
            files = [p for p in d.rglob("*") if p.is_file() and not p.is_symlink() and p.name != "README.md"]
            for p in files:
                assert f"`/{p.relative_to(d)}`" in text, p


# ------------------------------------------------------------------------------------------------ paths that move

def test_gpu_found_through_the_gpu0_link_without_devfreq_class(tmp_path):
    root = copy_tree("agx-orin-15w-jp6", tmp_path)
    shutil.rmtree(root / "sys" / "class" / "devfreq")
    r = jetson.read(root)
    assert r.gpu["device"] == "/sys/devices/platform/bus@0/17000000.gpu"
    assert r.gpu["max_mhz"] == 408 and r.live_sms == 6


def test_live_sms_from_tpc_pg_mask_when_fs_mask_is_missing(tmp_path):
    root = copy_tree("agx-orin-15w-jp6", tmp_path)
    (root / "sys/devices/platform/bus@0/17000000.gpu/tpc_fs_mask").unlink()
    r = jetson.read(root)
    assert r.tpc["live_tpcs"] == 3 and r.live_sms == 6 and r.tpc["source"].startswith("tpc_pg_mask")
    assert any(u.item == "tpc_fs_mask (nvgpu)" and u.why == "missing" for u in r.unread)


def test_disagreeing_masks_are_reported(tmp_path):
    root = copy_tree("agx-orin-maxn-jp5", tmp_path)
    (root / "sys/devices/17000000.ga10b/tpc_pg_mask").write_text("240\n")
    r = jetson.read(root)
    assert r.live_sms == 16 and any("tpc_pg_mask 240 leaves 4" in n for n in r.notes)


def test_debugfs_needs_root(tmp_path, monkeypatch):
    # The tests run as root here; deny what a user account cannot enter (debugfs is mode 0700).
    root = copy_tree("agx-orin-maxn-jp5", tmp_path)
    debug = str(root / "sys/kernel/debug")
    real_stat, real_access = os.stat, os.access

    def stat(p, *a, **k):
        if str(p).startswith(debug + "/"):
            raise PermissionError(13, "Permission denied", str(p))
        return real_stat(p, *a, **k)

    def access(p, mode, *a, **k):
        return False if str(p).startswith(debug) else real_access(p, mode, *a, **k)

    monkeypatch.setattr(jetson.os, "stat", stat)
    monkeypatch.setattr(jetson.os, "access", access)
    r = jetson.read(root)
    emc = [u for u in r.unread if u.item.startswith("EMC")]
    assert emc and all(u.why == "root needed" for u in emc)
    assert emc[0].path == "/sys/kernel/debug/bpmp/debug/clk/emc/rate"
    assert r.emc["cur_mhz"] is None and r.emc["theory_mhz"] == 3199 and "module max" in r.emc["source"]
    assert any("root needed" in line for line in jetpack.summary(r.to_dict()))


def test_nvpmodel_query_when_the_status_file_is_missing(tmp_path):
    root = copy_tree("agx-orin-15w-jp6", tmp_path)
    (root / "var/lib/nvpmodel/status").unlink()
    calls = []

    def run(cmd):
        calls.append(cmd)
        return "NV Power Mode: MODE_15W\n1\n"

    r = jetson.read(root, run=run, use_commands=True)
    assert calls == [["nvpmodel", "-q"]]
    assert (r.nvpmodel["name"], r.nvpmodel["id"], r.nvpmodel["source"]) == ("MODE_15W", 1, "nvpmodel -q")
    r = jetson.read(root)                                          # a fixture root runs no command
    assert r.nvpmodel["id"] is None and any(u.item.startswith("nvpmodel status") for u in r.unread)


def test_not_a_jetson(tmp_path):
    assert jetson.read(tmp_path) is None
    assert jetson.readout_dict(tmp_path) is None


def test_nvpmodel_conf_parser_skips_param_blocks():
    text = (tree("agx-orin-maxn-jp5") / "etc/nvpmodel.conf").read_text()
    modes_, default = jetson.parse_nvpmodel_conf(text)
    assert sorted(modes_) == [0, 1, 2, 3] and default == 2
    assert modes_[0] == {"name": "MAXN", "tpc_pg_mask": 0, "gpu_max_hz": -1, "emc_max_hz": -1}
    assert modes_[2]["gpu_max_hz"] == 612000000


@pytest.mark.parametrize(("have", "want", "expect"), [("6.2.1", "6.2", True), ("6.1", "6.2", False),
                                                      ("5.1.2", "6.2", False), ("6.x", "6.2", None),
                                                      (None, "6.2", None), ("6.2", "6.2", True)])
def test_jetpack_at_least(have, want, expect):
    assert jetpack.jetpack_at_least(have, want) is expect


# ------------------------------------------------------------------------------------------------ live theory

def test_live_theory_in_a_lower_power_mode():
    r = jetson.read(tree("agx-orin-15w-jp6")).to_dict()
    dt = live.device_theory(orin_gpu(r))
    assert dt.sku.name == "Jetson AGX Orin 64GB"
    assert dt.sms == 6 and dt.max_clock_mhz == 408
    assert dt.compute("fp16", "tensor_core").at_max_clock == pytest.approx(6 * 1024 * 2 * 408e6)
    assert dt.bandwidth.at_max_clock == pytest.approx(2133e6 * 2 * 32)          # EMC cap x 256-bit, not CUDA's 64
    notes = " | ".join(dt.notes)
    assert "CUDA reports 16 SMs; the TPC mask leaves 6 live" in notes
    assert "clockRate says 1300.5 MHz: not used on Jetson" in notes
    assert "the fullest mode MAXN (id 0) gives 16 SMs at 1300.5 MHz" in notes and "85.23 TOP/s vs 10.03 TOP/s" in notes
    assert "hwprobe does not change modes" in notes


def test_live_theory_in_maxn_matches_the_datasheet_entry():
    r = jetson.read(tree("agx-orin-maxn-jp5")).to_dict()
    dt = live.device_theory(orin_gpu(r))
    full = specs.sku_theory(specs.find("AGX Orin 64GB"))
    peak = full.compute("int8", "tensor_core").at_max_clock
    assert dt.compute("int8", "tensor_core").at_max_clock == pytest.approx(peak)
    assert dt.bandwidth.at_max_clock == pytest.approx(204.7 * G, rel=1e-3)
    assert any(n.startswith("this is the fullest mode MAXN") for n in dt.notes)


def test_live_theory_orin_nano_super_and_xavier():
    nano = jetson.read(tree("orin-nano-super-jp6")).to_dict()
    dt = live.device_theory(orin_gpu(nano, sms=8, clock=1020))
    assert dt.bandwidth.at_max_clock == pytest.approx(102.4 * G, rel=1e-3)
    assert dt.compute("int8", "tensor_core", sparse=True).at_max_clock == pytest.approx(66.8 * T, rel=1e-3)
    xavier = jetson.read(tree("agx-xavier-jp4")).to_dict()
    g = GpuInfo(index=0, name="Xavier", cc_major=7, cc_minor=2, sms=8, l2_bytes=512 << 10, mem_bytes=31 << 30,
                mem_clock_mhz=1377, bus_width_bits=256, sm_clock_max_mhz=1377, integrated=True, jetson=xavier)
    dt = live.device_theory(g)
    assert dt.compute("int8", "tensor_core").at_max_clock == pytest.approx(22.56 * T, rel=1e-3)
    assert dt.bandwidth.at_max_clock == pytest.approx(136.5 * G, rel=1e-3)


def test_discovery_attaches_the_readout_to_integrated_gpus(monkeypatch):
    """cuda.discover on a fake CuPy: an integrated device gets the Jetson readout, a discrete one does not."""
    import sys
    import types

    from hwprobe.device import cuda, nvml

    attrs = {16: 16, 75: 8, 76: 7, 13: 1300500, 36: 1300500, 37: 64, 38: 4 << 20, 18: 1}

    class Runtime:
        @staticmethod
        def getDeviceCount():
            return 1

        @staticmethod
        def getDeviceProperties(i):
            return {"name": b"Orin", "major": 8, "minor": 7, "multiProcessorCount": 16, "totalGlobalMem": 62 << 30}

        @staticmethod
        def deviceGetAttribute(attr, dev):
            return attrs.get(attr, 0)

        driverGetVersion = runtimeGetVersion = staticmethod(lambda: 12060)

        @staticmethod
        def deviceGetPCIBusId(i):
            raise RuntimeError("no PCI on Tegra")

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=Runtime))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(nvml, "enrich", lambda info: setattr(info, "nvml", {"available": False}))
    monkeypatch.setattr(jetson, "readout_dict", lambda root="/": jetson.read(tree("agx-orin-15w-jp6")).to_dict())
    (info,) = cuda.discover()
    assert info.integrated and info.jetson["nvpmodel"]["name"] == "MODE_15W"
    assert info.to_dict()["jetson"]["tpc"]["live_sms"] == 6            # the environment record carries it
    assert live.device_theory(info).sms == 6
    attrs[18] = 0
    (info,) = cuda.discover()
    assert info.jetson is None


# ------------------------------------------------------------------------------------------------ spec entries

JETSONS = ["Jetson Nano", "Jetson TX2", "Jetson Xavier NX", "Jetson AGX Xavier", "Jetson Orin Nano 8GB",
           "Jetson Orin Nano 8GB Super", "Jetson Orin NX 8GB", "Jetson Orin NX 16GB", "Jetson AGX Orin 32GB",
           "Jetson AGX Orin 64GB"]


@pytest.mark.parametrize("name", JETSONS)
def test_every_jetson_module_has_power_modes(name):
    sku = specs.find(name)
    assert sku.integrated and sku.power_modes and sku.marketing_tops and sku.part_numbers
    for m in sku.power_modes:
        assert 0 < modes.mode_sms(sku, m) <= sku.sms
        assert m.emc_mhz <= sku.mem_clock_mhz or m.min_jetpack, (name, m)
        assert m.gpu_max_mhz <= sku.boost_clock_mhz or m.min_jetpack, (name, m)
    top = modes.max_mode(sku, jetpack="5.1.2" if not sku.power_modes[0].min_jetpack else "6.2")
    assert modes.mode_sms(sku, top) == sku.sms


def test_xavier_published_figures_beside_theory():
    rows = {r["figure"]: r for r in modes.datasheet_rows(specs.find("AGX Xavier"))}
    int8 = rows["int8.tensor_core"]
    assert int8["published"] == 22.4 * T and int8["theory"] == pytest.approx(22.56 * T, rel=1e-3)
    assert int8["diff"] == pytest.approx(22.56 / 22.4 - 1, abs=2e-4)              # +0.7% at 1377 MHz
    assert int8["theory_at_its_clock"] == pytest.approx(22.45 * T, rel=1e-3)       # at the seeds' 1370 MHz
    dram = rows["dram"]
    assert dram["published"] == 137 * G and dram["theory"] == pytest.approx(136.5 * G, rel=1e-3)
    from hwprobe.report.specs import render_text

    text = render_text(specs.sku_theory(specs.find("AGX Xavier")))
    assert "published 22.4 TOP/s at 1370 MHz; theory 22.56 TOP/s at 1377 MHz +0.7%" in text
    assert "headline 32 TOP/s" in text and "two DLAs" in text and "the GPU alone: 22.56 TOP/s" in text
    assert "MODE_10W" in text and "4.26 TOP/s" in text                            # 2 TPCs x 520 MHz


def test_seed_ridge_points_from_the_xavier_entry():
    dt = specs.sku_theory(specs.find("AGX Xavier"))
    bw = dt.bandwidth.at_max_clock
    for (p, u), tera, ridge in ((("fp32", "cuda_core"), 1.4, 10.2), (("fp16", "tensor_core"), 11.2, 81.8),
                                (("int8", "tensor_core"), 22.4, 163)):
        t = dt.compute(p, u, clock_mhz=1370)
        assert t.at_clock == pytest.approx(tera * T, rel=0.003)                   # 8 SMs x 1370 MHz
        assert t.datasheet / 137e9 == pytest.approx(ridge, rel=0.005)             # the seeds' own arithmetic
        assert t.at_max_clock / bw == pytest.approx(ridge, rel=0.02)              # theory at 1377 MHz / 136.5 GB/s


def test_orin_dense_and_sparse_split():
    rows = {r["figure"]: r for r in modes.datasheet_rows(specs.find("AGX Orin 64GB"))}
    assert rows["int8.tensor_core"]["published"] == 85 * T
    assert rows["int8.tensor_core (2:4 sparse)"]["published"] == 170 * T
    assert rows["int8.tensor_core (2:4 sparse)"]["theory"] == pytest.approx(2 * rows["int8.tensor_core"]["theory"])
    nano = {r["figure"]: r for r in modes.datasheet_rows(specs.find("Orin Nano 8GB"))}
    assert nano["int8.tensor_core (2:4 sparse)"]["diff"] == pytest.approx(0.024, abs=0.001)   # 40.96 vs 40


def test_modes_follow_the_jetpack():
    nx = specs.find("Orin NX 16GB")
    assert [m.name for m in modes.available_modes(nx, "5.1.2")] == ["MAXN", "10W", "15W", "25W"]
    assert [m.name for m in modes.available_modes(nx, "6.2")] == ["10W", "15W", "25W", "MAXN_SUPER", "40W"]
    assert modes.max_mode(nx, "5.1.2").gpu_max_mhz == 918 and modes.max_mode(nx, "6.2").gpu_max_mhz == 1173
    assert modes.find_mode(nx, name="mode_15w", jetpack="6.2").id == 2
    assert modes.find_mode(nx, mode_id=0, jetpack="6.2").name == "MAXN_SUPER"
    t = modes.mode_theory(specs.find("AGX Orin 64GB"), modes.find_mode(specs.find("AGX Orin 64GB"), "MODE_30W"))
    assert (t.sms, t.max_clock_mhz) == (8, 612) and t.bandwidth.at_max_clock == pytest.approx(204.7 * G, rel=1e-3)


# ------------------------------------------------------------------------------------------------ suites

@pytest.mark.parametrize(("suite", "arch"), [("jetson", "sm_87"), ("jetson-xavier", "sm_72")])
def test_jetson_suites_measure_only_what_the_module_has(suite, arch):
    from hwprobe import suites
    from hwprobe.fleet.expect import JETSON_KEYS
    from hwprobe.specs import theory as th

    s = suites.load(suite)
    suites.validate(s)
    precs = {p for e in s.entries for p in e.params.get("precisions", ())}
    assert "fp8" not in precs and "fp64" not in precs
    for e in s.entries:
        for p in e.params.get("precisions", ()):
            units = ("tensor_core",) if e.probe == "gpu.mma_sync" else ("cuda_core", "tensor_core")
            assert any(th.rates(arch, p, u) for u in units), (suite, e.probe, p)
    if arch == "sm_72":
        assert not precs & {"bf16", "tf32"} and "gpu.mma_sync" not in {e.probe for e in s.entries}
    # sized for 8 GB of shared memory: GEMM operands, DRAM arrays and host buffers each well under 2 GiB
    params = {e.probe: e.params for e in s.entries}
    assert 3 * max(params["gpu.gemm"]["sizes"]) ** 2 * 4 <= 256 << 20 and not params["gpu.gemm"]["big_sizes"]
    assert 3 * params["gpu.dram"]["array_mib"] <= 2048 and params["gpu.host"]["max_mib"] <= 512
    # every ceiling the spec-derived expectation holds is one the suite measures
    for key in JETSON_KEYS[arch]:
        prec = key.split(".")[0]
        assert key == "dram.bandwidth" or prec in precs, key
