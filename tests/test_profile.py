import json
from pathlib import Path

import pytest

from hwprobe import profile as prof_mod
from hwprobe.errors import InputError
from hwprobe.profile import Profile
from hwprobe.profile_build import from_measurements, load_profile
from tests.helpers import sample_measurements

DEVICE = {"kind": "gpu", "name": "NVIDIA H200", "sms": 132}


@pytest.fixture
def prof() -> Profile:
    return from_measurements(DEVICE, sample_measurements())


def test_best_valid_measurement_wins_each_slot(prof):
    c = prof.compute["fp32"]["cuda_core"]["instruction"]
    assert c.value == 58e12 and c.metric == "fp32.cuda_core.ffma"
    assert c.ratio_at_clock == pytest.approx(58 / 59.3)
    # the roofline slope is the named read/write mix (copy here), never just the fastest variant
    assert prof.memory["dram"].bandwidth.value == 4.2e12
    assert "roofline slope: dram.copy" in prof.memory["dram"].bandwidth.notes[-1]
    assert prof.memory["dram"].variants == {"dram.copy": 4.2e12, "dram.read": 4.5e12}


def test_invalid_measurement_is_never_a_ceiling(prof):
    assert "fp64" not in prof.compute
    assert prof.invalid[0]["metric"] == "fp64.cuda_core.dfma"


def test_fp8_variants_fold_into_one_precision(prof):
    assert prof.compute["fp8"]["tensor_core"]["instruction"].value == 1.4e15


def test_levels_collect_capacity_latency_skips_findings(prof):
    assert prof.memory["l2"].capacity_bytes == 60 * 2**20
    assert prof.memory["dram"].latency_cycles == 1200
    assert prof.skipped == [{"probe": "gpu.mma", "metric": "fp8.skipped", "reason": "fp8 mma.sync needs sm_89+"}]
    assert "7x slower" in prof.findings[0]["text"]


def test_attainable_and_ridge(prof):
    assert prof.attainable(1.0, "fp16") == pytest.approx(4.2e12)          # memory-bound
    assert prof.attainable(1e4, "fp16") == pytest.approx(800e12)          # compute-bound
    assert prof.ridge_point("fp16") == pytest.approx(800e12 / 4.2e12)
    with pytest.raises(KeyError):
        prof.attainable(1.0, "int4")


def test_round_trip_validates_against_schema(prof, tmp_path):
    p = tmp_path / "profile.json"
    prof.save(p)
    back = load_profile(p)
    assert back.to_dict()["compute"] == prof.to_dict()["compute"]
    assert back.memory["dram"].bandwidth.value == 4.2e12
    assert load_profile(tmp_path).device["name"] == "NVIDIA H200"  # a results dir works too


def test_missing_truncated_future_and_malformed(prof, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_profile(tmp_path / "nope.json")
    p = tmp_path / "profile.json"
    prof.save(p)
    text = p.read_text()
    p.write_text(text[: len(text) // 2])
    with pytest.raises(InputError, match="not valid JSON"):
        load_profile(p)
    d = prof.to_dict()
    d["schema_version"] = 99
    p.write_text(json.dumps(d))
    with pytest.raises(InputError, match="newer than this hwprobe"):
        load_profile(p)
    d = prof.to_dict()
    d["compute"]["fp32"]["cuda_core"]["instruction"]["value"] = "fast"
    p.write_text(json.dumps(d))
    with pytest.raises(InputError, match="schema at compute/fp32/cuda_core/instruction/value"):
        load_profile(p)
    p.write_text("[1, 2]")
    with pytest.raises(InputError, match="not a JSON object"):
        load_profile(p)


def test_schema_refuses_a_ceiling_above_theory(prof):
    d = prof.to_dict()
    d["compute"]["fp32"]["cuda_core"]["instruction"]["ratio_at_clock"] = 1.2
    with pytest.raises(InputError, match="ratio_at_clock"):
        prof_mod.validate_dict(d)


def test_older_versions_migrate(prof, tmp_path, monkeypatch):
    # Pretend the current schema is 4 and a 3 -> 4 migration renames a field; a v3 file must load.
    monkeypatch.setattr(prof_mod, "SCHEMA_VERSION", 4)
    monkeypatch.setattr(prof_mod, "MIGRATIONS", {3: lambda d: {**d, "migrated": True}})
    d = prof_mod.migrate(prof.to_dict())
    assert d["schema_version"] == 4 and d["migrated"] is True
    monkeypatch.setattr(prof_mod, "MIGRATIONS", {})
    with pytest.raises(InputError, match="cannot migrate"):
        prof_mod.migrate(prof.to_dict())


def test_a_v1_profile_loads_as_v2(prof, tmp_path):
    d = prof.to_dict()
    v1 = {k: v for k, v in d.items() if k not in ("links", "devices")}
    v1["schema_version"] = 1
    for lvl in v1["memory"].values():
        del lvl["capacities"], lvl["maps"]
    (tmp_path / "profile.json").write_text(json.dumps(v1))
    back = load_profile(tmp_path)
    assert back.schema_version == prof_mod.SCHEMA_VERSION and back.links == {} and back.devices == [d["device"]]
    assert back.memory["dram"].maps == {} and back.compute.keys() == prof.compute.keys()


def test_partial_flag_survives(tmp_path):
    p = from_measurements(DEVICE, sample_measurements()[:2], partial=True)
    p.save(tmp_path / "profile.json")
    assert load_profile(tmp_path / "profile.json").partial is True


def test_a_gzipped_records_file_reads_as_the_plain_one(tmp_path):
    """Committed reference runs keep measurements.jsonl gzipped: the report, plots and a profile rebuilt from the
    records read it the same; a corrupt archive is refused in one line."""
    import gzip
    import shutil

    from hwprobe.errors import InputError
    from hwprobe.report.source import load_run
    from hwprobe.results import MEASUREMENTS, load_records, records_file
    from tests.refs import H200_DEFAULT as src
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    shutil.copytree(src, plain)
    shutil.copytree(src, packed)
    f = packed / MEASUREMENTS
    (packed / (MEASUREMENTS + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
    f.unlink()
    assert records_file(packed).name == "measurements.jsonl.gz" and records_file(tmp_path) is None
    a, b = load_records(plain), load_records(packed)
    assert [m.to_dict() for m in a.measurements] == [m.to_dict() for m in b.measurements] and a.measurements
    assert len(load_run(packed).measurements) == len(a.measurements)
    (packed / "profile.json").unlink()                    # a killed run: rebuilt from the gzipped records
    assert load_profile(packed).partial
    (packed / (MEASUREMENTS + ".gz")).write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(InputError, match="cannot read"):
        load_records(packed)


def test_a_gzipped_profile_reads_as_the_plain_one(tmp_path):
    """The evidence folders keep their profiles gzipped; report, compare and validate read them as they are."""
    import gzip

    from hwprobe.fleet.records import load_run

    kept = Path(__file__).resolve().parents[1] / "profiles/h200-sxm/2026-11-29-sparse-s37/profile-new-full.json.gz"
    plain = tmp_path / "profile.json"
    plain.write_bytes(gzip.decompress(kept.read_bytes()))
    got, want = load_profile(kept), load_profile(plain)
    assert got.to_dict() == want.to_dict() and got.bandwidth("dram") > 4e12
    # validate's and compare's reader too
    assert load_run(kept).ceilings == load_run(plain).ceilings != {}
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes(kept.read_bytes()[:200])
    with pytest.raises(InputError, match="damaged gzip"):
        load_profile(bad)
