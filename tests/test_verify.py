"""`evalbatch verify`: recompute every eval run and compare with the host's record (CONTRACT §8).

The main fixture is one log holding several runs of one suite ("shop"): a host that grades
correctly, and hosts with one planted mistake each. Every expected value of the correct host is
worked out by hand below from the contract, never read back from the implementation. Verify must
pass the correct host clean and name each mistake with the rule that decides it (E-27).

The shop suite (passScore 0.7, trials count 3, k 2, passRule all), host output grades per
trial and what the contract makes of them:
- `refund`: golden, in-order [crm:lookup, billing:refund], forbidden billing:refund-all. The
  host's output grades are 1/pass ×3, but trial 1 calls billing:refund-all: it fails (§3.2).
- `lookup`: golden, one fixture crm:lookup {id: 1} (exact), onMiss "fail". Trial 1 calls
  {id: 2}, a miss: it fails closed with score 0 (D-9). Trials 0 and 2 score 1 and pass.
- `tone`: rubric, one judge call (500/20 tokens) after each bracket; host 0.5/fail, 1/pass,
  0.75/pass, taken as they are.

Each task: c = 2 of n = 3, so passed (all) false, passAtK = 1 − C(1,2)/C(3,2) = 1 and
passHatK = C(2,2)/C(3,2) = 1/3 (a host using (c/n)^k would say 4/9). Scores: refund 1, lookup
2/3, tone 0.75: aggregateScore 29/36. Gating means (D-10): 2/3, 2/3, 0.75: 25/36 < 0.7, so the
suite fails, though the output aggregate 29/36 ≥ 0.7. scoreStderr = stdev(1, 2/3, 3/4)/√3 =
√13/36. Efficiency (one in-bracket model call of 100/10 tokens per trial; judge calls excluded,
D-6): refund 7/3 tool calls (2 + 3 + 2), lookup 1, tone 0.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalbatch import verify
from evalbatch.cli import cli, main
from evalbatch.options import GradeOptions, Resources
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES, write_events
from tests.logbuilder import (
    SUITE_ID,
    VERSION,
    LogBuilder,
    expect,
    golden,
    rubric,
    suite,
    traj,
)

REFUND_TRAJ = traj(
    "in-order",
    [expect("crm:lookup"), expect("billing:refund")],
    forbidden=["billing:refund-all"],
)
SHOP_SUITE = suite(
    golden("refund", REFUND_TRAJ),
    golden(
        "lookup",
        fixtures={
            "toolResponses": [
                {"tool": "crm:lookup", "args": {"id": 1}, "argsMatch": "exact", "response": {}}
            ],
            "onMiss": "fail",
        },
    ),
    rubric("tone"),
    modes=["golden", "rubric"],
    trials={"count": 3, "k": 2, "passRule": "all"},
    thresholds={"passScore": 0.7},
)
MODEL_CALL = {"inputTokens": 100, "outputTokens": 10}
JUDGE_CALL = {"inputTokens": 500, "outputTokens": 20}

CLEAN = "acme/run-shop-clean-0001"
PLANTED = {
    "ignores-forbidden": "acme/run-shop-forbidden-0001",
    "pass-rate-power": "acme/run-shop-passhat-0001",
    "fail-closed-keeps-score": "acme/run-shop-failclosed-0001",
    "judge-in-efficiency": "acme/run-shop-judge-0001",
    "output-aggregate-pass": "acme/run-shop-outputpass-0001",
    "task-count-per-trial": "acme/run-shop-taskcount-0001",
}


def shop_summary() -> dict[str, Any]:
    """The correct EvalSummary of a shop run, derived by hand (module docstring)."""
    third = 1 / 3
    block = {"n": 3, "passedCount": 2, "passAtK": 1.0, "passHatK": third}
    return {
        "suiteId": SUITE_ID,
        "suiteVersion": VERSION,
        "aggregateScore": 29 / 36,
        "passed": False,
        "taskCount": 3,
        "passedCount": 0,
        "evaluatedModelClass": "general",
        "trialStats": {
            "k": 2,
            "passAtK": 1.0,
            "passHatK": third,
            "scoreStderr": math.sqrt(13) / 36,
        },
        "tasks": [
            {
                "taskId": "refund",
                "score": 1.0,
                "passed": False,
                "latencyMs": 1000,
                "trajectory": {
                    "mode": "in-order",
                    "matched": True,
                    "expectedCount": 2,
                    "observedCount": 2,
                    "matchedCount": 2,
                    "forbiddenCount": 0,
                },
                "trials": {**block, "meanScore": 1.0},
                "efficiency": {
                    "toolCallCount": 7 / 3,
                    "modelCallCount": 1,
                    "inputTokens": 100,
                    "outputTokens": 10,
                },
            },
            {
                "taskId": "lookup",
                "score": 2 / 3,
                "passed": False,
                "latencyMs": 1000,
                "trials": {**block, "meanScore": 2 / 3},
                "efficiency": {
                    "toolCallCount": 1,
                    "modelCallCount": 1,
                    "inputTokens": 100,
                    "outputTokens": 10,
                },
                "fixtureMissCount": 1,
            },
            {
                "taskId": "tone",
                "score": 0.75,
                "passed": False,
                "latencyMs": 1000,
                "trials": {**block, "meanScore": 0.75},
                "efficiency": {
                    "toolCallCount": 0,
                    "modelCallCount": 1,
                    "inputTokens": 100,
                    "outputTokens": 10,
                },
            },
        ],
    }


def shop_run(run_id: str, plant: str | None = None) -> tuple[LogBuilder, dict[str, Any]]:
    """A shop run whose host grades correctly, or makes the one mistake `plant` names; returns
    the log and the EvalSummary that host serves."""
    summary = shop_summary()
    tasks = {t["taskId"]: t for t in summary["tasks"]}
    completed = {"aggregateScore": 29 / 36, "passed": False, "taskCount": 3, "passedCount": 0}
    refund_t1_passed, lookup_t1_score = False, 0
    if plant == "ignores-forbidden":
        refund_t1_passed = True  # the billing:refund-all call is not held against the trial
    elif plant == "pass-rate-power":
        for task in summary["tasks"]:
            task["trials"]["passHatK"] = (2 / 3) ** 2
        summary["trialStats"]["passHatK"] = (2 / 3) ** 2
    elif plant == "fail-closed-keeps-score":
        lookup_t1_score = 1.0  # passed false, but the output score stays
        tasks["lookup"]["score"] = tasks["lookup"]["trials"]["meanScore"] = 1.0
        summary["aggregateScore"] = completed["aggregateScore"] = 11 / 12
    elif plant == "judge-in-efficiency":
        tasks["tone"]["efficiency"] |= {"modelCallCount": 2, "inputTokens": 600, "outputTokens": 30}
    elif plant == "output-aggregate-pass":
        summary["passed"] = completed["passed"] = True  # 29/36 >= 0.7 on output scores
    elif plant == "task-count-per-trial":
        completed["taskCount"] = 9  # counted eval.scored events, not tasks (RFC 0244 R1)

    log = LogBuilder(run_id)
    log.eval_started(modes=("golden", "rubric"), task_count=3, trialCount=3)
    common = {"usage": [MODEL_CALL], "model_class": "general", "latencyMs": 1000}
    refund_calls = [
        ["crm:lookup", "billing:refund"],
        ["crm:lookup", "billing:refund", "billing:refund-all"],
        ["crm:lookup", "billing:refund"],
    ]
    for index, calls in enumerate(refund_calls):
        passed = refund_t1_passed if index == 1 else True
        log.trial("refund", calls, score=1, passed=passed, trial_index=index, **common)
    for index in range(3):
        call = ("crm:lookup", {"id": 2 if index == 1 else 1})
        score, passed = (lookup_t1_score, False) if index == 1 else (1, True)
        log.trial("lookup", [call], score=score, passed=passed, trial_index=index, **common)
    for index, (score, passed) in enumerate([(0.5, False), (1.0, True), (0.75, True)]):
        log.trial(
            "tone", judge=[JUDGE_CALL], score=score, passed=passed, trial_index=index, **common
        )
    log.eval_completed(**completed)
    return log, summary


@pytest.fixture(scope="module")
def shop() -> verify.VerifyReport:
    """One verify over the correct shop host and every planted one (each its own run)."""
    runs = [shop_run(CLEAN), *(shop_run(run, plant) for plant, run in PLANTED.items())]
    events = [row for log, _ in runs for row in log.rows]
    summaries = {log.run_id: summary for log, summary in runs}
    return verify.verify_events(events, [SHOP_SUITE], summaries)


def findings_of(report: verify.VerifyReport, run_id: str) -> list[verify.Finding]:
    return [f for f in report.findings if f.run_id == run_id]


def run_of(report: verify.VerifyReport, run_id: str) -> verify.RunVerdict:
    return next(r for r in report.runs if r.run_id == run_id)


def keyed(findings: list[verify.Finding]) -> dict[tuple[str, str | None, int | None], Any]:
    return {
        (f.field, f.task_id, f.trial_index): (f.host, f.recomputed, f.rule, f.reason)
        for f in findings
    }


# --------------------------------------------------------------------------------------------
# A host that grades correctly verifies clean


def test_s8_correct_host_verifies_clean(shop: verify.VerifyReport) -> None:
    """CONTRACT §8: every eval.scored, eval.started, eval.completed and summary field of a host
    that followed the rules agrees with the recomputation (RFC 0244 §B tolerance)."""
    assert findings_of(shop, CLEAN) == []
    run = run_of(shop, CLEAN)
    assert (run.verdict, run.graded_from, run.summary_checked) == ("agrees", "suite", True)


def test_s8_every_host_field_was_compared(shop: verify.VerifyReport) -> None:
    """The tally counts each host field compared across the seven runs: 9 eval.scored per run,
    3 tasks per summary, and the summary's blocks (§4)."""
    runs = 1 + len(PLANTED)
    assert shop.compared["eval.scored.score"] == 9 * runs
    assert shop.compared["eval.scored.passed"] == 9 * runs
    assert shop.compared["eval.scored.count"] == 3 * runs
    assert shop.compared["eval.started.trialCount"] == runs
    assert shop.compared["summary.tasks.trials.passHatK"] == 3 * runs
    assert shop.compared["summary.tasks.fixtureMissCount"] == 3 * runs
    assert shop.compared["summary.tasks.trajectory.matched"] == runs  # refund only
    assert sum(shop.disagreed.values()) == len(shop.findings)


# --------------------------------------------------------------------------------------------
# Planted mistakes, each named with its rule


def test_s3_2_host_ignoring_forbidden_is_named(shop: verify.VerifyReport) -> None:
    """RFC 0244 §A / CONTRACT §3.2: a forbidden call makes the trajectory unmatched, so trial 1
    of `refund` must not pass (§3.4). The host said it passed."""
    found = keyed(findings_of(shop, PLANTED["ignores-forbidden"]))
    assert found == {
        ("eval.scored.passed", "refund", 1): (True, False, "§3.2", "forbidden"),
    }


def test_s3_5_host_reporting_pass_hat_k_as_pass_rate_power_is_named(
    shop: verify.VerifyReport,
) -> None:
    """RFC 0244 §B / CONTRACT §3.5: pass^k = C(c,k)/C(n,k) = 1/3 for c=2, n=3, k=2; the host
    reported (c/n)^k = 4/9 per task and as the suite mean."""
    found = keyed(findings_of(shop, PLANTED["pass-rate-power"]))
    expected = {
        ("summary.tasks.trials.passHatK", task, None): (4 / 9, 1 / 3, "§3.5", "pass-rate-power")
        for task in ("refund", "lookup", "tone")
    }
    expected[("summary.trialStats.passHatK", None, None)] = (
        4 / 9,
        1 / 3,
        "§3.5",
        "pass-rate-power",
    )
    assert found.keys() == expected.keys()
    for key, (host, recomputed, rule, reason) in expected.items():
        got = found[key]
        assert math.isclose(got[0], host) and math.isclose(got[1], recomputed), key
        assert got[2:] == (rule, reason), key


def test_d9_host_keeping_the_output_score_on_a_fail_closed_trial_is_named(
    shop: verify.VerifyReport,
) -> None:
    """RFC 0244 §D (amended) / D-9: with onMiss "fail" a trial with a fixture miss reports score
    0 as well as passed false. The host kept score 1 on `lookup` trial 1, so its task score and
    aggregate are off too."""
    found = keyed(findings_of(shop, PLANTED["fail-closed-keeps-score"]))
    assert found[("eval.scored.score", "lookup", 1)] == (1.0, 0.0, "D-9", "fixture-miss")
    host, recomputed, rule, reason = found[("summary.tasks.score", "lookup", None)]
    assert (host, rule, reason) == (1.0, "D-9", "fixture-miss")
    assert math.isclose(recomputed, 2 / 3)
    assert found[("summary.tasks.trials.meanScore", "lookup", None)][2] == "D-9"
    host, recomputed, rule, _ = found[("eval.completed.aggregateScore", None, None)]
    assert math.isclose(host, 11 / 12) and math.isclose(recomputed, 29 / 36) and rule == "§3.6"
    assert ("eval.scored.passed", "lookup", 1) not in found  # the host did fail it


def test_d6_host_counting_judge_calls_in_efficiency_is_named(shop: verify.VerifyReport) -> None:
    """RFC 0244 §C / D-6: efficiency counts inside the brackets; the judge call after each
    `tone` bracket is excluded. The host's 2 model calls and 600/30 tokens per trial are ours
    plus the judge call (1 + 1, 100 + 500, 10 + 20); its tool calls (0) are right."""
    found = keyed(findings_of(shop, PLANTED["judge-in-efficiency"]))
    assert found == {
        ("summary.tasks.efficiency.modelCallCount", "tone", None): (
            2,
            1.0,
            "D-6",
            "judge-calls-counted",
        ),
        ("summary.tasks.efficiency.inputTokens", "tone", None): (
            600,
            100.0,
            "D-6",
            "judge-calls-counted",
        ),
        ("summary.tasks.efficiency.outputTokens", "tone", None): (
            30,
            10.0,
            "D-6",
            "judge-calls-counted",
        ),
    }


def test_d10_host_passing_the_suite_on_output_scores_is_named(
    shop: verify.VerifyReport,
) -> None:
    """D-10: the suite's `passed` reads the gating aggregate 25/36 < 0.7, not the output
    aggregate 29/36 >= 0.7 the host used."""
    found = keyed(findings_of(shop, PLANTED["output-aggregate-pass"]))
    assert found == {
        ("eval.completed.passed", None, None): (True, False, "D-10", "output-score"),
        ("summary.passed", None, None): (True, False, "D-10", "output-score"),
    }


def test_r1_host_counting_tasks_per_trial_is_named(shop: verify.VerifyReport) -> None:
    """RFC 0244 Compatibility R1: once trials exist, counting eval.scored events (9) miscounts
    tasks (3)."""
    found = keyed(findings_of(shop, PLANTED["task-count-per-trial"]))
    assert found == {("eval.completed.taskCount", None, None): (9, 3, "R1", "counted-trials")}


def test_s8_each_planted_run_disagrees_and_the_report_exits_1(
    shop: verify.VerifyReport,
) -> None:
    """Per-run verdicts: the correct host agrees, every planted host disagrees; exit code 1."""
    verdicts = {r.run_id: r.verdict for r in shop.runs}
    assert verdicts == {CLEAN: "agrees", **dict.fromkeys(PLANTED.values(), "disagrees")}
    assert shop.verdict == "disagrees" and shop.exit_code == 1


def test_s8_findings_are_content_free(shop: verify.VerifyReport) -> None:
    """RFC 0244 §H: findings carry ids, field names, numbers and rule ids, never tool names."""
    text = json.dumps(shop.to_json())
    for tool in ("crm:lookup", "billing:refund"):
        assert tool not in text


# --------------------------------------------------------------------------------------------
# RFC 0244 §B tolerance and D-17 ties


def _one_task_run(
    run_id: str, scores: list[float], *, completed: dict[str, Any], trial_count: int | None = None
) -> LogBuilder:
    log = LogBuilder(run_id)
    extra = {} if trial_count is None else {"trialCount": trial_count}
    log.eval_started(task_count=len(scores), **extra)
    for number, score in enumerate(scores):
        log.trial(f"task-{number}", score=score, passed=True)
    log.eval_completed(**completed)
    return log


def test_rfc0244_b_tolerance_is_1e9_relative() -> None:
    """RFC 0244 §B / E-28: a host agrees when |host − recomputed| ≤ 1e-9·max(1, |recomputed|).
    The
    aggregate of 1/3, 1/3, 1/3 written to 11 digits is within it; 1e-6 off is not."""
    third = 1 / 3
    base = {"passed": False, "taskCount": 3, "passedCount": 3}
    near = _one_task_run(
        "acme/run-near-0001", [third] * 3, completed={**base, "aggregateScore": 0.33333333333}
    )
    far = _one_task_run(
        "acme/run-far-0001", [third] * 3, completed={**base, "aggregateScore": third + 1e-6}
    )
    report = verify.verify_events(
        [*near.rows, *far.rows], [suite(*[golden(f"task-{i}") for i in range(3)])]
    )
    assert findings_of(report, near.run_id) == []
    (finding,) = findings_of(report, far.run_id)
    assert (finding.field, finding.rule) == ("eval.completed.aggregateScore", "§3.6")


@pytest.mark.slow
def test_d17_exact_tie_passes_and_a_float_host_saying_fail_disagrees() -> None:
    """D-17: tasks at 0.7, 0.8 and 0.9 against passScore 0.8 are an exact tie, so the suite
    passes. A host whose float mean (0.7999…) failed it disagrees; one that passed it agrees."""
    tied = suite(*[golden(f"task-{i}") for i in range(3)], thresholds={"passScore": 0.8})
    base = {"aggregateScore": 0.8, "taskCount": 3, "passedCount": 3}
    right = _one_task_run("acme/run-tie-right", [0.7, 0.8, 0.9], completed={**base, "passed": True})
    wrong = _one_task_run(
        "acme/run-tie-wrong", [0.7, 0.8, 0.9], completed={**base, "passed": False}
    )
    report = verify.verify_events([*right.rows, *wrong.rows], [tied])
    assert findings_of(report, right.run_id) == []
    assert keyed(findings_of(report, wrong.run_id)) == {
        ("eval.completed.passed", None, None): (False, True, "§3.6", None)
    }


# --------------------------------------------------------------------------------------------
# CONTRACT §8: an absent onMiss read either way; trialIndex optional with count 1


@pytest.mark.slow
def test_s8_absent_on_miss_accepts_either_reading() -> None:
    """CONTRACT §8 / RFC 0244 §D / E-30: with onMiss absent a host's RFC 0081 behaviour stands,
    and it
    SHOULD fail the trial. A host that kept its output score (the "count" reading) and one that
    failed the trial closed (score 0, passed false) both verify clean, even when the auditor
    prefers `--on-miss-default fail`; the report says which reading each host followed."""
    doc = suite(
        golden(
            "lookup",
            fixtures={
                "toolResponses": [{"tool": "crm:lookup", "args": {"id": 1}, "argsMatch": "exact"}]
            },
        )
    )
    logs = {}
    for reading, (score, passed) in {"count": (1, True), "fail": (0, False)}.items():
        log = LogBuilder(f"acme/run-onmiss-{reading}")
        log.eval_started()
        log.trial("lookup", [("crm:lookup", {"id": 2})], score=score, passed=passed)
        log.eval_completed(
            aggregateScore=score, passed=passed, taskCount=1, passedCount=int(passed)
        )
        logs[reading] = log
    rows = [r for log in logs.values() for r in log.rows]
    report = verify.verify_events(rows, [doc], options=GradeOptions(on_miss_default="fail"))
    assert report.findings == []
    for reading, log in logs.items():
        assert run_of(report, log.run_id).on_miss_reading == reading
    # an explicit onMiss "fail" leaves no choice: keeping the output score is a D-9 mistake
    strict = copy.deepcopy(doc)
    strict["tasks"][0]["fixtures"]["onMiss"] = "fail"
    report = verify.verify_events(logs["count"].rows, [strict])
    assert keyed(report.findings)[("eval.scored.score", "lookup", 0)][2:] == ("D-9", "fixture-miss")
    assert run_of(report, logs["count"].run_id).on_miss_reading is None


def test_s8_missing_trial_index_is_allowed_when_count_is_1_only() -> None:
    """RFC 0244 §B: with count 1 the stream is RFC 0081's and trialIndex MAY be omitted; with
    count 3 every eval.scored carries it (and eval.started carries trialCount)."""
    single = _one_task_run(
        "acme/run-single",
        [1.0],
        completed={"aggregateScore": 1.0, "passed": True, "taskCount": 1, "passedCount": 1},
    )
    report = verify.verify_events(single.rows, [suite(golden("task-0"))])
    assert report.findings == []

    log = LogBuilder("acme/run-untagged")
    log.eval_started()  # no trialCount
    for _ in range(3):
        log.trial("task-0", score=1, passed=True)  # no trialIndex
    log.eval_completed(aggregateScore=1, passed=True, taskCount=1, passedCount=1)
    doc = suite(golden("task-0"), trials={"count": 3})
    found = keyed(verify.verify_events(log.rows, [doc]).findings)
    assert found == {
        ("eval.started.trialCount", None, None): ("<absent>", 3, "RFC 0244 §B", None),
        **{
            ("eval.scored.trialIndex", "task-0", index): (
                "<absent>",
                index,
                "RFC 0244 §B",
                "absent",
            )
            for index in range(3)
        },
    }


def test_rfc0244_b_trial_index_unique_and_contiguous() -> None:
    """RFC 0244 §B: trialIndex is 0-based, contiguous and unique per task, and each task has
    `count` trials. A repeated index 1 (the later one left out, D-5) leaves trial 2 unscored."""
    log = LogBuilder("acme/run-dup-index")
    log.eval_started(trialCount=3)
    for index in (0, 1, 1):
        log.trial("task-0", score=1, passed=True, trial_index=index)
    log.eval_completed(aggregateScore=2 / 3, passed=False, taskCount=1, passedCount=0)
    doc = suite(golden("task-0"), trials={"count": 3})
    found = keyed(verify.verify_events(log.rows, [doc]).findings)
    assert found == {
        ("eval.scored.trialIndex", "task-0", 1): (1, "<absent>", "RFC 0244 §B", "trial-duplicate"),
        ("eval.scored.count", "task-0", None): (2, 3, "RFC 0244 §B", "trial-missing"),
    }


# --------------------------------------------------------------------------------------------
# RFC 0244 §E labels, §H content-free summaries, D-11 bad host values


def test_rfc0244_e_score_label_pattern_and_evaluator_type_enum() -> None:
    """RFC 0244 §E: scoreLabel matches ^[a-z0-9][a-z0-9_-]{0,63}$ and evaluatorType is one of
    deterministic, llm_judge, human. A prose label is named but never shown (§H)."""
    log = LogBuilder("acme/run-labels")
    log.eval_started(task_count=2)
    log.trial("task-0", score=1, passed=True, scoreLabel="pass", evaluatorType="llm_judge")
    log.trial(
        "task-1", score=1, passed=True, scoreLabel="Looks good to me", evaluatorType="gpt-judge"
    )
    log.eval_completed(aggregateScore=1, passed=True, taskCount=2, passedCount=2)
    report = verify.verify_events(log.rows, [suite(golden("task-0"), golden("task-1"))])
    assert keyed(report.findings) == {
        ("eval.scored.scoreLabel", "task-1", None): (
            "<invalid>",
            "<valid>",
            "RFC 0244 §E",
            "pattern",
        ),
        ("eval.scored.evaluatorType", "task-1", None): (
            "<invalid>",
            "<valid>",
            "RFC 0244 §E",
            "enum",
        ),
    }
    text = json.dumps(report.to_json())
    assert "Looks good" not in text and "gpt-judge" not in text


def test_rfc0244_h_summary_naming_tools_or_unknown_keys_is_refused() -> None:
    """RFC 0244 §H / CONTRACT §4: a summary's objects are closed; a trajectory block carrying
    tool names, or an unknown key, is named by its JSON path without echoing the content.
    RFC 0081's own fields (a task's schemaValid) are accepted."""
    log, summary = shop_run(CLEAN)
    leaky = copy.deepcopy(summary)
    leaky["tasks"][0]["trajectory"]["tools"] = ["billing:refund-SECRET"]
    leaky["notes"] = "SECRET prose"
    leaky["tasks"][1]["schemaValid"] = True
    report = verify.verify_events(log.rows, [SHOP_SUITE], {CLEAN: leaky})
    schema = [f for f in report.findings if f.field == "summary.schema"]
    assert {(f.rule, f.reason) for f in schema} == {
        ("RFC 0244 §H", "$.notes: unknown member (closed object)"),
        ("RFC 0244 §H", "$.tasks[0].trajectory.tools: unknown member (closed object)"),
    }
    assert [f for f in report.findings if f.field != "summary.schema"] == []
    assert "SECRET" not in json.dumps(report.to_json())


def test_d11_host_score_that_is_not_a_number_is_shown_by_type() -> None:
    """D-11: a score that is not a JSON number fails the trial closed (score 0, passed false);
    the finding shows the host value's type, not its text."""
    log = LogBuilder("acme/run-bad-score")
    log.eval_started()
    log.trial("task-0", score="0.5 SECRET", passed=True)
    log.eval_completed(aggregateScore=0, passed=False, taskCount=1, passedCount=0)
    found = keyed(verify.verify_events(log.rows, [suite(golden("task-0"))]).findings)
    assert found == {
        ("eval.scored.score", "task-0", 0): ("<string>", 0.0, "D-11", "score-invalid"),
        ("eval.scored.passed", "task-0", 0): (True, False, "D-11", "score-invalid"),
    }


@pytest.mark.slow
def test_s2_1_missing_eval_completed_is_a_finding() -> None:
    """§2.1: an eval.started without eval.completed is still graded, but the host's aggregate
    record is missing: the run disagrees (eval-incomplete)."""
    log = LogBuilder("acme/run-incomplete")
    log.eval_started()
    log.trial("task-0", score=1, passed=True)
    found = keyed(verify.verify_events(log.rows, [suite(golden("task-0"))]).findings)
    assert found == {
        ("eval.completed", None, None): ("<absent>", "<present>", "§2.1", "eval-incomplete")
    }


@pytest.mark.slow
def test_d4_without_the_suite_only_what_the_log_decides_is_compared() -> None:
    """D-4 / E-29: without the run's suite, verify grades from the host record and compares
    what the log alone decides (scores, counts, efficiency); the shop host agrees."""
    log, summary = shop_run(CLEAN)
    report = verify.verify_events(log.rows, [], {CLEAN: summary})
    assert report.findings == []
    assert run_of(report, CLEAN).graded_from == "host-record"
    assert "summary.tasks.passed" not in report.compared
    assert report.compared["summary.tasks.efficiency.toolCallCount"] == 3


# --------------------------------------------------------------------------------------------
# The samples and the command


def test_cli_verify_samples_with_summaries_table_json_and_exit_1(tmp_path: Path) -> None:
    """data/samples/README.md: the sample hosts wrote the output grade on eval.scored, so verify
    points out exactly wrong-order, forbidden-hit, exact-args-mismatch and trial 1 of
    refund-approved: passed true where the tool path fails the trial (§3.2, §3.4); their
    eval.completed agrees, and summaries written by `evalbatch run` agree field for field.
    The command prints a findings table, per-run verdicts and the field tally and exits 1;
    `--json` is the same report as a document."""
    runner = CliRunner()
    out = tmp_path / "out"
    graded = runner.invoke(
        cli,
        ["run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--out", str(out), "--quiet"],
    )
    assert graded.exit_code == 0, graded.output
    args = [
        "verify",
        str(SAMPLE_EVENTS),
        "--suites",
        str(SAMPLE_SUITES),
        "--summaries",
        str(out / "summaries.jsonl"),
    ]
    human = runner.invoke(cli, args)
    assert human.exit_code == 1, human.output
    lines = human.stdout.splitlines()
    assert lines[0].split() == [
        "run",
        "task",
        "trial",
        "field",
        "host",
        "recomputed",
        "rule",
        "reason",
    ]
    assert sum("eval.scored.passed" in line and "§3.2" in line for line in lines) == 4
    assert any(line.startswith("acme/run-fixture-miss-0001") and "agrees" in line for line in lines)
    assert lines[-1].startswith("verdict: disagrees")
    as_json = runner.invoke(cli, [*args, "--json"])
    assert as_json.exit_code == 1
    doc = json.loads(as_json.stdout)
    assert doc["verdict"] == "disagrees"
    assert {
        (
            f["taskId"],
            f["trialIndex"],
            f["field"],
            f["host"],
            f["recomputed"],
            f["rule"],
            f["reason"],
        )
        for f in doc["findings"]
    } == {
        ("wrong-order", 0, "eval.scored.passed", True, False, "§3.2", "order"),
        ("forbidden-hit", 0, "eval.scored.passed", True, False, "§3.2", "forbidden"),
        ("exact-args-mismatch", 0, "eval.scored.passed", True, False, "§3.2", "missing"),
        ("refund-approved", 1, "eval.scored.passed", True, False, "§3.2", "forbidden"),
    }
    assert {r["runId"]: r["verdict"] for r in doc["runs"]} == {
        "acme/run-fixture-miss-0001": "agrees",
        "acme/run-trajectory-0001": "disagrees",
        "acme/run-trials-k2-0001": "disagrees",
    }
    assert doc["fields"]["summary.tasks.score"] == {"compared": 10, "disagree": 0}
    assert set(doc["findings"][0]) == {
        "runId",
        "taskId",
        "trialIndex",
        "sequence",
        "field",
        "host",
        "recomputed",
        "rule",
        "reason",
    }


def test_cli_verify_agreeing_host_exits_0(tmp_path: Path) -> None:
    """Exit code 0 when every run agrees."""
    log, summary = shop_run(CLEAN)
    events = write_events(tmp_path / "shop.parquet", log.rows)
    suites = tmp_path / "shop.json"
    suites.write_text(json.dumps(SHOP_SUITE))
    summary_file = tmp_path / "summary.json"
    summary_file.write_text(json.dumps(summary))  # a bare EvalSummary: matched by suite id
    result = CliRunner().invoke(
        cli, ["verify", str(events), "--suites", str(suites), "--summaries", str(summary_file)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith("verdict: agrees (1 eval runs: 1 agrees")


def test_cli_verify_of_no_eval_run_names_the_events_it_read(tmp_path: Path) -> None:
    """A log that holds no eval run (here a file of no rows) is exit 2, and the message names the
    event files read, so a user with several inputs knows which one held nothing (E-65)."""
    import pyarrow.parquet as pq

    empty = tmp_path / "no-rows.parquet"
    first = sorted(SAMPLE_EVENTS.glob("*.parquet"))[0]
    pq.write_table(pq.read_table(first).slice(0, 0), empty)
    result = CliRunner().invoke(cli, ["verify", str(empty), "--suites", str(SAMPLE_SUITES)])
    assert result.exit_code == 2
    assert f"no eval run (no eval.started) in the events of {empty}" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("case", ["missing-events", "summary-not-json", "summary-unknown-run"])
def test_cli_verify_unusable_input_exits_2_without_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    """Exit code 2 for unusable input (no event file; a summary that is not JSON or belongs to
    no eval run in the events), with a one-line message and no traceback."""
    bad = tmp_path / "summary.json"
    if case == "summary-not-json":
        bad.write_text("{ nope")
    else:
        bad.write_text(json.dumps({"runId": "acme/run-nowhere", "summary": {}}))
    events = tmp_path / "none" if case == "missing-events" else SAMPLE_EVENTS
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "evalbatch",
            "verify",
            str(events),
            "--suites",
            str(SAMPLE_SUITES),
            "--summaries",
            str(bad),
        ],
    )
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 2
    assert captured.err.startswith("evalbatch: ")
    assert "Traceback" not in captured.err + captured.out


@pytest.mark.parametrize(
    "args",
    [["verify"], ["verify", str(SAMPLE_EVENTS), "--on-miss-default", "sometimes"]],
    ids=["no-events", "bad-choice"],
)
def test_cli_verify_usage_errors_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """A usage error exits 2 with click's usage message, as for `run`."""
    monkeypatch.setattr(sys, "argv", ["evalbatch", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 2
    assert "Error" in captured.err and "Traceback" not in captured.err


def test_cli_verify_run_that_cannot_be_recomputed_exits_3(tmp_path: Path) -> None:
    """A run that cannot be graded (two different events at one sequence, D-3) is
    `not-verified`, with the reason; when nothing disagrees the exit code is 3, as `run`'s
    (E-31)."""
    log, _ = shop_run(CLEAN)
    broken = LogBuilder("acme/run-broken")
    broken.eval_started()
    broken.trial("task-0", score=1, passed=True)
    broken.add("eval.scored", {"taskId": "task-0", "score": 0, "passed": False}, sequence=1)
    events = write_events(tmp_path / "e.parquet", [*log.rows, *broken.rows])
    suites = tmp_path / "shop.json"
    suites.write_text(json.dumps(SHOP_SUITE))
    result = CliRunner().invoke(cli, ["verify", str(events), "--suites", str(suites), "--json"])
    assert result.exit_code == 3, result.output
    runs = {r["runId"]: r for r in json.loads(result.stdout)["runs"]}
    assert runs["acme/run-broken"]["verdict"] == "not-verified"
    assert runs["acme/run-broken"]["problems"] == ["event-conflict"]
    assert runs[CLEAN]["verdict"] == "agrees"


def test_verify_options_match_run(tmp_path: Path) -> None:
    """`verify` recomputes with `run`'s options: with --default-pass-score 0.5 (D-15) a host
    that passed a suite without a passScore at gating mean 0.75 agrees; at the default 1.0 it
    does not."""
    log = _one_task_run(
        "acme/run-bar",
        [1.0, 0.5],
        completed={"aggregateScore": 0.75, "passed": True, "taskCount": 2, "passedCount": 2},
    )
    doc = suite(golden("task-0"), golden("task-1"))
    assert verify.verify_events(log.rows, [doc], options=GradeOptions(0.5)).findings == []
    (finding,) = verify.verify_events(log.rows, [doc]).findings
    assert (finding.field, finding.host, finding.recomputed) == (
        "eval.completed.passed",
        True,
        False,
    )


def test_e36_verify_reads_one_merged_grading_whatever_the_batch_size(tmp_path: Path) -> None:
    """E-36, §8: batches of whole runs merge into one grading (`api.MergedBatches`), so a
    verify with every run in its own batch reports what one batch does: each planted mistake,
    and the run that cannot be recomputed (D-3) `not-verified` with its error code."""
    runs = [shop_run(CLEAN), *(shop_run(run, plant) for plant, run in PLANTED.items())]
    broken = LogBuilder("acme/run-broken")
    broken.eval_started()
    broken.trial("task-0", score=1, passed=True)
    broken.add("eval.scored", {"taskId": "task-0", "score": 0, "passed": False}, sequence=1)
    rows = [row for log, _ in runs for row in log.rows] + broken.rows
    events = write_events(tmp_path / "e.parquet", rows)
    summaries = [verify.HostSummary(log.run_id, summary, log.run_id) for log, summary in runs]
    whole = verify.verify_paths([events], suite_docs=[SHOP_SUITE], summaries=summaries)
    apart = verify.verify_paths(
        [events], suite_docs=[SHOP_SUITE], summaries=summaries, resources=Resources(batch_events=1)
    )
    assert apart.to_json() == whole.to_json()
    verdicts = {run.run_id: (run.verdict, run.problems) for run in apart.runs}
    assert verdicts["acme/run-broken"] == ("not-verified", ["event-conflict"])
    assert verdicts[CLEAN] == ("agrees", [])
    assert all(verdicts[run] == ("disagrees", []) for run in PLANTED.values())
    assert apart.verdict == "disagrees"


@pytest.mark.parametrize("text", ["", "\n\n", "[]"], ids=["empty", "blank-lines", "empty-array"])
def test_e112_a_summaries_file_that_holds_no_summary_is_refused(tmp_path: Path, text: str) -> None:
    """`--summaries FILE` asks for the host's summaries to be checked: a file holding none would
    check nothing, so it is unusable input (exit 2), never a pass."""
    given = tmp_path / "summaries.jsonl"
    given.write_text(text)
    result = CliRunner().invoke(
        cli,
        ["verify", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--summaries", str(given)],
    )
    assert result.exit_code == 2
    assert f"{given}: holds no summary" in result.output
