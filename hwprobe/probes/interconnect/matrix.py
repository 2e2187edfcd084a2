"""N x N tables over GPU pairs (bandwidth, latency, access, link type), and what they say across pairs.

Row = source (or the GPU that issues the work), column = destination (or the peer). The diagonal is empty:
a GPU with itself is not a link. Bidirectional figures are symmetric and set both cells.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PairMatrix:
    devices: list[int]
    unit: str = ""
    cells: dict[tuple[int, int], Any] = field(default_factory=dict)

    def set(self, a: int, b: int, value: Any, symmetric: bool = False) -> None:
        for x, y in ((a, b), (b, a)) if symmetric else ((a, b),):
            if x not in self.devices or y not in self.devices:
                raise KeyError(f"GPU pair ({x}, {y}) is not in this matrix's devices {self.devices}")
            if x == y:
                raise KeyError(f"({x}, {y}): the diagonal is not a link")
            self.cells[(x, y)] = value

    def get(self, a: int, b: int) -> Any:
        return self.cells.get((a, b))

    def rows(self) -> list[list[Any]]:
        """The full table, None on the diagonal and where nothing was measured."""
        return [[self.cells.get((a, b)) for b in self.devices] for a in self.devices]

    def values(self) -> list[float]:
        """The measured numeric off-diagonal cells."""
        return [v for v in self.cells.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]

    @property
    def complete(self) -> bool:
        n = len(self.devices)
        return len(self.cells) == n * (n - 1)

    def summary(self) -> dict[str, Any]:
        """min, median, max over pairs and the spread (max/min - 1): on a uniform fabric every pair is alike."""
        v = self.values()
        if not v:
            return {"pairs": 0}
        lo, hi = min(v), max(v)
        worst = [list(k) for k, x in self.cells.items() if x == lo]
        best = [list(k) for k, x in self.cells.items() if x == hi]
        return {"pairs": len(v), "min": lo, "median": statistics.median(v), "max": hi,
                "spread": (hi / lo - 1) if lo > 0 else None, "min_pairs": worst, "max_pairs": best}

    def to_dict(self) -> dict[str, Any]:
        return {"devices": self.devices, "unit": self.unit, "rows": self.rows(), "summary": self.summary()}

    def text(self, scale: float = 1.0, fmt: str = "{:.1f}", width: int = 8) -> str:
        """A plain table for notes and logs: values / ``scale`` (e.g. 1e9 for GB/s), '-' where empty."""
        head = "src\\dst".rjust(width) + "".join(str(d).rjust(width) for d in self.devices)
        lines = [head]
        for a, row in zip(self.devices, self.rows(), strict=True):
            cells = []
            for v in row:
                if v is None:
                    cells.append("-".rjust(width))
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    cells.append(fmt.format(v / scale).rjust(width))
                else:
                    cells.append(str(v)[: width - 1].rjust(width))
            lines.append(str(a).rjust(width) + "".join(cells))
        return "\n".join(lines)
