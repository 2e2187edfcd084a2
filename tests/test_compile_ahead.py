"""Compiling ahead (hwprobe.kernels.once/ahead, the runner's hook): one compile per key however many threads ask,
a failure forgotten so a later load tries again, and hooks called once per probe, on GPU runs only."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from hwprobe import kernels
from hwprobe.probes.base import Probe
from hwprobe.runner import Runner


def _slow_counter(result="module", delay=0.05):
    calls = []

    def make():
        calls.append(threading.current_thread().name)
        time.sleep(delay)
        return result

    return make, calls


def test_once_compiles_once_however_many_threads_ask():
    make, calls = _slow_counter()
    key = ("test", "once", time.monotonic())
    got = []
    threads = [threading.Thread(target=lambda: got.append(kernels.once(key, make))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == ["module"] * 6 and len(calls) == 1


def test_a_load_waits_for_the_compile_started_ahead_and_does_not_compile_again():
    make, calls = _slow_counter("ahead", delay=0.2)
    key = ("test", "ahead", time.monotonic())
    kernels.ahead(key, make)
    time.sleep(0.05)                         # the worker has started it
    assert kernels.once(key, lambda: "main thread") == "ahead"
    assert len(calls) == 1 and calls[0].startswith("hwprobe-compile")


def test_a_failed_compile_is_raised_and_forgotten():
    key = ("test", "fail", time.monotonic())

    def bad():
        raise RuntimeError("nvrtc: error")

    with pytest.raises(RuntimeError, match="nvrtc"):
        kernels.once(key, bad)
    assert kernels.once(key, lambda: "second try") == "second try"


def test_a_failure_ahead_is_not_lost_for_the_probe_that_loads():
    key = ("test", "fail-ahead", time.monotonic())
    done = threading.Event()

    def bad():
        done.set()
        raise RuntimeError("nvrtc: error")

    kernels.ahead(key, bad)
    assert done.wait(5)
    time.sleep(0.05)
    assert kernels.once(key, lambda: "compiled at load") == "compiled at load"


def _probe(name, hook):
    return Probe(name, "gpu", "compute", "s", lambda ctx: iter(()), ahead=hook)


def test_the_runner_calls_each_probes_hook_once_on_a_gpu_run_and_logs_a_failing_one():
    seen, logs = [], []

    def bad(dev):
        raise ImportError("no cupy")

    dev = SimpleNamespace(kind="gpu")
    runner = SimpleNamespace(plan=SimpleNamespace(device=dev), log=logs.append)
    todo = [_probe("a", seen.append), _probe("b", None), _probe("a", seen.append), _probe("c", bad)]
    Runner._compile_ahead(runner, todo)
    assert seen == [dev]
    assert logs == ["c: no compile ahead (ImportError: no cupy)"]


def test_the_runner_compiles_nothing_ahead_on_a_cpu_run():
    seen = []
    runner = SimpleNamespace(plan=SimpleNamespace(device=SimpleNamespace(kind="cpu")), log=print)
    Runner._compile_ahead(runner, [_probe("a", seen.append)])
    assert seen == []


def test_the_heavy_compilers_register_a_hook():
    from hwprobe import probes

    reg = probes.registry()
    for name in ("gpu.fma", "gpu.mma_sync", "gpu.wgmma", "gpu.dram", "gpu.cache", "gpu.latency", "gpu.roofline",
                 "gpu.mem_kernels", "gpu.launch", "gpu.gemm", "gpu.gemm_align", "gpu.gemm_power", "gpu.sparse",
                 "gpu.gemm_shapes"):
        assert reg[name].ahead is not None, name


def test_short_rules_skip_the_energy_counter_and_ceilings_keep_it():
    from hwprobe.timing import policy

    assert not policy.rule("graph_point").energy and not policy.rule("sweep").energy
    assert policy.rule("ceiling").energy and policy.rule("sustained").energy and policy.rule("energy").energy


def test_a_spec_compiled_ahead_is_the_key_its_probe_loads():
    """A probe's module spec, handed to prefetch as a tuple and to load unpacked, names one compile: lists or
    tuples, defaults spelled out or not."""
    from hwprobe.probes.calibration import common
    from hwprobe.probes.compute import roofline
    from hwprobe.probes.memory import latency

    for spec in (common.MODULE, roofline.MODULE, latency.MODULE):
        name, *rest = spec
        kw = dict(zip(("options", "name_expressions", "arch_specific"), rest, strict=False))
        loose = {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()}
        assert kernels._key(*spec, dev=0) == kernels._key(name, **loose, dev=0)
    assert kernels._key("x.cu", dev=0) == kernels._key("x.cu", (), None, False, dev=0)
    assert kernels._key("x.cu", dev=0) != kernels._key("x.cu", dev=1)


def test_a_load_runs_a_job_still_queued_itself_and_the_worker_skips_it():
    gates = [threading.Event() for _ in range(kernels.WORKERS)]
    started = [threading.Event() for _ in range(kernels.WORKERS)]
    t = time.monotonic()
    for i, (g, s) in enumerate(zip(gates, started, strict=True)):     # every worker busy
        kernels.ahead(("test", "busy", i, t), lambda g=g, s=s: (s.set(), g.wait(5)))
    assert all(s.wait(5) for s in started)
    ran = []
    kernels.ahead(("test", "queued", t), lambda: ran.append("worker") or "worker")
    assert kernels.once(("test", "queued", t), lambda: ran.append("load") or "load") == "load"
    for g in gates:
        g.set()
    time.sleep(0.1)
    assert ran == ["load"]


def test_a_compile_ahead_hook_prefetches_its_modules_resolving_callables_when_the_run_begins(monkeypatch):
    got, calls = [], []
    monkeypatch.setattr(kernels, "prefetch", got.extend)
    hook = kernels.compile_ahead(("a.cu",), lambda: calls.append(1) or ("b.cu", (), ("k",)))
    assert calls == []                                       # nothing resolved when the probe registers
    hook(object())
    assert got == [("a.cu",), ("b.cu", (), ("k",))] and calls == [1]


def test_waited_seconds_counts_a_callers_compile_and_wait_but_not_a_finished_module():
    """The stall a probe sees: compiling itself or waiting for a compile ahead counts, a module already compiled
    does not, and a compile a worker thread makes ahead unseen counts nothing."""
    t = time.monotonic()
    w0 = kernels.waited_seconds()
    kernels.once(("test", "stall-self", t), _slow_counter(delay=0.1)[0])
    w1 = kernels.waited_seconds()
    assert 0.09 < w1 - w0 < 1.0
    kernels.once(("test", "stall-self", t), _slow_counter(delay=0.1)[0])
    assert kernels.waited_seconds() == w1
    kernels.ahead(("test", "stall-ahead", t), _slow_counter(delay=0.3)[0])
    time.sleep(0.1)
    kernels.once(("test", "stall-ahead", t), lambda: "not used")
    w2 = kernels.waited_seconds()
    assert 0.1 < w2 - w1 < 0.3
    done = threading.Event()
    kernels.ahead(("test", "unseen", t), lambda: done.set())
    assert done.wait(5)
    time.sleep(0.05)
    assert kernels.waited_seconds() == w2


def test_the_runner_records_each_probes_compile_wait(tmp_path):
    """A probe that loads a module still compiling has that wait in the environment's compile_wait_seconds (and the
    report's probe time table); a probe that waits for none has no entry."""
    import json

    from hwprobe import api
    from hwprobe.probes.base import _REGISTRY, probe

    key = ("test", "runner-stall", time.monotonic())

    @probe(name="test.stalls", target="cpu", family="health", summary="test")
    def _stalls(ctx):
        kernels.once(key, _slow_counter(delay=0.15)[0])
        yield ctx.derived("test.stalls", 1.0, unit="", kind="info")

    @probe(name="test.free", target="cpu", family="health", summary="test")
    def _free(ctx):
        yield ctx.derived("test.free", 1.0, unit="", kind="info")

    try:
        suite = tmp_path / "w.toml"
        suite.write_text('target = "cpu"\n[[probes]]\nprobe = "test.stalls"\n[[probes]]\nprobe = "test.free"\n')
        res = api.run("cpu", str(suite), tmp_path / "out", quick=True)
    finally:
        _REGISTRY.pop("test.stalls", None)
        _REGISTRY.pop("test.free", None)
    env = json.loads((res.results_dir / "environment.json").read_text())
    assert set(env["compile_wait_seconds"]) == {"test.stalls"}
    assert 0.14 < env["compile_wait_seconds"]["test.stalls"] <= env["probe_seconds"]["test.stalls"]
