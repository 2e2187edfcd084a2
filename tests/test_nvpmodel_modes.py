"""Every Orin module's power modes against NVIDIA's own nvpmodel configs (issue 23 item 11).

The oracle is typed here from NVIDIA's files, not read from skus.toml: for each POWER_MODEL, its id, name, GPU
MAX_FREQ, TPC_PG_MASK (TPCs on = 8 physical - popcount) and EMC MAX_FREQ. "-1" (GPU) and "-1"/"0" (EMC) lift
the cap: the module's top rate, written here as the datasheet's (AGX Orin 64GB 1300.5 MHz, 32GB 930.75, NX
16GB 918, NX 8GB 765, Nano 625; Super firmware: NX 1173, Nano 1020; EMC 3199 MHz, the non-Super Nano 2133).
The files are NVIDIA's (proprietary licence, so not copied into this repository); read from the LineageOS
device tree that ships them, LineageOS/android_device_nvidia_concord, nvpmodel/nvpmodel_<module>.conf at
commit 54e49538515b2e38a99731ab8805eccec2f302c6 (the JetPack 5/6.0 files) and the _super.conf files at commit
370b63a8dbe954cd5f2da0c24694a1af5796612f (JetPack 6.1 rev. 1 / 6.2).
"""

from __future__ import annotations

import pytest

from hwprobe import specs
from hwprobe.specs import modes

# module -> {JetPack the file ships with: [(id, name, GPU MHz, TPCs, EMC MHz)]}
NVPMODEL = {
    "Jetson AGX Orin 64GB": {   # nvpmodel_p3701_0000.conf
        "5.1.2": [(0, "MAXN", 1300.5, 8, 3199), (1, "MODE_15W", 408, 3, 2133), (2, "MODE_30W", 612, 4, 3199),
                  (3, "MODE_50W", 816, 8, 3199)]},
    "Jetson AGX Orin 32GB": {   # nvpmodel_p3701_0004.conf
        "5.1.2": [(0, "MAXN", 930.75, 7, 3199), (1, "MODE_15W", 408, 3, 2133), (2, "MODE_30W", 612, 4, 3199),
                  (3, "MODE_40W", 816, 7, 3199)]},
    "Jetson Orin NX 16GB": {    # nvpmodel_p3767_0000.conf, _super.conf
        "5.1.2": [(0, "MAXN", 918, 4, 3199), (1, "10W", 612, 2, 2133), (2, "15W", 612, 2, 3199),
                  (3, "25W", 408, 4, 3199)],
        "6.2": [(0, "MAXN_SUPER", 1173, 4, 3199), (1, "10W", 612, 2, 2133), (2, "15W", 612, 2, 3199),
                (3, "25W", 408, 4, 3199), (4, "40W", 1173, 4, 3199)]},
    "Jetson Orin NX 8GB": {     # nvpmodel_p3767_0001.conf, _super.conf
        "5.1.2": [(0, "MAXN", 765, 4, 3199), (1, "10W", 612, 2, 2133), (2, "15W", 612, 2, 3199),
                  (3, "20W", 408, 4, 3199)],
        "6.2": [(0, "MAXN_SUPER", 1173, 4, 3199), (1, "10W", 612, 2, 2133), (2, "15W", 612, 2, 3199),
                (3, "20W", 408, 4, 3199), (4, "40W", 1173, 4, 3199)]},
    "Jetson Orin Nano 8GB": {   # nvpmodel_p3767_0003.conf, _super.conf
        "6.0": [(0, "15W", 625, 4, 2133), (1, "7W", 408, 2, 2133)],
        "6.1": [(0, "15W", 612, 4, 2133), (1, "25W", 918, 4, 3199), (2, "MAXN_SUPER", 1020, 4, 3199)]},
    "Jetson Orin Nano 8GB Super": {   # nvpmodel_p3767_0003_super.conf
        "6.1": [(0, "15W", 612, 4, 2133), (1, "25W", 918, 4, 3199), (2, "MAXN_SUPER", 1020, 4, 3199)]},
    "Jetson Orin Nano 4GB": {   # nvpmodel_p3767_0004.conf, _super.conf
        "6.0": [(0, "10W", 625, 2, 2133), (1, "7W_AI", 408, 2, 2133), (2, "7W_CPU", 306, 2, 2133)],
        "6.1": [(0, "10W", 612, 2, 2133), (1, "25W", 1020, 2, 3199), (2, "MAXN_SUPER", 1020, 2, 3199)]},
}


@pytest.mark.parametrize(("module", "jetpack"), [(m, jp) for m, by in NVPMODEL.items() for jp in by])
def test_modes_match_nvidias_nvpmodel_conf(module, jetpack):
    sku = specs.find(module)
    got = sorted((m.id, m.name, m.gpu_max_mhz, modes.mode_sms(sku, m) // 2, m.emc_mhz)
                 for m in modes.available_modes(sku, jetpack))
    assert got == sorted(NVPMODEL[module][jetpack])


def test_a_super_board_is_judged_in_its_super_mode():
    """Issue 23: an Orin Nano 8GB on JetPack 6.1+ in MAXN_SUPER runs 1020 MHz and EMC 3199 MHz. By hand: 8 SMs x
    1020 MHz x 4096 dense INT8 ops/clk/SM x 2 (2:4 sparse) = 66.8 TOP/s, NVIDIA's "67 sparse TOPS"; DRAM
    3199 MHz x 2 (DDR) x 16 B (128-bit bus) = 102.4 GB/s, NVIDIA's "102 GB/s"."""
    sku = specs.find("Jetson Orin Nano 8GB")
    mode = modes.find_mode(sku, name="MAXN_SUPER", jetpack="6.2")
    dt = modes.mode_theory(sku, mode)
    assert dt.compute("int8", "tensor_core", sparse=True).at_max_clock == pytest.approx(8 * 1020e6 * 4096 * 2)
    assert dt.bandwidth.at_max_clock == pytest.approx(3199e6 * 2 * 16)
    assert dt.bandwidth.at_max_clock / modes.mode_theory(sku, modes.find_mode(sku, "15W", jetpack="6.0")) \
        .bandwidth.at_max_clock == pytest.approx(3199 / 2133)            # the 40%+ a 15W theory would miss
    assert modes.max_mode(sku, "6.1").name == "MAXN_SUPER" and modes.max_mode(sku, "6.0").name == "15W"


# The built sysfs trees under tests/fixtures/jetson/ carry an nvpmodel.conf (the lines hwprobe reads): their
# values must be NVIDIA's, so the readout tests run on what a board shows (module, JetPack, module GPU top).
FIXTURES = {"agx-orin-maxn-jp5": ("Jetson AGX Orin 64GB", "5.1.2", 1300.5, 3199),
            "agx-orin-15w-jp6": ("Jetson AGX Orin 64GB", "5.1.2", 1300.5, 3199),
            "orin-nano-super-jp6": ("Jetson Orin Nano 8GB", "6.1", 1020, 3199)}


@pytest.mark.parametrize("tree", sorted(FIXTURES))
def test_fixture_nvpmodel_conf_holds_nvidias_values(tree):
    from pathlib import Path

    from hwprobe.device import jetson

    module, jp, gpu_top, emc_top = FIXTURES[tree]
    conf = Path(__file__).resolve().parent / "fixtures" / "jetson" / tree / "etc" / "nvpmodel.conf"
    parsed, _ = jetson.parse_nvpmodel_conf(conf.read_text())
    got = sorted((i, m["name"], m["gpu_max_hz"] / 1e6 if m["gpu_max_hz"] > 0 else gpu_top,
                  8 - bin(m["tpc_pg_mask"]).count("1"), m["emc_max_hz"] / 1e6 if m["emc_max_hz"] > 0 else emc_top)
                 for i, m in parsed.items())
    assert got == sorted(NVPMODEL[module][jp])
