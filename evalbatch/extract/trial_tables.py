"""The SQL stage: event files in, one row per trial (plus its calls and usage) out (§2).

The queries live in `sql/`; this module runs them in order: the events pass (`events_pass`: one
scan of the event files that parses each payload once, with the checks SQL cannot make exactly),
the per-type relations read off it, then the eval spans, trial segments, calls and usage in
Polars (`segments`), and, for suites that include delegates, the child runs the trials name
(`delegates`, E-102).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import polars as pl

from evalbatch.extract import delegates, events_pass, inspect_names, segments, sql_files
from evalbatch.extract.events_pass import register_frame
from evalbatch.inputs import event_files

#: the connection every pass of the stage runs on (UTC, the shared macros, `Resources` applied)
new_connection = events_pass.new_connection

#: the stage's relations built in Python, registered in the connection under these names (the
#: queries of sql/ read them as tables), with what a row is and which rules decide the rows: the
#: events pass's, the spans and trials', and what trials read from child runs
FRAMES: dict[str, str] = {
    **events_pass.FRAMES,
    **segments.FRAMES,
    **delegates.FRAMES,
}

#: the queries that read the events: the per-type relations (sql/typed) and the runs whose costs
#: come from provider.usage (sql/trials); the eval spans, trial segments, calls and usage are
#: then built from the per-type relations in Polars (`segments.FRAMES`), and `event_problems`
#: and `usage_problems` are read from them when asked for
PIPELINE = (
    "tool_called_events",
    "usage_events",
    "bracket_events",
    "scored_events",
    "started_events",
    "inspect_events",
    "run_cost_source",
)
#: the queries of `PIPELINE` whose rows are fetched once into Polars (for `segments`) and
#: registered under their own name, rather than stored in DuckDB as well: named, so a query
#: added to `PIPELINE` is stored unless it is named here too (E-134)
FETCHED = frozenset(
    {
        "tool_called_events",
        "usage_events",
        "bracket_events",
        "scored_events",
        "started_events",
        "inspect_events",
    }
)
#: what the stage's queries read that no query of the stage defines: the batch's event files
STAGE_INPUTS = frozenset({"source_events"})
# each query of the stage reads only its inputs and the queries run before it (E-134), checked as
# the stage is loaded: a query moved before one it reads fails here, not in a batch's rows
sql_files.check_order((*events_pass.EVENTS_PASS, *PIPELINE), STAGE_INPUTS)


@dataclass
class Extraction:
    """Everything grading needs, as Polars frames (small next to the events)."""

    eval_runs: pl.DataFrame
    trial_segments: pl.DataFrame
    trial_usage: pl.DataFrame
    trial_calls: pl.DataFrame
    cost_source_runs: set[str]
    event_problems: pl.DataFrame  # run_id, sequence, code, message
    usage_problems: pl.DataFrame  # run_id, segment_no, sequence, code
    #: what trials read from child runs (E-102): empty unless a suite includes delegates
    delegates: delegates.DelegateFrames = field(default_factory=delegates.DelegateFrames)
    #: what an ingested Inspect log calls each run and trial (E-146): `inspect_names`' frames,
    #: empty for any other log
    run_names: pl.DataFrame = field(default_factory=pl.DataFrame)
    trial_names: pl.DataFrame = field(default_factory=pl.DataFrame)


@dataclass
class EventTables:
    """One batch after the part of the SQL stage that reads its events: the eval runs, the rows
    of the per-type relations (by name) and what is read off the events themselves. The trials
    are placed from these alone (`segment_trials`), so the local engine does that on the grading
    thread while the worker reads the next batch's events."""

    eval_runs: pl.DataFrame
    typed: dict[str, pl.DataFrame]
    cost_source_runs: set[str]
    event_problems: pl.DataFrame  # run_id, sequence, code


def _read_events(
    con: duckdb.DuckDBPyConnection, sources: event_files.Sources, runs: event_files.RunRange | None
) -> tuple[list[tuple[str, int]], dict[str, pl.DataFrame], pl.DataFrame]:
    """The events pass, the per-type relations (fetched, and registered under their names) and
    the eval runs (registered as `eval_runs`); returns the conflicting (run, sequence) keys, the
    per-type rows and the eval runs."""
    conflicts = events_pass.events_pass(con, sources, runs)
    typed: dict[str, pl.DataFrame] = {}
    for name in PIPELINE:  # in its order, which `check_order` holds to what each query reads
        if name in FETCHED:
            typed[name] = sql_files.relation(con, name).pl()
            register_frame(con, name, typed[name])
        else:
            sql_files.materialize(con, name)
    eval_runs = segments.eval_runs(typed["started_events"], segments.completed_events(con))
    register_frame(con, "eval_runs", eval_runs)
    return conflicts, typed, eval_runs


def _event_problems(
    con: duckdb.DuckDBPyConnection, conflicts: list[tuple[str, int]]
) -> pl.DataFrame:
    """event_problems, with a row per conflicting key (D-3)."""
    event_problems = sql_files.relation(con, "event_problems").pl()
    if not conflicts:
        return event_problems
    conflict_frame = pl.DataFrame(
        {
            "run_id": [run for run, _ in conflicts],
            "sequence": [seq for _, seq in conflicts],
            "code": ["event-conflict"] * len(conflicts),
        },
        schema=event_problems.schema,
    )
    return pl.concat([event_problems, conflict_frame]).sort(["run_id", "sequence", "code"])


def _cost_source_runs(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {row[0] for row in con.sql("SELECT run_id FROM run_cost_source").fetchall()}


def _extraction(
    con: duckdb.DuckDBPyConnection,
    tables: EventTables,
    frames: dict[str, pl.DataFrame],
    read: delegates.DelegateFrames,
) -> Extraction:
    """The extraction of a batch whose trial frames (`segments.FRAMES`) are registered in
    `con` (usage_problems reads them)."""
    return Extraction(
        eval_runs=frames["eval_runs"].sort("run_id"),
        trial_segments=frames["trial_segments"].sort("run_id", "segment_no"),
        trial_usage=frames["trial_usage"].sort("run_id", "segment_no"),
        trial_calls=frames["trial_calls"].sort("run_id", "segment_no", "call_pos"),
        cost_source_runs=tables.cost_source_runs,
        event_problems=tables.event_problems,
        usage_problems=sql_files.relation(con, "usage_problems").pl(),
        delegates=read,
        run_names=inspect_names.run_names(tables.typed["inspect_events"]),
        trial_names=inspect_names.trial_names(tables.typed["inspect_events"]),
    )


def _placed(
    con: duckdb.DuckDBPyConnection, eval_runs: pl.DataFrame, typed: dict[str, pl.DataFrame]
) -> dict[str, pl.DataFrame]:
    """The trial frames (`segments.FRAMES`), registered in `con` under their names."""
    frames = segments.placed_frames(eval_runs, typed)
    for name, frame in frames.items():
        register_frame(con, name, frame)
    return frames


def read_events(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources | list[str],
    runs: event_files.RunRange | None = None,
) -> EventTables:
    """The part of `extract` that reads the events, for a batch whose suites include no
    delegates (those read child runs from the placed trials): `segment_trials` finishes it. A
    damaged file is reported and left out as in `extract`."""
    if not isinstance(sources, event_files.Sources):
        sources = event_files.scan(con, sources)
    conflicts, typed, eval_runs = event_files.leaving_out_damaged(
        con, sources, lambda: _read_events(con, sources, runs)
    )
    return EventTables(eval_runs, typed, _cost_source_runs(con), _event_problems(con, conflicts))


def segment_trials(con: duckdb.DuckDBPyConnection, tables: EventTables) -> Extraction:
    """Finish `read_events`: the trials placed in their segments, their calls and usage
    (`segments`, Polars alone) and the usage problems, read on `con` (any connection: the
    events are not read again)."""
    frames = _placed(con, tables.eval_runs, tables.typed)
    return _extraction(con, tables, frames, delegates.DelegateFrames())


def extract(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources | list[str],
    runs: event_files.RunRange | None = None,
    delegate_suites: frozenset[tuple[str, str]] = frozenset(),
) -> Extraction:
    """Run the SQL stage over the event files (`sources`, or paths to scan), for the runs of one
    batch (a range of run ids) or for all runs. The trials of eval runs of `delegate_suites`
    (suiteId, version: those with a task that includes delegates) also read the child runs
    their brackets name (E-102).

    A file whose data pages turn out to be damaged is reported and left out, and the stage runs
    again over the other files (§6: a broken file never costs the good ones).
    """
    if not isinstance(sources, event_files.Sources):
        sources = event_files.scan(con, sources)
    checked = sources

    def build() -> tuple[
        list[tuple[str, int]],
        dict[str, pl.DataFrame],
        dict[str, pl.DataFrame],
        delegates.DelegateFrames,
    ]:
        conflicts, typed, eval_runs = _read_events(con, checked, runs)
        frames = _placed(con, eval_runs, typed)
        read = delegates.DelegateFrames()
        if delegate_suites:
            wanted = frames["eval_runs"].filter(
                pl.struct("suite_id", "suite_version").is_in(
                    [{"suite_id": s, "suite_version": v} for s, v in sorted(delegate_suites)]
                )
            )
            if wanted.height:
                read = delegates.read_delegates(
                    con,
                    checked,
                    frames["trial_segments"],
                    wanted,
                    frozenset(wanted["run_id"].to_list()),
                )
        register_frame(con, "trial_delegate_calls", read.calls)
        register_frame(con, "trial_delegate_faults", read.faults)
        register_frame(con, "run_delegates", read.runs)
        return conflicts, typed, frames, read

    conflicts, typed, frames, read = event_files.leaving_out_damaged(con, sources, build)
    # problems and cost sources are read after the retries: only what was kept counts
    tables = EventTables(
        frames["eval_runs"], typed, _cost_source_runs(con), _event_problems(con, conflicts)
    )
    return _extraction(con, tables, frames, read)
