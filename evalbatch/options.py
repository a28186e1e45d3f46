"""Options that change how runs are graded: shared by the engine, the reference and the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OnMissDefault = Literal["count", "fail"]


@dataclass(frozen=True)
class GradeOptions:
    """Grading knobs a user can set.

    Attributes:
        default_pass_score: the suite bar when `thresholds.passScore` is absent (D-15).
        on_miss_default: what an absent `fixtures.onMiss` means (D-9): `count` only counts
            misses (the RFC's "unchanged" reading), `fail` fails the trial closed.
    """

    default_pass_score: float = 1.0
    on_miss_default: OnMissDefault = "count"
