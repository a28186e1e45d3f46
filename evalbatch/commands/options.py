"""Options several commands share, defined once so they read and behave the same everywhere."""

from __future__ import annotations

from typing import get_args

import click

from evalbatch.commands.types import FiniteFloatRange
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
