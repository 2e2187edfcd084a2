"""The gap chain: datasheet -> max clock -> clock under load -> path, with factors that multiply to the
measured/datasheet ratio, plus the other path and the operand-data (power) step."""

from __future__ import annotations

import math

from hwprobe.gap import gaps
from hwprobe.measurement import Measurement
from hwprobe.profile import Profile
from hwprobe.profile_build import from_measurements
from tests.helpers import meas


def _profile(extra: list[Measurement] = ()) -> Profile:
    ms = [meas("int8.tensor_core.wgmma", 1.8e15, unit="OP/s", precision="int8", exec_unit="tensor_core",
               path="instruction", theory=1.9e15),
          meas("int8.tensor_core.cublaslt", 1.3e15, unit="OP/s", precision="int8", exec_unit="tensor_core",
               path="library", theory=1.9e15), *extra]
    return from_measurements({"name": "test"}, ms)


def test_chain_multiplies_to_the_datasheet_ratio():
    (g,) = gaps(_profile())
    assert g.precision == "int8" and g.best.metric == "int8.tensor_core.wgmma"
    names = [s[0] for s in g.steps]
    assert names[:3] == ["datasheet clock", "clock under load", "wgmma path"]
    chain = math.prod(f for _, f, _ in g.steps[:3])
    assert abs(chain - g.total) < 1e-12
    other = dict((s[0], s[1]) for s in g.steps)["int8.tensor_core.cublaslt instead"]
    assert abs(other - 1.3 / 1.8) < 1e-12
    assert "sw_power_cap" in g.sentence() and "690 W" in g.sentence()


def test_power_data_finding_adds_the_operand_step():
    finding = Measurement(
        probe="gpu.gemm_power", metric="int8.tensor_core.cublaslt.power_data", kind="info", value=1.3, unit="x",
        notes=["int8 library GEMM sustained ..."],
        params={"points": {"uniform": {"rate": 1.29e15, "sm_mhz": 1530.0},
                           "zeros": {"rate": 1.68e15, "sm_mhz": 1980.0}}})
    (g,) = gaps(_profile([finding]))
    step = [s for s in g.steps if s[0] == "operand data (power)"]
    assert len(step) == 1 and abs(step[0][1] - 1.29 / 1.68) < 1e-12
    assert "1530 vs 1980 MHz" in step[0][2]
    # a finding of another precision, or without both references, adds nothing
    finding.metric = "fp16.tensor_core.cublas.power_data"
    assert not [s for s in gaps(_profile([finding]))[0].steps if s[0] == "operand data (power)"]
    finding.metric = "int8.tensor_core.cublaslt.power_data"
    del finding.params["points"]["zeros"]
    assert not [s for s in gaps(_profile([finding]))[0].steps if s[0] == "operand data (power)"]
