"""The `evalbatch` command: thin wrappers over `evalbatch.api`.

Errors meant for users are turned into a one-line message and an exit code here, in one place.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from evalbatch import api, outputs, suites
from evalbatch.errors import EvalbatchError
from evalbatch.options import GradeOptions


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalbatch")
def cli() -> None:
    """Grade exported OpenWOP eval-run event logs as RFC 0244 defines."""


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def _print_runs(result: api.GradeResult) -> None:
    """A short per-run table: suite, score, pass, tasks passed, trial statistics."""
    if not result.summaries:
        click.echo("no eval run was graded")
    header = (
        f"{'run':<34} {'suite':<34} {'score':>6} {'passed':>6} {'tasks':>7} "
        f"{'pass@k':>7} {'pass^k':>7}"
    )
    if result.summaries:
        click.echo(header)
    for run_id, s in result.summaries.items():
        stats = s.get("trialStats")
        at_k = f"{stats['passAtK']:.3f}" if stats else "-"
        hat_k = f"{stats['passHatK']:.3f}" if stats else "-"
        suite = f"{s['suiteId']}@{s['suiteVersion']}"
        click.echo(
            f"{run_id:<34} {suite:<34} {s['aggregateScore']:>6.3f} {_yes_no(s['passed']):>6} "
            f"{s['passedCount']:>3}/{s['taskCount']:<3} {at_k:>7} {hat_k:>7}"
        )


def _print_problems(result: api.GradeResult, limit: int = 20) -> None:
    counts = result.problems.group_by("severity").len().sort("severity").iter_rows()
    summary = ", ".join(f"{n} {severity}" for severity, n in counts)
    if summary:
        click.echo(f"problems: {summary} (see problems.parquet)")
    errors = result.problems.filter(result.problems["severity"] == "error")
    for message in errors["message"].head(limit):
        click.echo(f"  skipped: {message}", err=True)
    if errors.height > limit:
        click.echo(f"  ... and {errors.height - limit} more", err=True)


@cli.command()
@click.argument("events", nargs=-1, required=True)
@click.option(
    "--suites",
    "suite_paths",
    multiple=True,
    type=click.Path(),
    help="Suite file or directory (repeatable).",
)
@click.option(
    "--out",
    "out_dir",
    default="out",
    show_default=True,
    type=click.Path(),
    help="Output directory.",
)
@click.option(
    "--default-pass-score",
    type=click.FloatRange(0, 1),
    default=1.0,
    show_default=True,
    help="Suite bar when thresholds.passScore is absent (D-15).",
)
@click.option(
    "--on-miss-default",
    type=click.Choice(["count", "fail"]),
    default="count",
    show_default=True,
    help="What an absent fixtures.onMiss means (D-9).",
)
@click.option(
    "--threads", type=click.IntRange(1), default=None, help="DuckDB threads (default: all cores)."
)
@click.option("--quiet", is_flag=True, help="Print only where the outputs went.")
def run(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    out_dir: str,
    default_pass_score: float,
    on_miss_default: str,
    threads: int | None,
    quiet: bool,
) -> None:
    """Grade every eval run in EVENTS (Parquet files, directories or globs) into OUT.

    \b
    Example:
      evalbatch run data/samples/events --suites data/samples/suites --out out/samples

    Exit codes: 0 every run graded; 3 some run or file skipped (see problems.parquet);
    2 unusable input or a usage error.
    """
    options = GradeOptions(default_pass_score=default_pass_score, on_miss_default=on_miss_default)  # type: ignore[arg-type]
    result = api.grade_paths(list(events), list(suite_paths), options=options, threads=threads)
    written = outputs.write(result, out_dir)
    if not quiet:
        _print_runs(result)
        _print_problems(result)
    click.echo(
        f"wrote {len(result.summaries)} summaries to {written['summaries']} "
        f"and tables to {Path(out_dir)}/"
    )
    sys.exit(result.exit_code)


@cli.command()
@click.argument("suite_paths", nargs=-1, required=True)
def validate(suite_paths: tuple[str, ...]) -> None:
    """Check suite files (or directories of them) against the schema and the suite rules.

    \b
    Example:
      evalbatch validate data/samples/suites

    Prints each fault with its JSON path. Exit codes: 0 valid (warnings allowed); 1 some suite is
    invalid; 2 a file cannot be read as a suite.
    """
    files = suites.load_suite_files(list(suite_paths))
    invalid = 0
    for suite_file in files:
        if not suite_file.faults:
            click.echo(f"{suite_file.path}: ok")
        for fault in suite_file.faults:
            click.echo(f"{suite_file.path}: {fault}")
        invalid += bool(suite_file.errors)
    for choice in suites.resolve_suites(files).values():
        if choice.problem == "suite-conflict":
            click.echo(f"{', '.join(choice.paths)}: error: {choice.message}")
            invalid += 1
    sys.exit(1 if invalid else 0)


def main() -> None:
    """Entry point: run the CLI, turning user-facing errors into a message and exit code 2."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(api.EXIT_UNUSABLE)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except EvalbatchError as exc:
        click.echo(f"evalbatch: {exc}", err=True)
        sys.exit(api.EXIT_UNUSABLE)
    except Exception as exc:
        if os.environ.get("EVALBATCH_DEBUG"):
            raise
        click.echo(
            f"evalbatch: internal error: {type(exc).__name__}: {exc} "
            "(set EVALBATCH_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(api.EXIT_UNUSABLE)
