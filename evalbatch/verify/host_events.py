"""The host's own record in the log: its eval events as it wrote them, and each trial's judge
calls.

Grading reads the log through the extract stage, which keeps only what the grade needs; checking
the host needs each `eval.started`, `eval.scored` and `eval.completed` payload whole, read as a
strict JSON parser reads it (E-6), and the judge calls inside each counted trial, to recognise a
host that counted them in its efficiency figures (D-6). Both come from one pass over the files
(`sql/verify/verify_host_events.sql`, `sql/verify/verify_judge_usage.sql`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import polars as pl

from evalbatch.extract import sql_files, trial_tables
from evalbatch.inputs import event_files
from evalbatch.jsonvalue import reject_constant


@dataclass
class HostRecord:
    """The host's eval events (parsed payloads by (run, sequence)) and judge usage per trial."""

    payloads: dict[tuple[str, int], Any]
    scored: dict[str, list[int]]  # run -> eval.scored sequences, in order
    completed: dict[str, list[int]]  # run -> eval.completed sequences, in order (E-113)
    judge: dict[tuple[str, int], tuple[int, float, float]]  # (run, segment) -> calls, in, out


def _parse_payload(text: str | None) -> Any:
    """A payload as a strict JSON parser reads it (the last of repeated keys wins); a payload
    that is not JSON reads as having no fields (E-6)."""
    if text is None:
        return None
    try:
        return json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return None


def read_host(paths: list[str], trials: pl.DataFrame, engine: Mapping[str, Any]) -> HostRecord:
    """Read the host's eval events and the judge calls of every counted trial (one pass each)."""
    con = trial_tables.new_connection(engine.get("resources"))
    try:
        sources = event_files.scan(con, paths)
        if engine.get("run_filter") is not None:
            engine["run_filter"].apply(con, sources)
        bounds = trials.filter("counted").select(
            "run_id",
            "segment_no",
            "segment_start_seq",
            "scored_seq",
            "bracket_start_seq",
            "bracket_end_seq",
        )
        try:
            event_files.register(con, sources)
            rows = sql_files.relation(con, "verify_host_events").fetchall()
        except duckdb.Error:
            if not event_files.find_unreadable(con, sources):
                raise
            event_files.register(con, sources)
            rows = sql_files.relation(con, "verify_host_events").fetchall()
        con.register("verify_trials", bounds.to_arrow())
        judge_rows = sql_files.relation(con, "verify_judge_usage").fetchall()
    finally:
        con.close()
    payloads: dict[tuple[str, int], Any] = {}
    scored: dict[str, list[int]] = defaultdict(list)
    completed: dict[str, list[int]] = defaultdict(list)
    for run_id, sequence, type_, payload in sorted(rows, key=lambda r: (r[0], r[1])):
        payloads[(run_id, sequence)] = _parse_payload(payload)
        if type_ == "eval.scored":
            scored[run_id].append(sequence)
        elif type_ == "eval.completed":
            completed[run_id].append(sequence)
    judge = {
        (run_id, segment): (int(calls), float(tokens_in or 0), float(tokens_out or 0))
        for run_id, segment, calls, tokens_in, tokens_out in judge_rows
    }
    return HostRecord(
        payloads=payloads, scored=dict(scored), completed=dict(completed), judge=judge
    )
