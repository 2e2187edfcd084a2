"""What a plot drew, read from matplotlib's artists: the figures code saves, their series, labels and limits.

Tests check these rather than a file's existence or exact positions (layouts move; the data, labels and
limits must not)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from unittest import mock

import numpy as np


@contextlib.contextmanager
def saved_figures() -> Iterator[list]:
    """Every figure saved (``Figure.savefig``, which ``pyplot.savefig`` calls) while the block runs, in order; the
    file is still written."""
    from matplotlib.figure import Figure

    figs: list = []
    real = Figure.savefig

    def save(self, *args, **kwargs):
        if self not in figs:
            figs.append(self)
        return real(self, *args, **kwargs)

    with mock.patch.object(Figure, "savefig", save):
        yield figs


def series(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The labelled lines of ``ax`` (a legend's entries): label -> (x, y) as floats."""
    return {ln.get_label(): (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
            for ln in ax.lines if not ln.get_label().startswith("_")}


def data_lines(ax) -> list:
    """Lines drawn in data coordinates on both axes (not axvline/axhline guides, whose other axis is the axes')."""
    return [ln for ln in ax.lines if ln.get_transform() == ax.transData]


def points(ax) -> np.ndarray:
    """Every (x, y) a line or line collection in data coordinates or a scatter draws, as an (n, 2) array of finite
    values."""
    from matplotlib.collections import LineCollection, PathCollection

    parts = [np.column_stack([np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)])
             for ln in data_lines(ax)]
    for c in ax.collections:
        if isinstance(c, PathCollection) and c.get_offset_transform() == ax.transData:     # scatter dots
            parts.append(np.asarray(c.get_offsets(), float))
        elif isinstance(c, LineCollection) and c.get_transform() == ax.transData:          # hlines, vlines
            parts += [np.asarray(seg, float) for seg in c.get_segments()]
    pts = np.concatenate([p for p in parts if p.size] or [np.empty((0, 2))])
    return pts[np.isfinite(pts).all(axis=1)]


def outside_limits(ax, rel: float = 1e-6) -> np.ndarray:
    """The drawn points that fall outside the axes' limits (empty when the limits hold all the data)."""
    pts = points(ax)
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    inside = ((pts[:, 0] >= x0 * (1 - rel) - rel) & (pts[:, 0] <= x1 * (1 + rel) + rel)
              & (pts[:, 1] >= y0 * (1 - rel) - rel) & (pts[:, 1] <= y1 * (1 + rel) + rel))
    return pts[~inside]


def texts(fig) -> str:
    """Every text of the figure and its axes (titles, labels, annotations, legends), joined by ' | '."""
    out = [t.get_text() for t in fig.texts]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    for ax in fig.axes:
        out += [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        out += [ax.get_xlabel(), ax.get_ylabel(), *(t.get_text() for t in ax.texts)]
        if ax.get_legend():
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return " | ".join(t for t in out if t)
