"""CPU tests of the link-type reading with a fake NVML: direct NVLink pairs, NVSwitch boxes of 4 and 8 GPUs,
PCIe pairs, version codes from old and new drivers, and the theory that follows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hwprobe.probes.interconnect import topology as T


class FakeNvml:
    """NVML over a table: handle -> {"pci": (d, b, dev), "links": [(version, remote_pci, remote_type)], "pcie"}."""

    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, gpus):
        self.gpus = gpus

    def nvmlDeviceGetPciInfo(self, h):
        d, b, dev = self.gpus[h]["pci"]
        return SimpleNamespace(domain=d, bus=b, device=dev)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return self.gpus[h].get("pcie", (5, 16))[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return self.gpus[h].get("pcie", (5, 16))[1]

    def _link(self, h, link):
        links = self.gpus[h].get("links", [])
        if link >= len(links):
            raise RuntimeError("NVML_ERROR_INVALID_ARGUMENT")
        return links[link]

    def nvmlDeviceGetNvLinkState(self, h, link):
        return 1 if self._link(h, link) else 0

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return self._link(h, link)[0]

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        d, b, dev = self._link(h, link)[1]
        return SimpleNamespace(domain=d, bus=b, device=dev)

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h, link):
        return self._link(h, link)[2]


def _pci(i):
    return (0, 0x18 + 0x10 * i, 0)


def _switch_box(n, version=6, links=18):
    sw = (0, 0xF0, 0)
    return {i: {"pci": _pci(i), "links": [(version, sw, T.DEVICE_SWITCH)] * links} for i in range(n)}


def test_two_gpus_direct_nvlink4():
    gpus = {i: {"pci": _pci(i), "links": [(6, _pci(1 - i), T.DEVICE_GPU)] * 18} for i in range(2)}
    _, pairs = T.topology(FakeNvml(gpus), {0: 0, 1: 1}, cc_major=9)
    p = pairs[(0, 1)]
    assert p.kind == "nvlink" and p.link_type == "NVLink4 x18" and p.links == 18
    assert p.per_direction_Bps == 450e9
    assert "18 x 25 GB/s" in p.basis
    assert T.concurrent_ok(pairs)


@pytest.mark.parametrize("n", [4, 8])
def test_nvswitch_box_every_pair_alike(n):
    _, pairs = T.topology(FakeNvml(_switch_box(n)), {i: i for i in range(n)}, cc_major=9)
    assert len(pairs) == n * (n - 1) // 2
    assert {p.link_type for p in pairs.values()} == {"NVLink4 x18 (NVSwitch)"}
    assert {p.per_direction_Bps for p in pairs.values()} == {450e9}
    assert T.concurrent_ok(pairs)


def test_nvswitch_pair_gets_the_fewer_links_and_a100_gen3():
    box = _switch_box(4, version=4, links=12)      # A100 HGX: NVLink 3 code 4, 12 links
    box[2]["links"] = box[2]["links"][:10]          # two links down on GPU 2
    _, pairs = T.topology(FakeNvml(box), {i: i for i in range(4)}, cc_major=8)
    assert pairs[(0, 1)].link_type == "NVLink3 x12 (NVSwitch)" and pairs[(0, 1)].per_direction_Bps == 300e9
    assert pairs[(1, 2)].links == 10 and pairs[(1, 2)].per_direction_Bps == 250e9


def test_pcie_pairs_are_never_concurrent():
    gpus = {0: {"pci": _pci(0), "pcie": (4, 16)}, 1: {"pci": _pci(1), "pcie": (5, 8)}}
    _, pairs = T.topology(FakeNvml(gpus), {0: 0, 1: 1}, cc_major=9)
    p = pairs[(0, 1)]
    assert p.kind == "pcie" and p.link_type == "PCIe Gen4 x8"
    from hwprobe.specs.theory import pcie_bandwidth

    assert p.per_direction_Bps == pcie_bandwidth(4, 8)
    assert not T.concurrent_ok(pairs)


def test_mixed_box_nvlink_pairs_and_pcie_pairs():
    gpus = {0: {"pci": _pci(0), "links": [(6, _pci(1), T.DEVICE_GPU)] * 4},
            1: {"pci": _pci(1), "links": [(6, _pci(0), T.DEVICE_GPU)] * 4},
            2: {"pci": _pci(2)}}
    _, pairs = T.topology(FakeNvml(gpus), {i: i for i in range(3)}, cc_major=9)
    assert pairs[(0, 1)].link_type == "NVLink4 x4" and pairs[(0, 1)].per_direction_Bps == 100e9
    assert pairs[(0, 2)].kind == pairs[(1, 2)].kind == "pcie"
    assert not T.concurrent_ok(pairs)


@pytest.mark.parametrize("code,cc,gen", [(6, 9, 4), (4, 9, 4), (4, 8, 3), (7, 10, 5), (2, 7, 2), (3, 7, 2),
                                         (5, 9, 4), (6, None, 4), (99, None, None)])
def test_nvlink_generation_from_old_and_new_codes(code, cc, gen):
    assert T.nvlink_generation(code, cc)[0] == gen


def test_missing_nvml_gives_unknown_with_reason():
    g = T.read_gpu(FakeNvml({}), None, 0)
    assert g.error and not g.nvlinks
    p = T.pair_link(g, T.read_gpu(FakeNvml({}), None, 1))
    assert p.kind == "unknown" and p.per_direction_Bps is None and "no NVML handle" in " ".join(p.notes)


def test_gpu_link_bandwidth_is_the_collective_ceiling():
    gpus, _ = T.topology(FakeNvml(_switch_box(8)), {i: i for i in range(8)}, cc_major=9)
    bw, basis = T.gpu_link_bandwidth(gpus[3])
    assert bw == 450e9 and "18 x NVLink4" in basis
    g = T.GpuLinks(0, _pci(0), 9, [], 5, 16)
    assert T.gpu_link_bandwidth(g)[0] == pytest.approx(63.0e9, rel=0.01)
