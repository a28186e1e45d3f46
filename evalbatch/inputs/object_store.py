"""Event files in object storage (E-153): `s3://`, `gs://` and `abfs://` URIs, read through Arrow's
own filesystem layer (`pyarrow.fs`), never through a DuckDB extension fetched at run time.

A URI names an object, a prefix (a "directory": every `*.parquet` below it) or a glob, as a local
path does. Expanding one lists the store once, and what the listing saw (each object's size and
time) is kept; DuckDB's opens of an object share one handle, so its size is asked once. DuckDB reads
them as it reads local files — the same reader, the same types, hive keys and damaged-data
checks, so a log graded from a bucket gives the answer it gives from a disk — through a
filesystem registered on its connection (`attach`) that hands every byte range to `pyarrow.fs`:
row groups are fetched as they are read, nothing is copied whole to a local file.

Credentials come from each store's own default chain (for S3 the AWS chain: the environment,
`~/.aws`, the instance's role), the endpoint from `AWS_ENDPOINT_URL` for an S3-compatible
server. A list of URIs is all a reader elsewhere (a worker on another machine) needs: its own
`event_files.scan` lists nothing more than the objects named, with its own credentials.

fsspec is imported when a URI is first met: a local run does not load it.
"""

from __future__ import annotations

import fnmatch
import functools
import io
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalbatch.errors import InputError

if TYPE_CHECKING:
    import duckdb
    import pyarrow.fs as pafs

#: the schemes read, each as `pyarrow.fs.FileSystem.from_uri` reads it (E-153)
SCHEMES = ("s3", "gs", "gcs", "abfs", "abfss")
#: where the endpoint of an S3-compatible server is given (the AWS SDKs' own variable)
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL"
#: the variables a filesystem is made from: a change of them makes a new one
_CREDENTIAL_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_")
#: the marker of an interrupted ingest (parquet_layout.INCOMPLETE, named here to keep this module
#: free of the writer's imports)
INCOMPLETE = "_INGEST_INCOMPLETE"
#: a URI: a scheme, then `://`
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_GLOB_CHARS = frozenset("*?[")
#: an Inspect eval log by its name alone (inspect_cache.is_inspect_log's name rule)
_LOG_SUFFIX = ".eval"
#: the longest reason quoted from a store's error: its first line, cut here
_REASON_CHARS = 240


def scheme_of(path: str) -> str | None:
    """The URI scheme of `path` (lower case), None for a local path."""
    match = _URI.match(path)
    return match.group(1).lower() if match else None


def is_remote(path: str) -> bool:
    """Whether `path` is a URI of an object store evalbatch reads."""
    return scheme_of(path) in SCHEMES


def check_scheme(path: str) -> None:
    """Raise when `path` is a URI of a scheme no reader here takes (`http://`, `ftp://`): said
    once, in a line, rather than as a missing local file."""
    scheme = scheme_of(path)
    if scheme is not None and scheme not in SCHEMES and scheme != "file":
        raise InputError(
            f"cannot read {path!r}: {scheme}:// is not read; event files are local paths or "
            + ", ".join(f"{name}://" for name in SCHEMES)
            + " URIs (E-153)"
        )


#: a store's URI as a `Path` spells it too (`s3:/bucket/out`: its double slash folded)
_STORE_PATH = re.compile(r"^(" + "|".join(SCHEMES) + r"):/+", re.IGNORECASE)


def refuse_as_output(option: str, destination: str | Path) -> None:
    """Stop before anything is written when `destination` is in object storage: outputs go to a
    local or shared path (E-153; docs/outputs.md says what a store would need). Without this, a
    `Path` folds `s3://bucket/out` into a local directory `s3:/bucket/out`."""
    text = str(destination)
    match = _STORE_PATH.match(text)
    if match:
        uri = f"{match.group(1)}://{text[match.end() :]}"
        raise InputError(
            f"{option} {uri}: outputs are written to a local or shared path, not to object "
            "storage (E-153); write them to a directory and copy it to the store"
        )


def _split(uri: str) -> tuple[str, str, str]:
    """(scheme, authority, key) of a URI; the key has no leading or trailing slash."""
    scheme = scheme_of(uri) or ""
    rest = uri[len(scheme) + 3 :]
    authority, _, key = rest.partition("/")
    return scheme, authority, key.strip("/")


def _root(scheme: str, authority: str) -> str:
    """The filesystem path of a URI's bucket or container (`from_uri`'s: abfs names the
    container before `@`)."""
    return authority.split("@", 1)[0] if scheme in ("abfs", "abfss") else authority


def _fs_path(uri: str) -> str:
    scheme, authority, key = _split(uri)
    root = _root(scheme, authority)
    return f"{root}/{key}" if key else root


def _uri(scheme: str, authority: str, fs_path: str) -> str:
    """The URI of a filesystem path below the bucket of (scheme, authority)."""
    _, _, key = fs_path.partition("/")
    return f"{scheme}://{authority}/{key}" if key else f"{scheme}://{authority}"


def _environment() -> tuple[tuple[str, str], ...]:
    found = ((k, v) for k, v in os.environ.items() if k.startswith(_CREDENTIAL_PREFIXES))
    return tuple(sorted(found))


def filesystem(uri: str) -> pafs.FileSystem:
    """The `pyarrow.fs` filesystem of a URI's bucket: made once per bucket and environment (the
    credentials and endpoint are read when it is made)."""
    scheme, authority, _ = _split(uri)
    return _filesystem(scheme, authority, _environment())


@functools.cache
def _filesystem(scheme: str, authority: str, environment: tuple[tuple[str, str], ...]) -> Any:
    import pyarrow.fs as pafs

    try:
        made, _ = pafs.FileSystem.from_uri(f"{scheme}://{authority}/")
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        raise InputError(f"cannot read {scheme}://{authority}: {_reason(exc)}") from None
    return made


# --------------------------------------------------------------------------------------------
# What the listings saw


class _Known:
    """Each object's size and time as the last listing or look-up saw it, by URI (thread-safe:
    DuckDB reads from several threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, tuple[int, datetime | None]] = {}

    def put(self, uri: str, size: int, mtime: datetime | None) -> None:
        with self._lock:
            self._files[uri] = (size, mtime)

    def get(self, uri: str) -> tuple[int, datetime | None] | None:
        with self._lock:
            return self._files.get(uri)


_KNOWN = _Known()


@dataclass
class Listing:
    """What expanding one URI found: the event files, and each prefix listed whole with the
    prefixes below it that hold an ingest's marker (E-122), so `interrupted` asks no more."""

    files: list[str] = field(default_factory=list)
    marked: dict[str, frozenset[str]] = field(default_factory=dict)


def _reason(exc: BaseException) -> str:
    """A store's error in one line: the credentials named where access was denied."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    upper = text.upper()
    if any(
        word in upper
        for word in (
            "ACCESS_DENIED",
            "ACCESSDENIED",
            "INVALIDACCESSKEYID",
            "INVALID_ACCESS_KEY_ID",
            "SIGNATUREDOESNOTMATCH",
            "SIGNATURE_DOES_NOT_MATCH",
            "FORBIDDEN",
            "UNAUTHORIZED",
        )
    ):
        hint = (
            "access denied: check the credentials (the store's default chain: for S3 "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, or the "
            "instance's role)"
        )
        return f"{hint}; {_cut(text)}"
    if "NO_SUCH_BUCKET" in upper or "NOSUCHBUCKET" in upper:
        return f"no such bucket; {_cut(text)}"
    if "NETWORK_CONNECTION" in upper or "COULD NOT CONNECT" in upper:
        return (
            f"the store cannot be reached (endpoint: ${ENDPOINT_VARIABLE} when set); {_cut(text)}"
        )
    return _cut(text)


def _cut(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."


def _unreadable(uri: str, exc: BaseException) -> InputError:
    return InputError(f"cannot read {uri!r}: {_reason(exc)}")


def _is_event_file(name: str) -> bool:
    """The objects below a prefix that are read: Parquet files, and Inspect logs by their name
    (reported, not read: `inspect_cache.convert`)."""
    lower = name.lower()
    return lower.endswith(".parquet") or lower.removesuffix(".gz").endswith(_LOG_SUFFIX)


def expand(uri: str) -> Listing:
    """The event files a URI names: the object itself, every `*.parquet` (and `.eval` log) below
    a prefix, or the objects a glob matches (`*`, `?`, `[...]` within a name, `**` across
    prefixes, names starting with `.` matched only by a `.`: Python's glob). Sorted.

    Raises:
        InputError: nothing there, no such bucket, or the store refused or could not be reached
            (one line naming the URI).
    """
    import pyarrow.fs as pafs

    scheme, authority, key = _split(uri)
    if not authority or _GLOB_CHARS & set(authority):
        raise InputError(f"cannot read {uri!r}: name a bucket (no glob in its name)")
    fs = filesystem(uri)
    root = _root(scheme, authority)
    if _GLOB_CHARS & set(key):
        return _glob(fs, scheme, authority, key, uri)
    path = f"{root}/{key}" if key else root
    try:
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            _KNOWN.put(_uri(scheme, authority, path), info.size, info.mtime)
            return Listing([_uri(scheme, authority, path)])
        if info.type == pafs.FileType.Directory:
            listing = _list(fs, scheme, authority, path)
            listing.files = sorted(
                name for name in listing.files if _is_event_file(name.rsplit("/", 1)[-1])
            )
            return listing
    except OSError as exc:
        raise _unreadable(uri, exc) from None
    raise InputError(f"no event file at {uri!r}: {_missing(fs, root)}")


def _missing(fs: pafs.FileSystem, root: str) -> str:
    """Why nothing is at a URI: its bucket is not there, or nothing in it has that name."""
    import pyarrow.fs as pafs

    try:
        bucket = fs.get_file_info(root).type
    except OSError as exc:
        return _reason(exc)
    if bucket == pafs.FileType.NotFound:
        return f"there is no bucket {root!r} (or it cannot be seen with these credentials)"
    return "no object or prefix of that name (give Parquet files, prefixes or globs)"


def _list(fs: pafs.FileSystem, scheme: str, authority: str, path: str) -> Listing:
    """Every object below `path`, as URIs, each one's size and time kept; the directories
    holding an ingest's marker are noted for `interrupted`."""
    import pyarrow.fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    found: list[str] = []
    marked: set[str] = set()
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        uri = _uri(scheme, authority, info.path)
        if info.base_name == INCOMPLETE:
            marked.add(uri.rsplit("/", 1)[0])
            continue
        _KNOWN.put(uri, info.size, info.mtime)
        found.append(uri)
    return Listing(found, {_uri(scheme, authority, path): frozenset(marked)})


def _glob(fs: pafs.FileSystem, scheme: str, authority: str, key: str, uri: str) -> Listing:
    parts = key.split("/")
    fixed = next(i for i, part in enumerate(parts) if _GLOB_CHARS & set(part))
    root = "/".join([_root(scheme, authority), *parts[:fixed]])
    pattern = parts[fixed:]
    try:
        listing = _list(fs, scheme, authority, root)
    except FileNotFoundError:
        listing = Listing()
    except OSError as exc:
        raise _unreadable(uri, exc) from None
    prefix = len(_uri(scheme, authority, root)) + 1
    listing.files = sorted(
        name for name in listing.files if _matches(name[prefix:].split("/"), pattern)
    )
    if not listing.files:
        raise InputError(
            f"no event file at {uri!r}: nothing matches (give Parquet files, prefixes or globs)"
        )
    return listing


def _matches(parts: Sequence[str], pattern: Sequence[str]) -> bool:
    """Whether a key's names match a glob's, as Python's `glob(recursive=True)` matches paths."""
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(
            _matches(parts[i:], rest)
            for i in range(len(parts) + 1)
            if not any(name.startswith(".") for name in parts[:i])
        )
    if not parts:
        return False
    name = parts[0]
    if name.startswith(".") and not head.startswith(".") and _GLOB_CHARS & set(head):
        return False
    return fnmatch.fnmatchcase(name, head) and _matches(parts[1:], rest)


def interrupted(
    given: Sequence[str], files: Sequence[str], listings: Sequence[Listing]
) -> dict[str, list[str]]:
    """The prefixes holding an ingest's marker (E-122) among the prefixes `given` and the
    prefixes of `files`, each with the files below it, as `parquet_layout.interrupted_ingests`
    finds them on a disk: what the `listings` saw is taken as seen, anything else looked up."""
    import pyarrow.fs as pafs

    marked: dict[str, bool] = {}

    def has_marker(directory: str) -> bool:
        if directory not in marked:
            listed = ((p, held) for listing in listings for p, held in listing.marked.items())
            for prefix, holding in listed:
                if directory == prefix or directory.startswith(prefix + "/"):
                    marked[directory] = directory in holding
                    break
            else:
                marker = f"{directory}/{INCOMPLETE}"
                try:
                    found = filesystem(marker).get_file_info(_fs_path(marker)).type
                except OSError:
                    # a marker that cannot be looked at is not seen, as `os.path.lexists` sees
                    # none on a disk: S3 answers 403 for a missing key to a reader that may
                    # not list the bucket (a worker handed its objects only)
                    found = pafs.FileType.NotFound
                marked[directory] = found == pafs.FileType.File
        return marked[directory]

    def nearest(directory: str) -> str | None:
        """The closest prefix at or above `directory` (inside its bucket) that is marked."""
        scheme, authority, key = _split(directory)
        names = key.split("/") if key else []
        for depth in range(len(names), 0, -1):
            candidate = f"{scheme}://{authority}/" + "/".join(names[:depth])
            if has_marker(candidate):
                return candidate
        return None

    found: dict[str, list[str]] = {}
    prefixes = {prefix for listing in listings for prefix in listing.marked}
    for path in given:  # a prefix given (not an object, not a glob), as a directory given
        prefix = path.rstrip("/")
        if prefix in prefixes and (hit := nearest(prefix)) is not None:
            found.setdefault(hit, [])
    for path in files:
        if (hit := nearest(path.rsplit("/", 1)[0])) is not None:
            found.setdefault(hit, []).append(path)
    return found


def read_error(uri: str) -> str | None:
    """Why the object at `uri` cannot be read (one line), None when its last bytes can be."""
    try:
        with filesystem(uri).open_input_file(_fs_path(uri)) as handle:
            size = handle.size()
            handle.read_at(min(size, 8), max(size - 8, 0))
    except (OSError, InputError) as exc:
        return _reason(exc)
    return None


# --------------------------------------------------------------------------------------------
# DuckDB's reads


@functools.lru_cache(maxsize=1024)
def _shared_handle(
    uri: str, size: int, mtime: datetime | None, environment: tuple[tuple[str, str], ...]
) -> Any:
    """One open `pyarrow.fs` file per object version (and credentials), shared by every open of
    it: DuckDB opens a file once per query, and each `open_input_file` asks the store for its
    size again (for S3 a HEAD request). Positional reads on it are independent requests, safe
    from any thread."""
    return filesystem(uri).open_input_file(_fs_path(uri))


class _Reader(io.RawIOBase):
    """A position over a shared handle: what one open of an object reads through."""

    def __init__(self, handle: Any, size: int) -> None:
        super().__init__()
        self._handle, self._size, self._position = handle, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def size(self) -> int:
        return self._size

    def read(self, size: int | None = -1) -> bytes:
        wanted = self._size - self._position if size is None or size < 0 else size
        wanted = max(0, min(wanted, self._size - self._position))
        data = bytes(self._handle.read_at(wanted, self._position)) if wanted else b""
        self._position += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)


def attach(con: duckdb.DuckDBPyConnection, paths: Iterable[str]) -> None:
    """Let DuckDB's own readers (read_parquet) read the object-store URIs among `paths` through
    `pyarrow.fs`: a filesystem per scheme is registered on the connection (and so on its
    cursors) once."""
    schemes = {scheme_of(path) for path in paths if is_remote(path)}
    if not schemes:
        return
    registered = set(con.list_filesystems())
    for scheme in sorted(s for s in schemes if s is not None):
        if scheme not in registered:
            con.register_filesystem(_duckdb_files(scheme)())


@functools.cache
def _duckdb_files(scheme: str) -> type:
    """The fsspec filesystem class DuckDB reads `scheme://` URIs with (DuckDB chooses one by
    its `protocol`)."""
    from fsspec import AbstractFileSystem

    class ObjectStoreFiles(AbstractFileSystem):
        """Reads only: each call answered from what the listings saw where it can be, else from
        the bucket's `pyarrow.fs` filesystem."""

        protocol = (scheme,)
        cachable = False

        @classmethod
        def _strip_protocol(cls, path: Any) -> Any:
            text = str(path)
            prefix = f"{scheme}://"
            return text[len(prefix) :] if text.lower().startswith(prefix) else text

        def _full(self, path: str) -> str:
            return f"{scheme}://{self._strip_protocol(path).rstrip('/')}"

        def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
            import pyarrow.fs as pafs

            uri = self._full(path)
            name = self._strip_protocol(uri)
            known = _KNOWN.get(uri)
            if known is not None:
                return {"name": name, "size": known[0], "type": "file", "mtime": known[1]}
            found = filesystem(uri).get_file_info(_fs_path(uri))
            if found.type == pafs.FileType.File:
                _KNOWN.put(uri, found.size, found.mtime)
                return {"name": name, "size": found.size, "type": "file", "mtime": found.mtime}
            if found.type == pafs.FileType.Directory:
                return {"name": name, "size": 0, "type": "directory", "mtime": None}
            raise FileNotFoundError(uri)

        def modified(self, path: str) -> datetime:
            mtime = self.info(path).get("mtime")
            if mtime is None:
                raise OSError(f"{self._full(path)}: no modification time")
            return mtime

        def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
            import pyarrow.fs as pafs

            uri = self._full(path)
            selector = pafs.FileSelector(_fs_path(uri), allow_not_found=True)
            _, authority, _ = _split(uri)
            entries = []
            for found in filesystem(uri).get_file_info(selector):
                name = self._strip_protocol(_uri(scheme, authority, found.path))
                kind = "file" if found.type == pafs.FileType.File else "directory"
                entries.append({"name": name, "size": found.size or 0, "type": kind})
            return entries if detail else [entry["name"] for entry in entries]

        def glob(self, path: str, maxdepth: int | None = None, **kwargs: Any) -> Any:
            """The object itself when one has this name (DuckDB globs every path it is given;
            event_files hands it only names expanded already), else the glob's matches."""
            uri = self._full(path)
            try:
                if self.info(uri)["type"] == "file":
                    return [self._strip_protocol(uri)]
            except FileNotFoundError:
                pass
            if not _GLOB_CHARS & set(uri):
                return []
            try:
                return [self._strip_protocol(name) for name in expand(uri).files]
            except InputError:
                return []

        def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
            if "r" not in mode or any(flag in mode for flag in "wa+"):
                raise PermissionError(f"{self._full(path)}: object stores are read only here")
            uri = self._full(path)
            found = self.info(uri)
            handle = _shared_handle(uri, found["size"], found["mtime"], _environment())
            return _Reader(handle, found["size"])

    ObjectStoreFiles.__name__ = ObjectStoreFiles.__qualname__ = f"ObjectStoreFiles_{scheme}"
    return ObjectStoreFiles
