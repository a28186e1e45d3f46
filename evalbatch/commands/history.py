"""`evalbatch history OUT_DIR...`: each series' nights in time order, across the output
directories of several nights, with the tasks that are flaky or broke (E-96, E-97, E-151).

`evalbatch.history.series.read_history` reads the directories and pools each night's runs; this
module parses the options and prints what matters first (broken, then flaky, worst first, at most
a screenful, the rest counted), or JSON (per-series summaries; every point with `--points`), then
what was left out: a directory that cannot be read (exit 3, the others still shown), a run found
in several directories (counted once), runs not graded. Nothing shown is exit 2, never 0.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalbatch.commands import faults, filters
from evalbatch.commands.click_options import quiet_option, suites_option
from evalbatch.commands.printing import echo_json, plural, stdout_console
from evalbatch.commands.types import FiniteFloatRange, printable
from evalbatch.errors import EXIT_OK, EXIT_SKIPPED, InputError
from evalbatch.options import NIGHTS_BY, SERIES_BY, NightsBy, SeriesBy

if TYPE_CHECKING:  # polars loads when the command runs, not for --help
    import polars as pl
    from rich.text import Text

    from evalbatch.history.series import History

#: the points' columns as the JSON names them (one entry per series, task and night)
_JSON_NAMES = {
    "suite_id": "suiteId",
    "agent_id": "agentId",
    "model": "model",
    "task_id": "taskId",
    "night": "night",
    "night_label": "nightLabel",
    "runs": "runs",
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
#: rows of each terminal table (series, flaky or broken tasks, changes); the rest are counted
SHOWN = 30

#: the trends' columns as the JSON names them (evalbatch.history.trends: FLAKY_SCHEMA,
#: CHANGE_SCHEMA)
_FLAKY_JSON = {
    "suite_id": "suiteId",
    "agent_id": "agentId",
    "model": "model",
    "task_id": "taskId",
    "status": "status",
    "since_night": "sinceNight",
    "runs": "runs",  # nights measured: a night's runs are one point (E-151)
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
    "agent_id": "agentId",
    "model": "model",
    "task_id": "taskId",
    "runs": "runs",  # nights with a counted trial
    "changed": "changed",
    "night": "night",
    "night_label": "nightLabel",
    "run_id": "runId",
    "started_at": "startedAt",
    "rate_before": "rateBefore",
    "rate_after": "rateAfter",
    "shift": "shift",
    "statistic": "statistic",
    "p_value": "pValue",
}
#: a series' key as the JSON and the tables name it
_KEY = ("suite_id", "agent_id", "model")
#: how the statuses rank in what is shown first
_STATUS_RANK = {"broken": 0, "flaky": 1, "stable": 2, "no-trials": 3}


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


def series_summaries(series: pl.DataFrame, flaky: pl.DataFrame) -> pl.DataFrame:
    """One row per series (suite, agent, model): its runs, nights and tasks, and how many of its
    tasks are broken, flaky, stable or without trials; the most broken, then flaky, first."""
    import polars as pl

    counts = flaky.group_by(_KEY).agg(
        *(
            (pl.col("status") == status).sum().cast(pl.Int64).alias(status)
            for status in _STATUS_RANK
        )
    )
    # a night's runs are the most any task of the series had in it (each run is a point of
    # each of its tasks)
    nights = (
        series.group_by(*_KEY, "night_label")
        .agg(pl.col("runs").max())
        .group_by(_KEY)
        .agg(pl.col("runs").sum(), nights=pl.len().cast(pl.Int64))
    )
    tasks = series.group_by(_KEY).agg(tasks=pl.col("task_id").n_unique().cast(pl.Int64))
    return (
        nights.join(tasks, on=list(_KEY), nulls_equal=True)
        .join(counts, on=list(_KEY), how="left", nulls_equal=True)
        .sort(
            ["broken", "flaky", *_KEY],
            descending=[True, True, False, False, False],
            nulls_last=True,
        )
        .select(*_KEY, "runs", "nights", "tasks", *_STATUS_RANK)
    )


def _matters_first(flaky: pl.DataFrame, changes: pl.DataFrame) -> pl.DataFrame:
    """The task series that matter, first: broken (surest change first), then flaky (worst
    flakiness first)."""
    import polars as pl

    keyed = flaky.join(
        changes.select(*_KEY, "task_id", "p_value", "night", "night_label"),
        on=[*_KEY, "task_id"],
        how="left",
        nulls_equal=True,
    )
    return (
        keyed.filter(pl.col("status").is_in(["broken", "flaky"]))
        .with_columns(
            rank=pl.col("status").replace_strict(_STATUS_RANK, return_dtype=pl.Int8),
            surest=pl.when(pl.col("status") == "broken").then(pl.col("p_value")),
        )
        .sort(
            ["rank", "surest", "flakiness", "flakiness_low", *_KEY, "task_id"],
            descending=[False, False, True, True, False, False, False, False],
            nulls_last=True,
        )
        .drop("rank", "surest")
    )


def history_json(
    history: History, flaky: pl.DataFrame, changes: pl.DataFrame, points: bool = False
) -> dict[str, Any]:
    """The JSON `history --json` prints (docs/history.md): the directories read and skipped,
    the duplicates, how series and nights were told apart, one summary per series, every task
    series' flakiness (worst first) and likeliest change, `changed` when it is one; with
    `points`, every point of every series. Its size grows with the series and their tasks,
    not with the runs or the nights (but for the points)."""

    disagreeing = {(d.run_id, d.left_out) for d in history.disagreeing}
    summaries = series_summaries(history.series, flaky)
    found: dict[str, Any] = {
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
        "seriesBy": history.series_by,
        "nightsBy": history.nights_by,
        "nights": history.series["night_label"].n_unique(),
        "series": [
            {
                "suiteId": row["suite_id"],
                "agentId": row["agent_id"],
                "model": row["model"],
                "runs": row["runs"],
                "nights": row["nights"],
                "tasks": row["tasks"],
                "broken": row["broken"],
                "flaky": row["flaky"],
                "stable": row["stable"],
                "noTrials": row["no-trials"],
            }
            for row in summaries.iter_rows(named=True)
        ],
        "flakyTasks": _rows_json(flaky, _FLAKY_JSON),
        "changePoints": _rows_json(changes, _CHANGE_JSON),
    }
    if points:
        found["points"] = _rows_json(history.series, _JSON_NAMES)
    return found


def _series_name(row: dict[str, Any]) -> Text:
    """`suite · agent · model`, the parts a series is kept apart by (escaped: ids from logs)."""
    from rich.text import Text

    return Text(" · ".join(printable(row[c]) for c in _KEY if row.get(c) is not None))


def _table(*columns: str, right: tuple[str, ...] = ()) -> Any:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    for name in columns:
        if name in right:
            table.add_column(name, justify="right", no_wrap=True)
        else:
            table.add_column(name, overflow="fold")
    return table


def _more(shown: int, total: int, what: str) -> None:
    if total > shown:
        click.echo(f"... and {total - shown:,} more {what} (--json lists every one)")


def print_overview(history: History, flaky: pl.DataFrame) -> None:
    """One line on what was lined up, then the series, most broken and flaky first (at most
    `SHOWN`, the rest counted)."""
    series = history.series
    summaries = series_summaries(series, flaky)
    runs = int(summaries["runs"].sum())
    by = {"agent-model": "suite, agent and model", "agent": "suite and agent", "suite": "suite"}
    nights = {
        "auto": "output directory, or day where a directory holds several",
        "dir": "output directory",
        "day": "day (UTC)",
        "run": "run",
    }
    click.echo(
        f"history: {plural(series['night_label'].n_unique(), 'night')} (one per "
        f"{nights[history.nights_by]}), {plural(summaries.height, 'series', 'series')} "
        f"(by {by[history.series_by]}), {_count(runs)} run{'' if runs == 1 else 's'}"
    )
    table = _table("series", "runs", "nights", "tasks", "broken", "flaky", right=(
        "runs", "nights", "tasks", "broken", "flaky"
    ))  # fmt: skip
    for row in summaries.head(SHOWN).iter_rows(named=True):
        table.add_row(
            _series_name(row),
            _count(row["runs"]),
            _count(row["nights"]),
            _count(row["tasks"]),
            _count(row["broken"]),
            _count(row["flaky"]),
        )
    _print_table(stdout_console(), table)
    _more(SHOWN, summaries.height, "series")


def print_points(series: pl.DataFrame) -> None:
    """`--points`: per series a heading line, then one row per task and night in time order
    (every point: as long as the history)."""
    from rich.text import Text

    console = stdout_console()
    for _, rows in series.group_by(_KEY, maintain_order=True):
        first = rows.row(0, named=True)
        starts = rows["started_at"].drop_nulls().sort()
        span = f", {_minute(starts[0])} to {_minute(starts[-1])}" if starts.len() else ""
        nights = plural(rows["night_label"].n_unique(), "night")
        click.echo(
            f"series {_series_name(first).plain}: {nights}, "
            f"{plural(rows['task_id'].n_unique(), 'task')}{span}"
        )
        versions = rows["suite_version"].n_unique() > 1
        names = ["task", "night", "runs", "run"] + (["version"] if versions else [])
        numbers = ("score", "gating", "passed", "pass rate", "pass^k", "cost", "tokens in",
                   "tokens out")  # fmt: skip
        table = _table(*names, "started", *numbers, right=("night", "runs", *numbers))
        for r in rows.iter_rows(named=True):
            cells: list[str | Text] = [
                Text(printable(r["task_id"])),
                str(r["night"]),
                str(r["runs"]),
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
    """The task series whose trials disagree (broken, then flaky, worst first), then the
    changes found at `alpha` (surest first), each at most `SHOWN` rows and the rest counted;
    then how many are stable. One line when there are none."""
    from rich.text import Text

    console = stdout_console()
    shown = _matters_first(flaky, changes)
    if shown.height:
        click.echo(
            f"broken or flaky tasks, broken first (flakiness 2p(1-p), {1 - alpha:.0%} interval):"
        )
        table = _table(
            "series", "task", "status", "since night", "nights", "mixed", "pass rate",
            "flakiness", right=("since night", "nights", "mixed", "pass rate", "flakiness"),
        )  # fmt: skip
        for r in shown.head(SHOWN).iter_rows(named=True):
            table.add_row(
                _series_name(r),
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
        _more(SHOWN, shown.height, "broken or flaky tasks")
    else:
        click.echo("broken or flaky tasks: none")
    found = changes.filter(changes["changed"])
    if found.height:
        click.echo(f"changes (p <= {alpha:g}, the first night after the change):")
        table = _table(
            "series", "task", "night", "run", "started", "before", "after", "shift", "p",
            right=("night", "before", "after", "shift", "p"),
        )  # fmt: skip
        for r in found.head(SHOWN).iter_rows(named=True):
            table.add_row(
                _series_name(r),
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
        _more(SHOWN, found.height, "changes")
    else:
        click.echo(f"changes (p <= {alpha:g}): none")
    statuses = dict(flaky.group_by("status").len().iter_rows())
    click.echo(
        f"stable: {plural(statuses.get('stable', 0), 'task series', 'task series')}; "
        f"without a counted trial: {statuses.get('no-trials', 0)}"
    )


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
@click.option(
    "--series-by",
    type=click.Choice(SERIES_BY),
    default="agent-model",
    show_default=True,
    help="What keeps series apart besides the suite and task: the target agent and evaluated "
    "model (a series per agent, split by model where it varies), the agent, or nothing "
    "(suite: every agent and model in one series) (E-151).",
)
@click.option(
    "--nights-by",
    type=click.Choice(NIGHTS_BY),
    default="auto",
    show_default=True,
    help="What a night is: each output directory given (dir), each UTC day of the eval's start "
    "(day), or each run (run); auto: each directory, or its days where its runs started on "
    "more than one day. The runs of a series in one night are one point, their trials summed "
    "(E-151).",
)
@click.option(
    "--points",
    is_flag=True,
    help="Also print (or put in --json) every point of every series: as long as the history.",
)
@suites_option
@quiet_option("Print no series; what was left out is still told on stderr.")
@filters.run_filter_options
def history(
    out_dirs: tuple[Path, ...],
    as_json: bool,
    alpha: float,
    series_by: SeriesBy,
    nights_by: NightsBy,
    points: bool,
    suite_paths: tuple[str, ...],
    quiet: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
) -> None:
    """Each suite's tasks night by night, across the output directories of `evalbatch run`
    given (one per night, or one holding many nights' runs), as series: one per suite, target
    agent and evaluated model by default, whose runs of one night are one point (their trials
    summed). Shown first: the broken and flaky tasks, worst first, and the nights they changed;
    the rest are counted (--json has a summary per series, --points every point). A run found
    in several directories counts once (the first directory's copy). A night may be given as
    its event logs instead (Parquet or Inspect logs, an eval set): it is graded first, as
    `evalbatch run` grades them (--suites, else each run's host record).

    \b
    Example:
      evalbatch history out/regress --suite-id acme.support.evals.regression

    Exit codes: 0 shown; 2 no directory usable, no graded run (matching the filters) or a
    usage error; 3 shown, but a directory was skipped (named on stderr).
    """
    from evalbatch.history.series import read_history  # polars loads when the command runs
    from evalbatch.history.trends import trends

    found = read_history(
        out_dirs,
        filter_suites,
        since,
        until,
        run_ids=run_ids,
        series_by=series_by,
        nights_by=nights_by,
        suites=suite_paths,
    )
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
        echo_json(history_json(found, flaky, changes, points))
    elif not quiet:
        print_overview(found, flaky)
        if points:
            print_points(found.series)
        print_trends(flaky, changes, alpha)
    _report_left_out(found)
    sys.exit(EXIT_SKIPPED if found.skipped else EXIT_OK)
