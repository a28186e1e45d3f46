"""The `evalbatch` command: thin wrappers over `evalbatch.api`.

Errors meant for users are turned into a one-line message and an exit code in one place,
`evalbatch.commands.faults`, for every command; `main()` adds what only a process can do (library
warnings kept off stderr, the internal-error line).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import click
import polars as pl

from evalbatch import api
from evalbatch.commands import faults, filters, resources
from evalbatch.commands.explain import explain
from evalbatch.commands.export import export
from evalbatch.commands.options import default_pass_score_option as _default_pass_score_option
from evalbatch.commands.options import on_miss_default_option as _on_miss_default_option
from evalbatch.commands.options import suites_option as _suites_option
from evalbatch.commands.report import report
from evalbatch.commands.sql import sql_command
from evalbatch.commands.types import FiniteFloatRange, printable
from evalbatch.errors import EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE
from evalbatch.inputs import ingest, suites
from evalbatch.options import GradeOptions, OnMissDefault, Resources
from evalbatch.reduce import regression
from evalbatch.verify import host_audit


@click.group(cls=faults.Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalbatch")
def cli() -> None:
    """Grade exported OpenWOP eval-run event logs as RFC 0244 defines."""


class _Progress:
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


def _print_runs(runs: pl.DataFrame) -> None:
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


def _print_problems(problems: pl.DataFrame, limit: int = 20) -> None:
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


@cli.command()
@click.argument("events", nargs=-1, required=True)
@_suites_option
@click.option(
    "--out",
    "out_dir",
    default="out",
    show_default=True,
    type=click.Path(),
    help="Output directory.",
)
@_default_pass_score_option
@_on_miss_default_option
@resources.resource_options(batch_events=True)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="ray: grade shards of runs on Ray workers (needs the ray extra).",
)
@click.option("--ray-address", default=None, help="A running Ray cluster (default: start one).")
@click.option(
    "--incremental",
    is_flag=True,
    help="Grade only runs new or changed since the last --incremental run into OUT (its "
    "manifest.json); carry the rest over. The outputs equal a full regrade's.",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="When the events and filters select no eval run, write empty outputs (exit 0) "
    "instead of stopping with exit code 2 and leaving OUT as it was.",
)
@filters.run_filter_options
@click.option("--quiet", is_flag=True, help="Print only where the outputs went.")
def run(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    out_dir: str,
    default_pass_score: float,
    on_miss_default: OnMissDefault,
    resources: Resources,
    engine: Literal["local", "ray"],
    ray_address: str | None,
    incremental: bool,
    allow_empty: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    quiet: bool,
) -> None:
    """Grade every eval run in EVENTS (Parquet files, directories or globs) into OUT.

    \b
    Example:
      evalbatch run data/samples/events --suites data/samples/suites --out out/samples

    Exit codes: 0 every run graded; 3 some run or file skipped (see problems.parquet);
    2 unusable input, no eval run selected (OUT is left as it was; see --allow-empty) or a usage
    error; 4 the outputs could not be written (a full disk, a lock file that is a symbolic link:
    the previous ones are unchanged); 5 another run is writing to OUT.
    """
    options = GradeOptions(default_pass_score=default_pass_score, on_miss_default=on_miss_default)
    progress = _Progress(enabled=not quiet and sys.stderr.isatty())
    try:
        report = api.write_outputs(
            list(events),
            out_dir,
            list(suite_paths),
            options=options,
            resources=resources,
            on_batch=progress.update,
            engine=engine,
            ray_address=ray_address,
            incremental_run=incremental,
            run_filter=filters.build(run_ids, filter_suites, since, until),
            allow_empty=allow_empty,
        )
    finally:
        progress.close()
    written = report.written
    if report.stale_lock is not None:
        click.echo(
            f"  note: took over the lock of a run that is gone ({report.stale_lock})", err=True
        )
    if incremental:
        graded = report.runs.height - report.carried_runs
        how = "full regrade" if report.full_regrade else "incremental"
        why = f" ({report.regrade_reason})" if report.regrade_reason else ""
        click.echo(
            f"{how}: graded {graded} new or changed eval runs, "
            f"kept {report.carried_runs} unchanged{why}"
        )
    if not quiet:
        _print_runs(report.runs)
        _print_problems(report.problems)
    click.echo(
        f"wrote {report.summary_count} summaries to {printable(written['summaries'])} "
        f"and tables to {printable(Path(out_dir))}/"
    )
    sys.exit(report.exit_code)


def _suite_file(path: Path) -> suites.SuiteFile:
    """One file as `validate` judges it: read strictly as JSON (`SuiteFileError` when it cannot
    be), then every fault of the document, a missing `suiteId` or `version` included."""
    doc = suites._read_json(path)
    return suites.SuiteFile(path=str(path), doc=doc, faults=tuple(suites.validate_suite(doc)))


@cli.command()
@click.argument("suite_paths", nargs=-1, required=True)
def validate(suite_paths: tuple[str, ...]) -> None:
    """Check suite files (or directories of them) against the schema and the suite rules.

    \b
    Example:
      evalbatch validate data/samples/suites

    Prints each fault with its JSON path. Exit codes: 0 valid (warnings allowed); 1 some suite is
    invalid (a fault of the schema or the suite rules, no suiteId or version, two different
    copies of one suite); 2 a file cannot be read as JSON, or a path holds no suite file (a
    directory is searched for *.json).
    """
    checked: list[suites.SuiteFile] = []
    seen: set[Path] = set()
    invalid = unusable = 0
    for given in suite_paths:
        try:
            paths = suites._expand(given)
        except suites.SuiteFileError as exc:
            click.echo(f"evalbatch: {printable(exc)}", err=True)
            unusable += 1
            continue
        if not paths:
            click.echo(
                f"evalbatch: no suite file found in {printable(given)} (no *.json in it)", err=True
            )
            unusable += 1
        for path in paths:
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            try:
                suite_file = _suite_file(path)
            except suites.SuiteFileError as exc:
                click.echo(f"evalbatch: {printable(exc)}", err=True)
                unusable += 1
                continue
            where = printable(suite_file.path)
            if not suite_file.faults:
                click.echo(f"{where}: ok")
            for fault in suite_file.faults:
                click.echo(f"{where}: {printable(fault)}")
            invalid += bool(suite_file.errors)
            checked.append(suite_file)
    matchable = [
        f for f in checked if isinstance(f.doc, dict) and suites.suite_ids(f.doc) is not None
    ]
    for choice in suites.resolve_suites(matchable).values():
        if choice.problem == "suite-conflict":
            click.echo(printable(f"{', '.join(choice.paths)}: error: {choice.message}"))
            invalid += 1
    sys.exit(EXIT_UNUSABLE if unusable else EXIT_FAILED if invalid else EXIT_OK)


def _print_comparison(c: regression.Comparison, alpha: float) -> None:
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


@cli.command(name="regress")
@click.argument("base")
@click.argument("cand")
@click.option(
    "--suites", "suite_paths", multiple=True, type=click.Path(), help="Suite file or directory."
)
@click.option(
    "--method",
    type=click.Choice(regression.METHODS),
    default="paired-bootstrap",
    show_default=True,
    help="The paired test: bootstrap percentile interval, Student t, exact sign test, or exact "
    "McNemar on task passes (§5).",
)
@click.option(
    "--alpha",
    type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Two-sided significance level.",
)
@click.option(
    "--margin",
    type=FiniteFloatRange(0),
    default=0.02,
    show_default=True,
    help="Interval inside ±margin means unchanged (bootstrap, t).",
)
@click.option(
    "--seed", type=click.IntRange(0), default=0, show_default=True, help="Bootstrap seed."
)
@click.option(
    "--resamples",
    type=click.IntRange(10_000),
    default=10_000,
    show_default=True,
    help="Bootstrap resamples of the tasks (at least 10,000, §5).",
)
@click.option(
    "--score",
    "score_kind",
    type=click.Choice(["gating", "output"]),
    default="gating",
    show_default=True,
    help="Compare task gating scores (D-19) or meanScore.",
)
@click.option("--base-run", default=None, help="The baseline run, when BASE holds several.")
@click.option("--cand-run", default=None, help="The candidate run, when CAND holds several.")
@click.option(
    "--allow-mixed",
    is_flag=True,
    help="Compare runs graded differently (suite vs host record, other suite file or grading "
    "options); refused by default.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["regressed", "inconclusive"]),
    default="regressed",
    show_default=True,
    help="inconclusive: also exit 1 on an inconclusive verdict or a suite on one side only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
@filters.run_filter_options
@resources.resource_options()
def regress_command(
    base: str,
    cand: str,
    suite_paths: tuple[str, ...],
    method: regression.Method,
    alpha: float,
    margin: float,
    seed: int,
    resamples: int,
    score_kind: Literal["gating", "output"],
    base_run: str | None,
    cand_run: str | None,
    allow_mixed: bool,
    fail_on: str,
    as_json: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    resources: Resources,
) -> None:
    """Paired regression verdict of CAND against BASE, per suite (RFC 0244 §F).

    Each side is an event log (file, directory or glob; graded with --suites, or from the host
    record) or a tasks.parquet written by `evalbatch run` (with the runs.parquet beside it).

    \b
    Example:
      evalbatch regress data/samples/regress/baseline.parquet \\
        data/samples/regress/candidate.parquet --suites data/samples/suites

    Exit codes: 0 no suite regressed; 1 some suite regressed (or, with --fail-on inconclusive,
    was inconclusive or on one side only); 2 nothing compared (a run of a pair not graded
    included), an unknown run named, sides graded differently (without --allow-mixed), unusable
    input or a usage error.
    """
    options = regression.RegressOptions(
        method=method,
        alpha=alpha,
        margin=margin,
        seed=seed,
        resamples=resamples,
        score=score_kind,
    )
    report = api.regress_paths(
        [base],
        [cand],
        list(suite_paths),
        options=options,
        base_run=base_run,
        cand_run=cand_run,
        run_filter=filters.build(run_ids, filter_suites, since, until),
        allow_mixed=allow_mixed,
        resources=resources,
    )
    if as_json:
        click.echo(json.dumps(report.report(), indent=2))
    else:
        for comparison in report.comparisons:
            _print_comparison(comparison, alpha)
    for side, suite in report.unpaired:
        # on stderr, loudly, in both modes: a gate that passed should still say what it skipped
        click.echo(
            f"warning: not compared (one side only): {side}: {printable(suite)}",
            err=True,
        )
    for comparison in report.comparisons:
        if comparison.nothing_compared:
            click.echo(
                f"evalbatch: suite {printable(comparison.suite_id)}: nothing was compared: "
                f"{printable(comparison.reason)}",
                err=True,
            )
    code = report.exit_code
    if code == 0 and fail_on == "inconclusive" and not report.shown_safe:
        code = 1
    sys.exit(code)


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


def _run_notes(run: host_audit.RunReport) -> str:
    notes = []
    if run.problems:
        notes.append(f"not recomputed: {', '.join(run.problems)}")
    if run.on_miss_reading:
        notes.append(f"absent onMiss read as {run.on_miss_reading}")
    if run.summary_checked:
        notes.append("summary checked")
    return "; ".join(notes)


def _print_verify(report: host_audit.VerifyReport) -> None:
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


@cli.command(name="verify")
@click.argument("events", nargs=-1, required=True)
@_suites_option
@click.option(
    "--summary",
    "summary_paths",
    multiple=True,
    type=click.Path(),
    help="A host EvalSummary (GET /runs/{id}/eval-summary), a {runId, summary} wrapper, an "
    "array of them, or JSON lines such as summaries.jsonl (repeatable).",
)
@_default_pass_score_option
@_on_miss_default_option
@resources.resource_options(batch_events=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@filters.run_filter_options
def verify_command(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    summary_paths: tuple[str, ...],
    default_pass_score: float,
    on_miss_default: OnMissDefault,
    resources: Resources,
    as_json: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
) -> None:
    """Recompute every eval run in EVENTS and compare with what the host recorded (CONTRACT §8).

    Checks each eval.scored (score, passed), eval.started and eval.completed, and any host
    EvalSummary given with --summary, within RFC 0244 §B's tolerance (1e-9 relative), plus the
    stream rules of RFC 0244 §B/§E. Every finding is content-free.

    \b
    Example:
      evalbatch verify data/samples/events --suites data/samples/suites

    Exit codes: 0 every run agrees; 1 some host value disagrees; 3 some run could not be
    recomputed or some event file was skipped (and none disagrees); 2 unusable input or no eval
    run.
    """
    options = GradeOptions(default_pass_score=default_pass_score, on_miss_default=on_miss_default)
    report = host_audit.verify_paths(
        list(events),
        list(suite_paths),
        list(summary_paths),
        options=options,
        resources=resources,
        run_filter=filters.build(run_ids, filter_suites, since, until),
    )
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        _print_verify(report)
    if not report.runs:
        click.echo("evalbatch: no eval run (no eval.started) in the events", err=True)
    sys.exit(report.exit_code)


@cli.command(name="ingest")
@click.argument("inputs", nargs=-1, required=True)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for the Parquet files (one runId=<id>/ directory per run).",
)
@click.option("--quiet", is_flag=True, help="Print only the totals line.")
@resources.resource_options()
def ingest_command(
    inputs: tuple[str, ...], out_dir: str, quiet: bool, resources: Resources
) -> None:
    """Convert OpenWOP event exports to the canonical Parquet layout (CONTRACT §1.2).

    INPUTS are files, directories (every *.json, *.jsonl, *.ndjson, *.sse, optionally .gz) or
    globs, or - for standard input: JSON lines, JSON arrays of RunEventDocs, poll responses,
    v1 debug bundles and captured SSE streams. A bad line, frame or item is reported and skipped.

    \b
    Example:
      evalbatch ingest exports/*.ndjson --out events/
      evalbatch run events/ --suites suites/

    Exit codes: 0 everything ingested; 3 something skipped or known to be missing (a bad line,
    a truncated debug bundle, a damaged gzip file); 2 nothing usable or a usage error; 4 the
    Parquet files could not be written (a full disk: nothing is added).
    """
    report = ingest.ingest_paths(list(inputs), out_dir, resources=resources)
    shown = report.problems if not quiet else []
    for problem in shown[:20]:
        label = "skipped" if problem.severity == "error" else "warning"
        click.echo(f"  {label}: {problem.message}", err=True)
    if len(shown) > 20:
        click.echo(f"  ... and {len(shown) - 20} more", err=True)
    if report.events == 0:
        click.echo(
            f"evalbatch: nothing usable in {report.files} input file(s); nothing written", err=True
        )
    else:
        problems = f" ({len(report.problems)} problems)" if report.problems else ""
        click.echo(
            f"ingested {report.events} events of {report.runs} runs from {report.files} "
            f"file(s) into {Path(out_dir)}/{problems}"
        )
    sys.exit(report.exit_code)


cli.add_command(sql_command)
cli.add_command(export)
cli.add_command(report)
cli.add_command(explain)


def _route_library_messages(debug: bool) -> None:
    """Warnings and log records of the libraries (Polars, numpy, matplotlib, DuckDB's Python
    side) are for developers, not for a user reading stderr (E-84): they go to the logging
    system, which drops them, or with EVALBATCH_DEBUG=1 prints every one of them."""
    logging.captureWarnings(True)
    if debug:
        warnings.simplefilter("default")
    root = logging.getLogger()
    if not root.handlers:  # a program that set up logging itself keeps its own handlers
        root.addHandler(logging.StreamHandler() if debug else logging.NullHandler())


def main() -> None:
    """Entry point: run the CLI; a fault `faults.named` can name is one line and its exit code,
    anything else one "internal error" line (the traceback with EVALBATCH_DEBUG=1)."""
    debug = bool(os.environ.get("EVALBATCH_DEBUG"))
    _route_library_messages(debug)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except faults.CommandFailed as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_UNUSABLE)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:
        failure = faults.named(exc)
        if failure is not None:
            failure.show()
            sys.exit(failure.exit_code)
        if debug:
            raise
        # the exception's text may quote the data (a parser's message does): its type only (§H)
        click.echo(
            f"evalbatch: internal error: {type(exc).__name__} "
            "(set EVALBATCH_DEBUG=1 for the traceback and the message)",
            err=True,
        )
        sys.exit(EXIT_UNUSABLE)
