"""Extreme inputs: each case is generated, graded by `evalbatch run` in a child
process, checked, and its wall time and peak RSS printed.

    .venv/bin/python bench/extremes.py                 # every case
    .venv/bin/python bench/extremes.py --only million  # one case (repeatable)
    .venv/bin/python bench/extremes.py --keep /tmp/x   # keep the generated files and outputs

Cases (CONTRACT rule ids in brackets):

- `million`: one eval run of 1,000,002 events (2,000 tasks x 5 trials x 100 events: tool calls,
  returns, model calls, a judge call) [§7, §2.2, D-6]
- `tasks-50k`: a suite of 50,000 tasks, one trial each, every 100th task missing [§3.6, D-13]
- `trials-1000`: tasks with 1,000 trials for k in {1, 2, 500, 1000}; pass@k and pass^k checked
  against exact rationals (fractions, math.comb) [§3.5]
- `trajectory-10k`: trials of 10,000 calls against 200 expected calls in every match mode, with a
  known maximum matching that greedy pairing misses [§3.2]
- `delegates-50`: invocations nested 50 levels deep (other agents and the target agent itself),
  with and without `includeDelegates` [§2.1, §2.2, §3.2]

Each `evalbatch run` runs as its own process; seconds are wall time and peak RSS comes from the
operating system (`os.wait4`), so nothing here is a timed unit test. The generators are also used
by `tests/test_extremes.py`, which checks the cheap cases' results.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EPOCH_MS = 1_791_000_000_000  # 2026-10-03, arbitrary
TARGET = "acme.agents.support"


def _j(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# --------------------------------------------------------------------------------------------
# Event tables


class Events:
    """Columns of one event log; sequences count from 0 per run, timestamps 10 ms apart."""

    def __init__(self) -> None:
        self.run_ids: list[str] = []
        self.sequences: list[int] = []
        self.types: list[str] = []
        self.payloads: list[str] = []
        self.stamps: list[int] = []
        self._next: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.types)

    def emit(self, run_id: str, type_: str, payload: Any) -> int:
        """Append one event (`payload` a JSON value, or JSON text when already a string)."""
        seq = self._next.get(run_id, 0)
        self._next[run_id] = seq + 1
        self.run_ids.append(run_id)
        self.sequences.append(seq)
        self.types.append(type_)
        self.payloads.append(payload if isinstance(payload, str) else _j(payload))
        self.stamps.append(EPOCH_MS + 10 * len(self.stamps))
        return seq

    def table(self) -> pa.Table:
        return pa.table(
            {
                "runId": pa.array(self.run_ids, pa.string()),
                "sequence": pa.array(self.sequences, pa.int64()),
                "type": pa.array(self.types, pa.string()),
                "payload": pa.array(self.payloads, pa.string()),
                "timestamp": pa.array(self.stamps, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            }
        )

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.table(), path)
        return path


class Run:
    """Writes the events of one eval run into an `Events` table."""

    def __init__(self, events: Events, run_id: str) -> None:
        self.events = events
        self.run_id = run_id
        self.invocations = 0
        self.calls = 0

    def emit(self, type_: str, payload: Any) -> int:
        return self.events.emit(self.run_id, type_, payload)

    def eval_started(self, suite: dict[str, Any]) -> int:
        payload = {
            "suiteId": suite["suiteId"],
            "suiteVersion": suite["version"],
            "taskCount": len(suite["tasks"]),
            "modes": ["golden"],
        }
        return self.emit("eval.started", payload)

    def eval_completed(self) -> int:
        payload = {"aggregateScore": 0, "passed": False, "taskCount": 0, "passedCount": 0}
        return self.emit("eval.completed", payload)

    def started(self, agent: str | None = TARGET, model_class: str | None = None) -> str:
        """agent.invocation-started (no `agentId` when `agent` is None)."""
        self.invocations += 1
        invocation = f"{self.run_id}:inv-{self.invocations}"
        payload: dict[str, Any] = {"invocationId": invocation, "source": "run-api"}
        if agent is not None:
            payload["agentId"] = agent
        if model_class is not None:
            payload["modelClass"] = model_class
        self.emit("agent.invocation-started", payload)
        return invocation

    def completed(self, invocation: str, agent: str = TARGET) -> int:
        payload = {"invocationId": invocation, "agentId": agent, "outcome": "completed"}
        return self.emit("agent.invocation-completed", payload)

    def call(self, tool: str, inputs: Any, agent: str | None = TARGET, *, returned: bool = False):
        self.calls += 1
        call_id = f"c-{self.calls}"
        body = f'"toolName":{_j(tool)},"callId":"{call_id}","inputs":{_j(inputs)}'
        head = f'"agentId":{_j(agent)},' if agent is not None else ""
        self.emit("agent.tool-called", "{" + head + body + "}")
        if returned:
            tail = f'"toolName":{_j(tool)},"callId":"{call_id}","status":"ok"'
            self.emit("agent.tool-returned", "{" + head + tail + "}")

    def usage(self, input_tokens: int, output_tokens: int, cost: float | None = None) -> int:
        payload: dict[str, Any] = {
            "provider": "acme",
            "model": "m-1",
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
        }
        if cost is not None:
            payload["costEstimateUsd"] = cost
        return self.emit("provider.usage", payload)

    def scored(self, task_id: str, score: Any, passed: Any, trial_index: int | None = None) -> int:
        payload: dict[str, Any] = {"taskId": task_id, "score": score, "passed": passed}
        if trial_index is not None:
            payload["trialIndex"] = trial_index
        return self.emit("eval.scored", payload)


@dataclass
class Case:
    """One extreme input: its events, its suites, and what the grade must be."""

    name: str
    events: Events
    suites: list[dict[str, Any]]
    #: run id -> expected facts, checked by `check` against the summary
    expected: dict[str, Any] = field(default_factory=dict)
    check: Callable[[dict[str, dict[str, Any]], Case], list[str]] | None = None

    def write(self, directory: Path) -> tuple[Path, Path]:
        events = self.events.write(directory / "events.parquet")
        suites = directory / "suites"
        suites.mkdir(parents=True, exist_ok=True)
        for number, suite in enumerate(self.suites):
            (suites / f"suite-{number}.json").write_text(json.dumps(suite), encoding="utf-8")
        return events, suites


def _suite(name: str, tasks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "suiteId": f"acme.extremes.evals.{name}",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": tasks,
        **extra,
    }


def _golden(task_id: str, trajectory: dict[str, Any] | None = None) -> dict[str, Any]:
    expected: dict[str, Any] = {"kind": "golden", "match": {"strategy": "contains", "value": "ok"}}
    if trajectory is not None:
        expected["trajectory"] = trajectory
    return {"taskId": task_id, "input": {"q": task_id}, "expected": expected}


def _trajectory_task(task_id: str, trajectory: dict[str, Any]) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "input": {"q": task_id},
        "expected": {"kind": "trajectory", "trajectory": trajectory},
    }


# --------------------------------------------------------------------------------------------
# million: one run of 1,000,002 events


MILLION_TOOLS = ("crm:lookup", "billing:refund", "mail:send", "kb:search", "kb:read", "crm:note")


def million_case(tasks: int = 2_000, trials: int = 5) -> Case:
    """One run, `tasks` x `trials` trials of exactly 100 events each, plus eval.started and
    eval.completed: 40 tool calls with their returns, 16 model calls in the bracket, a judge call.
    Trial i of task t passes when (t + i) % 3 != 0; its path always holds the expected calls."""
    suite = _suite(
        "million",
        [
            _golden(
                f"task-{t:05d}",
                {
                    "match": "any-order",
                    "calls": [
                        {"tool": "crm:lookup", "args": {"orderId": t}, "argsMatch": "subset"},
                        {"tool": "billing:refund"},
                    ],
                    "forbidden": ["billing:refund-all"],
                },
            )
            for t in range(tasks)
        ],
        trials={"count": trials, "k": 2},
        thresholds={"passScore": 0.5},
    )
    events = Events()
    run = Run(events, "acme/extreme-million-000001")
    run.eval_started(suite)
    passed_trials = 0
    for index in range(trials):
        for t in range(tasks):
            invocation = run.started()
            for c in range(40):
                if c == 7:
                    tool, inputs = "crm:lookup", {"orderId": t, "fields": ["status"]}
                elif c == 23:
                    tool, inputs = "billing:refund", {"orderId": t, "amountMinor": 100 + c}
                else:
                    tool, inputs = MILLION_TOOLS[(t + c) % 6], {"q": c, "orderId": t - c}
                run.call(tool, inputs, returned=True)
                if c % 5 == 4:  # 8 times: 16 model calls in the bracket
                    run.usage(200 + c, 20, 0.0001)
                    run.usage(100, 10)
            run.completed(invocation)
            run.usage(50, 5, 0.00005)  # the judge
            ok = (t + index) % 3 != 0
            passed_trials += ok
            run.scored(f"task-{t:05d}", 1 if ok else 0.25, ok, index)
    run.eval_completed()
    return Case(
        "million",
        events,
        [suite],
        expected={run.run_id: {"tasks": tasks, "passed_trials": passed_trials}},
        check=_check_million,
    )


def _check_million(summaries: dict[str, dict[str, Any]], case: Case) -> list[str]:
    faults = []
    for run_id, facts in case.expected.items():
        summary = summaries.get(run_id)
        if summary is None:
            return [f"{run_id}: no summary"]
        if summary["taskCount"] != facts["tasks"]:
            faults.append(f"taskCount {summary['taskCount']} != {facts['tasks']}")
        calls = {t["efficiency"]["toolCallCount"] for t in summary["tasks"]}
        models = {t["efficiency"]["modelCallCount"] for t in summary["tasks"]}
        if calls != {40} or models != {16}:
            faults.append(f"efficiency toolCallCount {calls}, modelCallCount {models}")
        if not all(t["trajectory"]["matched"] for t in summary["tasks"]):
            faults.append("some trajectory unmatched")
        passed = sum(t["trials"]["passedCount"] for t in summary["tasks"])
        if passed != facts["passed_trials"]:
            faults.append(f"passed trials {passed} != {facts['passed_trials']}")
    return faults


# --------------------------------------------------------------------------------------------
# tasks-50k: a suite of 50,000 tasks


def many_tasks_case(tasks: int = 50_000, missing_every: int = 100) -> Case:
    """A suite of `tasks` golden tasks (one expected call each) and one run with one trial per
    task, except every `missing_every`-th task, which is missing (D-13). Task t scores
    (t % 5) / 4 (0, 0.25, ... 1) and passes when its score is 1."""
    suite = _suite(
        "many-tasks",
        [
            _golden(f"t-{t:06d}", {"match": "exact", "calls": [{"tool": "kb:search"}]})
            for t in range(tasks)
        ],
        thresholds={"passScore": 0.3},
    )
    events = Events()
    run = Run(events, "acme/extreme-many-tasks-000001")
    run.eval_started(suite)
    scores: list[Fraction] = []
    for t in range(tasks):
        if t % missing_every == missing_every - 1:
            scores.append(Fraction(0))
            continue
        score = Fraction(t % 5, 4)
        scores.append(score)
        invocation = run.started()
        run.call("kb:search", {"q": t})
        run.completed(invocation)
        value = float(score)
        run.scored(f"t-{t:06d}", int(value) if value in (0, 1) else value, score == 1)
    run.eval_completed()
    aggregate = sum(scores, Fraction(0)) / tasks
    return Case(
        "tasks-50k",
        events,
        [suite],
        expected={
            run.run_id: {
                "tasks": tasks,
                "missing": tasks // missing_every,
                "aggregate": aggregate,
                "passed": sum(1 for s in scores if s == 1),
            }
        },
        check=_check_many_tasks,
    )


def _check_many_tasks(summaries: dict[str, dict[str, Any]], case: Case) -> list[str]:
    faults = []
    for run_id, facts in case.expected.items():
        summary = summaries.get(run_id)
        if summary is None:
            return [f"{run_id}: no summary"]
        if summary["taskCount"] != facts["tasks"] or len(summary["tasks"]) != facts["tasks"]:
            faults.append(f"taskCount {summary['taskCount']}, {len(summary['tasks'])} entries")
        if summary["passedCount"] != facts["passed"]:
            faults.append(f"passedCount {summary['passedCount']} != {facts['passed']}")
        exact = float(facts["aggregate"])
        if abs(summary["aggregateScore"] - exact) > 1e-9 * max(1.0, abs(exact)):
            faults.append(f"aggregateScore {summary['aggregateScore']!r} != {exact!r}")
    return faults


# --------------------------------------------------------------------------------------------
# trials-1000: pass@k and pass^k with 1,000 trials


TRIALS_N = 1_000
TRIALS_KS = (1, 2, 500, 1_000)
#: passed trials per task
TRIALS_CS = (0, 1, 3, 500, 999, 1_000)


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """RFC 0244 §B pass@k = 1 - C(n-c, k) / C(n, k), exactly (0 when c = 0)."""
    if c == 0:
        return Fraction(0)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def exact_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """RFC 0244 §B pass^k = C(c, k) / C(n, k), exactly (0 when c < k)."""
    return Fraction(math.comb(c, k), math.comb(n, k))


def trials_case(n: int = TRIALS_N, ks: tuple[int, ...] = TRIALS_KS) -> Case:
    """One suite version per k (trials {count n, k}); one run per k, with one task per c in
    `TRIALS_CS`. Which trials pass is spread over the indices (c of them pass), and the trials
    are logged in a shuffled but fixed order with explicit trialIndex."""
    events = Events()
    suites = []
    expected: dict[str, Any] = {}
    for number, k in enumerate(ks):
        tasks = [_golden(f"c-{c:04d}") for c in TRIALS_CS]
        suite = _suite("many-trials", tasks, trials={"count": n, "k": k, "passRule": "any"})
        suite["version"] = f"1.{number}.0"
        suites.append(suite)
        run = Run(events, f"acme/extreme-trials-k{k:04d}")
        run.eval_started(suite)
        plan = [(c, i) for i in range(n) for c in TRIALS_CS]
        order = sorted(range(len(plan)), key=lambda p: (p * 7919) % len(plan))
        for position in order:
            c, i = plan[position]
            ok = (i * 37) % n < c  # c of the n indices pass (37 is prime to 1000)
            invocation = run.started()
            run.completed(invocation)
            run.scored(f"c-{c:04d}", 1 if ok else 0, ok, i)
        run.eval_completed()
        expected[run.run_id] = {"n": n, "k": k}
    return Case("trials-1000", events, suites, expected=expected, check=_check_trials)


def _close(value: float, exact: Fraction) -> bool:
    """RFC 0244 §B: |x - f| <= 1e-9 * max(1, |f|)."""
    return abs(Fraction(value) - exact) <= Fraction(1, 10**9) * max(Fraction(1), abs(exact))


def _check_trials(summaries: dict[str, dict[str, Any]], case: Case) -> list[str]:
    faults = []
    for run_id, facts in case.expected.items():
        summary = summaries.get(run_id)
        if summary is None:
            faults.append(f"{run_id}: no summary")
            continue
        n, k = facts["n"], facts["k"]
        at_sum, hat_sum = Fraction(0), Fraction(0)
        for task in summary["tasks"]:
            c = int(task["taskId"].split("-")[1])
            trials = task["trials"]
            at, hat = exact_pass_at_k(n, c, k), exact_pass_hat_k(n, c, k)
            at_sum, hat_sum = at_sum + at, hat_sum + hat
            if trials["n"] != n or trials["passedCount"] != c:
                faults.append(
                    f"{run_id} c={c}: n {trials['n']}, passedCount {trials['passedCount']}"
                )
            if not _close(trials["passAtK"], at):
                faults.append(f"{run_id} c={c} k={k}: passAtK {trials['passAtK']!r} != {at}")
            if not _close(trials["passHatK"], hat):
                faults.append(f"{run_id} c={c} k={k}: passHatK {trials['passHatK']!r} != {hat}")
        count = len(summary["tasks"])
        stats = summary["trialStats"]
        if not _close(stats["passAtK"], at_sum / count):
            faults.append(f"{run_id}: trialStats.passAtK {stats['passAtK']!r}")
        if not _close(stats["passHatK"], hat_sum / count):
            faults.append(f"{run_id}: trialStats.passHatK {stats['passHatK']!r}")
    return faults


# --------------------------------------------------------------------------------------------
# trajectory-10k: 10,000 observed calls against 200 expected calls


TRAJ_GADGETS = 100  # each gadget: 2 expected calls -> 200 expected calls
TRAJ_OBSERVED = 10_000
TRAJ_SHORT = (3, 17, 42, 64, 65, 80, 99)  # gadgets whose second observed call is left out


def trajectory_expected() -> list[dict[str, Any]]:
    """200 expected calls: per gadget j, A_j = kv:get {g: j} and B_j = kv:get {g: j, h: 1}, both
    `subset`. A_j matches both of the gadget's observed calls, B_j only the first: pairing A_j
    with the first observed call it meets (greedy) leaves B_j unmatched."""
    calls = []
    for j in range(TRAJ_GADGETS):
        calls.append({"tool": "kv:get", "args": {"g": j}, "argsMatch": "subset"})
        calls.append({"tool": "kv:get", "args": {"g": j, "h": 1}, "argsMatch": "subset"})
    return calls


def trajectory_observed(
    variant: str, total: int = TRAJ_OBSERVED
) -> list[tuple[str, dict[str, Any]]]:
    """The observed calls of one trial, `total` of them.

    Gadget calls: O1_j = kv:get {g: j, h: 1} (matches A_j and B_j), O2_j = kv:get {g: j, h: 2}
    (matches A_j only). Variants:
    - `greedy-trap`: O1_j then O2_j for each j, noise in between (max matching 200; greedy 100)
    - `in-order`: O2_j then O1_j (the expected order is a subsequence)
    - `reversed`: gadgets in descending j, O2_j then O1_j (every call matched, order broken)
    - `short`: as `greedy-trap` without O2_j for j in TRAJ_SHORT (max matching 193)
    - `forbidden`: as `in-order` plus one call to the forbidden tool `kv:drop`
    - `only-expected`: every call is O1_j or O2_j (no noise): `subset` holds
    Noise: half `kv:get` with a `g` no expected call has (same tool: it reaches argument
    matching), half calls to other tools.
    """
    gadgets: list[list[tuple[str, dict[str, Any]]]] = []
    for j in range(TRAJ_GADGETS):
        first = ("kv:get", {"g": j, "h": 1})
        second = ("kv:get", {"g": j, "h": 2})
        if variant in ("greedy-trap", "short"):
            pair = [first] if variant == "short" and j in TRAJ_SHORT else [first, second]
        else:
            pair = [second, first]
        gadgets.append(pair)
    if variant == "reversed":
        gadgets.reverse()
    signal = [call for pair in gadgets for call in pair]
    if variant == "forbidden":
        signal.insert(len(signal) // 2, ("kv:drop", {"g": 0}))
    noise_count = total - len(signal)
    noise: list[tuple[str, dict[str, Any]]] = []
    for i in range(noise_count):
        if variant == "only-expected":
            noise.append(signal[i % len(signal)])  # more gadget calls: each matches A_j
        elif i % 2:
            noise.append(("kv:get", {"g": 1_000 + i, "h": 1}))
        else:
            noise.append((("kv:put", "kv:list", "kv:scan")[i % 3], {"g": i % TRAJ_GADGETS}))
    # interleave: signal keeps its order, noise spread evenly between
    out: list[tuple[str, dict[str, Any]]] = []
    step = max(1, len(noise) // (len(signal) + 1))
    nxt = 0
    for call in signal:
        out.extend(noise[nxt : nxt + step])
        nxt += step
        out.append(call)
    out.extend(noise[nxt:])
    return out


#: task id -> (match mode, variant, expected: matched, matchedCount, forbiddenCount)
TRAJ_TASKS: dict[str, tuple[str, str, bool, int, int]] = {
    "any-order-trap": ("any-order", "greedy-trap", True, 200, 0),
    "any-order-short": ("any-order", "short", False, 200 - len(TRAJ_SHORT), 0),
    "in-order-yes": ("in-order", "in-order", True, 200, 0),
    "in-order-no": ("in-order", "reversed", False, 200, 0),
    "exact-long": ("exact", "in-order", False, 200, 0),
    "subset-noise": ("subset", "in-order", False, 200, 0),
    "subset-only": ("subset", "only-expected", True, 200, 0),
    "forbidden-hit": ("any-order", "forbidden", False, 200, 1),
}


def trajectory_case(task_ids: tuple[str, ...] | None = None, total: int = TRAJ_OBSERVED) -> Case:
    """One run, one trial per task in `TRAJ_TASKS` (or the given subset), each trial `total`
    observed calls against the same 200 expected calls."""
    chosen = task_ids or tuple(TRAJ_TASKS)
    tasks = []
    for task_id in chosen:
        mode = TRAJ_TASKS[task_id][0]
        block: dict[str, Any] = {"match": mode, "calls": trajectory_expected()}
        if task_id == "forbidden-hit":
            block["forbidden"] = ["kv:drop"]
        tasks.append(_trajectory_task(task_id, block))
    suite = _suite("long-trajectory", tasks)
    events = Events()
    run = Run(events, "acme/extreme-trajectory-000001")
    run.eval_started(suite)
    for task_id in chosen:
        invocation = run.started()
        for tool, inputs in trajectory_observed(TRAJ_TASKS[task_id][1], total):
            run.call(tool, inputs)
        run.completed(invocation)
        run.scored(task_id, 1, True)
    run.eval_completed()
    expected = {task_id: TRAJ_TASKS[task_id] for task_id in chosen}
    return Case(
        "trajectory-10k",
        events,
        [suite],
        expected={run.run_id: {"tasks": expected, "observed": total}},
        check=_check_trajectory,
    )


def _check_trajectory(summaries: dict[str, dict[str, Any]], case: Case) -> list[str]:
    faults = []
    for run_id, facts in case.expected.items():
        summary = summaries.get(run_id)
        if summary is None:
            return [f"{run_id}: no summary"]
        for task in summary["tasks"]:
            mode, _variant, matched, matched_count, forbidden = facts["tasks"][task["taskId"]]
            block = task["trajectory"]
            want = {
                "mode": mode,
                "matched": matched,
                "expectedCount": 200,
                "observedCount": facts["observed"],
                "matchedCount": matched_count,
                "forbiddenCount": forbidden,
            }
            if block != want:
                faults.append(f"{task['taskId']}: {block} != {want}")
    return faults


# --------------------------------------------------------------------------------------------
# delegates-50: invocations nested 50 levels deep


DEPTH = 50
HELPER = "acme.agents.helper"


def delegates_case(depth: int = DEPTH, outer_named: bool = True) -> Case:
    """One run whose trials each nest `depth` invocations inside the target agent's bracket.

    Trials of the tasks `other-*`: the target calls `step:first`, then invocation i (1..depth) of
    agent `acme.agents.helper-<i>` starts, calls `deep:<i>` and makes a model call, nested inside
    invocation i-1; the invocations complete innermost first; the target then makes a model call
    and calls `step:last`, and its own invocation completes; a judge call follows (D-6).
    Trials of the tasks `self-*`: the same nesting, but every nested invocation is the target
    agent itself (each with its own invocationId), so every call is the target's, and the nested
    completions must not close the bracket (§2.1: only the completion with the first started
    event's invocationId does).

    Expected (§2.2, §3.2, §3.3): without includeDelegates the observed path of `other-*` is
    [step:first, step:last] and `deep:*` is invisible to `forbidden`; with it, all depth + 2 calls
    in order. Efficiency always counts every call and model call inside the bracket (depth + 2
    tool calls, depth + 1 model calls, not the judge); fixture replay takes every agent's calls,
    so fixtures for `step:*` alone miss `depth` times.

    With `outer_named=False` the target's own invocation-started names no agent and no
    modelClass, while every nested one names its agent and modelClass `coding` (the expected
    outcomes above then no longer hold: see tests/test_extremes.py).
    """
    deep = [f"deep:{i}" for i in range(1, depth + 1)]
    everything = ["step:first", *deep, "step:last"]

    def traj(match: str, calls: list[str], **extra: Any) -> dict[str, Any]:
        return {"match": match, "calls": [{"tool": c} for c in calls], **extra}

    #: task id -> (trajectory, fixtures or None, (matched, observedCount, forbiddenCount, misses))
    plan: dict[str, tuple[dict[str, Any], dict[str, Any] | None, tuple[Any, ...]]] = {
        "other-target-only": (traj("exact", ["step:first", "step:last"]), None, (True, 2, 0, None)),
        "other-with-delegates": (
            traj("exact", everything, includeDelegates=True),
            None,
            (True, depth + 2, 0, None),
        ),
        "other-forbidden-hidden": (
            traj("in-order", ["step:first"], forbidden=[deep[-1]], includeDelegates=False),
            None,
            (True, 2, 0, None),
        ),
        "other-forbidden-seen": (
            traj("in-order", ["step:first"], forbidden=[deep[-1]], includeDelegates=True),
            None,
            (False, depth + 2, 1, None),
        ),
        "other-fixtures": (
            traj("exact", ["step:first", "step:last"]),
            {"toolResponses": [{"tool": "step:first"}, {"tool": "step:last"}], "onMiss": "live"},
            (True, 2, 0, depth),
        ),
        "self-all-calls": (traj("exact", everything), None, (True, depth + 2, 0, None)),
        "self-forbidden": (
            traj("in-order", ["step:last"], forbidden=[deep[0]]),
            None,
            (False, depth + 2, 1, None),
        ),
    }
    tasks = []
    for task_id, (block, fixtures, _) in plan.items():
        task = _trajectory_task(task_id, block)
        if fixtures is not None:
            task["fixtures"] = fixtures
        tasks.append(task)
    suite = _suite("delegates", tasks, targetAgentId=TARGET)
    events = Events()
    run = Run(events, "acme/extreme-delegates-000001")
    run.eval_started(suite)
    for task_id in plan:
        outer = run.started(TARGET if outer_named else None)
        run.call("step:first", {"n": 0})
        stack = []
        for i in range(1, depth + 1):
            agent = TARGET if task_id.startswith("self") else f"{HELPER}-{i}"
            nested = run.started(agent, None if outer_named else "coding")
            stack.append((nested, agent))
            run.call(f"deep:{i}", {"n": i}, agent)
            run.usage(10, 1)
        while stack:
            invocation, agent = stack.pop()
            run.completed(invocation, agent)
        run.usage(7, 1)
        run.call("step:last", {"n": depth + 1})
        run.completed(outer)
        run.usage(1000, 100)  # a judge call: outside the bracket
        run.scored(task_id, 0, False)
    run.eval_completed()
    want = {task_id: outcome for task_id, (_, _, outcome) in plan.items()}
    return Case(
        "delegates-50",
        events,
        [suite],
        expected={run.run_id: {"tasks": want, "depth": depth}},
        check=_check_delegates,
    )


def _check_delegates(summaries: dict[str, dict[str, Any]], case: Case) -> list[str]:
    faults = []
    for run_id, facts in case.expected.items():
        summary = summaries.get(run_id)
        if summary is None:
            return [f"{run_id}: no summary"]
        depth = facts["depth"]
        for task in summary["tasks"]:
            matched, observed, forbidden, misses = facts["tasks"][task["taskId"]]
            block = task["trajectory"]
            got = (block["matched"], block["observedCount"], block["forbiddenCount"])
            if got != (matched, observed, forbidden):
                faults.append(
                    f"{task['taskId']}: (matched, observedCount, forbiddenCount) {got} "
                    f"!= {(matched, observed, forbidden)}"
                )
            if task.get("fixtureMissCount") != misses:
                faults.append(f"{task['taskId']}: fixtureMissCount {task.get('fixtureMissCount')}")
            efficiency = task["efficiency"]
            counts = (efficiency["toolCallCount"], efficiency["modelCallCount"])
            if counts != (depth + 2, depth + 1):
                faults.append(f"{task['taskId']}: efficiency {efficiency}")
    return faults


# --------------------------------------------------------------------------------------------
# Running a case


CASES: dict[str, Callable[[], Case]] = {
    "trials-1000": trials_case,
    "trajectory-10k": trajectory_case,
    "delegates-50": delegates_case,
    "tasks-50k": many_tasks_case,
    "million": million_case,
}


def child_env() -> dict[str, str]:
    """The environment of every child: this checkout's code first on the import path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def measure(command: list[str]) -> tuple[float, float, int, str]:
    """Run a child process: (wall seconds, peak RSS in MB from wait4, exit code, stderr)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    stderr = proc.stderr.read()
    proc.stderr.close()
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), stderr


def write_case(name: str, directory: Path) -> None:
    """The child that writes a case's files (see `run_case`); prints its event count."""
    case = CASES[name]()
    case.write(directory)
    print(len(case.events))


def run_case(name: str, root: Path, evalbatch: str) -> dict[str, Any]:
    """Write a case, grade it, check it.

    The files are written by a child process and the case is built again in this one only after
    grading, for the check: a child's peak RSS as wait4 reports it starts at its parent's (Linux
    carries the high-water mark across fork and exec), so this process must stay small until the
    graded child has run.
    """
    directory = root / name
    if directory.exists():
        shutil.rmtree(directory)
    started = time.perf_counter()
    writer = [sys.executable, str(Path(__file__).resolve()), "--write", name, str(directory)]
    written = subprocess.run(
        writer, cwd=ROOT, env=child_env(), capture_output=True, text=True, check=True
    )
    events_count = int(written.stdout.split()[-1])
    generated = time.perf_counter() - started
    out = directory / "out"
    events, suites = directory / "events.parquet", directory / "suites"
    command = [evalbatch, "run", str(events), "--suites", str(suites), "--out", str(out), "--quiet"]
    seconds, rss, code, stderr = measure(command)
    faults: list[str] = []
    if code not in (0, 3):
        faults.append(f"exit code {code}: {stderr.strip()[-500:]}")
    else:
        summaries = {}
        with (out / "summaries.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                doc = json.loads(line)
                summaries[doc["runId"]] = doc["summary"]
        case = CASES[name]()
        if case.check is not None:
            faults = case.check(summaries, case)
    return {
        "case": name,
        "events": events_count,
        "generate_s": generated,
        "seconds": seconds,
        "rss_mb": rss,
        "exit": code,
        "faults": faults,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(CASES), help="run this case")
    parser.add_argument("--keep", type=Path, default=None, help="keep generated files here")
    parser.add_argument("--write", nargs=2, metavar=("CASE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_case(args.write[0], Path(args.write[1]))
        return
    evalbatch = str(Path(sys.executable).with_name("evalbatch"))
    names = args.only or list(CASES)
    root = args.keep or Path(tempfile.mkdtemp(prefix="evalbatch-extremes-"))
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    header = (
        f"{'case':<16} {'events':>10} {'gen s':>7} {'run s':>8} {'peak RSS MB':>12} exit  check"
    )
    print(header)
    failed = False
    try:
        for name in names:
            r = run_case(name, root, evalbatch)
            check = "ok" if not r["faults"] else "FAILED"
            print(
                f"{r['case']:<16} {r['events']:>10,} {r['generate_s']:>7.1f} {r['seconds']:>8.2f} "
                f"{r['rss_mb']:>12.0f} {r['exit']:>4}  {check}",
                flush=True,
            )
            for fault in r["faults"][:10]:
                print(f"    {fault}")
            failed |= bool(r["faults"])
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
