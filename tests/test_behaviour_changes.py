"""E-136: what the candidate did differently, behind a paired verdict.

A baseline and a candidate of one suite are built with planted behaviour changes (an expected
tool dropped, a forbidden tool called, calls reordered, more cost on a task that did not move);
the changes `regress` reports must name each planted change with exact counts, and none on runs
that behave alike.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.reduce.behaviour_changes import Changes
from tests.helpers import write_events, write_json
from tests.logbuilder import EPOCH, LogBuilder, golden, suite, traj

LOOKUP, REFUND, REFUND_ALL = "crm:lookup", "billing:refund", "billing:refund-all"
TASKS = [f"task-{i:02d}" for i in range(12)]
#: what the candidate does differently, by task (the other tasks behave as the baseline does)
PLANTED = {
    **dict.fromkeys(TASKS[0:4], "dropped-refund"),
    **dict.fromkeys(TASKS[4:6], "forbidden"),
    TASKS[6]: "reordered",
    TASKS[7]: "costlier",
}


def _calls(behaviour: str | None) -> list[str]:
    return {
        None: [LOOKUP, REFUND],
        "dropped-refund": [LOOKUP],
        "forbidden": [LOOKUP, REFUND, REFUND_ALL],
        "reordered": [REFUND, LOOKUP],
        "costlier": [LOOKUP, REFUND],
    }[behaviour]


def _run(run_id: str, planted: dict[str, str], day: int = 0) -> list[dict[str, Any]]:
    log = LogBuilder(run_id, EPOCH + dt.timedelta(days=day))
    log.eval_started(task_count=len(TASKS))
    for task in TASKS:
        behaviour = planted.get(task)
        cost = 0.05 if behaviour == "costlier" else 0.01
        log.trial(task, _calls(behaviour), [{"costEstimateUsd": cost}], duration_ms=1000)
    log.eval_completed()
    return log.rows


def _suite_doc() -> dict[str, Any]:
    path = traj("in-order", [LOOKUP, REFUND], forbidden=[REFUND_ALL])
    return suite(*(golden(task, path) for task in TASKS))


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


def test_e136_each_planted_change_is_named_with_exact_counts(sides: dict[str, Path]) -> None:
    changes = _changes(sides["base"], sides["cand"], sides["suites"])
    assert (changes.dropped_count, changes.rose_count) == (7, 0)
    assert _counted(changes.dropped) == [
        ("path-broke:missing", 4, TASKS[0:4]),
        ("tool-calls:fewer", 4, TASKS[0:4]),
        ("path-broke:forbidden", 2, TASKS[4:6]),
        ("forbidden-calls:more", 2, TASKS[4:6]),
        ("tool-calls:more", 2, TASKS[4:6]),
        ("path-broke:order", 1, [TASKS[6]]),
    ]
    assert all(c.of == 7 for c in changes.dropped)
    # the costlier task did not move: it is in no count and no task entry
    assert [t["taskId"] for t in changes.tasks] == TASKS[0:7]
    first = changes.tasks[0]
    assert first["baseline"]["pathMatched"] == 1 and first["candidate"]["pathMatched"] == 0
    assert first["candidate"]["pathReason"] == "missing"
    assert first["baseline"]["toolCalls"] == 2 and first["candidate"]["toolCalls"] == 1


def test_e136_runs_that_behave_alike_show_no_change(sides: dict[str, Path]) -> None:
    changes = _changes(sides["base"], sides["alike"], sides["suites"])
    assert (changes.dropped_count, changes.rose_count) == (0, 0)
    assert changes.dropped == changes.rose == changes.tasks == []


def test_e136_a_rise_is_counted_among_the_tasks_that_rose(sides: dict[str, Path]) -> None:
    """The same pair the other way round: what broke now mends."""
    changes = _changes(sides["cand"], sides["base"], sides["suites"])
    assert (changes.dropped_count, changes.rose_count) == (0, 7)
    assert changes.rose[0].key == "path-fixed" and changes.rose[0].tasks == 7


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


def test_e136_task_tables_give_the_changes_the_logs_give(
    sides: dict[str, Path], tmp_path: Path
) -> None:
    """A side read from the tables `run` wrote (tasks.parquet, trials.parquet beside it) gives
    the same changes as its event log; without the trials table, the output says why none."""
    tables = {}
    for name in ("base", "cand"):
        out = tmp_path / f"out-{name}"
        api.write_outputs(str(sides[name]), out, [str(sides["suites"].parent)])
        tables[name] = out / "tasks.parquet"
    from_logs = _changes(sides["base"], sides["cand"], sides["suites"])
    from_tables = _changes(tables["base"], tables["cand"], sides["suites"])
    assert from_tables.report() == from_logs.report()
    (tmp_path / "out-cand" / "trials.parquet").unlink()
    report = api.regress_paths(tables["base"], tables["cand"], [sides["suites"].parent])
    (comparison,) = report.comparisons
    assert comparison.changes is None
    assert comparison.changes_unknown is not None and "candidate" in comparison.changes_unknown


def test_e136_terminal_and_json_name_the_first_change(sides: dict[str, Path]) -> None:
    argv = ["regress", str(sides["base"]), str(sides["cand"]), "--suites", str(sides["suites"])]
    shown = CliRunner().invoke(cli, argv)
    assert shown.exit_code == 1, shown.output
    lines = shown.output.splitlines()
    at = lines.index("  changes in the 7 task(s) that dropped:")
    assert lines[at + 1] == "    tool path no longer matches (missing): 4 of 7"
    assert lines[at + 4] == "    and 3 other change(s) (--json lists them)"
    assert "  compares gating scores (D-19): they moved" in shown.output
    document = json.loads(CliRunner().invoke(cli, [*argv, "--json"]).output)
    (comparison,) = document["comparisons"]
    block = comparison["changes"]
    assert block["tasksDropped"] == 7 and block["dropped"][0]["change"] == "path-broke:missing"
    assert comparison["compares"]["score"] == "gatingScore"
    # content-free (§H): no tool name anywhere in the changes
    assert not {LOOKUP, REFUND, REFUND_ALL} & set(json.dumps(block).split('"'))
