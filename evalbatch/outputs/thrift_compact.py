"""Thrift's compact protocol, as far as a Parquet footer needs it: a struct is read into its
fields in the order written, each kept with its id, type and value, and written back the way
Apache Thrift's C++ library writes it, so an unchanged footer is written back byte for byte
(E-156: the footer of a table whose leading row groups are copied, not encoded again).

Only what Parquet's `FileMetaData` holds is read: integers, binary, booleans, doubles, lists
and structs (sets and maps, which it does not hold, are refused).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

# the compact protocol's type codes
BOOL_TRUE, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


class ThriftError(ValueError):
    """Bytes that are not a struct this reader can read."""


@dataclass
class Struct:
    """A struct's fields in the order they were written: (field id, type code, value)."""

    fields: list[tuple[int, int, Any]] = field(default_factory=list)

    def get(self, field_id: int) -> Any:
        """The value of field `field_id`; None when absent."""
        for fid, _, value in self.fields:
            if fid == field_id:
                return value
        return None

    def set(self, field_id: int, value: Any) -> None:
        """Replace the value of a field that is present (its type is kept)."""
        for number, (fid, kind, _) in enumerate(self.fields):
            if fid == field_id:
                self.fields[number] = (fid, kind, value)
                return
        raise KeyError(field_id)


@dataclass
class List:
    """A list: its elements' type code and the elements."""

    kind: int
    items: list[Any]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ThriftError("the struct ends early")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ThriftError("a varint too long")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ThriftError("the struct ends early")
        value = self.data[self.pos : self.pos + size]
        self.pos += size
        return value

    def value(self, kind: int) -> Any:
        if kind in (BOOL_TRUE, BOOL_FALSE):  # a boolean in a list: one byte of its own
            return self.byte() == BOOL_TRUE
        if kind == BYTE:
            return self.byte()
        if kind in (I16, I32, I64):
            return self.zigzag()
        if kind == DOUBLE:
            return struct.unpack("<d", self.take(8))[0]
        if kind == BINARY:
            return self.take(self.varint())
        if kind == LIST:
            header = self.byte()
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            return List(element, [self.value(element) for _ in range(size)])
        if kind == STRUCT:
            return self.struct()
        raise ThriftError(f"type {kind} is not read here")

    def struct(self) -> Struct:
        found = Struct()
        last = 0
        while True:
            header = self.byte()
            if header == 0:
                return found
            kind, delta = header & 0x0F, header >> 4
            field_id = last + delta if delta else self.zigzag()
            if kind in (BOOL_TRUE, BOOL_FALSE):
                value: Any = kind == BOOL_TRUE
            else:
                value = self.value(kind)
            found.fields.append((field_id, kind, value))
            last = field_id


def read_struct(data: bytes) -> Struct:
    """The struct `data` holds, whole.

    Raises:
        ThriftError: `data` is not one struct of the types read here, or has bytes after it.
    """
    reader = _Reader(data)
    found = reader.struct()
    if reader.pos != len(data):
        raise ThriftError("bytes after the struct")
    return found


def _varint(value: int, out: bytearray) -> None:
    while True:
        if value < 0x80:
            out.append(value)
            return
        out.append((value & 0x7F) | 0x80)
        value >>= 7


def _zigzag(value: int, out: bytearray) -> None:
    _varint((value << 1) ^ (value >> 63), out)


def _write_value(kind: int, value: Any, out: bytearray) -> None:
    if kind in (BOOL_TRUE, BOOL_FALSE):
        out.append(BOOL_TRUE if value else BOOL_FALSE)
    elif kind == BYTE:
        out.append(value)
    elif kind in (I16, I32, I64):
        _zigzag(value, out)
    elif kind == DOUBLE:
        out += struct.pack("<d", value)
    elif kind == BINARY:
        _varint(len(value), out)
        out += value
    elif kind == LIST:
        size = len(value.items)
        if size < 15:
            out.append(size << 4 | value.kind)
        else:
            out.append(0xF0 | value.kind)
            _varint(size, out)
        for item in value.items:
            _write_value(value.kind, item, out)
    elif kind == STRUCT:
        _write_struct(value, out)
    else:
        raise ThriftError(f"type {kind} is not written here")


def _write_struct(found: Struct, out: bytearray) -> None:
    last = 0
    for field_id, kind, value in found.fields:
        if kind in (BOOL_TRUE, BOOL_FALSE):
            kind = BOOL_TRUE if value else BOOL_FALSE
        if 0 < field_id - last <= 15:
            out.append((field_id - last) << 4 | kind)
        else:
            out.append(kind)
            _zigzag(field_id, out)
        if kind not in (BOOL_TRUE, BOOL_FALSE):
            _write_value(kind, value, out)
        last = field_id
    out.append(0)


def write_struct(found: Struct) -> bytes:
    """`found` in the compact protocol, as Thrift's C++ library writes it."""
    out = bytearray()
    _write_struct(found, out)
    return bytes(out)
