"""Issue 23 GPU checks on a results directory (run tools/issue23/gpu.sh first): prints one line per check and
exits 1 when a check fails.

1. mma.sync: no clock_disagreement that names the event time; no timer_disagreement; every record's
   globaltimer span and CUDA-event time within 3%; the median CTA's share of the span (a second wave shows <1).
3. library GEMMs: a power figure only where the energy counter timed the window (energy_j set).
6. FP64 library: the ceiling's start and end temperature, its clock, and cupy.matmul's figure and clock.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hwprobe.results import read_measurements


def main(run: Path) -> int:
    ms = read_measurements(run)
    bad = 0
    for m in (m for m in ms if m.probe == "gpu.mma_sync" and m.params.get("span_s")):
        ev = [f for f in m.flags if f.startswith(("timer_disagreement", "clock_disagreement"))]
        ratio = m.params["event_s"] / m.params["span_s"]
        ok = abs(ratio - 1) <= 0.03 and not any("event" in f for f in ev)
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} 1 {m.metric} grid {m.params.get('grid')}: event/span {ratio:.4f}, "
              f"CTA busy {m.params.get('cta_busy_share') or 0:.2f}, clocks {m.params.get('clocks_mhz')}, flags {ev}")
    for m in (m for m in ms if m.probe == "gpu.gemm" and m.kind == "compute"):
        c = m.clocks
        ok = not (c and c.power_w and not c.energy_j)
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} 3 {m.metric}: {m.value / 1e12:.1f} T at {c.sm_mhz if c else '-'} MHz, "
              f"power {c.power_w if c else None} W (energy {c.energy_j if c else None} J), "
              f"throttle {c.throttle_reasons if c else []}")
    for m in (m for m in ms if m.precision == "fp64" and m.path == "library" and m.kind in ("compute", "sweep")
              and (".n" in m.metric or "cupy" in m.metric)):
        st, c = m.params.get("start_state") or {}, m.clocks
        print(f"info 6 {m.metric}: {m.value / 1e12:.2f} TFLOP/s at {c.sm_mhz if c else '-'} MHz (sentinel "
              f"{m.params.get('sentinel_sm_mhz')}), start {st.get('temp_c')} C settled {st.get('settled')}, "
              f"end {c.temp_c if c else None} C")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: python tools/issue23/summarize.py RESULTS_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
