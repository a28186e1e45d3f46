"""One EvalSummary per run (§3.6, §4), built from the reduced task rows of `reduce`.

The layout is one table (E-131): `TASK_FIELDS` and `SUMMARY_FIELDS` list the contract's fields
in its order, each with the column it comes from, its kind, when it is written (the optional
fields of §3), the EvalSummary schema's range for it and the runs- or tasks-table column that
mirrors it. Everything else is built from that table: each summaries.jsonl line as text assembled
from Polars columns (numbers formatted exactly as `json.dumps` formats them), the runs and tasks
rows, and the check that every value written is inside the schema (E-87). A run whose line the
text cannot express, or with a value outside the schema, is rendered from the same table as a
dict instead (the dict path), written with `json.dumps` and validated line by line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any, Literal

import numpy as np
import polars as pl

from evalbatch import options
from evalbatch.grade.suite_tables import suite_key
from evalbatch.inputs.suites import Fault, validate_summary
from evalbatch.reduce import stats

MODEL_CLASSES = frozenset(options.MODEL_CLASSES)


@dataclass(frozen=True)
class RunPlan:
    """What grading needs to know about one run besides its trials."""

    run_id: str
    suite_id: str | None
    suite_version: str | None
    doc: dict[str, Any] | None  # the suite, or None for a no-suite run (D-4)
    trial_count: int | None  # a no-suite run's valid eval.started.trialCount
    has_cost_source: bool  # some provider.usage carries a cost (D-14)

    @property
    def suite_key(self) -> str | None:
        """The key of the run's suite (§1.3), or None for a no-suite run (D-4)."""
        if self.doc is None:
            return None
        # a suite is found only by a run naming both its suiteId and its version
        assert self.suite_id is not None and self.suite_version is not None
        return suite_key(self.suite_id, self.suite_version)


class RunOutcome:
    """One run's summary plus the rows it adds to the tasks table, as dicts (what explain and
    verify read, and what the dict path writes)."""

    def __init__(self, summary: dict[str, Any], task_rows: list[dict[str, Any]]) -> None:
        self._summary = summary
        self._task_rows = task_rows

    @property
    def summary(self) -> dict[str, Any]:
        return self._summary

    @property
    def task_rows(self) -> list[dict[str, Any]]:
        return self._task_rows


def summary_faults(summary: dict[str, Any]) -> list[Fault]:
    """What keeps a summary from being written (§4): its errors against the closed schema and
    the count invariants. `run` leaves such a run out (`summary-invalid`); `verify` names each
    as a finding, since only a value the host wrote (an id) can cause one."""
    return [fault for fault in validate_summary(summary) if fault.severity == "error"]


# --- number text ----------------------------------------------------------------------------


def json_floats(values: pl.Series) -> pl.Series:
    """Each float as `json.dumps` writes it (`float.__repr__`: the shortest text that reads back).

    Polars' cast to text writes the same shortest digits, and the same text as repr for zero and
    for magnitudes of 1e-4 and above; below 1e-4 it writes `0.00001` or `1e-7` where repr writes
    `1e-05` and `1e-07`. Those few are written by NumPy, whose float64 text is repr's (shortest
    round trip, the same switch to exponents) but some twenty times slower than the cast, so it
    is kept to them. Non-finite values are never written by this path (E-87)."""
    text = values.cast(pl.String)
    small = ((values != 0) & (values.abs() < 1e-4)).fill_null(False)
    if not small.any():
        return text
    as_repr = values.filter(small).to_numpy().astype(str)
    return text.scatter(small.arg_true(), pl.Series(as_repr, dtype=pl.String))


# --- the layout (E-131) ---------------------------------------------------------------------

#: how a field is written: a JSON number, integer, boolean or string, an object of `members`, or
#: an array whose items' text is already joined in `value` (the tasks array)
Kind = Literal["number", "integer", "boolean", "text", "object", "array"]


@dataclass(frozen=True)
class Field:
    """One field of the EvalSummary layout.

    `value` is the expression it is written from (over the task rows for a task entry's field,
    over the run rows for the summary's); `shown`, when given, makes it optional: written only
    where true (§3 defines it there); `check` is the schema's range for the value, true only
    where the value may be written (null and NaN fail it); `column` names the runs- or
    tasks-table column that holds the value where the field is written (null elsewhere)."""

    key: str
    kind: Kind
    value: pl.Expr | None = None
    shown: pl.Expr | None = None
    check: Callable[[pl.Expr], pl.Expr] | None = None
    members: tuple[Field, ...] = ()
    column: str | None = None


#: the EvalSummary schema's patterns (evalbatch/schemas/eval-summary.schema.json); a run whose ids
#: do not match takes the dict path, where the schema check names the fault (`summary-invalid`)
SUITE_ID_PATTERN = r"^[a-z0-9.-]+\.evals\.[a-z0-9-]+$"
SUITE_VERSION_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"
TASK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
#: a runId that JSON must escape (a quote, a backslash, a control character)
NEEDS_ESCAPE = r'["\\\x00-\x1f]'
TRAJECTORY_MODES = ("exact", "in-order", "any-order", "subset")
#: integers a float64 holds exactly, so `a / b` or a comparison in Polars is Python's
EXACT_INT = 2**53


def _unit(values: pl.Expr) -> pl.Expr:
    """A value the schema bounds to [0, 1] (false for null and NaN)."""
    return values.is_between(0.0, 1.0).fill_null(False)


def _at_least_zero(values: pl.Expr) -> pl.Expr:
    """A finite value ≥ 0 (false for null, NaN and infinity)."""
    return ((values >= 0) & values.cast(pl.Float64).is_finite()).fill_null(False)


def _count(values: pl.Expr) -> pl.Expr:
    """An integer ≥ 0 (false for null)."""
    return (values >= 0).fill_null(False)


def _matching(pattern: str) -> Callable[[pl.Expr], pl.Expr]:
    return lambda values: values.str.contains(pattern).fill_null(False)


def _one_of(allowed: Iterable[str]) -> Callable[[pl.Expr], pl.Expr]:
    return lambda values: values.is_in(sorted(allowed)).fill_null(False)


_OBSERVED = pl.col("observed") > 0

#: a task entry (§4), in the contract's order, over the reduced task rows (`_task_columns` adds
#: `cost_float` and the `*_mean` efficiency columns)
TASK_FIELDS: tuple[Field, ...] = (
    Field("taskId", "text", pl.col("task_id"), check=_matching(TASK_ID_PATTERN)),
    Field("score", "number", pl.col("mean_score"), check=_unit, column="score"),
    Field("passed", "boolean", pl.col("passed"), column="passed"),
    Field(
        "costUsd",
        "number",
        pl.col("cost_float"),
        shown=pl.col("cost_source").is_not_null(),
        check=_at_least_zero,
        column="cost_usd",
    ),
    Field(
        "latencyMs",
        "integer",
        pl.col("latency_ms"),
        shown=pl.col("latency_ms").is_not_null(),
        check=_count,
        column="latency_ms",
    ),
    Field(
        "trajectory",
        "object",
        shown=pl.col("has_trajectory") & _OBSERVED,
        members=(
            Field("mode", "text", pl.col("last_mode"), check=_one_of(TRAJECTORY_MODES)),
            Field("matched", "boolean", pl.col("last_matched"), column="trajectory_matched"),
            Field("expectedCount", "integer", pl.col("last_expected_count"), check=_count),
            Field("observedCount", "integer", pl.col("last_observed_count"), check=_count),
            Field("matchedCount", "integer", pl.col("last_matched_count"), check=_count),
            Field("forbiddenCount", "integer", pl.col("last_forbidden_count"), check=_count),
        ),
    ),
    Field(
        "trials",
        "object",
        shown=pl.col("trial_blocks"),
        members=(
            Field("n", "integer", pl.col("n"), check=lambda n: (n >= 1).fill_null(False)),
            Field(
                "passedCount",
                "integer",
                pl.col("c"),
                check=lambda c: c.is_between(0, pl.col("n")).fill_null(False),
            ),
            Field("meanScore", "number", pl.col("mean_score"), check=_unit),
            Field("passAtK", "number", pl.col("pass_at_k"), check=_unit, column="pass_at_k"),
            Field("passHatK", "number", pl.col("pass_hat_k"), check=_unit, column="pass_hat_k"),
        ),
    ),
    Field(
        "efficiency",
        "object",
        shown=_OBSERVED,
        members=tuple(
            Field(key, "number", pl.col(f"{name}_mean"), check=_at_least_zero)
            for key, name in (
                ("toolCallCount", "tool_calls"),
                ("modelCallCount", "model_calls"),
                ("inputTokens", "input_tokens"),
                ("outputTokens", "output_tokens"),
            )
        ),
    ),
    Field(
        "fixtureMissCount",
        "integer",
        pl.col("misses"),
        shown=pl.col("has_fixtures"),
        check=_count,
        column="fixture_miss_count",
    ),
)

#: the tasks-table columns that mirror no field of the entry, over the reduced task rows
TASK_ROW_COLUMNS: dict[str, pl.Expr] = {
    "task_pos": pl.col("task_pos"),
    "task_id": pl.col("task_id"),
    "gating_score": pl.col("gating_mean"),
    "n": pl.col("n"),
    "observed_trials": pl.col("observed"),
    "passed_count": pl.col("c"),
    "pass_at_k_by_k": pl.when(pl.col("trial_blocks")).then(pl.col("pass_at_k_by_k")),
    "pass_hat_k_by_k": pl.when(pl.col("trial_blocks")).then(pl.col("pass_hat_k_by_k")),
}

#: the summary (§3.6, §4), in the contract's order, over the run rows of `_columnar_runs`; the
#: tasks array holds one entry of `TASK_FIELDS` per task row (`regression`, §5, is spliced in
#: before it once every batch is graded)
SUMMARY_FIELDS: tuple[Field, ...] = (
    Field(
        "suiteId", "text", pl.col("suite_id"), check=_matching(SUITE_ID_PATTERN), column="suite_id"
    ),
    Field(
        "suiteVersion",
        "text",
        pl.col("suite_version"),
        check=_matching(SUITE_VERSION_PATTERN),
        column="suite_version",
    ),
    Field("aggregateScore", "number", pl.col("aggregate"), check=_unit, column="aggregate_score"),
    Field("passed", "boolean", pl.col("passed"), column="passed"),
    Field("taskCount", "integer", pl.col("task_count"), check=_count, column="task_count"),
    Field(
        "passedCount",
        "integer",
        pl.col("passed_count"),
        check=lambda c: c.is_between(0, pl.col("task_count")).fill_null(False),
        column="passed_count",
    ),
    Field(
        "totalCostUsd",
        "number",
        pl.col("total_cost_usd"),
        shown=pl.col("cost_known"),
        check=_at_least_zero,
        column="total_cost_usd",
    ),
    Field(
        "evaluatedModelClass",
        "text",
        pl.col("evaluated_model_class"),
        shown=pl.col("evaluated_model_class").is_not_null(),
        check=_one_of(MODEL_CLASSES),
        column="evaluated_model_class",
    ),
    Field(
        "trialStats",
        "object",
        shown=pl.col("trial_blocks"),
        members=(
            Field(
                "k", "integer", pl.col("k"), check=lambda k: (k >= 1).fill_null(False), column="k"
            ),
            Field("passAtK", "number", pl.col("run_pass_at_k"), check=_unit, column="pass_at_k"),
            Field("passHatK", "number", pl.col("run_pass_hat_k"), check=_unit, column="pass_hat_k"),
            Field(
                "scoreStderr",
                "number",
                pl.col("score_stderr"),
                shown=pl.col("score_stderr").is_not_null(),
                check=_at_least_zero,
                column="score_stderr",
            ),
        ),
    ),
    Field("tasks", "array", pl.col("entries")),
)

#: the runs-table columns that mirror no field of the summary, over the run rows
RUN_ROW_COLUMNS: dict[str, pl.Expr] = {
    "graded": pl.lit(True),
    "has_suite": pl.col("has_suite"),
}


# --- what is built from the layout ----------------------------------------------------------


def _text(*parts: pl.Expr | str) -> pl.Expr:
    return pl.concat_str([pl.lit(p) if isinstance(p, str) else p for p in parts])


def _value(field: Field) -> pl.Expr:
    assert field.value is not None, field.key
    return field.value


def _value_text(field: Field) -> pl.Expr:
    """A field's value as JSON text (null where a value the kind needs is null)."""
    if field.kind == "object":
        return object_text(field.members)
    value = _value(field)
    if field.kind == "number":
        return value.map_batches(json_floats, return_dtype=pl.String)
    if field.kind == "integer":
        return value.cast(pl.String)
    if field.kind == "boolean":  # `bool(value)`: a null reads false, as in the dict path
        return pl.when(value.fill_null(False)).then(pl.lit("true")).otherwise(pl.lit("false"))
    if field.kind == "text":  # ids and enums the checks keep free of anything JSON escapes
        return _text('"', value, '"')
    return _text("[", value, "]")


def object_text(fields: Sequence[Field]) -> pl.Expr:
    """The fields as one JSON object's text, as `json.dumps` lays it out: `{"key": value, ...}`,
    an optional field only where it is shown."""
    parts: list[pl.Expr | str] = ["{"]
    for i, field in enumerate(fields):
        member = _text(", " if i else "", json.dumps(field.key), ": ", _value_text(field))
        if field.shown is None:
            parts.append(member)
        else:  # the separator rides with the field, so the first one is always written
            assert i > 0, f"{field.key}: an object's first field must always be written"
            parts.append(pl.when(field.shown).then(member).otherwise(pl.lit("")))
    parts.append("}")
    return _text(*parts)


def inside_schema(fields: Sequence[Field]) -> pl.Expr:
    """Whether every value the fields write is one the schema allows (E-87): each check, where
    its field is shown; null reads false."""
    terms: list[pl.Expr] = []
    for field in fields:
        if field.members:
            term = inside_schema(field.members)
        elif field.check is not None:
            term = field.check(_value(field))
        else:
            continue
        terms.append(term if field.shown is None else ~field.shown | term)
    return reduce(lambda a, b: a & b, terms, pl.lit(True)).fill_null(False)


def _flat(fields: Sequence[Field], prefix: str = "") -> Iterable[tuple[str, Field]]:
    """Each field with its path (`trials.n`), parents before their members."""
    for field in fields:
        path = prefix + field.key
        yield path, field
        yield from _flat(field.members, path + ".")


def table_columns(fields: Sequence[Field]) -> dict[str, pl.Expr]:
    """The table columns that mirror a field: its value where it is written, else null (a
    boolean as it is written: a null reads false)."""
    columns: dict[str, pl.Expr] = {}

    def walk(fields: Sequence[Field], shown: pl.Expr | None) -> None:
        for field in fields:
            here = (
                field.shown
                if shown is None
                else (shown if field.shown is None else shown & field.shown)
            )
            if field.column is not None:
                value = _value(field)
                if field.kind == "boolean":
                    value = value.fill_null(False)
                columns[field.column] = value if here is None else pl.when(here).then(value)
            walk(field.members, here)

    walk(fields, None)
    return columns


_PYTHON: dict[str, Callable[[Any], Any]] = {"number": float, "integer": int, "text": str}


def as_dicts(
    frame: pl.DataFrame, fields: Sequence[Field], arrays: Sequence[list[Any]] = ()
) -> list[dict[str, Any]]:
    """Each row of `frame` as the object the fields describe, valued as `json.dumps` would write
    it (the dict path: rows the text cannot express or the checks reject). An array field takes
    its items from `arrays`, row by row."""
    paths = list(_flat(fields))
    columns = {f"v:{path}": field.value for path, field in paths if field.value is not None}
    columns |= {f"s:{path}": field.shown for path, field in paths if field.shown is not None}
    rows = frame.select(**columns).to_dicts() if columns else [{}] * frame.height

    def build(fields: Sequence[Field], row: dict[str, Any], at: int, prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in fields:
            path = prefix + field.key
            if field.shown is not None and not row[f"s:{path}"]:
                continue
            if field.kind == "object":
                out[field.key] = build(field.members, row, at, path + ".")
            elif field.kind == "array":
                out[field.key] = arrays[at]
            elif field.kind == "boolean":
                out[field.key] = bool(row[f"v:{path}"])
            else:
                value = row[f"v:{path}"]
                out[field.key] = None if value is None else _PYTHON[field.kind](value)
        return out

    return [build(fields, row, at, "") for at, row in enumerate(rows)]


# --- the columns (E-87) ---------------------------------------------------------------------


def tied_or(op: str, x: pl.Expr, threshold: pl.Expr) -> pl.Expr:
    """x ≥ t (op "ge") or x ≤ t (op "le") with D-17's tie tolerance, as an expression (what
    `stats.at_least` and `stats.at_most` decide for one pair)."""
    tolerance = stats.TIE_TOLERANCE * pl.max_horizontal(pl.lit(1.0), threshold.abs())
    tied = (x - threshold).abs() <= tolerance
    return ((x >= threshold) if op == "ge" else (x <= threshold)) | tied


def _means(sums: pl.Series, counts: pl.Series) -> pl.Series:
    """`sum / count` row by row as Python divides two integers (correctly rounded): IEEE division
    where both are below 2^53, so exact as floats, and Python's own for the rare larger sum (a
    constant denominator column must not become a multiplication by its reciprocal: see
    `task_reductions._divide`)."""
    numerator = sums.cast(pl.Float64).fill_null(0.0).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):  # a task without trials shows none
        means = np.divide(numerator, counts.cast(pl.Float64).to_numpy())
    large = ((sums.abs() > EXACT_INT) & (counts > 0)).fill_null(False)
    for i in large.arg_true().to_list():
        means[i] = sums[i] / counts[i]
    return pl.Series(means)


def _task_columns(tasks: pl.DataFrame) -> pl.DataFrame:
    """Per task row: its entry of the summary's tasks array as JSON text (`entry`), whether every
    value of it is one the schema allows (`entry_ok`), and the columns its fields read."""
    sums = ("tool_calls", "model_calls", "input_tokens", "output_tokens")
    frame = tasks.with_columns(
        pl.col("cost").cast(pl.Float64).alias("cost_float"),
        *[pl.Series(f"{name}_mean", _means(tasks[name], tasks["observed"])) for name in sums],
    )
    return frame.with_columns(
        object_text(TASK_FIELDS).alias("entry"), inside_schema(TASK_FIELDS).alias("entry_ok")
    )


def _task_table(task_columns: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """The tasks-table rows: the run's ids, the columns no field mirrors (`TASK_ROW_COLUMNS`),
    and those mirroring an entry's fields (`conform` puts them in the file's order)."""
    columns = TASK_ROW_COLUMNS | table_columns(TASK_FIELDS)
    return (
        task_columns.join(runs.select(_RUN_IDS), on="run_id")
        .with_columns(**columns)
        .select(*_RUN_IDS, *columns)
    )


_RUN_IDS = ("run_id", "suite_id", "suite_version")


@dataclass(frozen=True)
class ColumnarRuns:
    """A batch's runs as columns (E-87): per run its summaries.jsonl line (null for a run on the
    dict path), whether the columns wrote it (`columnar`: valid by construction) and its runs
    table values (`runs`); and the tasks-table rows they add (`tasks`), both sorted by run."""

    runs: pl.DataFrame
    tasks: pl.DataFrame

    def outcome(self, run_id: str) -> RunOutcome:
        """A run's summary and task rows as dicts, read back from its line and rows."""
        line = self.runs.filter(pl.col("run_id") == run_id)["line"].item()
        return RunOutcome(
            summary=json.loads(line)["summary"],
            task_rows=self.task_rows(run_id),
        )

    def task_rows(self, run_id: str) -> list[dict[str, Any]]:
        return self.tasks.filter(pl.col("run_id") == run_id).to_dicts()


class ColumnarOutcome(RunOutcome):
    """A run whose line the columns wrote: its dicts are made only when read (explain and verify
    read them; writing the outputs never does)."""

    def __init__(self, columns: ColumnarRuns, run_id: str) -> None:
        self._columns = columns
        self._run_id = run_id
        self._read: RunOutcome | None = None

    def _dicts(self) -> RunOutcome:
        if self._read is None:
            self._read = self._columns.outcome(self._run_id)
        return self._read

    @property
    def summary(self) -> dict[str, Any]:
        return self._dicts().summary

    @property
    def task_rows(self) -> list[dict[str, Any]]:
        return self._dicts().task_rows


class Outcomes(dict[str, RunOutcome]):
    """Every run's outcome in a batch, by run id. `columns` holds every run's runs and tasks rows;
    a run whose line the columns wrote reads back from them (`ColumnarOutcome`), a run on the
    dict path holds its summary as a dict, to validate and write with `json.dumps`."""

    def __init__(self, columns: ColumnarRuns, by_dict: dict[str, RunOutcome]) -> None:
        super().__init__(by_dict)
        written = columns.runs.filter("columnar")["run_id"]
        self.update((run, ColumnarOutcome(columns, run)) for run in written)
        self.columns = columns

    def by_dict(self) -> dict[str, RunOutcome]:
        """The outcomes that took the dict path."""
        return {run: o for run, o in self.items() if not isinstance(o, ColumnarOutcome)}


def _exact_float(value: Any) -> bool:
    """A threshold a float64 column holds exactly, so comparing it there is comparing it in
    Python (a float, or an integer of at most 2**53)."""
    if isinstance(value, float):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= EXACT_INT


def _plan_frame(plans: dict[str, RunPlan], models: dict[str, str]) -> pl.DataFrame:
    """Per run what the summary takes from outside its task rows: ids, the cost and latency
    thresholds (§3.6), the model class (E-14), and whether the thresholds are ones the columns
    compare exactly as Python does."""
    rows = []
    for run_id, plan in plans.items():
        thresholds = (plan.doc or {}).get("thresholds", {})
        max_cost = thresholds.get("maxCostUsd")
        max_p95 = thresholds.get("maxP95LatencyMs")
        rows.append(
            (
                run_id,
                plan.suite_id,
                plan.suite_version,
                plan.doc is not None,
                float(max_cost) if _exact_float(max_cost) else None,
                float(max_p95) if _exact_float(max_p95) else None,
                all(v is None or _exact_float(v) for v in (max_cost, max_p95)),
                models.get(run_id),
            )
        )
    schema = {
        "run_id": pl.String,
        "suite_id": pl.String,
        "suite_version": pl.String,
        "has_suite": pl.Boolean,
        "max_cost": pl.Float64,
        "max_p95": pl.Float64,
        "thresholds_exact": pl.Boolean,
        "evaluated_model_class": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _p95(latencies: pl.Expr) -> pl.Expr:
    """`stats.p95_nearest_rank` of an ascending list: the value at rank ⌈0.95·N⌉ (E-17), null
    for an empty list."""
    count = latencies.list.len().cast(pl.Int64)
    rank = (count * 95 + 99) // 100
    return pl.when(count > 0).then(latencies.list.get(rank - 1, null_on_oob=True))


def _stderrs(task_counts: pl.Series, means: pl.Series) -> pl.Series:
    """trialStats.scoreStderr per run with two tasks or more (correctly rounded sums, §B)."""
    return pl.Series(
        [
            stats.clustered_stderr(values) if count >= 2 else None
            for count, values in zip(task_counts.to_list(), means.to_list(), strict=True)
        ],
        dtype=pl.Float64,
    )


def _passed_in_python(plan: RunPlan, run: dict[str, Any]) -> bool:
    """§3.6's verdict for a run whose thresholds (or p95) a float64 does not hold exactly: the
    same D-17 comparisons as `tied_or`, made by `stats` on the exact values."""
    thresholds = (plan.doc or {}).get("thresholds", {})
    passed = bool(run["task_count"]) and stats.at_least(run["gating_aggregate"], run["pass_score"])
    if "maxCostUsd" in thresholds:
        cost = run["total_cost"] if run["cost_known"] else None
        passed = (
            passed and cost is not None and stats.at_most(float(cost), thresholds["maxCostUsd"])
        )
    if "maxP95LatencyMs" in thresholds:
        latencies = run["latencies"] or []
        passed = (
            passed
            and bool(latencies)
            and stats.at_most(stats.p95_nearest_rank(latencies), thresholds["maxP95LatencyMs"])
        )
    return passed


def _columnar_runs(
    plans: dict[str, RunPlan], tasks: pl.DataFrame, figures: pl.DataFrame, models: dict[str, str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every run's summaries.jsonl line and runs-table values as columns, with `line_ok` telling
    whether the line is one the text expresses with every value inside the schema (E-87); and
    the task rows with their entries."""
    task_columns = _task_columns(tasks)
    per_run = task_columns.group_by("run_id", maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("task_count"),
        pl.col("entry").str.join(", ").alias("entries"),
        pl.col("entry_ok").all().alias("entries_ok"),
        (pl.col("task_id").n_unique() == pl.len()).alias("ids_unique"),
        pl.col("cost_source").first().is_not_null().alias("cost_known"),
        pl.col("trial_blocks").first().alias("trial_blocks"),
        pl.col("k").first().alias("k"),
        pl.col("pass_score").first().alias("pass_score"),
    )
    runs = (
        _plan_frame(plans, models)
        .join(per_run, on="run_id", how="left")
        .join(
            figures.select(
                "run_id",
                pl.lit(True).alias("has_figures"),
                "aggregate",
                "gating_aggregate",
                "passed_count",
                "total_cost",
                "latencies",
                pl.col("pass_at_k").alias("run_pass_at_k"),
                pl.col("pass_hat_k").alias("run_pass_hat_k"),
                "means",
            ),
            on="run_id",
            how="left",
        )
        .sort("run_id")
    )
    # a run without task rows has no figures: no tasks, none passed, an aggregate of 0 (§3.6)
    no_figures = pl.col("has_figures").is_null()
    runs = runs.with_columns(
        pl.col("task_count").fill_null(0),
        pl.col("entries").fill_null(""),
        pl.col("trial_blocks").fill_null(False),
        pl.col("cost_known").fill_null(False),
        pl.when(no_figures).then(pl.lit(0.0)).otherwise(pl.col("aggregate")).alias("aggregate"),
        pl.when(no_figures).then(pl.lit(0)).otherwise(pl.col("passed_count")).alias("passed_count"),
    )
    runs = runs.with_columns(
        pl.when(pl.col("trial_blocks"))
        .then(_stderrs(runs["task_count"], runs["means"]))
        .alias("score_stderr"),
        pl.when(pl.col("cost_known"))
        .then(pl.col("total_cost").cast(pl.Float64))
        .alias("total_cost_usd"),
        _p95(pl.col("latencies")).alias("p95"),
    )
    max_cost, max_p95 = pl.col("max_cost"), pl.col("max_p95")
    exact = pl.col("thresholds_exact") & (pl.col("p95").is_null() | (pl.col("p95") <= EXACT_INT))
    runs = runs.with_columns(
        (
            tied_or("ge", pl.col("gating_aggregate"), pl.col("pass_score"))
            & (
                max_cost.is_null()
                | (pl.col("cost_known") & tied_or("le", pl.col("total_cost_usd"), max_cost))
            )
            & (
                max_p95.is_null()
                | (
                    pl.col("p95").is_not_null()
                    & tied_or("le", pl.col("p95").cast(pl.Float64), max_p95)
                )
            )
        )
        .fill_null(False)
        .alias("passed"),
        exact.fill_null(False).alias("exact"),
    )
    if not runs["exact"].all():
        inexact = runs.filter(~pl.col("exact"))
        verdicts = [_passed_in_python(plans[run["run_id"]], run) for run in inexact.to_dicts()]
        runs = runs.with_columns(runs["passed"].scatter(runs["exact"].not_().arg_true(), verdicts))
    line = _text('{"runId": "', pl.col("run_id"), '", "summary": ', object_text(SUMMARY_FIELDS))
    line_ok = (
        (pl.col("task_count") > 0)
        & pl.col("entries_ok")
        & pl.col("ids_unique")
        & ~pl.col("run_id").str.contains(NEEDS_ESCAPE)
        & inside_schema(SUMMARY_FIELDS)
    )
    runs = runs.with_columns(
        (line + "}\n").alias("line"),
        line_ok.fill_null(False).alias("line_ok"),
        **RUN_ROW_COLUMNS,
        **table_columns(SUMMARY_FIELDS),
    )
    return runs, task_columns


def build_outcomes(
    plans: dict[str, RunPlan],
    tasks: pl.DataFrame,
    figures: pl.DataFrame,
    models: dict[str, str],
    *,
    dict_path: Sequence[str] = (),
) -> Outcomes:
    """Every run's EvalSummary from its reduced task rows and suite figures (§3.6, §4), laid out
    by `SUMMARY_FIELDS` and `TASK_FIELDS`: as text where the run's shape and values allow (E-87),
    else as dicts (the dict path). `dict_path` names runs to build as dicts anyway (tests compare
    both on the same runs)."""
    runs, task_columns = _columnar_runs(plans, tasks, figures, models)
    columnar = pl.col("line_ok") & ~pl.col("run_id").is_in(list(dict_path))
    runs = runs.with_columns(columnar.alias("columnar"))
    runs = runs.with_columns(pl.when("columnar").then(pl.col("line")).alias("line"))
    mirrored = RUN_ROW_COLUMNS | table_columns(SUMMARY_FIELDS)
    columns = ColumnarRuns(
        runs=runs.select("run_id", "line", "columnar", *mirrored),
        tasks=_task_table(task_columns, runs),
    )
    on_dicts = runs.filter(~pl.col("columnar"))
    entries = as_dicts(
        task_columns.filter(pl.col("run_id").is_in(on_dicts["run_id"].implode())), TASK_FIELDS
    )
    by_run: dict[str, list[dict[str, Any]]] = {run: [] for run in on_dicts["run_id"]}
    for run_id, entry in zip(
        task_columns.filter(pl.col("run_id").is_in(on_dicts["run_id"].implode()))["run_id"],
        entries,
        strict=True,
    ):
        by_run[run_id].append(entry)
    summaries = as_dicts(on_dicts, SUMMARY_FIELDS, list(by_run.values()))
    by_dict = {
        run_id: RunOutcome(summary, columns.task_rows(run_id))
        for run_id, summary in zip(on_dicts["run_id"], summaries, strict=True)
    }
    return Outcomes(columns, by_dict)
