"""Every measured profile committed under profiles/ loads, validates, and keeps its ceilings under theory."""

import re
from pathlib import Path

import pytest

from hwprobe.profile_build import load_profile

ROOT = Path(__file__).resolve().parent.parent.joinpath("profiles")
# a run folder per measured profile, and the runs of a lease folder (issue 23's L2 comparison with gpu-benches)
PROFILES = sorted([*ROOT.glob("*/*/profile.json"), *ROOT.glob("h*-sxm/*/lease*/*/profile.json")])


# NVIDIA's H100 whitepaper (SXM5, 132 SMs), dense TFLOP/s or TOP/s: CUDA-core figures at 1980 MHz, the tensor
# table at 1830 MHz (scaled here to the 1980 MHz max clock); the H200 has the same SMs and clocks. Typed from the
# whitepaper, not from arch.toml: an independent ceiling for every committed figure (issue 23).
WHITEPAPER_1980 = {
    ("fp64", "cuda_core"): 33.5, ("fp32", "cuda_core"): 66.9, ("fp16", "cuda_core"): 133.8,
    ("bf16", "cuda_core"): 133.8, ("int32", "cuda_core"): 33.5, ("fp64", "tensor_core"): 66.9,
    ("tf32", "tensor_core"): 494.7 * 1980 / 1830, ("fp16", "tensor_core"): 989.4 * 1980 / 1830,
    ("bf16", "tensor_core"): 989.4 * 1980 / 1830, ("fp8", "tensor_core"): 1978.9 * 1980 / 1830,
    ("int8", "tensor_core"): 1978.9 * 1980 / 1830,
}
DATASHEET_DRAM = {"H100": 3.35e12, "H200": 4.8e12}      # SXM datasheets, TB/s


@pytest.mark.parametrize("path", PROFILES, ids=[str(p.parent.relative_to(ROOT)) for p in PROFILES])
def test_committed_profile_is_below_the_whitepaper(path):
    prof = load_profile(path)
    assert not prof.partial and prof.device["kind"] == "gpu"
    part = "H200" if "H200" in prof.device["name"] else "H100"
    if "dram" in prof.memory or prof.environment.get("suite") in ("full", "memory", "predict", "default"):
        assert 0.5 * DATASHEET_DRAM[part] < prof.memory["dram"].bandwidth.value <= DATASHEET_DRAM[part]
    seen = 0
    for prec, units in prof.compute.items():
        for unit, paths in units.items():
            for name, c in paths.items():
                top = WHITEPAPER_1980.get((prec.removesuffix("_e4m3").removesuffix("_e5m2"), unit))
                if top is None:
                    continue
                top *= 2 if name.endswith("_sparse24") else 1
                assert c.value <= 1.01 * top * 1e12, (prec, unit, name, c.value)
                seen += 1
    if prof.environment.get("suite") == "full":
        assert seen >= 15


def test_there_are_committed_profiles():
    assert {p.parent.parent.name for p in PROFILES} >= {"h100-sxm", "h200-sxm"}


def _v2(path):
    import json

    return json.loads(path.read_text()).get("schema_version") == 2


V2 = [p for p in PROFILES if _v2(p)]


@pytest.mark.parametrize("path", PROFILES, ids=[str(p.parent.relative_to(ROOT)) for p in PROFILES])
def test_committed_memory_ceilings_sit_under_their_theory(path):
    prof = load_profile(path)
    for level, lvl in prof.memory.items():
        b = lvl.bandwidth
        if b is not None and b.theory_at_clock:
            assert b.value <= 1.03 * b.theory_at_clock, (level, b.metric)
        if level == "l2" and lvl.capacity_bytes and _v2(path):   # v1 runs reported 63.4 MiB of a 60 MiB L2
            assert lvl.capacity_bytes <= prof.device["l2_bytes"], "L2 capacity above the device-reported size"
            for name, cap in lvl.capacities.items():
                assert cap <= prof.device["l2_bytes"], name


@pytest.mark.parametrize("path", V2, ids=[str(p.parent.relative_to(ROOT)) for p in V2])
def test_tensor_instruction_ceilings_carry_their_clocks_and_flag_disagreement(path):
    """The wgmma/mma.sync ceilings name three clocks; where the kernel's and NVML's differ by more than 3% the
    ceiling says so (a wrong clock accounting would hide it, as the H200's ~9% offset once was)."""
    prof = load_profile(path)
    seen = 0
    for units in prof.compute.values():
        c = units.get("tensor_core", {}).get("instruction")
        if c is None or "clocks_mhz" not in c.params:
            continue
        seen += 1
        clk = c.params["clocks_mhz"]
        assert {"kernel", "nvml"} <= set(clk), c.metric
        apart = abs(clk["nvml"] / clk["kernel"] - 1) > 0.03
        flagged = any(f.startswith("clock_disagreement") for f in c.flags)
        assert apart == flagged, (c.metric, clk, c.flags)
        assert c.params["pct_at_clock"]["kernel"] <= 1.03
    if prof.environment.get("suite") == "full":
        assert seen >= 5


# ---------------------------------------------------------------- what tests and tools name under profiles/

REPO = ROOT.parent
# "profiles/a/b" in text, or "profiles" / "a" / "b" in Python; a component with <, * or ... is a placeholder or a
# glob: the path is checked up to it (a glob must match something)
_TEXT = re.compile(r"""profiles/((?:[A-Za-z0-9_.*<>+-]+/?)+)""")
_JOINED = re.compile(r""""profiles"((?:\s*/\s*"[^"]+")+)""")


def _named(text: str) -> list[list[str]]:
    paths = [m.group(1).rstrip("/.").split("/") for m in _TEXT.finditer(text)]
    paths += [re.findall(r'"([^"]+)"', m.group(1)) for m in _JOINED.finditer(text)]
    return paths


def missing_profile_paths(repo: Path) -> list[str]:
    """'file: path' for every profiles/ path a test, tools/ or hwprobe/ file names that does not exist in ``repo``,
    and 'profiles/...: SUPERSEDED' for every kept run that holds a SUPERSEDED file (superseded runs leave main)."""
    files = [*(repo / "tests").glob("*.py"), *(repo / "tests" / "gpu").glob("*.py")]
    for top in ("hwprobe", "tools"):
        files += [f for f in (repo / top).rglob("*") if f.suffix in (".py", ".sh", ".json", ".toml", ".md")]
    bad = []
    for f in sorted(files):
        if f.name == Path(__file__).name:           # this file's own examples name made-up runs
            continue
        for parts in _named(f.read_text(encoding="utf-8", errors="replace")):
            kept = []
            for p in parts:
                if "<" in p or p == "...":
                    break
                kept.append(p)
            if any("*" in p for p in kept):
                ok = any((repo / "profiles").glob("/".join(kept)))
            else:
                ok = (repo / "profiles").joinpath(*kept).exists()
            if not ok:
                bad.append(f"{f.relative_to(repo)}: profiles/{'/'.join(parts)}")
    bad += [f"{s.parent.relative_to(repo)}: SUPERSEDED" for s in sorted((repo / "profiles").rglob("SUPERSEDED"))]
    return bad


def test_every_profiles_path_named_by_tests_and_tools_exists_and_no_kept_run_is_superseded():
    from tests import refs

    assert missing_profile_paths(REPO) == []
    named = {k: v for k, v in vars(refs).items() if k.isupper() and isinstance(v, Path)}
    assert len(named) >= 20 and [k for k, v in named.items() if not v.is_dir()] == []      # tests/refs.py's runs


def test_the_path_check_finds_a_pruned_run_and_a_superseded_one(tmp_path):
    (tmp_path / "profiles" / "gpu" / "kept").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "hwprobe").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text('A = "profiles/gpu/kept/profile.json"\nB = "profiles/gpu/<run>"\n'
                                                   'C = ROOT / "profiles" / "gpu" / "gone"\n')
    (tmp_path / "tools" / "t.py").write_text("# see profiles/*/kept and profiles/*/pruned-run\n")
    (tmp_path / "hwprobe" / "x.json").write_text('{"where": "profiles/gpu/kept"}')
    (tmp_path / "profiles" / "gpu" / "kept" / "profile.json").write_text("{}")
    assert missing_profile_paths(tmp_path) == ["tests/test_a.py: profiles/gpu/gone",
                                               "tools/t.py: profiles/*/pruned-run"]
    (tmp_path / "profiles" / "gpu" / "kept" / "SUPERSEDED").write_text("Superseded by ...")
    assert missing_profile_paths(tmp_path)[-1] == "profiles/gpu/kept: SUPERSEDED"
