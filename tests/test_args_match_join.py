"""D-7, D-8: the grader's argument check (`match.with_args_match`: canonical ids, (key, value)
leaf joins for flat `subset` args, `jsonvalue.is_subset` for nested ones) agrees with
`jsonvalue.args_match` and with the reference grader's `call_matches` on every pair.

Values are drawn as JSON texts, so one number can be written many ways (`1`, `1.0`, `1e0`,
`10E-1`), keys can repeat (the last one stands) and strings can be escaped or not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalbatch import jsonvalue, reference
from evalbatch.grade import match
from evalbatch.options import GradeOptions
from tests.logbuilder import AGENT, Call, LogBuilder, expect, golden, grade, suite, traj
from tests.test_properties import assert_same

#: a slow family (drawn arguments against the reference):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

#: number texts, grouped by value: every text of a group is JSON-equal to the others (D-7)
NUMBER_GROUPS: tuple[tuple[str, ...], ...] = (
    ("0", "-0", "0.0", "-0.0", "0e5"),
    ("1", "1.0", "1e0", "10E-1", "1.000"),
    ("-1", "-1.0", "-1e0"),
    ("2", "2.0", "0.2e1"),
    ("0.1", "1e-1", "0.10"),
    ("100", "1e2", "1E+2", "100.0"),
    ("9007199254740993", "9.007199254740993e15"),
    ("9007199254740992",),
    ("123456789012345678901234567890", "1.23456789012345678901234567890e29"),
    ("1.000000000000000000001",),
)
LITERALS = ("true", "false", "null")
STRINGS = ("", "1", "true", "null", "é", "e\u0301", "😀", "a b", '"', "\\")
KEYS = ("a", "b", "c", "é", "e\u0301", "", "A", "😀", "a b", "1")
EQUIVALENT = {text: group for group in NUMBER_GROUPS for text in group}


@st.composite
def string_texts(draw: st.DrawFn, choices: tuple[str, ...] = STRINGS) -> str:
    """A JSON string, escaped to ASCII or not (both texts of the same string)."""
    return json.dumps(draw(st.sampled_from(choices)), ensure_ascii=draw(st.booleans()))


scalar_texts = st.one_of(
    st.sampled_from([text for group in NUMBER_GROUPS for text in group]),
    st.integers(-(10**22), 10**22).map(str),
    st.sampled_from(LITERALS),
    string_texts(),
)


def object_text(members: list[tuple[str, str]]) -> str:
    """An object's text from (key text, value text) members, in the given order (a key may
    repeat: JSON parsers keep the last one)."""
    return "{" + ",".join(f"{key}:{value}" for key, value in members) + "}"


value_texts = st.recursive(
    scalar_texts,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(string_texts(KEYS), inner), max_size=4).map(object_text),
    ),
    max_leaves=8,
)
flat_members = st.lists(st.tuples(string_texts(KEYS), scalar_texts), max_size=4)


@st.composite
def rewritten(draw: st.DrawFn, members: list[tuple[str, str]]) -> str:
    """An observed object made from expected members: some dropped, some added, numbers written
    another way, the order shuffled."""
    kept = [m for m in members if draw(st.integers(0, 4)) > 0]
    kept = [(key, draw(st.sampled_from(EQUIVALENT.get(value, (value,))))) for key, value in kept]
    extra = draw(st.lists(st.tuples(string_texts(KEYS), value_texts), max_size=2))
    return object_text(draw(st.permutations(kept + extra)))


@st.composite
def argument_cases(draw: st.DrawFn) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Expected calls (argsMatch, args text or None) and observed inputs texts of one trial."""
    shapes = st.one_of(flat_members.map(object_text), value_texts)
    expected_members = draw(st.lists(flat_members, min_size=1, max_size=3))
    expected_texts = [object_text(m) for m in expected_members]
    expected_texts += draw(st.lists(shapes, max_size=3))
    expected = [
        (
            draw(st.sampled_from(("exact", "subset", "ignore"))),
            text if draw(st.integers(0, 9)) else None,
        )
        for text in expected_texts
    ]
    observed = [draw(rewritten(members)) for members in expected_members]
    observed += draw(st.lists(value_texts, max_size=3))
    observed += draw(st.lists(st.sampled_from(observed), max_size=2))  # calls repeat inputs
    return expected, draw(st.permutations(observed))


def grader_verdicts(
    expected: Sequence[tuple[str, str | None]], observed: Sequence[tuple[str, str | None]]
) -> dict[tuple[int, int], bool]:
    """`ok` of every (expected position, observed position) pair, as the grader computes it.

    `expected` holds (argsMatch, args text), `observed` (inputs text, exact payload text)."""
    expected_frame = pl.DataFrame(
        {
            "trial_key": [0] * len(expected),
            "pos": list(range(len(expected))),
            "tool": ["kv:get"] * len(expected),
            "args_mode": [mode if text is not None else "ignore" for mode, text in expected],
            # as SuiteTables stores them: canonical text (D-7)
            "args": [
                jsonvalue.canonical(jsonvalue.parse_value(text)) if text is not None else None
                for _, text in expected
            ],
        },
        schema={
            "trial_key": pl.Int64,
            "pos": pl.Int64,
            "tool": pl.String,
            "args_mode": pl.String,
            "args": pl.String,
        },
    )
    observed_frame = pl.DataFrame(
        {
            "trial_key": [0] * len(observed),
            "o_idx": list(range(len(observed))),
            "tool_name": ["kv:get"] * len(observed),
            "inputs": [inputs for inputs, _ in observed],
            "exact_payload": [exact for _, exact in observed],
        },
        schema={
            "trial_key": pl.Int64,
            "o_idx": pl.Int64,
            "tool_name": pl.String,
            "inputs": pl.String,
            "exact_payload": pl.String,
        },
    )
    numbered_expected, numbered_observed, arguments = match.Arguments.number(
        expected_frame, observed_frame
    )
    pairs = numbered_expected.select("trial_key", "pos", "args_id").join(
        numbered_observed.select("trial_key", "o_idx", "input_id"), on="trial_key"
    )
    checked = match.with_args_match(pairs, arguments)
    assert checked.height == len(expected) * len(observed)
    return {(pos, o_idx): ok for pos, o_idx, ok in checked.select("pos", "o_idx", "ok").iter_rows()}


def reference_verdict(mode: str, args_text: str | None, inputs_text: str) -> bool:
    """The reference grader's §3.1 test of one pair (same tool)."""
    spec: dict[str, Any] = {"tool": "kv:get", "argsMatch": mode}
    if args_text is not None:
        spec["args"] = reference.parse_json_text(args_text)
    return reference.call_matches(spec, "kv:get", reference.parse_json_text(inputs_text))


@settings(max_examples=300, deadline=None)
@given(argument_cases(), st.data())
def test_args_match_agrees_with_jsonvalue_and_reference(
    case: tuple[list[tuple[str, str | None]], list[str]], data: st.DataObject
) -> None:
    """D-7, D-8, §3.1: on flat, nested and non-object args, tricky numbers, unicode keys, bool
    against number, null, `{}`, repeated keys and repeated inputs, the grader's `ok` is exactly
    `jsonvalue.args_match` and the reference's `call_matches`. Some inputs are read from the
    payload text (`exact_payload`, as for numbers DuckDB may round): the same verdicts."""
    expected, observed_texts = case
    observed: list[tuple[str, str | None]] = []
    for text in observed_texts:
        if data.draw(st.booleans(), label="from payload"):
            observed.append(("{}", '{"toolName":"kv:get","inputs":' + text + "}"))
        else:
            observed.append((text, None))
    verdicts = grader_verdicts(expected, observed)
    for pos, (mode, args_text) in enumerate(expected):
        for o_idx, inputs_text in enumerate(observed_texts):
            want = reference_verdict(mode, args_text, inputs_text)
            if args_text is not None:
                parsed = jsonvalue.parse_value(inputs_text)
                how = cast(jsonvalue.ArgsMatch, mode)
                assert jsonvalue.args_match(how, jsonvalue.parse_value(args_text), parsed) is want
            assert verdicts[(pos, o_idx)] is want, (mode, args_text, inputs_text)


def test_flat_subset_cases_the_join_decides() -> None:
    """D-8 on flat args, each verdict named: every leaf must find its twin by canonical value."""
    cases = [
        ('{"a":1}', '{"a":1.0,"b":2}', True),  # 1 == 1.0, extra keys allowed
        ('{"a":1}', '{"a":true}', False),  # booleans are not numbers (D-7)
        ('{"a":true}', '{"a":1}', False),
        ('{"a":0}', '{"a":-0.0}', True),  # -0 == 0
        ('{"a":null}', "{}", False),  # a leaf must be present, even null
        ('{"a":null}', '{"a":null}', True),
        ('{"a":1}', '{"a":1,"a":2}', False),  # a repeated key: the last stands (D-7)
        ('{"a":2}', '{"a":1,"a":2}', True),
        ('{"a":1}', '{"a":{"b":1}}', False),  # a scalar never equals an object
        ('{"a":"1"}', '{"a":1}', False),
        ('{"é":1}', '{"\\u00e9":1}', True),  # one key, two spellings
        ('{"é":1}', '{"e\u0301":1}', False),  # another key
        ('{"a":1,"b":2}', '{"b":2}', False),  # every leaf
        ("{}", '{"x":[1]}', True),  # {} matches any object...
        ("{}", "[]", False),  # ...and nothing else
        ("{}", "null", False),
        ('{"a":9007199254740993}', '{"a":9007199254740992}', False),  # exact beyond 2^53
    ]
    expected = [("subset", args) for args, _, _ in cases]
    observed = [(inputs, None) for _, inputs, _ in cases]
    verdicts = grader_verdicts(expected, observed)
    assert [verdicts[(i, i)] for i in range(len(cases))] == [want for _, _, want in cases]


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(argument_cases())
def test_engine_agrees_with_reference_on_drawn_arguments(
    case: tuple[list[tuple[str, str | None]], list[str]],
) -> None:
    """D-7, D-8, §3.1 end to end: one trial per (expected call, observed call) pair, the inputs
    written verbatim in the payload, so DuckDB's reading (and the payload's second reading where
    it may round a number) comes first; every summary equals the reference grader's."""
    expected, observed_texts = case
    log = LogBuilder()
    log.eval_started(task_count=len(expected) * len(observed_texts))
    tasks = []
    for pos, (mode, args_text) in enumerate(expected):
        call = expect("kv:get") if args_text is None else expect("kv:get", json.loads(args_text))
        call["argsMatch"] = mode
        for o_idx, inputs_text in enumerate(observed_texts):
            task_id = f"pair-{pos}-{o_idx}"
            head = f'{{"agentId": {json.dumps(AGENT)}, "toolName": "kv:get", "callId": "c"'
            log.trial(task_id, calls=[Call("kv:get", raw=f'{head}, "inputs": {inputs_text}}}')])
            tasks.append(golden(task_id, traj("exact", [call])))
    log.eval_completed()
    suites = [suite(*tasks)]
    engine = grade(log, suites)
    ref = reference.grade_reference(log.events, suites, GradeOptions())
    assert sorted(engine.summaries) == sorted(ref.summaries)
    for run_id, summary in ref.summaries.items():
        assert_same(engine.summaries[run_id], summary, run_id)
