"""The L2 hit latency of every SM (gpu.l2map's table) as a heat map, near and far partition side by side."""

from __future__ import annotations

import numpy as np


def plot_sm_map(table: dict, path: str, title: str = "L2 hit latency per SM") -> str:
    """A heat map of the near and far latency (ns) of every SM, SMs laid out in rows of 12; writes ``path``
    (PNG) and returns it. matplotlib is imported here, only when a plot is asked for."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sms = table["sm"]
    side = dict(zip(sms, table["side"], strict=True)) if table.get("side") else {}
    cols = 12
    nrows = -(-(max(sms) + 1) // cols)
    panels = [("near_ns", "near partition"), ("far_ns", "far partition")]
    panels = [(k, t) for k, t in panels if any(x is not None for x in table[k])]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 0.55 * nrows + 1.6), squeeze=False)
    for ax, (key, name) in zip(axes[0], panels, strict=True):
        grid = np.full((nrows, cols), np.nan)
        for sm, v in zip(sms, table[key], strict=True):
            if v is not None:
                grid[sm // cols, sm % cols] = v
        im = ax.imshow(grid, cmap="viridis", aspect="auto")
        for (r, c), v in np.ndenumerate(grid):
            if np.isfinite(v):
                half = side.get(r * cols + c)
                ax.text(c, r, f"{v:.0f}" + ("" if half is None else "ab"[half]), ha="center", va="center",
                        fontsize=6, color="white" if v < np.nanmean(grid) else "black")
        ax.set_title(f"{name}: {np.nanmin(grid):.0f}-{np.nanmax(grid):.0f} ns")
        ax.set_xticks(range(cols))
        ax.set_yticks(range(nrows), [str(r * cols) for r in range(nrows)])
        ax.set_xlabel("SM id mod 12")
        ax.set_ylabel("SM id (row start)")
        fig.colorbar(im, ax=ax, label="ns")
    fig.suptitle(title + ("  (a/b: the chip half of each SM)" if side else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
