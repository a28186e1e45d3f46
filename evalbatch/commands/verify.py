"""`evalbatch verify EVENTS...`: recompute every eval run and compare with what the host recorded.

`evalbatch.api.verify_paths` does the recomputation and comparison; this module parses the
options and prints the report (`printing.print_verify`, or JSON).
"""

from __future__ import annotations

import sys
from datetime import datetime

import click

from evalbatch.commands import faults, filters, printing, resources
from evalbatch.commands.click_options import (
    capabilities_option,
    default_pass_score_option,
    on_miss_default_option,
    one_capabilities,
    quiet_option,
    suites_option,
)
from evalbatch.options import GradeOptions, OnMissDefault, Resources
from evalbatch.text import printable


@click.command(
    name="verify",
    cls=faults.Command,
    short_help="Audit a host's records against the recomputation.",
)
@click.argument("events", nargs=-1, required=True)
@suites_option
@click.option(
    "--summaries",
    "summary_paths",
    multiple=True,
    type=click.Path(),
    help="A host EvalSummary (GET /runs/{id}/eval-summary), a {runId, summary} wrapper, an "
    "array of them, or JSON lines such as summaries.jsonl (repeatable).",
)
@capabilities_option
@default_pass_score_option
@on_miss_default_option
@resources.resource_options(batch_events=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@quiet_option(
    "Print only the verdict line: no findings, runs or host-field tables (with --conformance, "
    "no requirement table)."
)
@click.option(
    "--conformance",
    is_flag=True,
    help="Print one row per RFC 0244 requirement instead (executed-pass, executed-fail, "
    "inapplicable, unwitnessable) with its evidence; with --json, one bundle with the evalbatch "
    "version and the inputs' sha256 (E-104).",
)
@filters.run_filter_options
def verify_command(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    summary_paths: tuple[str, ...],
    capabilities_paths: tuple[str, ...],
    default_pass_score: float,
    on_miss_default: OnMissDefault,
    resources: Resources,
    as_json: bool,
    quiet: bool,
    conformance: bool,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
) -> None:
    """Recompute every eval run in EVENTS and compare with the host's record (docs/rules.md §8).

    Checks each eval.scored (score, passed), eval.started and eval.completed, and any host
    EvalSummary given with --summaries, within RFC 0244 §B's tolerance (1e-9 relative), plus the
    stream rules of RFC 0244 §B/§E; with --capabilities, whether the host graded a run it had to
    refuse (RFC 0244 §G: a finding `unadvertised-feature-graded` per field). Every finding is
    content-free. EVENTS may be Inspect eval logs (E-144).

    \b
    Example:
      evalbatch verify data/samples/events --suites data/samples/suites   # exit 1: disagrees

    With --conformance, one row per RFC 0244 requirement instead: executed-pass, executed-fail,
    inapplicable (no run exercised it: the row says what would) or unwitnessable, with the runs
    and counts behind it.

    Exit codes: 0 every run agrees; 1 some host value disagrees (with --conformance: some
    requirement executed-fail); 3 some run could not be recomputed or some event file was
    skipped (and none disagrees); 2 unusable input or no eval run.
    """
    from evalbatch import api  # the engine loads when the command runs, not for --help

    options = GradeOptions(default_pass_score=default_pass_score, on_miss_default=on_miss_default)
    facets = one_capabilities(capabilities_paths)
    report = api.verify_paths(
        list(events),
        list(suite_paths),
        list(summary_paths),
        options=options,
        resources=resources,
        run_filter=filters.build_run_filter(run_ids, filter_suites, since, until),
        capabilities=facets,
        conformance=conformance,
    )
    if conformance:
        if as_json:
            printing.echo_json(report.conformance.to_json())
        else:
            printing.print_conformance(report.conformance, table=not quiet)
    elif as_json:
        printing.echo_json(report.to_json())
    else:
        printing.print_verify(report, tables=not quiet)
    if not report.runs:
        click.echo(
            f"evalbatch: no eval run (no eval.started) in the events of {_named(events)}",
            err=True,
        )
    sys.exit(report.conformance.exit_code if conformance else report.exit_code)


def _named(paths: tuple[str, ...]) -> str:
    """The event paths a command was given, for a message: the first three and how many more."""
    shown = ", ".join(printable(path) for path in paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
