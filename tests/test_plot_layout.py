"""Plots a reader can read (issue 23, item 16): every figure-level text (title, subtitle, notes) inside the figure
and clear of the others and of the axes; outlier labels on the fleet plot do not overprint; an overlay's legend
covers no data point. Checked with matplotlib's own renderer on the committed profiles."""

from __future__ import annotations

import contextlib

import pytest

from hwprobe.report import plots
from hwprobe.report.source import load_run
from tests.refs import H100_DEFAULT, H100_FULL, H200_DEFAULT, H200_FULL

RUNS = {
    "h200-full": [H200_FULL],
    "h100-full": [H100_FULL],
    "h200-default": [H200_DEFAULT],
    "overlay": [H200_FULL, H100_FULL],
    "overlay-default": [H200_DEFAULT, H100_DEFAULT],
    "overlay-26": [H100_FULL, H200_FULL],      # issue 35's example
}


def _runs(key):
    return [load_run(p) for p in RUNS[key]]


def _boxes(fig):
    """Figure-level texts with their pixel boxes (empty texts skipped)."""
    r = fig.canvas.get_renderer()
    texts = [t for t in fig.texts if t.get_text().strip() and t.get_visible()]
    if fig._suptitle is not None and fig._suptitle.get_text() and fig._suptitle not in texts:
        texts.append(fig._suptitle)
    return r, [(t.get_text()[:40], t.get_window_extent(r)) for t in texts]


def _overlap(a, b, slack=1.0) -> bool:
    return a.x0 < b.x1 - slack and b.x0 < a.x1 - slack and a.y0 < b.y1 - slack and b.y0 < a.y1 - slack


@contextlib.contextmanager
def _drawn(kind: str, key: str):
    """The figure of ``kind`` for the runs ``key``, drawn (skipped where those runs have no data for it)."""
    try:
        fig = plots.figure(kind, _runs(key))
    except plots.NoData:
        pytest.skip(f"{kind}: no data in {key}")
    try:
        fig.canvas.draw()
        yield fig
    finally:
        plots.close(fig)


@pytest.mark.parametrize("key", sorted(RUNS))
@pytest.mark.parametrize("kind", plots.KINDS)
def test_figure_texts_fit_and_do_not_overlap(key, kind):
    with _drawn(kind, key) as fig:
        r, boxes = _boxes(fig)
        page = fig.bbox
        for name, b in boxes:
            assert b.x0 >= page.x0 - 1 and b.x1 <= page.x1 + 1 and b.y0 >= page.y0 - 1 and b.y1 <= page.y1 + 1, \
                f"{kind}/{key}: {name!r} runs off the figure ({b} vs {page})"
        for i, (n1, b1) in enumerate(boxes):
            for n2, b2 in boxes[i + 1:]:
                assert not _overlap(b1, b2), f"{kind}/{key}: {n1!r} overprints {n2!r}"
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            head = ax.title.get_window_extent(r) if ax.title.get_text() else ax.bbox
            area = ax.bbox.union([ax.bbox, head])
            for name, b in boxes:
                assert not _overlap(b, area, slack=2.0), f"{kind}/{key}: {name!r} overprints a panel"


def _points_on(line, ax, per_segment: int = 12):
    """Display points along a data line (its vertices and points between them)."""
    import numpy as np

    xy = np.asarray(line.get_xydata(), dtype=float)
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) == 0:
        return xy
    if line.get_linestyle() not in ("None", "none", "") and len(xy) > 1:
        t = np.linspace(0, 1, per_segment, endpoint=False)
        if ax.get_xscale() == "log" or ax.get_yscale() == "log":
            pts = ax.transData.transform(xy)          # interpolate on screen, where the segment is drawn
            seg = [pts[i] + (pts[i + 1] - pts[i]) * s for i in range(len(pts) - 1) for s in t]
            return np.vstack([pts, np.asarray(seg)])
        seg = [xy[i] + (xy[i + 1] - xy[i]) * s for i in range(len(xy) - 1) for s in t]
        xy = np.vstack([xy, np.asarray(seg)])
    return ax.transData.transform(xy)


@pytest.mark.parametrize("key", ["overlay", "h200-full", "overlay-default"])
@pytest.mark.parametrize("kind", plots.KINDS)
def test_no_legend_hides_a_curve(key, kind):
    with _drawn(kind, key) as fig:
        r = fig.canvas.get_renderer()
        for ax in fig.axes:
            leg = ax.get_legend()
            if leg is None or not ax.get_visible():
                continue
            box = leg.get_window_extent(r)
            for line in ax.get_lines():
                if line.get_transform() != ax.transData or not line.get_visible():
                    continue                              # axhline/axvline span the axes: reference lines
                pts = _points_on(line, ax)
                inside = [(x, y) for x, y in pts if box.x0 < x < box.x1 and box.y0 < y < box.y1
                          and ax.bbox.x0 <= x <= ax.bbox.x1 and ax.bbox.y0 <= y <= ax.bbox.y1]
                assert not inside, f"{kind}/{key}: the legend of {ax.get_title()!r} hides {line.get_label()!r}"


def test_fleet_outlier_names_do_not_overprint(tmp_path):
    """A synthetic fleet (the committed H200 profile, units with planted faults) with 26 outliers, several in the
    same column at the same height: every name drawn is clear of the others and of every outlier's dot."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hwprobe.fleet import compare
    from hwprobe.fleet.records import record_of
    from hwprobe.fleet.render import draw as strip_plot
    from hwprobe.fleet.synthetic import make_fleet

    base = json.loads((H200_FULL / "profile.json").read_text())
    units = make_fleet(base, 30, {3: "power_cap", 5: "power_cap", 6: "thermal", 11: "thermal", 17: "driver",
                                  22: "memory"}, seed=1)
    fleet = compare.compare([record_of(d, d["environment"]["host"], d["environment"]["host"]) for d in units])
    assert len(fleet.outliers) >= 10
    captured = {}
    real_close = plt.close
    plt.close = lambda fig=None: captured.setdefault("fig", fig)      # keep the figure to measure it
    try:
        strip_plot(fleet, tmp_path / "fleet.png")
    finally:
        plt.close = real_close
    fig = captured["fig"]
    r = fig.canvas.get_renderer()
    ax = fig.axes[0]
    names = [t for t in ax.texts if t.get_text().startswith("node-")]
    assert len(names) >= 8
    boxes = [t.get_window_extent(r) for t in names]
    for i, a in enumerate(boxes):
        assert all(not _overlap(a, b) for b in boxes[i + 1:]), names[i].get_text()
    dots = [c for c in ax.collections if c.get_edgecolor().size and tuple(c.get_edgecolor()[0][:3]) == (1, 0, 0)]
    pts = [p for c in dots for p in ax.transData.transform(c.get_offsets())]
    for t, b in zip(names, boxes, strict=True):
        assert not any(b.x0 + 1 < x < b.x1 - 1 and b.y0 + 1 < y < b.y1 - 1 for x, y in pts), t.get_text()
    leg = ax.get_legend().get_window_extent(r)
    assert leg.x0 >= ax.bbox.x1 - 1                        # the legend sits beside the axes
    real_close(fig)


@pytest.mark.parametrize("key", ["overlay", "h200-full", "h100-full"])
def test_latency_labels_do_not_overprint(key):
    """Two runs' labels at one level's diamond were drawn on top of each other (L2 142 / 144 ns, DRAM 332 / 348)."""
    fig = plots.figure("latency", _runs(key))
    try:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        ax = fig.axes[0]
        texts = [t for t in ax.texts if t.get_text().strip() and t.get_visible()]
        boxes = [(t.get_text()[:30], t.get_window_extent(r)) for t in texts]
        for i, (n1, b1) in enumerate(boxes):
            for n2, b2 in boxes[i + 1:]:
                assert not _overlap(b1, b2), f"{key}: {n1!r} overprints {n2!r}"
    finally:
        plots.close(fig)


# Issue 35, item 16: what each plot draws, checked where it lies.

def _bars(ax):
    from matplotlib.patches import Rectangle

    return [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() > 0 and p.get_width() > 0]


@pytest.mark.parametrize("key", ["overlay-26", "h200-full"])
def test_align_key_covers_no_bar(key):
    """align.png drew a legend in every panel, over the bars."""
    with _drawn("align", key) as fig:
        r = fig.canvas.get_renderer()
        legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
        assert legends
        panels = [ax for ax in fig.axes if ax.get_visible()]
        for leg in legends:
            box = leg.get_window_extent(r)
            assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1
            for ax in panels:
                assert not _overlap(box, ax.get_tightbbox(r)), f"{key}: the key overprints {ax.get_title()!r}"
                assert not any(_overlap(box, b.get_window_extent(r)) for b in _bars(ax))


def test_roofline_gives_each_precision_of_each_run_one_label():
    """roofline.png labelled H100's FP16 wgmma "956" on its own line, beside "FP16/BF16 wgmma: H100 930, ..."
    where 930 was H100's BF16 figure."""
    with _drawn("roofline", "overlay-26") as fig:
        tensor = next(ax for ax in fig.axes if ax.get_title(loc="left") == "Tensor Cores")
        labels = [t.get_text() for t in tensor.texts if t.get_fontweight() == "bold"]
        assert "FP16/BF16 wgmma: H100 956/931, H200 913/915 TFLOP/s" in labels
        named = [p.split(":")[0] for t in labels for p in t.split(" · ")]
        per_prec = [(prec, n.split(" ", 1)[1]) for n in named for prec in n.split(" ", 1)[0].split("/")]
        assert len(per_prec) == len(set(per_prec)), labels                 # no precision on two labels


def test_roof_label_names_the_precision_a_run_holds_alone():
    from types import SimpleNamespace

    from hwprobe.report.plots.roofline import Roof, roof_label

    def roof(prec, value, run):
        return Roof(prec, "tensor_core", value, "FLOP/s", f"{prec}.tensor_core.wgmma", None, run, 0.0, "wgmma")

    runs = [SimpleNamespace(label="H100 80GB HBM3"), SimpleNamespace(label="H200")]
    g = [roof("fp16", 913e12, 1), roof("bf16", 915e12, 1), roof("bf16", 930e12, 0)]
    assert roof_label(g, runs) == "FP16/BF16 wgmma: H100 BF16 930, H200 913/915 TFLOP/s"


def test_analyze_plot_note_and_layer_names_stay_inside_and_apart(tmp_path, monkeypatch):
    """analyze --plot: the "not drawn" note sat in the axes' corner, under the memory slope, and two layer names
    were drawn over each other (inception4e / inception3b on googlenet)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from hwprobe.analysis import analyze
    from hwprobe.report.plots.layers import plot_layers

    kept, real_close = {}, plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.setdefault("fig", fig))     # keep it to measure it
    plot_layers(analyze("googlenet", str(H200_FULL)), tmp_path / "a.png")
    fig = kept["fig"]
    r = fig.canvas.get_renderer()
    ax = fig.axes[0]
    note = next(t for t in fig.texts if t.get_text().startswith("not drawn: "))
    nb = note.get_window_extent(r)
    assert fig.bbox.x0 <= nb.x0 and nb.x1 <= fig.bbox.x1 and fig.bbox.y0 <= nb.y0
    assert not _overlap(nb, ax.get_tightbbox(r))                          # below the axes and their labels
    names = [t for t in ax.texts if t.get_text()]
    assert len(names) >= 4
    boxes = []
    for t in names:
        t.update_positions(r)
        boxes.append((t.get_text(), Text.get_window_extent(t, r)))
    for i, (n1, b1) in enumerate(boxes):
        assert ax.bbox.x0 <= b1.x0 and b1.x1 <= ax.bbox.x1, f"{n1!r} runs out of the axes"
        for n2, b2 in boxes[i + 1:]:
            assert not _overlap(b1, b2), f"{n1!r} overprints {n2!r}"
    real_close(fig)


@pytest.mark.parametrize("key", ["h200-full", "h100-full"])
def test_bandwidth_labels_cover_no_curve_and_no_other_label(key):
    """bandwidth.png wrote the capacity and L2-partition labels up their vertical lines, across the curves."""
    with _drawn("bandwidth", key) as fig:
        r = fig.canvas.get_renderer()
        for ax in fig.axes:
            texts = [(t.get_text()[:40], t.get_window_extent(r)) for t in ax.texts if t.get_text().strip()]
            curves = [ln for ln in ax.get_lines() if ln.get_transform() == ax.transData and len(ln.get_xdata()) > 2]
            for name, b in texts:
                assert ax.bbox.x0 - 1 <= b.x0 and b.x1 <= ax.bbox.x1 + 1, f"{key}: {name!r} leaves its panel"
                for line in curves:
                    assert not any(b.x0 < x < b.x1 and b.y0 < y < b.y1 for x, y in _points_on(line, ax)), \
                        f"{key}: {name!r} covers the curve"
            for i, (n1, b1) in enumerate(texts):
                for n2, b2 in texts[i + 1:]:
                    assert not _overlap(b1, b2), f"{key}: {n1!r} overprints {n2!r}"
