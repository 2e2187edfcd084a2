"""Rounds: every ceiling repeated, apart; its runs, spread, stability and per-clock figure in the profile."""

from hwprobe import api
from hwprobe.profile import Ceiling
from hwprobe.profile_build import from_measurements
from tests.helpers import meas


def test_repeated_metric_becomes_runs_and_spread():
    ms = [meas("fp32.cuda_core.ffma", v, precision="fp32", exec_unit="cuda_core", path="instruction",
               theory=70e12) for v in (66.0e12, 66.3e12, 66.1e12)]
    c = from_measurements({"kind": "gpu"}, ms).compute["fp32"]["cuda_core"]["instruction"]
    assert c.value == 66.3e12 and c.runs == [66.0e12, 66.3e12, 66.1e12]
    assert abs(c.spread - (66.3 / 66.0 - 1)) < 1e-12 and c.stable is True
    assert c.per_clock == 66.3e12 / 1755e6                          # op per clock of the clock behind it
    d = c.to_dict()
    assert d["stable"] is True and d["spread"] > 0 and d["per_clock"] > 0


def test_unstable_and_unknown():
    c = Ceiling(value=842e12, unit="FLOP/s", metric="m", probe="p", runs=[842e12, 907e12, 866e12])
    assert c.stable is False and round(c.spread, 3) == 0.077
    assert Ceiling(value=1.0, unit="B/s", metric="m", probe="p", runs=[1.0]).stable is None


def test_rounds_interleave_probes_and_every_ceiling_gets_its_runs(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('target = "cpu"\nrounds = 3\n[[probes]]\nprobe = "test.two_then_fail"\nfail = false\n'
                     '[[probes]]\nprobe = "test.skip"\n')
    import tests.test_runner  # noqa: F401  (registers the test probes)

    res = api.run("cpu", str(suite), tmp_path / "out")
    order = [(m.probe, m.params.get("round")) for m in res.measurements]
    assert order == [("test.two_then_fail", 1)] * 2 + [("test.skip", 1)] + [("test.two_then_fail", 2)] * 2 + \
        [("test.skip", 2)] + [("test.two_then_fail", 3)] * 2 + [("test.skip", 3)]
    c = res.profile.compute["fp64"]["cpu"]["instruction"]
    assert len(c.runs) == 3 and c.stable in (True, False)
    assert res.profile.environment["rounds"] == 3
