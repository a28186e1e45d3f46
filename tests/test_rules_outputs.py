"""CONTRACT §4: the EvalSummary's field names and order, content-freedom, what is never written;
content-free problem rows."""

from __future__ import annotations

import json

import pytest

from tests.logbuilder import (
    HELPER,
    RUN,
    RUN2,
    Call,
    LogBuilder,
    expect,
    golden,
    grade,
    problems_of,
    rubric,
    suite,
    summary_of,
    task_of,
    traj,
)

SUITE_KEYS = [
    "suiteId",
    "suiteVersion",
    "aggregateScore",
    "passed",
    "taskCount",
    "passedCount",
    "totalCostUsd",
    "evaluatedModelClass",
    "trialStats",
    "tasks",
]
TASK_KEYS = [
    "taskId",
    "score",
    "passed",
    "costUsd",
    "latencyMs",
    "trajectory",
    "trials",
    "efficiency",
    "fixtureMissCount",
]


def _full_log() -> LogBuilder:
    log = LogBuilder()
    log.eval_started(task_count=2, trialCount=2)
    for index in (0, 1):
        log.trial(
            "task-a",
            calls=[("crm:lookup", {"id": 1})],
            usage=[{"costEstimateUsd": 0.25}],
            model_class="coding",
            trial_index=index,
            score=1,
            passed=True,
            latencyMs=120,
        )
        log.trial(
            "task-b",
            usage=[{"costEstimateUsd": 0.125}],
            model_class="coding",
            trial_index=index,
            score=0.5,
            passed=False,
        )
    log.eval_completed()
    return log


def _full_suite() -> dict:
    return suite(
        golden(
            "task-a",
            traj("in-order", [expect("crm:lookup", {"id": 1}, "exact")]),
            fixtures={"toolResponses": [{"tool": "crm:lookup", "response": {}}], "onMiss": "fail"},
        ),
        golden("task-b"),
        trials={"count": 2, "k": 1},
        thresholds={"passScore": 0.5},
    )


@pytest.mark.slow
def test_s4_summary_fields_and_order_with_every_optional_field() -> None:
    """§4: the summary, task and sub-block fields, exactly these names, in this order."""
    summary = summary_of(grade(_full_log(), [_full_suite()]))
    assert list(summary) == SUITE_KEYS
    assert list(summary["trialStats"]) == ["k", "passAtK", "passHatK", "scoreStderr"]
    task_a = task_of(summary, "task-a")
    assert list(task_a) == TASK_KEYS
    assert list(task_a["trajectory"]) == [
        "mode",
        "matched",
        "expectedCount",
        "observedCount",
        "matchedCount",
        "forbiddenCount",
    ]
    assert list(task_a["trials"]) == ["n", "passedCount", "meanScore", "passAtK", "passHatK"]
    assert list(task_a["efficiency"]) == [
        "toolCallCount",
        "modelCallCount",
        "inputTokens",
        "outputTokens",
    ]
    task_b = task_of(summary, "task-b")
    assert list(task_b) == [
        "taskId",
        "score",
        "passed",
        "costUsd",
        "latencyMs",
        "trials",
        "efficiency",
    ]
    # the JSON text keeps the same order
    text = json.dumps(summary)
    assert text.index('"suiteId"') < text.index('"aggregateScore"') < text.index('"tasks"')


@pytest.mark.slow
def test_s4_summary_values_of_the_full_example() -> None:
    """§3 values behind the order test, so the order test is not vacuous."""
    summary = summary_of(grade(_full_log(), [_full_suite()]))
    assert summary["suiteId"] == "acme.team.evals.support"
    assert summary["suiteVersion"] == "1.0.0"
    assert summary["taskCount"] == 2
    assert summary["passedCount"] == 1
    assert summary["aggregateScore"] == 0.75
    assert summary["passed"] is True
    assert summary["totalCostUsd"] == 0.75
    assert summary["evaluatedModelClass"] == "coding"
    task_a = task_of(summary, "task-a")
    assert task_a["fixtureMissCount"] == 0
    assert task_a["latencyMs"] == 120
    assert task_a["costUsd"] == 0.5


def test_s4_minimal_summary_has_only_required_fields() -> None:
    """§4: optional fields only when §3 defines them: no cost source, no latency, no trials
    block, no trajectory, no fixtures, no model class -> only the required fields."""
    log = LogBuilder()
    log.eval_started()
    log.scored("task-a", score=1, passed=True)  # no bracket, no latency, no cost
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    assert list(summary) == [
        "suiteId",
        "suiteVersion",
        "aggregateScore",
        "passed",
        "taskCount",
        "passedCount",
        "tasks",
    ]
    assert list(summary["tasks"][0]) == ["taskId", "score", "passed", "efficiency"]


def test_s4_regression_is_absent_without_a_baseline_in_the_input() -> None:
    """§3.6/§4: `regression` only when eval.started.baselineRunId names a run in the input."""
    plain = LogBuilder(RUN)
    plain.eval_started(modes=("golden", "regression"))
    plain.trial("task-a")
    plain.eval_completed()
    orphan = LogBuilder(RUN2)
    orphan.eval_started(modes=("golden", "regression"), baselineRunId="acme/run-9999999999999999")
    orphan.trial("task-a")
    orphan.eval_completed()
    result = grade([plain, orphan], [suite(golden("task-a"), modes=("golden", "regression"))])
    assert "regression" not in summary_of(result, RUN)
    assert "regression" not in summary_of(result, RUN2)


def test_s4_rfc_0081_fields_the_log_cannot_supply_are_not_written() -> None:
    """§4: schemaValid, safetyFindings, regression.diffRef, pinnedNodeIds are not written, even
    when eval.scored carries schemaValid / safetyFindingCount."""
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", schemaValid=True, safetyFindingCount=2, scoreLabel="pass")
    log.eval_completed()
    summary = summary_of(grade(log, [suite(golden("task-a"))]))
    text = json.dumps(summary)
    for name in (
        "schemaValid",
        "safetyFindings",
        "safetyFindingCount",
        "pinnedNodeIds",
        "diffRef",
        "scoreLabel",
        "regression",
    ):
        assert name not in text


SECRETS = [
    "vault:exfiltrate-secrets",
    "billing:refund-all-accounts",
    "helper:leak-tool",
    "sk-SECRET-ARGUMENT-42",
    "PROMPT-TEXT-do-not-leak",
    "TOOL-OUTPUT-do-not-leak",
    "FIXTURE-RESPONSE-do-not-leak",
    "EXPECTED-ARG-do-not-leak",
    "TASK-INPUT-do-not-leak",
    "RUBRIC-CRITERION-do-not-leak",
]


def _leaky_log(malformed: bool) -> LogBuilder:
    """Content everywhere; `malformed` adds a non-JSON payload (a `payload-ignored` warning)."""
    log = LogBuilder()
    log.eval_started()
    inv = log.started()
    log.add(
        "agent.prompt-resolved",
        {"nodeId": "n", "kind": "system", "chain": [], "resolved": "PROMPT-TEXT-do-not-leak"},
    )
    log.call("vault:exfiltrate-secrets", {"token": "sk-SECRET-ARGUMENT-42"})
    returned = '{"toolName": "vault:exfiltrate-secrets", "outcome": "TOOL-OUTPUT-do-not-leak"'
    log.add("agent.tool-returned", raw=returned + ("" if malformed else "}"))
    log.tool_call(Call("helper:leak-tool", {"q": "sk-SECRET-ARGUMENT-42"}, agent=HELPER))
    log.call("billing:refund-all-accounts", {"note": "sk-SECRET-ARGUMENT-42"})
    log.usage(inputTokens="sk-SECRET-ARGUMENT-42", outputTokens=["sk-SECRET-ARGUMENT-42"])
    log.usage(costEstimateUsd=0.5, currency="EUR")
    log.completed(inv)
    log.scored(
        "task-a",
        score="sk-SECRET-ARGUMENT-42",
        passed="PROMPT-TEXT-do-not-leak",
        trialIndex="sk-SECRET-ARGUMENT-42",
    )
    log.trial("ghost-task", calls=[("vault:exfiltrate-secrets", {"k": "sk-SECRET-ARGUMENT-42"})])
    log.eval_completed()
    return log


def _leaky_suite() -> dict:
    task = golden(
        "task-a",
        traj(
            "exact",
            [
                expect("vault:exfiltrate-secrets", {"token": "EXPECTED-ARG-do-not-leak"}, "exact"),
            ],
            forbidden=["billing:refund-all-accounts"],
        ),
        fixtures={
            "toolResponses": [
                {
                    "tool": "vault:exfiltrate-secrets",
                    "args": {"token": "EXPECTED-ARG-do-not-leak"},
                    "argsMatch": "exact",
                    "response": "FIXTURE-RESPONSE-do-not-leak",
                }
            ],
            "onMiss": "fail",
        },
    )
    task["input"] = {"message": "TASK-INPUT-do-not-leak"}
    criterion = rubric("task-b")
    criterion["expected"]["rubric"] = [{"criterion": "RUBRIC-CRITERION-do-not-leak", "weight": 1}]
    return suite(task, criterion, targetAgentId="acme.agents.other")


@pytest.mark.slow
@pytest.mark.parametrize("malformed", [False, True], ids=["json", "with-non-json-payload"])
def test_s4_summary_is_content_free(malformed: bool) -> None:
    """§4/RFC §H: no tool names, arguments, outputs, prompts or suite content in the summary."""
    result = grade(_leaky_log(malformed), [_leaky_suite()])
    text = json.dumps(summary_of(result))
    for secret in SECRETS:
        assert secret not in text


@pytest.mark.slow
@pytest.mark.parametrize("malformed", [False, True], ids=["json", "with-non-json-payload"])
def test_s4_problem_rows_are_content_free(malformed: bool) -> None:
    """§4: problem rows (runId, sequence, code, severity, message) carry no content."""
    result = grade(_leaky_log(malformed), [_leaky_suite()])
    rows = problems_of(result, None)
    assert rows, "the leaky log must raise problems for this test to mean something"
    assert set(rows[0]) == {"run_id", "sequence", "code", "severity", "message"}
    for row in rows:
        for secret in SECRETS:
            assert secret not in json.dumps(row)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suite_id", "task_id"),
    [
        pytest.param("Acme Team Evals", "task-a", id="suite-id"),
        pytest.param("acme.team.evals.support", "Task_A", id="task-id"),
    ],
)
def test_s4_summary_that_would_not_validate_is_not_written(suite_id: str, task_id: str) -> None:
    """§4: a summary outside OpenWOP's patterns is not written (`summary-invalid`, error) and the
    run counts as skipped; other runs are written."""
    bad = LogBuilder(RUN)
    bad.eval_started(suite_id=suite_id)
    bad.trial(task_id)
    bad.eval_completed()
    good = LogBuilder(RUN2)
    good.eval_started()
    good.trial("task-a")
    good.eval_completed()
    result = grade([bad, good], [])
    assert RUN not in result.summaries
    assert RUN in result.skipped
    assert "error" in {r["severity"] for r in problems_of(result) if r["code"] == "summary-invalid"}
    assert summary_of(result, RUN2)["taskCount"] == 1
