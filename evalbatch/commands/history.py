"""`evalbatch history OUT_DIR...`: each suite's and task's runs in time order, across the output
directories of several nights (E-96).

`evalbatch.history.series.read_history` reads the directories; this module parses the options and
prints the series (a table per suite, or JSON), then what was left out: a directory that cannot be
read (exit 3, the others still shown), a run found in several directories (counted once), runs not
graded. Nothing shown is exit 2, never 0.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalbatch.commands import faults, filters
from evalbatch.commands.click_options import quiet_option
from evalbatch.commands.printing import echo_json, plural, stdout_console
from evalbatch.commands.types import FiniteFloatRange, printable
from evalbatch.errors import EXIT_OK, EXIT_SKIPPED, InputError

if TYPE_CHECKING:  # polars loads when the command runs, not for --help
    import polars as pl

    from evalbatch.history.series import History

#: the series' columns as the JSON names them (one entry per run of a task)
_JSON_NAMES = {
    "night": "night",
    "run_id": "runId",
    "suite_version": "suiteVersion",
    "started_at": "startedAt",
    "trials": "trials",
    "passed_trials": "passedTrials",
    "pass_rate": "passRate",
    "score": "score",
    "gating_score": "gatingScore",
    "pass_hat_k": "passHatK",
    "cost_usd": "costUsd",
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
}

#: disagreeing duplicates named one by one on stderr; the rest are counted
_NAMED = 10

#: the trends' columns as the JSON names them (evalbatch.history.trends: FLAKY_SCHEMA,
#: CHANGE_SCHEMA)
_FLAKY_JSON = {
    "suite_id": "suiteId",
    "task_id": "taskId",
    "status": "status",
    "since_night": "sinceNight",
    "runs": "runs",
    "mixed_runs": "mixedRuns",
    "trials": "trials",
    "passed_trials": "passedTrials",
    "pass_rate": "passRate",
    "pass_rate_low": "passRateLow",
    "pass_rate_high": "passRateHigh",
    "flakiness": "flakiness",
    "flakiness_low": "flakinessLow",
    "flakiness_high": "flakinessHigh",
}
_CHANGE_JSON = {
    "suite_id": "suiteId",
    "task_id": "taskId",
    "runs": "runs",
    "changed": "changed",
    "night": "night",
    "run_id": "runId",
    "started_at": "startedAt",
    "rate_before": "rateBefore",
    "rate_after": "rateAfter",
    "shift": "shift",
    "statistic": "statistic",
    "p_value": "pValue",
}


def _instant(moment: datetime | None) -> str | None:
    """A start time as ISO 8601 UTC (`2026-11-02T10:00:00.100000Z`), None when unknown."""
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def _minute(moment: datetime | None) -> str:
    """A start time in a table: to the minute, UTC (`2026-11-02T10:00Z`); `-` when unknown."""
    return "-" if moment is None else moment.strftime("%Y-%m-%dT%H:%MZ")


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.4f}"


def _rows_json(frame: pl.DataFrame, names: dict[str, str]) -> list[dict[str, Any]]:
    rows = frame.select(list(names)).to_dicts()
    for row in rows:
        if "started_at" in row:
            row["started_at"] = _instant(row["started_at"])
    return [{names[k]: v for k, v in row.items()} for row in rows]


def history_json(history: History, flaky: pl.DataFrame, changes: pl.DataFrame) -> dict[str, Any]:
    """The JSON `history --json` prints: the directories read and skipped, the duplicates, then
    per suite and per task the series, one entry per run in time order, then every task's
    flakiness (worst first) and its likeliest change, `changed` when it is one (README
    "History", "Flaky tasks and change points")."""

    suites = []
    for (suite_id,), rows in history.series.group_by("suite_id", maintain_order=True):
        tasks = []
        for (task_id,), task_rows in rows.group_by("task_id", maintain_order=True):
            entries = task_rows.sort("night").select(list(_JSON_NAMES)).to_dicts()
            for entry in entries:
                entry["started_at"] = _instant(entry["started_at"])
            tasks.append(
                {
                    "taskId": task_id,
                    "series": [{_JSON_NAMES[k]: v for k, v in e.items()} for e in entries],
                }
            )
        suites.append({"suiteId": suite_id, "runs": rows["run_id"].n_unique(), "tasks": tasks})
    disagreeing = {(d.run_id, d.left_out) for d in history.disagreeing}
    return {
        "outDirs": [str(path) for path in history.read],
        "skipped": [{"outDir": str(path), "reason": reason} for path, reason in history.skipped],
        "duplicates": [
            {
                "runId": d.run_id,
                "keptFrom": str(d.kept),
                "leftOutFrom": str(d.left_out),
                "sameRows": (d.run_id, d.left_out) not in disagreeing,
            }
            for d in history.duplicates
        ],
        "notGraded": history.not_graded,
        "suites": suites,
        "flakyTasks": _rows_json(flaky, _FLAKY_JSON),
        "changePoints": _rows_json(changes, _CHANGE_JSON),
    }


def print_series(series: pl.DataFrame) -> None:
    """Per suite, a heading line, then one row per task and run in time order. Ids come from the
    log, so they are printed escaped."""
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    for (suite_id,), rows in series.group_by("suite_id", maintain_order=True):
        starts = rows["started_at"].drop_nulls().sort()
        span = f", {_minute(starts[0])} to {_minute(starts[-1])}" if starts.len() else ""
        click.echo(
            f"suite {printable(suite_id)}: {plural(rows['run_id'].n_unique(), 'run')}, "
            f"{plural(rows['task_id'].n_unique(), 'task')}{span}"
        )
        versions = rows["suite_version"].n_unique() > 1
        table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
        table.add_column("task", overflow="fold")
        table.add_column("night", justify="right", no_wrap=True)
        table.add_column("run", overflow="fold")
        if versions:
            table.add_column("version", overflow="fold")
        table.add_column("started", no_wrap=True)
        for name in (
            "score",
            "gating",
            "passed",
            "pass rate",
            "pass^k",
            "cost",
            "tokens in",
            "tokens out",
        ):
            table.add_column(name, justify="right", no_wrap=True)
        for r in rows.iter_rows(named=True):
            cells: list[str | Text] = [
                Text(printable(r["task_id"])),
                str(r["night"]),
                Text(printable(r["run_id"])),
            ]
            if versions:
                cells.append(Text(printable(r["suite_version"])))
            cells += [
                _minute(r["started_at"]),
                _ratio(r["score"]),
                _ratio(r["gating_score"]),
                f"{r['passed_trials']}/{r['trials']}",
                _ratio(r["pass_rate"]),
                _ratio(r["pass_hat_k"]),
                _usd(r["cost_usd"]),
                _count(r["input_tokens"]),
                _count(r["output_tokens"]),
            ]
            table.add_row(*cells)
        _print_table(console, table)


def _print_table(console: Any, table: Any) -> None:
    """A rich table, then a blank line; wrapped cells are padded, so no trailing blanks."""
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():
        click.echo(line.rstrip())
    click.echo("")


def print_trends(flaky: pl.DataFrame, changes: pl.DataFrame, alpha: float) -> None:
    """The tasks whose trials disagree (flaky or broken, worst first), then the changes found
    at `alpha` (surest first); one line when there are none."""
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    shown = flaky.filter(flaky["status"].is_in(["flaky", "broken"]))
    if shown.height:
        click.echo(f"flaky or broken tasks (flakiness 2p(1-p), {1 - alpha:.0%} interval):")
        table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
        for name in ("suite", "task", "status"):
            table.add_column(name, overflow="fold")
        for name in ("since night", "runs", "mixed", "pass rate"):
            table.add_column(name, justify="right", no_wrap=True)
        table.add_column("flakiness", justify="right", no_wrap=True)
        for r in shown.iter_rows(named=True):
            table.add_row(
                Text(printable(r["suite_id"])),
                Text(printable(r["task_id"])),
                r["status"],
                str(r["since_night"]),
                str(r["runs"]),
                str(r["mixed_runs"]),
                f"{_ratio(r['pass_rate'])} [{_ratio(r['pass_rate_low'])}, "
                f"{_ratio(r['pass_rate_high'])}]",
                f"{_ratio(r['flakiness'])} [{_ratio(r['flakiness_low'])}, "
                f"{_ratio(r['flakiness_high'])}]",
            )
        _print_table(console, table)
    else:
        click.echo("flaky or broken tasks: none")
    found = changes.filter(changes["changed"])
    if found.height:
        click.echo(f"changes (p <= {alpha:g}, the first run after the change):")
        table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
        for name in ("suite", "task", "night", "run", "started"):
            table.add_column(name, overflow="fold", justify="right" if name == "night" else "left")
        for name in ("before", "after", "shift", "p"):
            table.add_column(name, justify="right", no_wrap=True)
        for r in found.iter_rows(named=True):
            table.add_row(
                Text(printable(r["suite_id"])),
                Text(printable(r["task_id"])),
                str(r["night"]),
                Text(printable(r["run_id"])),
                _minute(r["started_at"]),
                _ratio(r["rate_before"]),
                _ratio(r["rate_after"]),
                f"{r['shift']:+.3f}",
                f"{r['p_value']:.3f}",
            )
        _print_table(console, table)
    else:
        click.echo(f"changes (p <= {alpha:g}): none")


def _report_left_out(history: History) -> None:
    """On stderr, in both modes: the directories skipped, the runs counted once, the runs not
    graded."""
    for _, reason in history.skipped:
        click.echo(f"warning: skipped: {printable(reason)}", err=True)  # the reason names it
    if history.duplicates:
        click.echo(
            f"note: {plural(len(history.duplicates), 'run')} found in more than one directory, "
            "each counted once (the copy in the first directory given)",
            err=True,
        )
    for d in history.disagreeing[:_NAMED]:
        click.echo(
            f"warning: run {printable(d.run_id)}: its rows in {printable(str(d.left_out))} differ "
            f"from those kept from {printable(str(d.kept))} (graded otherwise)",
            err=True,
        )
    if len(history.disagreeing) > _NAMED:
        click.echo(
            f"warning: ... and {len(history.disagreeing) - _NAMED} more runs graded otherwise",
            err=True,
        )
    if history.not_graded:
        click.echo(
            f"note: {plural(history.not_graded, 'eval run')} not graded, so not in the series "
            "(see their problems.parquet)",
            err=True,
        )


def _nothing_shown(history: History, filters_given: list[str]) -> InputError:
    """Why there is no series: no directory usable, or no graded run (in the window)."""
    if not history.read:
        reasons = "; ".join(reason for _, reason in history.skipped)
        return InputError(f"no output directory usable: {reasons}")
    where = f"in {plural(len(history.read), 'output directory', 'output directories')}"
    if filters_given:
        return InputError(f"no graded run {where} matches {', '.join(filters_given)}")
    return InputError(f"no graded run {where}: nothing to show")


@click.command(
    name="history",
    cls=faults.Command,
    short_help="Runs across nights: flaky tasks and change points.",
)
@click.argument("out_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the series as JSON.")
@click.option(
    "--alpha",
    type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Level of the change test and one minus the intervals' confidence.",
)
@quiet_option("Print no series; what was left out is still told on stderr.")
@filters.run_filter_options
def history(
    out_dirs: tuple[Path, ...],
    as_json: bool,
    alpha: float,
    quiet: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
) -> None:
    """Each suite's and task's runs in time order (the eval's start), across the output
    directories of `evalbatch run` given: one per night, or one holding many nights' runs.
    Per run of each task: score, gating score, passed trials of n, pass^k at k = n, cost and
    tokens. A run found in several directories counts once (the first directory's copy).

    \b
    Example:
      evalbatch history out/regress --suite-id acme.support.evals.regression

    Exit codes: 0 shown; 2 no directory usable, no graded run (matching the filters) or a
    usage error; 3 shown, but a directory was skipped (named on stderr).
    """
    from evalbatch.history.series import read_history  # polars loads when the command runs
    from evalbatch.history.trends import trends

    found = read_history(out_dirs, filter_suites, since, until, run_ids=run_ids)
    if found.series.height == 0:
        if found.read:  # else the one line below names each directory and why
            _report_left_out(found)
        given = [
            name
            for name, value in (
                ("--run-id", run_ids),
                ("--suite-id", filter_suites),
                ("--since", since),
                ("--until", until),
            )
            if value
        ]
        raise _nothing_shown(found, given)
    flaky, changes = trends(found.series, alpha)
    if as_json:
        echo_json(history_json(found, flaky, changes))
    elif not quiet:
        print_series(found.series)
        print_trends(flaky, changes, alpha)
    _report_left_out(found)
    sys.exit(EXIT_SKIPPED if found.skipped else EXIT_OK)
