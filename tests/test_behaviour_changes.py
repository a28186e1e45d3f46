"""E-136: what the candidate did differently, behind a paired verdict.

A baseline and a candidate of one suite are built with planted behaviour changes (an expected
tool dropped, a forbidden tool called, calls reordered, an argument changed, more cost on a task
that did not move);
the changes `regress` reports must name each planted change with exact counts, and none on runs
that behave alike.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.reduce.behaviour_changes import Changes, call_changes
from tests.helpers import planted_calls, write_events, write_json
from tests.logbuilder import EPOCH, LogBuilder, expect, golden, suite, traj

LOOKUP, REFUND, REFUND_ALL = "crm:lookup", "billing:refund", "billing:refund-all"
TASKS = [f"task-{i:02d}" for i in range(12)]
#: what the candidate does differently, by task (the other tasks behave as the baseline does)
PLANTED = {
    **dict.fromkeys(TASKS[0:4], "dropped-refund"),
    **dict.fromkeys(TASKS[4:6], "forbidden"),
    TASKS[6]: "reordered",
    TASKS[7]: "costlier",
    TASKS[8]: "other-order-id",
}
#: the argument value each side sends for the order (never printed: only its path is, §H)
ORDER_IDS = {"base": "ORD-SECRET-1", "cand": "ORD-SECRET-2"}


def _calls(behaviour: str | None, task: str) -> list[str | tuple[str, Any]]:
    if task == TASKS[8]:
        side = "cand" if behaviour == "other-order-id" else "base"
        return [(LOOKUP, {"orderId": ORDER_IDS[side], "locale": "en"}), REFUND]
    return list(planted_calls(behaviour, LOOKUP, REFUND, REFUND_ALL))


def _run(run_id: str, planted: dict[str, str], day: int = 0) -> list[dict[str, Any]]:
    log = LogBuilder(run_id, EPOCH + dt.timedelta(days=day))
    log.eval_started(task_count=len(TASKS))
    for task in TASKS:
        behaviour = planted.get(task)
        cost = 0.05 if behaviour == "costlier" else 0.01
        log.trial(task, _calls(behaviour, task), [{"costEstimateUsd": cost}], duration_ms=1000)
    log.eval_completed()
    return log.rows


def _suite_doc() -> dict[str, Any]:
    path = traj("in-order", [LOOKUP, REFUND], forbidden=[REFUND_ALL])
    order = expect(LOOKUP, {"orderId": ORDER_IDS["base"]}, "subset")
    with_order = traj("in-order", [order, REFUND], forbidden=[REFUND_ALL])
    return suite(*(golden(task, with_order if task == TASKS[8] else path) for task in TASKS))


@pytest.fixture
def sides(tmp_path: Path) -> dict[str, Path]:
    """The baseline, the planted candidate, a candidate that behaves as the baseline, and the
    suite, as files."""
    return {
        "base": write_events(tmp_path / "base.parquet", _run("acme/run-base", {})),
        "cand": write_events(tmp_path / "cand.parquet", _run("acme/run-cand", PLANTED)),
        # the next day's run of the same agent: other events, the same behaviour
        "alike": write_events(tmp_path / "alike.parquet", _run("acme/run-alike", {}, day=1)),
        "suites": write_json(tmp_path / "suites" / "s.json", _suite_doc()),
    }


def _changes(base: Path | str, cand: Path | str, suites: Path, **kwargs: Any) -> Changes:
    report = api.regress_paths(base, cand, [suites.parent], **kwargs)
    (comparison,) = report.comparisons
    assert comparison.changes is not None, comparison.changes_unknown
    return comparison.changes


def _counted(counts: list[Any]) -> list[tuple[str, int, list[str]]]:
    return [(c.key, c.tasks, c.task_ids) for c in counts]


@pytest.mark.slow
def test_e136_each_planted_change_is_named_with_exact_counts(sides: dict[str, Path]) -> None:
    changes = _changes(sides["base"], sides["cand"], sides["suites"])
    assert (changes.dropped_count, changes.rose_count) == (8, 0)
    # the order id the expected call asks for is missing: the path breaks as `missing`
    assert _counted(changes.dropped) == [
        ("path-broke:missing", 5, [*TASKS[0:4], TASKS[8]]),
        ("no-longer-calls:billing:refund", 4, TASKS[0:4]),
        ("tool-calls:fewer", 4, TASKS[0:4]),
        ("newly-calls:billing:refund-all", 2, TASKS[4:6]),
        ("path-broke:forbidden", 2, TASKS[4:6]),
        ("forbidden-calls:more", 2, TASKS[4:6]),
        ("tool-calls:more", 2, TASKS[4:6]),
        ("other-args:crm:lookup:orderId", 1, [TASKS[8]]),
        ("path-broke:order", 1, [TASKS[6]]),
    ]
    assert changes.call_level and all(c.of == 8 for c in changes.dropped)
    # the costlier task did not move: it is in no count and no task entry
    assert [t["taskId"] for t in changes.tasks] == [*TASKS[0:7], TASKS[8]]
    first = changes.tasks[0]
    assert first["baseline"]["pathMatched"] == 1 and first["candidate"]["pathMatched"] == 0
    assert first["candidate"]["pathReason"] == "missing"
    assert first["baseline"]["toolCalls"] == 2 and first["candidate"]["toolCalls"] == 1


def test_e136_runs_that_behave_alike_show_no_change(sides: dict[str, Path]) -> None:
    changes = _changes(sides["base"], sides["alike"], sides["suites"])
    assert (changes.dropped_count, changes.rose_count) == (0, 0)
    assert changes.dropped == changes.rose == changes.tasks == []


@pytest.mark.slow
def test_e136_a_rise_is_counted_among_the_tasks_that_rose(sides: dict[str, Path]) -> None:
    """The same pair the other way round: what broke now mends."""
    changes = _changes(sides["cand"], sides["base"], sides["suites"])
    assert (changes.dropped_count, changes.rose_count) == (0, 8)
    assert ("path-fixed", 8, sorted(PLANTED.keys() - {TASKS[7]})) in _counted(changes.rose)
    assert ("newly-calls:billing:refund", 4, TASKS[0:4]) in _counted(changes.rose)


@pytest.mark.slow
def test_e136_a_moved_task_with_no_behaviour_change_says_so(tmp_path: Path) -> None:
    """Only the host's score fell: the change is `none`, not an invented one."""
    base = LogBuilder("acme/run-base")
    cand = LogBuilder("acme/run-cand")
    for log, score in ((base, 1), (cand, 0)):
        log.eval_started(task_count=3)
        for task in TASKS[:3]:
            log.trial(task, [LOOKUP, REFUND], duration_ms=1000, score=score, passed=bool(score))
        log.eval_completed()
    doc = suite(*(golden(task) for task in TASKS[:3]))
    suites = write_json(tmp_path / "suites" / "s.json", doc)
    changes = _changes(
        write_events(tmp_path / "b.parquet", base.rows),
        write_events(tmp_path / "c.parquet", cand.rows),
        suites,
    )
    assert _counted(changes.dropped) == [("none", 3, TASKS[:3])]


@pytest.mark.slow
def test_e136_task_tables_give_the_changes_the_logs_give(
    sides: dict[str, Path], tmp_path: Path
) -> None:
    """A side read from the tables `run` wrote (tasks.parquet, trials.parquet beside it) gives
    the changes its event log gives but for the calls, which only the logs hold (the output
    says so); without the trials table, the output says why there are none."""
    tables = {}
    for name in ("base", "cand"):
        out = tmp_path / f"out-{name}"
        api.write_outputs(str(sides[name]), out, [str(sides["suites"].parent)])
        tables[name] = out / "tasks.parquet"
    from_logs = _changes(sides["base"], sides["cand"], sides["suites"])
    from_tables = _changes(tables["base"], tables["cand"], sides["suites"])
    assert not from_tables.call_level and from_logs.call_level
    calls = ("no-longer-calls:", "newly-calls:", "other-args:")
    kept = [c for c in _counted(from_logs.dropped) if not c[0].startswith(calls)]
    assert _counted(from_tables.dropped) == kept
    assert [t["baseline"] for t in from_tables.tasks] == [t["baseline"] for t in from_logs.tasks]
    argv = ["regress", str(tables["base"]), str(tables["cand"])]
    shown = CliRunner().invoke(cli, argv).output
    assert (
        "    (calls not compared: a side is a tasks table; the calls need its event logs)" in shown
    )
    (tmp_path / "out-cand" / "trials.parquet").unlink()
    report = api.regress_paths(tables["base"], tables["cand"], [sides["suites"].parent])
    (comparison,) = report.comparisons
    assert comparison.changes is None
    assert comparison.changes_unknown is not None and "candidate" in comparison.changes_unknown


@pytest.mark.slow
def test_e136_terminal_and_json_name_the_first_change(sides: dict[str, Path]) -> None:
    argv = ["regress", str(sides["base"]), str(sides["cand"]), "--suites", str(sides["suites"])]
    shown = CliRunner().invoke(cli, argv)
    assert shown.exit_code == 1, shown.output
    lines = shown.output.splitlines()
    at = lines.index("  changes in the 8 task(s) that dropped:")
    assert lines[at + 1] == "    tool path no longer matches (missing): 5 of 8"
    assert lines[at + 2] == "    no longer calls billing:refund: 4 of 8"
    assert lines[at + 4] == "    and 6 other change(s) (--json lists them)"
    assert "  compares gating scores (D-19): they moved" in shown.output
    document = json.loads(CliRunner().invoke(cli, [*argv, "--json"]).output)
    (comparison,) = document["comparisons"]
    block = comparison["changes"]
    assert block["tasksDropped"] == 8 and block["callLevel"] is True
    assert block["dropped"][1]["change"] == "no-longer-calls:billing:refund"
    assert comparison["compares"]["score"] == "gatingScore"
    # tools and argument paths are named, argument values never
    assert "orderId" in json.dumps(document)
    for text in (shown.output, json.dumps(document)):
        assert "ORD-SECRET" not in text


def test_e136_a_change_every_task_shows_ranks_below_one_only_moved_tasks_show(
    tmp_path: Path,
) -> None:
    """Argument values that differ in every task (a new request id each run) are background:
    counted with how many steady tasks show them too, and ranked below the change that only the
    tasks that dropped show, however many tasks both cover."""
    base, cand = LogBuilder("acme/run-base"), LogBuilder("acme/run-cand", EPOCH + dt.timedelta(1))
    for log, side in ((base, "base"), (cand, "cand")):
        log.eval_started(task_count=6)
        for i, task in enumerate(TASKS[:6]):
            lookup = (LOOKUP, {"requestId": f"{side}-{i}"})
            calls = [lookup] if side == "cand" and i < 3 else [lookup, REFUND]
            log.trial(task, calls, duration_ms=1000)
        log.eval_completed()
    doc = suite(*(golden(task, traj("in-order", [LOOKUP, REFUND])) for task in TASKS[:6]))
    suites = write_json(tmp_path / "suites" / "s.json", doc)
    changes = _changes(
        write_events(tmp_path / "b.parquet", base.rows),
        write_events(tmp_path / "c.parquet", cand.rows),
        suites,
    )
    ranked = [(c.key, c.tasks, c.steady, c.steady_of) for c in changes.dropped]
    assert ranked[0] == ("no-longer-calls:billing:refund", 3, 0, 3)
    assert ranked[-1] == ("other-args:crm:lookup:requestId", 3, 3, 3)


def test_e136_argument_values_are_compared_as_sets_per_path() -> None:
    """Per task and tool, each argument path's values are compared as sets over the trials: the
    same texts in another number or order change nothing; a path one side alone sends, a value
    one side alone sends, a nested value that differs are each a change at their own path."""
    sent = {  # task: (base inputs, candidate inputs), all calls of tool t
        "same-set": (['{"a": 1}', '{"a": 1}', '{"b": 2}'], ['{"b": 2}', '{"a": 1}']),
        "nested": (['{"a": 1, "b": {"c": 2}}'], ['{"a": 1, "b": {"c": 3}}']),
        "new-path": (['{"a": 1}'], ['{"a": 1, "d": true}']),
        "one-value-more": (['{"a": 1}', '{"a": 2}'], ['{"a": 2}']),
    }

    def calls(side: int, run_id: str) -> pl.DataFrame:
        rows = [(task, inputs) for task, pair in sent.items() for inputs in pair[side]]
        return pl.DataFrame(
            {
                "run_id": [run_id] * len(rows),
                "task_id": [task for task, _ in rows],
                "tool_name": ["t"] * len(rows),
                "inputs": [inputs for _, inputs in rows],
            }
        )

    changes, values = call_changes(list(sent), calls(0, "b"), "b", calls(1, "c"), "c")
    assert sorted(changes.iter_rows()) == [
        ("nested", "other-args:t:b.c"),
        ("new-path", "other-args:t:d"),
        ("one-value-more", "other-args:t:a"),
    ]
    shown = {(task, change): (base, cand) for task, change, base, cand in values.iter_rows()}
    assert shown == {
        ("nested", "other-args:t:b.c"): (["2"], ["3"]),
        ("new-path", "other-args:t:d"): (None, ["true"]),
        ("one-value-more", "other-args:t:a"): (["1", "2"], ["2"]),
    }
