"""`evalbatch ingest INPUTS... --out DIR`: OpenWOP event exports to the canonical Parquet layout.

`evalbatch.api.ingest_paths` does the conversion; this module prints its problems and totals.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalbatch.commands import faults, resources
from evalbatch.commands.options import out_option, quiet_option
from evalbatch.commands.printing import plural
from evalbatch.commands.types import printable
from evalbatch.options import Resources

if TYPE_CHECKING:
    from evalbatch.inputs.ingest import IngestReport


@click.command(name="ingest", cls=faults.Command)
@click.argument("inputs", nargs=-1, required=True)
@out_option(
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for the Parquet files (one runId=<id>/ directory per run).",
)
@quiet_option("Print only the totals line.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (the totals, every problem, the files written) instead.",
)
@resources.resource_options()
def ingest_command(
    inputs: tuple[str, ...], out_dir: str, quiet: bool, as_json: bool, resources: Resources
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
    from evalbatch import api  # the engine loads when the command runs, not for --help

    report = api.ingest_paths(list(inputs), out_dir, resources=resources)
    shown = report.problems if not quiet else []
    for problem in shown[:20]:
        label = "skipped" if problem.severity == "error" else "warning"
        click.echo(f"  {label}: {printable(problem.message)}", err=True)
    if len(shown) > 20:
        click.echo(f"  ... and {len(shown) - 20} more", err=True)
    if report.events == 0:
        click.echo(
            f"evalbatch: nothing usable in {plural(report.files, 'input file')}; nothing written",
            err=True,
        )
    if as_json:
        click.echo(json.dumps(_document(report), indent=2, ensure_ascii=False))
    elif report.events:
        problems = f" ({plural(len(report.problems), 'problem')})" if report.problems else ""
        click.echo(
            f"ingested {plural(report.events, 'event')} of {plural(report.runs, 'run')} from "
            f"{plural(report.files, 'file')} into {printable(Path(out_dir))}/{problems}"
        )
        if report.events_already_there:
            click.echo(
                f"  not added again: {plural(report.events_already_there, 'event')} already "
                f"there (same content; {plural(report.runs_already_there, 'run')} had nothing new)"
            )
    sys.exit(report.exit_code)


def _document(report: IngestReport) -> dict[str, Any]:
    """`ingest --json`: the totals, every problem and the Parquet files written."""
    return {
        "out": str(report.out_dir),
        "files": report.files,
        "events": report.events,
        "runs": report.runs,
        "written": [str(path) for path in report.written],
        "eventsAlreadyThere": report.events_already_there,
        "runsAlreadyThere": report.runs_already_there,
        "problems": [
            {
                "path": p.path,
                "where": p.where,
                "code": p.code,
                "severity": p.severity,
                "message": p.message,
            }
            for p in report.problems
        ],
        "exitCode": report.exit_code,
    }
