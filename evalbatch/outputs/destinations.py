"""No output replaces an input (E-120): the one check every command that writes a file makes
before it writes anything.

A destination is refused when it is, or is inside, or would replace a file the command reads:
an event or suite file (directories and globs expanded as the readers expand them), a file of
an output directory it reads, or that directory itself. Paths are compared resolved (symbolic
links and `..` followed) and, for files that exist, by device and inode, so a hard link to an
input is the input. Writing beside an input stays allowed: `report OUT` writes OUT/report.html,
and `run EVENTS --out EVENTS/graded` reads no file of its own outputs (E-74).

Paths the readers would not find (a missing file, a remote URL) are not expanded here: the
command itself says what is wrong with them. A destination in object storage is refused: outputs
go to a local or shared path (E-153).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalbatch.errors import InputError, SuiteError
from evalbatch.inputs import event_files, object_store
from evalbatch.inputs.openwop_formats import expand_inputs
from evalbatch.inputs.suites import expand_suite_paths
from evalbatch.outputs.output_format import (
    INCOMPLETE_FILE,
    MANIFEST_FILE,
    OUTPUT_FILES,
    RUN_INPUTS_FILE,
)
from evalbatch.text import printable

#: the files of an output directory its readers read (`outdir.load`)
READ_FILES = (*OUTPUT_FILES, RUN_INPUTS_FILE, MANIFEST_FILE, INCOMPLETE_FILE)


@dataclass(frozen=True)
class Inputs:
    """What a command reads, as it was given: event paths (files, directories, globs), suite
    paths (files, directories), output directories, and the paths given to `ingest` (files,
    directories, globs of the formats it reads)."""

    events: Sequence[str | Path] = ()
    suites: Sequence[str | Path] = ()
    out_dirs: Sequence[str | Path] = ()
    ingest: Sequence[str | Path] = ()


@dataclass
class _Read:
    """The inputs, resolved: each path read (with what it is) and each existing file's inode."""

    paths: dict[str, tuple[str, str]] = field(default_factory=dict)  # resolved -> (as given, what)
    files: set[str] = field(default_factory=set)  # resolved paths of files (not directories)
    inodes: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)

    def add(self, path: str | Path, what: str) -> None:
        resolved = os.path.realpath(path)
        self.paths.setdefault(resolved, (str(path), what))
        try:
            found = os.stat(resolved)
        except OSError:
            return
        if not os.path.isdir(resolved):
            self.files.add(resolved)
            self.inodes.setdefault((found.st_dev, found.st_ino), (str(path), what))


def _local(path: str | Path) -> bool:
    return "://" not in str(path)


def _read(inputs: Inputs) -> _Read:
    read = _Read()
    for raw in filter(_local, map(str, inputs.events)):
        if os.path.isdir(raw):
            read.add(raw, "an event directory")
        try:
            found = event_files.expand_paths([raw])
        except InputError:
            continue  # no such file: the command says so itself
        for path in found:
            read.add(path, "an event file")
    for raw in filter(_local, map(str, inputs.suites)):
        if os.path.isdir(raw):
            read.add(raw, "a suite directory")
        try:
            found_suites = expand_suite_paths(raw)
        except SuiteError:
            continue
        for suite in found_suites:
            read.add(suite, "a suite file")
    for raw in map(str, inputs.out_dirs):
        read.add(raw, "an output directory")
        for name in READ_FILES:
            read.add(Path(raw) / name, f"a file of the output directory {printable(raw)}")
    for raw in filter(_local, map(str, inputs.ingest)):
        if os.path.isdir(raw):
            read.add(raw, "an input directory")
        try:
            found = expand_inputs([raw]) if raw != "-" else []
        except InputError:
            continue
        for path in found:
            read.add(path, "an input file")
    return read


def _conflict(target: Path, label: str, read: _Read) -> str | None:
    """Why writing `target` (shown as `label`) would replace an input, or None."""

    def named(relation: str, given: str, what: str) -> str:
        shown = printable(given)
        return f"{relation} {what}" if shown == label else f"{relation} {shown}, {what}"

    resolved = os.path.realpath(target)
    if resolved in read.paths:
        return named("is", *read.paths[resolved])
    for parent in Path(resolved).parents:
        if str(parent) in read.files:
            return named("is inside", *read.paths[str(parent)])
    try:
        found = os.stat(resolved)
    except OSError:
        return None
    same = read.inodes.get((found.st_dev, found.st_ino))
    return named("is a hard link to", *same) if same is not None else None


def refuse_overwrite(
    option: str, destination: str | Path, inputs: Inputs, names: Iterable[str] = ()
) -> None:
    """Stop before anything is written when writing `destination` would replace what the command
    reads; with `names`, `destination` is a directory and the files written are those names in
    it (`run --out`).

    Raises:
        InputError: the destination, or a file written into it, is an input (one line naming
            the path and the input).
    """
    object_store.refuse_as_output(option, destination)
    read = _read(inputs)
    shown = printable(destination)
    targets = [(Path(destination) / name, f"{shown}/{name}") for name in names]
    for path, label in targets or [(Path(destination), shown)]:
        why = _conflict(path, label, read)
        if why is None:
            continue
        head = option if label == shown else f"{option} {shown} would write"
        which = "" if label == shown else ", which"
        raise InputError(
            f"{head} {label}{which} {why} that this command reads: writing it would replace an "
            "input; nothing was written (give another path)"
        )
