"""The Python API the CLI calls: run a suite on a device, leave a results directory and a profile."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hwprobe import suites as suites_mod
from hwprobe.device import GpuInfo, select
from hwprobe.errors import InputError, Skip
from hwprobe.interrupt import guarded
from hwprobe.measurement import PRECISIONS, Measurement
from hwprobe.profile import Profile, validate_dict
from hwprobe.results import ENVIRONMENT, PROFILE, ResultsWriter, environment, new_run_dir, write_table

ENERGY_WINDOW_S = 1.2   # seconds per compute measurement, so the NVML energy counter gives J/op


@dataclass
class RunResult:
    profile: Profile
    results_dir: Path
    measurements: list[Measurement]
    failed: list[str] = field(default_factory=list)   # probes that raised while measuring
    interrupted: bool = False
    suite: str = ""
    notice: str = ""                                  # e.g. "no GPU found: measuring the CPU"


def plan(device: str | None, suite: str | None, precisions: tuple[str, ...] | None):
    """Resolve device, suite and precision filter; every bad input fails here, before any measuring."""
    dev = select(device)
    notice = ""
    if device is None and dev.kind == "cpu":
        notice = "no CUDA GPU found: running the CPU suite (use --device N for a GPU)"
    s = suites_mod.load(suite or ("default" if dev.kind == "gpu" else "cpu"))
    if s.target != dev.kind:
        raise InputError(f"suite {s.name!r} measures the {s.target}, but the device is the {dev.kind} "
                         f"({'use --device cpu' if s.target == 'cpu' else 'use --device N'})")
    suites_mod.validate(s)
    if precisions:
        bad = [p for p in precisions if p not in PRECISIONS]
        if bad:
            raise InputError(f"unknown precision {', '.join(bad)}; precisions: {', '.join(PRECISIONS)}")
        s.entries = _filter_precisions(s.entries, set(precisions))
        if not s.entries:
            raise InputError(f"suite {s.name!r} measures none of: {', '.join(precisions)}")
    return dev, s, notice


def _filter_precisions(entries, wanted: set[str]):
    from hwprobe import probes

    reg = probes.registry()
    out = []
    for e in entries:
        p = reg[e.probe]
        if not p.precisions:
            continue  # memory probes have no precision: a precision filter asks for compute only
        have = e.params.get("precisions") or p.params().get("precisions") or p.precisions
        keep = tuple(x for x in have if x in wanted)
        if keep:
            e.params = {**e.params, "precisions": keep}
            out.append(e)
    return out


def run(device: str | None = None, suite: str | None = None, out: str | Path | None = None, *,
        precisions: tuple[str, ...] | None = None, quick: bool = False, energy: bool | None = None,
        on_measurement: Callable[[Measurement], None] | None = None,
        on_probe: Callable[[str, int, int], None] | None = None) -> RunResult:
    """Measure ``suite`` on ``device`` (None: GPU 0 if present, else the CPU) and write ``out/<run>/``.

    Each measurement is appended to measurements.jsonl as it finishes. A probe that can't run here is
    skipped with its reason; one that fails is recorded and the run goes on; Ctrl-C ends the run with a
    partial profile.
    """
    from hwprobe import probes, specs

    dev, s, notice = plan(device, suite, precisions)
    if energy is None:  # joules per op need >= 1 s windows: on for GPU runs (NVML), off for quick runs
        energy = isinstance(dev, GpuInfo) and not quick
    run_dir = new_run_dir(out, dev.name if isinstance(dev, GpuInfo) else dev.model)
    writer = ResultsWriter(run_dir)
    env = environment(dev, s.name)
    writer.write_json(ENVIRONMENT, env)
    theory = specs.device_theory(dev)
    sampler = _sampler(dev)
    ms: list[Measurement] = []
    failed: list[str] = []
    probe_seconds: dict[str, float] = {}   # wall time per probe, compile included: the suites' budgets
    interrupted = False
    reg = probes.registry()

    def keep(m: Measurement) -> None:
        theory.attach(m)
        ms.append(m)
        writer.append(m)
        if on_measurement:
            on_measurement(m)
        guard.check()

    def measure_all() -> None:
        if isinstance(dev, GpuInfo):
            import cupy as cp

            cp.cuda.Device(dev.index).use()
        for i, entry in enumerate(s.entries):
            guard.check()
            if on_probe:
                on_probe(entry.probe, i, len(s.entries))
            ctx = probes.ProbeContext(target=s.target, device=dev, sampler=sampler, probe_name=entry.probe,
                                      quick=quick, energy_window_s=ENERGY_WINDOW_S if energy else 0.0)
            t0 = time.perf_counter()
            try:
                for m in reg[entry.probe].func(ctx, **entry.params):
                    keep(m)
            except Skip as e:
                keep(Measurement(probe=entry.probe, metric=f"{entry.probe}.skipped", kind="info", value=0.0,
                                 unit="", notes=[f"skipped: {e}"]))
            except KeyboardInterrupt:
                raise
            except Exception as e:  # a failing probe must not lose the others' results
                failed.append(entry.probe)
                keep(Measurement(probe=entry.probe, metric=f"{entry.probe}.error", kind="info", value=0.0,
                                 unit="", flags=[f"error: {type(e).__name__}: {e}"],
                                 notes=[traceback.format_exc(limit=6)]))
            finally:
                probe_seconds[entry.probe] = round(time.perf_counter() - t0, 2)
        guard.check()

    with guarded() as guard:
        try:
            measure_all()
        except KeyboardInterrupt:
            interrupted = True
        finally:
            sampler.close()
            writer.close()
    env["finished"] = not interrupted
    env["probe_seconds"] = probe_seconds
    writer.write_json(ENVIRONMENT, env)
    prof = Profile.from_measurements(dev.to_dict(), ms, environment=env, partial=interrupted)
    for text in theory.disagreements():
        prof.findings.append({"probe": "specs", "metric": "datasheet_vs_device", "text": text})
    try:  # a profile that fails its own schema is a bug; keep the data and say so rather than lose it
        validate_dict(prof.to_dict(), "the new profile")
    except InputError as e:
        prof.errors.append({"probe": "profile", "metric": "schema", "error": str(e)})
    prof.save(run_dir / PROFILE)
    write_table(run_dir, ms)
    return RunResult(prof, run_dir, ms, failed, interrupted, s.name, notice)


def _sampler(dev):
    from hwprobe.timing import ClockSampler, CpuClockSampler, NullSampler

    if isinstance(dev, GpuInfo):
        from hwprobe.device import nvml

        h = nvml.handle(dev)
        return ClockSampler(h) if h is not None else NullSampler()
    return CpuClockSampler()
