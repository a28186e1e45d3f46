"""`run`'s progress bar on stderr (rich): events read of the pass's events, runs graded, the
event rate, elapsed time and ETA. It moves as the pipeline reports (`api.Progress`): while the
runs are chosen (the incremental fingerprint pass, by DuckDB's estimate of its query), within a
batch's SQL stage, and after each batch.

Shown only on a terminal: not when stderr is redirected, with --quiet, or where rich sees a dumb
terminal (TERM=dumb); NO_COLOR and the like are rich's to honour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from evalbatch.commands.printing import plural

if TYPE_CHECKING:
    from evalbatch import api


class _Rate(ProgressColumn):
    """Events read per second, by rich's moving estimate (grading only)."""

    def render(self, task: Task) -> Text:
        speed = task.speed if task.fields.get("events") else None
        return Text("" if speed is None else f"{_short(speed)}/s")


def _short(count: float) -> str:
    """`950`, `12.3k`, `4.1M`: a count short enough for an 80-column bar."""
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if count >= 10 * size:
            return f"{count / size:.1f}{unit}"
    return f"{count:,.0f}"


def shown_on(console: Console) -> bool:
    """Whether a live bar makes sense on `console`: a terminal that is not dumb."""
    return console.is_terminal and not console.is_dumb_terminal


class ProgressBar:
    """The bar: `update` is handed to the pipeline (it may be called from a helper thread; rich
    locks its own state), `close` ends it. Disabled, both do nothing."""

    def __init__(self, enabled: bool, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = enabled and shown_on(self.console)
        self.bar: Progress | None = None
        self.choosing: TaskID | None = None
        self.grading: TaskID | None = None
        self.events_done = self.runs_done = 0

    def _start(self) -> Progress:
        if self.bar is None:
            self.bar = Progress(
                SpinnerColumn(),
                BarColumn(bar_width=16),
                TextColumn("{task.description}"),
                _Rate(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self.bar.start()
        return self.bar

    def update(self, progress: api.Progress) -> None:
        if not self.enabled:
            return
        bar = self._start()
        if progress.stage == "choosing":
            if self.choosing is None:
                self.choosing = bar.add_task("choosing runs", total=1.0)
            bar.update(self.choosing, completed=progress.query_done or 0.0)
            return
        if self.choosing is not None:
            bar.remove_task(self.choosing)
            self.choosing = None
        # two sources report (the batch's SQL stage, each batch's end): the bar never goes back
        self.events_done = max(self.events_done, progress.events_done)
        self.runs_done = max(self.runs_done, progress.runs_done)
        counts = (
            f"{_short(self.events_done)}/{_short(progress.events)} events, "
            f"{plural(self.runs_done, 'run')} graded"
        )
        if self.grading is None:
            self.grading = bar.add_task(counts, total=max(progress.events, 1), events=True)
        bar.update(self.grading, completed=self.events_done, description=counts)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
