"""Suite files: load, validate and pick the one suite each eval run is graded against.

CONTRACT §1.3. A suite is configuration, so a file that cannot be matched to any run (not JSON, no
string `suiteId`/`version`) stops the command (`SuiteFileError`, exit code 2), while a suite that is
matchable but wrong only stops the runs that use it (`suite-invalid`, `suite-conflict`).

The JSON Schemas ship inside the package (`evalbatch/schemas/`). Fault messages never echo suite
values (arguments, inputs, expected outputs, ids): they name the JSON path (unknown member names
included), the rule and, at most, enum values or the numbers of the suite's own `trials` block, so
they are safe in the problems table.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files as _package_files
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from evalbatch import jsonvalue
from evalbatch.errors import SuiteError
from evalbatch.inputs import limits
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.problems import MAX_TRIALS

if TYPE_CHECKING:
    from jsonschema import ValidationError

__all__ = [
    "Fault",
    "SuiteChoice",
    "SuiteFile",
    "SuiteFileError",
    "delegate_suites",
    "format_path",
    "load_suite_files",
    "resolve_suites",
    "schema_faults",
    "validate_suite",
    "validate_summary",
]

SUITE_SCHEMA = "agent-eval-suite.schema.json"
SUMMARY_SCHEMA = "eval-summary.schema.json"

FaultSeverity = Literal["error", "warning"]
PathPart = str | int


class SuiteFileError(SuiteError):
    """A suite file that cannot be matched to any run: the command stops with exit code 2."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Fault:
    """One thing wrong with a document, located by its JSON path (e.g. `$.tasks[2].taskId`)."""

    path: str
    message: str
    severity: FaultSeverity

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message}"


@dataclass(frozen=True)
class SuiteFile:
    """A parsed suite file with its validation faults (errors and warnings)."""

    path: str
    doc: dict[str, Any]
    faults: tuple[Fault, ...]
    sha256: str | None = None  # of the file's bytes (provenance)

    @property
    def errors(self) -> tuple[Fault, ...]:
        """The error-severity faults: any of them makes the suite invalid."""
        return tuple(f for f in self.faults if f.severity == "error")


@dataclass(frozen=True)
class SuiteChoice:
    """The suite for one `(suiteId, version)`, or why runs claiming it cannot be graded.

    `problem` is None (grade with `doc`), `"suite-invalid"` or `"suite-conflict"`; when it is set,
    `doc` is None so no caller can grade against a suite that must not be used.
    """

    suite_id: str
    version: str
    doc: dict[str, Any] | None
    problem: Literal["suite-invalid", "suite-conflict"] | None
    message: str | None
    paths: tuple[str, ...]
    sha256: str | None = None  # of the first file holding it, in path order (provenance)


# --------------------------------------------------------------------------------------------
# Schemas and the validator


@cache
def _schema(name: str) -> dict[str, Any]:
    """A schema shipped in the package; read once."""
    text = (_package_files("evalbatch") / "schemas" / name).read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII)


def _pattern_keyword(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """`pattern` with ECMA-262 anchoring: Python's `$` also matches before a final newline."""
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    match = _regex(pattern).search(instance)
    if match is None or (pattern.endswith("$") and match.end() != len(instance)):
        yield ValidationError(f"does not match {pattern}")


@cache
def _fast_validator(name: str) -> Any:
    """A compiled validator of the same schema (ECMA-262 patterns, like `_pattern_keyword`)."""
    import jsonschema_rs  # loads with the first document validated, not for --help

    return jsonschema_rs.validator_for(_schema(name))


@cache
def _validator(name: str) -> Any:
    """The validator that names the faults. Only a document the compiled one rejects needs it,
    so jsonschema loads only then: a run whose suites are valid never loads it."""
    import jsonschema

    schema = _schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    extended = jsonschema.validators.extend(
        jsonschema.Draft202012Validator, {"pattern": _pattern_keyword}
    )
    return extended(schema)


# --------------------------------------------------------------------------------------------
# Fault building

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MATCH_MODES = frozenset({"exact", "in-order", "any-order", "subset"})
_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def format_path(parts: Iterable[PathPart]) -> str:
    """A JSON path: `$`, `.name` for plain member names, `["odd name"]` otherwise, `[i]`."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part)}]")
    return "".join(out)


@dataclass(frozen=True)
class _Item:
    parts: tuple[PathPart, ...]
    message: str
    severity: FaultSeverity = "error"

    def sort_key(self) -> tuple[Any, ...]:
        # Indexes sort numerically ($.tasks[2] before $.tasks[10]); a parent before its members.
        key = tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in self.parts)
        return (key, self.severity != "error", self.message)


def _faults(items: Iterable[_Item]) -> list[Fault]:
    """Deduplicated faults in a fixed order (by path, errors first, then message)."""
    unique = sorted(set(items), key=_Item.sort_key)
    return [Fault(format_path(i.parts), i.message, i.severity) for i in unique]


def _type_message(expected: Any) -> str:
    names = [expected] if isinstance(expected, str) else list(expected)
    return "must be " + " or ".join(_TYPE_NAMES.get(n, n) for n in names)


def _schema_items(error: ValidationError) -> list[_Item]:
    """Short messages per keyword; never the offending value itself."""
    base = tuple(error.absolute_path)
    keyword = error.validator
    value = error.validator_value
    instance = error.instance
    if keyword == "required":
        if not isinstance(instance, dict):
            return []
        return [_Item((*base, p), "required member is missing") for p in value if p not in instance]
    if keyword == "additionalProperties":
        if not isinstance(instance, dict):
            return []
        known = error.schema.get("properties", {})
        unknown = [k for k in instance if k not in known]
        return [_Item((*base, k), "unknown member (closed object)") for k in unknown]
    if keyword == "enum":
        if instance == "superset" and set(value) == _MATCH_MODES:
            return [_Item(base, "'superset' is not a match mode: use 'any-order' (RFC 0244 §A)")]
        return [_Item(base, "must be one of: " + ", ".join(str(v) for v in value))]
    messages = {
        "type": lambda: _type_message(value),
        "pattern": lambda: f"does not match {value}",
        "minimum": lambda: f"must be >= {value}",
        "maximum": lambda: f"must be <= {value}",
        "exclusiveMinimum": lambda: f"must be > {value}",
        "exclusiveMaximum": lambda: f"must be < {value}",
        "minItems": lambda: f"must have at least {value} item{'s' if value != 1 else ''}",
        "maxItems": lambda: f"must have at most {value} items",
        "uniqueItems": lambda: "items must be unique",
        "minLength": lambda: (
            "must not be empty" if value == 1 else f"must have at least {value} characters"
        ),
        "maxLength": lambda: f"must have at most {value} characters",
    }
    make = messages.get(str(keyword))
    return [_Item(base, make() if make else f"fails the schema keyword '{keyword}'")]


def _non_finite(doc: Any, parts: tuple[PathPart, ...] = ()) -> Iterator[_Item]:
    """NaN and infinities: not JSON, and NaN slips past `minimum`/`maximum`."""
    if isinstance(doc, float) and not math.isfinite(doc):
        yield _Item(parts, "not a JSON number (NaN or infinity)")
    elif isinstance(doc, dict):
        for key, value in doc.items():
            yield from _non_finite(value, (*parts, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _non_finite(value, (*parts, index))


def _schema_check(name: str, doc: Any) -> list[_Item]:
    """Schema faults (the compiled validator decides; the detailed one names the faults when
    there are some) and non-finite numbers anywhere, which no schema keyword sees."""
    items: list[_Item] = []
    if not _fast_validator(name).is_valid(doc):
        for error in _validator(name).iter_errors(doc):
            items.extend(_schema_items(error))
    items.extend(_non_finite(doc))
    return items


def _is_int(value: Any) -> TypeGuard[int | float]:
    """An integral JSON number (`2.0` counts, as JSON Schema's `integer` says); not a boolean."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _num(value: int | float) -> str:
    return str(int(value)) if _is_int(value) else str(value)


# --------------------------------------------------------------------------------------------
# Suite rules that the schema cannot say (RFC 0244 keeps them out of schema conditionals)


def _args_items(entry: dict[str, Any], parts: tuple[PathPart, ...]) -> Iterator[_Item]:
    """Warnings for `args`/`argsMatch` pairs that do not compare what the author likely meant."""
    args_match = entry.get("argsMatch")
    if args_match in ("exact", "subset") and "args" not in entry:
        yield _Item(
            (*parts, "argsMatch"),
            f"argsMatch '{args_match}' without args: matches on the tool name alone",
            "warning",
        )
    if "args" in entry and "argsMatch" not in entry:
        yield _Item(
            (*parts, "args"),
            "args without argsMatch: compared under the default 'ignore', i.e. not compared",
            "warning",
        )


def _task_items(task: dict[str, Any], parts: tuple[PathPart, ...]) -> Iterator[_Item]:
    expected = task.get("expected")
    if isinstance(expected, dict):
        exp_parts = (*parts, "expected")
        if expected.get("kind") == "trajectory":
            for key in ("match", "rubric"):
                if key in expected:
                    message = f"a kind 'trajectory' task carries no {key} (RFC 0244 §A)"
                    yield _Item((*exp_parts, key), message)
            if "trajectory" not in expected:
                yield _Item(
                    (*exp_parts, "trajectory"),
                    "a kind 'trajectory' task needs a trajectory: it is graded on it alone",
                )
        trajectory = expected.get("trajectory")
        if isinstance(trajectory, dict):
            traj_parts = (*exp_parts, "trajectory")
            calls = trajectory.get("calls")
            expected_tools: set[str] = set()
            if isinstance(calls, list):
                for j, call in enumerate(calls):
                    if isinstance(call, dict):
                        yield from _args_items(call, (*traj_parts, "calls", j))
                        if isinstance(call.get("tool"), str):
                            expected_tools.add(call["tool"])
            forbidden = trajectory.get("forbidden")
            if isinstance(forbidden, list):
                for j, tool in enumerate(forbidden):
                    if isinstance(tool, str) and tool in expected_tools:
                        yield _Item(
                            (*traj_parts, "forbidden", j),
                            "a forbidden tool is also an expected call",
                            "warning",
                        )
    fixtures = task.get("fixtures")
    if isinstance(fixtures, dict) and isinstance(fixtures.get("toolResponses"), list):
        for j, entry in enumerate(fixtures["toolResponses"]):
            if isinstance(entry, dict):
                yield from _args_items(entry, (*parts, "fixtures", "toolResponses", j))


def _suite_rule_items(doc: Any) -> Iterator[_Item]:
    if not isinstance(doc, dict):
        return
    trials = doc.get("trials")
    if isinstance(trials, dict):
        count, k = trials.get("count"), trials.get("k")
        if _is_int(count) and count > MAX_TRIALS:
            yield _Item(
                ("trials", "count"),
                f"must be <= {MAX_TRIALS}, the limit of trials per task (E-78)",
            )
        if _is_int(count) and count >= 1 and _is_int(k) and k > count:
            yield _Item(
                ("trials", "k"),
                f"k ({_num(k)}) must not exceed count ({_num(count)}) (RFC 0244 §B)",
            )
    tasks = doc.get("tasks")
    if not isinstance(tasks, list):
        return
    first_index: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            continue
        task_id = task.get("taskId")
        if isinstance(task_id, str):
            if task_id in first_index:
                first = format_path(("tasks", first_index[task_id]))
                yield _Item(("tasks", i, "taskId"), f"duplicate taskId: first used at {first}")
            else:
                first_index[task_id] = i
        yield from _task_items(task, ("tasks", i))


def validate_suite(doc: Any) -> list[Fault]:
    """Every fault of a suite document: the shipped schema plus the cross-field suite rules.

    Errors make the suite unusable (`suite-invalid`); warnings flag expectations that compare
    less than they seem to (arguments that are never compared). Sorted by JSON path.
    """
    return _faults([*_schema_check(SUITE_SCHEMA, doc), *_suite_rule_items(doc)])


def delegate_suites(choices: Mapping[tuple[str, str], SuiteChoice]) -> frozenset[tuple[str, str]]:
    """The suites (suiteId, version) with a task whose trajectory includes delegates: only their
    eval runs read the child runs their trials name (E-102), so a night without one reads no
    more than before."""
    found = set()
    for key, choice in choices.items():
        tasks = choice.doc.get("tasks") if isinstance(choice.doc, dict) else None
        for task in tasks if isinstance(tasks, list) else []:
            expected = task.get("expected") if isinstance(task, dict) else None
            trajectory = expected.get("trajectory") if isinstance(expected, dict) else None
            if isinstance(trajectory, dict) and trajectory.get("includeDelegates") is True:
                found.add(key)
                break
    return frozenset(found)


def schema_faults(schema: str, doc: Any) -> list[Fault]:
    """Every fault of `doc` against one of the package's schemas (`evalbatch/schemas/<schema>`),
    by JSON path, in the words `validate` uses; never the offending value."""
    return _faults(_schema_check(schema, doc))


def validate_summary(doc: Any) -> list[Fault]:
    """Every fault of an EvalSummary against the shipped closed schema, plus its count invariants.

    The invariants (`passedCount <= taskCount`, one entry per task, unique taskIds, a task's
    `trials.passedCount <= n`) hold for every summary CONTRACT §3 defines, so a breach is a
    grading fault and must not be written.
    """
    # the compiled validator decides quickly; the detailed one names the faults when there are some
    items = (
        [] if _fast_validator(SUMMARY_SCHEMA).is_valid(doc) else _schema_check(SUMMARY_SCHEMA, doc)
    )
    if isinstance(doc, dict):
        task_count, passed_count = doc.get("taskCount"), doc.get("passedCount")
        tasks = doc.get("tasks")
        if _is_int(task_count) and _is_int(passed_count) and passed_count > task_count:
            items.append(_Item(("passedCount",), "must not exceed taskCount"))
        if isinstance(tasks, list):
            if _is_int(task_count) and len(tasks) != task_count:
                items.append(_Item(("tasks",), "must hold exactly taskCount entries"))
            seen: set[str] = set()
            for i, task in enumerate(tasks):
                if not isinstance(task, dict):
                    continue
                task_id = task.get("taskId")
                if isinstance(task_id, str):
                    if task_id in seen:
                        items.append(_Item(("tasks", i, "taskId"), "duplicate taskId"))
                    seen.add(task_id)
                trials = task.get("trials")
                if isinstance(trials, dict):
                    n, c = trials.get("n"), trials.get("passedCount")
                    if _is_int(n) and _is_int(c) and c > n:
                        items.append(
                            _Item(("tasks", i, "trials", "passedCount"), "must not exceed n")
                        )
    return _faults(items)


# --------------------------------------------------------------------------------------------
# Files


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a number is out of range")
    return value


#: the fault of a key named twice in one object of a suite or capabilities document (E-123)
REPEATED_KEY = "key repeated in one object (JSON leaves which value counts undefined)"


def _read_json(path: Path) -> tuple[Any, list[_Item]]:
    """Strict JSON (no NaN/Infinity) nested at most `limits.MAX_JSON_DEPTH` deep (E-115), and
    a fault for each key an object repeats (E-123); a failure to read it is a `SuiteFileError`
    naming the file."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SuiteFileError(where, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SuiteFileError(where, "is not JSON (not UTF-8 text)") from exc
    repeats = limits.RepeatedKeys()
    try:
        doc = limits.loads(
            text,
            parse_constant=jsonvalue.reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=repeats,
        )
    except limits.TooDeep as exc:  # before the validator or a comparison recurses (E-115)
        raise SuiteFileError(where, f"is {exc}") from None
    except json.JSONDecodeError as exc:
        raise SuiteFileError(
            where, f"is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise SuiteFileError(where, f"is not JSON ({exc})") from exc
    return doc, [_Item(parts, REPEATED_KEY) for parts in repeats.paths(doc)]


def _file_faults(doc: Any, repeated: list[_Item]) -> tuple[Fault, ...]:
    """The faults of a suite file: its repeated keys first (E-123: how it was read), then
    `validate_suite`'s (what it says)."""
    return (*_faults(repeated), *validate_suite(doc))


def suite_ids(doc: dict[str, Any]) -> tuple[str, str] | None:
    """The (suiteId, version) runs claim a suite by, when both are non-empty strings; else None.
    An empty one is no name (a file holding it would be passed over while its runs fall back to
    the host record: §1.3 stops the command instead)."""
    suite_id, version = doc.get("suiteId"), doc.get("version")
    if isinstance(suite_id, str) and suite_id and isinstance(version, str) and version:
        return suite_id, version
    return None


def _load_one(path: Path) -> SuiteFile:
    doc, repeated = _read_json(path)
    if not isinstance(doc, dict):
        raise SuiteFileError(str(path), "is not a JSON object, so it has no suiteId and version")
    if suite_ids(doc) is None:
        raise SuiteFileError(
            str(path),
            "has no non-empty string suiteId and version: it cannot be matched to any run",
        )
    return SuiteFile(
        path=str(path),
        doc=doc,
        faults=_file_faults(doc, repeated),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )


def expand_suite_paths(given: str | Path) -> list[Path]:
    """The suite files a path names: itself, or every `*.json` below a directory, sorted.

    Raises:
        SuiteFileError: the path does not exist or is neither a file nor a directory.
    """
    path = Path(given)
    if path.is_dir():
        found = (p for p in path.rglob("*.json") if p.is_file())
        return sorted(found, key=lambda p: p.relative_to(path).parts)
    if path.is_file():
        return [path]
    if path.exists():
        raise SuiteFileError(str(given), "is neither a file nor a directory")
    raise SuiteFileError(str(given), "no such file or directory")


def read_suite_file(path: Path) -> SuiteFile:
    """One file as `validate` judges it: read strictly as JSON, then every fault of the document,
    a missing `suiteId` or `version` included (it is not refused here, only reported).

    Raises:
        SuiteFileError: the file cannot be read, or is not JSON.
    """
    doc, repeated = _read_json(path)
    return SuiteFile(path=str(path), doc=doc, faults=_file_faults(doc, repeated))


def load_suite_files(paths: Sequence[str | Path]) -> list[SuiteFile]:
    """Parse and validate suite files; directories contribute every `*.json` below them, sorted.

    A file reached twice (named and inside a named directory) is read once. Raises
    `SuiteFileError` for a missing path, an unreadable or non-JSON file, or a document without
    string `suiteId` and `version` (CONTRACT §1.3: the command must stop, exit code 2).
    """
    loaded: list[SuiteFile] = []
    seen: set[Path] = set()
    for given in paths:
        for path in expand_suite_paths(given):
            key = path.resolve()
            if key in seen:
                continue
            seen.add(key)
            loaded.append(_load_one(path))
    return loaded


# --------------------------------------------------------------------------------------------
# Choosing the suite per (suiteId, version)


def resolve_suites(files: Sequence[SuiteFile]) -> dict[tuple[str, str], SuiteChoice]:
    """One choice per `(suiteId, version)`, keyed and ordered by that pair.

    Identical copies (JSON-equal documents, D-7) are one suite. Different content under one key is a
    `suite-conflict` (no copy can be trusted over another); otherwise any error fault makes it
    `suite-invalid`, naming the first fault's JSON path and file. Paths are sorted so the result
    does not depend on the order the files were given in.
    """
    groups: dict[tuple[str, str], list[SuiteFile]] = {}
    for suite_file in files:
        ids = suite_ids(suite_file.doc)
        if ids is None:
            raise SuiteFileError(suite_file.path, "has no non-empty string suiteId and version")
        groups.setdefault(ids, []).append(suite_file)

    choices: dict[tuple[str, str], SuiteChoice] = {}
    for key in sorted(groups):
        suite_id, version = key
        members = sorted(groups[key], key=lambda f: f.path)
        paths = tuple(dict.fromkeys(f.path for f in members))
        # D-7 equality: key order ignored, 1 equals 1.0, true is not 1.
        distinct = {jsonvalue.canonical(member.doc) for member in members}
        if len(distinct) > 1:
            message = (
                f"suite {suite_id} {version}: {len(distinct)} different documents "
                f"in {', '.join(paths)}"
            )
            # no one file is the suite: no hash to record
            choices[key] = SuiteChoice(suite_id, version, None, "suite-conflict", message, paths)
            continue
        # JSON-equal copies can still differ in their faults: a key one file repeats (E-123)
        invalid = next((member for member in members if member.errors), None)
        if invalid is not None:
            errors = invalid.errors
            first = errors[0]
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            message = (
                f"suite {suite_id} {version} is invalid: {first.path} in {invalid.path}: "
                f"{first.message}{more}"
            )
            choices[key] = SuiteChoice(
                suite_id, version, None, "suite-invalid", message, paths, invalid.sha256
            )
            continue
        choices[key] = SuiteChoice(
            suite_id, version, members[0].doc, None, None, paths, members[0].sha256
        )
    return choices


def load_suites(
    paths: Paths = (), docs: Sequence[Mapping[str, Any]] = ()
) -> dict[tuple[str, str], SuiteChoice]:
    """Suites from files and directories (one path or a list), and from documents given in
    memory (notebooks, tests)."""
    files = load_suite_files(as_paths(paths))
    for number, doc in enumerate(docs):
        files.append(
            SuiteFile(
                path=f"<suite {number}>",
                doc=dict(doc),
                faults=tuple(validate_suite(doc)),
                # no file: the sha256 of the document's canonical JSON text
                sha256=hashlib.sha256(
                    jsonvalue.canonical_text(json.dumps(doc)).encode()
                ).hexdigest(),
            )
        )
    return resolve_suites(files)
