"""What an observed call is, as explain shows it, and where it came from.

Every `agent.tool-called` inside a trial's bracket is read once per run: the grader's
`trial_calls` rows (§2.2; `call_pos` is the position the fixture replay walks, §3.3) joined with
`explain_calls`, which says where each call came from (the calling agent, D-2; none when the call
names none, E-13). A call of the observed trajectory is shown with its place in it and its partner
in the maximum matching; a call of the bracket that is not in the path (another agent's, when
delegates are not included) is shown beside it, so nothing the bracket holds is hidden. With
delegates included, a call made in a child run (E-102) names that run: its sequence is the child
run's own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import polars as pl

from evalbatch.explain.call_args import display_text
from evalbatch.extract import sql_files

#: the columns a call is known by in both relations
CALL_KEYS = ["run_id", "segment_no", "call_pos", "sequence"]


@dataclass(frozen=True)
class ObservedCall:
    """One call of a trial's bracket as shown: its place in the observed trajectory (None when
    it is not in it), its partner there, and where it came from (the calling agent)."""

    pos: int | None  # in the observed trajectory; None: not in it (another agent's call)
    call_pos: int | None  # among every call in the bracket; None for a child run's call
    sequence: int
    agent_id: str | None
    tool: str
    inputs: str | None  # JSON text (the text as written when it is not JSON)
    expected_pos: int | None  # its partner in the maximum matching
    forbidden: bool
    from_run_id: str | None = None  # the child run a delegated call was made in (E-102)


def read_calls(con: Any) -> pl.DataFrame:
    """Every call in a bracket of the extracted runs, with where it came from."""
    calls = sql_files.relation(con, "trial_calls").pl()
    origins = sql_files.relation(con, "explain_calls").pl()
    return calls.join(origins, on=CALL_KEYS, how="left")


def calls_by_segment(calls: pl.DataFrame, run_id: str) -> dict[int, list[dict[str, Any]]]:
    """The run's calls, per trial segment, in bracket order."""
    by_segment: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for c in calls.filter(pl.col("run_id") == run_id).sort("call_pos").iter_rows(named=True):
        by_segment[c["segment_no"]].append(c)
    return by_segment


def observed_call(
    call: dict[str, Any],
    origin: dict[str, Any] | None,
    pos: int | None,
    expected_pos: int | None,
    forbidden: bool,
) -> ObservedCall:
    """One call as shown. `call` is its row (a trajectory detail row or a bracket call), `origin`
    its bracket call, which says where it came from (None: the bracket has no such call). A call
    of a child run (E-102) names that run and its own agent, and has no place in the bracket."""
    from_run = call.get("from_run_id")
    if from_run is not None:
        agent_id = call.get("agent_id")
    else:
        agent_id = origin["agent_id"] if origin is not None else None
    return ObservedCall(
        pos=pos,
        call_pos=call["call_pos"],
        sequence=call["sequence"],
        agent_id=agent_id,
        tool=call["tool_name"],
        inputs=display_text(call["inputs"], call["exact_payload"]),
        expected_pos=expected_pos,
        forbidden=forbidden,
        from_run_id=from_run,
    )


def outside_path(bracket_calls: list[dict[str, Any]], in_path: set[int]) -> list[ObservedCall]:
    """The bracket's calls that are not in the observed trajectory (`in_path`: their call_pos)."""
    return [
        observed_call(c, c, None, None, False)
        for c in bracket_calls
        if c["call_pos"] not in in_path
    ]
