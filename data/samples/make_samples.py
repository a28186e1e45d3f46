"""Write the sample inputs under data/samples: event logs, suites and their expected grades.

Run from the project root with `make samples` (= `.venv/bin/python data/samples/make_samples.py`).
The output is deterministic: fixed ids, fixed timestamps, no randomness, so a rerun rewrites the
same files.

Each `sample_*` function writes one suite and its run log(s) and returns the grade it expects, per
task and per run. Those expectations are literal values worked out by hand from CONTRACT.md §3
(see README.md for the derivations); nothing here grades anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
EVENTS_DIR = HERE / "events"
SUITES_DIR = HERE / "suites"
REGRESS_DIR = HERE / "regress"
CAPABILITIES_DIR = HERE / "capabilities"
DELEGATES_DIR = HERE / "delegates"

AGENT = "acme.agents.support"
SUITE_VERSION = "1.0.0"
STEP_MS = 20  # time between two consecutive events of a run
AGENT_MODEL = ("openai", "gpt-4.1-mini")
JUDGE_MODEL = ("openai", "gpt-4.1")

EVENT_SCHEMA = pa.schema(
    [
        ("eventId", pa.string()),
        ("runId", pa.string()),
        ("sequence", pa.int64()),
        ("type", pa.string()),
        ("payload", pa.string()),
        ("timestamp", pa.string()),
        ("schemaVersion", pa.int64()),
    ]
)

# pass@2 and pass^2 over n = 3 trials, by c = trials passed (CONTRACT §3.5):
#   passAtK  = 1 - C(3-c, 2)/C(3, 2): c=0 -> 0, c=1 -> 1 - 1/3, c=2 -> 1 - 0/3, c=3 -> 1
#   passHatK = C(c, 2)/C(3, 2):       c=0 -> 0, c=1 -> 0,       c=2 -> 1/3,     c=3 -> 3/3
PASS_AT_2_OF_3 = {0: 0, 1: 2 / 3, 2: 1, 3: 1}
PASS_HAT_2_OF_3 = {0: 0, 1: 0, 2: 1 / 3, 3: 1}


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One `agent.tool-called` (and its `agent.tool-returned`) made by the target agent."""

    tool: str
    inputs: Any
    status: str = "ok"  # "error" when the host refused the call (a fixture miss)


@dataclass(frozen=True)
class Usage:
    """One `provider.usage` event."""

    input_tokens: int
    output_tokens: int
    cost_usd: float
    model: tuple[str, str] = AGENT_MODEL


def _ms(delta: timedelta) -> int:
    return delta // timedelta(milliseconds=1)


def _iso(ts: datetime) -> str:
    """ISO-8601 UTC with milliseconds, e.g. 2026-11-02T10:00:00.120Z."""
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


class EventWriter:
    """Collects the events of one run, numbering sequences and stamping times.

    Sequences start at 0 and increase by one; each event is `STEP_MS` after the previous one unless
    an explicit time is given (used to make a bracket last exactly the latency the host records).
    """

    def __init__(self, run_id: str, start: str) -> None:
        self.run_id = run_id
        self.slug = run_id.split("/", 1)[1]
        self.now = datetime.fromisoformat(start.replace("Z", "+00:00")).astimezone(UTC)
        self.rows: list[dict[str, Any]] = []

    @property
    def next_sequence(self) -> int:
        return len(self.rows)

    def emit(self, type_: str, payload: dict[str, Any], *, at: datetime | None = None) -> int:
        """Append one event; returns its sequence."""
        if self.rows:
            self.now = at if at is not None else self.now + timedelta(milliseconds=STEP_MS)
        sequence = self.next_sequence
        self.rows.append(
            {
                "eventId": f"evt-{self.slug}-{sequence:05d}",
                "runId": self.run_id,
                "sequence": sequence,
                "type": type_,
                "payload": json.dumps(payload, separators=(",", ":"), ensure_ascii=False),
                "timestamp": _iso(self.now),
                "schemaVersion": 2,
            }
        )
        return sequence

    # -- event families ------------------------------------------------------------------------

    def run_started(self) -> None:
        self.emit("run.started", {"workflowId": "acme.support.eval-runner"})

    def run_completed(self) -> None:
        first = datetime.fromisoformat(self.rows[0]["timestamp"].replace("Z", "+00:00"))
        end = self.now + timedelta(milliseconds=STEP_MS)
        self.emit("run.completed", {"outputs": {}, "durationMs": _ms(end - first)})

    def usage(self, u: Usage) -> None:
        provider, model = u.model
        self.emit(
            "provider.usage",
            {
                "provider": provider,
                "model": model,
                "inputTokens": u.input_tokens,
                "outputTokens": u.output_tokens,
                "totalTokens": u.input_tokens + u.output_tokens,
                "costEstimateUsd": u.cost_usd,
            },
        )

    def invocation(
        self,
        invocation_id: str,
        *,
        calls: list[Call],
        usages: list[Usage],
        latency_ms: int,
        prompt: bool = True,
    ) -> None:
        """One RFC 0077 bracket: started, prompt, usage, tool calls, usage, decided, completed.

        The first usage comes before the tool calls, the others after them. The bracket lasts
        exactly `latency_ms`, the value the host records on `eval.scored`.
        """
        self.emit(
            "agent.invocation-started",
            {
                "invocationId": invocation_id,
                "agentId": AGENT,
                "source": "run-api",
                "modelClass": "general",
            },
        )
        started = self.now
        if prompt:
            self.emit(
                "agent.prompt-resolved",
                {
                    "nodeId": "eval-task",
                    "kind": "system",
                    "chain": ["pack", "agent"],
                    "resolved": "acme.prompts.support-v3",
                    "agentId": AGENT,
                },
            )
        for u in usages[:1]:
            self.usage(u)
        for call in calls:
            call_id = f"call-{self.slug}-{self.next_sequence:05d}"
            self.emit(
                "agent.tool-called",
                {"agentId": AGENT, "toolName": call.tool, "callId": call_id, "inputs": call.inputs},
            )
            returned: dict[str, Any] = {
                "agentId": AGENT,
                "toolName": call.tool,
                "callId": call_id,
                "status": call.status,
            }
            if call.status == "error":
                returned["error"] = {
                    "code": "fixture_miss",
                    "message": "no fixture response matches this call",
                    "retryable": False,
                }
            else:
                returned["durationMs"] = 12
            self.emit("agent.tool-returned", returned)
        for u in usages[1:]:
            self.usage(u)
        self.emit("agent.decided", {"agentId": AGENT, "decision": "respond", "confidence": 0.9})
        if _ms(self.now - started) + STEP_MS > latency_ms:
            raise ValueError(f"{invocation_id}: {latency_ms} ms is too short for its events")
        self.emit(
            "agent.invocation-completed",
            {"invocationId": invocation_id, "agentId": AGENT, "outcome": "completed"},
            at=started + timedelta(milliseconds=latency_ms),
        )

    def scored(
        self,
        task_id: str,
        *,
        score: float,
        passed: bool,
        latency_ms: int,
        trial_index: int | None = None,
        evaluator: str = "deterministic",
    ) -> None:
        payload: dict[str, Any] = {"taskId": task_id, "score": score, "passed": passed}
        if trial_index is not None:
            payload["trialIndex"] = trial_index
        payload |= {
            "latencyMs": latency_ms,
            "scoreLabel": "pass" if passed else "fail",
            "evaluatorType": evaluator,
        }
        self.emit("eval.scored", payload)

    def trial(
        self,
        task_id: str,
        *,
        calls: list[Call],
        usages: list[Usage],
        latency_ms: int,
        score: float,
        passed: bool,
        trial_index: int | None = None,
        judge: Usage | None = None,
        prompt: bool = True,
    ) -> None:
        """A task's bracket, an optional judge call outside it, then the host's `eval.scored`."""
        suffix = "" if trial_index is None else f"-t{trial_index}"
        self.invocation(
            f"inv-{task_id}{suffix}",
            calls=calls,
            usages=usages,
            latency_ms=latency_ms,
            prompt=prompt,
        )
        if judge is not None:
            self.usage(judge)
        self.scored(
            task_id,
            score=score,
            passed=passed,
            latency_ms=latency_ms,
            trial_index=trial_index,
            evaluator="llm_judge" if judge is not None else "deterministic",
        )

    # -- output --------------------------------------------------------------------------------

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist(self.rows, schema=EVENT_SCHEMA)
        pq.write_table(table, path, compression="zstd")


def write_suite(suite: dict[str, Any], name: str) -> None:
    SUITES_DIR.mkdir(parents=True, exist_ok=True)
    text = json.dumps(suite, indent=2, ensure_ascii=False) + "\n"
    (SUITES_DIR / f"{name}.json").write_text(text, encoding="utf-8")


def golden(value: str, trajectory: dict[str, Any] | None = None) -> dict[str, Any]:
    expected: dict[str, Any] = {"kind": "golden", "match": {"strategy": "contains", "value": value}}
    if trajectory is not None:
        expected["trajectory"] = trajectory
    return expected


def lookup(order_id: str) -> Call:
    return Call("crm:lookup-order", {"orderId": order_id})


def refund(order_id: str, amount_minor: int, **extra: Any) -> Call:
    return Call("billing:refund", {"orderId": order_id, "amountMinor": amount_minor, **extra})


def traj(
    mode: str, ok: bool, *, expected: int, observed: int, matched: int, forbidden: int = 0
) -> dict[str, Any]:
    """An expected summary trajectory block: `ok` is `matched`, `matched` is `matchedCount`."""
    return {
        "mode": mode,
        "matched": ok,
        "expectedCount": expected,
        "observedCount": observed,
        "matchedCount": matched,
        "forbiddenCount": forbidden,
    }


def efficiency(tools: float, models: float, tokens_in: float, tokens_out: float) -> dict[str, Any]:
    return {
        "toolCallCount": tools,
        "modelCallCount": models,
        "inputTokens": tokens_in,
        "outputTokens": tokens_out,
    }


# ---------------------------------------------------------------------------------------------
# Sample 1: the five RFC 0244 trajectory conformance cases
# ---------------------------------------------------------------------------------------------

TRAJECTORY_RUN = "acme/run-trajectory-0001"


def sample_trajectory() -> tuple[dict[str, Any], dict[str, Any]]:
    suite_id = "acme.support.evals.trajectory"
    lookup_then_refund = {
        "match": "in-order",
        "calls": [
            {"tool": "crm:lookup-order", "argsMatch": "ignore"},
            {"tool": "billing:refund", "args": {"amountMinor": 4200}, "argsMatch": "subset"},
        ],
        "forbidden": ["billing:refund-all"],
    }
    wrong_order = {
        "match": "in-order",
        "calls": [
            {"tool": "crm:lookup-order", "argsMatch": "ignore"},
            {"tool": "billing:refund", "args": {"amountMinor": 1500}, "argsMatch": "subset"},
        ],
        "forbidden": ["billing:refund-all"],
    }
    subset_lookups = {
        "match": "subset",
        "calls": [
            {"tool": "crm:lookup-order", "argsMatch": "ignore"},
            {"tool": "crm:get-customer", "argsMatch": "ignore"},
        ],
        "forbidden": ["billing:refund-all"],
    }
    exact_args = {
        "match": "exact",
        "calls": [
            {"tool": "crm:lookup-order", "args": {"orderId": "A-1005"}, "argsMatch": "exact"},
            {
                "tool": "billing:refund",
                "args": {"orderId": "A-1005", "amountMinor": 4200},
                "argsMatch": "exact",
            },
        ],
        "forbidden": ["billing:refund-all"],
    }
    suite = {
        "suiteId": suite_id,
        "version": SUITE_VERSION,
        "targetAgentId": AGENT,
        "modes": ["golden"],
        "thresholds": {"passScore": 0.8, "maxCostUsd": 0.05, "maxP95LatencyMs": 2000},
        "tasks": [
            {
                "taskId": "in-order-match",
                "input": {"message": "Please refund the 42 EUR charge on order A-1001."},
                "expected": golden("refund approved", lookup_then_refund),
            },
            {
                "taskId": "wrong-order",
                "input": {"message": "Refund 15 EUR on order A-1002."},
                "expected": golden("refund approved", wrong_order),
            },
            {
                "taskId": "forbidden-hit",
                "input": {"message": "Refund the 42 EUR charge on order A-1003."},
                "expected": golden("refund approved", lookup_then_refund),
            },
            {
                "taskId": "subset-repeats",
                "input": {"message": "Where are my orders A-2001, A-2002 and A-2003?"},
                "expected": {"kind": "trajectory", "trajectory": subset_lookups},
            },
            {
                "taskId": "exact-args-mismatch",
                "input": {"message": "Refund 42 EUR on order A-1005."},
                "expected": golden("refund approved", exact_args),
            },
        ],
    }
    write_suite(suite, "trajectory")

    w = EventWriter(TRAJECTORY_RUN, "2026-11-02T10:00:00.000Z")
    w.run_started()
    w.emit(
        "eval.started",
        {"suiteId": suite_id, "suiteVersion": SUITE_VERSION, "taskCount": 5, "modes": ["golden"]},
    )
    # (a) the expected calls appear in order, with an extra call between them.
    w.trial(
        "in-order-match",
        calls=[
            lookup("A-1001"),
            Call("crm:get-customer", {"customerId": "C-77"}),
            refund("A-1001", 4200, currency="EUR"),
        ],
        usages=[Usage(1200, 90, 0.0012), Usage(1500, 60, 0.0008)],
        latency_ms=1400,
        score=1.0,
        passed=True,
    )
    # (b) the refund comes before the lookup.
    w.trial(
        "wrong-order",
        calls=[refund("A-1002", 1500), lookup("A-1002")],
        usages=[Usage(1100, 80, 0.0012), Usage(1400, 50, 0.0008)],
        latency_ms=1200,
        score=1.0,
        passed=True,
    )
    # (c) the expected path, then a call to a forbidden tool.
    w.trial(
        "forbidden-hit",
        calls=[
            lookup("A-1003"),
            refund("A-1003", 4200),
            Call("billing:refund-all", {"customerId": "C-78"}),
        ],
        usages=[Usage(1200, 90, 0.0012), Usage(1600, 70, 0.0008)],
        latency_ms=1500,
        score=1.0,
        passed=True,
    )
    # (d) one allowed tool, called three times.
    w.trial(
        "subset-repeats",
        calls=[lookup("A-2001"), lookup("A-2002"), lookup("A-2003")],
        usages=[Usage(1000, 60, 0.0012), Usage(1300, 40, 0.0008)],
        latency_ms=1300,
        score=1,
        passed=True,
    )
    # (e) the right tools in the right order, but the refund amount is 4300, not 4200.
    w.trial(
        "exact-args-mismatch",
        calls=[lookup("A-1005"), refund("A-1005", 4300)],
        usages=[Usage(1150, 85, 0.0012), Usage(1450, 55, 0.0008)],
        latency_ms=1100,
        score=1.0,
        passed=True,
    )
    w.emit(
        "eval.completed",
        {"aggregateScore": 1.0, "passed": False, "taskCount": 5, "passedCount": 2},
    )
    w.run_completed()
    w.write(EVENTS_DIR / "trajectory.parquet")

    tasks = {
        "in-order-match": {
            "score": 1.0,
            "passed": True,
            "costUsd": 0.002,
            "latencyMs": 1400,
            "trajectory": traj("in-order", True, expected=2, observed=3, matched=2),
            "efficiency": efficiency(3, 2, 2700, 150),
        },
        "wrong-order": {
            "score": 1.0,
            "passed": False,
            "costUsd": 0.002,
            "latencyMs": 1200,
            "trajectory": traj("in-order", False, expected=2, observed=2, matched=2),
            "efficiency": efficiency(2, 2, 2500, 130),
        },
        "forbidden-hit": {
            "score": 1.0,
            "passed": False,
            "costUsd": 0.002,
            "latencyMs": 1500,
            "trajectory": traj("in-order", False, expected=2, observed=3, matched=2, forbidden=1),
            "efficiency": efficiency(3, 2, 2800, 160),
        },
        "subset-repeats": {
            "score": 1,
            "passed": True,
            "costUsd": 0.002,
            "latencyMs": 1300,
            "trajectory": traj("subset", True, expected=2, observed=3, matched=1),
            "efficiency": efficiency(3, 2, 2300, 100),
        },
        "exact-args-mismatch": {
            "score": 1.0,
            "passed": False,
            "costUsd": 0.002,
            "latencyMs": 1100,
            "trajectory": traj("exact", False, expected=2, observed=2, matched=1),
            "efficiency": efficiency(2, 2, 2600, 140),
        },
    }
    run = {
        "suiteId": suite_id,
        "suiteVersion": SUITE_VERSION,
        "aggregateScore": 1.0,
        "passed": False,  # gating mean (1 + 0 + 0 + 1 + 0) / 5 = 0.4 < passScore 0.8
        "taskCount": 5,
        "passedCount": 2,
        "totalCostUsd": 0.01,
        "evaluatedModelClass": "general",
    }
    return {TRAJECTORY_RUN: tasks}, {TRAJECTORY_RUN: run}


# ---------------------------------------------------------------------------------------------
# Sample 2: repeated trials (count 3, k 2, passRule all)
# ---------------------------------------------------------------------------------------------

TRIALS_RUN = "acme/run-trials-k2-0001"


def sample_trials() -> tuple[dict[str, Any], dict[str, Any]]:
    suite_id = "acme.support.evals.trials"
    suite = {
        "suiteId": suite_id,
        "version": SUITE_VERSION,
        "targetAgentId": AGENT,
        "modes": ["golden", "rubric"],
        "thresholds": {"passScore": 0.7, "maxCostUsd": 0.05},
        "trials": {"count": 3, "k": 2, "passRule": "all"},
        "tasks": [
            {
                "taskId": "order-status",
                "input": {"message": "Has order A-4001 shipped yet?"},
                "expected": golden("shipped"),
            },
            {
                "taskId": "refund-approved",
                "input": {"message": "Refund the 42 EUR charge on order A-4002."},
                "expected": golden(
                    "refund approved",
                    {
                        "match": "in-order",
                        "calls": [
                            {"tool": "crm:lookup-order", "argsMatch": "ignore"},
                            {
                                "tool": "billing:refund",
                                "args": {"amountMinor": 4200},
                                "argsMatch": "subset",
                            },
                        ],
                        "forbidden": ["billing:refund-all"],
                    },
                ),
            },
            {
                "taskId": "apology-tone",
                "input": {"message": "My parcel is two weeks late and nobody answers."},
                "expected": {
                    "kind": "rubric",
                    "rubric": [
                        {"criterion": "acknowledges the delay", "weight": 0.5},
                        {"criterion": "offers a concrete next step", "weight": 0.5},
                    ],
                },
            },
        ],
    }
    write_suite(suite, "trials")

    w = EventWriter(TRIALS_RUN, "2026-11-02T11:00:00.000Z")
    w.run_started()
    w.emit(
        "eval.started",
        {
            "suiteId": suite_id,
            "suiteVersion": SUITE_VERSION,
            "taskCount": 3,
            "modes": ["golden", "rubric"],
            "trialCount": 3,
        },
    )
    status_tokens = [(400, 60), (420, 62), (410, 64)]
    status_latency = [900, 1000, 1100]
    # trial 1 of refund-approved answers well but calls the forbidden bulk refund
    refund_paths = [
        [lookup("A-4002"), refund("A-4002", 4200)],
        [lookup("A-4002"), Call("billing:refund-all", {"customerId": "C-90"})],
        [lookup("A-4002"), refund("A-4002", 4200)],
    ]
    refund_latency = [1500, 1600, 1700]
    tone_scores = [(0.5, False), (0.75, True), (0.25, False)]
    tone_latency = [800, 850, 900]
    # The host runs the trials round-robin: every task's trial 0, then trial 1, then trial 2.
    for t in range(3):
        w.trial(
            "order-status",
            trial_index=t,
            calls=[lookup("A-4001")],
            usages=[Usage(*status_tokens[t], 0.002)],
            latency_ms=status_latency[t],
            score=1.0,
            passed=True,
        )
        w.trial(
            "refund-approved",
            trial_index=t,
            calls=refund_paths[t],
            usages=[Usage(500, 70, 0.002)],
            latency_ms=refund_latency[t],
            score=1.0,
            passed=True,
        )
        score, passed = tone_scores[t]
        w.trial(
            "apology-tone",
            trial_index=t,
            calls=[],
            usages=[Usage(300, 120, 0.002)],
            judge=Usage(500, 20, 0.0005, model=JUDGE_MODEL),
            latency_ms=tone_latency[t],
            score=score,
            passed=passed,
        )
    w.emit(
        "eval.completed",
        {"aggregateScore": 5 / 6, "passed": True, "taskCount": 3, "passedCount": 1},
    )
    w.run_completed()
    w.write(EVENTS_DIR / "trials.parquet")

    tasks = {
        "order-status": {
            "score": 1.0,
            "passed": True,
            "costUsd": 0.006,
            "latencyMs": 1000,
            "trials": trials_block(3, 1.0),
            "efficiency": efficiency(1, 1, 410, 62),
        },
        "refund-approved": {
            "score": 1.0,
            "passed": False,
            "costUsd": 0.006,
            "latencyMs": 1600,
            # the block describes the last trial (index 2), which matched
            "trajectory": traj("in-order", True, expected=2, observed=2, matched=2),
            "trials": trials_block(2, 1.0),
            "efficiency": efficiency(2, 1, 500, 70),
        },
        "apology-tone": {
            "score": 0.5,
            "passed": False,
            "costUsd": 0.0075,
            "latencyMs": 850,
            "trials": trials_block(1, 0.5),
            "efficiency": efficiency(0, 1, 300, 120),
        },
    }
    run = {
        "suiteId": suite_id,
        "suiteVersion": SUITE_VERSION,
        "aggregateScore": 5 / 6,
        "passed": True,  # gating mean (1 + 2/3 + 0.5) / 3 = 13/18 ≈ 0.722 >= 0.7; cost 0.0195
        "taskCount": 3,
        "passedCount": 1,
        "totalCostUsd": 0.0195,
        "evaluatedModelClass": "general",
        # passAtK (1 + 1 + 2/3) / 3; passHatK (1 + 1/3 + 0) / 3; stdev(1, 1, 0.5) / √3 = 1/6
        "trialStats": {"k": 2, "passAtK": 8 / 9, "passHatK": 4 / 9, "scoreStderr": 1 / 6},
    }
    return {TRIALS_RUN: tasks}, {TRIALS_RUN: run}


def trials_block(passed_count: int, mean_score: float) -> dict[str, Any]:
    """The expected `trials` block for n = 3, k = 2."""
    return {
        "n": 3,
        "passedCount": passed_count,
        "meanScore": mean_score,
        "passAtK": PASS_AT_2_OF_3[passed_count],
        "passHatK": PASS_HAT_2_OF_3[passed_count],
    }


# ---------------------------------------------------------------------------------------------
# Sample 3: fixtures with onMiss "fail"
# ---------------------------------------------------------------------------------------------

FIXTURE_RUN = "acme/run-fixture-miss-0001"


def sample_fixture_miss() -> tuple[dict[str, Any], dict[str, Any]]:
    suite_id = "acme.support.evals.fixture-miss"

    def order_fixture(order_id: str, status: str) -> dict[str, Any]:
        return {
            "tool": "crm:lookup-order",
            "args": {"orderId": order_id},
            "argsMatch": "subset",
            "response": {"orderId": order_id, "status": status, "totalMinor": 4200},
        }

    def refund_fixture(order_id: str, amount_minor: int) -> dict[str, Any]:
        return {
            "tool": "billing:refund",
            "args": {"orderId": order_id, "amountMinor": amount_minor},
            "argsMatch": "exact",
            "response": {"refundId": f"R-{order_id}", "status": "approved"},
        }

    suite = {
        "suiteId": suite_id,
        "version": SUITE_VERSION,
        "targetAgentId": AGENT,
        "modes": ["golden"],
        "thresholds": {"passScore": 1.0},
        "tasks": [
            {
                "taskId": "served-refund",
                "input": {"message": "Refund the 42 EUR charge on order A-3001."},
                "expected": golden("refund approved"),
                "fixtures": {
                    # two lookups: repeated calls walk the list, the first entry is consumed first
                    "toolResponses": [
                        order_fixture("A-3001", "in-transit"),
                        order_fixture("A-3001", "delivered"),
                        refund_fixture("A-3001", 4200),
                    ],
                    "onMiss": "fail",
                },
            },
            {
                "taskId": "missed-refund",
                "input": {"message": "Refund the 19.99 EUR charge on order A-3002."},
                "expected": golden("refund approved"),
                "fixtures": {
                    "toolResponses": [
                        order_fixture("A-3002", "delivered"),
                        refund_fixture("A-3002", 1999),
                    ],
                    "onMiss": "fail",
                },
            },
        ],
    }
    write_suite(suite, "fixture-miss")

    w = EventWriter(FIXTURE_RUN, "2026-11-02T12:00:00.000Z")
    w.run_started()
    w.emit(
        "eval.started",
        {"suiteId": suite_id, "suiteVersion": SUITE_VERSION, "taskCount": 2, "modes": ["golden"]},
    )
    w.trial(
        "served-refund",
        calls=[
            Call("crm:lookup-order", {"orderId": "A-3001", "fields": ["status"]}),
            lookup("A-3001"),
            refund("A-3001", 4200),
        ],
        usages=[Usage(800, 60, 0.001)],
        latency_ms=1200,
        score=1.0,
        passed=True,
    )
    # the refund asks for 2999, no fixture covers it: the host refuses the call and fails closed
    w.trial(
        "missed-refund",
        calls=[
            lookup("A-3002"),
            Call("billing:refund", {"orderId": "A-3002", "amountMinor": 2999}, status="error"),
        ],
        usages=[Usage(750, 55, 0.001)],
        latency_ms=900,
        score=0,
        passed=False,
    )
    w.emit(
        "eval.completed",
        {"aggregateScore": 0.5, "passed": False, "taskCount": 2, "passedCount": 1},
    )
    w.run_completed()
    w.write(EVENTS_DIR / "fixture-miss.parquet")

    tasks = {
        "served-refund": {
            "score": 1.0,
            "passed": True,
            "costUsd": 0.001,
            "latencyMs": 1200,
            "efficiency": efficiency(3, 1, 800, 60),
            "fixtureMissCount": 0,
        },
        "missed-refund": {
            "score": 0,
            "passed": False,
            "costUsd": 0.001,
            "latencyMs": 900,
            "efficiency": efficiency(2, 1, 750, 55),
            "fixtureMissCount": 1,
        },
    }
    run = {
        "suiteId": suite_id,
        "suiteVersion": SUITE_VERSION,
        "aggregateScore": 0.5,
        "passed": False,  # gating mean 0.5 < passScore 1.0
        "taskCount": 2,
        "passedCount": 1,
        "totalCostUsd": 0.002,
        "evaluatedModelClass": "general",
    }
    return {FIXTURE_RUN: tasks}, {FIXTURE_RUN: run}


# ---------------------------------------------------------------------------------------------
# Sample 4: a baseline and a worse candidate of one suite, for `evalbatch regress`
# ---------------------------------------------------------------------------------------------

BASELINE_RUN = "acme/run-regress-baseline-0001"
CANDIDATE_RUN = "acme/run-regress-candidate-0001"

# taskId -> (tool it calls, answer it must contain, baseline trials, candidate trials);
# "P" = the host scored the trial 1.0 / passed, "F" = 0.0 / failed.
REGRESSION_TASKS = {
    "refund-window": ("kb:search", "30 days", "PPP", "PPP"),
    "order-status": ("crm:lookup-order", "shipped", "PPP", "PFF"),
    "cancel-order": ("crm:cancel-order", "cancelled", "PPP", "PPP"),
    "address-change": ("crm:update-address", "address updated", "PPP", "FFF"),
    "warranty-claim": ("warranty:open-claim", "claim opened", "PPP", "PPP"),
    "shipping-delay": ("logistics:track-parcel", "new delivery date", "PPP", "FPF"),
    "invoice-copy": ("billing:get-invoice", "invoice sent", "PPF", "FFP"),
    "password-reset": ("identity:send-reset-link", "reset link", "PPP", "PPP"),
    "loyalty-points": ("crm:get-loyalty-balance", "points", "PPP", "FFF"),
    "escalate-complaint": ("support:escalate", "escalated", "FPP", "PFF"),
}
#: every baseline trial looks the customer up before acting; the candidate skips the lookup in
#: the tasks it does worse on, the cause `regress` names first (E-136)
LOOKUP = Call("crm:lookup-customer", {"customerId": "c-1001"})
SKIPS_LOOKUP = {
    task_id
    for task_id, (_, _, base, cand) in REGRESSION_TASKS.items()
    if cand.count("P") < base.count("P")
}


def sample_regression() -> tuple[dict[str, Any], dict[str, Any]]:
    suite_id = "acme.support.evals.regression"
    suite = {
        "suiteId": suite_id,
        "version": SUITE_VERSION,
        "targetAgentId": AGENT,
        "modes": ["golden", "regression"],
        "thresholds": {"passScore": 0.6},
        "trials": {"count": 3, "k": 2, "passRule": "mean"},
        "tasks": [
            {"taskId": task_id, "input": {"case": task_id}, "expected": golden(answer)}
            for task_id, (_, answer, _, _) in REGRESSION_TASKS.items()
        ],
    }
    write_suite(suite, "regression")

    def write_side(
        run_id: str,
        start: str,
        outcomes: dict[str, str],
        tokens: tuple[int, int],
        first_latency_ms: int,
        eval_started: dict[str, Any],
        eval_completed: dict[str, Any],
        path: Path,
        skips_lookup: set[str],
    ) -> None:
        w = EventWriter(run_id, start)
        w.run_started()
        w.emit(
            "eval.started",
            {
                "suiteId": suite_id,
                "suiteVersion": SUITE_VERSION,
                "taskCount": len(REGRESSION_TASKS),
                "trialCount": 3,
                **eval_started,
            },
        )
        for task_id, (tool, _, _, _) in REGRESSION_TASKS.items():
            for t, outcome in enumerate(outcomes[task_id]):
                w.trial(
                    task_id,
                    trial_index=t,
                    calls=([] if task_id in skips_lookup else [LOOKUP])
                    + [Call(tool, {"caseId": f"{task_id}-{t}"})],
                    usages=[Usage(*tokens, 0.001)],
                    latency_ms=first_latency_ms + 100 * t,
                    score=1.0 if outcome == "P" else 0.0,
                    passed=outcome == "P",
                    prompt=False,
                )
        w.emit("eval.completed", {"taskCount": len(REGRESSION_TASKS), **eval_completed})
        w.run_completed()
        w.write(path)

    write_side(
        BASELINE_RUN,
        "2026-11-01T09:00:00.000Z",
        {task_id: row[2] for task_id, row in REGRESSION_TASKS.items()},
        (600, 80),
        1000,
        {"modes": ["golden"]},
        {"aggregateScore": 14 / 15, "passed": True, "passedCount": 10},
        REGRESS_DIR / "baseline.parquet",
        set(),
    )
    write_side(
        CANDIDATE_RUN,
        "2026-11-02T09:00:00.000Z",
        {task_id: row[3] for task_id, row in REGRESSION_TASKS.items()},
        (640, 90),
        1300,
        {"modes": ["golden", "regression"], "baselineRunId": BASELINE_RUN},
        {
            "aggregateScore": 8 / 15,
            "passed": False,
            "passedCount": 4,
            "regressionVsBaseline": -0.4,
        },
        REGRESS_DIR / "candidate.parquet",
        SKIPS_LOOKUP,
    )

    # c = trials passed; score = meanScore = c/3 (scores are 1.0/0.0); passed ⇔ c/3 >= 0.6 ⇔ c >= 2
    def task(c: int, latency: int, tokens: tuple[int, int], tools: int) -> dict[str, Any]:
        mean = {0: 0.0, 1: 1 / 3, 2: 2 / 3, 3: 1.0}[c]
        return {
            "score": mean,
            "passed": c >= 2,
            "costUsd": 0.003,
            "latencyMs": latency,
            "trials": trials_block(c, mean),
            "efficiency": efficiency(tools, 1, *tokens),
        }

    base_c = {"invoice-copy": 2, "escalate-complaint": 2}
    cand_c = {"order-status": 1, "address-change": 0, "shipping-delay": 1, "invoice-copy": 1}
    cand_c |= {"loyalty-points": 0, "escalate-complaint": 1}
    base_tasks = {tid: task(base_c.get(tid, 3), 1100, (600, 80), 2) for tid in REGRESSION_TASKS}
    cand_tasks = {
        tid: task(cand_c.get(tid, 3), 1400, (640, 90), 1 if tid in SKIPS_LOOKUP else 2)
        for tid in REGRESSION_TASKS
    }
    common = {"suiteId": suite_id, "suiteVersion": SUITE_VERSION, "taskCount": 10}
    runs = {
        BASELINE_RUN: {
            **common,
            "aggregateScore": 14 / 15,  # (8·1 + 2·2/3) / 10
            "passed": True,
            "passedCount": 10,
            "totalCostUsd": 0.03,
            "evaluatedModelClass": "general",
            # passAtK: every task has c >= 2; passHatK (8·1 + 2·1/3) / 10; stdev / √10 = 2/45
            "trialStats": {"k": 2, "passAtK": 1, "passHatK": 13 / 15, "scoreStderr": 2 / 45},
        },
        CANDIDATE_RUN: {
            **common,
            "aggregateScore": 8 / 15,  # (4·1 + 4·1/3 + 2·0) / 10
            "passed": False,  # 8/15 ≈ 0.533 < 0.6
            "passedCount": 4,
            "totalCostUsd": 0.03,
            "evaluatedModelClass": "general",
            # passAtK (4·1 + 4·2/3) / 10; passHatK 4·1 / 10; stdev / √10 = 2/15
            "trialStats": {"k": 2, "passAtK": 2 / 3, "passHatK": 0.4, "scoreStderr": 2 / 15},
            # present when the baseline run is graded in the same input (`regress`, or `run`
            # given both files)
            "regression": {
                "baselineRunId": BASELINE_RUN,
                "scoreDelta": -0.4,
                "verdict": "regressed",
                "method": "paired-bootstrap",
                "alpha": 0.05,
                "pairedTaskCount": 10,
            },
        },
    }
    return {BASELINE_RUN: base_tasks, CANDIDATE_RUN: cand_tasks}, runs


# ---------------------------------------------------------------------------------------------
# Sample 5: delegates that ran as child runs (E-102)
# ---------------------------------------------------------------------------------------------

DELEGATES_RUN = "acme/run-delegates-0001"
RESEARCHER = "acme.agents.researcher"


def _child_run(run_id: str, start: str, calls: list[Call]) -> EventWriter:
    """A fanned-out child run: its own log, one invocation of the researcher agent."""
    w = EventWriter(run_id, start)
    w.run_started()
    w.emit(
        "agent.invocation-started",
        {"invocationId": "inv-research", "agentId": RESEARCHER, "source": "workflow-node"},
    )
    for call in calls:
        call_id = f"call-{w.slug}-{w.next_sequence:05d}"
        tool_call = {"agentId": RESEARCHER, "toolName": call.tool, "callId": call_id}
        w.emit("agent.tool-called", {**tool_call, "inputs": call.inputs})
        w.emit("agent.tool-returned", {**tool_call, "status": "ok", "durationMs": 15})
    w.emit(
        "agent.invocation-completed",
        {"invocationId": "inv-research", "agentId": RESEARCHER, "outcome": "completed"},
    )
    w.run_completed()
    return w


def sample_delegates() -> tuple[dict[str, Any], dict[str, Any]]:
    """The support agent fans out to two researcher child runs per task (a policy check and a
    fraud check, dispatched fraud first, merged policy first) and refunds after the join. Both
    tasks include delegates: the first expects the children's calls in merge order; in the
    second a child calls a forbidden tool."""
    suite_id = "acme.support.evals.delegates"
    checked_refund = {
        "match": "in-order",
        "calls": [
            {"tool": "crm:lookup-order", "args": {"orderId": "A-4001"}, "argsMatch": "subset"},
            {"tool": "kb:search"},
            {"tool": "fraud:score-order"},
            {"tool": "billing:refund", "args": {"orderId": "A-4001"}, "argsMatch": "subset"},
        ],
        "includeDelegates": True,
    }
    guarded_refund = {
        "match": "any-order",
        "calls": [{"tool": "kb:search"}, {"tool": "fraud:score-order"}],
        "forbidden": ["billing:refund-all"],
        "includeDelegates": True,
    }
    suite = {
        "suiteId": suite_id,
        "version": SUITE_VERSION,
        "targetAgentId": AGENT,
        "modes": ["golden"],
        "thresholds": {"passScore": 1.0},
        "tasks": [
            {
                "taskId": "checked-refund",
                "input": {"message": "Refund order A-4001 once policy and fraud checks pass."},
                "expected": golden("refund approved", checked_refund),
            },
            {
                "taskId": "guarded-refund",
                "input": {"message": "Refund order A-4002 after the checks; never in bulk."},
                "expected": golden("refund approved", guarded_refund),
            },
        ],
    }
    write_suite(suite, "delegates")

    parent = EventWriter(DELEGATES_RUN, "2026-11-02T13:00:00.000Z")
    parent.run_started()
    parent.emit(
        "eval.started",
        {"suiteId": suite_id, "suiteVersion": SUITE_VERSION, "taskCount": 2, "modes": ["golden"]},
    )
    children: list[EventWriter] = []
    for task_id, order_id, fraud_calls in (
        ("checked-refund", "A-4001", [Call("fraud:score-order", {"orderId": "A-4001"})]),
        (
            "guarded-refund",
            "A-4002",
            [
                Call("fraud:score-order", {"orderId": "A-4002"}),
                Call("billing:refund-all", {"customerId": "C-77"}),  # forbidden, in a child
            ],
        ),
    ):
        policy = f"acme/run-delegates-{order_id.lower()}-policy"
        fraud = f"acme/run-delegates-{order_id.lower()}-fraud"
        invocation = f"inv-{task_id}"
        parent.emit(
            "agent.invocation-started",
            {
                "invocationId": invocation,
                "agentId": AGENT,
                "source": "run-api",
                "modelClass": "general",
            },
        )
        parent.emit(
            "agent.tool-called",
            {
                "agentId": AGENT,
                "toolName": "crm:lookup-order",
                "callId": f"call-{task_id}-1",
                "inputs": {"orderId": order_id},
            },
        )
        parent.emit("dispatch.fanned-out", {"fanOutPolicy": "parallel", "childCount": 2})
        for child in (fraud, policy):  # dispatched fraud first
            parent.emit("node.dispatched", {"childRunId": child, "childWorkflowId": "research"})
        parent.emit(
            "dispatch.joined",
            {
                "joinOutcome": "satisfied",
                "completedCount": 2,
                "failedCount": 0,
                "mergeOrder": [policy, fraud],
            },  # merged policy first: its calls come first
        )
        parent.emit(
            "agent.tool-called",
            {
                "agentId": AGENT,
                "toolName": "billing:refund",
                "callId": f"call-{task_id}-2",
                "inputs": {"orderId": order_id, "amountMinor": 4200},
            },
        )
        parent.emit(
            "agent.invocation-completed",
            {"invocationId": invocation, "agentId": AGENT, "outcome": "completed"},
        )
        parent.scored(task_id, score=1.0, passed=True, latency_ms=900)
        start = parent.rows[-1]["timestamp"]
        children.append(_child_run(policy, start, [Call("kb:search", {"q": "refund policy"})]))
        children.append(_child_run(fraud, start, fraud_calls))
    parent.emit(
        "eval.completed",
        {"aggregateScore": 1.0, "passed": True, "taskCount": 2, "passedCount": 2},
    )
    parent.run_completed()
    parent.write(DELEGATES_DIR / "parent.parquet")
    rows = [row for child in children for row in child.rows]
    DELEGATES_DIR.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=EVENT_SCHEMA),
        DELEGATES_DIR / "children.parquet",
        compression="zstd",
    )

    tasks = {
        "checked-refund": {
            "score": 1.0,
            "passed": True,
            "latencyMs": 900,
            "trajectory": traj("in-order", True, expected=4, observed=4, matched=4),
            "efficiency": efficiency(2, 0, 0, 0),
        },
        "guarded-refund": {
            "score": 1.0,
            "passed": False,
            "latencyMs": 900,
            "trajectory": traj("any-order", False, expected=2, observed=5, matched=2, forbidden=1),
            "efficiency": efficiency(2, 0, 0, 0),
        },
    }
    run = {
        "suiteId": suite_id,
        "suiteVersion": SUITE_VERSION,
        "aggregateScore": 1.0,
        "passed": False,  # gating mean (1 + 0)/2 = 0.5 < passScore 1.0
        "taskCount": 2,
        "passedCount": 1,
        "evaluatedModelClass": "general",
    }
    return {DELEGATES_RUN: tasks}, {DELEGATES_RUN: run}


# ---------------------------------------------------------------------------------------------
# Host capabilities (RFC 0244 §G, E-100): two hosts' agents.evalSuite blocks, as they serve them


def sample_capabilities() -> None:
    """`capabilities/full-host.json` advertises every facet the samples use (trials up to 10);
    `capabilities/rfc0081-host.json` is a host of RFC 0081 only (golden and regression, none of
    the RFC 0244 facets), which must refuse the trajectory, trials and fixture samples."""
    full = {
        "supported": True,
        "modes": ["golden", "rubric", "regression"],
        "maxTasksPerSuite": 200,
        "trajectory": True,
        "trials": {"maxTrials": 10},
        "fixtureMatching": True,
        "regressionVerdict": True,
    }
    rfc0081 = {"supported": True, "modes": ["golden", "regression"], "maxTasksPerSuite": 200}
    CAPABILITIES_DIR.mkdir(exist_ok=True)
    for name, block in (("full-host", full), ("rfc0081-host", rfc0081)):
        document = {"protocolVersion": "2", "agents": {"evalSuite": block}}
        text = json.dumps(document, indent=2) + "\n"
        (CAPABILITIES_DIR / f"{name}.json").write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------------------------------


def main() -> None:
    expected_tasks: dict[str, Any] = {}
    expected_runs: dict[str, Any] = {}
    samples = (
        sample_trajectory,
        sample_trials,
        sample_fixture_miss,
        sample_regression,
        sample_delegates,
    )
    for sample in samples:
        tasks, runs = sample()
        expected_tasks |= tasks
        expected_runs |= runs
    for name, doc in (("expected.json", expected_tasks), ("expected_runs.json", expected_runs)):
        (HERE / name).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")

    parquet = [EVENTS_DIR, REGRESS_DIR, DELEGATES_DIR]
    for path in sorted(path for folder in parquet for path in folder.glob("*.parquet")):
        table = pq.read_table(path)
        runs = sorted(set(table.column("runId").to_pylist()))
        rel = path.relative_to(HERE)
        print(f"{rel}: {table.num_rows} rows, {path.stat().st_size} bytes, runs {runs}")
    sample_capabilities()
    for path in sorted([*SUITES_DIR.glob("*.json"), *CAPABILITIES_DIR.glob("*.json")]):
        print(f"{path.relative_to(HERE)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
