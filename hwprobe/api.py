"""The Python API the CLI calls: plan a run (every bad input fails there), then measure it into a results directory.

``plan`` resolves the devices, the suite, its parameters and the precision filter once; ``run`` takes that plan
(or plans itself when given the same arguments) and returns a RunResult with the profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwprobe import suites as suites_mod
from hwprobe.device import GpuInfo, select_many
from hwprobe.errors import InputError
from hwprobe.interrupt import guarded
from hwprobe.measurement import PRECISIONS, Measurement
from hwprobe.profile import Profile
from hwprobe.timing import policy

ENERGY_WINDOW_S = policy.ENERGY.min_total_s   # seconds per compute measurement: the energy counter gives J/op


@dataclass
class RunPlan:
    """What a run will do, resolved before anything is measured."""

    devices: list[Any]                    # GpuInfo or CpuInfo; the first is the primary device
    suite: suites_mod.Suite
    notice: str = ""                      # e.g. "no GPU found: measuring the CPU"
    rounds: int = 1                       # the suite's probes run this many times, interleaved (stability)
    device_arg: str | None = None         # what --device said (a resumed run plans the same devices again)

    @property
    def device(self):
        return self.devices[0]

    @property
    def label(self) -> str:
        return " + ".join(d.label for d in self.devices)


@dataclass
class RunResult:
    profile: Profile
    results_dir: Path
    measurements: list[Measurement]
    failed: list[str] = field(default_factory=list)   # probes with at least one error record
    interrupted: bool = False
    suite: str = ""
    notice: str = ""


def plan(device: str | None = None, suite: str | None = None, precisions: tuple[str, ...] | None = None,
         rounds: int | None = None) -> RunPlan:
    """Resolve devices, suite (its parameters checked against each probe's declaration) and the precision
    filter; every bad input fails here, before any measuring."""
    from hwprobe import distributed

    devs = select_many(distributed.rank_device(device))   # under MPI, each rank takes its own GPU
    dev = devs[0]
    notice = ""
    if device is None and dev.kind == "cpu":
        notice = "no CUDA GPU found: running the CPU suite (use --device N for a GPU)"
    s = suites_mod.load(suite or ("default" if dev.kind == "gpu" else "cpu"))
    if s.target != dev.kind and suite and f"{suite}-{dev.kind}" in suites_mod.available():
        s = suites_mod.load(f"{suite}-{dev.kind}")     # a suite named for both kinds: acceptance, acceptance-cpu
    if s.target != dev.kind:
        raise InputError(f"suite {s.name!r} measures the {s.target}, but the device is the {dev.kind} "
                         f"({'use --device cpu' if s.target == 'cpu' else 'use --device N'})")
    suites_mod.validate(s)
    if precisions:
        wanted = tuple(p.lower() for p in precisions)
        bad = [p for p in wanted if p not in PRECISIONS]
        if bad:
            raise InputError(f"unknown precision {', '.join(bad)}; precisions: {', '.join(PRECISIONS)}")
        s.entries = _filter_precisions(s.entries, set(wanted))
        if not s.entries:
            raise InputError(f"suite {s.name!r} measures none of: {', '.join(wanted)}")
    n = s.rounds if rounds is None else rounds
    if not isinstance(n, int) or n < 1:
        raise InputError(f"rounds must be a whole number >= 1, not {n!r}")
    return RunPlan(devs, s, notice, n, None if device is None else str(device))


def resume_plan(run_dir: str | Path) -> RunPlan:
    """The plan of an unfinished run, from its environment.json: the same devices, suite and rounds."""
    import json

    env_file = Path(run_dir) / "environment.json"
    try:
        env = json.loads(env_file.read_text(encoding="utf-8"))
        return plan(env.get("device_arg"), env["suite_path"], rounds=int(env.get("rounds", 1)))
    except FileNotFoundError:
        raise InputError(f"--resume: {str(run_dir)!r} is not a results directory (no environment.json)") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"--resume: cannot read {str(env_file)!r}: {type(e).__name__}: {e}") from None


def _filter_precisions(entries, wanted: set[str]):
    from hwprobe import probes

    reg = probes.registry()
    out = []
    for e in entries:
        p = reg[e.probe]
        if not p.precisions:
            continue  # memory probes have no precision: a precision filter asks for compute only
        have = e.params.get("precisions") or p.params().get("precisions") or p.precisions  # a probe's arguments
        keep = tuple(x for x in have if x in wanted)
        if keep:
            e.params = {**e.params, "precisions": keep}
            out.append(e)
    return out


def run(device: str | RunPlan | None = None, suite: str | None = None, out: str | Path | None = None, *,
        precisions: tuple[str, ...] | None = None, quick: bool = False, energy: bool | None = None,
        rounds: int | None = None, on_measurement: Callable[[Measurement], None] | None = None,
        on_probe: Callable[[str, int, int], None] | None = None,
        log: Callable[[str], None] | None = None, resume: str | Path | None = None) -> RunResult:
    """Measure a plan (or ``plan(device, suite, precisions, rounds)``) and write ``out/<run>/``.

    Each measurement is appended to measurements.jsonl as it finishes. A probe that can't run here is
    skipped with its reason; one that fails is recorded and the run goes on; Ctrl-C or SIGTERM end the run
    with a partial profile. ``resume``: a results directory whose run did not finish: only the probe entries
    it had not completed are measured, into the same directory (see ``resume_plan``).
    """
    p = device if isinstance(device, RunPlan) else plan(device, suite, precisions, rounds)
    if energy is None:  # joules per op need >= 1 s windows: on for GPU runs (NVML), off for quick runs
        energy = isinstance(p.device, GpuInfo) and not quick
    from hwprobe import distributed
    from hwprobe.runner import Runner

    runner = Runner(p, distributed.rank_out(out), quick=quick, energy_window_s=ENERGY_WINDOW_S if energy else 0.0,
                    on_measurement=on_measurement, on_probe=on_probe, log=log,
                    resume=Path(resume) if resume else None)
    with guarded() as guard:
        runner.guard = guard
        try:
            runner.measure_all()
        except KeyboardInterrupt:
            runner.interrupted = True
        finally:
            runner.close()
        with guard.deferred():    # a signal during the final writes lets them finish first
            prof = runner.finish()
            # under MPI: rank 0 rewrites its results with every rank's records and one merged profile
            prof = distributed.finish_run(runner.run_dir, prof, runner.measurements, p.device)
    return RunResult(prof, runner.run_dir, runner.measurements, runner.failed, runner.interrupted,
                     p.suite.name, p.notice)

