"""Suite parameters are checked against each probe's declaration before anything runs."""

import pytest

from hwprobe import api, suites
from hwprobe.errors import InputError


def _suite(tmp_path, body):
    f = tmp_path / "s.toml"
    f.write_text('target = "cpu"\n[[probes]]\n' + body)
    return str(f)


@pytest.mark.parametrize("body, message", [
    ('probe = "cpu.stream"\nllc_multiple = "four"\n', "'llc_multiple' must be a whole number, not 'four'"),
    ('probe = "cpu.stream"\nops = ["copy", "sclae"]\n', "item 'sclae' is not one of: copy, scale, add, triad"),
    ('probe = "cpu.stream"\nllc_multiple = -4\n', "'llc_multiple' must be >= 1, not -4"),
    ('probe = "cpu.fma"\nprecisions = "fp64"\n', "'precisions' must be a list"),
    ('probe = "cpu.fma"\nthreads = 1.5\n', "'threads' must be a whole number"),
    ('probe = "cpu.stream"\nbogus = 1\n', "has no parameter bogus"),
])
def test_bad_parameters_fail_at_plan_time_naming_file_probe_and_parameter(tmp_path, body, message):
    path = _suite(tmp_path, body)
    with pytest.raises(InputError) as e:
        api.plan("cpu", path)
    assert message in str(e.value) and path in str(e.value) and "probe 'cpu." in str(e.value)


def test_rounds_and_budget_are_checked(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('target = "cpu"\nrounds = 0\n[[probes]]\nprobe = "cpu.fma"\n')
    with pytest.raises(InputError, match="'rounds' must be a whole number"):
        suites.load(str(f))
    f.write_text('target = "cpu"\nrounds = 2\nbudget_s = 30\n[[probes]]\nprobe = "cpu.fma"\n')
    s = suites.load(str(f))
    assert (s.rounds, s.budget_s) == (2, 30.0)
    assert api.plan("cpu", str(f), rounds=3).rounds == 3
    with pytest.raises(InputError, match="rounds"):
        api.plan("cpu", str(f), rounds=0)


def test_shipped_suites_plan_cleanly():
    for path in suites.available().values():
        s = suites.load(str(path))
        suites.validate(s)
