"""What the commands print besides one-line messages: `run`'s progress line, runs table and
problem counts, `regress`'s comparisons and `verify`'s tables. Ids come from the log, so every
cell and line that holds one is printed escaped (issue 14)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import click

from evalbatch.commands.types import printable

if TYPE_CHECKING:
    import polars as pl

    from evalbatch import api
    from evalbatch.reduce import regression
    from evalbatch.verify import host_audit


class ProgressLine:
    """Runs graded so far and the event rate, on one stderr line; only on a terminal and without
    --quiet."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started = time.monotonic()
        self.shown = False

    def update(self, progress: api.Progress) -> None:
        if not self.enabled:
            return
        elapsed = max(time.monotonic() - self.started, 1e-9)
        width = 30
        bar = "#" * (width * progress.runs_done // max(progress.runs, 1))
        click.echo(
            f"\rgrading [{bar:<{width}}] {progress.runs_done:,}/{progress.runs:,} runs, "
            f"batch {progress.batches_done}/{progress.batches}, "
            f"{progress.events_done / elapsed:,.0f} events/s",
            err=True,
            nl=False,
        )
        self.shown = True

    def close(self) -> None:
        if self.shown:
            click.echo("", err=True)


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


#: runs listed after `run`; the rest are in runs.parquet
RUNS_SHOWN = 50


def print_runs(runs: pl.DataFrame) -> None:
    """A short per-run table: suite, score, pass, tasks passed, trial statistics. Ids come from
    the log, so they are printed escaped."""
    graded = runs.filter("graded")
    if graded.height == 0:
        click.echo("no eval run was graded")
        return
    click.echo(
        f"{'run':<34} {'suite':<34} {'score':>6} {'passed':>6} {'tasks':>7} "
        f"{'pass@k':>7} {'pass^k':>7}"
    )
    for r in graded.head(RUNS_SHOWN).iter_rows(named=True):
        at_k = f"{r['pass_at_k']:.3f}" if r["pass_at_k"] is not None else "-"
        hat_k = f"{r['pass_hat_k']:.3f}" if r["pass_hat_k"] is not None else "-"
        suite = printable(f"{r['suite_id']}@{r['suite_version']}")
        click.echo(
            f"{printable(r['run_id']):<34} {suite:<34} {r['aggregate_score']:>6.3f} "
            f"{_yes_no(r['passed']):>6} {r['passed_count']:>3}/{r['task_count']:<3} "
            f"{at_k:>7} {hat_k:>7}"
        )
    if graded.height > RUNS_SHOWN:
        click.echo(f"... and {graded.height - RUNS_SHOWN:,} more runs (see runs.parquet)")


def print_problems(problems: pl.DataFrame, limit: int = 20) -> None:
    """Problem counts by severity, then the first errors (their messages name runs: escaped)."""
    counts = problems.group_by("severity").len().sort("severity").iter_rows()
    summary = ", ".join(f"{n} {severity}" for severity, n in counts)
    if summary:
        click.echo(f"problems: {summary} (see problems.parquet)")
    errors = problems.filter(problems["severity"] == "error")
    for message in errors["message"].head(limit):
        click.echo(f"  skipped: {printable(message)}", err=True)
    if errors.height > limit:
        click.echo(f"  ... and {errors.height - limit} more", err=True)


def print_comparison(c: regression.Comparison, alpha: float) -> None:
    """One suite: its verdict, each side's run, grading and mean score, then the difference.
    Ids come from the data and are escaped (issue 14)."""
    click.echo(
        f"suite {printable(c.suite_id)}@{printable(c.suite_version)}: {c.verdict.upper()} "
        f"({c.method}, alpha {alpha})"
    )
    click.echo(
        f"  baseline {printable(c.baseline_run_id)} -> candidate {printable(c.candidate_run_id)}"
    )
    for label, side in (("baseline", c.baseline), ("candidate", c.candidate)):
        if side is not None:
            mean = "-" if side.mean_score is None else f"{side.mean_score:.4f}"
            click.echo(
                f"  {label + ':':<10} mean score {mean} over {side.task_count} task(s), "
                f"{side.grading.describe()}"
            )
    line = f"  paired tasks {c.paired_task_count}, score delta {c.score_delta:+.4f}"
    if c.mean_difference is not None:
        line += f", mean paired difference {c.mean_difference:+.4f}"
    if c.interval is not None:
        level = round(100 * (1 - alpha), 2)
        line += f" [{level:g}% interval {c.interval[0]:+.4f}, {c.interval[1]:+.4f}]"
    if c.p_value is not None:
        line += f", p {c.p_value:.4g}"
    click.echo(line)
    if c.reason:
        click.echo(f"  no test: {printable(c.reason)}")
    if c.moved:
        moved = ", ".join(f"{printable(task)} {diff:+.3f}" for task, diff in c.moved)
        click.echo(f"  moved most: {moved}")


def _cell(value: Any) -> str:
    """A finding's value as a table cell: JSON spelling, floats to 10 significant digits."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)


def _table(header: list[str], rows: list[list[str]], right: Collection[int] = ()) -> None:
    """Columns padded to their widest cell; columns in `right` are right-aligned. Cells hold ids
    from the log, so they are printed escaped."""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    click.echo(line(header))
    for row in rows:
        click.echo(line(row))


def _run_notes(run: host_audit.RunVerdict) -> str:
    notes = []
    if run.problems:
        notes.append(f"not recomputed: {', '.join(run.problems)}")
    if run.on_miss_reading:
        notes.append(f"absent onMiss read as {run.on_miss_reading}")
    if run.summary_checked:
        notes.append("summary checked")
    return "; ".join(notes)


def print_verify(report: host_audit.VerifyReport) -> None:
    """Findings, then per-run verdicts, then the per-host-field tally, then the verdict."""
    if report.findings:
        _table(
            ["run", "task", "trial", "field", "host", "recomputed", "rule", "reason"],
            [
                [
                    f.run_id,
                    f.task_id or "-",
                    "-" if f.trial_index is None else str(f.trial_index),
                    f.field,
                    _cell(f.host),
                    _cell(f.recomputed),
                    f.rule,
                    f.reason or "",
                ]
                for f in report.findings
            ],
            right={2},
        )
        click.echo("")
    if report.runs:
        _table(
            ["run", "verdict", "findings", "graded from", "notes"],
            [
                [
                    r.run_id,
                    r.verdict,
                    str(r.findings),
                    r.graded_from or "-",
                    _run_notes(r),
                ]
                for r in report.runs
            ],
            right={2},
        )
        click.echo("")
        _table(
            ["host field", "compared", "disagree"],
            [
                [name, str(count), str(report.disagreed.get(name, 0))]
                for name, count in sorted(report.compared.items())
            ],
            right={1, 2},
        )
        click.echo("")
    for skipped in report.skipped_files:
        click.echo(
            f"  skipped file: {printable(skipped.path)} [{skipped.code}]: its runs were not "
            "verified",
            err=True,
        )
    counts = Counter(r.verdict for r in report.runs)
    described = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
    click.echo(
        f"verdict: {report.verdict} ({len(report.runs)} eval runs: {described or 'none'}; "
        f"{len(report.findings)} findings)"
    )
