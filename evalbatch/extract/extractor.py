"""Which extractor parses payloads in the events pass (E-108), and the native one's library.

The native extractor is `native_scan.cpp`, built by `make run` into `_native_scan.so` beside
this file over Debian's libsimdjson; where it is not built (another platform, no compiler) the
DuckDB query `sql/events/event_scan.sql` parses every payload. Both give one answer: the choice
changes how fast, never what. Light to import: `--version` says which extractor runs.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evalbatch.errors import InputError
from evalbatch.extract import scan_fields
from evalbatch.options import EXTRACTOR_VARIABLE, EXTRACTORS, Extractor

if TYPE_CHECKING:
    import duckdb

LIBRARY = Path(__file__).with_name("_native_scan.so")


class NativeUnavailable(InputError):
    """The native extractor was asked for (`--extractor native`) and is not built here."""


@dataclass(frozen=True)
class Library:
    """The loaded library and the simdjson version it was built against."""

    handle: ctypes.CDLL
    simdjson_version: str


@cache
def library() -> Library | None:
    """The built library with its functions typed, or None when it is missing or will not
    load (built for another machine, its simdjson removed, or from an older source that lacks
    a function or writes `f` in another order than `scan_fields` declares, E-134: `make native`
    builds it again)."""
    if not LIBRARY.exists():
        return None
    try:
        lib = ctypes.CDLL(str(LIBRARY))
        _declare(lib)
    except (OSError, AttributeError):
        return None
    if _fields(lib) != scan_fields.by_type():
        return None
    return Library(lib, lib.evalbatch_scan_simdjson_version().decode())


def _fields(lib: ctypes.CDLL) -> dict[str, tuple[str, ...]]:
    """The payload fields the library writes into `f`, per type that has any, in its order."""
    described: dict[str, tuple[str, ...]] = {}
    index = 0
    while (line := lib.evalbatch_scan_fields(index)) is not None:
        type_, _, names = line.decode().partition(":")
        if names:
            described[type_] = tuple(names.split(","))
        index += 1
    return described


def _declare(lib: ctypes.CDLL) -> None:
    """Type the library's functions (AttributeError when one is missing)."""
    pointer = ctypes.c_void_p
    lib.evalbatch_scan.restype = pointer
    lib.evalbatch_scan.argtypes = [pointer, ctypes.c_int, pointer, ctypes.c_int, ctypes.c_int]
    lib.evalbatch_scan.argtypes += [pointer] * 3
    lib.evalbatch_scan_sizes.restype = None
    lib.evalbatch_scan_sizes.argtypes = [pointer, pointer, pointer]
    lib.evalbatch_scan_copy.restype = None
    lib.evalbatch_scan_copy.argtypes = [pointer, pointer, pointer, pointer]
    lib.evalbatch_scan_free.restype = None
    lib.evalbatch_scan_free.argtypes = [pointer]
    lib.evalbatch_scan_simdjson_version.restype = ctypes.c_char_p
    lib.evalbatch_scan_fields.restype = ctypes.c_char_p
    lib.evalbatch_scan_fields.argtypes = [ctypes.c_int]
    lib.evalbatch_format_double.restype = ctypes.c_int64
    lib.evalbatch_format_double.argtypes = [ctypes.c_double, ctypes.c_char_p, ctypes.c_int64]
    lib.evalbatch_key_blocks.restype = ctypes.c_int64
    lib.evalbatch_key_blocks.argtypes = [pointer, ctypes.c_int, pointer, pointer, pointer]


def required() -> Library:
    """The library, for the code that walks with it (raises when it is not built)."""
    built = library()
    if built is None:
        raise NativeUnavailable(
            f"the native extractor is not built ({LIBRARY.name} is missing or does not load): "
            "`make run` builds it; --extractor duckdb parses payloads without it"
        )
    return built


def resolve(choice: Extractor) -> Literal["native", "duckdb"]:
    """The extractor a choice runs: "auto" is the native one where it is built."""
    if choice == "duckdb":
        return "duckdb"
    if choice == "native":
        required()
        return "native"
    return "native" if library() is not None else "duckdb"


def describe(choice: Extractor = "auto") -> str:
    """What `--version` and `run --json` say: which extractor runs, and over what."""
    built = library()
    if resolve(choice) == "native" and built is not None:
        return f"native (simdjson {built.simdjson_version})"
    return "duckdb"


def _variable(con: duckdb.DuckDBPyConnection) -> Extractor:
    value = con.sql(f"SELECT getvariable('{EXTRACTOR_VARIABLE}')").fetchall()[0][0]
    return value if value in EXTRACTORS else "auto"


def chosen(con: duckdb.DuckDBPyConnection) -> Literal["native", "duckdb"]:
    """The extractor a connection was set up for (`Resources.apply`; "auto" when unset)."""
    return resolve(_variable(con))


def carry_choice(parent: duckdb.DuckDBPyConnection, cursor: duckdb.DuckDBPyConnection) -> None:
    """Give a cursor its connection's extractor (DuckDB variables are per connection)."""
    cursor.execute(f"SET VARIABLE {EXTRACTOR_VARIABLE} = $value", {"value": _variable(parent)})
