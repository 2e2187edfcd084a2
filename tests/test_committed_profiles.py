"""Every measured profile committed under profiles/ loads, validates, and keeps its ceilings under theory."""

from pathlib import Path

import pytest

from hwprobe.profile import load_profile

PROFILES = sorted(Path(__file__).resolve().parent.parent.joinpath("profiles").glob("*/*/profile.json"))


@pytest.mark.parametrize("path", PROFILES, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in PROFILES])
def test_committed_profile_loads_and_is_sane(path):
    prof = load_profile(path)
    assert not prof.partial and prof.device["kind"] == "gpu"
    assert prof.memory["dram"].bandwidth.value > 1e12
    for units in prof.compute.values():
        for paths in units.values():
            for c in paths.values():
                assert c.theory_at_clock and c.value <= 1.03 * c.theory_at_clock, c.metric


def test_there_are_committed_profiles():
    assert {p.parent.parent.name for p in PROFILES} >= {"h100-sxm", "h200-sxm"}
