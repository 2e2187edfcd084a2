import itertools

import pytest

from hwprobe.measurement import Stats
from hwprobe.timing import iterations_for, time_host
from hwprobe.timing.sampler import _Window, decode_throttle


def test_time_host_uses_the_clock_and_skips_warmup():
    ticks = itertools.count(0.0, 0.5)          # each clock read advances 0.5 s
    calls = []
    samples = time_host(lambda: calls.append(1), warmup=2, repeats=3, clock=lambda: next(ticks))
    assert samples == [0.5, 0.5, 0.5]
    assert len(calls) == 5                      # 2 warm-up + 3 timed


def test_stats_median_best_cv():
    s = Stats.of([3.0, 1.0, 2.0, 2.0])
    assert (s.n, s.median_s, s.best_s, s.mean_s) == (4, 2.0, 1.0, 2.0)
    assert s.cv == pytest.approx(0.40824829, rel=1e-6)
    with pytest.raises(ValueError):
        Stats.of([])


def test_iterations_for_targets_sample_length():
    assert iterations_for(1e-4, 0.01) == 100
    assert iterations_for(1.0, 0.01) == 1                 # never below lo
    assert iterations_for(0.0, 0.01, hi=1000) == 1000


def test_throttle_reasons_decode_and_idle_is_dropped():
    assert decode_throttle(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    w = _Window(sm=[1980, 1755, 1600], power=[500, 700, 690], throttle=0x1 | 0x4,
                energy_mj_start=1000.0, energy_mj_end=21000.0)
    s = w.summarize("nvml")
    assert s.sm_mhz == 1755 and s.sm_mhz_min == 1600 and s.power_w_max == 700
    assert s.throttle_reasons == ["sw_power_cap"]
    # no window times: no energy, and NVML's lagging 1 s average (690 W) is not this window's power
    assert s.energy_j is None and s.power_w is None
    w.t_start, w.t_end = 10.0, 10.04                 # 40 ms: the counter steps every ~0.1 s, not trusted
    assert w.summarize("nvml").energy_j is None and w.summarize("nvml").power_w is None
    w.t_start, w.t_end = 10.0, 50.0                  # 20 J in 40 s: 0.5 W mean from the energy counter
    s = w.summarize("nvml")
    assert s.energy_j == pytest.approx(20.0) and s.power_w == pytest.approx(0.5)


def test_compute_measurements_stretch_to_the_energy_window():
    from hwprobe.probes.base import ProbeContext
    from hwprobe.timing import NullSampler

    calls = []

    def slow():
        calls.append(1)
        import time

        time.sleep(0.01)

    ctx = ProbeContext(target="cpu", device=None, sampler=NullSampler(), energy_window_s=0.2)
    m = ctx.measure("x", slow, work=1.0, unit="FLOP/s", kind="compute", warmup=0, repeats=3)
    assert sum(m.samples_s) >= 0.2 and m.stats.n >= 18
    m = ctx.measure("y", slow, work=1.0, unit="B/s", kind="memory", warmup=0, repeats=3)
    assert m.stats.n == 3                            # only compute ceilings pay for energy
    m = ctx.measure("z", slow, work=1.0, unit="FLOP/s", kind="compute", warmup=0, rule="rested")
    assert m.stats.n == 5 and sum(m.samples_s) < 0.2  # a burst window is not stretched: it reads no energy


def _streaming_ctx(monkeypatch, stream, **kw):
    """A ProbeContext whose timer hands out ``stream``'s samples (warm-up calls take none)."""
    from hwprobe.probes.base import ProbeContext
    from hwprobe.timing import NullSampler

    ctx = ProbeContext(target="gpu", device=None, sampler=NullSampler(), **kw)
    it = iter(stream)
    monkeypatch.setattr(ctx, "_time", lambda fn, warmup, k, hold=None: [next(it) for _ in range(k)])
    return ctx


def test_measure_records_why_sampling_stopped_and_the_noise_reached(monkeypatch):
    from hwprobe.measurement import Measurement
    from hwprobe.profile import Ceiling

    quiet = [0.005, 0.00501, 0.00499, 0.005, 0.005005] * 4
    m = _streaming_ctx(monkeypatch, quiet).measure("q", lambda: None, work=1.0, unit="FLOP/s", kind="compute")
    assert m.stats.n == 5 and m.stats.stop == "noise" and m.stats.noise < 0.005
    noisy = [0.005, 0.0055, 0.0045, 0.006, 0.004] * 4
    m = _streaming_ctx(monkeypatch, noisy).measure("n", lambda: None, work=1.0, unit="FLOP/s", kind="compute")
    assert m.stats.n == 10 and m.stats.stop == "max_samples" and m.stats.noise > 0.005
    back = Measurement.from_dict(m.to_dict())
    assert (back.stats.stop, back.stats.noise) == ("max_samples", m.stats.noise)
    c = Ceiling.of(m)
    assert (c.stop_reason, c.noise) == ("max_samples", m.stats.noise)
    fixed = _streaming_ctx(monkeypatch, noisy).measure("f", lambda: None, work=1.0, unit="B/s", kind="sweep",
                                                       repeats=3)
    assert fixed.stats.n == 3 and fixed.stats.stop == "minimums"       # a count the caller fixed
    sustained = _streaming_ctx(monkeypatch, noisy * 10, energy_window_s=0.1).measure(
        "s", lambda: None, work=1.0, unit="FLOP/s", kind="compute", repeats=30)
    assert sustained.stats.n == 30 and sustained.stats.stop == "minimums"   # the count, not the noise, sets it
    old = m.to_dict()
    del old["stats"]["noise"], old["stats"]["stop"]                     # a record from before issue 33
    assert Measurement.from_dict(old).stats.stop is None


class _Clock:
    """A fake CuPy whose GPU clock advances by ``per_launch`` seconds per launch; events read it."""

    def __init__(self, per_launch: float):
        self.t, self.per_launch, self.log = 0.0, per_launch, []
        clock = self

        class Event:
            def __init__(self, *a, **k):
                self.at = None

            def record(self, stream=None):
                self.at = clock.t
                clock.log.append(("record", getattr(stream, "name", None)))

            def synchronize(self):
                pass

        class Stream:
            def __init__(self, name):
                self.name, self.ptr = name, hash(name)

            def wait_event(self, e):
                clock.log.append(("wait", self.name))

        self.current = Stream("current")
        cuda = type("cuda", (), {})()
        cuda.Event = Event
        cuda.get_current_stream = lambda: self.current
        cuda.get_elapsed_time = lambda a, b: (b.at - a.at) * 1e3
        self.cuda, self.Stream = cuda, Stream

    def launch(self):
        self.t += self.per_launch


def test_launches_for_sizes_a_sample_to_the_target():
    from hwprobe.timing import launches_for, repeat, time_cuda_issue

    g = _Clock(1e-5)
    assert launches_for(g.launch, 0.004, cp=g) == 400         # 4 ms of 10 us launches
    assert launches_for(g.launch, 0.004, hi=100, cp=g) == 100
    gpu, host = time_cuda_issue(repeat(g.launch, 7), cp=g)
    assert gpu == pytest.approx(7e-5) and host >= 0


def test_fork_join_starts_every_stream_after_the_current_and_joins_them():
    from hwprobe.timing.groups import fork_join

    g = _Clock(0.0)
    s1, s2 = g.Stream("s1"), g.Stream("s2")
    ran = []
    fork_join(g, [s1, s2], [lambda p: ran.append(("h2d", p)), lambda p: ran.append(("d2h", p))])
    assert ran == [("h2d", s1.ptr), ("d2h", s2.ptr)]
    assert g.log == [("record", "current"), ("wait", "s1"), ("wait", "s2"), ("record", "s1"), ("record", "s2"),
                     ("wait", "current"), ("wait", "current")]


def test_a_rested_figures_joules_come_from_a_window_of_their_own():
    """gpu.gemm_fp8's variants: the rested burst is the rate; the energy rule's window after it gives the joules."""
    import time

    from hwprobe.probes.base import ProbeContext
    from hwprobe.probes.compute.cublaslt import sustained_window
    from hwprobe.timing import NullSampler

    ctx = ProbeContext(target="cpu", device=None, sampler=NullSampler(), energy_window_s=0.1)
    got = sustained_window(ctx, "x", lambda: time.sleep(0.005), work=1e9, unit="FLOP/s")
    assert got["samples"] >= 10 and 0 < got["rate"] < 1e9 / 0.005
    assert got["j_per_op"] is None and got["power_w"] is None     # no energy counter here: none invented


def test_power_summary_cites_rate_clock_power_and_joules_of_one_window():
    """cuBLASLt's sustained window and gpu.gemm_power's points cite a window by the same four figures."""
    from hwprobe.measurement import ClockSummary, Measurement, Stats

    m = Measurement(probe="p", metric="x", kind="compute", value=2e15, unit="FLOP/s", work=2e12,
                    stats=Stats.of([1e-3, 1e-3, 1e-3]),
                    clocks=ClockSummary(sm_mhz=1400.0, power_w=700.0, energy_j=3.0))
    assert m.power_summary() == {"rate": 2e15, "sm_mhz": 1400.0, "power_w": 700.0,
                                 "j_per_op": pytest.approx(700.0 * 1e-3 / 2e12)}
    bare = Measurement(probe="p", metric="y", kind="compute", value=1.0, unit="FLOP/s")
    assert bare.power_summary() == {"rate": 1.0, "sm_mhz": None, "power_w": None, "j_per_op": None}
