"""The `evalbatch` command: thin wrappers over `evalbatch.api`.

Errors meant for users are turned into a one-line message and an exit code here, in one place.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from evalbatch import api, outputs, regress, suites
from evalbatch.errors import EvalbatchError
from evalbatch.options import GradeOptions


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalbatch")
def cli() -> None:
    """Grade exported OpenWOP eval-run event logs as RFC 0244 defines."""


class _Progress:
    """Batches graded so far, on one stderr line; only on a terminal and without --quiet."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started = time.monotonic()
        self.shown = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total < 2:
            return
        elapsed = time.monotonic() - self.started
        width = 30
        bar = "#" * (width * done // total)
        click.echo(
            f"\rgrading [{bar:<{width}}] batch {done}/{total}  {elapsed:,.0f} s", err=True, nl=False
        )
        self.shown = True

    def close(self) -> None:
        if self.shown:
            click.echo("", err=True)


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
@click.option(
    "--batch-events",
    type=click.IntRange(1),
    default=api.DEFAULT_BATCH_EVENTS,
    show_default=True,
    help="Grade whole runs in batches of about this many events (bounds memory).",
)
@click.option("--memory-limit", default=None, help="DuckDB memory limit, e.g. 4GB.")
@click.option("--spill-dir", type=click.Path(), default=None, help="Where DuckDB may spill.")
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="ray: grade shards of runs on Ray workers (needs the ray extra).",
)
@click.option("--ray-address", default=None, help="A running Ray cluster (default: start one).")
@click.option("--quiet", is_flag=True, help="Print only where the outputs went.")
def run(
    events: tuple[str, ...],
    suite_paths: tuple[str, ...],
    out_dir: str,
    default_pass_score: float,
    on_miss_default: str,
    threads: int | None,
    batch_events: int,
    memory_limit: str | None,
    spill_dir: str | None,
    engine: str,
    ray_address: str | None,
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
    progress = _Progress(enabled=not quiet and sys.stderr.isatty())
    result = api.grade_paths(
        list(events),
        list(suite_paths),
        options=options,
        threads=threads,
        batch_events=batch_events,
        memory_limit=memory_limit,
        spill_dir=spill_dir,
        on_batch=progress.update,
        engine=engine,  # type: ignore[arg-type]
        ray_address=ray_address,
    )
    progress.close()
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


def _print_comparison(c: regress.Comparison, alpha: float) -> None:
    click.echo(
        f"suite {c.suite_id}@{c.suite_version}: {c.verdict.upper()} ({c.method}, alpha {alpha})"
    )
    click.echo(f"  baseline {c.baseline_run_id} -> candidate {c.candidate_run_id}")
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
        click.echo(f"  no test: {c.reason}")
    if c.moved:
        moved = ", ".join(f"{task} {diff:+.3f}" for task, diff in c.moved)
        click.echo(f"  moved most: {moved}")


@cli.command(name="regress")
@click.argument("base")
@click.argument("cand")
@click.option(
    "--suites", "suite_paths", multiple=True, type=click.Path(), help="Suite file or directory."
)
@click.option(
    "--method", type=click.Choice(regress.METHODS), default="paired-bootstrap", show_default=True
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Two-sided significance level.",
)
@click.option(
    "--margin",
    type=click.FloatRange(0),
    default=0.02,
    show_default=True,
    help="Interval inside ±margin means unchanged (bootstrap, t).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--resamples", type=click.IntRange(10_000), default=10_000, show_default=True)
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
    "--fail-on",
    type=click.Choice(["regressed", "inconclusive"]),
    default="regressed",
    show_default=True,
    help="inconclusive: also exit 1 on an inconclusive verdict.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
def regress_command(
    base: str,
    cand: str,
    suite_paths: tuple[str, ...],
    method: str,
    alpha: float,
    margin: float,
    seed: int,
    resamples: int,
    score_kind: str,
    base_run: str | None,
    cand_run: str | None,
    fail_on: str,
    as_json: bool,
) -> None:
    """Paired regression verdict of CAND against BASE, per suite (RFC 0244 §F).

    Each side is an event log (file, directory or glob; graded with --suites, or from the host
    record) or a tasks.parquet written by `evalbatch run`.

    \b
    Example:
      evalbatch regress data/samples/regress/baseline.parquet \\
        data/samples/regress/candidate.parquet --suites data/samples/suites

    Exit codes: 0 no suite regressed; 1 some suite regressed (or, with --fail-on inconclusive,
    was inconclusive); 2 unusable input.
    """
    options = regress.RegressOptions(
        method=method,  # type: ignore[arg-type]
        alpha=alpha,
        margin=margin,
        seed=seed,
        resamples=resamples,
        score=score_kind,  # type: ignore[arg-type]
    )
    report = api.regress_paths(
        [base], [cand], list(suite_paths), options=options, base_run=base_run, cand_run=cand_run
    )
    if as_json:
        click.echo(json.dumps([c.report() for c in report.comparisons], indent=2))
    else:
        for comparison in report.comparisons:
            _print_comparison(comparison, alpha)
        for line in report.unpaired:
            click.echo(f"not compared (one side only): {line}")
        if not report.comparisons:
            click.echo("no suite is present on both sides")
    code = report.exit_code
    if fail_on == "inconclusive" and any(c.verdict == "inconclusive" for c in report.comparisons):
        code = 1
    sys.exit(code)


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
