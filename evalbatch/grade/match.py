"""Trajectory matching and fixture replay, vectorized over all trials at once (§3.1-§3.3).

Every function works on a table of candidate pairs — (trial, expected position, observed
position, whether the call matches) — built by joining expected calls to observed calls on the
tool name. Loops run over positions in a suite's lists (bounded by the suite), never over events.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from evalbatch import jsonvalue

_UNSEEN = object()
_UNPARSED = object()  # inputs too deeply nested to parse


def _max(column: pl.Series) -> int | None:
    """The largest value of a position or count column; None when it holds none."""
    value = column.max()
    return int(value) if isinstance(value, (int, float)) else None


def with_args_match(pairs: pl.DataFrame) -> pl.DataFrame:
    """Add `ok`: the tool names already agree; do the arguments match under `args_mode` (D-7, D-8)?

    Only distinct (mode, args, inputs) triples that need a comparison reach Python; `ignore`
    (including an expected call without `args`) matches on the tool name alone. Inputs whose
    numbers DuckDB may have rounded are read again from the payload text (`exact_payload`).
    """
    needs_check = pl.col("args_mode") != "ignore"
    keys = ["args_mode", "args", "inputs", "exact_payload"]
    distinct = pairs.filter(needs_check).select(keys).unique()
    expected = {text: jsonvalue.parse_value(text) for text in distinct["args"].unique()}
    observed: dict[tuple[str, str | None], object] = {}
    verdicts = []
    for mode, args, inputs, exact in distinct.iter_rows():
        value = observed.get((inputs, exact), _UNSEEN)
        if value is _UNSEEN:
            try:
                value = (
                    jsonvalue.inputs_of_payload(exact) if exact else jsonvalue.parse_value(inputs)
                )
            except jsonvalue.NotJson:  # nested past the parser's depth (E-60): cannot match
                value = _UNPARSED
            observed[(inputs, exact)] = value
        try:
            verdicts.append(
                value is not _UNPARSED and jsonvalue.args_match(mode, expected[args], value)
            )
        except RecursionError:  # past the comparison's depth (E-60): fail closed
            verdicts.append(False)
    checked = distinct.with_columns(pl.Series("ok", verdicts, dtype=pl.Boolean))
    return pairs.join(checked, on=keys, how="left", nulls_equal=True).with_columns(
        pl.when(needs_check).then(pl.col("ok").fill_null(False)).otherwise(True).alias("ok")
    )


def maximum_matching(pairs: pl.DataFrame) -> pl.DataFrame:
    """Size of a maximum one-to-one matching between expected and observed calls, per trial.

    All trials go into one block-diagonal bipartite graph solved by Hopcroft-Karp in one call;
    greedy pairing is wrong when argument matching is not an equivalence (a subset pattern).
    Returns (trial_key, matched_count) for trials with at least one matching pair.
    """
    return (
        matching_pairs(pairs)
        .group_by("trial_key")
        .agg(pl.len().cast(pl.Int64).alias("matched_count"))
    )


def in_order_found(trials: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """Whether the expected calls match a subsequence of the observed ones, in order.

    Taking, for each expected call in turn, the earliest matching observed call after the previous
    one is optimal for the subsequence question, so the walk of `in_order_pairs` decides it: in
    order when every expected position found a call. `trials` holds (trial_key, expected_count);
    returns (trial_key, in_order).
    """
    found = (
        in_order_pairs(trials, pairs)
        .group_by("trial_key")
        .agg(pl.col("o_idx").is_not_null().all().alias("in_order"))
        .with_columns(pl.col("trial_key").cast(trials.schema["trial_key"]))
    )
    return (
        trials.select("trial_key")
        .join(found, on="trial_key", how="left")
        .select("trial_key", pl.col("in_order").fill_null(True))
    )


def replay_fixtures(calls: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """Fixture misses per trial (§3.3): calls that no unconsumed `toolResponses` entry serves.

    "Each call in order takes the first unconsumed matching entry" assigns exactly what "each entry
    in order takes the earliest unassigned matching call" assigns (both sides ranked by one fixed
    order), and the second loops over entry positions for all trials at once.
    `calls` holds (trial_key, o_idx) for every call in a fixtured trial; `pairs` holds
    (trial_key, f_pos, o_idx, ok). Returns (trial_key, misses).
    """
    served = fixture_assignment(pairs).group_by("trial_key").agg(pl.len().alias("served"))
    return (
        calls.group_by("trial_key")
        .agg(pl.len().alias("calls"))
        .join(served, on="trial_key", how="left")
        .select(
            "trial_key",
            (pl.col("calls") - pl.col("served").fill_null(0)).cast(pl.Int64).alias("misses"),
        )
    )


# --------------------------------------------------------------------------------------------
# Which calls are paired, not just how many: the functions above count what these build, and
# `evalbatch explain` shows it, so the counts and the detail always agree.


def matching_pairs(pairs: pl.DataFrame) -> pl.DataFrame:
    """The edges of a maximum one-to-one matching between expected and observed calls, per
    trial (`maximum_matching` counts them). Returns (trial_key, e_pos, o_idx)."""
    schema = {"trial_key": pl.Int64, "e_pos": pl.Int64, "o_idx": pl.Int64}
    ok = pairs.filter("ok").select("trial_key", "e_pos", "o_idx").unique()
    if ok.height == 0:
        return pl.DataFrame(schema=schema)
    ok = ok.with_columns(
        pl.struct("trial_key", "e_pos").rank("dense").cast(pl.Int64).sub(1).alias("row"),
        pl.struct("trial_key", "o_idx").rank("dense").cast(pl.Int64).sub(1).alias("col"),
    )
    rows = ok["row"].to_numpy()
    cols = ok["col"].to_numpy()
    graph = csr_matrix(
        (np.ones(len(rows), dtype=np.int8), (rows, cols)),
        shape=(int(rows.max()) + 1, int(cols.max()) + 1),
    )
    matched_col = maximum_bipartite_matching(graph, perm_type="column")
    chosen = pl.DataFrame(
        {"row": np.arange(len(matched_col), dtype=np.int64), "col": matched_col.astype(np.int64)}
    ).filter(pl.col("col") >= 0)
    return (
        ok.join(chosen, on=["row", "col"], how="semi")
        .select(pl.col("trial_key", "e_pos", "o_idx").cast(pl.Int64))
        .sort("trial_key", "e_pos")
    )


def in_order_pairs(trials: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """The in-order walk (`in_order_found` judges it), one expected position at a time: the
    earliest matching observed call after the one taken for the previous position, or null when
    there is none (the walk then goes on from the previous call).

    `trials` holds (trial_key, expected_count); returns (trial_key, e_pos, o_idx), one row per
    expected position of every trial.
    """
    state = trials.select("trial_key", "expected_count").with_columns(
        pl.lit(-1, dtype=pl.Int64).alias("last")
    )
    ok = pairs.filter("ok").select("trial_key", "e_pos", "o_idx")
    longest = _max(trials["expected_count"]) or 0
    steps = [pl.DataFrame(schema={"trial_key": pl.Int64, "e_pos": pl.Int64, "o_idx": pl.Int64})]
    for position in range(longest):
        nxt = (
            ok.filter(pl.col("e_pos") == position)
            .join(state.select("trial_key", "last"), on="trial_key")
            .filter(pl.col("o_idx") > pl.col("last"))
            .group_by("trial_key")
            .agg(pl.col("o_idx").min().cast(pl.Int64).alias("next"))
        )
        state = state.join(nxt, on="trial_key", how="left")
        steps.append(
            state.filter(pl.col("expected_count") > position).select(
                pl.col("trial_key").cast(pl.Int64),
                pl.lit(position, dtype=pl.Int64).alias("e_pos"),
                pl.col("next").cast(pl.Int64).alias("o_idx"),
            )
        )
        state = state.with_columns(pl.coalesce("next", "last").alias("last")).drop("next")
    return pl.concat(steps).sort("trial_key", "e_pos")


def fixture_assignment(pairs: pl.DataFrame) -> pl.DataFrame:
    """The entries fixture replay consumes and the calls they serve (§3.3; `replay_fixtures`
    counts the rest as misses), one loop over entry positions for all trials at once. `pairs`
    holds (trial_key, f_pos, o_idx, ok); returns (trial_key, f_pos, o_idx), one row per served
    call. A call of the trial with no row here is a miss.
    """
    ok = pairs.filter("ok").select("trial_key", "f_pos", "o_idx")
    assigned = pl.DataFrame(schema={"trial_key": pl.Int64, "f_pos": pl.Int64, "o_idx": pl.Int64})
    last = _max(ok["f_pos"])
    longest = 0 if last is None else last + 1
    for position in range(longest):
        taken = (
            ok.filter(pl.col("f_pos") == position)
            .join(assigned.select("trial_key", "o_idx"), on=["trial_key", "o_idx"], how="anti")
            .group_by("trial_key")
            .agg(pl.col("o_idx").min().cast(pl.Int64))
            .select(
                pl.col("trial_key").cast(pl.Int64),
                pl.lit(position, dtype=pl.Int64).alias("f_pos"),
                "o_idx",
            )
        )
        assigned = pl.concat([assigned, taken])
    return assigned.sort("trial_key", "o_idx")
