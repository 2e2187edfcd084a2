"""The params keys that cross modules and the flags as (code, text): JSON unchanged, old profiles read by code."""

import copy
import json
import pickle

from hwprobe import keys as K
from hwprobe.flags import Code, Flag, code_of, first, has
from hwprobe.measurement import Measurement
from hwprobe.profile_build import from_measurements, load_profile
from tests.helpers import sample_measurements


def test_every_key_says_what_it_holds():
    assert len(K.KEYS) == len(set(K.KEYS)) >= 18
    for name, key in K.KEYS.items():
        assert name == key and name.islower() and " " not in name
        assert isinstance(key.type, type) and key.meaning and key.meaning[0].islower()


def test_a_key_is_its_string_in_params_json_copies_and_pickles():
    m = Measurement(probe="p", metric="x", kind="compute", value=1.0, unit="FLOP/s",
                    params={K.KERNEL_SM_MHZ: 1980.0, K.PCT_AT: {"nvml": 0.98}})
    text = json.dumps(m.to_dict()["params"])
    assert text == '{"kernel_sm_mhz": 1980.0, "pct_at": {"nvml": 0.98}}'
    assert json.loads(text)[K.KERNEL_SM_MHZ] == 1980.0                  # a plain dict read back, by the constant
    assert pickle.loads(pickle.dumps(K.CYCLES)) == "cycles" and copy.deepcopy(K.MAP) is K.MAP


def test_flags_are_code_and_text_stored_as_before():
    f = Flag(Code.CLOCK_DISAGREEMENT, "kernel 1980 MHz vs NVML 1755 MHz (-11.4%)")
    assert f == "clock_disagreement: kernel 1980 MHz vs NVML 1755 MHz (-11.4%)"
    assert (f.code, f.text) == ("clock_disagreement", "kernel 1980 MHz vs NVML 1755 MHz (-11.4%)")
    assert Flag(Code.CLOCK_LAG) == "clock_lag" and Flag(Code.CLOCK_LAG).text == ""
    assert json.dumps([f, Flag("contended", "a: b")]) == json.dumps([str(f), "contended: a: b"])
    old = ["clock_lag", "contended: 41% of theory", "above_theory: 1 > 1.03 x 0.9 (x)"]       # as profiles stored them
    assert [code_of(x) for x in old] == ["clock_lag", "contended", "above_theory"]
    assert has(old, Code.CONTENDED) and has(old, "clock_lag") and not has(old, Code.CLOCK_DISAGREEMENT)
    assert not has(["clock_disagreement_x: made up"], Code.CLOCK_DISAGREEMENT)    # a code, not a prefix
    assert first(old, Code.ABOVE_THEORY) == old[2] and first(old, Code.SASS_MISMATCH) is None
    assert pickle.loads(pickle.dumps(f)).code == "clock_disagreement" and copy.deepcopy(f).text == f.text


def test_a_profile_round_trips_its_flags_and_files_by_keys(tmp_path):
    ms = sample_measurements()
    ms[0].flags.append(Flag(Code.CLOCK_LAG))
    ms[0].params[K.THEORY_CLOCK_SOURCE] = "kernel"
    ms[0].params[K.KERNEL_SM_MHZ] = 1830.0
    prof = from_measurements({"kind": "gpu", "name": "NVIDIA H200"}, ms)
    prof.save(tmp_path / "profile.json")
    back = load_profile(tmp_path)
    ceilings = [c for units in back.compute.values() for paths in units.values() for c in paths.values()]
    lagged = [c for c in ceilings if has(c.flags, Code.CLOCK_LAG)]
    assert lagged and all(isinstance(f, str) for c in ceilings for f in c.flags)
    assert lagged[0].clock_source == "max"               # Ceiling.of reads the flag by code: theory at max clock


def test_one_device_kind_rule():
    from hwprobe.device.info import device_kind

    assert device_kind({"kind": "cpu", "sms": 3}) == "cpu" and device_kind({"kind": "gpu"}) == "gpu"
    assert device_kind({"name": "NVIDIA H200", "sms": 132}) == "gpu" and device_kind({"arch": "sm_90"}) == "gpu"
    # a CPU whose ISA flags spell "sm" somewhere (the rebuild's old guess, "sm" in str(record), called it a GPU)
    assert device_kind({"model": "Intel(R) Xeon(R)", "flags": ["smx", "avx2"]}) == "cpu"
