"""E-134: event_scan's `f` fields are declared once (evalbatch/extract/scan_fields.py) and read
by name.

The list is held to both extractors that write `f`: the json_extract paths of
sql/events/event_scan.sql and native_scan.cpp's table, and, beyond the texts, both extractors'
`f` of one payload per type read back by name give that payload's fields. The queries read `f`
only through the `<accessor>_field(f, 'name')` macros, with names the list has.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from evalbatch.extract import events_pass, extractor, native_scan, scan_fields, sql_files
from evalbatch.options import Resources

#: a `<accessor>_field(f, 'name')` call in a query
FIELD_CALL = re.compile(r"\b(\w+)_field\(\s*f\s*,\s*'([^']*)'\s*\)")

#: the extractors that write `f` here: the query, and the library where it is built
NATIVE = extractor.library() is not None or os.environ.get("EVALBATCH_REQUIRE_NATIVE") == "1"


def test_e134_event_scan_sql_extracts_the_declared_fields_in_order() -> None:
    """event_scan.sql's json_extract paths, per type and in order, are the declared list."""
    query = sql_files.load_query("event_scan").text
    found = re.findall(r"WHEN '([^']+)' THEN TRY\(json_extract\(payload, \[([^\]]*)\]", query)
    paths = {
        type_: tuple(p.removeprefix("$.") for p in re.findall(r"'([^']+)'", listed))
        for type_, listed in found
    }
    assert paths == scan_fields.by_type()


@pytest.mark.skipif(not NATIVE, reason="the native extractor is not built here (`make native`)")
def test_e134_native_library_writes_the_declared_fields_in_order() -> None:
    """native_scan.cpp's table, as the library describes it, is the declared list (a library
    that is not does not load: extractor.library)."""
    described = native_scan.fields_by_type()
    assert {t: tuple(names) for t, names in described.items() if names} == scan_fields.by_type()


def test_e134_queries_read_f_by_declared_name_only() -> None:
    """No query reads `f` by position; each `<accessor>_field` call names a field of its type,
    and only the typed relations and event_scan (its trialIndex text) read `f` at all."""
    declared = {t.accessor: t.fields for t in scan_fields.SCAN_FIELDS}
    readers = set()
    for query in sql_files.all_files():
        assert not re.search(r"\bf\s*\[", query.text), query.name
        for accessor, name in FIELD_CALL.findall(query.text):
            assert name in declared[accessor], (query.name, accessor, name)
            readers.add(query.name)
    assert readers == {
        "event_scan",
        "tool_called_events",
        "usage_events",
        "bracket_events",
        "scored_events",
        "started_events",
        "dispatch_events",
        "inspect_events",
    }


def test_e134_field_macros_fold_to_positions_and_refuse_unknown_names() -> None:
    """A macro call is the list element of its field's position; a name the type does not
    read is an error, not a NULL."""
    con = events_pass.new_connection()
    try:
        for t in scan_fields.SCAN_FIELDS:
            texts = [f"v{i}" for i in range(len(t.fields))]
            calls = ", ".join(f"{t.accessor}_field($f, '{name}')" for name in t.fields)
            assert list(con.execute(f"SELECT {calls}", {"f": texts}).fetchone() or ()) == texts
        with pytest.raises(duckdb.Error, match="has no field costUsd"):
            con.execute("SELECT usage_field(['1'], 'costUsd')").fetchall()
    finally:
        con.close()


def _payload(type_fields: scan_fields.TypeFields) -> dict[str, Any]:
    """A payload setting each of the type's fields to a value of its own (agent.agentId as the
    nested object it is)."""
    payload: dict[str, Any] = {}
    for i, name in enumerate(type_fields.fields):
        value: Any = [f"{type_fields.accessor}-{i}"] if name == "mergeOrder" else f"v{i}"
        if name == "agent.agentId":
            payload["agent"] = {"agentId": value}
        else:
            payload[name] = value
    return payload


def _named(type_: str, f: list[str | None]) -> dict[str, Any]:
    """`f`'s texts read back by the declared names, as JSON values."""
    names = scan_fields.by_type()[type_]
    return {
        name: None if text is None else json.loads(text)
        for name, text in zip(names, f, strict=True)
    }


def _expected(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload's fields by the declared names (agent.agentId from the nested object)."""
    fields = {k: v for k, v in payload.items() if k != "agent"}
    if "agent" in payload:
        fields["agent.agentId"] = payload["agent"]["agentId"]
    return fields


@pytest.mark.parametrize("extractor_name", ["duckdb", *(["native"] if NATIVE else [])])
def test_e134_both_extractors_fill_f_by_the_declared_names(extractor_name: str) -> None:
    """One payload per type, each field a value of its own: `f` read by the declared names is
    the payload's fields, from the query and from the library alike."""
    types = scan_fields.SCAN_FIELDS
    payloads = [_payload(t) for t in types]
    batch = pa.RecordBatch.from_pydict(
        {
            "run_id": ["acme/run"] * len(types),
            "sequence": list(range(len(types))),
            "sequence_ok": [True] * len(types),
            "type": [t.type for t in types],
            "payload": [json.dumps(p) for p in payloads],
            "ts": pa.array([i * 1000 for i in range(len(types))], pa.timestamp("us", "UTC")),
            "row_hash": pa.array(range(len(types)), pa.uint64()),
        }
    )
    con = events_pass.new_connection(Resources(extractor="duckdb"))
    try:
        if extractor_name == "native":
            scanned = native_scan.scan_batch(con, batch, 1)
            rows = scanned.select(["type", "f"]).to_pylist()
        else:
            con.register("scan_rows", pa.Table.from_batches([batch]))
            query = sql_files.load_query("event_scan").text
            rows = con.sql(f"SELECT type, f::VARCHAR[] AS f FROM ({query}) ORDER BY sequence")
            rows = [{"type": t, "f": f} for t, f in rows.fetchall()]
    finally:
        con.close()
    assert [row["type"] for row in rows] == [t.type for t in types]
    for row, payload in zip(rows, payloads, strict=True):
        assert _named(row["type"], row["f"]) == _expected(payload), row["type"]
