"""The bench's two progress displays: a rich bar with an ETA on a terminal, a line every 30 s
elsewhere (a log file, CI). Both print a failed check at once."""

from __future__ import annotations

import time
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.table import Column

from coopt.bench import runner as bench
from coopt.console import err


def _loud(row: dict[str, Any]) -> None:
    if row["verdict"] in ("failed", "error"):
        why = "; ".join((row.get("check") or {}).get("violations", [])[:2])
        err.print(f"[bold red]CHECK FAILED[/] {row['key']}: {why}")


class BarProgress(bench.Progress):
    """On a terminal: a rich progress bar with an ETA, advanced by the parent as results arrive."""

    def __init__(self) -> None:
        self._bar = RichProgress(
            TextColumn("[bold]bench[/]"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis")),
            console=err,
            transient=False,
        )
        self._task = self._bar.add_task("", total=0)

    def __enter__(self) -> BarProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def add(self, total: int) -> None:
        self._bar.update(self._task, total=self._bar.tasks[0].total + total)

    def advance(self, row: dict[str, Any]) -> None:
        _loud(row)
        label = f"{row['problem']} {row['method']} {row['instance']} seed {row['seed']}: {row['status']}"
        self._bar.update(self._task, advance=1, description=label)


class LineProgress(bench.Progress):
    """Elsewhere (a log file, CI): one line at most every ``period`` seconds, with the ETA."""

    def __init__(self, period: float = 30.0) -> None:
        self.period, self.total, self.done = period, 0, 0
        self._start = self._last = time.monotonic()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.done:
            self._line()

    def add(self, total: int) -> None:
        self.total += total

    def advance(self, row: dict[str, Any]) -> None:
        _loud(row)
        self.done += 1
        if time.monotonic() - self._last >= self.period:
            self._line()

    def _line(self) -> None:
        self._last = time.monotonic()
        elapsed = self._last - self._start
        eta = elapsed / self.done * (self.total - self.done)
        err.print(f"bench: {self.done}/{self.total} tasks, elapsed {elapsed:.0f} s, ETA {eta:.0f} s")
