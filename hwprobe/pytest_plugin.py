"""pytest plugin (entry point ``pytest11``): pytest-benchmark results against the measured roofline.

- ``--hwprobe-profile PATH`` (a results directory or profile.json): the device and the profile's identity go
  into pytest-benchmark's ``machine_info["hwprobe"]``;
- the ``hwprobe_roofline`` fixture declares what a benchmark does::

      def test_gemm(benchmark, hwprobe_roofline):
          hwprobe_roofline(ops=2 * n**3, bytes=3 * n * n * 2, precision="fp16", unit="tensor_core")
          benchmark(run_gemm)

  and its ``extra_info`` gets the achieved op/s (from the median time), the intensity, the attainable rate on
  the measured roof and the % of that roof reached.

Loaded by every pytest run where hwprobe is installed: it imports nothing heavy until a test uses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest

_PROFILE = pytest.StashKey[Any]()
_RESULTS = pytest.StashKey[list]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("hwprobe", "hwprobe: benchmarks against the measured roofline")
    group.addoption("--hwprobe-profile", dest="hwprobe_profile", default=None, metavar="PATH",
                    help="hwprobe results directory or profile.json: the measured ceilings benchmarks are judged by")


def pytest_configure(config) -> None:
    config.stash[_RESULTS] = []
    path = config.getoption("hwprobe_profile", None)
    config.stash[_PROFILE] = None
    if path:
        from hwprobe.errors import InputError
        from hwprobe.profile_build import load_profile

        try:
            config.stash[_PROFILE] = (path, load_profile(path))
        except InputError as e:
            raise pytest.UsageError(f"--hwprobe-profile: {e}") from None


def identity(path: str, profile) -> dict[str, Any]:
    from hwprobe.roofline import is_measured

    d = profile.device
    return {"profile": str(path), "device": d.get("name") or d.get("model"), "arch": d.get("arch"),
            "uuid": d.get("uuid"), "sms": d.get("sms"), "profile_created_utc": profile.created_utc,
            "hwprobe_version": profile.hwprobe_version, "schema_version": profile.schema_version,
            "partial": profile.partial, "measured": is_measured(profile)}


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config, machine_info) -> None:
    loaded = config.stash.get(_PROFILE, None)
    if loaded:
        machine_info["hwprobe"] = identity(*loaded)


@dataclass
class Work:
    ops: float
    bytes: float
    precision: str
    unit: str | None = None
    path: str = "best"
    level: str = "dram"


def _positive(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"hwprobe_roofline: {name} must be a positive number, got {v!r}")
    return float(v)


def judge(work: Work, seconds: float, profile=None) -> dict[str, Any]:
    """The extra_info entries for one benchmark: achieved rate, intensity, attainable rate, % of the roof."""
    from hwprobe import roofline

    intensity = work.ops / work.bytes
    info: dict[str, Any] = {"hwprobe_ops": work.ops, "hwprobe_bytes": work.bytes,
                            "hwprobe_precision": roofline.norm_precision(work.precision),
                            "hwprobe_intensity": intensity, "hwprobe_time_s": seconds,
                            "hwprobe_time_basis": "median", "hwprobe_achieved_ops_per_s": work.ops / seconds}
    if profile is None:
        info["hwprobe_note"] = "no --hwprobe-profile: no roof to compare with"
        return info
    r = roofline.roof(profile, work.precision, work.unit, work.path, work.level)
    att = r.attainable(intensity)
    info.update({"hwprobe_attainable_ops_per_s": att, "hwprobe_pct_of_roof": 100 * (work.ops / seconds) / att,
                 "hwprobe_bound": r.bound(intensity), "hwprobe_ceiling": f"{r.peak_metric} ({r.unit}, {r.path})",
                 "hwprobe_bandwidth_level": r.level, "hwprobe_ridge": r.ridge})
    return info


@pytest.fixture
def hwprobe_roofline(request):
    """Declare a benchmark's work: ``hwprobe_roofline(ops=, bytes=, precision=, unit=None, path="best",
    level="dram")``. Needs pytest-benchmark's ``benchmark`` fixture in the same test."""
    try:
        bench = request.getfixturevalue("benchmark")
    except pytest.FixtureLookupError:
        pytest.skip("hwprobe_roofline needs pytest-benchmark (pip install pytest-benchmark)")
    declared: list[Work] = []

    def declare(*, ops, bytes, precision, unit=None, path="best", level="dram") -> None:  # noqa: A002
        from hwprobe import roofline

        roofline.norm_precision(precision)
        roofline.norm_unit(unit)
        roofline.norm_path(path)
        declared.append(Work(_positive("ops", ops), _positive("bytes", bytes), precision, unit, path, level))

    yield declare
    if not declared:
        return
    stats = getattr(getattr(bench, "stats", None), "stats", None)
    if stats is None or not getattr(stats, "median", None):
        bench.extra_info["hwprobe_note"] = "not benchmarked (benchmarks disabled or not run)"
        return
    loaded = request.config.stash.get(_PROFILE, None)
    info = judge(declared[-1], float(stats.median), loaded[1] if loaded else None)
    bench.extra_info.update(info)
    request.config.stash[_RESULTS].append((request.node.nodeid, info))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    results = config.stash.get(_RESULTS, [])
    if not results:
        return
    from hwprobe.units import si

    terminalreporter.section("hwprobe: benchmarks on the measured roofline")
    for nodeid, i in results:
        line = f"{nodeid}: {si(i['hwprobe_achieved_ops_per_s'], 'op/s')} at {i['hwprobe_intensity']:.3g} op/B"
        if "hwprobe_pct_of_roof" in i:
            line += (f" = {i['hwprobe_pct_of_roof']:.1f}% of {si(i['hwprobe_attainable_ops_per_s'], 'op/s')} "
                     f"attainable ({i['hwprobe_bound']}-bound, {i['hwprobe_ceiling']})")
        terminalreporter.write_line(line)
