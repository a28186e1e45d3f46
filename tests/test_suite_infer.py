"""E-145: `evalbatch suite infer` proposes trajectory expectations from the trials that passed.

The logs are built with the log builder and graded by the grader itself twice: once for the
proposal, and again against the suite proposed, so what an expectation matches is the grader's
word, not this project's reading of it. Tool names hold `crm:`, which no message may print.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalbatch.api import (
    GradeOptions,
    InferOptions,
    StartingSuiteOptions,
    infer_paths,
    write_proposal,
)
from evalbatch.cli import cli
from evalbatch.errors import InputError
from evalbatch.infer import common_calls
from evalbatch.infer.common_calls import NOTHING, UNREADABLE, PassingTrial, propose, stable_args
from evalbatch.inputs.suites import read_suite_file, validate_suite
from evalbatch.options import MATCH_MODES
from tests.helpers import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    assert_content_free,
    slow_except,
    write_events,
    write_json,
)
from tests.logbuilder import RUN, RUN2, Call, LogBuilder, golden, grade, suite

LOOKUP, REFUND, NOTE = "crm:lookup-order", "crm:refund", "crm:note"


def _lookup(order: str, attempt: int) -> tuple[str, Any]:
    """A lookup whose `orderId` never varies and whose `attempt` always does."""
    return (LOOKUP, {"orderId": order, "attempt": attempt, "options": {"cache": True}})


def _refund(order: str, amount: Any, reason: str) -> tuple[str, Any]:
    return (REFUND, {"orderId": order, "amountMinor": amount, "reason": reason})


def _log(run_id: str = RUN) -> LogBuilder:
    """Four tasks, three trials each:

    - `agreed`: trials 0 and 2 pass calling lookup then refund (same order, same order id and
      amount, another attempt and reason each); trial 1 fails and calls them the other way
      round; so every passing trial called the same tools in the same order;
    - `disagreed`: both passing trials call lookup and refund, one also notes in between;
    - `never-passed`: no trial passes;
    - `no-calls`: its passing trial calls nothing.
    """
    log = LogBuilder(run_id)
    log.eval_started(task_count=4, trialCount=3)
    for index in range(3):
        passed = index != 1
        calls = [_lookup("A-1", index), _refund("A-1", 4200, f"why {index}")]
        log.trial("agreed", calls if passed else calls[::-1], passed=passed, trial_index=index)
        middle = [(NOTE, {"text": "x"})] if index == 2 else []
        disagreed = [_lookup("A-2", index), *middle, _refund("A-2", 100, "r")]
        log.trial("disagreed", disagreed, passed=index != 1, trial_index=index)
        log.trial("never-passed", [_lookup("A-3", 0)], passed=False, trial_index=index)
        log.trial("no-calls", [], passed=index == 0, trial_index=index)
    log.eval_completed()
    return log


def _suite() -> dict[str, Any]:
    """The log's suite, without any trajectory expectation."""
    tasks = [golden(t) for t in ("agreed", "disagreed", "never-passed", "no-calls")]
    return suite(*tasks, trials={"count": 3})


def _files(tmp_path: Path, log: LogBuilder, suite_doc: dict[str, Any] | None) -> tuple[Path, Path]:
    events = write_events(tmp_path / "events" / "log.parquet", log.rows)
    suites = tmp_path / "suites"
    if suite_doc is not None:
        write_json(suites / "suite.json", suite_doc)
    return events, suites


def _task(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    (task,) = [t for t in doc["tasks"] if t["taskId"] == task_id]
    return task


def _regraded(log: LogBuilder, doc: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """The log graded again against the proposed suite: each trial's row by (task, index)."""
    result = grade(log, [doc])
    assert result.skipped == []
    return {(r["task_id"], r["trial_index"]): r for r in result.trials.iter_rows(named=True)}


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["suite", "infer", *args], catch_exceptions=False)


# --- what the passing trials agree on --------------------------------------------------------


def test_e145_passing_trials_that_agree_give_an_expectation_they_match(tmp_path: Path) -> None:
    """Every passing trial of `agreed` called the same tools in the same order: the proposal is
    those calls, with the argument paths that never varied (order id, amount, a nested flag) and
    not those that did (attempt, reason); graded again, the passing trials match it and the
    failing trial, whose path differs, does not. The rest of the suite is kept as it was."""
    log = _log()
    events, suites = _files(tmp_path, log, _suite())
    proposal = infer_paths(events, suites)
    doc = proposal.document
    assert _task(doc, "agreed")["expected"]["trajectory"] == {
        "match": "in-order",
        "calls": [
            {
                "tool": LOOKUP,
                "args": {"orderId": "A-1", "options": {"cache": True}},
                "argsMatch": "subset",
            },
            {
                "tool": REFUND,
                "args": {"orderId": "A-1", "amountMinor": 4200},
                "argsMatch": "subset",
            },
        ],
    }
    kept = {key: value for key, value in doc.items() if key != "tasks"}
    assert kept == {key: value for key, value in _suite().items() if key != "tasks"}
    assert _task(doc, "agreed")["expected"]["match"] == golden("agreed")["expected"]["match"]
    assert [fault for fault in validate_suite(doc) if fault.severity == "error"] == []
    trials = _regraded(log, doc)
    assert [trials[("agreed", i)]["trajectory_matched"] for i in range(3)] == [True, False, True]
    assert [trials[("agreed", i)]["passed"] for i in range(3)] == [True, False, True]
    assert trials[("agreed", 1)]["trajectory_reason"] == "order"


def test_e145_tasks_that_cannot_be_inferred_are_named_with_their_reason(tmp_path: Path) -> None:
    """A task whose passing trials disagree, one with no passing trial and one whose passing
    trial made no call get no expectation; the table and --json name each with its reason in
    counts, never a tool name (the file names them: it is the suite)."""
    events, suites = _files(tmp_path, _log(), _suite())
    out = tmp_path / "proposed.json"
    printed = _invoke(str(events), "--suites", str(suites), "-o", str(out))
    assert printed.exit_code == 0, printed.output
    lines = printed.output.splitlines()
    assert "agreed" in lines[2] and "in-order: 2 calls" in lines[2]
    assert lines[3].startswith("disagreed ")
    assert lines[3].split(None, 3)[1:] == [
        "3",
        "2",
        "none (passing-trials-disagree): its 2 passing trials made 2 different call sequences "
        "(2 to 3 calls)",
    ]
    assert "none (no-passing-trial): none of its 3 counted trials passed" in lines[4]
    assert "none (no-common-call): its 1 passing trial made no call" in lines[5]
    assert lines[6] == f"wrote {out}: 1 of 4 tasks with an expectation"
    assert_content_free(printed.output)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [t["taskId"] for t in doc["tasks"] if "trajectory" in t["expected"]] == ["agreed"]

    as_json = _invoke(str(events), "--suites", str(suites), "-o", str(out), "--force", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert_content_free(as_json.output)
    document = json.loads(as_json.output)
    assert {t["taskId"]: t["reason"] for t in document["tasks"]} == {
        "agreed": None,
        "disagreed": "passing-trials-disagree",
        "never-passed": "no-passing-trial",
        "no-calls": "no-common-call",
    }
    assert (document["withExpectation"], document["withoutExpectation"]) == (1, 3)
    assert document["suiteFiles"] == [str(suites / "suite.json")]
    assert read_suite_file(out).errors == ()
    validated = CliRunner().invoke(cli, ["validate", str(out)])
    assert validated.exit_code == 0, validated.output


@pytest.mark.slow
def test_e145_without_a_suite_the_host_record_decides_and_the_log_makes_the_suite(
    tmp_path: Path,
) -> None:
    """No suite given: passed is the host's eval.scored passed (D-4), and the suite is made from
    the log: the suite id and version the run claims, golden tasks in log order, the trials
    block, the target agent. Graded against it, a trial keeps the host's verdict beside the
    trajectory: the passing trials still pass and match, the failing one does not match."""
    log = _log()
    events, _ = _files(tmp_path, log, None)
    proposal = infer_paths(events)
    doc = proposal.document
    assert proposal.suite_paths == ()
    assert [t["taskId"] for t in doc["tasks"]] == [
        "agreed",
        "disagreed",
        "never-passed",
        "no-calls",
    ]
    assert {key: doc[key] for key in ("suiteId", "version", "modes", "trials")} == {
        "suiteId": "acme.team.evals.support",
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": {"count": 3, "passRule": "mean"},
    }
    assert doc["targetAgentId"] == "acme.agents.support"
    assert all(t["expected"]["kind"] == "golden" for t in doc["tasks"])
    assert [fault for fault in validate_suite(doc) if fault.severity == "error"] == []
    trials = _regraded(log, doc)
    assert [trials[("agreed", i)]["passed"] for i in range(3)] == [True, False, True]
    assert [trials[("agreed", i)]["trajectory_matched"] for i in range(3)] == [True, False, True]
    assert all(trials[("disagreed", i)]["trajectory_matched"] is None for i in range(3))


@pytest.mark.parametrize("mode", slow_except(MATCH_MODES, fast=["exact"]))
def test_e145_every_mode_is_met_by_every_passing_trial(tmp_path: Path, mode: str) -> None:
    """Passing trials that agree made the same calls in the same order, so the proposal matches
    each of them under every mode (`--mode` only chooses what a later run may do)."""
    log = _log()
    events, suites = _files(tmp_path, log, _suite())
    doc = infer_paths(events, suites, options=InferOptions(mode=mode)).document  # type: ignore[arg-type]
    assert _task(doc, "agreed")["expected"]["trajectory"]["match"] == mode
    trials = _regraded(log, doc)
    assert trials[("agreed", 0)]["trajectory_matched"] and trials[("agreed", 2)]["passed"]


def test_e145_passing_trials_of_several_runs_are_pooled(tmp_path: Path) -> None:
    """Two runs of one suite: a task's passing trials are read across both, so a value that
    varies only between the runs is left out, and a run that adds a call makes them disagree."""
    first, second = LogBuilder(RUN), LogBuilder(RUN2)
    for log, amount, extra in ((first, 4200, []), (second, 4300, [(NOTE, {})])):
        log.eval_started(task_count=2)
        log.trial("agreed", [_lookup("A-1", 0), _refund("A-1", amount, "r")], passed=True)
        log.trial("disagreed", [_lookup("A-2", 0), *extra], passed=True)
        log.eval_completed()
    events = write_events(tmp_path / "events.parquet", [*first.rows, *second.rows])
    proposal = infer_paths(events)
    assert proposal.run_ids == [RUN, RUN2]
    calls = _task(proposal.document, "agreed")["expected"]["trajectory"]["calls"]
    assert calls[1] == {
        "tool": REFUND,
        "args": {"orderId": "A-1", "reason": "r"},
        "argsMatch": "subset",
    }
    reasons = {t.task_id: t.reason for t in proposal.tasks}
    assert reasons == {"agreed": None, "disagreed": "passing-trials-disagree"}


# --- the pieces, one by one -------------------------------------------------------------------


def _trial(*calls: tuple[str, Any], bracket: bool = True) -> PassingTrial:
    return PassingTrial(tuple(calls), bracket)


@pytest.mark.parametrize(
    ("values", "stable"),
    [
        ([{"a": 1, "b": 2}, {"a": 1, "b": 3}], {"a": 1}),
        ([{"a": Decimal("1.0")}, {"a": 1}], {"a": 1}),  # D-7: 1.0 is 1
        ([{"a": True}, {"a": 1}], NOTHING),  # D-7: true is not 1
        ([{"a": {"x": 1, "y": 2}}, {"a": {"x": 1, "y": 3}}], {"a": {"x": 1}}),
        ([{"a": {"x": 1}}, {"a": {"x": 2}}], NOTHING),
        ([{"a": [1, 2]}, {"a": [1, 3]}], NOTHING),  # D-8: arrays compare whole
        ([{"a": [1, 2], "b": 0}, {"a": [1, 2], "b": 1}], {"a": [1, 2]}),
        ([{"a": 1}, {"b": 1}], NOTHING),  # a key some input lacks
        ([{"a": None}, {"a": None, "b": 1}], {"a": None}),
        (["x", "x"], "x"),
        (["x", "y"], NOTHING),
        ([{}, {}], {}),
        ([{"n": 9007199254740993}, {"n": 9007199254740993}], {"n": 9007199254740993}),
        ([{"n": Decimal("19.99")}, {"n": Decimal("19.990")}], {"n": 19.99}),
        # a decimal no double holds: the suite would read it rounded (D-7), so it is left out
        ([{"n": Decimal("0.1000000000000000000001"), "k": 1}] * 2, {"k": 1}),
        ([{"l": [Decimal("0.1000000000000000000001")], "k": 1}] * 2, {"k": 1}),
        ([{"s": "\ud800", "k": 1}] * 2, {"k": 1}),  # no UTF-8 text
        ([{"a": 1}, UNREADABLE], NOTHING),
    ],
)
def test_e145_only_argument_paths_that_never_varied_are_kept(
    values: list[Any], stable: Any
) -> None:
    found = stable_args(values)
    if stable is NOTHING:
        assert found is NOTHING
    else:
        assert found == stable


def test_e145_no_args_without_a_stable_path_and_the_reasons_in_order() -> None:
    """An expected call with nothing stable matches on the tool alone; an input that is `{}`
    everywhere adds nothing either. The reasons are checked in a fixed order, each in counts."""
    agreed = propose("t", 2, [_trial(("crm:a", {"x": 1})), _trial(("crm:a", {"x": 2}))])
    assert agreed.calls == ({"tool": "crm:a"},)
    empty = propose("t", 2, [_trial(("crm:a", {})), _trial(("crm:a", {}))])
    assert empty.calls == ({"tool": "crm:a"},)
    cases = [
        (propose("t", 0, []), "no-passing-trial", "it has no counted trial"),
        (propose("t", 1, []), "no-passing-trial", "its 1 counted trial did not pass"),
        (propose("t", 3, [_trial(bracket=False), _trial()]), "path-unknown", None),
        (propose("t", 2, [_trial(("crm:a", {})), _trial(("crm:b", {}))]), "no-common-call", None),
        (
            propose(
                "t", 2, [_trial(("crm:a", {}), ("crm:b", {})), _trial(("crm:b", {}), ("crm:a", {}))]
            ),
            "passing-trials-disagree",
            "its 2 passing trials made 2 different call sequences (2 calls each)",
        ),
    ]
    for proposal, reason, detail in cases:
        assert (proposal.calls, proposal.reason) == (None, reason)
        assert proposal.reason in common_calls.REASONS
        assert detail is None or proposal.detail == detail
        assert_content_free(proposal.detail or "")


def test_e145_d18_a_passing_trial_without_a_bracket_leaves_the_path_unknown(
    tmp_path: Path,
) -> None:
    """From the host record a trial with no bracket may pass; what it called cannot be told
    (D-18), so its task gets no expectation rather than one its calls never showed."""
    log = LogBuilder()
    log.eval_started(task_count=1)
    log.trial("blind", [_lookup("A-1", 0)], passed=True)
    log.trial("blind", bracket=False, passed=True)
    log.eval_completed()
    events, _ = _files(tmp_path, log, None)
    (task,) = infer_paths(events).tasks
    assert (task.reason, task.detail) == (
        "path-unknown",
        "1 of its 2 passing trials had no bracket: what it called is unknown (D-18)",
    )


# --- the command ----------------------------------------------------------------------------


def test_e145_the_file_is_never_written_over_without_force_nor_over_an_input(
    tmp_path: Path,
) -> None:
    events, suites = _files(tmp_path, _log(), _suite())
    out = tmp_path / "proposed.json"
    out.write_text("mine", encoding="utf-8")
    refused = _invoke(str(events), "--suites", str(suites), "-o", str(out))
    assert refused.exit_code == 2 and "exists" in refused.output and "--force" in refused.output
    assert out.read_text(encoding="utf-8") == "mine"
    replaced = _invoke(str(events), "--suites", str(suites), "-o", str(out), "--force", "-q")
    assert (replaced.exit_code, replaced.output) == (0, "")
    assert read_suite_file(out).errors == ()
    suite_file = suites / "suite.json"
    before = suite_file.read_bytes()
    for option in ((), ("--force",)):
        onto = _invoke(str(events), "--suites", str(suites), "-o", str(suite_file), *option)
        assert onto.exit_code == 2 and "would replace an input" in onto.output
    assert suite_file.read_bytes() == before
    with pytest.raises(InputError, match="exists"):
        write_proposal(infer_paths(events, suites), out)


@pytest.mark.slow
def test_e145_runs_of_several_suites_need_a_choice(tmp_path: Path) -> None:
    """A suite file describes one suite: runs of several are a usage error naming them, and
    --suite-id chooses."""
    out = tmp_path / "proposed.json"
    several = _invoke(str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "-o", str(out))
    assert several.exit_code == 2 and "claim 3 suites" in several.output
    assert not out.exists()
    chosen = _invoke(
        *(str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "-o", str(out)),
        *("--suite-id", "acme.support.evals.fixture-miss", "--json"),
    )
    assert chosen.exit_code == 0, chosen.output
    assert json.loads(chosen.output)["suiteId"] == "acme.support.evals.fixture-miss"


@pytest.mark.slow
def test_e145_a_run_skipped_is_told_and_the_rest_still_proposes(tmp_path: Path) -> None:
    """A run of the suite that cannot be graded (two events at one sequence: D-3) is told on
    stderr and the exit code is 3, as `run`'s; the file is written from the runs graded."""
    good, broken = _log(RUN), _log(RUN2)
    broken.add("agent.tool-called", {"toolName": "crm:x"}, sequence=3)
    events = write_events(tmp_path / "events.parquet", [*good.rows, *broken.rows])
    out = tmp_path / "proposed.json"
    done = CliRunner().invoke(cli, ["suite", "infer", str(events), "-o", str(out), "--json"])
    assert done.exit_code == 3, done.output
    document = json.loads(done.stdout)
    assert (document["runs"], document["skippedRuns"], document["exitCode"]) == ([RUN], [RUN2], 3)
    assert "skipped" in done.stderr
    assert read_suite_file(out).errors == ()


def test_e145_mode_is_one_of_the_match_modes() -> None:
    with pytest.raises(ValueError, match=r"InferOptions\.mode = 'superset'"):
        InferOptions(mode="superset")  # type: ignore[arg-type]
    bad = CliRunner().invoke(cli, ["suite", "infer", "x", "-o", "y", "--mode", "superset"])
    assert bad.exit_code == 2


@pytest.mark.slow
def test_e145_inputs_are_read_as_the_grader_reads_them(tmp_path: Path) -> None:
    """A number DuckDB may round is read from the payload text (D-7), so a big integer that
    never varied is kept digit for digit and graded again it matches."""
    log = LogBuilder()
    log.eval_started(task_count=1, trialCount=2)
    for index in range(2):
        text = '{"agentId": "acme.agents.support", "toolName": "crm:a", "callId": "c", '
        text += f'"inputs": {{"n": 9007199254740993, "i": {index}}}}}'
        log.trial("big", [Call("crm:a", raw=text)], passed=True, trial_index=index)
    log.eval_completed()
    events, _ = _files(tmp_path, log, None)
    doc = infer_paths(events).document
    (call,) = _task(doc, "big")["expected"]["trajectory"]["calls"]
    assert call["args"] == {"n": 9007199254740993}
    trials = _regraded(log, doc)
    assert trials[("big", 0)]["trajectory_matched"] and trials[("big", 1)]["trajectory_matched"]


# --- the made suite's pass rule (E-149) ---------------------------------------------------------

#: each task's scores over its three trials, with a bar of 0.5: `mostly` passes under `mean`
#: and `any`, `once` only under `any`, `always` under every rule
SCORES = {"mostly": [1, 1, 0], "once": [1, 0, 0], "always": [1, 1, 1]}
#: the tasks that pass under each rule, at that bar (§3.5)
PASSING = {
    "mean": {"mostly", "always"},
    "all": {"always"},
    "any": {"mostly", "once", "always"},
}


def _scored_log(bar: float = 0.5) -> LogBuilder:
    """Three tasks of three trials whose host verdict is the score reaching `bar` (as `ingest`
    writes an Inspect sample's), each trial making the same call, so each gets an expectation
    every trial matches and the gating score is the score (D-10)."""
    log = LogBuilder()
    log.eval_started(task_count=len(SCORES), trialCount=3)
    for index in range(3):
        for task, scores in SCORES.items():
            score = scores[index]
            log.trial(
                task, [_lookup("A-1", 0)], score=score, passed=score >= bar, trial_index=index
            )
    log.eval_completed()
    return log


def _passing_tasks(log: LogBuilder, doc: dict[str, Any]) -> set[str]:
    result = grade(log, [doc])
    assert result.skipped == []
    return {row["task_id"] for row in result.tasks.iter_rows(named=True) if row["passed"]}


@pytest.mark.parametrize("rule", slow_except([None, "all", "any"], fast=[None, "any"]))
def test_e149_the_made_suite_takes_the_pass_rule_chosen_and_is_graded_by_it(
    tmp_path: Path, rule: str | None
) -> None:
    """Without a suite, the suite made from the log has the bar the runs were graded with and
    the rule chosen, `mean` unless chosen; it validates, and graded again each task passes as
    that rule reads its trials."""
    log = _scored_log()
    events, _ = _files(tmp_path, log, None)
    proposal = infer_paths(
        events,
        grade_options=GradeOptions(default_pass_score=0.5),
        suite_options=StartingSuiteOptions(rule),  # type: ignore[arg-type]
    )
    doc = proposal.document
    written = rule or "mean"
    assert doc["thresholds"] == {"passScore": 0.5}
    assert doc["trials"] == {"count": 3, "passRule": written}
    assert [fault for fault in validate_suite(doc) if fault.severity == "error"] == []
    assert _passing_tasks(log, doc) == PASSING[written]


@pytest.mark.slow
def test_e149_one_trial_per_task_gets_a_rule_only_when_one_is_chosen(tmp_path: Path) -> None:
    """Runs of one trial per task get no trials block by default, so the host's verdict on the
    one trial decides the task, as D-4 graded it; a rule chosen comes in a block of one trial,
    which validates and is graded by: under `mean`, a trial the host passed at 0.5 does not
    reach the bar 1.0."""
    log = LogBuilder()
    log.eval_started(task_count=2)
    log.trial("half", [_lookup("A-1", 0)], score=0.5, passed=True)
    log.trial("full", [_lookup("A-1", 0)], score=1, passed=True)
    log.eval_completed()
    events, _ = _files(tmp_path, log, None)
    plain = infer_paths(events).document
    assert "trials" not in plain
    assert _passing_tasks(log, plain) == {"half", "full"}
    out = tmp_path / "chosen.json"
    done = _invoke(str(events), "-o", str(out), "--pass-rule", "mean", "-q")
    assert done.exit_code == 0, done.output
    chosen = json.loads(out.read_text(encoding="utf-8"))
    assert chosen["trials"] == {"count": 1, "passRule": "mean"}
    assert read_suite_file(out).errors == ()  # as `evalbatch validate` reads it
    assert _passing_tasks(log, chosen) == {"full"}


def test_e149_a_pass_rule_for_a_suite_given_is_refused(tmp_path: Path) -> None:
    """The suite given keeps its own rule: `--pass-rule` with `--suites` is a usage error
    before anything is read, and from the library an `InputError`; a rule outside the three
    is refused too."""
    events, suites = _files(tmp_path, _log(), _suite())
    out = tmp_path / "proposed.json"
    refused = _invoke(str(events), "--suites", str(suites), "-o", str(out), "--pass-rule", "any")
    assert refused.exit_code == 2
    assert "--pass-rule" in refused.output and "--suites" in refused.output
    assert "keeps its own" in refused.output
    assert not out.exists()
    with pytest.raises(InputError, match="keeps its own passRule"):
        infer_paths(events, suites, suite_options=StartingSuiteOptions("any"))
    bad = _invoke(str(events), "-o", str(out), "--pass-rule", "most")
    assert bad.exit_code == 2 and "Invalid value for '--pass-rule'" in bad.output
    with pytest.raises(ValueError, match=r"StartingSuiteOptions\.pass_rule = 'most'"):
        StartingSuiteOptions("most")  # type: ignore[arg-type]
