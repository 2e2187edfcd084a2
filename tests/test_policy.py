"""The one timing policy: calibration and stopping rules, with a mocked clock."""

import pytest

from hwprobe.timing import policy


def test_calibrate_grows_until_a_quarter_of_the_target_then_scales():
    calls = []

    def timer(n):                  # 20 us fixed cost + 1 us per unit
        calls.append(n)
        return 20e-6 + n * 1e-6

    c = policy.calibrate(timer, 0.01, start=1)
    assert c.timed_s >= 0.25 * 0.01 and calls[0] == 1 and calls == sorted(calls)
    assert c.count == round(0.01 / c.unit_s)
    assert 9000 < c.count < 10_000                  # the fixed cost hardly biases the per-unit time
    assert policy.calibrate(timer, 0.01, start=4, hi=100).count <= 100


def test_calibrate_refuses_nonsense_and_zero_time():
    with pytest.raises(ValueError):
        policy.calibrate(lambda n: 1.0, 0.0)
    with pytest.raises(RuntimeError):
        policy.calibrate(lambda n: 0.0, 0.01, hi=1 << 20, max_steps=3)
    assert policy.calibrate(lambda n: 0.0, 0.01, hi=8).count == 8       # too fast to time even at the cap


def test_the_last_step_is_timed_at_the_count_it_reports():
    seen = []
    c = policy.calibrate(lambda n: seen.append(n) or n * 1e-6, 1.0, start=1, reach=0.5, grow=8, max_steps=2)
    assert seen == [1, 8] and c.timed_count == 8 and c.unit_s == pytest.approx(1e-6)


def test_noise_is_the_relative_standard_error_of_the_median():
    import numpy as np

    from hwprobe.measurement import noise

    rng = np.random.default_rng(1)
    x = 1.0 + 0.01 * rng.standard_normal(400)
    assert noise(x) == pytest.approx(1.2533 * 0.01 / 20, rel=0.15)        # sqrt(pi/2) sigma / sqrt(n)
    quiet = [1.0, 1.001, 0.999, 1.0005, 0.9995]
    assert noise(quiet) < 0.001
    # a clock that drops for the last two of five samples: the median hardly moves, but the samples disagree
    assert noise([1.0, 1.001, 0.999, 1.1, 1.12]) > 0.02
    assert noise([1.0, 2.0, 1.0]) > 0.2                                     # ties do not hide a disagreement
    assert noise([1.0, 1.1]) is None and noise([]) is None                  # under 3 samples: no estimate


def test_stopping_rules():
    R = policy.StopReason
    r = policy.StoppingRule("t", sample_s=0.001, min_samples=3, max_samples=6, max_noise=0.01)
    assert policy.stop_reason(r, [0.001, 0.001], 0.0) is None
    assert policy.stop_reason(r, [0.001, 0.001, 0.001], 0.0) == R.NOISE         # quiet: stop at the minimum
    assert not policy.done(r, [0.001, 0.002, 0.0015], 0.0)                      # noisy: go on
    assert policy.stop_reason(r, [0.001, 0.002] * 3, 0.0) == R.MAX_SAMPLES       # up to the maximum
    assert policy.stop_reason(r, [0.001, 0.002, 0.0015], 60.0) == R.TIMEOUT      # the wall clock ends it
    t = policy.StoppingRule("t", sample_s=0.1, min_samples=3, max_samples=60, max_noise=0.001, max_total_s=0.5)
    assert policy.stop_reason(t, [0.1, 0.2, 0.15, 0.1, 0.2], 0.0) == R.MAX_TIME  # timed seconds capped ...
    assert policy.stop_reason(t, [0.3, 0.3], 0.0) is None                       # ... but never under the minimum
    fixed = policy.StoppingRule("f", sample_s=0.001, min_samples=3, max_samples=3)
    assert policy.stop_reason(fixed, [0.001, 0.002, 0.003], 0.0) == R.MINIMUMS   # no noise target: a fixed count
    e = policy.ENERGY
    assert not policy.done(e, [0.005] * 10, 0.1)                      # 50 ms of work: below the energy window
    assert policy.stop_reason(e, [0.005] * 250, 1.3) == R.MINIMUMS                # the window sets the count
    assert policy.stop_reason(e, [0.005] * 3, e.timeout_s) == R.TIMEOUT  # the timeout ends it regardless


def test_rules_refuse_what_cannot_work():
    with pytest.raises(ValueError, match="min_samples <= max_samples"):
        policy.StoppingRule("t", 0.001, min_samples=5, max_samples=3)
    with pytest.raises(ValueError, match="noise target needs min_samples >= 3"):
        policy.StoppingRule("t", 0.001, min_samples=2, max_samples=5, max_noise=0.01)


class _Stream:
    """A synthetic GPU: ``timed(k)`` returns the next k samples of a stream and advances a fake wall clock."""

    def __init__(self, samples):
        self.samples, self.at, self.calls, self.now = list(samples), 0, [], 0.0

    def timed(self, k):
        self.calls.append(k)
        out = self.samples[self.at:self.at + k]
        self.at += k
        self.now += sum(out)
        return out

    def clock(self):
        return self.now


def test_the_ceiling_rule_stops_early_on_quiet_samples_and_goes_on_on_noisy_ones():
    import numpy as np

    quiet = _Stream(0.005 * (1 + 0.0005 * np.random.default_rng(0).standard_normal(40)))
    got = policy.sample(quiet.timed, policy.CEILING, clock=quiet.clock)
    assert len(got.samples) == policy.CEILING.min_samples == 5 and quiet.calls == [5]
    assert got.stop == policy.StopReason.NOISE and got.noise <= policy.CEILING.max_noise

    noisy = _Stream(0.005 * (1 + 0.05 * np.random.default_rng(0).standard_normal(40)))
    got = policy.sample(noisy.timed, policy.CEILING, clock=noisy.clock)
    assert len(got.samples) == policy.CEILING.max_samples == 10
    assert noisy.calls == [5, 2, 2, 1]                   # the minimum at once, then half the minimum at a time
    assert got.stop == policy.StopReason.MAX_SAMPLES and got.noise > policy.CEILING.max_noise

    settling = _Stream([0.00505, 0.00495, 0.00505, 0.00495, 0.0050] + [0.005] * 10)   # agrees after a few more
    got = policy.sample(settling.timed, policy.CEILING, clock=settling.clock)
    assert 5 < len(got.samples) < 10 and got.stop == policy.StopReason.NOISE


def test_sample_takes_batches_until_the_rule_says_stop():
    seen = []

    def timed(k):
        seen.append(k)
        return [0.1] * k

    out = policy.sample(timed, policy.StoppingRule("t", 0.1, min_samples=4, max_samples=40, min_total_s=1.0),
                        batch=4, clock=lambda: 0.0)
    assert len(out.samples) == 12 and seen == [4, 4, 4] and out.stop == policy.StopReason.MINIMUMS


# The sample lengths and counts the probes kept as their own constants before the policy held them (dram.py,
# cache.py, hopper.py, host.py, p2pplan.py, roofline.py, cpu/compute.py, mma.py, cublas.py): unchanged.
# Since issue 33 the ceiling rules stop early on quiet samples: their old count is the cap (a noisy figure gets
# as many samples as before, a quiet one at least half), and their sample lengths stay.
BEFORE = {"screen": (0.002, 2), "stream_sizes": (0.004, 3), "l2_screen": (0.001, 2), "sweep": (0.002, 3),
          "ceiling": (0.005, 10), "trace": (0.003, 3), "latency": (None, 5), "stream": (0.004, None),
          "library": (0.005, 10), "sustained": (0.05, None), "instruction": (0.010, None),
          "instruction_quick": (0.004, None), "search": (0.003, None), "cpu_ceiling": (0.2, 10),
          "cpu_quick": (0.03, None), "graph_point": (0.001, 3)}


def test_named_rules_keep_the_probes_old_numbers():
    for name, (sample_s, samples) in BEFORE.items():
        r = policy.rule(name)
        assert r.name == name
        if sample_s is not None:
            assert r.sample_s == sample_s, name
        if samples is not None and r.max_noise == 0:
            assert r.min_samples == r.max_samples == samples, name
        elif samples is not None:        # adaptive: never more than before when quiet, never fewer when noisy
            assert 3 <= r.min_samples <= samples <= r.max_samples, name
            assert r.min_samples >= samples // 2, name


def test_a_rule_is_asked_for_by_name_with_parameters():
    assert policy.rule("ceiling") is policy.CEILING
    r = policy.rule("energy", min_samples=4, min_total_s=2.5)
    assert (r.name, r.min_samples, r.min_total_s, r.sample_s) == ("energy", 4, 2.5, policy.ENERGY.sample_s)
    assert policy.ENERGY.min_samples == 10                              # the registry's rule is untouched
    with pytest.raises(ValueError, match="no stopping rule 'fast'; rules: ceiling, screen"):
        policy.rule("fast")
    with pytest.raises(ValueError, match="has no parameter samples"):
        policy.rule("sweep", samples=3)
    with pytest.raises(ValueError, match="has no parameter name"):
        policy.rule("sweep", name="other")


def test_no_probe_keeps_its_own_sample_length():
    """Sample lengths and counts live in the policy: a probe module-level constant named like one is refused."""
    import ast
    import pathlib
    import re

    root = pathlib.Path(policy.__file__).resolve().parents[1] / "probes"
    pattern = re.compile(r"(^|_)(SAMPLE_S|SAMPLES|TARGET_S|SWEEP_S|SCREEN_S|CEILING_S|SEARCH_S)(_QUICK)?$")
    found = []
    for f in sorted(root.rglob("*.py")):
        if "calibration" in f.parts:        # the prediction calibration family: not yet on the policy
            continue
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.Assign):
                found += [f"{f.name}:{t.id}" for t in node.targets if isinstance(t, ast.Name) and pattern.search(t.id)]
    assert not found, found


def test_the_rested_rule_takes_five_samples_in_one_batch():
    """gpu.gemm_fp8's rested window: one batch of five, whatever their noise (a later batch would begin after a host
    sync, whose first call runs slow under the power cap)."""
    batches = []

    def timed(k):
        batches.append(k)
        return [6e-3, 5.8e-3, 6.9e-3, 5.8e-3, 7.5e-3][:k]      # noisy: the ceiling rule would take more

    got = policy.sample(timed, policy.rule("rested"))
    assert batches == [5] and len(got.samples) == 5
    more = policy.sample(lambda k: [6e-3, 5.8e-3, 6.9e-3, 5.8e-3, 7.5e-3, 6e-3][:k], policy.CEILING)
    assert len(more.samples) > 5                                  # the ceiling rule goes on in batches
