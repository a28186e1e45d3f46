"""`evalbatch ingest INPUTS... --out DIR`: OpenWOP event exports to the canonical Parquet layout.

`evalbatch.api.ingest_paths` does the conversion; this module prints its problems and totals.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalbatch.commands import faults, resources
from evalbatch.commands.options import out_option
from evalbatch.options import Resources


@click.command(name="ingest", cls=faults.Command)
@click.argument("inputs", nargs=-1, required=True)
@out_option(
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
    from evalbatch import api  # the engine loads when the command runs, not for --help

    report = api.ingest_paths(list(inputs), out_dir, resources=resources)
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
