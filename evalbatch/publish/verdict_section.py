"""The section the report opens with: one line of verdict, then regressions, failing suites and
failing tasks, each worst first (E-95).

Failing suites group runs by suite and version ("failed in X of Y runs") and failing tasks count
their failed trials by reason code (E-47's order), so 500 runs of a few suites give a few rows;
each table shows VERDICT_ROWS rows and folds the rest, so the verdict fits the first screen.
Under each regression, what changed behind it, as `regress` words it from the tables, with the
`evalbatch regress` command that compares the calls too (E-142).
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence

from evalbatch.outputs.run_inputs import RunInputs
from evalbatch.publish.page_markup import esc, fmt, num_cell, quantity, run_link, run_ref, table
from evalbatch.publish.report_views import REASONS, FailingTask, RegressionView, RunView
from evalbatch.publish.run_detail import given_words
from evalbatch.publish.worst_runs import MAX_REGRESSIONS, by_score, regressions_first
from evalbatch.reduce import behaviour_changes

#: rows of a verdict table shown open; the rest fold under a <details>, at most FOLDED_ROWS of
#: them (a suite of 1,000 failing tasks lists its worst 200; the rest is `evalbatch sql` away)
VERDICT_ROWS = 10
FOLDED_ROWS = 200
#: the verdict line's first part when no run here was compared with a baseline (§5)
NOT_COMPARED = "not compared with a baseline"
#: the sides of the `regress` command where `run` was not given one event path the page can
#: name (a side is one path)
SIDE_PLACEHOLDERS = ("BASE_EVENTS", "CAND_EVENTS")
#: the columns of the regressions table, which a regression's changes span
REGRESSION_HEAD = (
    "candidate run",
    "suite",
    "baseline run",
    "score delta",
    "interval",
    "method",
    "tasks",
)


def _folded(
    head: Sequence[str], rows: Sequence[str], more: str, numeric: Iterable[int] = ()
) -> str:
    """The first VERDICT_ROWS rows as a table, the rest under a <details> (`more`: what they
    are, "failing task"), so the verdict stays short however many runs there are."""
    numeric = list(numeric)
    shown = table(head, rows[:VERDICT_ROWS], numeric)
    if len(rows) <= VERDICT_ROWS:
        return shown
    rest = quantity(len(rows) - VERDICT_ROWS, f"more {more}")
    folded = rows[VERDICT_ROWS : VERDICT_ROWS + FOLDED_ROWS]
    cut = len(rows) - VERDICT_ROWS - len(folded)
    told = (
        f'<p class="drawn">The next {len(folded)} are listed; {cut} more '
        f"{'is' if cut == 1 else 'are'} in the output's tables "
        "(<code>evalbatch sql OUT_DIR</code>).</p>"
        if cut
        else ""
    )
    return (
        shown
        + f"<details><summary>{esc(rest)}</summary>"
        + table(head, folded, numeric)
        + told
        + "</details>"
    )


def _links(views: Sequence[RunView], limit: int = 5) -> str:
    shown = ", ".join(run_link(v) for v in views[:limit])
    return shown + (f" and {len(views) - limit} more" if len(views) > limit else "")


def _reason_counts(reasons: Counter[str]) -> str:
    """`missing × 3, output × 1` in REASONS order."""
    return ", ".join(
        f"<code>{esc(code)}</code> × {reasons[code]}" for code in REASONS if reasons[code]
    )


def _interval(item: RegressionView) -> str:
    comparison = item.comparison
    if comparison is None or comparison.interval is None:
        return "–"
    level = round(100 * (1 - float(item.block["alpha"])), 2)
    low, high = comparison.interval
    return f"{low:+.3f} to {high:+.3f} ({level:g}%)"


def _exact_glob(run_id: str) -> str:
    """A `--run-id` glob matching `run_id` alone, as the run filters match (DuckDB `GLOB`,
    E-63): each of `*`, `?`, `[` and backslash in brackets."""
    return re.sub(r"([*?\[\\])", r"[\1]", run_id)


def _one_events_path(inputs: RunInputs | None) -> str | None:
    """The event path `run` was given, when it was given one the page can name (E-118)."""
    events, _ = given_words(inputs)
    if inputs is not None and len(inputs.events) == 1 and events == list(inputs.events):
        return events[0]
    return None


def regress_command_line(item: RegressionView, inputs: RunInputs | None) -> str:
    """The `evalbatch regress` command that compares a block's two runs from their event logs,
    calls included (E-136): the one event path `run` was given on both sides (E-118; a side is
    one path, so SIDE_PLACEHOLDERS stand in for several or none), the suites as `explain` names
    them, and only the two runs read and graded (`--run-id`), each chosen for its side."""
    _, suites = given_words(inputs)
    path = _one_events_path(inputs)
    sides = [path, path] if path is not None else list(SIDE_PLACEHOLDERS)
    base, cand = str(item.block["baselineRunId"]), item.candidate.run_id
    words = ["evalbatch", "regress", *sides, *suites]
    words += ["--run-id", _exact_glob(base), "--run-id", _exact_glob(cand)]
    words += ["--base-run-id", base, "--cand-run-id", cand]
    return shlex.join(words)


def _changes_row(item: RegressionView, inputs: RunInputs | None) -> str:
    """What changed behind a regression (E-142), in a row under it: per direction the changes
    its tasks share most, as the terminal words and bounds them, then that the calls were not
    compared, with the command that compares them."""
    changes = item.changes
    if changes is None:
        why = item.note.strip() or "not compared"
        body = f"<p>changes: not known: {esc(why[:1].lower() + why[1:])}</p>"
    else:
        body = ""
        for direction in behaviour_changes.direction_lines(changes):
            lines = [f"<li>{esc(line)}</li>" for line in direction.lines]
            if direction.others:
                lines.append(
                    f"<li>{esc(direction.rest)} (the command below lists them with "
                    "<code>--json</code>)</li>"
                )
            body += f"<p>{esc(direction.heading)}</p><ul>{''.join(lines)}</ul>"
        placeholders = ""
        if _one_events_path(inputs) is None:
            placeholders = (
                f" ({' and '.join(SIDE_PLACEHOLDERS)} stand for the event logs of each run)"
            )
        command = regress_command_line(item, inputs)
        body += (
            f'<p class="calls">({esc(behaviour_changes.CALLS_NOT_COMPARED)}) From the event '
            f'logs, calls included{placeholders}: <code class="cmd">{esc(command)}</code></p>'
        )
    return (
        f'<tr class="changes"><td colspan="{len(REGRESSION_HEAD)}">'
        f'<div class="changes">{body}</div></td></tr>'
    )


def _regressions_part(
    items: Sequence[RegressionView], views_by_id: dict[str, RunView], inputs: RunInputs | None
) -> str:
    regressed = [i for i in regressions_first(items) if i.block["verdict"] == "regressed"]
    verdicts = Counter(str(i.block["verdict"]) for i in items)
    if not items:
        told = (
            "<p>No run was compared with a baseline: none names one (eval.started "
            "baselineRunId) that was graded into this directory (RFC 0244 §F).</p>"
        )
    else:
        listed = ", ".join(f"{n} {verdict}" for verdict, n in sorted(verdicts.items()))
        told = (
            f"<p>{esc(quantity(len(items), 'run'))} compared with their baseline: {listed}. "
            "Regressed runs, the largest drop first:</p>"
            if regressed
            else f"<p>None. {esc(quantity(len(items), 'run'))} compared with their baseline: "
            f"{listed}.</p>"
        )
    # a regression and what changed behind it are one row of the table: folded together
    rows = [
        '<tr class="changed">'
        f"<td>{run_link(i.candidate)}</td><td>{esc(i.candidate.suite)}</td>"
        f"<td>{run_ref(i.block['baselineRunId'], views_by_id)}</td>"
        + num_cell(i.block["scoreDelta"], f"{float(i.block['scoreDelta']):+.3f}")
        + f"<td class=num>{_interval(i)}</td><td>{esc(i.block['method'])}</td>"
        f"<td class=num>{esc(i.block['pairedTaskCount'])}</td></tr>" + _changes_row(i, inputs)
        for i in regressed[:MAX_REGRESSIONS]
    ]
    folded = _folded(REGRESSION_HEAD, rows, "regression", (3, 4, 6)) if rows else ""
    if len(regressed) > MAX_REGRESSIONS:
        rest = quantity(len(regressed) - MAX_REGRESSIONS, "more regressed run")
        folded += (
            f'<p class="drawn">{esc(rest)}: the <a href="#runs">runs table</a> (filter '
            "<code>regressed</code>) and <code>runs.parquet</code> hold them.</p>"
        )
    return '<h3 id="regressions">Regressions</h3>' + told + folded


def _failing_suites_part(views: Sequence[RunView]) -> str:
    runs_of: Counter[str] = Counter(v.suite for v in views)
    failed: dict[str, list[RunView]] = {}
    for view in sorted(views, key=by_score):
        if not view.summary["passed"]:
            failed.setdefault(view.suite, []).append(view)
    order = sorted(failed, key=lambda suite: (-len(failed[suite]), suite))
    rows = [
        "<tr>"
        f"<td>{esc(suite)}</td>"
        + num_cell(len(failed[suite]), f"{len(failed[suite])} of {quantity(runs_of[suite], 'run')}")
        + num_cell(
            failed[suite][0].summary["aggregateScore"],
            fmt(float(failed[suite][0].summary["aggregateScore"])),
        )
        + f"<td>{_links(failed[suite])}</td></tr>"
        for suite in order
    ]
    if not rows:
        return '<h3 id="failing-suites">Failing suites</h3><p>None: every suite run passed.</p>'
    return (
        '<h3 id="failing-suites">Failing suites</h3>'
        "<p>Suites with a run that failed (RFC 0244 §B: the gating aggregate, cost and latency "
        "bars), the most failed runs first; each run's section lists its failing trials.</p>"
        + _folded(
            ("suite", "failed runs", "lowest score", "runs, lowest score first"),
            rows,
            "failing suite",
            (1, 2),
        )
    )


def _failing_tasks_part(views: Sequence[RunView], failing: Sequence[FailingTask]) -> str:
    runs_of: Counter[str] = Counter(v.suite for v in views)
    rows = [
        f"<tr><td>{esc(task.task_id)}</td><td>{esc(task.suite)}</td>"
        + num_cell(len(task.runs), f"{len(task.runs)} of {quantity(runs_of[task.suite], 'run')}")
        + f"<td>{_reason_counts(task.reasons) or 'no failed trial'}</td>"
        f"<td>{_links(task.runs)}</td></tr>"
        for task in failing
    ]
    if not rows:
        return '<h3 id="failing-tasks">Failing tasks</h3><p>None: every task passed.</p>'
    return (
        '<h3 id="failing-tasks">Failing tasks</h3>'
        "<p>Tasks that failed in a run, the most runs first, with their failed trials counted by "
        'reason code (see <a href="#by-run">run by run</a>).</p>'
        + _folded(
            ("task", "suite", "failed in", "failed trials by reason", "runs"),
            rows,
            "failing task",
            (2,),
        )
    )


def verdict_section(
    views: Sequence[RunView],
    items: Sequence[RegressionView],
    failing: Sequence[FailingTask],
    inputs: RunInputs | None = None,
) -> str:
    """The section the page opens with: one line of verdict (regressions, or "no regression"
    when runs were compared and none regressed, or NOT_COMPARED when none was; failed suite
    runs; failing tasks), then regressions with what changed behind each (its `regress`
    command naming the paths in `inputs`, E-118), failing suites and failing tasks
    (`report_views.failing_tasks`), each worst first."""
    views_by_id = {v.run_id: v for v in views}
    regressed = sum(i.block["verdict"] == "regressed" for i in items)
    failed = sum(not v.summary["passed"] for v in views)
    failing_tasks = len(failing)
    parts = [
        # "no regression" only where a run was compared with its baseline (§5): where none was,
        # nothing is known of regressions, and the line says so
        quantity(regressed, "regression")
        if regressed
        else "no regression"
        if items
        else NOT_COMPARED,
        f"{failed} of {quantity(len(views), 'suite run')} failed"
        if failed
        else f"{quantity(len(views), 'suite run')} passed",
        quantity(failing_tasks, "failing task") if failing_tasks else "no failing task",
    ]
    state = "fail" if regressed or failed else "pass"
    lead = " · ".join(parts)
    return (
        '<section id="verdict" aria-labelledby="verdict-h"><h2 id="verdict-h">Verdict</h2>'
        f'<p id="verdict-lead" class="lead {state}">{esc(lead[:1].upper() + lead[1:])}</p>'
        + _regressions_part(items, views_by_id, inputs)
        + _failing_suites_part(views)
        + _failing_tasks_part(views, failing)
        + "</section>"
    )
