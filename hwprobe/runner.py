"""The run loop: each suite entry, each round, into one results directory, losing nothing.

Every record a probe yields is judged against theory and appended (flushed, fsynced) to measurements.jsonl at
once. A Skip becomes a skipped record, any other exception an error record (the run exits 1), and the next
probe runs. Before each compute probe on a GPU that asks for a cool start (all but a few: Probe.cool_start) the
card is let settle (hwprobe.timing.settle); the state it started from is recorded with its figures, and each
probe's in environment.json (``settle_states``).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hwprobe import kernels
from hwprobe import keys as K
from hwprobe.errors import InputError, ProbeTimeout, ResultsWriteError, Skip
from hwprobe.measurement import Measurement
from hwprobe.profile import Profile
from hwprobe.profile_build import build_profile
from hwprobe.results import ENVIRONMENT, PROFILE, ResultsWriter, environment, new_run_dir, write_table
from hwprobe.vocab import Kind, Status
from hwprobe.watchdog import DEFAULT_TIMEOUT_S


class Runner:
    def __init__(self, plan, out: str | Path | None, *, quick: bool, energy_window_s: float,
                 on_measurement: Callable[[Measurement], None] | None = None,
                 on_probe: Callable[[str, int, int], None] | None = None,
                 log: Callable[[str], None] | None = None, resume: Path | None = None):
        from hwprobe import caches
        from hwprobe.specs.live import device_theory
        from hwprobe.timing import sampler_for

        caches.configure()

        self.plan, self.quick, self.energy_window_s = plan, quick, energy_window_s
        self.t_start = time.monotonic()
        self.on_measurement, self.on_probe, self.log = on_measurement, on_probe, log or (lambda msg: None)
        dev = plan.device
        self.measurements: list[Measurement] = []
        self.completed: set[str] = set()          # "probe#round" entries that finished (what --resume skips)
        if resume is not None:
            self.run_dir = Path(resume)
            self.measurements, self.completed = resume_state(self.run_dir)
        else:
            self.run_dir = new_run_dir(out, getattr(dev, "name", None) or dev.model)
        self.writer = ResultsWriter(self.run_dir)
        for m in self.measurements:
            self._append(m)
        self.env = environment(dev, plan.suite.name, devices=plan.devices, rounds=plan.rounds)
        if getattr(plan.suite, "budget_s", None):
            self.env["budget_s"] = plan.suite.budget_s * plan.rounds
        self.env.update(suite_path=plan.suite.path, device_arg=plan.device_arg, completed=sorted(self.completed))
        if resume is not None:
            self.env["resumed"] = True
        self.writer.write_json(ENVIRONMENT, self.env)
        self.theory = device_theory(dev)
        self.sampler = sampler_for(dev)
        self.failed: list[str] = []
        self.probe_seconds: dict[str, float] = {}
        self.settle_seconds: dict[str, float] = {}     # waited before each compute probe (not in probe_seconds)
        self.compile_wait_seconds: dict[str, float] = {}    # of probe_seconds, waiting for kernel compiles
        self.settle_states: dict[str, dict] = {}       # the state each probe's last settle ended in, and its rule
        self.interrupted = False
        self.guard: Any = None
        self._settle: dict[str, Any] | None = None
        self._at_end: list[tuple[str, int, Callable[[], Any]]] = []     # (probe, round, fn): ProbeContext.at_end

    # --- measuring -------------------------------------------------------------------------------------------
    def keep(self, m: Measurement, round_: int) -> None:
        from hwprobe.judge import judge

        if m.status == Status.OK:
            judge(m, self.theory)
        m.settle()
        if self.plan.rounds > 1:
            m.params.setdefault(K.ROUND, round_)
        if self._settle and m.kind == "compute":
            m.params.setdefault(K.START_STATE, self._settle)
        from hwprobe.contention import flag_contention

        flag_contention(m)
        self.measurements.append(m)
        self._append(m)
        if m.status == Status.ERROR and m.probe not in self.failed:
            self.failed.append(m.probe)
        if self.on_measurement:
            self.on_measurement(m)
        self.guard.check()

    def _append(self, m: Measurement) -> None:
        try:
            self.writer.append(m)
        except OSError as e:
            raise ResultsWriteError(f"cannot write to {str(self.run_dir)!r} any more ({e.strerror or e}): "
                                    f"the {len(self.measurements)} measurements so far follow on stdout as JSON",
                                    self.measurements) from None

    def measure_all(self) -> None:
        from hwprobe import probes

        if self.plan.device.kind == "gpu":
            import cupy as cp

            cp.cuda.Device(self.plan.device.index).use()
        reg = probes.registry()
        entries = self.plan.suite.entries
        self._compile_ahead([reg[e.probe] for e in entries])
        total = len(entries) * self.plan.rounds
        for r in range(1, self.plan.rounds + 1):
            for i, entry in enumerate(entries):
                self.guard.check()
                key = f"{entry.probe}#{r}"
                if key in self.completed:
                    continue
                if self.on_probe:
                    self.on_probe(entry.probe, (r - 1) * len(entries) + i, total)
                self._run_entry(reg[entry.probe], entry.params, r, entry.timeout_s or DEFAULT_TIMEOUT_S)
                self.completed.add(key)
                self.env["completed"] = sorted(self.completed)
                self._write_env()
        self.guard.check()
        self.run_at_end()

    def _compile_ahead(self, todo) -> None:
        """Start the suite's kernel compiles (each probe's ``ahead`` hook, in suite order) on worker threads. A
        hook that fails costs nothing: its probe compiles when it loads, and reports a failure there."""
        if self.plan.device.kind != "gpu":
            return
        for p in {p.name: p for p in todo}.values():
            if p.ahead is not None:
                try:
                    p.ahead(self.plan.device)
                except Exception as e:
                    self.log(f"{p.name}: no compile ahead ({type(e).__name__}: {e})")

    def run_at_end(self) -> None:
        """What probes registered for the end of the run (``ProbeContext.at_end``), in order; one that fails is
        an error record of its probe, as a failing probe is."""
        todo, self._at_end = self._at_end, []
        for name, round_, fn in todo:
            ctx = self._context(name)
            try:
                for m in fn():
                    self.keep(m, round_)
            except (KeyboardInterrupt, ResultsWriteError):
                raise
            except Exception as e:
                self.keep(ctx.error(f"{name}.at_end.error", f"{name} at the end of the run", e), round_)

    def _write_env(self) -> None:
        try:
            self.writer.write_json(ENVIRONMENT, self.env)
        except OSError as e:
            raise ResultsWriteError(f"cannot write to {str(self.run_dir)!r} any more ({e.strerror or e}): "
                                    f"the {len(self.measurements)} measurements so far follow on stdout as JSON",
                                    self.measurements) from None

    def _context(self, name: str, round_: int = 1):
        from hwprobe.probes import ProbeContext

        return ProbeContext(target=self.plan.suite.target, device=self.plan.device, devices=self.plan.devices,
                            sampler=self.sampler, probe_name=name, quick=self.quick, theory=self.theory,
                            energy_window_s=self.energy_window_s, log=lambda msg: self.log(f"{name}: {msg}"),
                            at_end=lambda fn: self._at_end.append((name, round_, fn)))

    def _run_entry(self, probe, params: dict[str, Any], round_: int, timeout_s: float) -> None:
        from hwprobe.watchdog import Watchdog

        ctx = self._context(probe.name, round_)
        self._settle = self._let_settle() if probe.family == "compute" and probe.cool_start else None
        if self._settle:
            self.settle_states[probe.name] = self._settle
            if self._settle.get("waited_s"):
                self.settle_seconds[probe.name] = round(self.settle_seconds.get(probe.name, 0.0)
                                                        + float(self._settle["waited_s"]), 2)
        t0 = last = time.perf_counter()
        stalled = kernels.waited_seconds()
        try:
            with Watchdog(probe.name, timeout_s, on_stuck=self._stuck):
                for m in probe.func(ctx, **params):
                    now = time.perf_counter()
                    m.params[K.WALL_S] = round(now - last, 4)   # a derived copy of a record gets its own
                    last = now
                    self.keep(m, round_)
        except Skip as e:
            self.keep(ctx.skip(f"{probe.name}.skipped", str(e)), round_)
        except (KeyboardInterrupt, ResultsWriteError):
            raise
        except Exception as e:  # a failing probe must not lose the others' results
            if type(e).__name__ == "OutOfMemoryError":     # CuPy's: someone else holds the memory
                self.keep(ctx.skip(f"{probe.name}.skipped", f"not enough free GPU memory: {e}"), round_)
                return
            rec = ctx.error(f"{probe.name}.error", probe.name, e)
            if not isinstance(e, ProbeTimeout):
                rec.notes.append(traceback.format_exc(limit=6))
            self.keep(rec, round_)
        finally:
            self.probe_seconds[probe.name] = round(self.probe_seconds.get(probe.name, 0.0)
                                                   + time.perf_counter() - t0, 2)
            waited = kernels.waited_seconds() - stalled
            if waited >= 0.01:
                self.compile_wait_seconds[probe.name] = round(self.compile_wait_seconds.get(probe.name, 0.0)
                                                              + waited, 2)

    def _let_settle(self) -> dict[str, Any] | None:
        from hwprobe.timing.settle import settle

        return settle(self.sampler, check=self.guard.check) if self.plan.device.kind == "gpu" else None

    def _stuck(self, probe: str, waited_s: float) -> None:
        """The watchdog's last resort, from its thread: the probe is stuck inside a call that never returns (a
        hung kernel), so the CUDA context is lost. Record it, write a partial profile, and leave."""
        import os
        import sys

        from hwprobe.measurement import Measurement as M

        rec = M(probe=probe, metric=f"{probe}.error", kind=Kind.INFO, value=0.0, unit="", status=Status.ERROR.value,
                reason=f"watchdog: {probe} did not return within {waited_s:.0f} s (a hung kernel?); the run "
                       "stopped with what was measured")
        self.measurements.append(rec)
        try:
            self.writer.append(rec)
            self.interrupted = True
            self.finish()
        finally:
            sys.stderr.write(f"\nhwprobe: {rec.reason}\nresults: {self.run_dir}\n")
            sys.stderr.flush()
            os._exit(1)

    # --- ending ----------------------------------------------------------------------------------------------
    def close(self) -> None:
        self.sampler.close()
        self.writer.close()

    def finish(self) -> Profile:
        """Environment, profile (schema-checked) and table, each written atomically."""
        from hwprobe.contention import summarize

        self.env["finished"] = not self.interrupted
        self.env["probe_seconds"] = self.probe_seconds
        if self.settle_seconds:
            self.env["settle_seconds"] = self.settle_seconds
        if self.compile_wait_seconds:
            self.env["compile_wait_seconds"] = self.compile_wait_seconds
        if self.settle_states:
            self.env["settle_states"] = self.settle_states
        self.env["wall_s"] = round(time.monotonic() - self.t_start, 1)
        contended = summarize(self.measurements)
        if contended:
            self.env["contended"] = contended
        dev = cpu_max_seen(self.plan.device, self.measurements, self.env)
        prof = build_profile(dev, self.measurements, self.env, self.interrupted, self.theory,
                             devices=None if dev is not self.plan.device else self.plan.devices)
        try:
            self.writer.write_json(ENVIRONMENT, self.env)
            prof.save(self.run_dir / PROFILE)
            write_table(self.run_dir, self.measurements)
        except OSError as e:
            raise ResultsWriteError(f"cannot write the results to {str(self.run_dir)!r} ({e.strerror or e}): "
                                    f"the {len(self.measurements)} measurements follow on stdout as JSON",
                                    self.measurements) from None
        return prof


def cpu_max_seen(dev, ms: list[Measurement], env: dict[str, Any]):
    """A CPU's max clock is at least the highest clock its cores were timed at around a window (a VM's boot-time
    measurement, or its nominal clock, can sit below it): the profile's device says that one, and the environment
    both (``cpu_max_mhz``). Any other device is returned as it is."""
    if getattr(dev, "kind", "") != "cpu" or not dev.max_mhz:
        return dev
    seen = max((float(x) for m in ms for x in (m.params.get(K.CPU_MHZ_AROUND) or []) if x), default=0.0)
    if seen <= dev.max_mhz:
        return dev
    env["cpu_max_mhz"] = {"discovered": dev.max_mhz, "measured": round(seen, 1)}
    return replace(dev, max_mhz=round(seen, 1))


def resume_state(run_dir: Path) -> tuple[list[Measurement], set[str]]:
    """What a killed or interrupted run finished: the records of its completed probe entries (the rest are
    measured again). The old records file is kept beside, renamed, so nothing is lost."""
    import json

    from hwprobe.results import MEASUREMENTS, load_records

    try:
        env = json.loads((run_dir / ENVIRONMENT).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"--resume {str(run_dir)!r}: no readable {ENVIRONMENT} ({e})") from None
    done = set(env.get("completed") or [])
    rec = load_records(run_dir)
    keep = [m for m in rec.measurements if f"{m.probe}#{m.params.get(K.ROUND, 1)}" in done]
    old = run_dir / MEASUREMENTS
    old.replace(run_dir / f"{MEASUREMENTS}.before-resume-{int(time.time())}")
    return keep, done
