"""An explanation as plain JSON values: the shape `evalbatch explain --json` prints.

`to_json` gives a stable shape (`"explainVersion": 1`; keys are only ever added):

    {explainVersion, runId, suiteId, suiteVersion, gradedFrom ("suite" | "host-record"),
     graded, notGraded [problem], options {defaultPassScore, onMissDefault},
     filter {taskId, trialIndex}, problems [problem], notes [str],
     tasks [{taskId, inSuite, kind, trajectoryMode, n, score, passed, trials [trial]}]}

    trial: {taskId, trialIndex, sequence (its eval.scored; null when missing),
      status ("counted" | "left-out" | "missing"), verdict ("pass" | "fail" | "left-out" |
      "missing"), leftOut (code), why [str],
      grade {score, gatingScore, passed, trajectoryMatched, trajectoryReason, observedCount,
             matchedCount, forbiddenCount, fixtureMisses, failedClosed, hasBracket,
             bracketClosed, latencyMs, toolCallCount, modelCallCount, inputTokens,
             outputTokens, usageCostUsd,               <- the trials-table row, same names
             hostScore, hostPassed, hostLatencyMs, hostCostUsd, latencySource, costSource},
      bracket {startSequence, endSequence, closed, targetAgentId},
      trajectory {mode, includeDelegates, matched, reason, expectedCount, observedCount,
                  matchedCount, forbiddenCount,
                  expected [{pos, tool, argsMatch, args, observedPos}],
                  observed [{pos, callPos, sequence, agentId, tool, inputs, expectedPos,
                             forbidden, fromRunId?}],
                  others [same shape: calls in the bracket that are not in the path],
                  findings [finding]},
      fixtures {fixtured, note, onMiss, onMissDeclared, misses, failedClosed,
                entries [{pos, tool, argsMatch, args, servedCallPos}],
                calls [{callPos, sequence, tool, inputs, entryPos, miss: finding | null}]},
      judgeCalls {count, inputTokens, outputTokens, costUsd},
      problems [problem],
      inspect {sampleId, epoch, viewerUrl,     <- only for a trial of an Inspect log (E-146)
               sampleText {scorer, answer, answerFrom ("score" | "output"), target,
                           explanation, error, unread, cut {<key>: characters in all}}}
                                               <- sampleText only with --sample-text (E-150)

    and, only for a run from an Inspect log (E-146), after `tasks`:
    inspect {task, model, logFile, viewCommand, sampleLog}  (each name only when the log gave
                                               it; sampleLog, the log read, with --sample-text)

    finding: {code, why, message, expectedPos, observedPos, tool,
              diff {path, expected, observed} | null}
    problem: {code, severity, sequence, message}

`args`, `inputs` and a diff's `expected`/`observed` are compact JSON texts, numbers written by
their exact value (`4200` for `4200.0` or `42e2`, which D-7 equates), so no digit is lost; a diff
side is null when the key is absent. Positions
count from 0: `E<pos>` is the suite's expected call, `O<pos>` the observed trajectory's call,
`F<pos>` the fixture entry, and `callPos` the call's place among every call in the bracket.
With `includeDelegates`, a call made in a child run (E-102) carries `fromRunId`, the run it was
made in; its `sequence` is that run's and its `callPos` null. A `sampleText` holds each text as
read, cut to its first `sample_text.TEXT_CHARS` characters (`cut` names each text cut and its
length); a text the sample has not is null, and all are null when it was not read (`unread`
says why).
"""

from __future__ import annotations

from typing import Any

from evalbatch.explain.call_args import ArgsDiff
from evalbatch.explain.explanation import (
    Explanation,
    FailedCheck,
    Problem,
    SampleText,
    TrialExplanation,
)
from evalbatch.explain.inspect_viewer import VIEW_COMMAND, sample_url
from evalbatch.explain.observed_calls import ObservedCall

EXPLAIN_VERSION = 1


def _diff_json(diff: ArgsDiff | None) -> dict[str, Any] | None:
    if diff is None:
        return None
    return {"path": diff.path, "expected": diff.expected, "observed": diff.observed}


def _finding_json(f: FailedCheck | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "code": f.code,
        "why": f.why,
        "message": f.message,
        "expectedPos": f.expected_pos,
        "observedPos": f.observed_pos,
        "tool": f.tool,
        "diff": _diff_json(f.diff),
    }


def _problem_json(p: Problem) -> dict[str, Any]:
    return {"code": p.code, "severity": p.severity, "sequence": p.sequence, "message": p.message}


def _observed_json(c: ObservedCall) -> dict[str, Any]:
    shown = {
        "pos": c.pos,
        "callPos": c.call_pos,
        "sequence": c.sequence,
        "agentId": c.agent_id,
        "tool": c.tool,
        "inputs": c.inputs,
        "expectedPos": c.expected_pos,
        "forbidden": c.forbidden,
    }
    if c.from_run_id is not None:  # a call of a child run (E-102): its sequence is that run's
        shown["fromRunId"] = c.from_run_id
    return shown


#: trials-table column -> JSON key of a trial's `grade`
GRADE_KEYS = {
    "score": "score",
    "gating_score": "gatingScore",
    "passed": "passed",
    "trajectory_matched": "trajectoryMatched",
    "trajectory_reason": "trajectoryReason",
    "observed_count": "observedCount",
    "matched_count": "matchedCount",
    "forbidden_count": "forbiddenCount",
    "fixture_misses": "fixtureMisses",
    "failed_closed": "failedClosed",
    "errored": "errored",
    "has_bracket": "hasBracket",
    "bracket_closed": "bracketClosed",
    "latency_ms": "latencyMs",
    "tool_call_count": "toolCallCount",
    "model_call_count": "modelCallCount",
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "usage_cost_usd": "usageCostUsd",
}


def _trial_json(t: TrialExplanation, names: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "taskId": t.task_id,
        "trialIndex": t.trial_index,
        "sequence": t.sequence,
        "status": t.status,
        "verdict": t.verdict,
        "leftOut": t.left_out,
        "why": list(t.why),
        "grade": None,
        "bracket": None,
        "trajectory": None,
        "fixtures": None,
        "judgeCalls": None,
        "problems": [_problem_json(p) for p in t.problems],
    }
    if t.grade is not None:
        g = t.grade
        grade_json = {key: g.row[column] for column, key in GRADE_KEYS.items()}
        grade_json |= {
            "hostScore": g.host_score,
            "hostPassed": g.host_passed,
            "hostLatencyMs": g.host_latency_ms,
            "hostCostUsd": g.host_cost_usd,
            "latencySource": g.latency_source,
            "costSource": g.cost_source,
        }
        out["grade"] = grade_json
    if t.bracket is not None:
        out["bracket"] = {
            "startSequence": t.bracket.start_sequence,
            "endSequence": t.bracket.end_sequence,
            "closed": t.bracket.closed,
            "targetAgentId": t.bracket.target_agent_id,
        }
    if t.trajectory is not None:
        tr = t.trajectory
        out["trajectory"] = {
            "mode": tr.mode,
            "includeDelegates": tr.include_delegates,
            "matched": tr.matched,
            "reason": tr.reason,
            "expectedCount": tr.expected_count,
            "observedCount": tr.observed_count,
            "matchedCount": tr.matched_count,
            "forbiddenCount": tr.forbidden_count,
            "expected": [
                {
                    "pos": e.pos,
                    "tool": e.tool,
                    "argsMatch": e.args_match,
                    "args": e.args,
                    "observedPos": e.observed_pos,
                }
                for e in tr.expected
            ],
            "observed": [_observed_json(c) for c in tr.observed],
            "others": [_observed_json(c) for c in tr.others],
            "findings": [_finding_json(f) for f in tr.findings],
        }
    if t.fixtures is not None:
        fx = t.fixtures
        out["fixtures"] = {
            "fixtured": fx.fixtured,
            "note": fx.note,
            "onMiss": fx.on_miss,
            "onMissDeclared": fx.on_miss_declared,
            "misses": fx.misses,
            "failedClosed": fx.failed_closed,
            "entries": [
                {
                    "pos": e.pos,
                    "tool": e.tool,
                    "argsMatch": e.args_match,
                    "args": e.args,
                    "servedCallPos": e.served_call_pos,
                }
                for e in fx.entries
            ],
            "calls": [
                {
                    "callPos": c.call_pos,
                    "sequence": c.sequence,
                    "tool": c.tool,
                    "inputs": c.inputs,
                    "entryPos": c.entry_pos,
                    "miss": _finding_json(c.miss),
                }
                for c in fx.calls
            ],
        }
    if t.judge is not None:
        out["judgeCalls"] = {
            "count": t.judge.count,
            "inputTokens": t.judge.input_tokens,
            "outputTokens": t.judge.output_tokens,
            "costUsd": t.judge.cost_usd,
        }
    if t.sample_id is not None:
        log_file = names.get("log_file")
        out["inspect"] = {
            "sampleId": t.sample_id,
            "epoch": t.epoch,
            "viewerUrl": sample_url(log_file, t.sample_id, t.epoch)
            if log_file is not None and t.epoch is not None
            else None,
        }
        if t.sample_text is not None:
            out["inspect"]["sampleText"] = _sample_text_json(t.sample_text)
    return out


def _sample_text_json(text: SampleText) -> dict[str, Any]:
    """What a trial's sample said (E-150), each text as read and cut."""
    texts = {
        "answer": text.answer,
        "target": text.target,
        "explanation": text.explanation,
        "error": text.error,
    }
    return {
        "scorer": text.scorer,
        "answer": text.answer.shown if text.answer is not None else None,
        "answerFrom": text.answer_from,
        "target": text.target.shown if text.target is not None else None,
        "explanation": text.explanation.shown if text.explanation is not None else None,
        "error": text.error.shown if text.error is not None else None,
        "unread": text.unread,
        "cut": {key: cut.length for key, cut in texts.items() if cut is not None and cut.cut},
    }


#: runs-table column -> JSON key of a run's `inspect` block
NAME_KEYS = {"task_name": "task", "model": "model", "log_file": "logFile"}


def to_json(expl: Explanation) -> dict[str, Any]:
    """The explanation as plain JSON values, in the documented shape (module docstring)."""
    shown = {
        "explainVersion": EXPLAIN_VERSION,
        "runId": expl.run_id,
        "suiteId": expl.suite_id,
        "suiteVersion": expl.suite_version,
        "gradedFrom": expl.graded_from,
        "graded": expl.graded,
        "notGraded": [_problem_json(p) for p in expl.not_graded],
        "options": {
            "defaultPassScore": expl.options.default_pass_score,
            "onMissDefault": expl.options.on_miss_default,
        },
        "filter": {"taskId": expl.task_filter, "trialIndex": expl.trial_filter},
        "problems": [_problem_json(p) for p in expl.problems],
        "notes": list(expl.notes),
        "tasks": [
            {
                "taskId": task.task_id,
                "inSuite": task.in_suite,
                "kind": task.kind,
                "trajectoryMode": task.trajectory_mode,
                "n": task.n,
                "score": task.score,
                "passed": task.passed,
                "trials": [_trial_json(t, expl.names) for t in task.trials],
            }
            for task in expl.tasks
        ],
    }
    if expl.names:
        inspect = {
            key: expl.names[column] for column, key in NAME_KEYS.items() if column in expl.names
        } | {"viewCommand": VIEW_COMMAND}
        if expl.sample_log is not None:
            inspect["sampleLog"] = expl.sample_log
        shown["inspect"] = inspect
    return shown
