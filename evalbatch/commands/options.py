"""Options several commands share, defined once so they read and behave the same everywhere."""

from __future__ import annotations

from typing import get_args

import click

from evalbatch import api
from evalbatch.commands.types import MAX_THREADS, FiniteFloatRange, MemoryLimit
from evalbatch.options import OnMissDefault

suites_option = click.option(
    "--suites",
    "suite_paths",
    multiple=True,
    type=click.Path(),
    help="Suite file or directory (repeatable); a run without one is graded from the host "
    "record (D-4).",
)
default_pass_score_option = click.option(
    "--default-pass-score",
    type=FiniteFloatRange(0, 1),
    default=1.0,
    show_default=True,
    help="Suite bar when thresholds.passScore is absent (D-15).",
)
on_miss_default_option = click.option(
    "--on-miss-default",
    type=click.Choice(get_args(OnMissDefault)),  # the values GradeOptions is typed with
    default="count",
    show_default=True,
    help="What an absent fixtures.onMiss means (D-9).",
)
threads_option = click.option(
    "--threads",
    type=click.IntRange(1, MAX_THREADS),
    default=None,
    help="DuckDB threads (default: all cores).",
)
memory_limit_option = click.option(
    "--memory-limit",
    type=MemoryLimit(),
    default=None,
    help="DuckDB memory limit: 4GB, 500MiB, 1.5GB, or 80% of the machine's memory.",
)
spill_dir_option = click.option(
    "--temp-dir",
    "--spill-dir",
    "spill_dir",
    type=click.Path(),
    default=None,
    help="Where DuckDB may spill past the memory limit.",
)

#: a verify recomputes exactly as run grades, so they share how runs are batched
batch_events_option = click.option(
    "--batch-events",
    type=click.IntRange(1),
    default=api.DEFAULT_BATCH_EVENTS,
    show_default=True,
    help="Grade whole runs in batches of about this many events (bounds memory).",
)
