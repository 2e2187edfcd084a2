"""Human formatting of SI quantities (GB = 1e9 bytes)."""

from __future__ import annotations

_PREFIXES = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
_BINARY = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]


def si(value: float | None, unit: str, digits: int = 3) -> str:
    """``si(6.61e13, 'FLOP/s') -> '66.1 TFLOP/s'``; seconds become ns/us/ms; bytes use KiB/MiB."""
    if value is None:
        return "-"
    if unit == "B":
        for size, name in _BINARY:
            if abs(value) >= size:
                return f"{value / size:.{digits}g} {name}"
        return f"{value:.0f} B"
    if unit == "s":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if abs(value) >= scale:
                return f"{value / scale:.{digits}g} {name}"
        return f"{value / 1e-9:.{digits}g} ns"
    if unit.endswith("/s"):
        for scale, p in _PREFIXES:
            if abs(value) >= scale:
                return f"{value / scale:.{digits}g} {p}{unit}"
    return f"{value:.{digits}g} {unit}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"
