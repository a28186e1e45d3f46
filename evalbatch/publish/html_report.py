"""One self-contained HTML report of an `evalbatch run` output directory: the page shell.

The page opens with the verdict (regressions, failing suites, failing tasks and why), so a night
of 10,000 runs reads from the top; then the runs table, the charts, and the failing trials and
tasks of the runs shown in full (E-106). This module puts the page together: the head with
its Content-Security-Policy (the page loads nothing and runs only the runs table's script, by
its hash), the stylesheet, the contents, the sections in order and the footer; and it writes
the page whole. The same outputs give the same bytes (fixed SVG id salt, no dates). Everything
shown is an id, a code, a count or a score (RFC 0244 §H).

What is shown is computed in `report_views`; the sections are `verdict_section`, `runs_table`
and `run_detail`; the charts `run_charts` and `comparison_charts`, drawn by `svg_figures`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evalbatch.errors import EvalbatchError, InputError
from evalbatch.files import write_atomic
from evalbatch.history import series as history_series
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.outputs import output_format
from evalbatch.outputs.destinations import Inputs, refuse_overwrite
from evalbatch.outputs.outdir import RunOutputs, load
from evalbatch.publish import svg_figures
from evalbatch.publish.comparison_charts import chart_trends, regression_charts
from evalbatch.publish.exports import package_version
from evalbatch.publish.page_markup import esc, quantity
from evalbatch.publish.report_views import failing_tasks, regression_views, run_views
from evalbatch.publish.run_charts import (
    chart_cost,
    chart_efficiency,
    chart_failures,
    chart_pass_k,
    chart_suites,
    chart_task_scores,
)
from evalbatch.publish.run_detail import by_run_section, tasks_section
from evalbatch.publish.runs_table import RUNS_SCRIPT, runs_section
from evalbatch.publish.svg_figures import Chart
from evalbatch.publish.verdict_section import verdict_section
from evalbatch.publish.worst_runs import DETAIL_RUNS, MAX_REGRESSIONS, detail_views
from evalbatch.text import printable


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
small.names { display: block; color: var(--muted); overflow-wrap: anywhere; }
tr.changed > td { border-bottom: 0; }
tr.changes > td { padding-top: 0; }
div.changes { font-size: 13px; overflow-wrap: anywhere; }
div.changes p { margin: 2px 0; }
div.changes ul { margin: 0 0 4px; padding-left: 22px; }
div.changes p.calls { color: var(--muted); }
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
    out: RunOutputs,
    title: str | None = None,
    history: pl.DataFrame | None = None,
    *,
    detail_runs: int = DETAIL_RUNS,
    run_ids: Sequence[str] = (),
) -> Report:
    """The report page for the outputs in `out` (summaries, tasks, trials; runs and problems
    optional): the verdict, the runs table, the charts, then each run's failing trials. With a
    `history` series (`evalbatch.history.series`), a trend chart per series of several nights.

    Bounded by design (E-106): the verdict counts every run, the runs table holds every run
    (drawn a page at a time from embedded data), the charts draw the worst; the runs shown in
    full (their failing trials and tasks) are the `detail_runs` lowest-scoring, or the runs
    named in `run_ids`, and every other run links to the command that writes it in full.

    Raises:
        InputError: no graded run, or a run named in `run_ids` that is not graded here.
        EvalbatchError: matplotlib is not installed.
    """
    if not svg_figures.HAVE_MATPLOTLIB:
        raise EvalbatchError("the report needs matplotlib: pip install matplotlib")
    if not out.summaries:
        raise InputError(f"{out.path}: no graded run in summaries.jsonl; nothing to report")
    views = run_views(out)
    unknown = sorted(set(run_ids) - {v.run_id for v in views})
    if unknown:
        listed = ", ".join(printable(run) for run in unknown[:5])
        raise InputError(f"{out.path}: no graded run {listed} here (--run-id)")
    shown = detail_views(views, detail_runs, run_ids)
    in_full = {v.run_id for v in shown.views}
    for view in views:
        if view.run_id not in in_full:
            view.anchor = ""  # no section of its own: its links lead to #more-runs
    items = regression_views(
        views, out.table("tasks"), compared=MAX_REGRESSIONS, trials=out.table("trials")
    )
    failing = failing_tasks(out, views)
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
    tasks = out.table("tasks").height
    trials = out.table("trials").filter(pl.col("counted")).height
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
        verdict_section(views, items, failing, out.inputs),
        runs_section(views, out),
        *(_figure_html(chart) for chart in charts),
        ""
        if cost is not None
        else '<section id="cost" aria-labelledby="cost-h"><h2 id="cost-h">Cost</h2><p>No run '
        "here has a cost: its log has neither provider.usage costEstimateUsd nor eval.scored "
        "costUsd (D-14).</p></section>",
        by_run_section(views, shown, whole=bool(run_ids), inputs=out.inputs),
        tasks_section(views, shown, whole=bool(run_ids)),
        "</main>",
        '<footer><div class="wrap">Ids, codes, counts and scores only'
        + (", and the paths given to <code>evalbatch run</code>" if out.inputs else "")
        + ": no tool names, arguments or outputs (RFC 0244 §H). Made from "
        "<code>summaries.jsonl</code>, <code>tasks.parquet</code> and <code>trials.parquet</code>"
        + (" (and <code>run-inputs.json</code>, E-118)" if out.inputs else "")
        + ".</div></footer>",
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
    *,
    detail_runs: int = DETAIL_RUNS,
    run_ids: Sequence[str] = (),
    suites: Paths = (),
) -> tuple[Path, Report]:
    """Read OUT_DIR, build the report and write it (default OUT_DIR/report.html) whole. With
    `history`, output directories of other nights, the page adds a trend chart per series over
    their runs and OUT_DIR's (each directory read whole, as `evalbatch history` reads it).
    OUT_DIR and each `history` path may be event logs instead (Parquet files, Inspect logs or
    an eval set: E-151), graded as `evalbatch run` grades them, with `suites` (else from each
    run's host record, D-4); the page then goes to report.html in the current directory unless
    `output` names another. `detail_runs` and `run_ids` choose the runs shown in full (see
    `build_report`). The page never replaces a file it is made from (E-120).

    Raises:
        InputError: OUT_DIR or a `history` directory cannot be read (`outdir.load`), or `output`
            is one of their files.
        OutputError: the page could not be written."""
    logs = history_series.holds_event_logs(Path(out_dir))
    default = Path(output_format.REPORT_FILE) if logs else Path(out_dir) / output_format.REPORT_FILE
    target = Path(output) if output else default
    given = [out_dir, *history]
    reads = Inputs(
        events=[p for p in given if history_series.holds_event_logs(Path(p))],
        suites=as_paths(suites),
        out_dirs=[p for p in given if not history_series.holds_event_logs(Path(p))],
    )
    refuse_overwrite("--out", target, reads)
    if logs and title is None:  # named by the logs, not the scratch directory they went to
        title = f"Eval report: {Path(out_dir).resolve().name}"
    with history_series.graded_night(Path(out_dir), suites) as graded:
        out = load(graded)
        nights = history_series.series([out_dir, *history], suites=suites) if history else None
        report = build_report(out, title, nights, detail_runs=detail_runs, run_ids=run_ids)
    return write_atomic(target, report.html), report
