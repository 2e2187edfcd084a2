"""Suites that include other suites: resolved at load, in order, with cycles and mismatches refused in one line."""

import pytest

from hwprobe import suites
from hwprobe.errors import InputError

# suites/full.toml as it was written out before it included the others (every probe bare, in this order)
FULL_BEFORE_INCLUDE = ["gpu.fma", "gpu.mma_sync", "gpu.wgmma", "gpu.gemm", "gpu.gemm_fp8", "gpu.gemm_align",
                       "gpu.sparse", "gpu.gemm_power", "gpu.dram", "gpu.cache", "gpu.latency", "gpu.l2map",
                       "gpu.hopper_mem", "gpu.host", "gpu.roofline", "gpu.launch", "gpu.mem_kernels",
                       "gpu.gemm_shapes", "gpu.torch_kernels"]


def _write(tmp_path, name, text):
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    return str(f)


def _including(tmp_path, a: str, b: str = "", target: str = "cpu") -> str:
    """Suite a.toml (``a`` after its target) and the path of b.toml, which includes it, then ``b``."""
    _write(tmp_path, "a", f'target = "{target}"\n' + a)
    return _write(tmp_path, "b", f'target = "{target}"\ninclude = ["a.toml"]\n' + b)


def _one_line(e):
    assert "\n" not in str(e.value)
    return str(e.value)


def test_full_is_the_others_and_runs_what_it_ran_before():
    full = suites.load("full")
    assert [e.probe for e in full.entries] == FULL_BEFORE_INCLUDE
    assert all(e.timeout_s is None for e in full.entries)
    set_ = {e.probe: e.params for e in full.entries if e.params}
    # one override: gpu.gemm_power sustains INT8 on its INT8-output path alone, every other path as `power` does
    from hwprobe.probes.compute.gemm_power import ALL_PATHS
    assert set_ == {"gpu.gemm_power": {"paths": tuple(p for p in ALL_PATHS if p != "int8.tn")}}
    assert [e.params for e in suites.load("power").entries] == [{}]
    assert (full.name, full.target, full.rounds, full.budget_s) == ("full", "gpu", 1, 300.0)
    parts = [e.probe for name in ("compute", "power", "memory") for e in suites.load(name).entries]
    assert [e.probe for e in full.entries][:len(parts)] == parts
    suites.validate(full)


def test_included_entries_come_first_with_their_parameters(tmp_path):
    s = suites.load(_including(tmp_path, 'rounds = 5\nbudget_s = 9\n[[probes]]\nprobe = "cpu.fma"\n'
                                         'precisions = ["fp64"]\ntimeout_s = 7\n',
                               '[[probes]]\nprobe = "cpu.stream"\nops = ["copy"]\n'))
    assert [(e.probe, e.params, e.timeout_s) for e in s.entries] == [
        ("cpu.fma", {"precisions": ("fp64",)}, 7.0), ("cpu.stream", {"ops": ("copy",)}, None)]
    assert (s.name, s.rounds, s.budget_s) == ("b", 1, None)      # the including suite's own, not a's
    suites.validate(s)


def test_params_tables_set_an_included_probes_parameters_in_place(tmp_path):
    s = suites.load(_including(tmp_path, '[[probes]]\nprobe = "cpu.fma"\nprecisions = ["fp64"]\n'
                                         '[[probes]]\nprobe = "cpu.stream"\n',
                               '[params."cpu.fma"]\nthreads = 2\nprecisions = ["fp32"]\n'))
    assert [(e.probe, e.params) for e in s.entries] == [
        ("cpu.fma", {"precisions": ("fp32",), "threads": 2}), ("cpu.stream", {})]
    assert suites.load(str(tmp_path / "a.toml")).entries[0].params == {"precisions": ("fp64",)}   # a is unchanged


def test_a_params_table_is_checked_like_the_probes_own_parameters(tmp_path):
    bad = _including(tmp_path, '[[probes]]\nprobe = "gpu.gemm_power"\n',
                     '[params."gpu.gemm_power"]\npaths = ["int8.nn"]\n', target="gpu")
    with pytest.raises(InputError) as e:
        suites.validate(suites.load(bad))
    assert "'int8.nn' is not one of" in _one_line(e)


def test_a_suite_of_includes_only(tmp_path):
    c = _including(tmp_path, '[[probes]]\nprobe = "cpu.fma"\n')
    assert [e.probe for e in suites.load(c).entries] == ["cpu.fma"]


def test_an_include_cycle_is_named(tmp_path):
    a = _write(tmp_path, "a", 'target = "cpu"\ninclude = ["b.toml"]\n[[probes]]\nprobe = "cpu.fma"\n')
    _write(tmp_path, "b", 'target = "cpu"\ninclude = ["a.toml"]\n[[probes]]\nprobe = "cpu.stream"\n')
    with pytest.raises(InputError) as e:
        suites.load(a)
    assert "include cycle: a -> b -> a" in _one_line(e)
    own = _write(tmp_path, "self", 'target = "cpu"\ninclude = ["self.toml"]\n')
    with pytest.raises(InputError, match="include cycle: self -> self"):
        suites.load(own)


@pytest.mark.parametrize("body, message", [
    ('include = ["g.toml"]\n', "included suite 'g.toml' targets the gpu, this one the cpu"),
    ('include = ["a.toml"]\n[[probes]]\nprobe = "cpu.fma"\n', "probe 'cpu.fma' comes twice"),
    ('include = ["no-such-suite"]\n', "unknown suite 'no-such-suite'; suites: "),
    ('include = "a"\n', "'include' must be a list of suite names"),
    ('include = []\n', "needs a non-empty [[probes]] list"),
    ('include = ["a.toml"]\n[params."cpu.stream"]\nops = ["copy"]\n',
     '[params."cpu.stream"] names a probe the suite does not run; it runs cpu.fma'),
    ('include = ["a.toml"]\nparams = 3\n', "'params' must be tables of parameters per probe"),
    ('include = ["a.toml"]\n[params]\nthreads = 2\n', "'params' must be tables of parameters per probe"),
])
def test_bad_includes_and_params_are_one_line(tmp_path, body, message):
    _write(tmp_path, "a", 'target = "cpu"\n[[probes]]\nprobe = "cpu.fma"\n')
    _write(tmp_path, "g", 'target = "gpu"\n[[probes]]\nprobe = "gpu.fma"\n')
    bad = _write(tmp_path, "bad", 'target = "cpu"\n' + body)
    with pytest.raises(InputError) as e:
        suites.load(bad)
    assert message in _one_line(e) and "bad.toml" in str(e.value)


def test_a_suite_named_for_both_kinds_resolves_to_the_devices_variant():
    """`hwprobe run --suite acceptance --device cpu` runs acceptance-cpu (srun on CPU nodes); a GPU run the GPU one."""
    from hwprobe import api, suites

    plan = api.plan("cpu", "acceptance")
    assert plan.suite.name == "acceptance-cpu" and plan.suite.entries[0].probe == "cpu.health"
    gpu = suites.load("acceptance")
    suites.validate(gpu)
    assert gpu.target == "gpu" and [e.probe for e in gpu.entries][0] == "gpu.health"
    assert gpu.budget_s <= 60
    with pytest.raises(InputError, match="measures the gpu"):
        api.plan("cpu", "default")                     # no default-cpu: the mismatch is still refused
