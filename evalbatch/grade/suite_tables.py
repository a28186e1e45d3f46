"""Suites flattened into small tables the grading stage joins against (§1.3, §3).

One row per task, per expected call, per forbidden tool and per fixture entry. Expected `args`
are stored as canonical JSON text (D-7), so `exact` comparisons are text equality; an expected call
without `args` matches on the tool name alone, whatever its `argsMatch` (§3.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from evalbatch import jsonvalue

SUITE_TASK_SCHEMA = {
    "suite_key": pl.String,
    "task_pos": pl.Int64,
    "task_id": pl.String,
    "kind": pl.String,
    "has_trajectory": pl.Boolean,
    "mode": pl.String,
    "include_delegates": pl.Boolean,
    "expected_count": pl.Int64,
    "has_fixtures": pl.Boolean,
    "on_miss": pl.String,
}
CALL_SCHEMA = {
    "suite_key": pl.String,
    "task_id": pl.String,
    "pos": pl.Int64,
    "tool": pl.String,
    "args_mode": pl.String,
    "args": pl.String,
}
FORBIDDEN_SCHEMA = {"suite_key": pl.String, "task_id": pl.String, "tool": pl.String}


def suite_key(suite_id: str, version: str) -> str:
    """The key runs and suites are joined on: `eval.started.suiteId`/`suiteVersion` (§1.3)."""
    return f"{suite_id}@{version}"


def _call_row(key: str, task_id: str, pos: int, call: dict[str, Any]) -> dict[str, Any]:
    has_args = "args" in call
    mode = call.get("argsMatch", "ignore") if has_args else "ignore"
    return {
        "suite_key": key,
        "task_id": task_id,
        "pos": pos,
        "tool": call["tool"],
        "args_mode": mode,
        "args": jsonvalue.canonical(call["args"]) if has_args else None,
    }


@dataclass(frozen=True)
class SuiteTables:
    """The graded suites as tables, plus the documents for suite-level fields."""

    docs: dict[str, dict[str, Any]]
    tasks: pl.DataFrame
    expected: pl.DataFrame
    forbidden: pl.DataFrame
    fixtures: pl.DataFrame

    @classmethod
    def build(cls, docs: dict[str, dict[str, Any]]) -> SuiteTables:
        tasks, expected, forbidden, fixtures = [], [], [], []
        for key, doc in sorted(docs.items()):
            for task_pos, task in enumerate(doc["tasks"]):
                task_id = task["taskId"]
                trajectory = task["expected"].get("trajectory")
                responses = (task.get("fixtures") or {}).get("toolResponses")
                tasks.append(
                    {
                        "suite_key": key,
                        "task_pos": task_pos,
                        "task_id": task_id,
                        "kind": task["expected"]["kind"],
                        "has_trajectory": trajectory is not None,
                        "mode": trajectory["match"] if trajectory else None,
                        "include_delegates": bool(
                            trajectory and trajectory.get("includeDelegates")
                        ),
                        "expected_count": len(trajectory["calls"]) if trajectory else 0,
                        "has_fixtures": responses is not None,
                        "on_miss": (task.get("fixtures") or {}).get("onMiss"),
                    }
                )
                for pos, call in enumerate(trajectory["calls"] if trajectory else []):
                    expected.append(_call_row(key, task_id, pos, call))
                for tool in sorted(set(trajectory.get("forbidden", []) if trajectory else [])):
                    forbidden.append({"suite_key": key, "task_id": task_id, "tool": tool})
                for pos, entry in enumerate(responses or []):
                    fixtures.append(_call_row(key, task_id, pos, entry))
        return cls(
            docs=docs,
            tasks=pl.DataFrame(tasks, schema=SUITE_TASK_SCHEMA),
            expected=pl.DataFrame(expected, schema=CALL_SCHEMA),
            forbidden=pl.DataFrame(forbidden, schema=FORBIDDEN_SCHEMA),
            fixtures=pl.DataFrame(fixtures, schema=CALL_SCHEMA),
        )
