"""Leading row groups of a previous table copied into the next one as bytes (E-156).

A table is written in row groups of a fixed number of rows from its first row, and a row group's
bytes depend only on its rows (`writer.TableWriter`): so when tonight's table starts with the
same rows as yesterday's, its leading whole row groups are yesterday's, byte for byte. They are
copied as they are (`Prefix`), the rows after them are encoded as usual into a file of their own,
and the two are joined under one footer: the encoded file's, its row groups moved past the
copied ones and those put first (`join`). The result is the file the writer would have written
from all the rows.

A previous file's row groups are copied only when its footer, row groups aside, is the one this
writer writes (same schema, metadata and Parquet writer: `Layout.probe`), when this writer
encodes its first row group, read back, into the very bytes it holds (the compression, its
level and library, the encodings and page sizes, which the footer does not all tell), when they
are laid out end to end from the file's start, and when they hold no field this code does not
move (a page index, a bloom filter); otherwise none is copied and every row is encoded, as
before.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.outputs import thrift_compact as thrift

_MAGIC = b"PAR1"
_TAIL = 8  # the footer's length (4 bytes, little-endian) and PAR1

# FileMetaData, RowGroup, ColumnChunk and ColumnMetaData fields (parquet.thrift)
_FILE_ROWS, _FILE_ROW_GROUPS = 3, 4
_RG_COLUMNS, _RG_ROWS, _RG_OFFSET, _RG_SIZE, _RG_ORDINAL = 1, 3, 5, 6, 7
_CC_FILE_PATH, _CC_FILE_OFFSET, _CC_META = 1, 2, 3
_MD_SIZE, _MD_DATA_PAGE, _MD_INDEX_PAGE, _MD_DICTIONARY_PAGE = 7, 9, 10, 11
#: the fields a column chunk may hold to be moved: none of them an offset but those moved here
_CC_FIELDS = {_CC_FILE_OFFSET, _CC_META}
_MD_FIELDS = {1, 2, 3, 4, 5, 6, _MD_SIZE, 8, _MD_DATA_PAGE, _MD_DICTIONARY_PAGE, 12, 13, 16}
_RG_FIELDS = {_RG_COLUMNS, 2, _RG_ROWS, 4, _RG_OFFSET, _RG_SIZE, _RG_ORDINAL}


class NotSpliceable(ValueError):
    """A file whose row groups cannot be copied by this code (it is encoded whole instead)."""


def _footer(data: bytes) -> tuple[thrift.Struct, int]:
    """The footer of a Parquet file's bytes and where it starts."""
    if len(data) < len(_MAGIC) + _TAIL or data[:4] != _MAGIC or data[-4:] != _MAGIC:
        raise NotSpliceable("not a Parquet file")
    length = int.from_bytes(data[-_TAIL:-4], "little")
    start = len(data) - _TAIL - length
    if start < len(_MAGIC):
        raise NotSpliceable("a footer longer than the file")
    try:
        return thrift.read_struct(data[start : len(data) - _TAIL]), start
    except thrift.ThriftError as exc:
        raise NotSpliceable(str(exc)) from exc


def _read_footer(path: Path) -> tuple[thrift.Struct, int]:
    """The footer of the Parquet file at `path` and where it starts (its data ends there)."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < len(_MAGIC) + _TAIL:
            raise NotSpliceable("not a Parquet file")
        handle.seek(size - _TAIL)
        tail = handle.read(_TAIL)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != _MAGIC or length > size - len(_MAGIC) - _TAIL:
            raise NotSpliceable("not a Parquet file")
        handle.seek(0)
        head = handle.read(len(_MAGIC))
        handle.seek(size - _TAIL - length)
        footer = handle.read(length)
    return _footer(head + footer + tail)[0], size - _TAIL - length


def _row_groups(footer: thrift.Struct) -> list[thrift.Struct]:
    found = footer.get(_FILE_ROW_GROUPS)
    if not isinstance(found, thrift.List):
        raise NotSpliceable("no row groups")
    return list(found.items)


def _chunks(row_group: thrift.Struct) -> list[thrift.Struct]:
    found = row_group.get(_RG_COLUMNS)
    if not isinstance(found, thrift.List):
        raise NotSpliceable("a row group without columns")
    return list(found.items)


def _check_row_groups(row_groups: list[thrift.Struct], start: int, end: int) -> None:
    """Raise unless the row groups lie end to end from `start` to `end`, each column chunk right
    after the one before, with only the fields `_moved` moves."""
    at = start
    for row_group in row_groups:
        if {fid for fid, _, _ in row_group.fields} - _RG_FIELDS:
            raise NotSpliceable("a row group field not moved here")
        if row_group.get(_RG_OFFSET) != at:
            raise NotSpliceable("row groups not end to end")
        for chunk in _chunks(row_group):
            meta = chunk.get(_CC_META)
            fields = {fid for fid, _, _ in chunk.fields}
            if fields - _CC_FIELDS or not isinstance(meta, thrift.Struct):
                raise NotSpliceable("a column chunk field not moved here")
            if chunk.get(_CC_FILE_OFFSET) != 0:
                raise NotSpliceable("a column chunk with its own file offset")
            if {fid for fid, _, _ in meta.fields} - _MD_FIELDS:
                raise NotSpliceable("a column chunk field not moved here")
            first = meta.get(_MD_DICTIONARY_PAGE) or meta.get(_MD_DATA_PAGE)
            if first != at:
                raise NotSpliceable("column chunks not end to end")
            at += meta.get(_MD_SIZE)
        if at - row_group.get(_RG_OFFSET) != row_group.get(_RG_SIZE):
            raise NotSpliceable("a row group's size is not its chunks'")
    if at != end:
        raise NotSpliceable("the row groups do not fill the file")


def _moved(row_group: thrift.Struct, shift: int, ordinal: int) -> thrift.Struct:
    """A row group's footer entry with every offset moved by `shift` bytes."""
    moved = thrift.Struct(list(row_group.fields))
    moved.set(_RG_OFFSET, row_group.get(_RG_OFFSET) + shift)
    if moved.get(_RG_ORDINAL) is not None:
        moved.set(_RG_ORDINAL, ordinal)
    chunks = []
    for chunk in _chunks(row_group):
        meta = thrift.Struct(list(chunk.get(_CC_META).fields))
        for fid in (_MD_DATA_PAGE, _MD_DICTIONARY_PAGE):
            if meta.get(fid) is not None:
                meta.set(fid, meta.get(fid) + shift)
        copy = thrift.Struct(list(chunk.fields))
        copy.set(_CC_META, meta)
        chunks.append(copy)
    moved.set(_RG_COLUMNS, thrift.List(thrift.STRUCT, chunks))
    return moved


def _without_row_groups(footer: thrift.Struct) -> list[tuple[int, int, Any]]:
    """The footer's fields that say how the file was written: all but its rows and row groups."""
    return [f for f in footer.fields if f[0] not in (_FILE_ROWS, _FILE_ROW_GROUPS)]


@dataclass(frozen=True)
class Layout:
    """How a table writer writes a file: `pq.ParquetWriter(..., schema, **options)`, each row
    group written whole. `probe` is the footer of an empty file it writes, row groups aside:
    what a previous file's footer must hold for its row groups to be copied."""

    schema: pa.Schema
    options: dict[str, Any]
    probe: list[tuple[int, int, Any]]

    @classmethod
    def of(cls, schema: pa.Schema, **options: Any) -> Layout:
        empty = cls(schema, options, [])
        return cls(schema, options, _without_row_groups(_footer(empty.encode(None))[0]))

    def encode(self, rows: pa.Table | None) -> bytes:
        """The file this writer writes of `rows` (None: no row), in one row group."""
        sink = pa.BufferOutputStream()
        writer = pq.ParquetWriter(sink, self.schema, **self.options)
        if rows is not None:
            table = rows.cast(self.schema).combine_chunks()
            writer.write_table(table, row_group_size=max(1, table.num_rows))
        writer.close()
        return bytes(sink.getvalue().to_pybytes())


def _encodes_alike(path: Path, layout: Layout, end: int) -> bool:
    """Whether `layout` writes the first row group of the file at `path`, read back, into the
    bytes the file holds for it (up to `end`)."""
    rows = pq.ParquetFile(path).read_row_group(0)
    again = layout.encode(rows)
    footer, data_end = _footer(again)
    if len(_row_groups(footer)) != 1:
        return False
    with path.open("rb") as handle:
        held = handle.read(end)
    return again[:data_end] == held


@dataclass(frozen=True)
class Prefix:
    """The leading row groups of a previous file to copy: the first `row_groups` of `path`, the
    bytes from the start of its data to `end`, and their footer entries."""

    path: Path
    row_groups: int
    rows: int
    end: int
    entries: list[thrift.Struct]


def leading_row_groups(
    path: Path, layout: Layout, group_rows: int, below: str | None, key: str = "run_id"
) -> Prefix | None:
    """The whole row groups of the previous table at `path` whose every row's `key` (its file is
    sorted by it) is below `below` (None: every whole row group), when they can be copied:
    written as `layout` says, `group_rows` rows each, end to end (else None: encode them all)."""
    try:
        footer, data_end = _read_footer(path)
        if _without_row_groups(footer) != layout.probe:
            return None  # another writer, schema or metadata: encoded again
        row_groups = _row_groups(footer)
        _check_row_groups(row_groups, len(_MAGIC), data_end)
    except (OSError, NotSpliceable):
        return None
    whole = 0
    while whole < len(row_groups) and row_groups[whole].get(_RG_ROWS) == group_rows:
        whole += 1
    if below is not None and whole:
        parquet = pq.ParquetFile(path)

        def last_key(index: int) -> str:
            column = parquet.read_row_group(index, columns=[key]).column(0)
            return str(column[len(column) - 1].as_py())

        # the first row group whose last key is not below `below`: the row groups before it
        # hold only keys below it (the file is sorted)
        whole = bisect.bisect_left(range(whole), True, key=lambda i: last_key(i) >= below)
    if not whole:
        return None
    first_end = row_groups[0].get(_RG_OFFSET) + row_groups[0].get(_RG_SIZE)
    try:
        if not _encodes_alike(path, layout, first_end):
            return None  # written with other settings, or by another library: encoded again
    except (OSError, NotSpliceable, pa.ArrowException):
        return None
    end = row_groups[whole - 1].get(_RG_OFFSET) + row_groups[whole - 1].get(_RG_SIZE)
    return Prefix(path, whole, whole * group_rows, end, row_groups[:whole])


def _copy(source: Any, target: Any, start: int, end: int) -> None:
    source.seek(start)
    left = end - start
    while left:
        chunk = source.read(min(left, 1 << 20))
        if not chunk:
            raise NotSpliceable("the file is shorter than its footer says")
        target.write(chunk)
        left -= len(chunk)


def join(prefix: Prefix, rest: Path, target: Path, layout: Layout) -> None:
    """Write to `target` the table whose leading row groups are `prefix`'s and the others those
    of the file `rest` (written by the same writer, from the rows after them).

    Raises:
        NotSpliceable: `rest` is not a file of `layout` laid out end to end (never expected: it
            was written by the writer `layout` describes); `target` is then left incomplete.
        OSError: reading or writing failed.
    """
    footer, data_end = _read_footer(rest)
    if _without_row_groups(footer) != layout.probe:
        raise NotSpliceable("the rows after the copied row groups were written otherwise")
    after = _row_groups(footer)
    _check_row_groups(after, len(_MAGIC), data_end)
    shift = prefix.end - len(_MAGIC)
    entries = list(prefix.entries)
    entries += [
        _moved(group, shift, prefix.row_groups + number) for number, group in enumerate(after)
    ]
    joined = thrift.Struct(list(footer.fields))
    joined.set(_FILE_ROWS, prefix.rows + sum(group.get(_RG_ROWS) for group in after))
    joined.set(_FILE_ROW_GROUPS, thrift.List(thrift.STRUCT, entries))
    encoded = thrift.write_struct(joined)
    with target.open("wb") as out:
        out.write(_MAGIC)
        with prefix.path.open("rb") as previous:
            _copy(previous, out, len(_MAGIC), prefix.end)
        with rest.open("rb") as encoded_rest:
            _copy(encoded_rest, out, len(_MAGIC), data_end)
        out.write(encoded)
        out.write(len(encoded).to_bytes(4, "little"))
        out.write(_MAGIC)
