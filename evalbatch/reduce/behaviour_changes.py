"""What the candidate did differently on the paired tasks that moved (E-136).

A paired verdict says *that* a suite moved; a reader's next question is *why*. Each side's
counted trials of a task are reduced to a profile: how many matched their tool path and, when
some did not, the most frequent reason (`trajectory_reason`); forbidden calls; fixture misses;
trials failed closed (D-9); and the mean tool calls, model calls, tokens, cost and latency per
trial. A change is a difference between the two profiles of one task. Across tasks, each change
is counted over the tasks that dropped and over those that rose, so the first line names what
most drops share ("tool path no longer matches (missing): 7 of 9 tasks that dropped").

Everything is read from the trials table the grading already wrote (no second read of the
logs), as Polars expressions over all tasks at once. Content-free (§H): reasons are the
trials table's enum, the rest counts and numbers; no tool name, argument or output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

#: the trials columns a profile reads, with their types (the trials table's, E-54)
TRIAL_COLUMNS: dict[str, type[pl.DataType]] = {
    "run_id": pl.String,
    "task_id": pl.String,
    "counted": pl.Boolean,
    "trajectory_matched": pl.Boolean,
    "trajectory_reason": pl.String,
    "forbidden_count": pl.Int64,
    "fixture_misses": pl.Int64,
    "failed_closed": pl.Boolean,
    "tool_call_count": pl.Int64,
    "model_call_count": pl.Int64,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "usage_cost_usd": pl.Float64,
    "latency_ms": pl.Float64,
}

#: an efficiency figure has changed when the candidate's mean per trial differs from the
#: baseline's by at least this share of the baseline's (any difference from a baseline of 0)
RELATIVE_CHANGE = 0.10

#: efficiency figures: (profile column, what the change line calls it)
FIGURES: dict[str, str] = {
    "tool_calls": "tool calls",
    "model_calls": "model calls",
    "tokens": "tokens",
    "cost_usd": "cost",
    "latency_ms": "latency",
}

#: the trajectory reasons the trials table writes (docs/tables.md), in the order a tie is broken
REASONS = ("forbidden", "missing", "order", "extra", "arguments", "no-bracket", "delegates-unseen")


def _profile_exprs() -> list[pl.Expr]:
    """A task's profile over its counted trials."""
    unmatched = pl.col("trajectory_matched").not_()
    return [
        pl.len().alias("trials"),
        pl.col("trajectory_matched").count().alias("path_trials"),  # trials with a path check
        pl.col("trajectory_matched").sum().cast(pl.Int64).alias("path_matched"),
        pl.col("trajectory_reason")
        .filter(unmatched.fill_null(False) & pl.col("trajectory_reason").is_not_null())
        .mode()
        .sort()
        .first()
        .alias("path_reason"),
        pl.col("forbidden_count").fill_null(0).sum().alias("forbidden"),
        pl.col("fixture_misses").fill_null(0).sum().alias("fixture_misses"),
        pl.col("failed_closed").fill_null(False).sum().cast(pl.Int64).alias("failed_closed"),
        pl.col("tool_call_count").mean().alias("tool_calls"),
        pl.col("model_call_count").mean().alias("model_calls"),
        (pl.col("input_tokens") + pl.col("output_tokens")).mean().alias("tokens"),
        pl.col("usage_cost_usd").mean().alias("cost_usd"),
        pl.col("latency_ms").mean().alias("latency_ms"),
    ]


def profiles(trials: pl.DataFrame, run_id: str) -> pl.DataFrame:
    """One row per task of `run_id`: the profile of its counted trials."""
    counted = trials.filter((pl.col("run_id") == run_id) & pl.col("counted").fill_null(False))
    return counted.group_by("task_id").agg(_profile_exprs())


def _changed(base: pl.Expr, cand: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(rose, fell): the candidate's mean is above or below the baseline's by RELATIVE_CHANGE of
    it (by anything from 0); a figure missing on a side has not changed."""
    margin = base.abs() * RELATIVE_CHANGE
    rose = ((cand - base) > 0) & ((cand - base) >= margin)
    fell = ((base - cand) > 0) & ((base - cand) >= margin)
    return rose.fill_null(False), fell.fill_null(False)


def _change_flags() -> dict[str, pl.Expr]:
    """Each change a task can show, as a condition on its two profiles (candidate columns end in
    `_cand`). A path change is keyed by the reason the worse side gives."""
    base_share = pl.col("path_matched") / pl.col("path_trials")
    cand_share = pl.col("path_matched_cand") / pl.col("path_trials_cand")
    flags: dict[str, pl.Expr] = {}
    worse = (cand_share < base_share).fill_null(False)
    better = (cand_share > base_share).fill_null(False)
    for reason in REASONS:
        flags[f"path-broke:{reason}"] = worse & (pl.col("path_reason_cand") == reason).fill_null(
            False
        )
    flags["path-broke:other"] = worse & ~pl.col("path_reason_cand").is_in(REASONS).fill_null(False)
    flags["path-fixed"] = better
    for column, key in (
        ("forbidden", "forbidden-calls"),
        ("fixture_misses", "fixture-misses"),
        ("failed_closed", "failed-closed"),
    ):
        flags[f"{key}:more"] = (pl.col(f"{column}_cand") > pl.col(column)).fill_null(False)
        flags[f"{key}:fewer"] = (pl.col(f"{column}_cand") < pl.col(column)).fill_null(False)
    for column in FIGURES:
        rose, fell = _changed(pl.col(column), pl.col(f"{column}_cand"))
        flags[f"{column.replace('_', '-')}:more"] = rose
        flags[f"{column.replace('_', '-')}:fewer"] = fell
    return flags


#: every change key, in the order ties of the ranking are broken
CHANGE_KEYS: tuple[str, ...] = (*_change_flags(), "none")


def describe_change(key: str) -> str:
    """A change key in words, for the terminal, the Markdown summary and the test report."""
    if key.startswith("path-broke:"):
        return f"tool path no longer matches ({key.split(':', 1)[1]})"
    if key == "path-fixed":
        return "tool path matches where it did not"
    if key == "none":
        return "no change in tool path or efficiency (the host's score moved)"
    name, direction = key.split(":")
    words = {
        "forbidden-calls": "forbidden tool calls",
        "fixture-misses": "fixture misses",
        "failed-closed": "trials failed closed on a fixture miss (D-9)",
        **{column.replace("_", "-"): words for column, words in FIGURES.items()},
    }[name]
    return f"{direction} {words}"


@dataclass
class ChangeCount:
    """One change across the moved tasks: how many of the tasks that moved this way show it."""

    key: str
    tasks: int
    of: int  # the tasks that moved this way
    task_ids: list[str]

    @property
    def description(self) -> str:
        return describe_change(self.key)

    def report(self) -> dict[str, object]:
        return {
            "change": self.key,
            "description": self.description,
            "tasks": self.tasks,
            "of": self.of,
            "taskIds": self.task_ids,
        }


@dataclass
class Changes:
    """The behaviour changes of one suite's comparison (E-136)."""

    dropped: list[ChangeCount] = field(default_factory=list)  # over the tasks that dropped
    rose: list[ChangeCount] = field(default_factory=list)  # over the tasks that rose
    tasks: list[dict[str, Any]] = field(default_factory=list)  # per moved task, taskId order
    dropped_count: int = 0
    rose_count: int = 0

    def report(self) -> dict[str, object]:
        """The `changes` block of `regress --json` (docs/commands/regress.md)."""
        return {
            "tasksDropped": self.dropped_count,
            "tasksRose": self.rose_count,
            "dropped": [c.report() for c in self.dropped],
            "rose": [c.report() for c in self.rose],
            "tasks": self.tasks,
        }


#: a side's profile as the `tasks` entries of the JSON show it: (JSON key, profile column)
_SHOWN = (
    ("trials", "trials"),
    ("pathTrials", "path_trials"),
    ("pathMatched", "path_matched"),
    ("pathReason", "path_reason"),
    ("forbiddenCalls", "forbidden"),
    ("fixtureMisses", "fixture_misses"),
    ("failedClosed", "failed_closed"),
    ("toolCalls", "tool_calls"),
    ("modelCalls", "model_calls"),
    ("tokens", "tokens"),
    ("costUsd", "cost_usd"),
    ("latencyMs", "latency_ms"),
)


def behaviour_changes(
    paired: pl.DataFrame,
    column: str,
    base_trials: pl.DataFrame,
    base_run: str,
    cand_trials: pl.DataFrame,
    cand_run: str,
) -> Changes:
    """The changes behind one suite's comparison. `paired` is `paired_verdict.paired_tasks` of
    the two runs (candidate columns end in `_cand`) and `column` the score the verdict compares;
    a task moved when that score or its pass changed (candidate below or above the baseline)."""
    moved = paired.select(
        "task_id",
        difference=pl.col(f"{column}_cand") - pl.col(column),
        dropped=(pl.col(f"{column}_cand") < pl.col(column))
        | (pl.col("passed") & ~pl.col("passed_cand")),
        rose=(pl.col(f"{column}_cand") > pl.col(column))
        | (~pl.col("passed") & pl.col("passed_cand")),
    ).filter(pl.col("dropped") | pl.col("rose"))
    # a task that lost its pass while its score rose (or the reverse) is counted where its
    # score went; with no score change, where its pass went
    moved = moved.with_columns(
        rose=pl.when(pl.col("difference") != 0)
        .then(pl.col("difference") > 0)
        .otherwise(pl.col("rose") & ~pl.col("dropped"))
    ).with_columns(dropped=~pl.col("rose"))
    both = (
        moved.join(profiles(base_trials, base_run), on="task_id", how="left")
        .join(profiles(cand_trials, cand_run), on="task_id", how="left", suffix="_cand")
        .sort("task_id")
    )
    flags = _change_flags()
    flagged = both.with_columns(**{f"change:{key}": expr for key, expr in flags.items()})
    flag_columns = [f"change:{key}" for key in flags]
    flagged = flagged.with_columns(**{"change:none": ~pl.any_horizontal(flag_columns)})
    changes = Changes(
        dropped_count=int(flagged["dropped"].sum()), rose_count=int(flagged["rose"].sum())
    )
    for direction, counts in (("dropped", changes.dropped), ("rose", changes.rose)):
        side = flagged.filter(pl.col(direction))
        long = side.select(
            "task_id", *[pl.col(f"change:{key}").alias(key) for key in CHANGE_KEYS]
        ).unpivot(index="task_id", variable_name="change", value_name="shown")
        ranked = (
            long.filter("shown")
            .group_by("change")
            .agg(pl.len().alias("tasks"), pl.col("task_id").sort().alias("task_ids"))
            .with_columns(
                order=pl.col("change").replace_strict(
                    {key: i for i, key in enumerate(CHANGE_KEYS)}, return_dtype=pl.Int64
                )
            )
            .sort(["tasks", "order"], descending=[True, False])
        )
        counts.extend(
            ChangeCount(row["change"], row["tasks"], side.height, row["task_ids"])
            for row in ranked.iter_rows(named=True)
        )
    for row in flagged.iter_rows(named=True):
        changes.tasks.append(
            {
                "taskId": row["task_id"],
                "difference": row["difference"],
                "direction": "dropped" if row["dropped"] else "rose",
                "changes": [key for key in CHANGE_KEYS if row[f"change:{key}"]],
                "baseline": {key: row[name] for key, name in _SHOWN},
                "candidate": {key: row[f"{name}_cand"] for key, name in _SHOWN},
            }
        )
    return changes
