"""The run loop: each suite entry, each round, into one results directory, losing nothing.

Every record a probe yields is judged against theory and appended (flushed, fsynced) to measurements.jsonl at
once. A Skip becomes a skipped record, any other exception an error record (the run exits 1), and the next
probe runs. Before each compute probe on a GPU the card is let settle (hwprobe.timing.settle) and the state it
started from is recorded with its figures.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwprobe.errors import InputError, Skip
from hwprobe.measurement import Measurement
from hwprobe.profile import Profile, validate_dict
from hwprobe.results import ENVIRONMENT, PROFILE, ResultsWriter, environment, new_run_dir, write_table
from hwprobe.vocab import Status


class Runner:
    def __init__(self, plan, out: str | Path | None, *, quick: bool, energy_window_s: float,
                 on_measurement: Callable[[Measurement], None] | None = None,
                 on_probe: Callable[[str, int, int], None] | None = None,
                 log: Callable[[str], None] | None = None):
        from hwprobe import specs
        from hwprobe.timing import sampler_for

        self.plan, self.quick, self.energy_window_s = plan, quick, energy_window_s
        self.on_measurement, self.on_probe, self.log = on_measurement, on_probe, log or (lambda msg: None)
        dev = plan.device
        self.run_dir = new_run_dir(out, getattr(dev, "name", None) or dev.model)
        self.writer = ResultsWriter(self.run_dir)
        self.env = environment(dev, plan.suite.name, devices=plan.devices, rounds=plan.rounds)
        self.writer.write_json(ENVIRONMENT, self.env)
        self.theory = specs.device_theory(dev)
        self.sampler = sampler_for(dev)
        self.measurements: list[Measurement] = []
        self.failed: list[str] = []
        self.probe_seconds: dict[str, float] = {}
        self.interrupted = False
        self.guard: Any = None
        self._settle: dict[str, Any] | None = None

    # --- measuring -------------------------------------------------------------------------------------------
    def keep(self, m: Measurement, round_: int) -> None:
        from hwprobe.judge import judge

        if m.status == Status.OK:
            judge(m, self.theory)
        m.settle()
        if self.plan.rounds > 1:
            m.params.setdefault("round", round_)
        if self._settle and m.kind == "compute":
            m.params.setdefault("start_state", self._settle)
        self.measurements.append(m)
        self.writer.append(m)
        if m.status == Status.ERROR and m.probe not in self.failed:
            self.failed.append(m.probe)
        if self.on_measurement:
            self.on_measurement(m)
        self.guard.check()

    def measure_all(self) -> None:
        from hwprobe import probes

        if self.plan.device.kind == "gpu":
            import cupy as cp

            cp.cuda.Device(self.plan.device.index).use()
        reg = probes.registry()
        entries = self.plan.suite.entries
        total = len(entries) * self.plan.rounds
        for r in range(1, self.plan.rounds + 1):
            for i, entry in enumerate(entries):
                self.guard.check()
                if self.on_probe:
                    self.on_probe(entry.probe, (r - 1) * len(entries) + i, total)
                self._run_entry(reg[entry.probe], entry.params, r)
        self.guard.check()

    def _context(self, name: str):
        from hwprobe.probes import ProbeContext

        return ProbeContext(target=self.plan.suite.target, device=self.plan.device, devices=self.plan.devices,
                            sampler=self.sampler, probe_name=name, quick=self.quick, theory=self.theory,
                            energy_window_s=self.energy_window_s, log=lambda msg: self.log(f"{name}: {msg}"))

    def _run_entry(self, probe, params: dict[str, Any], round_: int) -> None:
        ctx = self._context(probe.name)
        self._settle = self._let_settle() if probe.family == "compute" else None
        t0 = time.perf_counter()
        try:
            for m in probe.func(ctx, **params):
                self.keep(m, round_)
        except Skip as e:
            self.keep(ctx.skip(f"{probe.name}.skipped", str(e)), round_)
        except KeyboardInterrupt:
            raise
        except Exception as e:  # a failing probe must not lose the others' results
            rec = ctx.error(f"{probe.name}.error", probe.name, e)
            rec.notes.append(traceback.format_exc(limit=6))
            self.keep(rec, round_)
        finally:
            self.probe_seconds[probe.name] = round(self.probe_seconds.get(probe.name, 0.0)
                                                   + time.perf_counter() - t0, 2)

    def _let_settle(self) -> dict[str, Any] | None:
        from hwprobe.timing.settle import settle

        return settle(self.sampler, check=self.guard.check) if self.plan.device.kind == "gpu" else None

    # --- ending ----------------------------------------------------------------------------------------------
    def close(self) -> None:
        self.sampler.close()
        self.writer.close()

    def finish(self) -> Profile:
        """Environment, profile (schema-checked) and table, each written atomically."""
        self.env["finished"] = not self.interrupted
        self.env["probe_seconds"] = self.probe_seconds
        self.writer.write_json(ENVIRONMENT, self.env)
        prof = build_profile(self.plan.device, self.measurements, self.env, self.interrupted, self.theory,
                             devices=self.plan.devices)
        prof.save(self.run_dir / PROFILE)
        write_table(self.run_dir, self.measurements)
        return prof


def build_profile(device, ms: list[Measurement], env: dict[str, Any], partial: bool, theory=None,
                  devices: list | None = None) -> Profile:
    """The profile of a run's records (also what ``report`` rebuilds after a crash)."""
    dev = device if isinstance(device, dict) else device.to_dict()
    devs = [d if isinstance(d, dict) else d.to_dict() for d in (devices or [])] or [dev]
    prof = Profile.from_measurements(dev, ms, environment=env, partial=partial, devices=devs)
    if theory is not None:
        for text in theory.disagreements():
            prof.findings.append({"probe": "specs", "metric": "datasheet_vs_device", "text": text})
    try:  # a profile that fails its own schema is a bug; keep the data and say so rather than lose it
        validate_dict(prof.to_dict(), "the new profile")
    except InputError as e:
        prof.errors.append({"probe": "profile", "metric": "schema", "error": str(e)})
    return prof
