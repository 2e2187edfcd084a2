"""What `hwprobe run` shows while it measures: on a terminal a live bar (rich) with the probe in hand, the time
elapsed and an estimate of the time left from the suite's budget; above it one line per finished
measurement. With --quiet nothing; when the output is not a terminal (logs, CI), the same lines as plain
text and no bar.

Skips, errors and findings get a short live line when the summary printed after the run repeats them in
full, so each message is printed once."""

from __future__ import annotations

import time
from dataclasses import dataclass

from hwprobe.units import pct, si

PER_PROBE_S = {"gpu": 20.0, "cpu": 5.0}   # the estimate for a suite without a budget_s


@dataclass
class Estimate:
    """Time left: the budget's remainder at first, the pace of the probes done as they accumulate."""

    total_s: float          # the suite's budget (x rounds), or probes x a typical probe's time
    probes: int

    def left(self, elapsed: float, done: int) -> float:
        by_budget = max(self.total_s - elapsed, 0.0)
        if done <= 0 or self.probes <= 0:
            return by_budget
        by_pace = elapsed / done * (self.probes - done)
        w = done / self.probes
        return max((1 - w) * by_budget + w * by_pace, 0.0)


def clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def measurement_line(m, summary_follows: bool) -> str | None:
    """The one line a finished measurement gets (None: none, e.g. a sweep point)."""
    status = getattr(m, "status", "ok")
    if m.kind == "sweep" and status == "ok":
        return None
    if status in ("skipped", "error"):
        reason = getattr(m, "reason", "") or " ".join(m.notes)
        return f"{m.metric}: {status}" + (" (reason in the summary below)" if summary_follows else f": {reason}")
    if m.kind == "info":
        text = " ".join(m.notes) or "; ".join(m.flags)
        skipped = text.startswith("skipped: ")
        if summary_follows:
            return f"{m.metric}: {'skipped' if skipped else 'finding'} (in the summary below)"
        return f"{m.metric}: {text}"
    extra = ""
    if m.theory and m.theory.at_clock:
        clk = f" @ {m.theory.clock_mhz:.0f} MHz" if m.theory.clock_mhz else ""
        extra = f"  ({pct(m.fraction_of_theory)} of {si(m.theory.at_clock, m.unit)}{clk})"
    bad = "" if m.valid else f"  INVALID: {'; '.join(m.flags)}"
    return f"{m.metric}: {si(m.value, m.unit)}{extra}{bad}"


class RunProgress:
    """The run's printing callbacks (on_probe, on_measurement, log) and, on a terminal, the live bar.

    Use it as a context manager around api.run so the bar is gone before the tables are printed."""

    def __init__(self, console, plan, *, quiet: bool = False, summary_follows: bool = True,
                 live: bool | None = None):
        self.con, self.plan, self.quiet, self.summary_follows = console, plan, quiet, summary_follows
        self.live = (console.is_terminal if live is None else live) and not quiet
        suite = plan.suite
        rounds = getattr(plan, "rounds", 1) or 1
        n = len(suite.entries) * rounds
        budget = getattr(suite, "budget_s", None)
        kind = getattr(plan.device, "kind", "gpu")
        self.estimate = Estimate(budget * rounds if budget else n * PER_PROBE_S.get(kind, 20.0), n)
        self.budgeted = bool(budget)
        self.t0 = time.monotonic()
        self.done = 0
        self.sweeps = 0
        self._bar = None
        self._task = None

    # --- the bar -------------------------------------------------------------------------------------
    def __enter__(self) -> RunProgress:
        if self.live:
            from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn
            from rich.text import Text

            owner = self

            class Times(ProgressColumn):   # re-computed at every refresh, so the clock runs during a long probe
                def render(self, task) -> Text:
                    return Text(owner.status())

            self._bar = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(bar_width=24),
                                 TextColumn("{task.completed}/{task.total} probes"), Times(),
                                 TextColumn("[dim]{task.fields[last]}"), console=self.con, transient=True,
                                 refresh_per_second=4)
            self._task = self._bar.add_task("starting", total=self.estimate.probes, last="")
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def status(self) -> str:
        """"0:42 elapsed, ~1:10 left (budget 2:00)"."""
        elapsed = time.monotonic() - self.t0
        left = self.estimate.left(elapsed, self.done)
        basis = f"budget {clock(self.estimate.total_s)}" if self.budgeted else "estimate"
        over = ", over budget" if self.budgeted and elapsed > self.estimate.total_s else ""
        return f"{clock(elapsed)} elapsed, ~{clock(left)} left ({basis}{over})"

    def _update(self, **fields) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, **fields)

    def _print(self, text: str, style: str = "") -> None:
        if self.quiet:
            return
        from rich.text import Text

        printer = self._bar.console if self._bar is not None else self.con
        printer.print(Text(text, style=style), highlight=False)

    # --- the callbacks ---------------------------------------------------------------------------------
    def on_probe(self, name: str, i: int, n: int) -> None:
        if i == 0:  # printed once the results directory exists, so bad input stays a single line
            if self.plan.notice:
                self._print(self.plan.notice)
            budget = f", budget {clock(self.estimate.total_s)}" if self.budgeted else ""
            self._print(f"{self.plan.label}  suite {self.plan.suite.name!r} ({n} probes{budget})")
        self.done = i
        self.estimate.probes = n
        self._print(f"[{i + 1}/{n}] {name}", "bold")
        self._update(description=name, total=n, last="")

    def on_measurement(self, m) -> None:
        if m.kind == "sweep" and getattr(m, "status", "ok") == "ok":
            self.sweeps += 1
            self._update(last=f"{m.metric} ({self.sweeps} sweep points)")
            return
        line = measurement_line(m, self.summary_follows)
        if line:
            self._print(f"    {line}", "red" if not m.valid and getattr(m, "status", "") != "skipped" else "")
        self._update(last=m.metric)

    def log(self, msg: str) -> None:
        self._print(f"      {msg}", "dim")

    def finished(self) -> str:
        """One line after the run: how long it took against the budget."""
        elapsed = time.monotonic() - self.t0
        if self.budgeted:
            return f"measured in {clock(elapsed)} (budget {clock(self.estimate.total_s)})"
        return f"measured in {clock(elapsed)}"
