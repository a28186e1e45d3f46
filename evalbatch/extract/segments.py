"""Eval spans, trial segments, brackets, calls and usage in O(n) Polars expressions (§2.1, §2.2).

The per-type relations (sql/typed) are fetched once each; every event is placed in its run's eval
span and trial segment by one sort on (run, sequence) and a running count of `eval.scored`
(E-2), instead of as-of joins per type; brackets, calls and usage sums are joins and group-bys on
(run, segment). The frames keep the names and columns of the queries they replace, so grading
and the analyst views read them as before.
"""

from __future__ import annotations

import duckdb
import polars as pl

#: the trial segment frames, in the order they are built, each with what a row is and its rules
FRAMES: dict[str, str] = {
    "eval_runs": (
        "One row per eval run (§2.1): where the eval starts (its first eval.started) and ends "
        "(the first eval.completed after it), how often it started, and the eval.started fields "
        "grading reads (each the first non-null one by sequence)."
    ),
    "span_scored": (
        "The eval.scored events inside each eval's span (after its only eval.started, before "
        "eval.completed: §2.1, E-2), numbered per run: an eval.scored closes trial segment "
        "`segment_no`, which starts after the previous eval.scored (or the eval.started) at "
        "`segment_start_seq`."
    ),
    "span_calls": (
        "The agent.tool-called events inside each eval's span, each with the trial segment it "
        "sits in: the number of the span's eval.scored before it (§2.1, E-2)."
    ),
    "span_usage": (
        "The provider.usage events inside each eval's span, each with the trial segment it sits "
        "in (§2.1, E-2)."
    ),
    "span_brackets": (
        "The invocation bracket events inside each eval's span, each with the trial segment it "
        "sits in (§2.1, E-2)."
    ),
    "trial_segments": (
        "One row per eval.scored inside the eval span: its trial segment (§2.1), the segment's "
        "bracket (the first agent.invocation-started, its own fields nulls included: E-62, "
        "through the first agent.invocation-completed after it with the same invocationId, else "
        "through the segment's end), and the host record (§2.2)."
    ),
    "trial_calls": (
        "One row per agent.tool-called inside a trial's bracket, in sequence order (§2.2): the "
        "calls the fixture replay walks (all agents, §3.3) and, filtered to the target agent "
        "unless includeDelegates, the observed trajectory (§3.1)."
    ),
    "trial_usage": (
        "Per trial segment: efficiency counts inside the bracket (§2.2, RFC 0244 §C) and the USD "
        "cost of every provider.usage in the segment, judge calls included (D-6, D-14): cache "
        "hits cost 0, other currencies and invalid costs are left out; exact decimals."
    ),
}

#: a trial segment's key while the frames are built: the run's dense number (in run-id order, so
#: sorting on it sorts on run id) and the segment's number in its run
_SEGMENT = ("run_no", "segment_no")
#: the exact decimal type of costs (DuckDB's DECIMAL(38, 18))
_COST = pl.Decimal(38, 18)


def _fetch(con: duckdb.DuckDBPyConnection, query: str) -> pl.DataFrame:
    return con.sql(query).pl()


def eval_runs(started: pl.DataFrame, completed: pl.DataFrame) -> pl.DataFrame:
    """One row per eval run (§2.1): as sql's arg_min, each field is the first non-null one.

    A run whose every eval.started has an unusable sequence is an eval run all the same (E-1),
    not graded (`sequence-invalid`, E-3): its start_seq is null and its fields are read from
    those rows in the order of their values, so every command names the run and its suite."""
    fields = [c for c in started.columns if c not in ("run_id", "sequence")]
    placed = started.filter(pl.col("sequence").is_not_null())
    starts = (
        placed.sort("run_id", "sequence")
        .group_by("run_id", maintain_order=True)
        .agg(
            pl.col("sequence").first().alias("start_seq"),
            pl.len().cast(pl.Int64).alias("started_count"),
            *[pl.col(c).drop_nulls().first() for c in fields],
        )
    )
    unplaced = started.filter(
        pl.col("sequence").is_null() & ~pl.col("run_id").is_in(placed["run_id"].implode())
    )
    if unplaced.height:
        loose = (
            unplaced.sort("run_id", *fields, nulls_last=True)
            .group_by("run_id", maintain_order=True)
            .agg(
                pl.col("sequence").first().alias("start_seq"),
                pl.len().cast(pl.Int64).alias("started_count"),
                *[pl.col(c).drop_nulls().first() for c in fields],
            )
        )
        starts = pl.concat([starts, loose]).sort("run_id")
    ends = (
        completed.join(starts.select("run_id", "start_seq"), on="run_id")
        .filter(pl.col("start_seq").lt(pl.col("sequence")))
        .group_by("run_id")
        .agg(end_seq=pl.col("sequence").min())
    )
    return starts.join(ends, on="run_id", how="left", maintain_order="left")


def _in_span(events: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """The events after their run's only eval.started and before its eval.completed (E-2), with
    their run's number (`run_no`, dense, in run order) for sorting on integers."""
    bounds = (
        runs.with_row_index("run_no")
        .filter(pl.col("started_count") == 1)
        .select("run_id", "run_no", "start_seq", "end_seq")
    )
    return (
        events.join(bounds, on="run_id")
        .filter(
            pl.col("start_seq").lt(pl.col("sequence"))
            & (pl.col("end_seq").is_null() | pl.col("sequence").lt(pl.col("end_seq")))
        )
        .drop("end_seq")
    )


def place(runs: pl.DataFrame, frames: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The events of each frame inside the eval span, each with its trial segment (§2.1, E-2):
    the number of the span's eval.scored before it, a running count over one sort of the keys
    alone (run number, sequence) on which each frame's own rows are never moved. `frames` holds
    `span_scored`'s source (scored_events) under that name; its events close their segment
    (numbered from 0, starting after the previous eval.scored or the eval.started)."""
    in_span = {name: _in_span(frame, runs) for name, frame in frames.items()}
    keys = pl.concat(
        [
            frame.select("run_no", "sequence", scored=pl.lit(name == "span_scored"))
            for name, frame in in_span.items()
        ]
    )
    order = keys.select(pl.arg_sort_by("run_no", "sequence", maintain_order=True)).to_series()
    running = (
        keys[order].select(pl.col("scored").cast(pl.Int64).cum_sum().over("run_no")).to_series()
    )
    segment = pl.zeros(keys.height, pl.Int64, eager=True).scatter(order, running)
    placed: dict[str, pl.DataFrame] = {}
    offset = 0
    for name, frame in in_span.items():
        numbers = segment.slice(offset, frame.height)
        offset += frame.height
        if name == "span_scored":
            placed[name] = (
                frame.with_columns(segment_no=numbers - 1)
                .sort("run_no", "sequence", maintain_order=True)
                .with_columns(
                    segment_start_seq=pl.col("sequence")
                    .shift()
                    .over("run_no")
                    .fill_null(pl.col("start_seq"))
                )
                .drop("start_seq")
            )
        else:
            placed[name] = frame.with_columns(segment_no=numbers).drop("start_seq")
    return placed


def trial_segments(scored: pl.DataFrame, brackets: pl.DataFrame) -> pl.DataFrame:
    """One row per span eval.scored with its segment's bracket (§2.1, E-62)."""
    first_start = (
        brackets.filter(pl.col("type") == "agent.invocation-started")
        .sort(*_SEGMENT, "sequence", maintain_order=True)
        .group_by(_SEGMENT, maintain_order=True)
        .first()
        .select(
            *_SEGMENT,
            start_seq="sequence",
            start_ts="ts",
            start_invocation="invocation_id",
            target_agent_id="agent_id",
            model_class="model_class",
        )
    )
    bracket_end = (
        brackets.filter(pl.col("type") == "agent.invocation-completed")
        .join(first_start.select(*_SEGMENT, "start_seq", "start_invocation"), on=_SEGMENT)
        .filter(
            pl.col("start_seq").lt(pl.col("sequence"))
            & pl.col("invocation_id").eq(pl.col("start_invocation"))
        )
        .sort(*_SEGMENT, "sequence", maintain_order=True)
        .group_by(_SEGMENT, maintain_order=True)
        .first()
        .select(*_SEGMENT, end_seq="sequence", end_ts="ts")
    )
    joined = scored.join(first_start, on=_SEGMENT, how="left", maintain_order="left").join(
        bracket_end, on=_SEGMENT, how="left", maintain_order="left"
    )
    # in 128 bits: two timestamps 290,000 years apart overflow 64-bit microseconds (E-81)
    end_us = pl.coalesce("end_ts", "ts").dt.epoch("us").cast(pl.Int128)
    span_us = end_us - pl.col("start_ts").dt.epoch("us").cast(pl.Int128)
    return joined.select(
        "run_id",
        "run_no",
        "segment_no",
        scored_seq="sequence",
        segment_start_seq="segment_start_seq",
        task_id="task_id",
        trial_index_present="trial_index_present",
        trial_index="trial_index",
        host_score="host_score",
        host_passed="host_passed",
        host_latency_ms="host_latency_ms",
        host_cost_present="host_cost_present",
        host_cost_usd="host_cost_usd",
        has_bracket=pl.col("start_seq").is_not_null(),
        bracket_closed=pl.col("end_seq").is_not_null(),
        bracket_start_seq="start_seq",
        bracket_end_seq=pl.coalesce("end_seq", "sequence"),
        target_agent_id="target_agent_id",
        model_class="model_class",
        bracket_span_ms=pl.when(pl.col("start_seq").is_not_null()).then(
            span_us.cast(pl.Float64) / 1000.0
        ),
    )


#: strictly between the bracket's start and end (E-12); never without a bracket
_IN_BRACKET = (
    pl.col("bracket_start_seq").lt(pl.col("sequence"))
    & pl.col("sequence").lt(pl.col("bracket_end_seq"))
).fill_null(False)


def trial_calls(segments: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """The calls inside each trial's bracket, numbered in sequence order (§2.2, §3.3)."""
    bounds = segments.select(*_SEGMENT, "bracket_start_seq", "bracket_end_seq", "target_agent_id")
    # the calls are sorted by segment: a call's position is its row's distance from the
    # segment's first row (no window over the segment keys)
    row = pl.int_range(pl.len(), dtype=pl.Int32)
    segment_starts = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift()) for c in _SEGMENT)
    return (
        calls.join(bounds, on=_SEGMENT)
        .filter(_IN_BRACKET)
        .sort(*_SEGMENT, "sequence", maintain_order=True)
        .select(
            "run_id",
            *_SEGMENT,
            call_pos=row - pl.when(segment_starts).then(row).forward_fill(),
            sequence="sequence",
            tool_name="tool_name",
            by_target=(pl.col("agent_id") == pl.col("target_agent_id")).fill_null(False),
            inputs="inputs",
            exact_payload="exact_payload",
        )
    )


def trial_usage(segments: pl.DataFrame, calls: pl.DataFrame, usage: pl.DataFrame) -> pl.DataFrame:
    """Per trial: efficiency counts in the bracket, the USD cost of the whole segment (D-6,
    D-14: cache hits cost 0; other currencies and invalid costs left out)."""
    bounds = segments.select(*_SEGMENT, "bracket_start_seq", "bracket_end_seq")
    in_bracket = _IN_BRACKET
    usd = pl.when((pl.col("cost_state") == "ok") & pl.col("currency_usd")).then(
        pl.when(pl.col("cache_hit"))
        .then(pl.lit(0).cast(_COST))
        .otherwise(pl.col("cost_usd_estimate"))
    )
    sums = (
        usage.join(bounds, on=_SEGMENT)
        .group_by(_SEGMENT)
        .agg(
            model_call_count=in_bracket.sum().cast(pl.Int64),
            input_tokens=pl.col("input_tokens").filter(in_bracket).sum().cast(pl.Int64),
            output_tokens=pl.col("output_tokens").filter(in_bracket).sum().cast(pl.Int64),
            usage_cost_usd=usd.sum().cast(_COST),
        )
    )
    counts = calls.group_by(_SEGMENT).agg(tool_call_count=pl.len().cast(pl.Int64))
    return (
        segments.select("run_id", *_SEGMENT)
        .join(counts, on=_SEGMENT, how="left", maintain_order="left")
        .join(sums, on=_SEGMENT, how="left", maintain_order="left")
        .select(
            "run_id",
            *_SEGMENT,
            tool_call_count=pl.col("tool_call_count").fill_null(0),
            model_call_count=pl.col("model_call_count").fill_null(0),
            input_tokens=pl.col("input_tokens").fill_null(0),
            output_tokens=pl.col("output_tokens").fill_null(0),
            usage_cost_usd=pl.col("usage_cost_usd").fill_null(pl.lit(0).cast(_COST)),
        )
    )


def completed_events(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The eval.completed events of `con`'s `events` (run_id, sequence), for `eval_runs`."""
    return _fetch(
        con,
        "SELECT run_id, sequence FROM events "
        "WHERE type = 'eval.completed' AND sequence IS NOT NULL",
    )


def placed_frames(runs: pl.DataFrame, typed: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Every frame of `FRAMES` from the eval runs (`eval_runs`) and the rows of the per-type
    relations (`typed`, by name): Polars alone, no connection, so it can run beside the next
    batch's events pass."""
    placed = place(
        runs,
        {
            "span_scored": typed["scored_events"],
            "span_calls": typed["tool_called_events"],
            "span_usage": typed["usage_events"],
            "span_brackets": typed["bracket_events"],
        },
    )
    segments = trial_segments(placed["span_scored"], placed["span_brackets"])
    calls = trial_calls(segments, placed["span_calls"])
    frames = {
        "eval_runs": runs,
        **placed,
        "trial_segments": segments,
        "trial_calls": calls,
        "trial_usage": trial_usage(segments, calls, placed["span_usage"]),
    }
    return {name: frame.drop("run_no", strict=False) for name, frame in frames.items()}
