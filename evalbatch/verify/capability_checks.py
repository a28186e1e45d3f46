"""Did the host grade what it had to refuse? The run against the host's capabilities (RFC 0244
§G, E-103).

A host that does not advertise a facet MUST refuse, at run create, a suite that uses its feature;
it MUST NOT silently grade such a suite as if the field were absent. An eval run in the log is a
run the host accepted, so each field `capabilities.run_refusals` says it had to refuse (a mode it
does not run, trials it does not advertise or above its `maxTrials`, a trajectory, fixture
matching, more tasks than `maxTasksPerSuite`) is a finding: `capabilities.<facet>`, host `graded`,
recomputed `refused`, rule RFC 0244 §G, reason `unadvertised-feature-graded`, one per task (or
per run) and facet. A facet the run
does not need is tallied as agreeing, so the field table counts every run checked.
"""

from __future__ import annotations

import re
from typing import Any

from evalbatch.inputs.capabilities import run_refusals
from evalbatch.verify.compare import Checker
from evalbatch.verify.run_context import RunContext

#: the facets a run is checked against, in the order findings are listed
FACETS = (
    "supported",
    "modes",
    "maxTasksPerSuite",
    "trials",
    "trials.maxTrials",
    "trajectory",
    "fixtureMatching",
)
#: the rule and reason code of a finding of this family
RULE, REASON = "RFC 0244 §G", "unadvertised-feature-graded"

_TASK_INDEX = re.compile(r"^\$\.tasks\[(\d+)\]")


def check_capabilities(check: Checker, ctx: RunContext) -> None:
    """Each facet the run needed that the host does not advertise: a finding per field."""
    if ctx.facets is None:
        return
    seq = ctx.run["start_seq"]
    started = ctx.host.payloads.get((ctx.run_id, seq))
    refused = run_refusals(ctx.doc, started if isinstance(started, dict) else None, ctx.facets)
    tasks = (ctx.doc or {}).get("tasks") or []
    for facet in FACETS:
        name = f"capabilities.{facet}"
        # one finding per task (or per run) whatever the number of its fields refused
        where = dict.fromkeys(_task_of(r.path, tasks) for r in refused if r.facet == facet)
        if not where:
            check.check(name, "graded", "graded", (RULE, None), sequence=seq, text=True)
        for task in where:
            check.check(
                name, "graded", "refused", (RULE, REASON), task=task, sequence=seq, text=True
            )


def _task_of(path: str, tasks: list[Any]) -> str | None:
    """The taskId of a refused suite path inside `$.tasks[i]`; None for a run-level field."""
    index = _TASK_INDEX.match(path)
    if index is None or int(index[1]) >= len(tasks) or not isinstance(tasks[int(index[1])], dict):
        return None
    task_id = tasks[int(index[1])].get("taskId")
    return task_id if isinstance(task_id, str) else None
