"""Inspect logs wherever a log goes (E-144): an Inspect eval log among a command's inputs is read
as the Parquet files `ingest` would write for it.

`event_files.expand_paths` finds the logs (a `.eval` archive or a `.json` log named directly,
below a directory or matched by a glob, told apart by their first bytes as `ingest` tells them,
E-111), and `event_files.scan` hands them to `as_parquet`: each is converted by `ingest_paths`,
the one mapping (E-111), into the canonical layout in a cache directory, and its Parquet files
are read in its place, as any input. So `run base.eval` grades what `ingest base.eval` then
`run` on the ingested directory grades, byte for byte.

An entry is keyed by what decides its content: the SHA-256 of the log's bytes, the mapping's
version (a SHA-256 of the source of the modules that convert, so a changed mapping never reads
an old entry), Inspect's version, the options of the mapping (`InspectOptions`) and the caps on
input (`InputLimits`). A second command on the same log reads the entry and converts nothing.
An entry is made in a private directory and renamed into place whole: two commands at once
never see half of one, and the one that renames second uses the first one's. The cache lives
in `$EVALBATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/evalbatch`, else `~/.cache/evalbatch`, under
`inspect/`; deleting that directory clears it (entries are made again when needed). Where it
cannot be written, a log is converted into a temporary directory removed when the process ends.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from evalbatch.inputs import inspect_logs, object_store
from evalbatch.inputs.event_rows import IngestProblem
from evalbatch.inputs.inspect_logs import InspectOptions
from evalbatch.inputs.limits import DEFAULT_LIMITS, InputLimits
from evalbatch.problems import severity
from evalbatch.version import package_version

#: where the cache lives when set (else `$XDG_CACHE_HOME/evalbatch`, else `~/.cache/evalbatch`)
CACHE_ENV = "EVALBATCH_CACHE_DIR"
#: the cache's directory of converted logs, one entry per log content and mapping
ENTRIES = "inspect"
#: what an entry holds besides its Parquet files: the files and the conversion's problems
ENTRY_FILE = "entry.json"
#: the suffixes of the files below a directory that may be Inspect logs (optionally `.gz`)
LOG_SUFFIXES = (".eval", ".json")
#: the modules whose source is the mapping's version: any change to them makes new entries
MAPPING_MODULES = (
    "inspect_logs",
    "ingest",
    "openwop_formats",
    "event_rows",
    "lossless_json",
    "parquet_layout",
    "limits",
)
_HEAD = 256


@dataclass(frozen=True)
class Converted:
    """One Inspect log as the graders read it: the Parquet files of its run (none when nothing
    could be read) and what its conversion reported, as `ingest` reports it."""

    log: str
    files: tuple[str, ...]
    problems: tuple[IngestProblem, ...]

    @property
    def errors(self) -> list[IngestProblem]:
        """The problems of something skipped (severity `error`): the log's file problems."""
        return [problem for problem in self.problems if problem.severity == "error"]


def cache_root() -> Path:
    """The cache directory: `$EVALBATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/evalbatch` (an
    absolute one, as the XDG spec asks), else `~/.cache/evalbatch`."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "evalbatch"


def is_inspect_log(path: str | Path) -> bool:
    """Whether the file at `path` is an Inspect eval log, as `ingest` tells one (E-111): a
    `.eval` name (Inspect's own rule: an unreadable one is a log that cannot be read), or first
    bytes that are a zip archive or `{"version": N, "status": ...`, gzip-compressed or not."""
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith(".eval"):
        return True
    if object_store.is_remote(str(path)):
        return False  # E-153: a log in object storage is told by its name alone, and not read
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD)
            if head.startswith(b"\x1f\x8b"):
                handle.seek(0)
                with gzip.GzipFile(fileobj=handle) as plain:
                    head = plain.read(_HEAD)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    return inspect_logs.is_eval_archive(head) or inspect_logs.is_json_log(head)


def may_be_log(name: str) -> bool:
    """Whether a file of this name, below a directory, is looked at as a possible log."""
    return name.lower().removesuffix(".gz").endswith(LOG_SUFFIXES)


def as_parquet(
    files: list[str],
    options: InspectOptions | None = None,
    limits: InputLimits = DEFAULT_LIMITS,
) -> tuple[list[str], list[Converted]]:
    """`files` with each Inspect log replaced by the Parquet files of its conversion (sorted, as
    `expand_paths` sorts), and each log's conversion."""
    options = options or InspectOptions()
    kept: list[str] = []
    converted: list[Converted] = []
    for path in files:
        if path.endswith(".parquet") or not is_inspect_log(path):
            kept.append(path)
            continue
        entry = convert(path, options, limits)
        converted.append(entry)
        kept += entry.files
    return sorted(kept), converted


#: E-153: object storage is read for Parquet event files only
_REMOTE_LOG = (
    "an Inspect log in object storage is not read: copy it to a local path, or ingest it and "
    "store the Parquet files `ingest` writes"
)

#: the logs converted by this process, by what identifies their file: a command that reads its
#: inputs twice (regress's sides, the runs a filter picks) hashes each log once
_SEEN: dict[tuple[object, ...], Converted] = {}


def convert(
    log: str, options: InspectOptions | None = None, limits: InputLimits = DEFAULT_LIMITS
) -> Converted:
    """The Inspect log at `log` as Parquet files: the cache's entry for its content when there
    is one, else converted by `ingest_paths` and put in the cache."""
    options = options or InspectOptions()
    if object_store.is_remote(log):
        return Converted(log, (), (IngestProblem(log, None, "input-unreadable", _REMOTE_LOG),))
    try:
        stat = os.stat(log)
    except OSError as exc:
        reason = f"cannot be read ({exc.strerror or type(exc).__name__})"
        return Converted(log, (), (IngestProblem(log, None, "input-unreadable", reason),))
    seen = (
        os.path.abspath(log),
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
        options,
        limits,
    )
    known = _SEEN.get(seen)
    if known is not None and all(os.path.isfile(name) for name in known.files):
        return known
    _SEEN[seen] = _cached(log, _entry_key(log, options, limits), options, limits)
    return _SEEN[seen]


def _inspect_version() -> str | None:
    """Inspect's installed version (part of an entry's key); None without the extra."""
    try:
        return metadata.version("inspect_ai")
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def mapping_version() -> str:
    """The mapping's version: a SHA-256 of evalbatch's version and of the source of the modules
    that convert a log (read once; an install without the source goes by the version alone)."""
    digest = hashlib.sha256(package_version().encode())
    here = Path(__file__).resolve().parent
    for name in MAPPING_MODULES:
        with contextlib.suppress(OSError):
            digest.update((here / f"{name}.py").read_bytes())
    return digest.hexdigest()


def _entry_key(log: str, options: InspectOptions, limits: InputLimits) -> str | None:
    """The entry's name: a SHA-256 of the log's bytes, the mapping's version, Inspect's version,
    the options and the caps. None without Inspect's reader (nothing is cached) or when the
    log cannot be read whole."""
    inspect_version = _inspect_version()
    if inspect_version is None:
        return None
    content = hashlib.sha256()
    try:
        with open(log, "rb") as handle:
            while chunk := handle.read(1 << 20):
                content.update(chunk)
    except OSError:
        return None
    what = {
        "log": content.hexdigest(),
        "mapping": mapping_version(),
        "inspect_ai": inspect_version,
        "options": asdict(options),
        "limits": asdict(limits),
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _cached(log: str, key: str | None, options: InspectOptions, limits: InputLimits) -> Converted:
    """The entry `key` of the cache, made when it is not there yet."""
    entries = cache_root() / ENTRIES
    if key is not None:
        found = _read_entry(log, entries / key)
        if found is not None:
            return found
    try:
        entries.mkdir(parents=True, exist_ok=True)
        _clear_leftovers(entries)
        scratch = Path(tempfile.mkdtemp(prefix=_CONVERTING, dir=entries))
    except OSError:  # a cache that cannot be written: this process's own directory
        scratch = Path(tempfile.mkdtemp(prefix="evalbatch-inspect-"))
        atexit.register(shutil.rmtree, scratch, True)
        key = None
    converted = _convert_into(log, scratch, options, limits)
    if key is None or not converted.files:
        if not converted.files:
            shutil.rmtree(scratch, ignore_errors=True)
        return converted
    try:
        os.rename(scratch, entries / key)
    except OSError:  # another command put the same entry in place first
        shutil.rmtree(scratch, ignore_errors=True)
        return _read_entry(log, entries / key) or _convert_aside(log, options, limits)
    return _read_entry(log, entries / key) or _convert_aside(log, options, limits)


#: an entry being made, and one set aside (not whole): neither is ever read as an entry
_CONVERTING, _STALE = ".converting-", ".stale-"
#: what is left of a command killed while making an entry is removed after this many seconds
LEFTOVER_SECONDS = 24 * 3600


def _clear_leftovers(entries: Path) -> None:
    """Remove what commands killed while making an entry left, once it is a day old (no
    conversion takes that long, so none still running loses its directory)."""
    old = time.time() - LEFTOVER_SECONDS
    for path in entries.iterdir():
        with contextlib.suppress(OSError):
            if path.name.startswith((_CONVERTING, _STALE)) and path.stat().st_mtime < old:
                shutil.rmtree(path, ignore_errors=True)


def _convert_aside(log: str, options: InspectOptions, limits: InputLimits) -> Converted:
    """The log converted into a directory of this process's own, removed when it ends."""
    scratch = Path(tempfile.mkdtemp(prefix="evalbatch-inspect-"))
    atexit.register(shutil.rmtree, scratch, True)
    return _convert_into(log, scratch, options, limits)


def _convert_into(
    log: str, directory: Path, options: InspectOptions, limits: InputLimits
) -> Converted:
    """`ingest` of the one log into `directory/events`, and the entry file that names what it
    wrote and reported (problems without the log's path: the same content may be named
    otherwise by the next command)."""
    from evalbatch.inputs.ingest import ingest_paths  # the converter loads when a log is met

    report = ingest_paths([log], directory / "events", inspect=options, limits=limits)
    problems = list(report.problems)
    if not report.events and not any(problem.severity == "error" for problem in problems):
        problems.append(IngestProblem(log, None, "input-unreadable", "no event could be read"))
    files = sorted(str(path.relative_to(directory)) for path in report.written)
    document = {
        "files": files,
        "problems": [[p.where, p.code, p.reason] for p in problems],
    }
    (directory / ENTRY_FILE).write_text(json.dumps(document), encoding="utf-8")
    return Converted(log, tuple(str(directory / name) for name in files), tuple(problems))


def _read_entry(log: str, entry: Path) -> Converted | None:
    """The entry at `entry` for the log at `log`; None when there is none or it is not whole
    (its files are not all there: it was tampered with), which is then made again."""
    try:
        document = json.loads((entry / ENTRY_FILE).read_text(encoding="utf-8"))
        files = tuple(str(entry / name) for name in document["files"])
        problems = tuple(
            IngestProblem(log, where, code, reason)
            for where, code, reason in document["problems"]
            if isinstance(code, str) and _known(code)
        )
    except (OSError, ValueError, KeyError, TypeError):
        _set_aside(entry)
        return None
    if not files or not all(os.path.isfile(name) for name in files):
        _set_aside(entry)
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # when it was last used: what clearing old entries goes by
    return Converted(log, files, problems)


def _known(code: str) -> bool:
    try:
        severity(code)
    except KeyError:
        return False
    return True


def _set_aside(entry: Path) -> None:
    """An entry that is not whole, moved out of the way (renamed, then removed): the next
    command to need it makes it again. Nothing when there is no entry."""
    if not entry.exists():
        return
    aside = entry.with_name(f"{_STALE}{entry.name}-{os.getpid()}")
    try:
        os.rename(entry, aside)
    except OSError:  # another command moved it first
        return
    shutil.rmtree(aside, ignore_errors=True)
