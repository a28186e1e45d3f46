"""D-7 JSON equality and D-8 subset, on the values hosts really write."""

from __future__ import annotations

import pytest

from evalbatch import jsonvalue as jv


def _eq(a: str, b: str) -> bool:
    return jv.canonical_text(a) == jv.canonical_text(b)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("1", "1.0", True),
        ("-0", "0", True),
        ("1e2", "100", True),
        ("0.1", "0.10", True),
        ("true", "1", False),
        ("false", "0", False),
        ("null", "0", False),
        ("null", "null", True),
        ('"1"', "1", False),
        ('{"a":1,"b":2}', '{"b":2.0,"a":1}', True),
        ("[1,2]", "[2,1]", False),
        ("9007199254740993", "9007199254740992", False),
        ("123456789012345678901234567890", "1.23456789012345678901234567890e29", True),
        ('{"a":1,"a":2}', '{"a":2}', True),
        ("[true]", "[1]", False),
        ("1.5", "15e-1", True),
        ('{"a":[1,{"b":0.5}]}', '{"a":[1.0,{"b":5e-1}]}', True),
        ('{"a":1}', '{"a":1,"b":null}', False),
    ],
)
def test_json_equality(a: str, b: str, equal: bool) -> None:
    """D-7: numbers by exact value, booleans not numbers, key order ignored, last key wins."""
    assert _eq(a, b) is equal
    # the parsed-value comparison argument matching uses agrees with the canonical text
    assert jv.json_equal(jv.parse_value(a), jv.parse_value(b)) is equal


@pytest.mark.parametrize("text", ["NaN", '{"a": Infinity}', "[-Infinity]", "{", ""])
def test_not_json(text: str) -> None:
    """D-7: NaN and Infinity are not JSON."""
    with pytest.raises(jv.NotJson):
        jv.canonical_text(text)


@pytest.mark.parametrize(
    ("expected", "observed", "match"),
    [
        ("{}", '{"x":1}', True),
        ("{}", "[]", False),
        ('{"a":1}', '{"a":1.0,"b":2}', True),
        ('{"a":{"b":1}}', '{"a":{"b":1,"c":2}}', True),
        ('{"a":[1]}', '{"a":[1,2]}', False),
        ('{"a":null}', '{"a":null}', True),
        ('{"a":null}', "{}", False),
        ('{"a":true}', '{"a":1}', False),
        ("[1,2]", "[1,2]", True),
        ("5", "5.0", True),
        ('{"a":1}', "null", False),
    ],
)
def test_subset(expected: str, observed: str, match: bool) -> None:
    """D-8: objects recurse as subsets; arrays, scalars and null must be JSON-equal."""
    verdict = jv.args_match("subset", jv.parse_value(expected), jv.parse_value(observed))
    assert verdict is match


def test_exact_and_ignore() -> None:
    """§3.1: exact is D-7 equality; ignore matches anything."""
    a, b = jv.parse_value('{"x": 1}'), jv.parse_value('{"x": 1.0, "y": 2}')
    assert jv.args_match("exact", a, jv.parse_value('{"x": 1.0}'))
    assert not jv.args_match("exact", a, b)
    assert jv.args_match("ignore", a, b)
