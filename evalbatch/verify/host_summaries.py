"""The EvalSummaries a host served (`GET /runs/{id}/eval-summary`): read, matched to runs, and
checked against the closed schema (§4, RFC 0244 §H).

`evalbatch verify --summaries` takes a summary as the host serves it, a `{"runId", "summary"}`
wrapper (as `evalbatch run` writes them), an array of either, or JSON lines. A bare summary
carries no runId, so it belongs to the one eval run of its suite id and version. The schema
check accepts the RFC 0081 fields the log cannot supply; comparing the fields themselves is
`summary_checks`' job.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from evalbatch.errors import InputError
from evalbatch.inputs import limits, suites
from evalbatch.jsonvalue import reject_constant

#: RFC 0081 summary fields the log cannot supply: accepted in a host summary, not compared (§4)
_RFC0081_TOP = {"pinnedNodeIds"}
_RFC0081_TASK = {"schemaValid", "safetyFindings"}
_REGRESSION_KEYS = {
    "baselineRunId",
    "scoreDelta",
    "diffRef",
    "verdict",
    "method",
    "alpha",
    "pairedTaskCount",
}
_SEVERITIES = {"low", "medium", "high", "critical"}


@dataclass(frozen=True)
class HostSummary:
    """An EvalSummary a host served, with the run it belongs to when the file says so."""

    run_id: str | None
    doc: Any
    origin: str  # file and line or item, for messages


def _strict_json(text: str) -> Any:
    """Strict JSON, refused with `limits.TooDeep` past the depth limit (E-115)."""
    return limits.loads(text, parse_constant=reject_constant)


def _summaries_in(value: Any, origin: str) -> list[HostSummary]:
    """`{"runId", "summary"}` wrappers (as `evalbatch run` writes them) or bare EvalSummaries,
    alone or in an array."""
    if isinstance(value, list):
        found: list[HostSummary] = []
        for index, item in enumerate(value):
            found += _summaries_in(item, f"{origin} item {index}")
        return found
    if isinstance(value, dict) and "summary" in value and isinstance(value.get("runId"), str):
        return [HostSummary(value["runId"], value["summary"], origin)]
    if isinstance(value, dict):
        return [HostSummary(None, value, origin)]
    raise InputError(f"{origin}: not an EvalSummary object")


def load_summaries(paths: Sequence[str | Path]) -> list[HostSummary]:
    """Read host summaries: a JSON document (one summary, a wrapper, or an array of them) or
    JSON lines (one per line, as `summaries.jsonl`).

    Raises:
        InputError: a file cannot be read, is not JSON, nests past the depth limit (E-115) or
            holds no summary (a file given to be checked that checks nothing, E-112).
    """
    found: list[HostSummary] = []
    for given in paths:
        path = Path(given)
        before = len(found)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot be read as a summary ({exc})") from exc
        deep: limits.TooDeep | None = None
        try:
            found += _summaries_in(_strict_json(text), str(path))
            if len(found) == before:
                raise InputError(f"{path}: holds no summary, so nothing of it could be checked")
            continue
        except limits.TooDeep as exc:  # one deep document, or JSON lines with a deep line
            deep = exc
        except (ValueError, RecursionError):
            pass
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = _strict_json(line)
            except limits.TooDeep as exc:
                raise InputError(f"{path}: line {number}: {exc}") from None
            except (ValueError, RecursionError) as exc:
                if deep is not None:
                    raise InputError(f"{path}: {deep}") from None
                raise InputError(f"{path}: line {number}: not JSON ({exc})") from exc
            found += _summaries_in(value, f"{path} line {number}")
        if len(found) == before:
            raise InputError(f"{path}: holds no summary, so nothing of it could be checked")
    return found


def assign_summaries(
    summaries: Sequence[HostSummary], eval_runs: pl.DataFrame
) -> dict[str, HostSummary]:
    """Which run each summary belongs to: named by its wrapper, else the one eval run of its
    suite id and version (a bare EvalSummary carries no runId)."""
    runs = {r["run_id"]: r for r in eval_runs.iter_rows(named=True)}
    by_suite: dict[tuple[Any, Any], list[str]] = defaultdict(list)
    for run_id, run in runs.items():
        by_suite[(run["suite_id"], run["suite_version"])].append(run_id)
    assigned: dict[str, HostSummary] = {}
    for summary in summaries:
        run_id = summary.run_id
        if run_id is None:
            doc = summary.doc if isinstance(summary.doc, dict) else {}
            candidates = by_suite.get((doc.get("suiteId"), doc.get("suiteVersion")), [])
            if len(candidates) != 1:
                raise InputError(
                    f"{summary.origin}: {len(candidates)} eval runs have this summary's suiteId "
                    'and suiteVersion; name its run with {"runId": ..., "summary": ...}'
                )
            run_id = candidates[0]
        if run_id not in runs:
            raise InputError(f"{summary.origin}: run {run_id} has no eval run in the events")
        if run_id in assigned:
            raise InputError(
                f"{summary.origin}: a second summary for run {run_id} "
                f"(first in {assigned[run_id].origin})"
            )
        assigned[run_id] = summary
    return assigned


def host_summary_faults(doc: Any) -> list[suites.Fault]:
    """Schema faults of a host summary: the packaged closed EvalSummary schema (§4, RFC 0244 §H),
    with the RFC 0081 fields the log cannot supply accepted (`pinnedNodeIds`, a task's
    `schemaValid` and `safetyFindings`, `regression` with or without the RFC 0244 members)."""
    if not isinstance(doc, dict):
        return suites.validate_summary(doc)
    own: list[suites.Fault] = []
    rest = {k: v for k, v in doc.items() if k not in _RFC0081_TOP and k != "regression"}
    pinned = doc.get("pinnedNodeIds", [])
    if not isinstance(pinned, list) or not all(isinstance(n, str) for n in pinned):
        own.append(suites.Fault("$.pinnedNodeIds", "must be an array of strings", "error"))
    regression = doc.get("regression", {})
    if not isinstance(regression, dict):
        own.append(suites.Fault("$.regression", "must be an object", "error"))
    else:
        for key in regression:
            if key not in _REGRESSION_KEYS:
                path = suites.format_path(("regression", key))
                own.append(suites.Fault(path, "unknown member (closed object)", "error"))
    if isinstance(doc.get("tasks"), list):
        rest["tasks"] = []
        for index, task in enumerate(doc["tasks"]):
            if not isinstance(task, dict):
                rest["tasks"].append(task)
                continue
            rest["tasks"].append({k: v for k, v in task.items() if k not in _RFC0081_TASK})
            own += _rfc0081_task_faults(task, index)
    return sorted(own + suites.validate_summary(rest), key=lambda f: (f.path, f.message))


def _rfc0081_task_faults(task: dict[str, Any], index: int) -> list[suites.Fault]:
    faults = []
    if "schemaValid" in task and not isinstance(task["schemaValid"], bool):
        faults.append(
            suites.Fault(
                suites.format_path(("tasks", index, "schemaValid")), "must be a boolean", "error"
            )
        )
    findings = task.get("safetyFindings", [])
    if not isinstance(findings, list):
        findings = [None]
    for j, item in enumerate(findings):
        where = ("tasks", index, "safetyFindings", j)
        if not isinstance(item, dict):
            faults.append(suites.Fault(suites.format_path(where), "must be an object", "error"))
            continue
        for key in item:
            if key not in ("kind", "severity"):
                path = suites.format_path((*where, key))
                faults.append(suites.Fault(path, "unknown member (closed object)", "error"))
        if not isinstance(item.get("kind"), str) or item.get("severity") not in _SEVERITIES:
            message = "needs a string kind and a severity of low, medium, high, critical"
            faults.append(suites.Fault(suites.format_path(where), message, "error"))
    return faults
