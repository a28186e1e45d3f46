"""Trajectory matching and fixture replay, vectorized over all trials at once (§3.1-§3.3).

Every function works on a table of candidate pairs — (trial, expected position, observed
position, whether the call matches) — built by joining expected calls to observed calls on the
tool name. Loops run over positions in a suite's lists (bounded by the suite), never over events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from evalbatch import jsonvalue

_UNPARSED = object()  # inputs too deeply nested to parse

# How a pair's arguments are compared (`with_args_match`), by the expected call's args:
_EQUAL = 0  # `exact`, or `subset` with args that are not an object: JSON-equal (D-7)
_FLAT = 1  # `subset` with an object of scalars: every (key, value) leaf found (D-8)
_NESTED = 2  # `subset` with an object holding objects or arrays: `jsonvalue.is_subset`


def _max(column: pl.Series) -> int | None:
    """The largest value of a position or count column; None when it holds none."""
    value = column.max()
    return int(value) if isinstance(value, (int, float)) else None


@dataclass(frozen=True)
class Arguments:
    """The distinct argument values one grading step compares, numbered: candidate pairs carry
    two integers (`args_id`, `input_id`) instead of JSON texts, and each value is read once.

    args: args_id, args_mode, args (each distinct compared expected `args`, canonical text);
    inputs: input_id, inputs, exact_payload (each distinct observed input).
    """

    args: pl.DataFrame
    inputs: pl.DataFrame

    @classmethod
    def number(
        cls, expected: pl.DataFrame, observed: pl.DataFrame
    ) -> tuple[pl.DataFrame, pl.DataFrame, Arguments]:
        """`expected` (args_mode, args) with `args_id` — null when the call matches on the tool
        name alone (`ignore`, or no `args`: §3.2) — and `observed` (inputs, exact_payload) with
        `input_id`; both in their own row order."""
        args = (
            expected.filter(pl.col("args_mode") != "ignore")
            .select("args_mode", "args")
            .unique()
            .sort("args_mode", "args")
            .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("args_id"))
        )
        inputs = (
            observed.select("inputs", "exact_payload")
            .unique()
            .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("input_id"))
        )
        return (
            expected.join(
                args, on=["args_mode", "args"], how="left", nulls_equal=True, maintain_order="left"
            ),
            observed.join(
                inputs,
                on=["inputs", "exact_payload"],
                how="left",
                nulls_equal=True,
                maintain_order="left",
            ),
            cls(args, inputs),
        )


def _observed_value(inputs: str, exact: str | None) -> Any:
    """An observed input as the comparison reads it; inputs whose numbers DuckDB may have rounded
    are read again from the payload text (`exact_payload`)."""
    try:
        return jsonvalue.observed_inputs(inputs, exact)
    except jsonvalue.NotJson:  # nested past the parser's depth (E-60): cannot match
        return _UNPARSED


def _canonical_or_none(value: Any) -> str | None:
    """The canonical text of a parsed value; None past the depth Python recurses to (E-60)."""
    if value is _UNPARSED:
        return None
    try:
        return jsonvalue.canonical(value)
    except RecursionError:
        return None


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


class _ExpectedArgs:
    """Each distinct compared args (`Arguments.args`, by args_id) read once: how it is compared
    (`_EQUAL`, `_FLAT`, `_NESTED`), and what the comparison needs."""

    def __init__(self, args: pl.DataFrame) -> None:
        self.kind: list[int | None] = []
        self.equal_id: list[int | None] = []  # _EQUAL: the id of its canonical text
        self.leaf_count: list[int | None] = []  # _FLAT: how many (key, value) leaves
        self.texts: dict[str, int] = {}  # canonical text compared by equality -> equal_id
        self.leaves: dict[tuple[str, str], int] = {}  # (key, canonical value) -> leaf id
        self.args_leaves: list[tuple[int, int]] = []  # (args_id, leaf id)
        self.nested: dict[int, Any] = {}  # _NESTED: the parsed args, by args_id
        for args_id, (mode, text) in enumerate(args.select("args_mode", "args").iter_rows()):
            value = jsonvalue.parse_value(text)  # canonical text, from SuiteTables
            if mode == "exact" or not isinstance(value, dict):  # D-8: a non-object must equal
                canonical = jsonvalue.canonical(value)
                self._add(_EQUAL, self.texts.setdefault(canonical, len(self.texts)), None)
            elif all(_is_scalar(member) for member in value.values()):
                self._add(_FLAT, None, len(value))
                for key, member in value.items():
                    leaf = (key, jsonvalue.canonical(member))
                    self.args_leaves.append(
                        (args_id, self.leaves.setdefault(leaf, len(self.leaves)))
                    )
            else:
                self._add(_NESTED, None, None)
                self.nested[args_id] = value
        self.leaf_keys = {key for key, _ in self.leaves}

    def _add(self, kind: int, equal_id: int | None, leaf_count: int | None) -> None:
        self.kind.append(kind)
        self.equal_id.append(equal_id)
        self.leaf_count.append(leaf_count)


class _ObservedInputs:
    """The distinct observed inputs (`Arguments.inputs`, by input_id) some pair compares, read
    once: the `_EQUAL` id of its canonical text, whether it is an object, and its members that
    are leaves of a `_FLAT` args."""

    def __init__(self, inputs: pl.DataFrame, compared: set[int], expected: _ExpectedArgs) -> None:
        self.facts: list[tuple[int, int | None, bool]] = []  # (input_id, equal_id, is_object)
        self.input_leaves: list[tuple[int, int]] = []  # (input_id, leaf id)
        self.values: dict[int, Any] = {}  # parsed, by input_id
        rows = inputs.select("inputs", "exact_payload").iter_rows()
        for input_id, (text, exact) in enumerate(rows):
            if input_id not in compared:
                continue
            value = self.values[input_id] = _observed_value(text, exact)
            canonical = _canonical_or_none(value) if expected.texts else None
            equal_id = expected.texts.get(canonical) if canonical else None
            self.facts.append((input_id, equal_id, isinstance(value, dict)))
            if isinstance(value, dict) and expected.leaves:
                for key, member in value.items():
                    if key in expected.leaf_keys and _is_scalar(member):
                        leaf = expected.leaves.get((key, jsonvalue.canonical(member)))
                        if leaf is not None:
                            self.input_leaves.append((input_id, leaf))


def with_args_match(pairs: pl.DataFrame, arguments: Arguments) -> pl.DataFrame:
    """Add `ok`: the tool names already agree; do the arguments match under `args_mode` (D-7, D-8)?

    `pairs` carries `args_id` (null: `ignore`, matched on the tool name alone) and `input_id`
    (`Arguments.number`). Only distinct values reach Python, each read once; the (args, input)
    pairs that match are found on those, and each pair is then one look-up:
    - JSON-equal (`exact`; `subset` with args that are not an object): equal canonical texts
      (D-7: equal text <=> JSON-equal), joined as ids;
    - `subset` with an object of scalars: the (key, canonical value) leaves of the args joined to
      the members of each input; a match finds every leaf (`{}`: any object);
    - `subset` with nested args: `jsonvalue.is_subset` on each distinct (args, input) pair.
    """
    args_id, input_id = pl.col("args_id"), pl.col("input_id")
    expected = _ExpectedArgs(arguments.args)
    compared = pairs.lazy().filter(args_id.is_not_null())
    compared_inputs = compared.select(input_id.unique()).collect()["input_id"]
    observed = _ObservedInputs(arguments.inputs, set(compared_inputs.to_list()), expected)
    width = max(arguments.inputs.height, 1)  # (args_id, input_id) as one integer
    pair_key = (args_id * width + input_id).alias("key")

    args = pl.DataFrame(
        {
            "args_id": range(len(expected.kind)),
            "kind": expected.kind,
            "equal_id": expected.equal_id,
            "leaf_count": expected.leaf_count,
        },
        schema={"args_id": pl.Int64, "kind": pl.Int8, "equal_id": pl.Int64, "leaf_count": pl.Int64},
    )
    inputs = pl.DataFrame(
        observed.facts,
        schema={"input_id": pl.Int64, "equal_id": pl.Int64, "is_object": pl.Boolean},
        orient="row",
    )
    leaf_schema = {"args_id": pl.Int64, "leaf": pl.Int64}
    input_leaves = pl.DataFrame(observed.input_leaves, schema=leaf_schema, orient="row")
    all_leaves_found = (
        pl.DataFrame(expected.args_leaves, schema=leaf_schema, orient="row")
        .join(input_leaves.rename({"args_id": "input_id"}), on="leaf")
        .group_by("args_id", "input_id")
        .agg(pl.len().alias("found"))
        .join(args, on="args_id")
        .filter(pl.col("found") == pl.col("leaf_count"))
    )
    empty_object = args.filter((pl.col("kind") == _FLAT) & (pl.col("leaf_count") == 0)).join(
        inputs.filter("is_object"), how="cross"
    )
    equal = args.filter(pl.col("kind") == _EQUAL).join(inputs, on="equal_id")
    matched = [frame.select(pair_key) for frame in (all_leaves_found, empty_object, equal)]

    nested_ok = []
    nested_ids = [number for number, kind in enumerate(expected.kind) if kind == _NESTED]
    nested_pairs = compared.filter(args_id.is_in(nested_ids)).select(args_id, input_id).unique()
    for a, i in nested_pairs.collect().iter_rows():
        try:
            value = observed.values[i]
            good = value is not _UNPARSED and jsonvalue.is_subset(expected.nested[a], value)
        except RecursionError:  # past the comparison's depth (E-60): fail closed
            good = False
        if good:
            nested_ok.append(a * width + i)
    matched.append(pl.DataFrame({"key": nested_ok}, schema={"key": pl.Int64}))

    ok_keys = pl.concat(matched)["key"]
    return pairs.with_columns((args_id.is_null() | pair_key.is_in(ok_keys.implode())).alias("ok"))


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
    # scipy loads here, with the first matching a run needs, not with every command
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

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
