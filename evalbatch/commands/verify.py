"""`evalbatch verify EVENTS...`: recompute every eval run and compare with what the host recorded.

`evalbatch.api.verify_paths` does the recomputation and comparison; this module parses the
options and prints the report (`printing.print_verify`, or JSON).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

import click

from evalbatch.commands import faults, filters, printing, resources
from evalbatch.commands.options import (
    default_pass_score_option,
    on_miss_default_option,
    quiet_option,
    renamed_option,
    suites_option,
)
from evalbatch.options import GradeOptions, OnMissDefault, Resources


@click.command(name="verify", cls=faults.Command)
@click.argument("events", nargs=-1, required=True)
@suites_option
@renamed_option(
    "--summaries",
    "summary_paths",
    old_spellings=("--summary",),
    multiple=True,
    type=click.Path(),
    help="A host EvalSummary (GET /runs/{id}/eval-summary), a {runId, summary} wrapper, an "
    "array of them, or JSON lines such as summaries.jsonl (repeatable).",
)
@default_pass_score_option
@on_miss_default_option
@resources.resource_options(batch_events=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@quiet_option("Print only the verdict line: no findings, runs or host-field tables.")
@filters.run_filter_options
def verify_command(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    summary_paths: tuple[str, ...],
    default_pass_score: float,
    on_miss_default: OnMissDefault,
    resources: Resources,
    as_json: bool,
    quiet: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
) -> None:
    """Recompute every eval run in EVENTS and compare with what the host recorded (CONTRACT §8).

    Checks each eval.scored (score, passed), eval.started and eval.completed, and any host
    EvalSummary given with --summaries, within RFC 0244 §B's tolerance (1e-9 relative), plus the
    stream rules of RFC 0244 §B/§E. Every finding is content-free.

    \b
    Example:
      evalbatch verify data/samples/events --suites data/samples/suites

    Exit codes: 0 every run agrees; 1 some host value disagrees; 3 some run could not be
    recomputed or some event file was skipped (and none disagrees); 2 unusable input or no eval
    run.
    """
    from evalbatch import api  # the engine loads when the command runs, not for --help

    options = GradeOptions(default_pass_score=default_pass_score, on_miss_default=on_miss_default)
    report = api.verify_paths(
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
        printing.print_verify(report, tables=not quiet)
    if not report.runs:
        click.echo("evalbatch: no eval run (no eval.started) in the events", err=True)
    sys.exit(report.exit_code)
