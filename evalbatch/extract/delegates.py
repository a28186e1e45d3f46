"""Delegated and fanned-out work that ran as child runs, read into the trials that include
delegates (RFC 0244 §A, UQ 2; E-102).

In OpenWOP a delegate or a fan-out child runs as a run of its own, with its own event log: a
`node.dispatched` or `workflow-chain.event` names it by `childRunId`, and a `dispatch.joined` lists
the children it merged, in `mergeOrder` (`sql/typed/dispatch_events.sql`). With
`trajectory.includeDelegates: true` a trial's observed trajectory is every agent.tool-called in its
bracket and, at the place of each child named inside the bracket, every agent.tool-called of the
child's run, in the child's sequence order, its own children read the same way (recursively).

Where a child's calls stand (E-102): at the first event of the scope (the trial's bracket, or the
whole run of a child) that names it. Children a `dispatch.joined` merged stand together, in
`mergeOrder`, at the first event that names any of them; a child two joins list belongs to the
first. The order of a call is a key, a list of integers compared element by element: a call of
the trial's own run is `[sequence]`, a call of a child placed at event `a` in slot `s` of its scope
is `[a, s] + the child's own key`; one sort on it gives the observed order.

A trial never passes on evidence that is not there (E-102): a named child with no event in the
input (`delegate-log-missing`), a child whose log cannot be read whole or an event that hides
which children ran (`delegate-log-invalid`), a child already on the path from the trial — the
parent itself included — (`delegate-cycle`, never followed, so no cycle can hang the read), or a
child that is an eval run of another suite (`delegate-suite-mismatch`) is a fault of the trial
(`trial_delegate_faults`), whose trajectory is then unmatched when its task includes delegates.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import duckdb
import polars as pl

from evalbatch.extract import events_pass, sql_files
from evalbatch.inputs import event_files

#: the frames this module builds, registered under these names, with what a row is and its rule
FRAMES: dict[str, str] = {
    "trial_delegate_calls": (
        "One row per agent.tool-called of a child run a trial's bracket names, at any depth "
        "(E-102): the trial (run_id, segment_no), the call's order key in the trial's observed "
        "trajectory (call_order), the child run it was called in (from_run_id) and its sequence "
        "there, the calling agent, the tool and its inputs (D-2, D-7)."
    ),
    "trial_delegate_faults": (
        "One row per trial and child run whose calls cannot be read (E-102): "
        "delegate-log-missing, delegate-log-invalid, delegate-cycle or "
        "delegate-suite-mismatch, at the event of the trial's bracket that led to it."
    ),
    "run_delegates": (
        "One row per eval run and child run its trials read, at any depth (E-102): the child's "
        "events fingerprint, or null when its log is missing (E-50: a changed child regrades "
        "the parent)."
    ),
}

#: the dispatch events' relation, and the faults of a child's log, read from `events`
DISPATCH_EVENTS = "dispatch_events"
#: the codes of a trial's delegate faults (problems.CODES), most telling first
FAULT_CODES = (
    "delegate-log-missing",
    "delegate-log-invalid",
    "delegate-cycle",
    "delegate-suite-mismatch",
)

_TRIAL = ("run_id", "segment_no")
_CALLS_SCHEMA = pl.Schema(
    {
        "run_id": pl.String(),
        "segment_no": pl.Int64(),
        "call_order": pl.List(pl.Int64),
        "from_run_id": pl.String(),
        "sequence": pl.Int64(),
        "agent_id": pl.String(),
        "tool_name": pl.String(),
        "inputs": pl.String(),
        "exact_payload": pl.String(),
    }
)
_FAULTS_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "segment_no": pl.Int64,
        "sequence": pl.Int64,
        "code": pl.String,
        "child_run_id": pl.String,
    }
)
_RUN_DELEGATES_SCHEMA = pl.Schema(
    {"run_id": pl.String, "child_run_id": pl.String, "fingerprint": pl.String}
)


@dataclass
class DelegateFrames:
    """What the trials of one batch read from child runs (see `FRAMES`)."""

    calls: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_CALLS_SCHEMA))
    faults: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_FAULTS_SCHEMA))
    runs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_RUN_DELEGATES_SCHEMA))


# --------------------------------------------------------------------------------------------
# Where each child stands in its scope


def _slots(refs: pl.DataFrame, scope: Sequence[str]) -> pl.DataFrame:
    """Each child a scope names, with where its calls stand (E-102): `anchor`, the sequence of
    the first event of the scope naming it, or of any child of its join; `slot`, its place among
    the scope's children (by anchor, then mergeOrder, then run id)."""
    scope = list(scope)
    named = (
        refs.filter("readable")
        .with_columns(rank=pl.int_ranges(pl.col("children").list.len()))
        .explode(["children", "rank"])
        .filter(pl.col("children").is_not_null())
        .rename({"children": "child_run_id"})
    )
    keys = [*scope, "child_run_id"]
    first = named.group_by(keys).agg(first_seq=pl.col("sequence").min())
    joins = (
        named.filter("joined")
        .sort("sequence")
        .group_by(keys, maintain_order=True)
        .agg(join_seq=pl.col("sequence").first(), rank=pl.col("rank").first())
    )
    return (
        first.join(joins, on=keys, how="left")
        .with_columns(
            anchor=pl.when(pl.col("join_seq").is_not_null())
            .then(pl.col("first_seq").min().over([*scope, "join_seq"]))
            .otherwise(pl.col("first_seq")),
            rank=pl.col("rank").fill_null(0),
        )
        .sort([*scope, "anchor", "rank", "child_run_id"])
        .with_columns(slot=pl.int_range(pl.len(), dtype=pl.Int64).over(scope))
        .select(*keys, "anchor", "slot")
    )


def _in_brackets(refs: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """The dispatch events strictly inside a trial's bracket (as its calls are, E-12), each with
    its trial: the latest bracket starting before the event, if the event is before its end."""
    brackets = (
        segments.filter("has_bracket")
        .select("run_id", "segment_no", "bracket_start_seq", "bracket_end_seq")
        .sort("run_id", "bracket_start_seq")
    )
    return (
        refs.sort("run_id", "sequence")
        .join_asof(
            brackets,
            left_on="sequence",
            right_on="bracket_start_seq",
            by="run_id",
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .filter(pl.col("sequence").lt(pl.col("bracket_end_seq")).fill_null(False))
        .drop("bracket_start_seq", "bracket_end_seq")
    )


# --------------------------------------------------------------------------------------------
# Reading child runs


@dataclass
class _ChildLogs:
    """The child runs read so far: which were asked for, which are there, which cannot be read
    whole, their calls, the children they name, the suite each eval child claims, and each one's
    fingerprint."""

    asked: set[str] = field(default_factory=set)
    present: set[str] = field(default_factory=set)
    invalid: set[str] = field(default_factory=set)
    calls: pl.DataFrame | None = None
    slots: pl.DataFrame | None = None
    suites: dict[str, str] = field(default_factory=dict)  # run -> "suiteId@version"
    fingerprints: dict[str, str] = field(default_factory=dict)

    def add(self, calls: pl.DataFrame, slots: pl.DataFrame) -> None:
        self.calls = calls if self.calls is None else pl.concat([self.calls, calls])
        self.slots = slots if self.slots is None else pl.concat([self.slots, slots])


def _read_children(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources,
    run_ids: Sequence[str],
    logs: _ChildLogs,
) -> None:
    """Read the runs `run_ids` whole, through the events pass that reads eval runs (D-3
    duplicates, strict JSON: D-7, E-26, E-61), on a connection of its own so the batch's
    relations stay as they are. Every file is read, whatever runs a filter or an incremental
    run chose: a child is read because a chosen run names it."""
    logs.asked |= set(run_ids)
    child = con.cursor()
    try:
        events_pass.prepare(child, parent=con)
        every = dataclasses.replace(sources, only_runs=None)
        event_files.register(child, every, None)
        child.register("__evalbatch_children", pl.DataFrame({"run_id": run_ids}).to_arrow())
        child.execute("CREATE OR REPLACE TEMP TABLE eval_run_ids AS FROM __evalbatch_children")
        conflicts = events_pass.events_pass(child, every, None, chosen_runs=True)
        logs.present |= {r for (r,) in child.sql("SELECT DISTINCT run_id FROM events").fetchall()}
        logs.invalid |= {run for run, _ in conflicts}
        logs.invalid |= {r for (r,) in sql_files.relation(child, "delegate_log_faults").fetchall()}
        refs = sql_files.relation(child, DISPATCH_EVENTS).pl()
        logs.invalid |= set(refs.filter(~pl.col("readable"))["run_id"].to_list())
        logs.add(
            sql_files.relation(child, "tool_called_events")
            .pl()
            .select("run_id", "sequence", "agent_id", "tool_name", "inputs", "exact_payload"),
            _slots(refs, ["run_id"]),
        )
        started = (
            sql_files.relation(child, "started_events")
            .pl()
            .sort("run_id", "sequence")
            .group_by("run_id", maintain_order=True)
            .first()
        )
        logs.suites.update(
            (run, f"{suite}@{version}")
            for run, suite, version in started.select(
                "run_id", "suite_id", "suite_version"
            ).iter_rows()
        )
        logs.fingerprints.update(sql_files.relation(child, "batch_fingerprints").fetchall())
    finally:
        child.close()


# --------------------------------------------------------------------------------------------
# The walk from each trial down its children


def _fault(logs: _ChildLogs) -> pl.Expr:
    """Why a child of the frontier cannot be read, in the order of `FAULT_CODES`' telling: on
    the path already, not in the input, not readable whole, or an eval run of another suite."""
    child = pl.col("child_run_id")
    claimed = child.replace_strict(logs.suites, default=None, return_dtype=pl.String)
    return (
        pl.when(pl.col("path").list.contains(child))
        .then(pl.lit("delegate-cycle"))
        .when(~child.is_in(sorted(logs.present)))
        .then(pl.lit("delegate-log-missing"))
        .when(child.is_in(sorted(logs.invalid)))
        .then(pl.lit("delegate-log-invalid"))
        .when(claimed.is_not_null() & claimed.ne_missing(pl.col("root_suite")))
        .then(pl.lit("delegate-suite-mismatch"))
    )


def _walk(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources,
    frontier: pl.DataFrame,
) -> tuple[list[pl.DataFrame], list[pl.DataFrame], list[pl.DataFrame], _ChildLogs]:
    """From the children the trials' brackets name down, one depth at a time: the calls found,
    the faults, and every (eval run, child run) read. `frontier` holds run_id, segment_no,
    child_run_id, root_suite, root_seq, prefix (the order key of the child's place) and path
    (the runs from the trial's down to the child's parent). Each child run is read once,
    however many trials name it; a child on its own path is a fault, never read again."""
    logs = _ChildLogs()
    calls: list[pl.DataFrame] = []
    faults: list[pl.DataFrame] = []
    visited: list[pl.DataFrame] = []
    while frontier.height:
        unread = sorted(set(frontier["child_run_id"].to_list()) - logs.asked)
        if unread:
            _read_children(con, sources, unread, logs)
        visited.append(frontier.select("run_id", "child_run_id"))
        frontier = frontier.with_columns(code=_fault(logs))
        faults.append(
            frontier.filter(pl.col("code").is_not_null()).select(
                *_TRIAL, sequence="root_seq", code="code", child_run_id="child_run_id"
            )
        )
        readable = frontier.filter(pl.col("code").is_null()).drop("code")
        assert logs.calls is not None and logs.slots is not None  # read above, or before
        calls.append(
            readable.join(logs.calls, left_on="child_run_id", right_on="run_id").select(
                *_TRIAL,
                call_order=pl.concat_list("prefix", "sequence"),
                from_run_id="child_run_id",
                sequence="sequence",
                agent_id="agent_id",
                tool_name="tool_name",
                inputs="inputs",
                exact_payload="exact_payload",
            )
        )
        frontier = readable.join(
            logs.slots.rename({"run_id": "parent_run_id", "child_run_id": "next_run_id"}),
            left_on="child_run_id",
            right_on="parent_run_id",
        ).select(
            *_TRIAL,
            child_run_id="next_run_id",
            root_suite="root_suite",
            root_seq="root_seq",
            prefix=pl.concat_list("prefix", "anchor", "slot"),
            path=pl.concat_list("path", "child_run_id"),
        )
    return calls, faults, visited, logs


def read_delegates(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources,
    segments: pl.DataFrame,
    eval_runs: pl.DataFrame,
    runs: frozenset[str],
) -> DelegateFrames:
    """The calls of the child runs each trial of the eval runs `runs` names inside its bracket
    (E-102), the trials' faults, and the child runs each eval run read (for its fingerprint)."""
    refs = (
        sql_files.relation(con, DISPATCH_EVENTS).pl().filter(pl.col("run_id").is_in(sorted(runs)))
    )
    placed = _in_brackets(refs, segments)
    if placed.is_empty():
        return DelegateFrames()
    unreadable = placed.filter(~pl.col("readable")).select(
        *_TRIAL,
        "sequence",
        code=pl.lit("delegate-log-invalid"),
        child_run_id=pl.lit(None, pl.String),
    )
    root_suites = eval_runs.select(
        "run_id", root_suite=pl.format("{}@{}", "suite_id", "suite_version")
    )
    frontier = (
        _slots(placed, _TRIAL)
        .join(root_suites, on="run_id", how="left")
        .select(
            *_TRIAL,
            "child_run_id",
            "root_suite",
            root_seq="anchor",
            prefix=pl.concat_list("anchor", "slot"),
            path=pl.concat_list("run_id"),
        )
    )
    calls, faults, visited, logs = _walk(con, sources, frontier)
    read = (
        pl.concat([pl.DataFrame(schema={"run_id": pl.String, "child_run_id": pl.String}), *visited])
        .unique()
        .sort("run_id", "child_run_id")
    )
    return DelegateFrames(
        calls=pl.concat([pl.DataFrame(schema=_CALLS_SCHEMA), *calls], how="vertical_relaxed")
        .cast(_CALLS_SCHEMA)
        .sort(*_TRIAL, "call_order"),
        faults=pl.concat(
            [pl.DataFrame(schema=_FAULTS_SCHEMA), unreadable, *faults], how="vertical_relaxed"
        )
        .cast(_FAULTS_SCHEMA)
        .unique()
        .sort(*_TRIAL, "sequence", "code", "child_run_id", nulls_last=True),
        runs=read.with_columns(
            fingerprint=pl.col("child_run_id").replace_strict(
                logs.fingerprints, default=None, return_dtype=pl.String
            )
        ).cast(_RUN_DELEGATES_SCHEMA),
    )


def with_delegates(own: str, children: Mapping[str, str | None]) -> str:
    """A run's events fingerprint covering the child runs its trials read (E-50, E-102): its own
    when it read none, else its own with a digest of each child's fingerprint (`missing` for a
    log that was not there), so a changed, added or removed child log changes it."""
    if not children:
        return own
    lines = "\n".join(f"{run}={children[run] or 'missing'}" for run in sorted(children))
    return f"{own}+{hashlib.sha256(lines.encode('utf-8')).hexdigest()[:32]}"
