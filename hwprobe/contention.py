"""Telling a GPU (or CPU) shared with another job from the measurements themselves.

NVML's process list can be hidden inside a container, so each figure is also checked: a ceiling of a kind
that reaches near its theory on an idle device (CUDA-core FMA chains, DRAM streams, L1 and shared memory all
sit at 88-99% of theory at the measured clock) but here falls below ``FLOOR`` of it, or whose timed samples
split into two groups far apart (a bimodal spread: time slices shared with someone else), is flagged
``contended``. A contended run is never a reference (``hwprobe validate`` refuses it).
"""

from __future__ import annotations

import numpy as np

from hwprobe.flags import Code, Flag, has
from hwprobe.measurement import Measurement
from hwprobe.vocab import ExecUnit, Path

FLOOR = 0.6              # of theory at the measured clock, for the kinds listed in ``_expects_near_theory``
BIMODAL_GAP = 1.3        # adjacent sorted samples this far apart ...
BIMODAL_MIN = 2          # ... with at least this many samples on each side


# The instructions whose probe reaches 97-100% of theory on an idle device (others, e.g. DP2A at half the DP4A
# rate, sit low by design and say nothing about contention).
PEAK_INSTRUCTIONS = ("dfma", "ffma", "hfma2", "imad", "dp4a", "fma")


def _expects_near_theory(m: Measurement) -> bool:
    if m.kind == "compute":
        return (m.exec_unit in (ExecUnit.CUDA_CORE, ExecUnit.CPU) and m.path == Path.INSTRUCTION
                and m.metric.split(".")[-1] in PEAK_INSTRUCTIONS)
    return m.kind == "memory" and m.level in ("dram", "l1", "shared") and not m.link


def bimodal(samples: list[float]) -> tuple[float, int] | None:
    """(gap ratio, index) of the largest jump between sorted samples, when it splits them into two groups."""
    s = np.sort(np.asarray(samples, dtype=float))
    if s.size < 2 * BIMODAL_MIN or s[0] <= 0:
        return None
    ratios = s[1:] / s[:-1]
    i = int(np.argmax(ratios))
    if ratios[i] >= BIMODAL_GAP and BIMODAL_MIN <= i + 1 <= s.size - BIMODAL_MIN:
        return float(ratios[i]), i + 1
    return None


def flag_contention(m: Measurement) -> None:
    if m.status != "ok" or m.kind not in ("compute", "memory"):
        return
    frac = m.fraction_of_theory
    if frac is not None and _expects_near_theory(m) and frac < FLOOR:
        m.flags.append(Flag(Code.CONTENDED, f"{frac:.0%} of theory at the measured clock, where an idle device "
                                             f"gives 88-99%: another process is probably using it"))
        return
    split = bimodal(m.samples_s)
    if split:
        m.flags.append(Flag(Code.CONTENDED, f"timed samples split {split[1]}/{len(m.samples_s) - split[1]} with a "
                                             f"{split[0]:.2f}x gap between the groups (time slices shared with "
                                             "another process?)"))


def summarize(ms: list[Measurement]) -> list[str]:
    """The metrics flagged contended in a run (for the environment record and the warning)."""
    return [m.metric for m in ms if has(m.flags, Code.CONTENDED)]
