"""Hypothesis strategies for random but plausible eval-run logs and the suites they run.

`logs_and_suites()` draws `(events, suites)`: events are row dicts (`runId`, `sequence`, `type`,
`payload` as JSON text, `timestamp`), suites are valid AgentEvalSuite documents. The logs are
small but reach the awkward corners of the contract: every kind and match mode, argsMatch,
forbidden tools, delegates, fixtures and onMiss, live-shadow, judge calls, cache hits and other
currencies, bad host scores, trial indices present/absent/repeated/extra, unknown and missing
tasks, unclosed and missing brackets, v1 type names, payload aliases, duplicate rows, gaps and
runs without a suite, and delegates that ran as child runs (E-102: dispatched and fanned-out
children with calls, grandchildren, logs missing, damaged, of another suite or naming an
ancestor). They feed the engine-versus-reference property test.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

from hypothesis import strategies as st

SUITE_ID = "acme.team.evals.support"
OTHER_SUITE_ID = "acme.team.evals.billing"
VERSION = "1.0.0"
TARGET = "agent.support"
DELEGATE = "agent.helper"
TOOLS = ("crm:lookup", "billing:refund", "mail:send")
ARGS_POOL: tuple[Any, ...] = (
    {},
    {"a": 1},
    {"a": 1.0},
    {"a": 1, "b": 2},
    {"a": True},
    None,
    [1, 2],
)
ARGS_MATCH = ("ignore", "exact", "subset")
MATCH_MODES = ("exact", "in-order", "any-order", "subset")
SUITE_MODES = ("golden", "rubric", "adversarial", "regression", "live-shadow")
MODEL_CLASSES = ("coding", "general", "reasoning")
V1_NAMES = {
    "agent.invocation-started": "agent.invocation.started",
    "agent.invocation-completed": "agent.invocation.completed",
    "agent.tool-called": "agent.toolCalled",
    "agent.tool-returned": "agent.toolReturned",
    "dispatch.joined": "core.dispatch.join",
    "workflow-chain.event": "core.workflowChain.event",
}
EPOCH = dt.datetime(2026, 10, 14, 9, 0, 0, tzinfo=dt.UTC)

#: host scores: mostly valid, sometimes the bad values D-11 fails closed on
SCORES: tuple[Any, ...] = (0, 0.25, 0.5, 0.7, 0.8, 0.9, 1, 1.0)
BAD_SCORES: tuple[Any, ...] = (1.5, "0.5", True, -0.1)
COSTS: tuple[Any, ...] = (0.001, 0.01, 0.02, 0.25)

_MISSING = object()


def _chance(draw: st.DrawFn, percent: int) -> bool:
    """True about `percent`% of the time.

    The rare outcome sits in the middle of the range, away from the boundary values Hypothesis
    favours, and shrinking (towards 0) leads to the common case.
    """
    return 40 <= draw(st.integers(0, 99)) < 40 + percent


# --------------------------------------------------------------------------------------------------
# Suites
# --------------------------------------------------------------------------------------------------


def _args(draw: st.DrawFn) -> Any:
    """A fresh copy of a pooled argument value (the pool must never be mutated)."""
    return copy.deepcopy(draw(st.sampled_from(ARGS_POOL)))


@st.composite
def expected_calls(draw: st.DrawFn) -> dict[str, Any]:
    """One `trajectory.calls[]` item (or fixture entry body): tool, maybe args, maybe argsMatch."""
    call: dict[str, Any] = {"tool": draw(st.sampled_from(TOOLS))}
    if not _chance(draw, 25):
        call["args"] = _args(draw)
    if not _chance(draw, 25):
        call["argsMatch"] = draw(st.sampled_from(ARGS_MATCH))
    return call


@st.composite
def trajectories(draw: st.DrawFn) -> dict[str, Any]:
    """An `expected.trajectory` block in any of the four modes."""
    block: dict[str, Any] = {
        "match": draw(st.sampled_from(MATCH_MODES)),
        "calls": draw(st.lists(expected_calls(), min_size=1, max_size=3)),
    }
    if draw(st.booleans()):
        block["forbidden"] = draw(
            st.lists(st.sampled_from(TOOLS), min_size=1, max_size=2, unique=True)
        )
    if draw(st.booleans()):
        block["includeDelegates"] = draw(st.booleans())
    return block


@st.composite
def fixture_blocks(draw: st.DrawFn) -> dict[str, Any]:
    """`fixtures` with toolResponses (entries with and without args) and maybe onMiss."""
    entries = []
    for _ in range(draw(st.integers(0, 3))):
        entry = draw(expected_calls())
        if draw(st.booleans()):
            entry["response"] = {"ok": True}
        entries.append(entry)
    block: dict[str, Any] = {"toolResponses": entries}
    on_miss = draw(st.sampled_from(("fail", "live", None)))
    if on_miss is not None:
        block["onMiss"] = on_miss
    return block


@st.composite
def tasks(draw: st.DrawFn, task_id: str) -> dict[str, Any]:
    """A suite task of kind golden, rubric or trajectory (the last with no match/rubric)."""
    kind = draw(st.sampled_from(("golden", "rubric", "trajectory")))
    expected: dict[str, Any] = {"kind": kind}
    if kind == "golden":
        expected["match"] = {"strategy": "contains", "value": "x"}
    elif kind == "rubric":
        expected["rubric"] = [{"criterion": "resolves the request", "weight": 1}]
    if kind == "trajectory" or draw(st.booleans()):
        expected["trajectory"] = draw(trajectories())
    task: dict[str, Any] = {"taskId": task_id, "input": {"ticket": task_id}, "expected": expected}
    if _chance(draw, 35):
        task["fixtures"] = draw(fixture_blocks())
    return task


@st.composite
def suites(draw: st.DrawFn, suite_id: str = SUITE_ID) -> dict[str, Any]:
    """A valid AgentEvalSuite (RFC 0081 v2 + RFC 0244 fields)."""
    task_count = draw(st.integers(1, 3))
    suite: dict[str, Any] = {
        "suiteId": suite_id,
        "version": VERSION,
        "modes": draw(st.lists(st.sampled_from(SUITE_MODES), min_size=1, max_size=3, unique=True)),
        "tasks": [draw(tasks(f"t-{i}")) for i in range(task_count)],
    }
    if draw(st.booleans()):
        suite["targetAgentId"] = TARGET
    if draw(st.booleans()):
        thresholds: dict[str, Any] = {}
        if draw(st.booleans()):
            thresholds["passScore"] = draw(st.sampled_from((0, 0.5, 0.8, 1)))
        if _chance(draw, 30):
            thresholds["maxCostUsd"] = draw(st.sampled_from((0.01, 0.05, 1)))
        if _chance(draw, 30):
            thresholds["maxP95LatencyMs"] = draw(st.sampled_from((500, 5000)))
        suite["thresholds"] = thresholds
    if draw(st.booleans()):
        count = draw(st.integers(1, 4))
        trials: dict[str, Any] = {"count": count}
        if draw(st.booleans()):
            trials["k"] = draw(st.integers(1, count))
        if draw(st.booleans()):
            trials["passRule"] = draw(st.sampled_from(("all", "any", "mean")))
        suite["trials"] = trials
    return suite


# --------------------------------------------------------------------------------------------------
# Logs
# --------------------------------------------------------------------------------------------------


class _Writer:
    """Appends the events of one run: increasing sequence and timestamp, JSON text payloads."""

    def __init__(
        self,
        draw: st.DrawFn,
        run_id: str,
        children: list[dict[str, Any]] | None = None,
        depth: int = 0,
    ) -> None:
        self.draw = draw
        self.run_id = run_id
        self.rows: list[dict[str, Any]] = []
        self.sequence = 0
        self.clock_ms = draw(st.integers(0, 10_000))
        self.v1 = _chance(draw, 25)  # this exporter sometimes writes v1 names
        self.invocations = 0
        #: the rows of the child runs this run and its children dispatched, shared (E-102)
        self.children = children if children is not None else []
        self.depth = depth  # 0: an eval run; 1, 2: a child, a grandchild

    def chance(self, percent: int) -> bool:
        return _chance(self.draw, percent)

    @staticmethod
    def _iso(stamp: dt.datetime) -> str:
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def emit(self, type_: str, payload: Any, *, raw: str | None = None) -> None:
        draw = self.draw
        if self.chance(4):
            self.sequence += 1  # a gap (E-5)
        self.clock_ms += draw(st.integers(1, 400))
        stamp = EPOCH + dt.timedelta(milliseconds=self.clock_ms)
        if self.v1 and type_ in V1_NAMES and draw(st.booleans()):
            type_ = V1_NAMES[type_]
        row = {
            "runId": self.run_id,
            "sequence": self.sequence,
            "type": type_,
            "payload": raw if raw is not None else json.dumps(payload),
            "timestamp": self._iso(stamp),
        }
        self.rows.append(row)
        if self.chance(3):
            # an export retry: the same event again, maybe with a later timestamp (D-3)
            retry = dict(row)
            if draw(st.booleans()):
                retry["timestamp"] = self._iso(stamp + dt.timedelta(milliseconds=7))
            self.rows.append(retry)
        self.sequence += 1

    # ---- payload pieces --------------------------------------------------------------------

    def agent_fields(self, agent: str) -> dict[str, Any]:
        """D-2: `agentId` or the nested `agent.agentId`."""
        return {"agent": {"agentId": agent}} if self.chance(20) else {"agentId": agent}

    def usage(self, *, inside: bool) -> None:
        draw = self.draw
        payload: dict[str, Any] = {"provider": "acme", "model": "m-1" if inside else "judge-1"}
        for name in ("inputTokens", "outputTokens"):
            if self.chance(6):
                bad = draw(st.sampled_from((-1, 2.5, "7", None, _MISSING)))
                if bad is not _MISSING:
                    payload[name] = bad
            else:
                payload[name] = draw(st.integers(0, 500))
        if not self.chance(30):
            payload["costEstimateUsd"] = draw(st.sampled_from(COSTS))
        elif self.chance(25):
            payload["costEstimateUsd"] = draw(st.sampled_from((None, -0.5, "0.01")))
        if self.chance(15):
            payload["cacheHit"] = draw(st.booleans())
        if self.chance(12):
            payload["currency"] = draw(st.sampled_from(("EUR", "usd", "USD", None)))
        self.emit("provider.usage", payload)

    def tool_call(self, agent: str | None, tool: str, args: Any) -> None:
        payload: dict[str, Any] = self.agent_fields(agent) if agent is not None else {}
        payload["toolId" if self.chance(20) else "toolName"] = tool
        payload["toolCallId" if self.chance(20) else "callId"] = f"call-{self.sequence}"
        if self.chance(15):
            payload["arguments"] = args
        elif not self.chance(15):  # else: no input at all, read as {}
            payload["inputs"] = args
        self.emit("agent.tool-called", payload)
        if self.chance(25):
            returned = {"toolName": tool, "callId": f"call-{self.sequence}", "outcome": "ok"}
            if agent is not None:
                returned["agentId"] = agent
            self.emit("agent.tool-returned", returned)

    # ---- one trial -------------------------------------------------------------------------

    def trial(self, task: dict[str, Any] | None, task_id: str, index: int | None) -> None:
        """A segment: judge usage, bracket with calls and usage, judge usage, eval.scored."""
        draw = self.draw
        if self.chance(20):
            self.usage(inside=False)
        bracket = "closed"
        if self.chance(15):
            bracket = draw(st.sampled_from(("missing", "unclosed", "wrong-id")))
        if bracket != "missing":
            self.invocations += 1
            invocation = f"{self.run_id}:inv-{self.invocations}"
            agent = "agent.other" if self.chance(5) else TARGET
            started = {"invocationId": invocation, "source": "run-api", **self.agent_fields(agent)}
            if not self.chance(10):
                started["modelClass"] = "coding" if not self.chance(10) else "general"
            self.emit("agent.invocation-started", started)
            self.calls(task, agent)
            for _ in range(draw(st.integers(0, 2))):
                self.usage(inside=True)
            if self.chance(15):
                self.emit("agent.reasoned", {"agentId": agent, "reasoning": "..."})
            if bracket != "unclosed":
                closing = invocation if bracket == "closed" else f"{invocation}-other"
                completed = {"invocationId": closing, "outcome": "completed"}
                self.emit("agent.invocation-completed", {**completed, **self.agent_fields(agent)})
        if self.chance(25):
            self.usage(inside=False)
        self.emit("eval.scored", self.scored_payload(task_id, index))

    def calls(self, task: dict[str, Any] | None, agent: str) -> None:
        """Tool calls: often the expected path, sometimes random; a few are a delegate's."""
        draw = self.draw
        expected: list[dict[str, Any]] = []
        if task is not None:
            expected = task["expected"].get("trajectory", {}).get("calls", [])
        planned: list[tuple[str, Any]] = []
        if expected and not self.chance(40):
            for spec in expected:  # the expected path, args as written when there are any
                args = copy.deepcopy(spec["args"]) if "args" in spec else _args(draw)
                planned.append((spec["tool"], args))
            if self.chance(30):
                planned.reverse()
        else:
            for _ in range(draw(st.integers(0, 3))):
                planned.append((draw(st.sampled_from(TOOLS)), _args(draw)))
        if self.chance(20):
            planned.insert(
                draw(st.integers(0, len(planned))), (draw(st.sampled_from(TOOLS)), _args(draw))
            )
        if self.chance(12):
            self.dispatch()
        for tool, args in planned:
            if self.chance(6):
                self.dispatch()
            if self.chance(8):
                # a delegate in its own nested invocation
                self.invocations += 1
                nested = f"{self.run_id}:inv-{self.invocations}"
                self.emit(
                    "agent.invocation-started",
                    {"invocationId": nested, "agentId": DELEGATE, "source": "run-api"},
                )
                self.tool_call(DELEGATE, tool, args)
                self.emit(
                    "agent.invocation-completed",
                    {"invocationId": nested, "agentId": DELEGATE, "outcome": "completed"},
                )
            elif self.chance(6):
                self.tool_call(DELEGATE, tool, args)
            elif self.chance(3):
                self.tool_call(None, tool, args)  # names no agent
            else:
                self.tool_call(agent, tool, args)

    # ---- delegates that ran as child runs (E-102) -------------------------------------------

    def dispatch(self, ancestors: tuple[str, ...] = ()) -> None:
        """Name one child run, or fan out to two and join them in a drawn mergeOrder, and write
        the children's logs (sometimes not: a missing log). Rarely an event that hides its
        child, or a child naming this run or an ancestor (a cycle)."""
        draw = self.draw
        kind = draw(st.sampled_from(("dispatched", "chain", "fan-out", "hidden", "ancestor")))
        if kind == "hidden":
            self.emit("node.dispatched", {"childWorkflowId": "wf"})
            return
        if kind == "ancestor":
            ancestor = draw(st.sampled_from((*ancestors, self.run_id)))
            self.emit("node.dispatched", {"childRunId": ancestor, "childWorkflowId": "wf"})
            return
        count = 2 if kind == "fan-out" else 1
        names = [f"{self.run_id}/child-{self.sequence}-{n}" for n in range(count)]
        for name in names:
            if kind == "chain":
                phase = {"phase": "dispatch.began", "workerId": "w", "parentRunId": self.run_id}
                self.emit("workflow-chain.event", {**phase, "childRunId": name})
            else:
                self.emit("node.dispatched", {"childRunId": name, "childWorkflowId": "wf"})
        if kind == "fan-out":
            merged = {"joinOutcome": "satisfied", "completedCount": 2, "failedCount": 0}
            self.emit(
                "dispatch.joined", {**merged, "mergeOrder": list(draw(st.permutations(names)))}
            )
        for name in names:
            if not self.chance(12):  # else the child's log is missing
                self.child_log(name, (*ancestors, self.run_id))

    def child_log(self, run_id: str, ancestors: tuple[str, ...]) -> None:
        """A child run's own log, kept in `children`: a few calls of any agent, maybe a child
        of its own, maybe damaged or an eval run of another suite."""
        draw = self.draw
        child = _Writer(draw, run_id, self.children, self.depth + 1)
        if child.chance(6):
            started = {"suiteId": OTHER_SUITE_ID, "suiteVersion": VERSION, "taskCount": 1}
            child.emit("eval.started", {**started, "modes": ["golden"]})
        for _ in range(draw(st.integers(0, 3))):
            if child.depth < 3 and child.chance(15):
                child.dispatch(ancestors)
            agent = draw(st.sampled_from((DELEGATE, TARGET)))
            child.tool_call(agent, draw(st.sampled_from(TOOLS)), _args(draw))
        if child.chance(5):
            child.emit("agent.tool-called", None, raw='{"toolName": ')  # a damaged log
        self.children.extend(child.rows)

    def scored_payload(self, task_id: str, index: int | None) -> dict[str, Any]:
        draw = self.draw
        payload: dict[str, Any] = {"taskId": task_id}
        if self.chance(4):
            pass  # missing score
        elif self.chance(5):
            payload["score"] = draw(st.sampled_from(BAD_SCORES))
        else:
            payload["score"] = 1 if self.chance(50) else draw(st.sampled_from(SCORES))
        if self.chance(4):
            pass  # missing passed
        elif self.chance(4):
            payload["passed"] = draw(st.sampled_from(("true", 1, None)))
        else:
            payload["passed"] = not self.chance(25)
        if index is not None:
            payload["trialIndex"] = index
        elif self.chance(8):
            payload["trialIndex"] = draw(st.sampled_from((-1, 0.5, "1", 1.0)))
        if draw(st.booleans()):
            payload["latencyMs"] = draw(st.sampled_from((0, 120, 250.5, 900, 3000, -5)))
        if self.chance(30):
            payload["costUsd"] = draw(st.sampled_from((*COSTS, -1, "0.1")))
        return payload


@st.composite
def _run(
    draw: st.DrawFn, run_id: str, suite: dict[str, Any], suite_id: str
) -> list[dict[str, Any]]:
    """The events of one run of `suite` (or of an unsupplied suite: `suite_id` differs)."""
    writer = _Writer(draw, run_id)
    if writer.chance(10):
        writer.emit("run.started", {"workflowId": "wf"})
    count = suite.get("trials", {}).get("count", 1)
    supplied = suite_id == suite["suiteId"]

    modes = list(suite["modes"])
    if writer.chance(15) and "live-shadow" not in modes:
        modes.append("live-shadow")
    started: dict[str, Any] = {
        "suiteId": suite_id,
        "suiteVersion": VERSION,
        "taskCount": len(suite["tasks"]),
        "modes": modes,
    }
    if count > 1 or writer.chance(25):
        started["trialCount"] = count
        if writer.chance(15):
            started["trialCount"] = draw(st.sampled_from((0, "3", 2.0)))
    writer.emit("eval.started", started)

    # Which (task, index) trials to run: missing tasks and trials, extras, unknown tasks.
    plan: list[tuple[dict[str, Any] | None, str, int]] = []
    for task in suite["tasks"]:
        if writer.chance(6):
            continue  # a missing task
        runs = count
        if writer.chance(12):
            runs += draw(st.sampled_from((-1, 1)))
        plan.extend((task, task["taskId"], i) for i in range(runs))
    if writer.chance(8):
        plan.append((None, "t-unknown", 0))
    order = draw(st.permutations(range(len(plan)))) if plan else []
    indexing = draw(st.sampled_from(("explicit", "absent", "mixed")))
    for position in order:
        task, task_id, index = plan[position]
        shown: int | None = None
        if indexing == "explicit" or (indexing == "mixed" and draw(st.booleans())):
            shown = draw(st.sampled_from((0, count))) if writer.chance(5) else index
        writer.trial(task if supplied else None, task_id, shown)

    if writer.chance(8):
        writer.emit("agent.reasoned", None, raw="{not json")  # payload-ignored
    if writer.chance(2):
        writer.emit("provider.usage", None, raw='{"provider": ')  # payload-invalid: skipped
    if not writer.chance(15):
        completed = {
            "aggregateScore": 0.5,
            "passed": False,
            "taskCount": len(suite["tasks"]),
            "passedCount": 0,
        }
        writer.emit("eval.completed", completed)
        if writer.chance(8):
            late = {"taskId": suite["tasks"][0]["taskId"], "score": 0, "passed": False}
            writer.emit("eval.scored", late)
    if writer.chance(8):
        writer.usage(inside=False)  # usage after the eval belongs to no task
    return writer.rows + writer.children  # the child runs it dispatched (E-102)


@st.composite
def logs_and_suites(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(events, suites): 1-3 runs of one suite, some without a supplied suite, some not eval runs.

    The events come back in shuffled row order: order is (runId, sequence), not file order.
    """
    suite = draw(suites())
    supplied = [suite]
    if _chance(draw, 15):
        supplied.append(copy.deepcopy(suite))  # an identical copy is one suite
    if _chance(draw, 3):
        other = copy.deepcopy(suite)
        other["modes"] = ["regression"] if other["modes"] != ["regression"] else ["golden"]
        supplied.append(other)  # same id and version, different content: suite-conflict

    events: list[dict[str, Any]] = []
    for number in range(1, draw(st.integers(1, 3)) + 1):
        run_id = f"acme/run-{number:016d}"
        if _chance(draw, 8):
            # not an eval run (E-1): a few agent events and nothing else
            writer = _Writer(draw, run_id)
            writer.emit("run.started", {"workflowId": "wf"})
            writer.trial(None, "t-0", None)
            events.extend(r for r in writer.rows if r["type"] != "eval.scored")
            continue
        suite_id = OTHER_SUITE_ID if _chance(draw, 12) else SUITE_ID  # D-4: no suite supplied
        events.extend(draw(_run(run_id, suite, suite_id)))
    if events and _chance(draw, 4):
        events.append(
            {
                "runId": None,
                "sequence": 0,
                "type": "eval.scored",
                "payload": "{}",
                "timestamp": None,
            }
        )
    order = draw(st.permutations(range(len(events)))) if events else []
    return [events[i] for i in order], supplied


# --------------------------------------------------------------------------------------------------
# Fuzzing helpers (tests/test_fuzz.py): awkward but valid JSON, and text that is not JSON
# --------------------------------------------------------------------------------------------------


def unicode_texts(min_size: int = 1, max_size: int = 40) -> st.SearchStrategy[str]:
    """Text from the whole of Unicode (astral planes, combining marks, controls, RTL), without
    lone surrogates, which UTF-8 cannot carry."""
    return st.text(
        alphabet=st.characters(blacklist_categories=("Cs",)), min_size=min_size, max_size=max_size
    )


def huge_strings() -> st.SearchStrategy[str]:
    """A string of 1-2 MB: a repeated unicode chunk."""
    return st.builds(
        lambda chunk, size: (chunk * (size // len(chunk) + 1))[:size],
        unicode_texts(1, 8),
        st.sampled_from((1_000_000, 2_000_000)),
    )


def deep_json_text(depth: int, shape: str) -> str:
    """JSON text nested `depth` levels deep: `array`s, `object`s or both alternating (`mixed`)."""
    if shape == "array":
        return "[" * depth + "1" + "]" * depth
    if shape == "object":
        return '{"d":' * depth + "1" + "}" * depth
    opening = "".join('[{"d":' if i % 2 else "[" for i in range(depth))
    closing = "".join("}]" if i % 2 else "]" for i in reversed(range(depth)))
    return opening + "1" + closing


def deep_json_texts(depths: tuple[int, ...] = (64, 500, 3_000)) -> st.SearchStrategy[str]:
    """`deep_json_text` of a drawn depth and shape."""
    return st.builds(
        deep_json_text, st.sampled_from(depths), st.sampled_from(("array", "object", "mixed"))
    )


#: ways to make a JSON object's text not JSON (RFC 8259; D-7: NaN and Infinity are not JSON)
NOT_JSON_EDITS: tuple[str, ...] = (
    "truncated",
    "trailing-comma",
    "array-trailing-comma",
    "object-trailing-comma",
    "nan",
    "infinity",
    "minus-infinity",
    "single-quotes",
    "block-comment",
    "line-comment",
    "trailing-garbage",
    "two-values",
    "empty",
    "unquoted-key",
    "control-char",
    "bad-escape",
    "leading-zero",
    "plus-sign",
    "bare-fraction",
    "hex-number",
    "python-literal",
)


def break_json(text: str, edit: str) -> str:
    """`text` (a JSON object's text, `{...}`) made into text that is not JSON by `edit`."""
    inner = text.strip()[1:-1].strip()

    def with_member(member: str) -> str:
        return "{" + member + (", " + inner if inner else "") + "}"

    edits = {
        "truncated": lambda: text.rstrip()[:-1],
        "trailing-comma": lambda: "{" + inner + (", " if inner else "") + '"x-fuzz": 1,}',
        "array-trailing-comma": lambda: with_member('"x-fuzz": [1, 2,]'),
        "object-trailing-comma": lambda: with_member('"x-fuzz": {"a": 1,}'),
        "nan": lambda: with_member('"x-fuzz": NaN'),
        "infinity": lambda: with_member('"x-fuzz": Infinity'),
        "minus-infinity": lambda: with_member('"x-fuzz": -Infinity'),
        "single-quotes": lambda: with_member("'x-fuzz': 'a'"),
        "block-comment": lambda: "{/* fuzz */" + text.strip()[1:],
        "line-comment": lambda: "// fuzz\n" + text,
        "trailing-garbage": lambda: text + " x",
        "two-values": lambda: text + text,
        "empty": lambda: "",
        "unquoted-key": lambda: with_member("xfuzz: 1"),
        "control-char": lambda: with_member('"x-fuzz": "a\x01b"'),
        "bad-escape": lambda: with_member('"x-fuzz": "\\x41"'),
        "leading-zero": lambda: with_member('"x-fuzz": 01'),
        "plus-sign": lambda: with_member('"x-fuzz": +1'),
        "bare-fraction": lambda: with_member('"x-fuzz": .5'),
        "hex-number": lambda: with_member('"x-fuzz": 0x1F'),
        "python-literal": lambda: with_member('"x-fuzz": True'),
    }
    return edits[edit]()


# --------------------------------------------------------------------------------------------------
# Fault injection (tests/test_fault_injection.py, §6): hostile values, files and options
# --------------------------------------------------------------------------------------------------

#: hostile numbers written as JSON text, verbatim: JSON's grammar has no range, so `1e400` is JSON
#: (a float parser reads it as infinity) and a 30-digit integer is JSON too
HUGE_NUMBER_TEXTS: tuple[str, ...] = (
    "1e20",
    "1e300",
    "1e400",
    "-1e400",
    "1e-400",
    "123456789012345678901234567890",
    "18446744073709551616",
    "-0.5",
)

#: per fault kind, the values a test may plant (§6: one bad value costs only its own run)
EVENT_FAULT_VALUES: dict[str, tuple[Any, ...]] = {
    "sequence-int64": (2**63 - 1, -(2**63), -1),
    "sequence-uint64": (2**63, 2**64 - 1),
    "sequence-float": (2.5, 0.5, float("nan"), float("inf"), -float("inf"), 1e300),
    "cost-usage": HUGE_NUMBER_TEXTS,
    "cost-scored": HUGE_NUMBER_TEXTS,
    "latency": (*HUGE_NUMBER_TEXTS, "-5"),
    "score": ("1e400", "-1e400", "1.0000000000000002", "NaN", "Infinity", "true"),
    "type-null": (None,),
    "type-unknown": ("x.unknown", "", "eval.scored ", "EVAL.SCORED"),
    "runid-utf8": (b"acme/run-\xff\xfe", b"acme/run-\xc3", b"\x80"),
    "payload-utf8": (b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"),
    "payload-not-json": NOT_JSON_EDITS,
    "file-truncated": (0.1, 0.5, 0.9, 0.99),
    "file-damaged": (0.2, 0.4, 0.6, 0.8),
    "columns-missing": ("runId", "sequence", "type", "payload"),
    "columns-renamed": ("run_id", "seq", "data", "run", "body", "Sequence"),
    "trial-count": (10**6, 10**9, 2**63 - 1, 1e300),
}


@st.composite
def event_faults(draw: st.DrawFn, kind: str) -> tuple[str, Any, int]:
    """(kind, a hostile value for it, a draw that places it: which event of the run, or where
    in the file the damage starts)."""
    value = draw(st.sampled_from(EVENT_FAULT_VALUES[kind]))
    return kind, value, draw(st.integers(0, 10_000))


#: values a suite field is replaced with: wrong types, out of range, huge, empty, NaN-like text
SUITE_FIELD_VALUES: tuple[Any, ...] = (
    None,
    True,
    -1,
    0,
    1.5,
    2**63,
    10**30,
    1e300,
    "",
    "1",
    "NaN",
    [],
    {},
    [None],
    {"x": 1},
)


def _json_paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every member and item path of a JSON document (the root excluded)."""
    paths: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        items: Any = doc.items()
    elif isinstance(doc, list):
        items = enumerate(doc)
    else:
        return paths
    for key, value in items:
        paths.append((*here, key))
        paths.extend(_json_paths(value, (*here, key)))
    return paths


@st.composite
def suite_faults(draw: st.DrawFn, suite: dict[str, Any]) -> tuple[str, str]:
    """(a label, the text of `suite` with one fault): a field replaced with a hostile value or
    removed, `suiteId` or `version` removed, or the text made not JSON."""
    how = draw(st.sampled_from(("replace", "remove", "identity", "not-json")))
    doc = copy.deepcopy(suite)
    if how == "identity":
        key = draw(st.sampled_from(("suiteId", "version")))
        del doc[key]
        return f"no {key}", json.dumps(doc)
    if how == "not-json":
        edit = draw(st.sampled_from(NOT_JSON_EDITS))
        return f"not-json:{edit}", break_json(json.dumps(doc), edit)
    path = draw(st.sampled_from(_json_paths(doc)))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if how == "remove":
        del parent[path[-1]]
        return f"remove {path}", json.dumps(doc)
    value = draw(st.sampled_from(SUITE_FIELD_VALUES))
    parent[path[-1]] = copy.deepcopy(value)
    return f"replace {path} = {value!r}", json.dumps(doc)


#: the files `evalbatch run --incremental` leaves in --out, and the ways a file there is damaged
OUTPUT_DIR_FILES = (
    "summaries.jsonl",
    "runs.parquet",
    "tasks.parquet",
    "trials.parquet",
    "problems.parquet",
    "manifest.json",
)
OUTPUT_DAMAGE = ("truncate", "corrupt", "delete", "empty", "drop-row", "duplicate-row")


@st.composite
def output_damage(draw: st.DrawFn) -> tuple[str, str, int]:
    """(file, how, a draw placing the damage) for a previous output directory."""
    return (
        draw(st.sampled_from(OUTPUT_DIR_FILES)),
        draw(st.sampled_from(OUTPUT_DAMAGE)),
        draw(st.integers(0, 10_000)),
    )


#: how a tasks.parquet side of `regress` is hand-edited (E-69: checked before it is trusted)
TASK_SIDE_FAULTS: dict[str, tuple[Any, ...]] = {
    "zero-rows": (None,),
    "gating-score": (float("nan"), None, float("inf"), -float("inf"), 1000.0, -1.0, 1.5),
    "all-gating-scores": (float("nan"), None, float("inf"), 1000.0),
    "duplicate-row": (None,),
    "gating-score-as-text": ("0.5", "NaN", "high"),
    "column-dropped": ("gating_score", "task_id", "run_id", "suite_id"),
}


@st.composite
def task_side_faults(draw: st.DrawFn) -> tuple[str, Any, int]:
    """(fault, value, a draw choosing the row) for a tasks.parquet regress side."""
    fault = draw(st.sampled_from(sorted(TASK_SIDE_FAULTS)))
    return fault, draw(st.sampled_from(TASK_SIDE_FAULTS[fault])), draw(st.integers(0, 10_000))


#: option values that are never meaningful: click types must refuse them (E-82)
BAD_FLOATS = ("nan", "NaN", "inf", "-inf", "1e400", "x")
BAD_COUNTS = ("0", "-1", "nan", "1.5", "x")
BAD_SIZES = ("lots", "-1GB", "nan", "4XB", "1e400GB", "GB")


# --------------------------------------------------------------------------------------------------
# Payload texts for the two extractors (tests/test_native_scan.py, E-108): JSON values written in
# many ways, then broken in the ways a strict and a lenient parser read differently
# --------------------------------------------------------------------------------------------------

#: the payload fields event_scan reads, and a few it does not: keys the drawn objects use
PAYLOAD_KEYS: tuple[str, ...] = (
    "agentId", "agent", "toolName", "toolId", "inputs", "arguments", "inputTokens",
    "outputTokens", "costEstimateUsd", "currency", "cacheHit", "invocationId", "modelClass",
    "taskId", "trialIndex", "score", "passed", "latencyMs", "costUsd", "suiteId", "suiteVersion",
    "modes", "trialCount", "baselineRunId", "childRunId", "mergeOrder", "x", "",
)  # fmt: skip

#: the event types the events pass reads fields of, one it only checks and one it ignores
PAYLOAD_TYPES: tuple[str, ...] = (
    "agent.tool-called", "provider.usage", "agent.invocation-started",
    "agent.invocation-completed", "eval.scored", "eval.started", "node.dispatched",
    "workflow-chain.event", "dispatch.joined", "eval.completed", "agent.tool-returned",
)  # fmt: skip

#: numbers as JSON text, verbatim: integers at and past int64/uint64, doubles that print with
#: and without an exponent, negative zeros, digits a double cannot hold, out of range
NUMBER_TEXTS: tuple[str, ...] = (
    "0", "-0", "0.0", "-0.0", "1", "-1", "1.0", "1.50", "0.1", "1e2", "1E2", "1e+2", "1e-7",
    "0.000001", "1e21", "1e20", "1e16", "123e-2", "9007199254740993", "9223372036854775807",
    "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
    "18446744073709551616", "123456789012345678901234", "1.0000000000000001",
    "1234567890.12345678", "5e-324", "1.7976931348623157e308", "1e400", "-1e400", "1e-400",
)  # fmt: skip

#: a JSON tree whose objects are lists of (key, value) pairs, so a key can be written twice
Tree = Any


class Number(str):
    """A number written as this text."""


def _trees() -> st.SearchStrategy[Tree]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70).map(lambda n: Number(str(n))),
        st.floats(allow_nan=False, allow_infinity=False).map(lambda x: Number(repr(x))),
        st.sampled_from(NUMBER_TEXTS).map(Number),
        unicode_texts(0, 12),
        st.sampled_from(("", "NaN", "Infinity", "a,}", "a, ]", "\\", '"', "\u2028", "\x7f")),
    )
    keys = st.one_of(st.sampled_from(PAYLOAD_KEYS), unicode_texts(0, 6))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(st.tuples(keys, inner), max_size=5).map(lambda pairs: ("object", pairs)),
        ),
        max_leaves=12,
    )


def _key_text(key: str, escape: bool) -> str:
    """A key as JSON text, its first letter written as a \\u escape when `escape`."""
    if escape and key and ord(key[0]) < 0x10000:
        return f'"\\u{ord(key[0]):04x}' + json.dumps(key[1:])[1:]
    return json.dumps(key)


def write_tree(tree: Tree, space: str = "", ascii_only: bool = False, escape: bool = False) -> str:
    """`tree` as JSON text: `space` after separators, strings ASCII-escaped or not, keys
    escaped or not."""
    if isinstance(tree, Number):
        return str(tree)
    if isinstance(tree, tuple):
        members = [
            _key_text(key, escape) + ":" + space + write_tree(value, space, ascii_only, escape)
            for key, value in tree[1]
        ]
        return "{" + ("," + space).join(members) + "}"
    if isinstance(tree, list):
        items = [write_tree(v, space, ascii_only, escape) for v in tree]
        return "[" + ("," + space).join(items) + "]"
    return json.dumps(tree, ensure_ascii=ascii_only)


#: the ways a drawn payload is changed before both extractors read it
PAYLOAD_MUTATIONS: tuple[str, ...] = (
    "none", "repeat-top-key", "repeat-agent-key", "repeat-deep-key", "nan", "infinity",
    "trailing-comma", "long-number", "truncate", "agent-object", "fractional-trial-index",
)  # fmt: skip


@st.composite
def payload_texts(draw: st.DrawFn) -> str:
    """A payload's text: mostly an object of the fields event_scan reads, sometimes any JSON
    value, written in one of several ways and changed by one of PAYLOAD_MUTATIONS."""
    keys = st.sampled_from(PAYLOAD_KEYS)
    top: Tree = (
        "object",
        draw(st.lists(st.tuples(keys, _trees()), max_size=8, unique_by=lambda kv: kv[0])),
    )
    if draw(st.integers(0, 9)) == 0:
        top = draw(_trees())
    mutation = draw(st.sampled_from(PAYLOAD_MUTATIONS))
    if isinstance(top, tuple):
        pairs = top[1]
        if mutation == "repeat-top-key" and pairs:
            key, _ = draw(st.sampled_from(pairs))
            pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(_trees())))
        elif mutation in ("agent-object", "repeat-agent-key"):
            agent = [("agentId", draw(_trees())), ("name", "a")]
            if mutation == "repeat-agent-key":
                agent.append(("agentId", draw(_trees())))
            pairs.append(("agent", ("object", agent)))
        elif mutation == "repeat-deep-key":
            pairs.append(("inputs", ("object", [("k", Number("1")), ("k", Number("2"))])))
        elif mutation == "long-number":
            pairs.append(("inputs", ("object", [("n", Number("12345678901234567890.5"))])))
        elif mutation == "fractional-trial-index":
            pairs.append(("trialIndex", Number(draw(st.sampled_from(("1.0", "1.5", "1e0"))))))
    text = write_tree(
        top,
        space=draw(st.sampled_from(("", " ", "\n  "))),
        ascii_only=draw(st.booleans()),
        escape=draw(st.integers(0, 4)) == 0,
    )
    if mutation == "nan":
        text = text.replace(":", ': NaN, "z":', 1) if ":" in text else "NaN"
    elif mutation == "infinity":
        text = "[-Infinity, " + text + "]"
    elif mutation == "trailing-comma" and len(text) > 2:
        text = text[:-1] + ("," + text[-1] if text[-1] in "]}" else "")
    elif mutation == "truncate" and text:
        text = text[: draw(st.integers(0, len(text) - 1))]
    return text
