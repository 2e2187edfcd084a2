"""What the specs read of a Jetson: JetPack release order and a readout's summary lines, from plain strings and
dicts (hwprobe.device.jetson reads the board; the specs must not import device code to use its readout)."""

from __future__ import annotations

import re


def jetpack_at_least(jetpack: str | None, want: str) -> bool | None:
    """Whether ``jetpack`` ("6.2.1", "6.x") is at least ``want`` ("6.2"); None when unknown."""
    if not jetpack:
        return None
    have = [int(x) for x in re.findall(r"\d+", jetpack.split()[0])]
    need = [int(x) for x in re.findall(r"\d+", want)]
    if jetpack.endswith(".x") and have and need and have[0] == need[0] and len(need) > 1:
        return None                                  # "6.x" against "6.2": cannot tell
    return have >= need


def _g(x) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else "?"


def summary(d: dict) -> list[str]:
    """Short lines for a readout dict: module, release, mode, live SMs, clocks, what could not be read."""
    out = [f"{d.get('module') or d.get('model') or 'unknown Jetson'} ({', '.join(d.get('part_numbers') or []) or '-'})"
           f", L4T {d.get('l4t') or '?'} (JetPack {d.get('jetpack') or '?'})"]
    n, t, g, e = d.get("nvpmodel") or {}, d.get("tpc") or {}, d.get("gpu") or {}, d.get("emc") or {}
    sms = f"{t.get('live_sms')} of {t.get('max_sms')} SMs live" if t.get("live_sms") else "live SMs unknown"
    out.append(f"power mode {n.get('name') or '?'} (id {n.get('id') if n.get('id') is not None else '?'}, "
               f"from {n.get('source') or 'nowhere'}): {sms}, GPU {_g(g.get('cur_mhz'))} MHz now, cap "
               f"{_g(g.get('max_mhz'))} MHz, EMC {_g(e.get('theory_mhz'))} MHz ({e.get('source') or '?'})")
    jc = d.get("jetson_clocks")
    out.append(f"jetson_clocks {'on' if jc else 'off' if jc is False else 'unknown'} ({d.get('jetson_clocks_basis')})")
    if d.get("rails_note"):
        out.append(d["rails_note"])
    for u in d.get("unread") or []:
        out.append(f"could not read {u['item']} ({u['path']}): {u['why']}")
    return out
