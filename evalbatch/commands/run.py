"""`evalbatch run EVENTS... --out OUT`: grade every eval run into OUT's summaries and tables.

`evalbatch.write_outputs` does the grading; this module parses the options and prints what the
call reports (the tables and lines of `printing`). Faults are one line and their exit code, as
`faults.Command` reports every command's.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from evalbatch.commands import faults, filters, printing, resources
from evalbatch.commands.click_options import (
    default_pass_score_option,
    on_miss_default_option,
    out_option,
    quiet_option,
    suites_option,
)
from evalbatch.commands.types import printable
from evalbatch.options import GradeOptions, OnMissDefault, Resources

if TYPE_CHECKING:
    from evalbatch.pipeline.write import RunReport


@click.command(
    name="run", cls=faults.Command, short_help="Grade eval runs into summaries and tables."
)
@click.argument("events", nargs=-1, required=True)
@suites_option
@out_option(
    "out_dir",
    default="out",
    show_default=True,
    type=click.Path(),
    help="Directory the outputs are written to (created if missing): summaries.jsonl, the "
    "Parquet tables and run-inputs.json (the paths the run was given); with --incremental, "
    "manifest.json too.",
)
@default_pass_score_option
@on_miss_default_option
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
@quiet_option(
    "Print nothing on a clean run: no progress bar, runs table, totals or where the outputs "
    "went; errors (the runs or files skipped) still reach stderr, and the exit code tells."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (totals, problem counts, every run) instead of the table.",
)
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
    as_json: bool,
) -> None:
    """Grade every eval run in EVENTS (Parquet files, Inspect eval logs, directories or globs;
    a log is converted once, as `ingest` converts it, into a cache: E-144) into OUT.

    \b
    Example:
      evalbatch run data/samples/events --suites data/samples/suites --out out/samples

    Exit codes: 0 every run graded; 3 some run or file skipped (see problems.parquet);
    2 unusable input, no eval run selected (OUT is left as it was; see --allow-empty) or a usage
    error; 4 the outputs could not be written (a full disk, a lock file that is a symbolic link,
    with --engine ray a shard that failed for good: the previous ones are unchanged); 5 another
    run is writing to OUT.
    """
    from evalbatch.commands import progress
    from evalbatch.pipeline.write import write_outputs  # the engine loads for a run, not --help

    options = GradeOptions(default_pass_score=default_pass_score, on_miss_default=on_miss_default)
    bar = progress.ProgressBar(enabled=not quiet)
    try:
        report = write_outputs(
            list(events),
            out_dir,
            list(suite_paths),
            options=options,
            resources=resources,
            on_batch=bar.update if bar.enabled else None,
            engine=engine,
            ray_address=ray_address,
            incremental_run=incremental,
            run_filter=filters.build_run_filter(run_ids, filter_suites, since, until),
            allow_empty=allow_empty,
        )
    finally:
        bar.close()
    if report.stale_lock is not None:  # a crashed night is told even with -q
        click.echo(
            f"  note: took over the lock of a run that is gone ({report.stale_lock})", err=True
        )
    graded = report.runs.height - report.carried_runs
    if as_json:
        printing.print_skipped(report.problems)  # errors, told even with -q (E-107)
        document = _document(report, out_dir, incremental, graded, resources)
        printing.echo_json(document)
        sys.exit(report.exit_code)
    if incremental:
        how = "full regrade" if report.full_regrade else "incremental"
        why = f" ({report.regrade_reason})" if report.regrade_reason else ""
        line = (
            f"{how}: graded {printing.plural(graded, 'new or changed eval run')}, "
            f"kept {report.carried_runs} unchanged{why}"
        )
        if report.event_files is not None and report.event_files_read is not None:
            line += f"; read {report.event_files_read} of {report.event_files} event files"
        if not quiet:
            click.echo(line)
        elif report.regrade_reason and not report.first_incremental:
            # previous outputs that failed a check (E-71) are told even with -q
            click.echo(f"note: {line}", err=True)
    if quiet:  # quiet is quiet: a nightly job's cron mails nothing on a clean night (E-107)
        printing.print_skipped(report.problems)  # but the runs it skipped are errors: told
        sys.exit(report.exit_code)
    printing.print_runs(report.runs, kept=report.kept_run_ids)  # a night lists its own (E-152)
    printing.print_problems(report.problems)
    click.echo(
        f"wrote {printing.plural(report.summary_count, 'summary')} to "
        f"{printable(report.written['summaries'])} and tables to {printable(Path(out_dir))}/"
    )
    sys.exit(report.exit_code)


def _document(
    report: RunReport, out_dir: str, incremental: bool, graded: int, resources: Resources
) -> Any:
    """`run --json`: what was written where, the totals, problem counts, every run, and which
    extractor parsed the payloads (E-108) (README: "`run --json`")."""
    from evalbatch.extract import extractor

    return {
        "out": str(Path(out_dir)),
        "files": {name: str(path) for name, path in report.written.items()},
        "summaries": report.summary_count,
        "incremental": {
            "fullRegrade": report.full_regrade,
            "graded": graded,
            "kept": report.carried_runs,
            "reason": report.regrade_reason,
            "eventFiles": report.event_files,
            "eventFilesRead": report.event_files_read,
        }
        if incremental
        else None,
        "totals": printing.RunTotals.of(report.runs).to_json(),
        "problems": printing.problems_json(report.problems),
        "runs": printing.run_json(report.runs),
        "extractor": extractor.describe(resources.extractor),
        "exitCode": report.exit_code,
    }
