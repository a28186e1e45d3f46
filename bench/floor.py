"""The floor: DuckDB reading the event file and parsing just the JSON fields grading needs.

    python bench/floor.py 'bench/data/small-10000000-seed1/events/*.parquet'   # files or globs

Run as a child process by bench/run.py and bench/sql_stage.py, so its time and peak memory are
measured alone. Prints the number of graded-type events read.
"""

from __future__ import annotations

import sys

import duckdb

GRADED_TYPES = (
    "agent.invocation-started",
    "agent.invocation-completed",
    "agent.tool-called",
    "provider.usage",
    "eval.started",
    "eval.scored",
    "eval.completed",
)
FIELDS = [
    "$.agentId",
    "$.agent.agentId",
    "$.invocationId",
    "$.modelClass",
    "$.toolName",
    "$.toolId",
    "$.inputs",
    "$.arguments",
    "$.inputTokens",
    "$.outputTokens",
    "$.costEstimateUsd",
    "$.currency",
    "$.cacheHit",
    "$.taskId",
    "$.trialIndex",
    "$.score",
    "$.passed",
    "$.latencyMs",
    "$.costUsd",
    "$.suiteId",
    "$.suiteVersion",
    "$.modes",
    "$.trialCount",
    "$.baselineRunId",
]


def main(paths: list[str]) -> None:
    con = duckdb.connect()
    rows = (
        con.read_parquet(paths)
        .filter(duckdb.ColumnExpression("type").isin(*map(duckdb.ConstantExpression, GRADED_TYPES)))
        .select(
            duckdb.SQLExpression("runId"),
            duckdb.SQLExpression("sequence"),
            duckdb.SQLExpression("type"),
            duckdb.SQLExpression(f"json_extract(payload, {FIELDS!r}) AS f"),
        )
        .aggregate("count(*), sum(hash(runId, sequence, type, f))")
        .fetchall()
    )
    print(rows[0][0])


if __name__ == "__main__":
    main(sys.argv[1:])
