"""The payload fields the events pass parses, per event type: declared once (E-134).

event_scan's `f` holds, per row of a type listed here, the JSON texts of that type's fields in
this order (D-2 aliases side by side). The queries that read `f` name a field, never its
position: each type has a macro `<accessor>_field(f, 'name')`, generated here and created on
every connection of the stage (`events_pass.prepare`), which DuckDB's optimizer folds into
`f[i]` (no cost per row). The two extractors that write `f` are held to this list by the tests:
sql/events/event_scan.sql's json_extract paths and native_scan.cpp's table
(`native_scan.fields_by_type`), and both extractors' `f` of one payload read back by name.
"""

from __future__ import annotations

from typing import NamedTuple


class TypeFields(NamedTuple):
    """One event type's fields in `f`: the macro reading them is `<accessor>_field`."""

    type: str
    accessor: str
    #: JSON paths under the payload, "$." left off ("agent.agentId" is the one nested path)
    fields: tuple[str, ...]


#: every event type whose payload fields event_scan reads, in the order its CASE lists them
SCAN_FIELDS: tuple[TypeFields, ...] = (
    TypeFields(
        "agent.tool-called",
        "tool_called",
        ("agentId", "agent.agentId", "toolName", "toolId", "inputs", "arguments"),
    ),
    TypeFields(
        "provider.usage",
        "usage",
        ("inputTokens", "outputTokens", "costEstimateUsd", "currency", "cacheHit"),
    ),
    TypeFields(
        "agent.invocation-started",
        "invocation_started",
        ("agentId", "agent.agentId", "invocationId", "modelClass"),
    ),
    TypeFields("agent.invocation-completed", "invocation_completed", ("invocationId",)),
    TypeFields(
        "eval.scored",
        "scored",
        ("taskId", "trialIndex", "score", "passed", "latencyMs", "costUsd"),
    ),
    TypeFields(
        "eval.started",
        "started",
        ("suiteId", "suiteVersion", "modes", "trialCount", "baselineRunId"),
    ),
    # the child runs a delegated trajectory reads (E-102)
    TypeFields("node.dispatched", "dispatched", ("childRunId",)),
    TypeFields("workflow-chain.event", "chain", ("childRunId",)),
    TypeFields("dispatch.joined", "joined", ("mergeOrder",)),
    # what an Inspect log calls its run and each trial: vendor events of the mapping
    # (E-146), and the samples that errored (E-147)
    TypeFields(
        "evalbatch.inspect.eval", "inspect_eval", ("task", "model", "logFile", "erroredLeftOut")
    ),
    TypeFields(
        "evalbatch.inspect.sample",
        "inspect_sample",
        ("taskId", "trialIndex", "sampleId", "epoch", "errored"),
    ),
)


def by_type() -> dict[str, tuple[str, ...]]:
    """The fields of each type, by type."""
    return {t.type: t.fields for t in SCAN_FIELDS}


def macros() -> str:
    """The `<accessor>_field(f, name)` macros: a field's text by name. A name the type does not
    read is an error where a row reaches it (the tests check every name the queries use)."""
    created = []
    for t in SCAN_FIELDS:
        cases = " ".join(f"WHEN '{name}' THEN f[{i}]" for i, name in enumerate(t.fields, 1))
        created.append(
            f"CREATE OR REPLACE TEMP MACRO {t.accessor}_field(f, name) AS CASE name {cases} "
            f"ELSE error('{t.type} has no field ' || name || ' in f') END;"
        )
    return "\n".join(created)
