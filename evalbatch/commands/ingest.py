"""`evalbatch ingest INPUTS... --out DIR`: OpenWOP event exports to the canonical Parquet layout.

`evalbatch.api.ingest_paths` does the conversion; this module prints its problems and totals.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalbatch.commands import faults, resources
from evalbatch.commands.click_options import out_option, quiet_option
from evalbatch.commands.printing import echo_json, plural
from evalbatch.commands.types import ByteSize, FiniteFloatRange, printable
from evalbatch.inputs.limits import DEFAULT_LIMITS, InputLimits, size_text
from evalbatch.options import (
    ERRORED_CHOICES,
    MODEL_CLASSES,
    PASS_RULES,
    ErroredSamples,
    PassRule,
    Resources,
    StartingSuiteOptions,
)

if TYPE_CHECKING:
    from evalbatch.inputs.ingest import IngestReport


def _size(count: int) -> str:
    """A default cap as the option takes it: 64MiB."""
    return size_text(count).replace(" ", "")


@click.command(
    name="ingest",
    cls=faults.Command,
    short_help="Convert event exports and Inspect logs to Parquet.",
)
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
@click.option(
    "--inspect-scorer",
    metavar="NAME[/KEY]",
    help="Inspect logs: the scorer whose score counts (NAME/KEY for a scorer whose value is a "
    "dict of scores; default: the log's first scorer).",
)
@click.option(
    "--inspect-pass-score",
    type=FiniteFloatRange(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="Inspect logs: a sample passed when its score is at least this; also the passScore of "
    "the starting suites --write-suites writes (E-149).",
)
@click.option(
    "--inspect-model-class",
    type=click.Choice(MODEL_CLASSES),
    help="Inspect logs: the OpenWOP model class of the model evaluated, written on every "
    "trial's bracket so the summary's evaluatedModelClass says it (an Inspect log does not "
    "say; default: none, E-146).",
)
@click.option(
    "--inspect-errored",
    type=click.Choice(ERRORED_CHOICES),
    default="fail",
    show_default=True,
    help="Inspect logs: a sample that errored is written and fails (fail), or is left out of "
    "the run, as Inspect leaves it out of its figures (leave-out) (E-147).",
)
@click.option(
    "--write-suites",
    "suites_dir",
    type=click.Path(file_okay=False),
    help="Inspect logs: write a starting suite file for each log's task into this directory "
    "(an existing file is left as it is; default: none is written).",
)
@click.option(
    "--pass-rule",
    type=click.Choice(PASS_RULES),  # the values StartingSuiteOptions checks (E-130)
    help="With --write-suites: the starting suites' trials.passRule (§3.5). mean: a sample "
    "passes when its mean score over the epochs reaches --inspect-pass-score, as Inspect's "
    "mean over epochs reads it; all: every epoch passed; any: one did (default: mean, E-149).",
)
@click.option(
    "--max-line-bytes",
    type=ByteSize(),
    default=_size(DEFAULT_LIMITS.max_line_bytes),
    show_default=True,
    help="The most one line, SSE frame or whole JSON document may hold, decompressed (64MiB, "
    "1GiB, or bytes); a longer one is skipped and reported (E-116).",
)
@click.option(
    "--max-member-bytes",
    type=ByteSize(),
    default=_size(DEFAULT_LIMITS.max_member_bytes),
    show_default=True,
    help="The most one compressed file may inflate to; past it the file is read no further "
    "and reported (E-116).",
)
@click.option(
    "--max-ratio",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMITS.max_ratio,
    show_default=True,
    help="The most decompressed bytes per compressed byte, once "
    f"{size_text(DEFAULT_LIMITS.ratio_floor_bytes)} have come out of a compressed file; past "
    "it the file is read no further and reported (E-116).",
)
@resources.resource_options()
def ingest_command(
    inputs: tuple[str, ...],
    out_dir: str,
    quiet: bool,
    as_json: bool,
    inspect_scorer: str | None,
    inspect_pass_score: float,
    inspect_model_class: str | None,
    inspect_errored: ErroredSamples,
    suites_dir: str | None,
    pass_rule: PassRule | None,
    max_line_bytes: int,
    max_member_bytes: int,
    max_ratio: int,
    resources: Resources,
) -> None:
    """Convert OpenWOP event exports to the canonical Parquet layout (docs/rules.md §1.2).

    INPUTS are files, directories (every *.json, *.jsonl, *.ndjson, *.sse, optionally .gz, and
    *.eval) or globs, or - for standard input: JSON lines, JSON arrays of RunEventDocs, poll
    responses, v1 debug bundles, captured SSE streams, and Inspect eval logs (.eval or .json;
    one run per log, one trial per sample and epoch; needs evalbatch[inspect]). A bad line,
    frame or item is reported and skipped: so is JSON nested deeper than 64 levels, and a line
    or file that inflates past the caps below (a gzip file stops being read there).

    \b
    Example:
      evalbatch ingest data/samples/inspect --out out/inspect-events \\
        --write-suites out/inspect-suites
      evalbatch run out/inspect-events --suites out/inspect-suites --out out/inspect

    With --write-suites, each starting suite's passScore is --inspect-pass-score, the bar its
    samples were graded with, and its passRule is --pass-rule (E-149).

    Exit codes: 0 everything ingested; 3 something skipped or known to be missing (a bad line,
    a truncated debug bundle, a damaged gzip file, a cap reached); 2 nothing usable or a usage
    error; 4 the Parquet files could not be written (a full disk: nothing is added).
    """
    if pass_rule is not None and suites_dir is None:
        # a choice that would change nothing is refused, not ignored
        raise click.UsageError(
            "--pass-rule is the passRule of the starting suites --write-suites writes: give "
            "--write-suites DIR"
        )
    from evalbatch import api  # the engine loads when the command runs, not for --help
    from evalbatch.inputs import object_store
    from evalbatch.inputs.inspect_logs import InspectOptions

    object_store.refuse_as_output("--out", out_dir)  # E-153: outputs stay local or shared
    report = api.ingest_paths(
        list(inputs),
        out_dir,
        resources=resources,
        inspect=InspectOptions(
            inspect_scorer, inspect_pass_score, inspect_model_class, inspect_errored
        ),
        suites_dir=suites_dir,
        suite_options=StartingSuiteOptions(pass_rule) if suites_dir is not None else None,
        limits=InputLimits(
            max_line_bytes=max_line_bytes, max_member_bytes=max_member_bytes, max_ratio=max_ratio
        ),
    )
    shown = report.problems if not quiet else []
    for problem in shown[:20]:
        label = "skipped" if problem.severity == "error" else "warning"
        click.echo(f"  {label}: {printable(problem.message)}", err=True)
    if len(shown) > 20:
        click.echo(f"  ... and {len(shown) - 20} more", err=True)
    if report.events == 0:
        click.echo(_nothing_usable(report, inputs), err=True)
    if as_json:
        echo_json(_document(report))
    elif report.events:
        problems = f" ({plural(len(report.problems), 'problem')})" if report.problems else ""
        click.echo(
            f"ingested {plural(report.events, 'event')} of {plural(report.runs, 'run')} from "
            f"{plural(report.files, 'file')} into {printable(Path(out_dir))}/{problems}"
        )
        for suite in report.suites_written:
            click.echo(f"  starting suite written: {printable(suite)}")
        if report.index_files and not quiet:
            click.echo(f"  {_index_note(report)}")
        if report.events_already_there:
            click.echo(
                f"  not added again: {plural(report.events_already_there, 'event')} already "
                f"there (same content; {plural(report.runs_already_there, 'run')} had nothing new)"
            )
    sys.exit(report.exit_code)


def _index_note(report: IngestReport) -> str:
    """The note on an eval set's index files (E-143): how many, and their names, which are
    Inspect's own (never a path's other parts, which may name a task)."""
    return f"not events: {_index_files(report)} left alone"


def _index_files(report: IngestReport) -> str:
    names = ", ".join(sorted({Path(path).name for path in report.index_files}))
    return f"{plural(len(report.index_files), 'Inspect eval-set index file')} ({names})"


def _nothing_usable(report: IngestReport, inputs: tuple[str, ...]) -> str:
    """Exit code 2's line, naming the files read (the first few) or, when none was found,
    the inputs given: which input let the user down is never left to guess."""
    given = ", ".join(printable(name) for name in inputs)
    if not report.paths and report.index_files:
        return (
            f"evalbatch: no events in {given}, only {_index_files(report)}, left alone "
            "(E-143); nothing written"
        )
    if not report.paths:
        return (
            f"evalbatch: no input file found in {given} (directories are searched for *.json, "
            "*.jsonl, *.ndjson, *.sse, optionally .gz, and *.eval); nothing written"
        )
    named = ", ".join(printable(path) for path in report.paths[:_NAMED])
    if len(report.paths) > _NAMED:
        named += f" and {len(report.paths) - _NAMED} more"
    return (
        f"evalbatch: nothing usable in {plural(report.files, 'input file')} ({named}); "
        "nothing written"
    )


#: the files a "nothing usable" line names before it says how many more there were
_NAMED = 5


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
        "suitesWritten": [str(path) for path in report.suites_written],
        "indexFiles": [str(path) for path in report.index_files],
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
