"""The sustained points' settle (hwprobe.timing.steady): fixed, until steady, or to its cap."""

import pytest

from hwprobe.timing import steady
from hwprobe.timing.steady import Sustain
from hwprobe.vocab import SettleStop, WindowStop


class _Chunks:
    """A fake device: each chunk returns the next time per call and advances a clock by chunk_s."""

    def __init__(self, times, chunk_s=0.05):
        self.times, self.chunk_s, self.t, self.ran, self.fixed = list(times), chunk_s, 0.0, 0, 0

    def chunk(self) -> tuple[float, float]:
        self.t += self.chunk_s
        x = self.times[min(self.ran, len(self.times) - 1)]
        self.ran += 1
        return self.chunk_s, x

    def run_fixed(self) -> None:
        self.fixed += 1
        self.t += 0.25

    def clock(self) -> float:
        return self.t


def _settle(times, rule):
    dev = _Chunks(times, rule.chunk_s)
    return steady.settle(dev.chunk, dev.run_fixed, rule, clock=dev.clock), dev


def test_fixed_settle_runs_once_untimed():
    got, dev = _settle([1.0], Sustain(0.25, 0.4))
    assert (got.stop, dev.fixed, dev.ran, got.chunks) == (SettleStop.FIXED, 1, 0, [])
    assert got.params() == {"settle_ran_s": 0.25, "settle_stop": "fixed"}
    # settle_max_s equal to settle_s is the fixed settle too
    assert _settle([1.0], Sustain(0.25, 0.4, 0.25))[0].stop == SettleStop.FIXED


def test_a_ramp_keeps_settling_until_the_last_four_chunks_agree():
    # 4.50 -> 5.03 ms as in the H200 FP8 window, then flat at 5.0 (within 2%) from chunk 8 on
    ramp = [4.50, 4.60, 4.70, 4.80, 4.90, 5.03, 4.98, 5.00, 5.01, 4.99, 5.00, 5.00]
    got, dev = _settle(ramp, Sustain(0.25, 0.4, 1.0))
    assert got.stop == SettleStop.STEADY
    # chunks 5..8 (4.90, 5.03, 4.98, 5.00) spread 2.65%; 6..9 (5.03, 4.98, 5.00, 5.01) spread 1.0%
    assert dev.ran == 9 and got.chunks == ramp[:9]
    assert got.seconds == pytest.approx(0.45)
    p = got.params()
    assert p["settle_stop"] == "steady" and p["settle_chunks_us"][0] == 4.5e6 and p["settle_last_spread"] <= 0.02


def test_steady_from_the_start_still_settles_the_minimum():
    got, dev = _settle([1.0] * 50, Sustain(0.4, 0.4, 1.0))
    assert got.stop == SettleStop.STEADY and dev.ran == 8 and got.seconds == pytest.approx(0.4)


def test_a_swing_that_never_settles_stops_at_the_cap():
    swing = [1.0, 1.06, 1.0, 1.06] * 20
    got, dev = _settle(swing, Sustain(0.25, 0.4, 1.0))
    assert got.stop == SettleStop.CAP and dev.ran == 20 and got.seconds == pytest.approx(1.0)
    assert got.params()["settle_last_spread"] == pytest.approx(0.06)


def test_steady_needs_the_whole_span():
    rule = Sustain(0.0, 0.4, 1.0)
    assert not steady.steady([1.0, 1.0, 1.0], rule)          # three chunks are 0.15 s, under the 0.2-s span
    assert steady.steady([9.0, 1.0, 1.0, 1.01, 1.0], rule)  # only the last four count
    assert not steady.steady([1.0, 1.0, 1.03, 1.0], rule)


@pytest.mark.parametrize("args", [(-0.1, 0.4), (0.25, 0.0), (0.5, 0.4, 0.25), (0.25, 0.4, 1.0, 0.05, 0.2, 0.02, 0.3)])
def test_bad_sustain_is_refused(args):
    with pytest.raises(ValueError, match="sustain"):
        Sustain(*args)


def test_timed_chunks_need_a_span():
    # a span of 0 would compare every chunk (chunks[-0:]); settle() always passes the rule's
    with pytest.raises(ValueError, match="span"):
        steady.Settled(0.3, SettleStop.STEADY, [1.0, 1.0, 1.0])
    assert steady.Settled(0.25, SettleStop.FIXED).level is None
    # the level is the median of the last span's chunks, not of the ramp before it
    assert steady.Settled(0.3, SettleStop.STEADY, [4.2, 4.9, 4.6, 4.5, 4.6], 4).level == pytest.approx(4.6)


class _Windows:
    """A fake device for best_window: each window returns the next seconds per call."""

    def __init__(self, per_call):
        self.per_call, self.ran = list(per_call), 0

    def __call__(self):
        t = self.per_call[self.ran]
        self.ran += 1
        return f"w{self.ran - 1}", t


RULE = Sustain(0.25, 0.4, 1.0, sustain_max_s=2.0)


def test_a_window_at_the_settles_level_is_the_only_one():
    dev = _Windows([4.58, 4.40])
    got = steady.best_window(dev, 4.55, RULE)           # 0.7% over the level: within the 2% tolerance
    assert (dev.ran, got.kept, got.stop, got.kept_index) == (1, "w0", WindowStop.LEVEL, 0)
    assert got.note() is None
    assert got.params() == {"settle_s": 0.25, "sustain_s": 0.4, "settle_max_s": 1.0, "sustain_max_s": 2.0,
                            "sustain_windows_us": [4580000.0], "sustain_window_kept": 0,
                            "sustain_window_stop": "level"}


def test_a_window_on_the_lower_clock_level_is_followed_by_more_and_the_fastest_kept():
    # the H200 FP8 2:4 toggle: 4.78 ms (low level), 4.80, then 4.60 (back at the settle's 4.55 level)
    dev = _Windows([4.78, 4.80, 4.60, 4.0])
    got = steady.best_window(dev, 4.55, RULE)
    assert (dev.ran, got.kept, got.stop, got.kept_index) == (3, "w2", WindowStop.LEVEL, 2)
    assert got.per_call_s == [4.78, 4.80, 4.60] and "fastest of 3" in got.note()


def test_windows_stop_at_the_cap_keeping_the_fastest():
    dev = _Windows([4.9, 4.7, 4.8, 4.75, 4.85, 4.0])
    got = steady.best_window(dev, 4.55, RULE)            # 2.0 s of 0.4-s windows: five
    assert (dev.ran, got.kept, got.stop) == (5, "w1", WindowStop.CAP)


@pytest.mark.parametrize("level, rule", [(None, RULE), (4.55, Sustain(0.25, 0.4, 1.0))])
def test_one_window_without_a_level_or_without_a_cap(level, rule):
    dev = _Windows([4.9, 4.5])
    got = steady.best_window(dev, level, rule)
    assert (dev.ran, got.kept, got.stop) == (1, "w0", WindowStop.ONE)


def test_scaled_scales_every_duration_but_the_chunking():
    q = Sustain(0.25, 0.4, 1.0).scaled(0.2)
    assert (q.settle_s, q.sustain_s, q.settle_max_s, q.chunk_s) == pytest.approx((0.05, 0.08, 0.2, 0.05))
    assert Sustain(0.25, 0.4).scaled(0.2).settle_max_s is None
    w = Sustain(0.25, 0.4, 1.0, sustain_max_s=2.0)
    assert w.scaled(0.2).sustain_max_s == pytest.approx(0.4) and w.scaled(0.2).max_windows == w.max_windows == 5


def test_the_rule_records_itself():
    assert Sustain(0.25, 0.4, 1.0).params() == {"settle_s": 0.25, "sustain_s": 0.4, "settle_max_s": 1.0}
    assert Sustain(0.5, 1.5).params() == {"settle_s": 0.5, "sustain_s": 1.5}      # fixed: no cap to name
    assert Sustain(0.25, 0.4, 1.0, sustain_max_s=2.0).params()["sustain_max_s"] == 2.0


def test_calls_per_chunk_fill_a_chunk_and_never_fall_to_none():
    rule = Sustain(0.25, 0.4, 1.0)                       # chunk_s 0.05 (CHUNK_S)
    assert rule.calls_per_chunk(rule.chunk_s / 10) == 10
    assert rule.calls_per_chunk(rule.chunk_s / 10 * 1.01) == 10     # 9.9 calls: rounded up
    assert rule.calls_per_chunk(1.0) == 1                # a call longer than a chunk: one
