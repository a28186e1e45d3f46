"""What the candidate did differently on the paired tasks that moved (E-136).

A paired verdict says *that* a suite moved; a reader's next question is *why*. Each side's
counted trials of a task are reduced to a profile: how many matched their tool path and, when
some did not, the most frequent reason (`trajectory_reason`); forbidden calls; fixture misses;
trials failed closed (D-9); and the mean tool calls, model calls, tokens, cost and latency per
trial. With both sides' calls at hand (event logs graded with `keep_calls`), the tools a task
no longer or newly calls and the argument paths whose values differ are changes too. A change is
a difference between the two sides of one task. Across tasks, each change is counted over the
tasks that dropped, those that rose and those that did not move (its background), and ranked by
how much more the moved tasks show it, so the first line names what most drops share ("no
longer calls billing:refund: 7 of 9").

The profiles come from the trials table the grading already wrote and the calls from the
grading itself (no second read of the logs), as Polars expressions over all tasks at once; only
the input texts the two sides sent differently are parsed, in Python, each once. The changes
name tools and argument paths, never argument values, tool outputs or prompts (§H). Only when
asked (E-141) are the values behind each changed argument path kept beside them, bounded, for
the files a user reads in private; the JSON of the changes never holds them.

Where a reader scans them (the terminal, the report), the first changes of each direction are
worded and bounded once, by `direction_lines`; `table_changes` gives the report the changes of
two runs graded into one output directory, as `regress` gives them for a tasks table (E-142).
"""

from __future__ import annotations

import json
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

#: E-141: the tasks whose argument values a change shows, the values shown per side and task,
#: and the characters of JSON text each keeps (a cut one ends in `…`)
VALUE_TASKS = 3
VALUES_SHOWN = 3
VALUE_CHARS = 60

#: change lines shown per direction where a reader scans them (the terminal, the report); the
#: rest are counted
SHOWN_CHANGES = 3

#: what a comparison says when a side holds no calls (a tasks table): the changes stop at the
#: tables, and the calls are compared only from the event logs
CALLS_NOT_COMPARED = "calls not compared: a side is a tasks table; the calls need its event logs"


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
    if key.startswith("no-longer-calls:"):
        return f"no longer calls {key.split(':', 1)[1]}"
    if key.startswith("newly-calls:"):
        return f"newly calls {key.split(':', 1)[1]}"
    if key.startswith("other-args:"):
        tool, _, path = key.removeprefix("other-args:").rpartition(":")
        return f"calls {tool} with other {path or 'arguments'}"
    name, direction = key.split(":")
    words = {
        "forbidden-calls": "forbidden tool calls",
        "fixture-misses": "fixture misses",
        "failed-closed": "trials failed closed on a fixture miss (D-9)",
        **{column.replace("_", "-"): words for column, words in FIGURES.items()},
    }[name]
    if name in ("cost-usd", "latency-ms"):  # an amount is higher or lower, a count more or fewer
        direction = {"more": "higher", "fewer": "lower"}[direction]
    return f"{direction} {words}"


@dataclass
class ChangeCount:
    """One change across the moved tasks: how many of the tasks that moved this way show it."""

    key: str
    tasks: int
    of: int  # the tasks that moved this way
    task_ids: list[str]
    #: the tasks that did not move and show it too (its background), of how many
    steady: int = 0
    steady_of: int = 0

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
            "steadyTasks": self.steady,
            "steadyOf": self.steady_of,
        }


def _as_json(value: str) -> str:
    """A value as JSON text: a parsed argument's value is one (ASCII, control characters
    escaped); inputs that were not JSON at all are quoted as a JSON string."""
    try:
        json.loads(value)
    except ValueError:
        return json.dumps(value)
    return value


def _shown_values(values: list[str] | None) -> str:
    """One side's values at an argument path as one bounded line: the first VALUES_SHOWN JSON
    texts, each cut to VALUE_CHARS, then how many more; `not sent` when no call of the side
    had the path."""
    if not values:
        return "not sent"
    shown = [_as_json(v) for v in values[:VALUES_SHOWN]]
    shown = [v if len(v) <= VALUE_CHARS else v[: VALUE_CHARS - 1] + "…" for v in shown]
    rest = len(values) - VALUES_SHOWN
    return ", ".join(shown) + (f" and {rest} more" if rest > 0 else "")


@dataclass(frozen=True)
class ArgumentValues:
    """What one task sent at one changed argument path (`other-args`), on each side: argument
    values, content of the logs, so only files asked for with them hold it (E-141)."""

    baseline: str  # `_shown_values` of the baseline's values
    candidate: str


@dataclass
class Changes:
    """The behaviour changes of one suite's comparison (E-136)."""

    dropped: list[ChangeCount] = field(default_factory=list)  # over the tasks that dropped
    rose: list[ChangeCount] = field(default_factory=list)  # over the tasks that rose
    tasks: list[dict[str, Any]] = field(default_factory=list)  # per moved task, taskId order
    dropped_count: int = 0
    rose_count: int = 0
    steady_count: int = 0  # paired tasks that did not move
    #: the calls were compared: both sides were event logs graded here (a tasks table holds no
    #: calls; the call-level view needs the logs)
    call_level: bool = False
    #: E-141, only when asked: (taskId, `other-args` change) -> the values behind it, for each
    #: task that moved; never in `report()` (§H)
    argument_values: dict[tuple[str, str], ArgumentValues] = field(default_factory=dict)

    def examples(self, count: ChangeCount) -> list[tuple[str, ArgumentValues]]:
        """The values behind a change in its first VALUE_TASKS tasks (taskId order), when kept."""
        kept = self.argument_values
        tasks = count.task_ids[:VALUE_TASKS]
        return [(task, kept[task, count.key]) for task in tasks if (task, count.key) in kept]

    def report(self) -> dict[str, object]:
        """The `changes` block of `regress --json` (docs/regress.md): no argument value."""
        return {
            "tasksDropped": self.dropped_count,
            "tasksRose": self.rose_count,
            "tasksSteady": self.steady_count,
            "callLevel": self.call_level,
            "dropped": [c.report() for c in self.dropped],
            "rose": [c.report() for c in self.rose],
            "tasks": self.tasks,
        }


@dataclass(frozen=True)
class DirectionLines:
    """One direction of the bounded summary (`direction_lines`): its heading, its first changes
    as lines and how many it leaves out, in the words the terminal prints and the report
    shows."""

    heading: str
    lines: list[str]
    others: int

    @property
    def rest(self) -> str:
        """The line that counts the changes left out (each front end says where they are)."""
        return f"and {self.others} other change(s)"


def change_line(count: ChangeCount) -> str:
    """`fewer tool calls: 4 of 8`, with how many tasks that did not move show it too."""
    line = f"{count.description}: {count.tasks} of {count.of}"
    if count.steady:
        line += f" (and {count.steady} of {count.steady_of} that did not move)"
    return line


def direction_lines(changes: Changes, limit: int = SHOWN_CHANGES) -> list[DirectionLines]:
    """Per direction some task moved (drops first), its first `limit` changes in rank order and
    a count of the rest: bounded however many tasks moved, one wording wherever it is read."""
    found = []
    for label, counts, moved in (
        ("dropped", changes.dropped, changes.dropped_count),
        ("rose", changes.rose, changes.rose_count),
    ):
        if moved:
            found.append(
                DirectionLines(
                    f"changes in the {moved} task(s) that {label}:",
                    [change_line(count) for count in counts[:limit]],
                    max(len(counts) - limit, 0),
                )
            )
    return found


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


def _argument_values(inputs: str | None) -> list[dict[str, str]]:
    """A call's arguments as {path, value as JSON text}: object keys joined with `.` down to the
    first value that is not an object (an array is one value). Not JSON: one value."""
    try:
        value = json.loads(inputs) if inputs is not None else None
    except ValueError:
        return [{"path": "", "value": inputs or ""}]
    pairs: list[dict[str, str]] = []

    def walk(path: str, item: Any) -> None:
        if isinstance(item, dict) and item:
            for key, inner in item.items():
                walk(f"{path}.{key}" if path else key, inner)
        else:
            pairs.append({"path": path, "value": json.dumps(item, sort_keys=True)})

    walk("", value)
    return pairs


def call_changes(
    task_ids: list[str],
    base_calls: pl.DataFrame,
    base_run: str,
    cand_calls: pl.DataFrame,
    cand_run: str,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(task_id, change) for each call-level change of the tasks named: a tool the baseline
    called and the candidate never does (`no-longer-calls:TOOL`), the reverse
    (`newly-calls:TOOL`), and a tool both call whose argument values at a path differ between
    the two sides (`other-args:TOOL:PATH`; values compared as sets over the task's trials).
    Beside it, the values behind each `other-args` change (task_id, change, base, cand: each
    side's JSON texts, sorted; null where it never sent the path), which E-141 may show."""
    sides = []
    for name, calls, run_id in (("base", base_calls, base_run), ("cand", cand_calls, cand_run)):
        sides.append(
            calls.filter((pl.col("run_id") == run_id) & pl.col("task_id").is_in(task_ids))
            .select("task_id", "tool_name", "inputs")
            .with_columns(side=pl.lit(name))
        )
    calls = pl.concat(sides)
    tools = calls.group_by("task_id", "tool_name").agg(
        base=(pl.col("side") == "base").any(), cand=(pl.col("side") == "cand").any()
    )
    dropped = tools.filter(pl.col("base") & ~pl.col("cand")).select(
        "task_id", change=pl.lit("no-longer-calls:") + pl.col("tool_name")
    )
    added = tools.filter(~pl.col("base") & pl.col("cand")).select(
        "task_id", change=pl.lit("newly-calls:") + pl.col("tool_name")
    )
    key = ["task_id", "tool_name"]
    # which side sent each distinct input text of a task's tool; a tool whose texts both sides
    # sent alike holds the same values at every path, so only the others are parsed, each text
    # once, and compared path by path (no sort of the calls: sets as side flags per value)
    sent = calls.group_by(*key, "inputs").agg(
        base=(pl.col("side") == "base").any(), cand=(pl.col("side") == "cand").any()
    )
    differing = (
        sent.group_by(key)
        .agg(
            alike=(pl.col("base") & pl.col("cand")).all(),
            both=pl.col("base").any() & pl.col("cand").any(),
        )
        .filter(pl.col("both") & ~pl.col("alike"))
        .select(key)
    )
    sent = sent.join(differing, on=key)
    parsed = (
        sent.select("inputs")
        .unique()
        .with_columns(
            pairs=pl.col("inputs").map_elements(
                _argument_values,
                return_dtype=pl.List(pl.Struct({"path": pl.String, "value": pl.String})),
                skip_nulls=False,
            )
        )
        .explode("pairs")
        .unnest("pairs")
    )
    values = (
        sent.join(parsed, on="inputs", how="left", nulls_equal=True)
        .group_by(*key, "path", "value")
        .agg(pl.col("base").any(), pl.col("cand").any())
    )
    paths = (
        values.group_by(*key, "path")
        .agg(alike=(pl.col("base") & pl.col("cand")).all())
        .filter(~pl.col("alike"))
        .select(*key, "path")
    )
    moved = values.join(paths, on=[*key, "path"])

    def side_values(side: str) -> pl.DataFrame:
        """Each changed path's values on `side`, sorted (a path it never sent has none)."""
        return moved.filter(side).group_by(*key, "path").agg(pl.col("value").sort().alias(side))

    other = (
        paths.join(side_values("base"), on=[*key, "path"], how="left")
        .join(side_values("cand"), on=[*key, "path"], how="left")
        .select(
            "task_id",
            change=pl.lit("other-args:") + pl.col("tool_name") + pl.lit(":") + pl.col("path"),
            base="base",
            cand="cand",
        )
    )
    return pl.concat([dropped, added, other.select("task_id", "change")]).unique(), other


def _order(change: pl.Expr) -> pl.Expr:
    """Where a change stands among ties: the calls first (the most specific), then the path,
    then the rest in CHANGE_KEYS order; calls by their text."""
    fixed = {key: i + 1 for i, key in enumerate(CHANGE_KEYS)}
    return (
        pl.when(change.str.contains("^(no-longer-calls|newly-calls|other-args):"))
        .then(0)
        .otherwise(change.replace_strict(fixed, default=len(fixed) + 1, return_dtype=pl.Int64))
    )


def behaviour_changes(
    paired: pl.DataFrame,
    column: str,
    base_trials: pl.DataFrame,
    base_run: str,
    cand_trials: pl.DataFrame,
    cand_run: str,
    calls: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    argument_values: bool = False,
) -> Changes:
    """The changes behind one suite's comparison. `paired` is `paired_verdict.paired_tasks` of
    the two runs (candidate columns end in `_cand`) and `column` the score the verdict compares;
    a task moved when that score or its pass changed (candidate below or above the baseline).
    With `calls` (each side's `shard.counted_calls`), the call-level changes are found too, and
    with `argument_values` the values behind each changed argument path of a moved task are kept
    (E-141: off unless a user asks, since they are the logs' content)."""
    tasks = paired.select(
        "task_id",
        difference=pl.col(f"{column}_cand") - pl.col(column),
        dropped=(pl.col(f"{column}_cand") < pl.col(column))
        | (pl.col("passed") & ~pl.col("passed_cand")),
        rose=(pl.col(f"{column}_cand") > pl.col(column))
        | (~pl.col("passed") & pl.col("passed_cand")),
    )
    # a task that lost its pass while its score rose (or the reverse) is counted where its
    # score went; with no score change, where its pass went; a task that did neither is steady
    moved = pl.col("dropped") | pl.col("rose")
    tasks = tasks.with_columns(
        rose=moved
        & pl.when(pl.col("difference") != 0)
        .then(pl.col("difference") > 0)
        .otherwise(pl.col("rose") & ~pl.col("dropped")),
        steady=~moved,
    ).with_columns(dropped=~pl.col("rose") & ~pl.col("steady"))
    both = (
        tasks.join(profiles(base_trials, base_run), on="task_id", how="left")
        .join(profiles(cand_trials, cand_run), on="task_id", how="left", suffix="_cand")
        .sort("task_id")
    )
    flags = _change_flags()
    flagged = both.with_columns(**{f"change:{key}": expr for key, expr in flags.items()})
    long = flagged.select(
        "task_id", *[pl.col(f"change:{key}").alias(key) for key in flags]
    ).unpivot(index="task_id", variable_name="change", value_name="shown")
    found = long.filter("shown").select("task_id", "change")
    values = None
    if calls is not None:
        task_ids = both["task_id"].to_list()
        by_call, values = call_changes(task_ids, calls[0], base_run, calls[1], cand_run)
        found = pl.concat([found, by_call])
    # a moved task with none of the changes: only the host's score moved
    quiet = both.filter(~pl.col("steady")).select("task_id").join(found, on="task_id", how="anti")
    found = pl.concat([found, quiet.with_columns(change=pl.lit("none"))]).with_columns(
        order=_order(pl.col("change"))
    )
    directions = both.select("task_id", "dropped", "rose", "steady")
    found = found.join(directions, on="task_id").sort("task_id", "order", "change")
    changes = Changes(
        dropped_count=int(both["dropped"].sum()),
        rose_count=int(both["rose"].sum()),
        steady_count=int(both["steady"].sum()),
        call_level=calls is not None,
    )
    # how often each change shows in the tasks that did not move: its background
    background = (
        found.filter("steady").group_by("change").agg(pl.len().cast(pl.Int64).alias("steady"))
    )
    steady_share = pl.col("steady") / max(changes.steady_count, 1)
    for direction, counts in (("dropped", changes.dropped), ("rose", changes.rose)):
        of = changes.dropped_count if direction == "dropped" else changes.rose_count
        ranked = (
            found.filter(pl.col(direction))
            .group_by("change", "order")
            .agg(pl.len().alias("tasks"), pl.col("task_id").sort().alias("task_ids"))
            .join(background, on="change", how="left")
            .with_columns(pl.col("steady").fill_null(0))
            .with_columns(lift=pl.col("tasks") / max(of, 1) - steady_share)
            .sort(["lift", "tasks", "order", "change"], descending=[True, True, False, False])
        )
        counts.extend(
            ChangeCount(
                row["change"],
                row["tasks"],
                of,
                row["task_ids"],
                row["steady"],
                changes.steady_count,
            )
            for row in ranked.iter_rows(named=True)
        )
    both = both.filter(~pl.col("steady"))
    if argument_values and values is not None:
        kept = values.join(both.select("task_id"), on="task_id")  # the moved tasks only
        changes.argument_values = {
            (task, change): ArgumentValues(_shown_values(base), _shown_values(cand))
            for task, change, base, cand in kept.iter_rows()
        }
    per_task = found.group_by("task_id", maintain_order=True).agg(pl.col("change"))
    listed = dict(per_task.iter_rows())
    for row in both.iter_rows(named=True):
        changes.tasks.append(
            {
                "taskId": row["task_id"],
                "difference": row["difference"],
                "direction": "dropped" if row["dropped"] else "rose",
                "changes": listed[row["task_id"]],
                "baseline": {key: row[name] for key, name in _SHOWN},
                "candidate": {key: row[f"{name}_cand"] for key, name in _SHOWN},
            }
        )
    return changes


def table_changes(
    paired: pl.DataFrame, column: str, trials: pl.DataFrame, base_run: str, cand_run: str
) -> Changes:
    """The changes between two runs whose counted trials are in one trials table (an output
    directory of `evalbatch run`): what `regress` gives when its sides are the tables (the same
    profiles and ranking), the calls not compared since the tables hold none (E-142). `paired`
    and `column` are as `behaviour_changes` takes them."""
    both = trials.filter(pl.col("run_id").is_in([base_run, cand_run])).select(list(TRIAL_COLUMNS))
    return behaviour_changes(paired, column, both, base_run, both, cand_run)
