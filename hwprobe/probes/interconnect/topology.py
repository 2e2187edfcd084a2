"""What links each GPU pair, from NVML: NVLink count and version (direct or through NVSwitch), or PCIe
generation and width; and the theoretical bandwidth per direction that follows.

NVLink bandwidth per link per direction: NVLink 1 20 GB/s (P100); NVLink 2 and 3 25 GB/s (V100: 6 links,
A100: 12); NVLink 4 25 GB/s (H100/H200: 18 links, 450 GB/s each way); NVLink 5 50 GB/s (B200: 18 links).
A pair's theory is the links between them (direct), or the smaller of the two GPUs' switch-facing links
(NVSwitch: every GPU's links go to the switches, which route at full rate). PCIe: hwprobe.specs.theory.
NVML is passed in (``nvml``: the pynvml module or a fake), so the CPU tests build any topology.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

LINK_GBPS = {1: 20e9, 2: 25e9, 3: 25e9, 4: 25e9, 5: 50e9}      # B/s per link per direction, by NVLink generation
# nvmlNvlinkVersion_t: NVML_NVLINK_VERSION_1_0 = 1, 2_0 = 2, 2_2 = 3, 3_0 = 4, 3_1 = 5, 4_0 = 6, 5_0 = 7, 6_0 = 8
NVML_VERSION = {1: (1, "1.0"), 2: (2, "2.0"), 3: (2, "2.2"), 4: (3, "3.0"), 5: (3, "3.1"), 6: (4, "4.0"),
                7: (5, "5.0"), 8: (6, "6.0")}
ARCH_GENERATION = {6: 1, 7: 2, 8: 3, 9: 4, 10: 5}              # compute capability major -> NVLink generation
DEVICE_GPU, DEVICE_SWITCH = 0, 2                               # NVML_NVLINK_DEVICE_TYPE_*


def nvlink_generation(code: int | None, cc_major: int | None) -> tuple[int | None, str]:
    """(generation, how it was read) from NVML's version code. Drivers have reported either the enum above or
    the plain generation; where the architecture's generation settles which, it is used."""
    arch = ARCH_GENERATION.get(cc_major) if cc_major else None
    enum = NVML_VERSION.get(code)[0] if code in NVML_VERSION else None
    if enum is not None and (arch is None or enum == arch):
        return enum, f"NVML version code {code} (NVLink {NVML_VERSION[code][1]})"
    if code == arch:
        return arch, f"NVML version code {code} read as the plain generation (sm_{cc_major}x has NVLink {arch})"
    if arch is not None:
        return arch, f"NVML version code {code} does not match sm_{cc_major}x; NVLink {arch} from the architecture"
    return enum, f"NVML version code {code}"


@dataclass
class LinkEnd:
    link: int
    version_code: int | None
    remote_pci: tuple[int, int, int] | None       # (domain, bus, device) of the far end
    remote_type: int | None                       # DEVICE_GPU, DEVICE_SWITCH, ...


@dataclass
class GpuLinks:
    """One GPU's NVLinks and PCIe link as NVML reports them."""

    index: int
    pci: tuple[int, int, int] | None
    cc_major: int | None = None
    nvlinks: list[LinkEnd] = field(default_factory=list)   # the active ones
    pcie_gen: int | None = None                             # max generation/width the link trains to
    pcie_width: int | None = None
    error: str | None = None                                # why NVML could not be read

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pci_tuple(info) -> tuple[int, int, int] | None:
    try:
        return int(info.domain), int(info.bus), int(info.device)
    except Exception:
        return None


def read_gpu(nvml, handle, index: int, cc_major: int | None = None) -> GpuLinks:
    """NVML's view of one GPU: every active NVLink (version, far end) and the PCIe link's max gen/width."""
    g = GpuLinks(index=index, pci=None, cc_major=cc_major)
    if handle is None:
        g.error = "no NVML handle for this GPU"
        return g
    try:
        g.pci = _pci_tuple(nvml.nvmlDeviceGetPciInfo(handle))
    except Exception as e:
        g.error = f"nvmlDeviceGetPciInfo: {e}"
    for attr, fn in (("pcie_gen", "nvmlDeviceGetMaxPcieLinkGeneration"),
                     ("pcie_width", "nvmlDeviceGetMaxPcieLinkWidth")):
        try:
            setattr(g, attr, int(getattr(nvml, fn)(handle)))
        except Exception:
            pass
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            if not nvml.nvmlDeviceGetNvLinkState(handle, link):
                continue
        except Exception:
            continue   # NVML_ERROR_NOT_SUPPORTED / INVALID_ARGUMENT: no such link
        g.nvlinks.append(_link_end(nvml, handle, link))
    return g


def _link_end(nvml, handle, link: int) -> LinkEnd:
    end = LinkEnd(link, None, None, None)
    for attr, fn, conv in (("version_code", "nvmlDeviceGetNvLinkVersion", int),
                           ("remote_pci", "nvmlDeviceGetNvLinkRemotePciInfo", _pci_tuple),
                           ("remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType", int)):
        try:
            setattr(end, attr, conv(getattr(nvml, fn)(handle, link)))
        except Exception:
            pass
    return end


@dataclass
class PairLink:
    """What joins GPUs ``a`` and ``b`` and the bandwidth per direction theory allows."""

    a: int
    b: int
    kind: str                    # "nvlink" (direct), "nvswitch", "pcie", "unknown"
    link_type: str               # "NVLink4 x18", "NVLink4 x18 (NVSwitch)", "PCIe Gen5 x16"
    links: int | None = None
    generation: int | None = None
    per_direction_Bps: float | None = None
    basis: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pair_link(ga: GpuLinks, gb: GpuLinks) -> PairLink:
    """The link between two GPUs: direct NVLinks (far end = the other GPU), else both GPUs' switch-facing NVLinks
    (NVSwitch), else PCIe at the lower of the two GPUs' max generation and width."""
    direct = [e for e in ga.nvlinks if gb.pci is not None and e.remote_pci == gb.pci]
    if direct:
        return _nvlink(ga, gb, "nvlink", len(direct), direct, f"{len(direct)} NVLinks between GPU {ga.index} and "
                                                                f"GPU {gb.index}")
    sw_a = [e for e in ga.nvlinks if e.remote_type == DEVICE_SWITCH]
    sw_b = [e for e in gb.nvlinks if e.remote_type == DEVICE_SWITCH]
    if sw_a and sw_b:
        n = min(len(sw_a), len(sw_b))
        return _nvlink(ga, gb, "nvswitch", n, sw_a, f"NVSwitch: GPU {ga.index} has {len(sw_a)} switch links, "
                                                    f"GPU {gb.index} {len(sw_b)}; the pair gets the smaller")
    return _pcie(ga, gb)


def _nvlink(ga: GpuLinks, gb: GpuLinks, kind: str, n: int, ends: list[LinkEnd], how: str) -> PairLink:
    codes = sorted({e.version_code for e in ends if e.version_code is not None})
    gen, read_as = nvlink_generation(codes[0] if codes else None, ga.cc_major)
    per_link = LINK_GBPS.get(gen) if gen else None
    name = f"NVLink{gen or '?'} x{n}" + (" (NVSwitch)" if kind == "nvswitch" else "")
    p = PairLink(ga.index, gb.index, kind, name, n, gen, n * per_link if per_link else None)
    if per_link:
        p.basis = f"{how}: {n} x {per_link / 1e9:g} GB/s per link per direction (NVLink {gen}; {read_as})"
    else:
        p.basis = f"{how}; no per-link rate known for {read_as}"
        p.notes.append("theory unknown: NVLink generation not in hwprobe's table")
    if len(codes) > 1:
        p.notes.append(f"links report different NVLink versions: {codes}")
    return p


def _pcie(ga: GpuLinks, gb: GpuLinks) -> PairLink:
    from hwprobe.specs.theory import pcie_bandwidth

    gens = [g for g in (ga.pcie_gen, gb.pcie_gen) if g]
    widths = [w for w in (ga.pcie_width, gb.pcie_width) if w]
    if len(gens) < 2 or len(widths) < 2:
        return PairLink(ga.index, gb.index, "unknown", "unknown", basis="NVML reported neither NVLink nor the PCIe "
                        "link of both GPUs", notes=[e for e in (ga.error, gb.error) if e])
    gen, width = min(gens), min(widths)
    bw = pcie_bandwidth(gen, width)
    p = PairLink(ga.index, gb.index, "pcie", f"PCIe Gen{gen} x{width}", None, None, bw)
    p.basis = (f"PCIe Gen{gen} x{width} (the lower of the two GPUs' links): {bw / 1e9:.1f} GB/s per direction after "
               "line coding" if bw else f"PCIe Gen{gen} x{width}: no rate known for this generation")
    p.notes.append("PCIe peers share switches and the root complex: pairs are measured one at a time")
    return p


def topology(nvml, handles: dict[int, Any], cc_major: int | None = None) -> tuple[dict[int, GpuLinks],
                                                                                 dict[tuple[int, int], PairLink]]:
    """Every GPU's links and every unordered pair's PairLink (keys (low, high))."""
    gpus = {i: read_gpu(nvml, h, i, cc_major) for i, h in handles.items()}
    idx = sorted(gpus)
    pairs = {(a, b): pair_link(gpus[a], gpus[b]) for k, a in enumerate(idx) for b in idx[k + 1:]}
    return gpus, pairs


def concurrent_ok(pairs: dict[tuple[int, int], PairLink]) -> bool:
    """Disjoint pairs may be timed together only when every pair has NVLinks of its own (direct or NVSwitch)."""
    return bool(pairs) and all(p.kind in ("nvlink", "nvswitch") for p in pairs.values())


def gpu_link_bandwidth(g: GpuLinks) -> tuple[float | None, str]:
    """One GPU's NVLink bandwidth per direction (all its active links), or its PCIe link's: the ceiling of any
    collective's busbw on this GPU."""
    if g.nvlinks:
        codes = sorted({e.version_code for e in g.nvlinks if e.version_code is not None})
        gen, _ = nvlink_generation(codes[0] if codes else None, g.cc_major)
        per = LINK_GBPS.get(gen) if gen else None
        if per:
            return len(g.nvlinks) * per, f"{len(g.nvlinks)} x NVLink{gen} x {per / 1e9:g} GB/s per direction"
        return None, "NVLink generation unknown"
    from hwprobe.specs.theory import pcie_bandwidth

    if g.pcie_gen and g.pcie_width:
        bw = pcie_bandwidth(g.pcie_gen, g.pcie_width)
        return bw, f"PCIe Gen{g.pcie_gen} x{g.pcie_width}"
    return None, "no link reported by NVML"
