"""event_scan's rows from the native extractor (E-108): one strict simdjson parse per payload,
the rows it does not take scanned by event_scan's own query.

The library (`native_scan.cpp`, loaded by `extractor`) reads a batch's `type` and `payload`
columns through the Arrow C data interface, no Python object per row, and per row either gives
what sql/events/event_scan.sql gives, in the same texts, or leaves the row to that query: a
payload that is not strict JSON, one the query marks suspect (D-7, E-26, E-61), a value whose
written text the query keeps (a trialIndex whose text holds a '.': D-5). Those rows are few,
and scanned by the reference, so both extractors give one answer.
"""

from __future__ import annotations

import ctypes

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from evalbatch.extract import extractor, sql_files

#: the event types whose rows are graded (event_scan's graded_type)
GRADED_TYPES = pa.array(
    [
        "agent.invocation-started",
        "agent.invocation-completed",
        "agent.tool-called",
        "provider.usage",
        "eval.started",
        "eval.scored",
        "eval.completed",
    ]
)

#: rows per batch handed to the library: bounds the memory of one walk, not the result
BATCH_ROWS = 1 << 16

#: the library's per-row status
_TAKEN = 0


def fields_by_type() -> dict[str, list[str]]:
    """The payload fields the library reads per type, in `f`'s order (for the test that holds
    them to event_scan.sql's paths)."""
    handle = extractor.required().handle
    described: dict[str, list[str]] = {}
    index = 0
    while (line := handle.evalbatch_scan_fields(index)) is not None:
        type_, _, names = line.decode().partition(":")
        described[type_] = names.split(",") if names else []
        index += 1
    return described


def format_double(value: float) -> str | None:
    """The library's text of a double (None: one it leaves to the reference), for the tests
    that hold it to DuckDB's."""
    buffer = ctypes.create_string_buffer(64)
    size = extractor.required().handle.evalbatch_format_double(value, buffer, 64)
    return buffer.raw[:size].decode() if size else None


def _capsule_pointer(capsule: object) -> int:
    """The address of the ArrowArray inside an `arrow_array` PyCapsule."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return int(get(capsule, b"arrow_array"))


def _string_column(array: pa.Array) -> tuple[pa.Array, int]:
    """A string column as the library reads it (utf8 or large_utf8) and whether it is large."""
    if pa.types.is_large_string(array.type):
        return array, 1
    if pa.types.is_string(array.type):
        return array, 0
    return array.cast(pa.large_string()), 1


def walk(batch: pa.RecordBatch, threads: int) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """The library over one batch (its `type` and `payload` columns), on `threads` threads:
    per row its status (0 taken, 1 left to the reference), `f` (a list of JSON texts, NULL
    where event_scan's is) and whether the payload text is kept (exact_payload, D-7)."""
    handle = extractor.required().handle
    types, types_large = _string_column(batch.column("type"))
    payloads, payloads_large = _string_column(batch.column("payload"))
    rows = batch.num_rows
    status = np.empty(rows, np.uint8)
    n_fields = np.empty(rows, np.int8)
    exact = np.empty(rows, np.uint8)
    _, type_capsule = types.__arrow_c_array__()
    _, payload_capsule = payloads.__arrow_c_array__()
    result = handle.evalbatch_scan(
        _capsule_pointer(type_capsule),
        types_large,
        _capsule_pointer(payload_capsule),
        payloads_large,
        threads,
        status.ctypes.data,
        n_fields.ctypes.data,
        exact.ctypes.data,
    )
    try:
        slots, size = ctypes.c_int64(), ctypes.c_int64()
        handle.evalbatch_scan_sizes(result, ctypes.byref(slots), ctypes.byref(size))
        valid = np.empty(slots.value, np.uint8)
        offsets = np.empty(slots.value + 1, np.int64)
        text = np.empty(max(size.value, 1), np.uint8)
        handle.evalbatch_scan_copy(result, valid.ctypes.data, offsets.ctypes.data, text.ctypes.data)
    finally:
        handle.evalbatch_scan_free(result)
    values = pa.LargeStringArray.from_buffers(
        slots.value,
        pa.py_buffer(offsets),
        pa.py_buffer(text),
        pa.py_buffer(np.packbits(valid, bitorder="little")),
    )
    list_offsets = np.zeros(rows + 1, np.int32)
    np.cumsum(np.maximum(n_fields, 0), out=list_offsets[1:])
    f = pa.ListArray.from_arrays(pa.array(list_offsets), values, mask=pa.array(n_fields < 0))
    return status, f, exact.astype(bool)


def key_blocks(batch: pa.RecordBatch) -> pl.DataFrame | None:
    """The blocks of the batch's rows (those with a sequence) that hold one run's consecutive
    sequence numbers, row after row: run_id, first and last sequence (each key between them held
    once in the block). None when a run id is NULL."""
    handle = extractor.required().handle
    run_ids, run_ids_large = _string_column(batch.column("run_id"))
    sequences = batch.column("sequence")
    if not pa.types.is_int64(sequences.type):
        sequences = sequences.cast(pa.int64())
    firsts = np.empty(batch.num_rows, np.int64)
    lasts = np.empty(batch.num_rows, np.int64)
    _, run_capsule = run_ids.__arrow_c_array__()
    _, sequence_capsule = sequences.__arrow_c_array__()
    blocks = handle.evalbatch_key_blocks(
        _capsule_pointer(run_capsule),
        run_ids_large,
        _capsule_pointer(sequence_capsule),
        firsts.ctypes.data,
        lasts.ctypes.data,
    )
    if blocks < 0:
        return None
    return pl.DataFrame(
        {
            "run_id": pl.Series(run_ids.take(pa.array(firsts[:blocks]))).cast(pl.String),
            "sequence": pl.Series(sequences.take(pa.array(firsts[:blocks]))),
            "last_sequence": pl.Series(sequences.take(pa.array(lasts[:blocks]))),
        }
    )


def keys_held_once(blocks: list[pl.DataFrame | None]) -> bool:
    """Whether the blocks (`key_blocks`, of every batch) of each run cover sequence ranges
    apart: then no (run_id, sequence) key is held by two rows (D-3). False when a batch had
    none to give (a NULL run id), or there is no batch."""
    found = [block for block in blocks if block is not None]
    if not found or len(found) < len(blocks):
        return False
    ordered = pl.concat(found).sort("run_id", "sequence")
    run = pl.col("run_id")
    apart = (run != run.shift()) | (pl.col("sequence") > pl.col("last_sequence").shift())
    return bool(ordered.select(apart.fill_null(True).all()).item())


def _kept_texts(payload: pa.Array, kept: np.ndarray) -> pa.Array:
    """`payload` where `kept`, NULL elsewhere: only the kept texts are copied (few rows)."""
    positions = np.flatnonzero(kept)
    if not positions.size:
        return pa.nulls(len(payload), payload.type)
    indices = np.zeros(len(payload), np.int64)
    indices[positions] = positions
    return payload.take(pa.array(indices, mask=~kept))


def scan_batch(con: duckdb.DuckDBPyConnection, batch: pa.RecordBatch, threads: int) -> pa.Table:
    """event_scan's rows for one batch of its input rows (run_id, sequence, sequence_ok, type
    as v2, payload with NULL read as 'null', ts, row_hash), in their order: the library's, and
    the reference query's (on `con`) for the rows the library leaves to it."""
    status, f, exact = walk(batch, threads)
    payload = batch.column("payload")
    kind = batch.column("type")
    rows = batch.num_rows
    scanned = pa.table(
        {
            # dictionary-encoded (the same strings): each query DuckDB runs over event_scan
            # converts a run's id once instead of once per row
            "run_id": pc.dictionary_encode(batch.column("run_id")),
            "sequence": batch.column("sequence"),
            "sequence_ok": batch.column("sequence_ok"),
            "type": pc.dictionary_encode(kind),
            "ts": batch.column("ts"),
            "row_hash": batch.column("row_hash"),
            "graded_type": pc.is_in(kind, GRADED_TYPES),
            "payload_json": pa.repeat(True, rows),
            "payload_suspect": pa.repeat(False, rows),
            "f": f,
            "exact_payload": _kept_texts(payload, exact),
            "trial_index_text": pa.nulls(rows, pa.string()),
            "suspect_payload": pa.nulls(rows, pa.string()),
        }
    )
    left = np.flatnonzero(status != _TAKEN)
    if not left.size:
        return scanned
    taken = np.flatnonzero(status == _TAKEN)
    referenced = _reference_scan(con, batch.take(pa.array(left))).cast(scanned.schema)
    both = pa.concat_tables([scanned.take(pa.array(taken)), referenced])
    return both.take(pa.array(np.argsort(np.concatenate([taken, left]), kind="stable")))


def _reference_scan(con: duckdb.DuckDBPyConnection, rows: pa.RecordBatch) -> pa.Table:
    """event_scan's own query over `rows`."""
    scratch = "__evalbatch_native_left"
    con.register(scratch, pa.Table.from_batches([rows]))
    try:
        query = sql_files.load_query("event_scan").text
        scan = con.sql(f"WITH scan_rows AS (FROM {scratch}) SELECT * FROM ({query})")
        return scan.to_arrow_table()
    finally:
        con.unregister(scratch)
