"""Knee and plateau detection on synthetic bandwidth-vs-size curves, capacity estimates, ridge fits."""

from __future__ import annotations

import numpy as np
import pytest

from hwprobe.curves import find_knees, find_plateaus, fit_roofline, plateau_exit, step_inside
from hwprobe.probes.memory.plan import log_sizes, refine_between

KIB, MIB = 1 << 10, 1 << 20


def lru(sizes, levels):
    """Sharp cliffs: levels = [(capacity, bandwidth), ..., (inf, last bandwidth)]."""
    s = np.asarray(sizes, dtype=float)
    out = np.empty_like(s)
    for i, x in enumerate(s):
        out[i] = next(bw for cap, bw in levels if x <= cap)
    return out


def random_replacement(sizes, cap, hi, lo):
    """Gradual roll-off: hit rate cap/size past the capacity; time per byte mixes the two levels."""
    s = np.asarray(sizes, dtype=float)
    h = np.minimum(1.0, cap / s)
    return 1.0 / (h / hi + (1 - h) / lo)


def sweep_with_refinement(model, lo, hi, per_octave=4):
    """What gpu.cache does: a coarse log sweep, then extra points inside each knee's bracket."""
    sizes = log_sizes(lo, hi, per_octave)
    pts = dict(zip(sizes, model(np.array(sizes)), strict=True))
    _, knees = find_knees(sizes, [pts[s] for s in sizes])
    for k in knees:
        extra = refine_between(int(k.bracket[0]), int(k.bracket[1]))
        pts.update(zip(extra, model(np.array(extra)), strict=True))
    sizes = sorted(pts)
    return find_knees(sizes, [pts[s] for s in sizes])


def test_two_plateaus_sharp_cliff():
    sizes = log_sizes(4 * KIB, 1 * MIB, 4)
    plats, knees = find_knees(sizes, lru(sizes, [(240 * KIB, 30e12), (np.inf, 10e12)]))
    assert len(plats) == 2 and len(knees) == 1
    assert plats[0].level == pytest.approx(30e12) and plats[1].level == pytest.approx(10e12)
    k = knees[0]
    assert k.bracket[0] <= 240 * KIB < k.bracket[1]
    assert k.ratio == pytest.approx(3.0)


def test_three_plateaus_with_noise():
    rng = np.random.default_rng(1)
    sizes = log_sizes(512 * KIB, 240 * MIB, 4)
    clean = lru(sizes, [(25 * MIB, 11e12), (50 * MIB, 8e12), (np.inf, 4e12)])
    noisy = clean * (1 + 0.02 * rng.standard_normal(len(sizes)))
    plats, knees = find_knees(sizes, noisy)
    assert len(plats) == 3 and len(knees) == 2
    assert [round(p.level / 1e12) for p in plats] == [11, 8, 4]
    assert 25 * MIB * 0.8 < knees[0].size < 25 * MIB * 1.2
    assert 50 * MIB * 0.8 < knees[1].size < 50 * MIB * 1.2


def test_gradual_knee_lands_near_capacity():
    sizes = log_sizes(512 * KIB, 240 * MIB, 4)
    _, knees = find_knees(sizes, random_replacement(sizes, 50 * MIB, 10e12, 3.5e12))
    assert len(knees) == 1
    assert knees[0].size == pytest.approx(50 * MIB, rel=0.10)


@pytest.mark.parametrize("cap", [200 * KIB, 230 * KIB, 256 * KIB, 300 * KIB])
def test_capacity_within_10_percent_after_refinement_sharp(cap):
    _, knees = sweep_with_refinement(lambda s: lru(s, [(cap, 30e12), (np.inf, 9e12)]), 4 * KIB, 1 * MIB)
    assert knees and knees[0].size == pytest.approx(cap, rel=0.10)


@pytest.mark.parametrize("cap", [40 * MIB, 50 * MIB, 60 * MIB])
def test_capacity_within_10_percent_after_refinement_gradual(cap):
    _, knees = sweep_with_refinement(lambda s: random_replacement(s, cap, 10e12, 4e12), 512 * KIB, 4 * 60 * MIB)
    assert knees and knees[-1].size == pytest.approx(cap, rel=0.10)


def test_flat_curve_has_one_plateau_and_no_knee():
    sizes = log_sizes(4 * KIB, 1 * MIB, 4)
    rng = np.random.default_rng(0)
    plats, knees = find_knees(sizes, 5e12 * (1 + 0.01 * rng.standard_normal(len(sizes))))
    assert len(plats) == 1 and knees == []


def test_slow_drift_is_not_a_knee():
    sizes = log_sizes(1 * MIB, 1024 * MIB, 4)
    drift = 4e12 * (1 - 0.005 * np.arange(len(sizes)))     # 0.5% per point, 20% over the sweep
    _, knees = find_knees(sizes, drift)
    assert knees == []


def test_rise_is_not_reported_as_a_knee():
    sizes = log_sizes(4 * KIB, 1 * MIB, 4)
    v = lru(sizes, [(16 * KIB, 20e12), (np.inf, 30e12)])
    plats, knees = find_knees(sizes, v)
    assert len(plats) == 2 and knees == []


def test_bad_input_is_rejected():
    with pytest.raises(ValueError):
        find_plateaus([1, 2, 2], [1, 1, 1])
    with pytest.raises(ValueError):
        find_plateaus([1, 2, 3], [1, 0, 1])
    with pytest.raises(ValueError):
        find_plateaus([1, 2, 3], [1, 2])


def test_log_sizes_are_aligned_increasing_and_dense():
    s = log_sizes(4 * KIB, 1 * MIB, 4, align=256)
    assert s[0] == 4 * KIB and s[-1] == 1 * MIB
    assert all(x % 256 == 0 for x in s)
    assert all(b > a for a, b in zip(s, s[1:], strict=False))
    assert len(s) == 33                                    # 8 octaves x 4 + 1
    ratios = np.diff(np.log2(s))
    assert ratios.max() < 0.35                             # 256 B alignment bends the first steps


def test_refine_between_is_strictly_inside():
    r = refine_between(220 * KIB, 262 * KIB, per_octave=16, align=256)
    assert r and all(220 * KIB < x < 262 * KIB for x in r)
    assert refine_between(100, 100) == []


def test_ridge_point_on_a_synthetic_roofline():
    bw, roof = 4.5e12, 60e12
    i = 2.0 ** np.arange(-3, 11)
    rng = np.random.default_rng(3)
    perf = np.minimum(i * bw, roof) * (1 + 0.01 * rng.standard_normal(len(i)))
    fit = fit_roofline(i, perf)
    assert fit.ridge == pytest.approx(roof / bw, rel=0.05)
    assert fit.bandwidth == pytest.approx(bw, rel=0.03)
    assert fit.n_memory_points >= 5
    assert 8 <= fit.reach <= 16


def test_ridge_point_rejects_nonpositive():
    with pytest.raises(ValueError):
        fit_roofline([0.0, 1.0], [1.0, 2.0])


# Real curves from an H200 run (132 SMs, 60 MiB L2, 256 KiB L1/shared per SM): (working-set bytes, TB/s).
H200_PER_SM = [
    (4096, 32.588), (5120, 32.578), (5888, 32.646), (6912, 32.7), (8192, 32.691), (9984, 32.702), (11776, 32.683),
    (13824, 32.695), (16384, 32.697), (19712, 32.7), (23296, 32.693), (27648, 32.688), (32768, 32.697),
    (39168, 32.688), (46592, 32.686), (55296, 32.657), (65536, 32.57), (78080, 32.578), (92928, 32.567),
    (110336, 32.561), (131072, 32.559), (155904, 32.555), (185600, 32.61), (220672, 32.241), (262144, 28.499),
    (311808, 23.69), (370944, 19.518), (441088, 18.043), (524288, 12.279), (623616, 13.191), (741632, 10.103),
    (881920, 8.1), (933888, 4.614)]
H200_DEVICE = [
    (524288, 16.728), (626688, 18.268), (648960, 17.12), (671744, 17.478), (695552, 18.561), (720128, 17.145),
    (745472, 16.238), (884736, 11.23), (1048576, 12.525), (1249280, 12.69), (1293568, 12.556), (1339392, 12.48),
    (1387008, 12.605), (1436160, 12.873), (1486848, 9.928), (1765376, 11.423), (2097152, 10.456), (2494464, 10.713),
    (2969600, 10.388), (3530752, 10.075), (4194304, 9.602), (4988928, 9.657), (5935104, 9.63), (7057408, 9.515),
    (8388608, 9.294), (9977856, 9.251), (11866112, 9.421), (14110720, 9.335), (16777216, 9.196), (19951616, 9.205),
    (23728128, 9.217), (28217344, 9.071), (33554432, 9.226), (39903232, 9.162), (47456256, 9.082),
    (56434688, 8.893), (67108864, 8.868), (69475584, 8.042), (71925760, 7.691), (74462208, 7.898), (77088000, 7.484),
    (79806464, 7.506), (94908416, 6.986), (112865280, 6.207), (134217728, 5.957), (159612928, 5.591),
    (189812736, 5.388), (225726464, 5.175), (251658240, 4.995)]


def test_h200_l1_curve_leaves_its_plateau_at_the_l1_size():
    s, v = zip(*H200_PER_SM, strict=True)
    _, knees = find_knees(s, v)
    assert knees == []                       # no second plateau: the old detector found nothing
    ex = plateau_exit(s, v, s[0], 128 * KIB)
    assert ex is not None and ex.bracket == (220672, 262144)
    assert ex.size == pytest.approx(256 * KIB, rel=0.10)
    assert ex.level == pytest.approx(32.65, rel=0.01)


def test_h200_l2_curve_leaves_its_plateau_at_the_l2_size():
    s, v = zip(*H200_DEVICE, strict=True)
    l2 = 60 * MIB
    ex = plateau_exit(s, v, l2 / 30, l2 / 3)
    assert ex is not None and ex.bracket == (67108864, 69475584)
    assert ex.size == pytest.approx(l2, rel=0.10)
    assert 9.2 < ex.level < 9.7              # median of 2-20 MiB, not the noisy small sizes or the 10.7 maximum


def test_plateau_exit_ignores_a_single_dip_and_handles_no_exit():
    sizes = log_sizes(4 * KIB, 1 * MIB, 4)
    v = lru(sizes, [(240 * KIB, 30e12), (np.inf, 10e12)])
    v[5] *= 0.8                              # one noisy point inside the plateau
    ex = plateau_exit(sizes, v, sizes[0], 64 * KIB)
    assert ex is not None and ex.bracket[0] <= 240 * KIB < ex.bracket[1]
    flat = np.full(len(sizes), 5e12)
    assert plateau_exit(sizes, flat, sizes[0], 64 * KIB) is None
    assert plateau_exit(sizes, flat, 1, 2) is None   # empty window


@pytest.mark.parametrize("cap", [200 * KIB, 256 * KIB, 300 * KIB])
def test_plateau_exit_on_a_curve_that_keeps_falling(cap):
    sizes = np.array(log_sizes(4 * KIB, 2 * MIB, 4), dtype=float)
    v = np.where(sizes <= cap, 32e12, 32e12 * (cap / sizes) ** 1.2)     # no second plateau
    ex = plateau_exit(sizes, v, sizes[0], cap / 2)
    assert ex is not None and ex.size == pytest.approx(cap, rel=0.10)


def test_plateau_exit_on_a_gradual_roll_off():
    sizes = log_sizes(512 * KIB, 240 * MIB, 4)
    ex = plateau_exit(sizes, random_replacement(sizes, 50 * MIB, 10e12, 3.5e12), 2 * MIB, 20 * MIB)
    assert ex is not None and ex.size == pytest.approx(50 * MIB, rel=0.15)


# ---------------------------------------------------------------- a step inside L2 (near/far partitions)

L2 = 50 * MIB


def l2_latency_ns(sizes, split=25 * MIB, near=260.0, far=320.0, dram=650.0, noise=0.01, seed=0):
    """A single-SM chase: near-partition latency up to ``split``, far partition up to L2, then DRAM."""
    rng = np.random.default_rng(seed)
    s = np.asarray(sizes, dtype=float)
    ns = np.where(s <= split, near, np.where(s <= L2, far, dram))
    return ns * (1 + noise * rng.standard_normal(s.size))


def test_a_latency_step_at_half_l2_is_found():
    sizes = log_sizes(L2 // 16, int(1.25 * L2), per_octave=4, align=1 << 16)
    ns = l2_latency_ns(sizes)
    k = step_inside(sizes, 1 / (ns * 1e-9), L2, band=0.06, min_step=1.10)
    assert k is not None
    assert 0.4 * L2 <= k.size <= 0.6 * L2
    assert 1e9 / k.upper.level == pytest.approx(260, rel=0.03) and 1e9 / k.lower.level == pytest.approx(320, rel=0.03)


@pytest.mark.parametrize("far", [260.0, 275.0])   # no step, or one below the 10% that counts
def test_no_step_or_a_small_one_is_not_a_partition(far):
    sizes = log_sizes(L2 // 16, int(1.25 * L2), per_octave=4, align=1 << 16)
    assert step_inside(sizes, 1 / l2_latency_ns(sizes, far=far), L2, band=0.06, min_step=1.10) is None


def test_the_exit_from_l2_is_not_a_step_inside_it():
    """The fall to DRAM at the L2 size lies past 0.9 x L2: it is the capacity, not a partition."""
    sizes = log_sizes(L2 // 16, 4 * L2, per_octave=4, align=1 << 16)
    assert step_inside(sizes, 1 / l2_latency_ns(sizes, far=260.0), L2, band=0.06, min_step=1.10) is None


def test_too_few_points_inside_give_no_step():
    sizes = [L2 // 4, L2 // 2, L2]
    assert step_inside(sizes, [2.0, 1.0, 1.0], L2) is None


# L2 chase latency (ns) vs set size measured by gpu.latency on 2026-11-21 (H100 80GB HBM3 SXM, 50 MiB L2;
# H200 SXM, 60 MiB L2): near partition up to ~L2/2, far partition up to L2, then DRAM.
H100_CURVE = [(3276800, 139.2), (3932160, 139.4), (4653056, 139.4), (5570560, 139.3), (6553600, 139.2),
              (7798784, 139.2), (9306112, 139.3), (11075584, 139.5), (13107200, 139.3), (15597568, 139.3),
              (18546688, 139.4), (22085632, 139.7), (26214400, 154.0), (31195136, 241.3), (37093376, 264.0),
              (44105728, 264.6), (52428800, 288.9), (62390272, 343.7), (74186752, 342.6), (88211456, 343.8)]
H200_CURVE = [(3932160, 141.9), (4718592, 141.9), (5570560, 141.9), (6619136, 141.7), (7864320, 141.8),
              (9371648, 141.8), (11141120, 141.8), (13238272, 142.0), (15728640, 141.9), (18743296, 141.7),
              (22282240, 142.0), (26476544, 142.5), (31457280, 164.2), (37421056, 250.4), (44498944, 260.2),
              (52953088, 260.6), (62914560, 284.3), (74842112, 333.3), (88997888, 332.5), (105840640, 333.2)]


@pytest.mark.parametrize("curve, l2, near, far", [(H100_CURVE, 50 * MIB, 139.3, 264.3),
                                                  (H200_CURVE, 60 * MIB, 141.9, 255.0)])
def test_measured_hopper_l2_latency_curves_show_the_far_partition(curve, l2, near, far):
    from hwprobe.probes.memory.latency import far_step

    k = far_step([s for s, _ in curve], [ns * 1e-9 for _, ns in curve], l2)
    assert k is not None and 0.4 * l2 <= k.size <= 0.6 * l2
    assert 1e9 / k.upper.level == pytest.approx(near, rel=0.01)
    assert 1e9 / k.lower.level == pytest.approx(far, rel=0.03)


# ---------------------------------------------------------------- capacities never above the physical size

def test_effective_capacity_is_the_plateau_exit_and_never_above_the_physical_size():
    from hwprobe.curves import effective_capacity

    # H200, 2026-11-24: the all-SM shared-data curve (private rows moved across SMs each launch), TB/s
    sizes = [4.3, 8.6, 13.0, 17.3, 21.6, 26.0, 30.3, 34.6, 43.3, 51.9, 60.6, 69.2, 86.5, 103.8, 121.1]
    tbps = [8.18, 8.64, 7.98, 8.66, 8.31, 8.76, 8.22, 8.71, 8.56, 4.87, 4.61, 4.61, 4.59, 4.56, 4.57]
    s = [x * MIB for x in sizes]
    cap = effective_capacity(s, tbps, 2 * MIB, 20 * MIB, 60 * MIB)
    assert cap is not None and not cap.clamped
    assert cap.exit.bracket == (43.3 * MIB, 51.9 * MIB) and 43.3 * MIB < cap.value < 51.9 * MIB
    # the old stream kernel's curve left its plateau past 60 MiB: reported as the physical size, flagged
    s2, v2 = zip(*H200_DEVICE, strict=True)
    cap2 = effective_capacity(s2, v2, 2 * MIB, 20 * MIB, 60 * MIB)
    assert cap2.clamped and cap2.value == 60 * MIB and cap2.exit.size > 60 * MIB
    flat = [5.0] * len(s)
    assert effective_capacity(s, flat, 2 * MIB, 20 * MIB, 60 * MIB) is None


@pytest.mark.parametrize("curve, l2", [(H100_CURVE, 50 * MIB), (H200_CURVE, 60 * MIB)])
def test_single_sm_latency_leaves_l2_at_the_physical_size(curve, l2):
    from hwprobe.curves import level_exit
    from hwprobe.probes.memory.latency import far_step

    sizes, ns = [s for s, _ in curve], [t * 1e-9 for _, t in curve]
    split = far_step(sizes, ns, l2)
    ex = level_exit(sizes, ns, split.lower.lo_size)
    assert ex is not None and ex.size == pytest.approx(l2, rel=0.10)
    assert ex.bracket[0] <= l2 <= ex.bracket[1] * 1.2
    assert level_exit(sizes, ns, sizes[-1] * 2) is None


def test_latency_bound_curve_shows_the_partition_step():
    """H200 2026-11-24, 4 KiB of loads in flight per SM: 1.59 TB/s to 27 MiB, 0.77 from 41 MiB."""
    sizes = [3.75, 4.31, 5.0, 5.69, 6.56, 7.5, 8.62, 9.94, 11.38, 13.06, 15.0, 17.25, 19.81, 22.75, 26.12, 30.0,
             34.5, 39.62, 45.5, 52.25, 60.0, 68.94, 79.19, 91.0, 104.5, 120.0]
    tbps = [1.59, 1.59, 1.61, 1.58, 1.6, 1.59, 1.6, 1.59, 1.6, 1.6, 1.59, 1.59, 1.59, 1.59, 1.59, 1.27, 0.93, 0.79,
            0.77, 0.76, 0.71, 0.7, 0.7, 0.69, 0.71, 0.69]
    k = step_inside([x * MIB for x in sizes], tbps, 60 * MIB, band=0.10, min_step=1.3, plateau_points=2)
    assert k is not None and 0.4 < k.size / (60 * MIB) < 0.55 and k.ratio > 1.9


def test_curve_readers_refuse_bad_input_with_their_reason():
    """Issue 35 (mutation run): each refusal says what is wrong; sizes closer than 1 apart are still increasing."""
    with pytest.raises(ValueError, match=r"^sizes and values must be 1-D arrays of the same length$"):
        find_plateaus([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match=r"^sizes must be strictly increasing$"):
        find_plateaus([1, 2, 2], [1, 1, 1])
    with pytest.raises(ValueError, match=r"^values must be positive and finite$"):
        find_plateaus([1, 2, 3], [1, 0, 1])
    (p,) = find_plateaus([1.0, 1.25, 1.5, 1.75], [5.0, 5.0, 5.0, 5.0])
    assert (p.start, p.stop, p.level, p.lo_size, p.hi_size) == (0, 4, 5.0, 1.0, 1.75)


# ---------------------------------------------------------------- issue 35 (mutation run, merged code): edges by hand

def test_step_inside_at_its_defaults_counts_the_points_up_to_top_frac_and_stops_at_hi_frac():
    """Six points at or below 0.9 x capacity (the last exactly there) are enough; a drop at 0.85 x capacity (past
    hi_frac 0.8) is the level's own exit, not a step inside it; the drop at half the capacity is."""
    cap = 10.0
    sizes, vals = [2.0, 3.0, 4.0, 6.0, 7.0, 9.0], [10.0, 10.0, 10.0, 5.0, 5.0, 5.0]
    k = step_inside(sizes, vals, cap)
    assert k is not None and 4.0 < k.size < 6.0 and k.ratio == 2.0
    assert step_inside(sizes[:-1], vals[:-1], cap) is None                  # five points: too few
    late = step_inside([2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 8.6, 8.8, 9.0], [10.0] * 7 + [5.0] * 3, cap)
    assert late is None                                                       # the knee lies past 0.8 x capacity
    past = step_inside(sizes + [9.5, 9.8, 9.9], vals + [1.0, 1.0, 1.0], cap)
    assert past is not None and past.ratio == 2.0                           # points past 0.9 x capacity left out


def test_a_small_step_is_found_only_with_the_band_and_step_asked_for():
    """A 12% step: two plateaus at band 0.06 and min_step 1.10 (a near/far L2 partition), one plateau at the
    defaults (band 0.15 holds both levels); both options reach find_plateaus through find_knees and step_inside."""
    sizes = [float(x) for x in range(1, 13)]
    vals = [112.0] * 6 + [100.0] * 6
    plats, knees = find_knees(sizes, vals, band=0.06, min_step=1.10)
    assert len(plats) == 2 and len(knees) == 1 and knees[0].bracket == (6.0, 7.0)
    assert find_knees(sizes, vals)[1] == []
    assert find_knees(sizes, vals, band=0.06)[1] == []                     # 1.12 < the default min_step 1.15
    k = step_inside(sizes, vals, 13.0, band=0.06, min_step=1.10)
    assert k is not None and k.bracket == (6.0, 7.0)
    assert step_inside(sizes, vals, 13.0, band=0.06) is None


def test_a_rise_before_a_drop_still_gives_the_drop_its_knee():
    sizes = [float(x) for x in range(1, 13)]
    plats, knees = find_knees(sizes, [10.0] * 4 + [20.0] * 4 + [5.0] * 4)
    assert [p.level for p in plats] == [10.0, 20.0, 5.0]
    assert len(knees) == 1 and knees[0].upper.level == 20.0 and knees[0].bracket == (8.0, 9.0)


def test_a_dip_inside_the_upper_plateau_does_not_move_the_knee():
    """The walk to the threshold crossing starts at the plateau's last point: a dip below the threshold in the
    middle of the plateau (97 on a 100 plateau, threshold 97.8 for a drop to 80) is not the knee."""
    sizes = [float(x) for x in range(1, 11)]
    _, knees = find_knees(sizes, [100.0, 100.0, 97.0, 100.0, 100.0, 100.0, 80.0, 80.0, 80.0, 80.0])
    assert len(knees) == 1 and knees[0].bracket == (6.0, 7.0)


def test_a_slow_drift_over_three_levels_merges_into_one_plateau():
    """Levels 100, 106, 112 (separate runs at band 0.03): the first two merge (6% < min_step), then the merged
    level and 112 (under 9% apart) merge again."""
    sizes = [float(x) for x in range(1, 13)]
    (p,) = find_plateaus(sizes, [100.0] * 4 + [106.0] * 4 + [112.0] * 4, band=0.03)
    assert (p.start, p.stop, p.level) == (0, 12, 106.0)


def test_plateau_exit_needs_two_points_below_and_refuses_repeated_sizes():
    sizes = [float(x) for x in range(1, 11)]
    vals = [10.0, 10.0, 10.0, 10.0, 8.0, 8.0, 10.0, 10.0, 5.0, 5.0]
    ex = plateau_exit(sizes, vals, 1.0, 3.0)
    assert ex is not None and ex.bracket == (4.0, 5.0) and ex.after == 8.0    # two points below: an exit
    assert plateau_exit(sizes, vals, 1.0, 3.0, confirm=3).bracket == (8.0, 9.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        plateau_exit([1.0, 2.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0], 1.0, 2.0)


def test_effective_capacity_passes_its_drop_on():
    from hwprobe.curves import effective_capacity

    sizes = [float(x) for x in range(1, 9)]
    vals = [10.0, 10.0, 10.0, 10.0, 8.0, 8.0, 5.0, 5.0]
    assert effective_capacity(sizes, vals, 1.0, 3.0, 100.0).exit.bracket == (4.0, 5.0)
    assert effective_capacity(sizes, vals, 1.0, 3.0, 100.0, drop=0.3).exit.bracket == (6.0, 7.0)


def test_level_exit_on_a_plateau_to_the_end_and_one_of_four_points():
    from hwprobe.curves import level_exit

    sizes = [float(x) for x in range(1, 9)]
    assert level_exit(sizes, [100.0] * 8, 1.0) is None                       # never leaves: no exit, no error
    ex = level_exit(sizes[:6], [100.0, 100.0, 100.0, 100.0, 200.0, 200.0], 1.0)
    assert ex is not None and ex.level == pytest.approx(1 / 100.0) and ex.bracket == (4.0, 5.0)


def test_fit_roofline_by_hand():
    """No point under half the roof: the slope is the first point's rate / intensity; the reach interpolates
    log-log between intensities two octaves apart."""
    fit = fit_roofline([2.0, 4.0], [80.0, 100.0])
    assert fit.n_memory_points == 0 and fit.bandwidth == 40.0 and fit.ridge == 2.5
    fit = fit_roofline([1.0, 4.0, 16.0], [10.0, 40.0, 100.0])
    t = (np.log(90.0) - np.log(40.0)) / (np.log(100.0) - np.log(40.0))
    assert fit.reach == pytest.approx(2.0 ** (2.0 + 2.0 * t), rel=1e-12)
    assert fit.bandwidth == 10.0 and fit.n_memory_points == 2
