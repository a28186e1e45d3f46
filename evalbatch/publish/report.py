"""One self-contained HTML report of an `evalbatch run` output directory.

The page opens with the verdict (regressions, failing suites, failing tasks and why), so a night
of 500 runs reads from the top. Charts are drawn with matplotlib (`Figure`, no pyplot, so no GUI
backend) and inlined as SVG; when there are more runs than a chart can hold it draws the worst
ones and says so. One small inline script sorts and filters the runs table; without it the page
is the same plain table. The page loads nothing (a Content-Security-Policy forbids it), and the
same outputs give the same bytes (fixed SVG id salt, no dates). Everything shown is an id, a code,
a count or a score (RFC 0244 §H).
"""

from __future__ import annotations

import base64
import hashlib
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evalbatch.errors import EvalbatchError, InputError
from evalbatch.history import series as history_series
from evalbatch.options import GradeOptions
from evalbatch.outputs import output_format
from evalbatch.outputs.outdir import RunOutputs, load, write_atomic
from evalbatch.publish import svg_figures
from evalbatch.publish.comparison_charts import chart_trends, regression_charts
from evalbatch.publish.exports import package_version
from evalbatch.publish.page_markup import (
    esc,
    fmt,
    num_cell,
    quantity,
    run_link,
    run_ref,
    table,
    usd,
    verdict_cell,
)
from evalbatch.publish.report_views import (
    REASONS,
    RegressionView,
    RunView,
    regression_views,
    run_views,
)
from evalbatch.publish.run_charts import (
    chart_cost,
    chart_efficiency,
    chart_failures,
    chart_pass_k,
    chart_suites,
    chart_task_scores,
)
from evalbatch.publish.svg_figures import Chart
from evalbatch.publish.worst_runs import by_score, regressions_first

#: rows of a verdict table shown open; the rest fold under a <details>
VERDICT_ROWS = 10


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
    return (
        shown
        + f"<details><summary>{esc(rest)}</summary>"
        + table(head, rows[VERDICT_ROWS:], numeric)
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


def _regressions_part(items: Sequence[RegressionView], views_by_id: dict[str, RunView]) -> str:
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
    rows = [
        "<tr>"
        f"<td>{run_link(i.candidate)}</td><td>{esc(i.candidate.suite)}</td>"
        f"<td>{run_ref(i.block['baselineRunId'], views_by_id)}</td>"
        + num_cell(i.block["scoreDelta"], f"{float(i.block['scoreDelta']):+.3f}")
        + f"<td class=num>{_interval(i)}</td><td>{esc(i.block['method'])}</td>"
        f"<td class=num>{esc(i.block['pairedTaskCount'])}</td></tr>"
        for i in regressed
    ]
    head = ("candidate run", "suite", "baseline run", "score delta", "interval", "method", "tasks")
    folded = _folded(head, rows, "regression", (3, 4, 6)) if rows else ""
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


def _failing_tasks_part(views: Sequence[RunView]) -> str:
    runs_of: Counter[str] = Counter(v.suite for v in views)
    failed_in: dict[tuple[str, str], list[RunView]] = {}
    reasons: dict[tuple[str, str], Counter[str]] = {}
    for view in sorted(views, key=by_score):
        for task in view.tasks:
            if task["passed"]:
                continue
            key = (view.suite, task["task_id"])
            failed_in.setdefault(key, []).append(view)
            counted = reasons.setdefault(key, Counter())
            for failing in view.failing:
                if failing.task_id == task["task_id"]:
                    counted[failing.reason] += failing.count
    order = sorted(
        failed_in,
        key=lambda key: (-len(failed_in[key]), -sum(reasons[key].values()), key),
    )
    rows = []
    for key in order:
        suite, task_id = key
        runs = failed_in[key]
        rows.append(
            f"<tr><td>{esc(task_id)}</td><td>{esc(suite)}</td>"
            + num_cell(len(runs), f"{len(runs)} of {quantity(runs_of[suite], 'run')}")
            + f"<td>{_reason_counts(reasons[key]) or 'no failed trial'}</td>"
            f"<td>{_links(runs)}</td></tr>"
        )
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


def verdict_section(views: Sequence[RunView], items: Sequence[RegressionView]) -> str:
    """The section the page opens with: one line of verdict, then regressions, failing suites
    and failing tasks, each worst first."""
    views_by_id = {v.run_id: v for v in views}
    regressed = sum(i.block["verdict"] == "regressed" for i in items)
    failed = sum(not v.summary["passed"] for v in views)
    failing_tasks = len(
        {(v.suite, t["task_id"]) for v in views for t in v.tasks if not t["passed"]}
    )
    parts = [
        quantity(regressed, "regression") if regressed else "no regression",
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
        + _regressions_part(items, views_by_id)
        + _failing_suites_part(views)
        + _failing_tasks_part(views)
        + "</section>"
    )


def runs_section(views: Sequence[RunView], out: RunOutputs) -> str:
    """The Runs section: the runs table, then what grading recorded as problems."""
    return (
        '<section id="runs" aria-labelledby="runs-h"><h2 id="runs-h">Runs</h2>'
        + runs_table(views)
        + problems_line(out)
        + "</section>"
    )


def runs_table(views: Sequence[RunView]) -> str:
    """One row per run, in the views' order, with `data-passed` for the failed-only filter."""
    head = (
        "suite@version",
        "run",
        "score",
        "result",
        "tasks passed",
        "failed trials",
        "k",
        "pass@k",
        "pass^k",
        "stderr",
        "cost",
        "regression",
    )
    rows = []
    for view in views:
        s = view.summary
        st = s.get("trialStats") or {}
        reg = s.get("regression")
        regression_text = f"{reg['verdict']} ({float(reg['scoreDelta']):+.3f})" if reg else "–"
        rows.append(
            f'<tr data-passed="{"yes" if s["passed"] else "no"}">'
            f"<td>{esc(view.suite)}</td><td>{run_link(view)}</td>"
            + num_cell(s["aggregateScore"], fmt(float(s["aggregateScore"])))
            + verdict_cell(s["passed"], sortable=True)
            + num_cell(s["passedCount"], f"{s['passedCount']}/{s['taskCount']}")
            + num_cell(view.failed_trials, str(view.failed_trials))
            + num_cell(st.get("k"), fmt(st.get("k")))
            + num_cell(st.get("passAtK"), fmt(st.get("passAtK")))
            + num_cell(st.get("passHatK"), fmt(st.get("passHatK")))
            + num_cell(st.get("scoreStderr"), fmt(st.get("scoreStderr")))
            + num_cell(s.get("totalCostUsd"), usd(s.get("totalCostUsd")))
            + f"<td>{esc(regression_text)}</td></tr>"
        )
    return table(head, rows, (2, 4, 5, 6, 7, 8, 9, 10)).replace(
        "<table>", '<table id="runs-table">', 1
    )


def problems_line(out: RunOutputs) -> str:
    """How many problems grading recorded, by code; nothing when the table was not read."""
    problems = out.tables.get("problems")
    if problems is None:
        return ""
    if problems.height == 0:
        return "<p>No problems were recorded while grading.</p>"
    counts = Counter(problems["code"].to_list())
    listed = ", ".join(f"<code>{esc(c)}</code> × {n}" for c, n in sorted(counts.items()))
    recorded = "problem was" if problems.height == 1 else "problems were"
    return (
        f"<p>{problems.height} {recorded} recorded while grading ({listed}); "
        "see <code>problems.parquet</code>.</p>"
    )


#: sorts the runs table by a click on a column heading and filters it by text and result; the
#: table is complete without it (no row is hidden until the reader filters)
RUNS_SCRIPT = """
(() => {
  const table = document.getElementById("runs-table");
  if (!table) return;
  const body = table.tBodies[0];
  const rows = [...body.rows];
  const texts = rows.map(r => r.textContent.toLowerCase());
  const bar = document.createElement("div");
  bar.className = "filter";
  bar.innerHTML = '<label>Filter runs <input type="search" id="runs-filter" ' +
    'placeholder="run, suite, passed, failed, regressed"></label>' +
    '<label><input type="checkbox" id="runs-failed"> failed only</label>' +
    '<span id="runs-count" aria-live="polite"></span>';
  table.parentNode.before(bar);
  const text = bar.querySelector("#runs-filter");
  const failedOnly = bar.querySelector("#runs-failed");
  const count = bar.querySelector("#runs-count");
  const apply = () => {
    const words = text.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let shown = 0;
    rows.forEach((row, i) => {
      const keep = words.every(w => texts[i].includes(w)) &&
        (!failedOnly.checked || row.dataset.passed === "no");
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    count.textContent = shown + " of " + rows.length + " runs";
  };
  const key = (row, column) => {
    const cell = row.cells[column];
    const value = cell.dataset.v;
    if (value === undefined) return cell.textContent.trim().toLowerCase();
    return value === "" ? null : Number(value);
  };
  const heads = [...table.tHead.rows[0].cells];
  heads.forEach((th, column) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = th.textContent;
    th.textContent = "";
    th.append(button);
    button.addEventListener("click", () => {
      const up = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      const order = rows.map((row, i) => [key(row, column), i, row]);
      order.sort((a, b) => {
        if (a[0] === null || b[0] === null) {
          return a[0] === b[0] ? a[1] - b[1] : a[0] === null ? 1 : -1;
        }
        const c = typeof a[0] === "number" ? a[0] - b[0] : a[0].localeCompare(b[0]);
        return (up ? c : -c) || a[1] - b[1];
      });
      body.append(...order.map(item => item[2]));
    });
  });
  text.addEventListener("input", apply);
  failedOnly.addEventListener("change", apply);
  apply();
})();
"""


def explain_command(view: RunView, task_id: str, trial_index: int | None) -> str:
    """The `evalbatch explain` command that shows why a trial of `view` graded as it did: the
    run's grading options when they are not the defaults, ids shell-quoted. EVENTS and SUITES
    stand for what `evalbatch run` was given (the output directory does not record paths)."""
    defaults = GradeOptions()
    words = ["evalbatch", "explain", "EVENTS", "--suites", "SUITES", "--run-id", view.run_id]
    pass_score = view.options.get("default_pass_score")
    if pass_score is not None and float(pass_score) != defaults.default_pass_score:
        words += ["--default-pass-score", repr(float(pass_score))]
    on_miss = view.options.get("on_miss_default")
    if on_miss is not None and on_miss != defaults.on_miss_default:
        words += ["--on-miss-default", str(on_miss)]
    words += ["--task-id", task_id]
    if trial_index is not None:
        words += ["--trial", str(trial_index)]
    return shlex.join(words)


def run_section(view: RunView, views_by_id: dict[str, RunView]) -> str:
    """A run's verdict line and its failing trials, each with the command that explains it."""
    s = view.summary
    result = (
        '<span class="pass">passed</span>' if s["passed"] else '<span class="fail">failed</span>'
    )
    facts = [
        esc(view.suite),
        f"score {fmt(float(s['aggregateScore']))}",
        f"{s['passedCount']} of {esc(quantity(int(s['taskCount']), 'task'))} passed",
        esc(quantity(view.failed_trials, "failed trial")),
    ]
    reg = s.get("regression")
    if reg:
        facts.append(
            f"{esc(reg['verdict'])} against {run_ref(reg['baselineRunId'], views_by_id)} "
            f"(score delta {float(reg['scoreDelta']):+.3f})"
        )
    rows = [
        "<tr>"
        f"<td>{esc(f.task_id)}</td>"
        + (
            num_cell(f.trial_index, str(f.trial_index))
            if f.trial_index is not None
            else num_cell(None, f"{f.count} missing")
        )
        + f"<td><code>{esc(f.reason)}</code></td>"
        + num_cell(f.score, fmt(f.score))
        + num_cell(f.gating_score, fmt(f.gating_score))
        + f'<td><code class="cmd">{esc(explain_command(view, f.task_id, f.trial_index))}</code>'
        "</td></tr>"
        for f in view.failing
    ]
    failing_table = (
        table(("task", "trial", "reason", "score", "gating", "explain it"), rows, (1, 3, 4))
        if rows
        else ""
    )
    return (
        f'<article class="run" id="{view.anchor}"><h3><code>{esc(view.run_id)}</code> '
        f"{result}</h3><p>{' · '.join(facts)}</p>{failing_table}</article>"
    )


#: what each reason code of a failed trial means, for the page
REASON_LEGEND = (
    "<code>forbidden</code>, <code>missing</code>, <code>extra</code>, <code>order</code>, "
    "<code>no-bracket</code>: the tool path did not match, for that reason (the trials table's "
    "code, E-58; <code>trajectory</code> when it has none); <code>failed-closed</code>: a "
    "fixture miss failed the trial (D-9); <code>trial-missing</code>: trials the log lacks "
    "(D-12); <code>output</code>: a fail on the output grade"
)


def by_run_section(views: Sequence[RunView]) -> str:
    """The Run by run section: the reason codes explained, then each run's section."""
    views_by_id = {v.run_id: v for v in views}
    return (
        '<section id="by-run" aria-labelledby="by-run-h"><h2 id="by-run-h">Run by run</h2>'
        f"<p>Each run's failed trials with their reason code ({REASON_LEGEND}). The command "
        "shows the detail: expected and observed calls and the check that failed. EVENTS and "
        "SUITES stand for the event logs and suite files given to <code>evalbatch run</code>. "
        "Its output names tools and arguments, so it is for the team's own eyes and is not in "
        "this page.</p>" + "".join(run_section(v, views_by_id) for v in views) + "</section>"
    )


def tasks_section(views: Sequence[RunView]) -> str:
    """The Tasks section: every task of every run, folded under a <details>."""
    return (
        '<section id="tasks" aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks</h2>'
        "<details><summary>Every task of every run</summary>"
        + tasks_table(views)
        + "</details></section>"
    )


def tasks_table(views: Sequence[RunView]) -> str:
    """One row per task of each run, in the views' order: scores, counts, cost, latency."""
    head = (
        "<tr><th>suite</th><th>task</th><th class=num>score</th><th class=num>gating</th>"
        "<th>result</th><th class=num>passed/n</th><th class=num>pass@k</th>"
        "<th class=num>pass^k</th><th class=num>cost</th><th class=num>latency ms</th>"
        "<th>trajectory</th><th class=num>fixture misses</th></tr>"
    )
    rows = []
    for view in views:
        for t in view.tasks:
            matched = t.get("trajectory_matched")
            rows.append(
                "<tr>"
                f"<td>{esc(view.label)}</td><td>{esc(t['task_id'])}</td>"
                f"<td class=num>{fmt(t['score'])}</td>"
                f"<td class=num>{fmt(t['gating_score'])}</td>{verdict_cell(bool(t['passed']))}"
                f"<td class=num>{fmt(t['passed_count'])}/{fmt(t['n'])}</td>"
                f"<td class=num>{fmt(t.get('pass_at_k'))}</td>"
                f"<td class=num>{fmt(t.get('pass_hat_k'))}</td>"
                f"<td class=num>{usd(t.get('cost_usd'))}</td>"
                f"<td class=num>{fmt(t.get('latency_ms'))}</td>"
                f"<td>{'–' if matched is None else 'matched' if matched else 'unmatched'}</td>"
                f"<td class=num>{fmt(t.get('fixture_miss_count'))}</td>"
                "</tr>"
            )
    return f'<div class="table-scroll"><table>{head}{"".join(rows)}</table></div>'


@dataclass
class Report:
    """The page and the charts on it."""

    html: str
    charts: list[Chart] = field(default_factory=list)


CSS = """
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d8dee4; --pass: #00704f;
  --fail: #b34700; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
  Arial, sans-serif; color: var(--ink); background: #fff; }
header { background: #0b3d62; color: #fff; padding: 28px 0 22px; }
header h1 { margin: 0 0 4px; font-size: 26px; font-weight: 650; }
header p { margin: 0; color: #cfe0ee; }
.wrap { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
nav { border-bottom: 1px solid var(--line); background: var(--bg); }
nav ol { list-style: none; margin: 0; padding: 10px 0; display: flex; flex-wrap: wrap;
  gap: 4px 18px; }
nav a { color: #0b5c99; text-decoration: none; font-size: 14px; }
nav a:hover { text-decoration: underline; }
section { padding: 22px 0 8px; border-bottom: 1px solid var(--line); }
h2 { font-size: 20px; margin: 0 0 10px; }
figure { margin: 0 0 14px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 13.5px; margin-top: 6px; max-width: 80ch; }
table { border-collapse: collapse; width: 100%; font-size: 13.5px; margin: 6px 0 12px; }
th, td { padding: 5px 7px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: var(--bg); font-weight: 600; vertical-align: bottom; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
.pass { color: var(--pass); font-weight: 600; }
.fail { color: var(--fail); font-weight: 600; }
.table-scroll { overflow-x: auto; }
details summary { cursor: pointer; color: #0b5c99; margin: 4px 0 8px; }
code { font-size: 13px; background: var(--bg); padding: 1px 4px; border-radius: 3px;
  white-space: nowrap; }
footer { color: var(--muted); font-size: 13px; padding: 18px 0 40px; }
h3 { font-size: 16px; margin: 16px 0 4px; }
.lead { font-size: 17px; font-weight: 650; margin: 0 0 8px; padding: 9px 14px;
  border-left: 6px solid; border-radius: 3px; }
.lead.fail { border-color: var(--fail); background: #fcefe6; }
.lead.pass { border-color: var(--pass); background: #e9f5ef; }
.drawn { color: var(--muted); font-size: 13px; margin: 0 0 12px; }
.filter { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; font-size: 14px;
  margin: 4px 0; }
.filter input[type=search] { font: inherit; padding: 3px 6px; width: 24em; max-width: 100%; }
th button { font: inherit; color: inherit; background: none; border: 0; padding: 0;
  cursor: pointer; text-align: inherit; }
th[aria-sort=ascending] button::after { content: " ▲"; }
th[aria-sort=descending] button::after { content: " ▼"; }
article.run { border-top: 1px solid var(--line); padding: 6px 0 2px; }
article.run h3 { margin: 4px 0 2px; }
article.run p { margin: 0 0 6px; }
code.cmd { white-space: normal; overflow-wrap: anywhere; }
"""


def _content_policy(script: str) -> str:
    """The page may run only its own script and load nothing at all."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def _figure_html(chart: Chart) -> str:
    return (
        f'<section id="{chart.anchor}" aria-labelledby="{chart.anchor}-h">'
        f'<h2 id="{chart.anchor}-h">{esc(chart.title)}</h2>'
        f"<figure>{chart.svg}<figcaption>{esc(chart.caption)}</figcaption></figure>"
        f"{chart.more}</section>"
    )


def build_report(
    out: RunOutputs, title: str | None = None, history: pl.DataFrame | None = None
) -> Report:
    """The report page for the outputs in `out` (summaries, tasks, trials; runs and problems
    optional): the verdict, the runs table, the charts, then each run's failing trials. With a
    `history` series (`evalbatch.history.series`), a trend chart per suite of several runs.

    Raises:
        InputError: no graded run.
        EvalbatchError: matplotlib is not installed.
    """
    if not svg_figures.HAVE_MATPLOTLIB:
        raise EvalbatchError("the report needs matplotlib: pip install matplotlib")
    if not out.summaries:
        raise InputError(f"{out.path}: no graded run in summaries.jsonl; nothing to report")
    views = run_views(out)
    items = regression_views(views, out.table("tasks"))
    with svg_figures.chart_style():
        charts = regression_charts(items, {v.run_id: v for v in views})
        charts += chart_trends(history) if history is not None else []
        charts += [
            chart_suites(views),
            chart_pass_k(views),
            chart_task_scores(views),
            chart_failures(views),
            chart_efficiency(views),
        ]
        cost = chart_cost(views)
        if cost is not None:
            charts.append(cost)
    name = out.path.resolve().name or str(out.path)
    page_title = title or f"Eval report: {name}"
    tasks = sum(len(v.tasks) for v in views)
    trials = sum(len(v.trials) for v in views)
    subtitle = (
        f"{quantity(len(views), 'graded eval run')} · {quantity(tasks, 'task')} · "
        f"{quantity(trials, 'trial')} · graded by evalbatch {package_version()} under OpenWOP "
        "RFC 0244"
    )
    drawn = [c for c in charts if not c.anchor.startswith("regression-")]
    contents = [
        ("verdict", "Verdict"),
        ("runs", "Runs"),
        *([("regression-1", "Regression charts")] if len(drawn) < len(charts) else []),
        *((c.anchor, c.title) for c in drawn),
        ("by-run", "Run by run"),
        ("tasks", "Tasks"),
    ]
    nav = "".join(f'<li><a href="#{anchor}">{esc(text)}</a></li>' for anchor, text in contents)
    body = [
        f'<header><div class="wrap"><h1>{esc(page_title)}</h1><p>{esc(subtitle)}</p></div>'
        "</header>",
        f'<nav aria-label="Contents"><div class="wrap"><ol>{nav}</ol></div></nav>',
        '<main class="wrap">',
        verdict_section(views, items),
        runs_section(views, out),
        *(_figure_html(chart) for chart in charts),
        ""
        if cost is not None
        else '<section id="cost" aria-labelledby="cost-h"><h2 id="cost-h">Cost</h2><p>No run '
        "here has a cost: its log has neither provider.usage costEstimateUsd nor eval.scored "
        "costUsd (D-14).</p></section>",
        by_run_section(views),
        tasks_section(views),
        "</main>",
        '<footer><div class="wrap">Ids, codes, counts and scores only: no tool names, arguments '
        "or outputs (RFC 0244 §H). Made from <code>summaries.jsonl</code>, "
        "<code>tasks.parquet</code> and <code>trials.parquet</code>.</div></footer>",
        f"<script>{RUNS_SCRIPT}</script>",
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_content_policy(RUNS_SCRIPT)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(page_title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    return Report(html=page, charts=charts)


def write_report(
    out_dir: str | Path,
    output: str | Path | None = None,
    title: str | None = None,
    history: Sequence[str | Path] = (),
) -> tuple[Path, Report]:
    """Read OUT_DIR, build the report and write it (default OUT_DIR/report.html) whole. With
    `history`, output directories of other nights, the page adds a trend chart per suite over
    their runs and OUT_DIR's (each directory read whole, as `evalbatch history` reads it)."""
    out = load(out_dir, tables=("tasks", "trials"), optional=("runs", "problems"))
    nights = history_series.series([out_dir, *history]) if history else None
    report = build_report(out, title, nights)
    target = Path(output) if output else out.path / output_format.REPORT_FILE
    return write_atomic(target, report.html), report
