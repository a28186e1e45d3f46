"""Summaries built as columns write the bytes the dict path writes, and every line they write is a
valid EvalSummary (E-87, CONTRACT §4); both are laid out by one field table (E-131).

Both paths are checked against the hand-written layout of `tests/summary_oracle.py` on the same
runs (the samples, the regression pair, the helpers.py runs, Hypothesis logs): every line must equal
`json.dumps` of the oracle's summary byte for byte, the task rows must be the oracle's, and a
columnar summary must pass the packaged closed schema, which the columnar path does not run per
line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

from evalbatch.api import grade_events, write_outputs
from evalbatch.inputs import suites
from evalbatch.outputs.writer import summary_line
from evalbatch.pipeline import shard
from evalbatch.reduce import run_summaries
from evalbatch.reduce.run_summaries import Outcomes, build_outcomes, json_floats
from tests import summary_oracle
from tests.helpers import make_suite, read_outputs, standard_run, write_events, write_json
from tests.logbuilder import LogBuilder, grade
from tests.strategies import logs_and_suites

#: a slow family (random logs through both summary paths):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"

#: floats whose text differs between layouts: shortest digits, exponents, signed zero, extremes
EDGE_FLOATS = [
    0.1 + 0.2,
    1e-7,
    1e16,
    5e-324,
    1.0,
    -0.0,
    0.0,
    1e-4,
    9.999999999999999e-05,
    1e-5,
    -1e-5,
    0.00012,
    1.5e-10,
    2.0**53,
    2.0**53 + 2,
    1e15 + 0.3,
    123456789012345.6,
    1e22,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    1 / 3,
    2 / 3,
    0.5175,
]


@dataclass
class PathCheck:
    """What the comparing `build_outcomes` saw: runs written as columns and as dicts."""

    columnar: list[str] = field(default_factory=list)
    by_dict: list[str] = field(default_factory=list)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON text: NaN equals NaN, and 1 differs from 1.0 (a task row's keys in any
    order: the tasks table puts its columns in order when written)."""
    return json.dumps(a, default=str, sort_keys=True) == json.dumps(b, default=str, sort_keys=True)


def _compare_paths(plans: Any, tasks: Any, figures: Any, models: Any, check: PathCheck) -> Outcomes:
    """Build the batch as text and as dicts, and hold both to the hand-written layout of
    `tests/summary_oracle.py`: each columnar line byte for byte, every run's task rows, and the
    validity of what the columns wrote."""
    columnar = build_outcomes(plans, tasks, figures, models)
    as_dicts = build_outcomes(plans, tasks, figures, models, dict_path=list(plans))
    assert not as_dicts.columns.runs["columnar"].any()
    expected = summary_oracle.outcomes(plans, tasks, figures, models)
    assert sorted(columnar) == sorted(as_dicts) == sorted(expected)
    on_dicts = columnar.by_dict()
    for run_id, reference in expected.items():
        line = summary_line(run_id, reference.summary)
        assert summary_line(run_id, as_dicts[run_id].summary) == line, run_id
        assert _same(as_dicts[run_id].task_rows, reference.task_rows), run_id
        assert _same(columnar[run_id].task_rows, reference.task_rows), run_id
        if run_id in on_dicts:
            assert summary_line(run_id, on_dicts[run_id].summary) == line, run_id
            continue
        written = columnar.columns.runs.filter(pl.col("run_id") == run_id)["line"].item()
        assert written == line, run_id
        assert columnar[run_id].summary == reference.summary, run_id
        summary = json.loads(written)["summary"]
        faults = [f for f in suites.validate_summary(summary) if f.severity == "error"]
        assert faults == [], (run_id, faults)
        check.columnar.append(run_id)
    check.by_dict += list(on_dicts)
    return columnar


def _comparing(check: PathCheck) -> Callable[..., Outcomes]:
    """A `build_outcomes` that compares the two paths on every batch, recording into `check`."""

    def comparing(plans: Any, tasks: Any, figures: Any, models: Any) -> Outcomes:
        return _compare_paths(plans, tasks, figures, models, check)

    return comparing


@pytest.fixture
def both_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[PathCheck]:
    """Grading in this test compares the two paths on every batch (see `_compare_paths`)."""
    check = PathCheck()
    monkeypatch.setattr(shard, "build_outcomes", _comparing(check))
    yield check


def test_e87_floats_are_written_as_json_dumps_writes_them() -> None:
    """E-87: the columnar number text is `json.dumps`'s (repr: shortest round trip), for the
    edge cases and for a million random bit patterns across every magnitude."""
    rng = np.random.default_rng(87)
    bits = rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    random = bits.view(np.float64)
    small = rng.random(100_000) * 10.0 ** -rng.integers(3, 12, size=100_000)
    values = np.concatenate([np.array(EDGE_FLOATS), random[np.isfinite(random)], small, -small])
    written = json_floats(pl.Series(values, dtype=pl.Float64)).to_list()
    wrong = [
        (v, text) for v, text in zip(values.tolist(), written, strict=True) if json.dumps(v) != text
    ]
    assert wrong == []


def test_e87_sample_outputs_are_the_same_bytes_through_either_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-87, §4: forcing every run down the dict path writes the very same files (summaries.jsonl
    and every table) as the columnar path, on the samples and the regression pair (whose
    candidate gets a `regression` block spliced in after all batches)."""
    events = [SAMPLES / "events", SAMPLES / "regress"]
    write_outputs(events, tmp_path / "columnar", [SAMPLES / "suites"])
    check = PathCheck()
    monkeypatch.setattr(shard, "build_outcomes", _comparing(check))
    write_outputs(events, tmp_path / "compared", [SAMPLES / "suites"])

    def all_dicts(plans: Any, tasks: Any, figures: Any, models: Any) -> Outcomes:
        return build_outcomes(plans, tasks, figures, models, dict_path=list(plans))

    monkeypatch.setattr(shard, "build_outcomes", all_dicts)
    write_outputs(events, tmp_path / "dicts", [SAMPLES / "suites"])
    columnar = read_outputs(tmp_path / "columnar")
    assert columnar == read_outputs(tmp_path / "dicts")
    assert columnar == read_outputs(tmp_path / "compared")
    assert len(check.columnar) == 5 and check.by_dict == []  # thresholds too (§3.6)
    assert b'"regression": {' in columnar["summaries.jsonl"]


def test_e87_rare_shapes_take_the_dict_path_and_keep_their_rules(
    tmp_path: Path, both_paths: PathCheck
) -> None:
    """E-87: ids outside the schema's patterns and a runId JSON must escape are built as dicts;
    a summary that would not validate is still not written (`summary-invalid`, §4) while the
    runs beside it, one with cost and latency thresholds (§3.6) among them, are built as
    columns, byte for byte as the dict path writes them."""
    plain, capped = "acme/run-plain", "acme/run-capped"
    bad_id, quoted = "acme/run-bad-id", 'acme/run-"quoted"'
    rows = standard_run(plain).rows + standard_run(bad_id, suite_id="Bad Suite Id").rows
    rows += standard_run(capped, suite_id="acme.team.evals.capped").rows
    rows += standard_run(quoted).rows
    events = write_events(tmp_path / "e.parquet", rows)
    suite_dir = tmp_path / "suites"
    write_json(suite_dir / "plain.json", make_suite())
    thresholds = {"passScore": 0.5, "maxCostUsd": 1, "maxP95LatencyMs": 400}
    write_json(
        suite_dir / "capped.json", make_suite("acme.team.evals.capped", thresholds=thresholds)
    )
    report = write_outputs([events], tmp_path / "out", [suite_dir])
    assert sorted(both_paths.columnar) == [capped, plain]
    assert sorted(both_paths.by_dict) == [quoted, bad_id]
    lines = (tmp_path / "out" / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["runId"] for line in lines] == [quoted, capped, plain]
    assert json.loads(lines[1])["summary"]["passed"] is True  # p95 400 ≤ 400, cost ≤ 1
    invalid = report.problems.filter(pl.col("code") == "summary-invalid")
    assert invalid["run_id"].to_list() == [bad_id]


def test_e87_a_task_id_outside_the_pattern_takes_the_dict_path(both_paths: PathCheck) -> None:
    """E-87, §4: runs without a suite are built as columns too, unless a taskId breaks the
    schema's pattern: that run takes the dict path and is not written (`summary-invalid`)."""
    bad = LogBuilder("acme/run-bad-task")
    bad.eval_started()
    bad.trial("Task_A")
    bad.eval_completed()
    good = LogBuilder("acme/run-good-task")
    good.eval_started()
    good.trial("task-a")
    good.eval_completed()
    result = grade([bad, good], [])
    assert both_paths.columnar == ["acme/run-good-task"]
    assert both_paths.by_dict == ["acme/run-bad-task"]
    assert list(result.summaries) == ["acme/run-good-task"]
    invalid = result.problems.filter(pl.col("code") == "summary-invalid")
    assert invalid["run_id"].to_list() == ["acme/run-bad-task"]


def test_e87_a_value_outside_the_schema_is_left_to_the_dict_path() -> None:
    """E-87: the columnar path writes a run only when every value is inside the schema's ranges;
    a task score above 1 (or NaN) sends the run to the dict path, whose check names the fault."""
    tasks = pl.DataFrame({"run_id": ["r"], "mean_score": [1.5], "pass_score": [0.5]})
    for score in (1.5, math.nan, None, 1.0):
        unit = tasks.with_columns(pl.lit(score, dtype=pl.Float64).alias("mean_score")).select(
            run_summaries._unit(pl.col("mean_score"))
        )
        assert unit.item() is (score == 1.0)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=logs_and_suites())
def test_e87_random_logs_write_the_same_lines_through_either_path(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """E-87, §4: on Hypothesis logs (every kind, trials, costs, runs without a suite, bad host
    scores), each columnar line equals the dict path's line byte for byte, its task rows are the
    dict path's, and it validates against the EvalSummary schema."""
    events, suite_docs = case
    check = PathCheck()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shard, "build_outcomes", _comparing(check))
        grade_events(events, suite_docs)
    assert set(check.columnar).isdisjoint(check.by_dict)


def test_e131_a_field_added_to_the_table_is_written_kept_and_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """E-131: one entry in the field table is all a new field needs. A task field and a summary
    field added to it appear in the summaries.jsonl line in table order, in the tasks and runs
    columns the columnar path builds, and in the validity check: a value its check rejects sends
    the run to the dict path, which writes the same field into the dict that the closed schema
    then judges (a field it does not know: `summary-invalid`)."""
    Field = run_summaries.Field
    ok = {"value": True}
    probe = Field(
        "probeCount",
        "integer",
        pl.col("observed") + 40,
        shown=pl.col("observed") > 0,
        check=lambda v: (v == 41) & pl.lit(ok["value"]),
        column="probe_count",
    )
    total = Field("probeTotal", "number", pl.col("task_count") * 0.5, column="probe_total")
    *head, tasks = run_summaries.SUMMARY_FIELDS
    monkeypatch.setattr(run_summaries, "TASK_FIELDS", (*run_summaries.TASK_FIELDS, probe))
    monkeypatch.setattr(run_summaries, "SUMMARY_FIELDS", (*head, total, tasks))
    seen: list[Outcomes] = []

    def capture(*args: Any) -> Outcomes:
        seen.append(build_outcomes(*args))
        return seen[-1]

    monkeypatch.setattr(shard, "build_outcomes", capture)
    run = LogBuilder("acme/run-probe")
    run.eval_started()
    run.trial("task-a")
    run.eval_completed()

    result = grade([run], [])
    line = summary_line("acme/run-probe", result.summaries["acme/run-probe"])
    assert ', "probeTotal": 0.5, "tasks": [' in line
    assert line.count('"probeCount": 41}') == 1  # last in the entry, as in the table
    columns = seen[-1].columns
    assert columns.runs["columnar"].to_list() == [True]
    assert columns.runs["probe_total"].to_list() == [0.5]
    assert columns.tasks["probe_count"].to_list() == [41]

    ok["value"] = False
    result = grade([run], [])
    outcome = seen[-1]["acme/run-probe"]
    assert list(seen[-1].by_dict()) == ["acme/run-probe"]
    assert outcome.summary["probeTotal"] == 0.5
    assert outcome.summary["tasks"][0]["probeCount"] == 41
    assert result.summaries == {}
    invalid = result.problems.filter(pl.col("code") == "summary-invalid")
    assert "probeCount" in invalid["message"].item()
