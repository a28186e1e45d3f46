"""Inspect eval logs as OpenWOP event rows (E-111): what teams that run UK AISI Inspect already
have, graded by the same engine.

The log is read by Inspect's own reader (`inspect_ai.log`, the optional extra
`evalbatch[inspect]`), never by parsing its file format here. One log is one eval run (its eval
id is the run id), and each sample x epoch one trial:

    eval.started      suiteId inspect.evals.<task>, suiteVersion, trialCount = epochs
    per sample and epoch, in the log's order:
      agent.invocation-started     the sample's bracket (invocationId <sample id>#<epoch>)
      agent.tool-called            each tool call of the solvers (function, arguments)
      provider.usage               each model call (input/output tokens, cost where Inspect has it)
      agent.invocation-completed   before the scorers run
      provider.usage               the scorers' own model calls (a judge's cost: D-6)
      eval.scored                  taskId from the sample id, trialIndex = epoch - 1, score, passed
    eval.completed    only when the eval finished (status `success`)
    evalbatch.inspect.eval         after every other event: the task, model and log file (E-146)
    evalbatch.inspect.sample       then per trial: its taskId and trialIndex, sample id and epoch

How a score that is not a number is read, which scorer counts and what is lost are in
docs/decisions.md (E-111); which of Inspect's own figures becomes aggregateScore is E-117. Every
row goes through `RowSink.event`, as any other input's.

Before Inspect's reader reads anything, what it would hold is bounded (`InputLimits`, E-115,
E-116): a gzip-compressed log is decompressed against the caps; a `.json` log, which that reader
reads whole, is capped in size and nesting depth; and every member of an `.eval` archive is
measured as that reader would inflate it (its declared sizes, then its data, counted without
being held). A member past a cap is never read: a sample's trial fails closed, any other member
leaves the whole log unread.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import math
import os
import re
import struct
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Literal, TypeAlias, cast

from evalbatch.inputs.event_rows import RowSink
from evalbatch.inputs.limits import (
    DEFAULT_LIMITS,
    InputLimits,
    TooDeep,
    TooLarge,
    check_depth,
    check_inflated,
)
from evalbatch.inputs.lossless_json import Number, Object, parse
from evalbatch.options import (
    ERRORED_CHOICES,
    MODEL_CLASSES,
    PASS_SCORE,
    ErroredSamples,
    StartingSuiteOptions,
    check_choice,
)

if TYPE_CHECKING:
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import EvalLog, EvalSample

#: the agentId of every bracket and of the target agent's tool calls (E-111): an Inspect log
#: names the agents it runs inside another (`inspect.agent:<name>`), not the one it evaluates
AGENT_ID = "inspect.agent"
#: what Inspect's reader is told a log is
Format: TypeAlias = Literal["eval", "json"]
#: a sample of a log: its id as Inspect typed it and its epoch (from 1)
SampleKey: TypeAlias = tuple[int | str, int]
#: the log versions this reader knows (Inspect writes 2; 1 is read by Inspect as well)
KNOWN_VERSIONS = frozenset({1, 2})
#: what the suite id of a log is built from (RFC 0244 suiteId: `<namespace>.evals.<name>`)
SUITE_NAMESPACE = "inspect"
#: the vendor event types (`<org>.<name>.<sub>`: OpenWOP's payloads are closed, so Inspect's names
#: ride in events of their own) that carry a log's names and each trial's sample and epoch
#: (E-146); evalbatch/extract/scan_fields.py declares the fields grading reads of them
EVAL_NAMES = "evalbatch.inspect.eval"
SAMPLE_NAMES = "evalbatch.inspect.sample"

_TASK_ID = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
#: how a taskId made from another sample id ends: an id that ends so is hashed too
_HASHED = re.compile(r"-[0-9a-f]{8}\Z")
_SUITE_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\Z")
#: Inspect's score letters and words, as its own `value_to_float` reads them
_SCORE_WORDS = frozenset({"c", "i", "p", "n", "yes", "no", "true", "false"})


@dataclass(frozen=True)
class InspectOptions:
    """How an Inspect log's scores become eval.scored's `score` and `passed` (E-111).

    scorer: the scorer whose score counts (`NAME`, or `NAME/KEY` for a scorer whose value is a
        dict of scores); None: the log's first scorer.
    pass_score: `passed` is `score >= pass_score` (1.0: only a full score passes, as `C` does),
        in [0, 1]; also the `passScore` of the log's starting suite (`suite_of`, E-149).
    model_class: the OpenWOP model class (`reasoning`, `coding`, ...) of the model evaluated,
        written as every bracket's `modelClass` so that `evaluatedModelClass` says it (§3.6,
        E-14, E-146); None: an Inspect log does not say, so no bracket carries one.
    errored: what becomes of a sample that errored (E-147): `fail`, its trial is written and
        marked errored, and fails (fail closed); `leave-out`, it is not written at all, as
        Inspect leaves it out of its own figures.
    """

    scorer: str | None = None
    pass_score: float = 1.0
    model_class: str | None = None
    errored: ErroredSamples = "fail"

    def __post_init__(self) -> None:
        PASS_SCORE.check("InspectOptions", "pass_score", self.pass_score)
        if self.model_class is not None:
            check_choice("InspectOptions", "model_class", self.model_class, MODEL_CLASSES)
        check_choice("InspectOptions", "errored", self.errored, ERRORED_CHOICES)


def is_eval_archive(head: bytes) -> bool:
    """Whether a file's first bytes are a zip archive (Inspect's `.eval` format)."""
    return head.startswith(b"PK\x03\x04")


_JSON_LOG_HEAD = re.compile(rb'\A\s*\{\s*"version"\s*:\s*([0-9]+)\s*,\s*"status"\s*:')


def is_json_log(head: bytes) -> bool:
    """Whether a JSON file's first bytes open an Inspect log (`{"version": N, "status": ...`),
    which no OpenWOP export does."""
    return _JSON_LOG_HEAD.match(head.lstrip(b"\xef\xbb\xbf")) is not None


#: the index files Inspect's `eval_set` writes beside its logs (E-143): `eval-set.json` (the
#: tasks of the set), `logs.json` (every log's header, by file name) and, with its viewer,
#: `listing.json` (the same, thinned); `.eval-set-id` has no suffix a directory is searched for
EVAL_SET_INDEX_NAMES = frozenset({"eval-set.json", "logs.json", "listing.json"})
_EVAL_SET_INDEX_HEAD = re.compile(
    rb'\A\s*\{\s*(?:\}\s*\Z|"eval_set_id"\s*:|"(?:[^"\\]|\\.)*\.(?:eval|json)"\s*:\s*\{)'
)


def is_eval_set_index(path: str) -> bool:
    """Whether `path` is one of the index files an Inspect eval set keeps (E-143): one of their
    names, opening as Inspect writes them (`{"eval_set_id": ...`, or a log's file name as the
    first key). An OpenWOP export under such a name opens otherwise and is read as events."""
    if Path(path).name not in EVAL_SET_INDEX_NAMES:
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return _EVAL_SET_INDEX_HEAD.match(head.removeprefix(b"\xef\xbb\xbf")) is not None


def _json_log_version(path: str) -> int | None:
    """The version a `.json` Inspect log opens with (None for an archive): Inspect's reader
    refuses a version it does not know without saying so, so it is read here first."""
    try:
        with open(path, "rb") as handle:
            found = _JSON_LOG_HEAD.match(handle.read(256).lstrip(b"\xef\xbb\xbf"))
    except OSError:
        return None
    return int(found.group(1)) if found else None


def slug(text: str) -> str:
    """`text` in the letters RFC 0244's ids allow: lower case, runs of anything else as `-`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def task_id(sample_id: int | str) -> str:
    """An Inspect sample id as a taskId (`^[a-z0-9][a-z0-9-]*$`): as it is when it already is
    one, else its slug and a short hash of it, so two sample ids never share a taskId."""
    text = str(sample_id)
    if _TASK_ID.match(text) and not _HASHED.search(text):
        return text
    return f"{slug(text)}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def suite_id(task_name: str) -> str:
    """The suiteId of a log's task: `inspect.evals.<task name as a slug>`."""
    return f"{SUITE_NAMESPACE}.evals.{slug(task_name.rsplit('/', 1)[-1])}"


def suite_version(version: int | str | None) -> str:
    """A task_version as a suiteVersion: `N` -> `N.0.0`, a semantic version as it is, anything
    else `0.0.0`."""
    if isinstance(version, int) and version >= 0:
        return f"{version}.0.0"
    if isinstance(version, str) and _SUITE_VERSION.match(version):
        return version
    return "0.0.0"


def _json(value: Any) -> Any:
    """A Python value from Inspect's reader as the lossless JSON value rows are made of; None
    when it holds a number JSON cannot write (NaN, Infinity)."""
    try:
        return parse(json.dumps(value, allow_nan=False, ensure_ascii=False))
    except (TypeError, ValueError):
        return None


def _number(value: float | int) -> Number:
    return Number(json.dumps(value))


def _timestamp(value: datetime | str | None) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def score_of(value: Any, key: str | None) -> float | None:
    """A score value as a number, as Inspect's `value_to_float` reads it (`C` 1, `P` 0.5, `I`
    and `N` 0, yes/no, true/false, numbers); None when it is none of those (a list, a dict
    without `key`, other text): the trial then fails closed (D-11)."""
    from inspect_ai.scorer import value_to_float

    if isinstance(value, dict):
        if key is None or key not in value:
            return None
        value = value[key]
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _SCORE_WORDS:
            return float(value_to_float()(text))
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


class _RunWriter:
    """The events of one log, numbered in order, into `sink`."""

    def __init__(self, sink: RowSink, run_id: str) -> None:
        self.sink = sink
        self.run_id = run_id
        self.sequence = 0
        #: the (sample id, epoch) of each trial written, in order, for its names (E-146)
        self.samples: list[SampleKey] = []
        #: the trials written whose sample errored (E-147)
        self.errored: set[SampleKey] = set()

    def emit(
        self,
        type_: str,
        payload: Object,
        timestamp: datetime | str | None,
        sequence: int | None = None,
    ) -> None:
        """One event, numbered next, or `sequence` (a number kept for it by `reserve`)."""
        if sequence is None:
            sequence = self.reserve()
        event = Object(
            [
                ("runId", self.run_id),
                ("sequence", Number(str(sequence))),
                ("type", type_),
                ("payload", payload),
            ]
        )
        if (stamp := _timestamp(timestamp)) is not None:
            event.append(("timestamp", stamp))
        self.sink.event(event, f"event {sequence}")

    def reserve(self) -> int:
        """The next sequence number, kept for an event written later."""
        self.sequence += 1
        return self.sequence - 1


def _usage(writer: _RunWriter, event: ModelEvent) -> None:
    """A model call's provider.usage (none when Inspect recorded no usage for it)."""
    usage = event.output.usage if event.output is not None else None
    if usage is None:
        return
    provider, _, model = event.model.partition("/")
    payload = Object(
        [
            ("provider", provider.lower()),
            ("model", model or provider),
            ("inputTokens", _number(usage.input_tokens)),
            ("outputTokens", _number(usage.output_tokens)),
            ("totalTokens", _number(usage.total_tokens)),
        ]
    )
    if usage.input_tokens_cache_read is not None:
        payload.append(("cacheReadTokens", _number(usage.input_tokens_cache_read)))
    if usage.input_tokens_cache_write is not None:
        payload.append(("cacheWriteTokens", _number(usage.input_tokens_cache_write)))
    if usage.total_cost is not None and math.isfinite(usage.total_cost):
        payload.append(("costEstimateUsd", _number(usage.total_cost)))
        payload.append(("currency", "USD"))
    if event.cache == "read":
        payload.append(("cacheHit", True))
    writer.emit("provider.usage", payload, event.timestamp)


def _scorer_name(log: EvalLog, options: InspectOptions) -> tuple[str | None, str | None]:
    """The scorer whose score counts and, for a dict-valued one, the key: the option's, else
    the log's first scorer."""
    if options.scorer is not None:
        name, _, key = options.scorer.partition("/")
        return name, key or None
    scorers = log.eval.scorers or []
    return (scorers[0].name if scorers else None), None


def _sample_ids(log: EvalLog) -> list[int | str] | None:
    """The samples the eval was to run (its tasks), when Inspect lists them."""
    return list(log.eval.dataset.sample_ids) if log.eval.dataset.sample_ids else None


def _task_count(log: EvalLog) -> int:
    ids = _sample_ids(log)
    return len(ids) if ids is not None else (log.eval.dataset.samples or 0)


#: Inspect's metrics that are the mean of the samples' values as `score_of` reads them (both
#: apply Inspect's `value_to_float` and divide by the samples scored): its `accuracy` and `mean`
MEAN_METRICS = ("accuracy", "mean")
#: how Inspect names the reduction of a sample's epochs by their mean: `mean`, or no name for the
#: default reducer (which is the mean)
_MEAN_REDUCERS = (None, "mean")


def inspect_mean(log: EvalLog, scorer: str | None, key: str | None) -> float | None:
    """Inspect's own mean of the scorer used (E-117): its `accuracy` or `mean` metric over the
    samples, each sample's epochs reduced by their mean, which is how aggregateScore is
    recomputed from the same scores; the host's aggregateScore, which `verify` holds the
    recomputed one to. None when Inspect reports no such figure: another reducer (`max`,
    `pass_at_k`), other metrics only, or a metric given its own `to_float` or grouped."""
    name = key if key is not None else scorer
    for score in log.results.scores if log.results else []:
        if score.name != name or score.reducer not in _MEAN_REDUCERS:
            continue
        if key is not None and score.scorer != scorer:
            continue
        for wanted in MEAN_METRICS:
            for metric in score.metrics.values():
                # Inspect's own metric (a package's is named `<package>/mean`), as it is made
                # by default: params name what was given, such as another `to_float`
                if metric.name != wanted or metric.group is not None or metric.params:
                    continue
                value = metric.value
                if isinstance(value, int | float) and math.isfinite(value):
                    return float(value)
                return None
    return None


def _agent_id(span_id: str | None, spans: dict[str, tuple[str | None, str, str]]) -> str:
    """Who made a call in span `span_id`: the target agent, unless an agent span runs inside
    another (a sub-agent, a handoff): then that agent, as `inspect.agent:<name>`."""
    agents: list[str] = []
    while span_id is not None and span_id in spans:
        parent, kind, name = spans[span_id]
        if kind == "agent":
            agents.append(name)
        span_id = parent
    return f"{AGENT_ID}:{slug(agents[0])}" if len(agents) >= 2 else AGENT_ID


def _with_agents(
    events: list[Any], spans: dict[str, tuple[str | None, str, str]], agent: str | None
) -> Iterator[tuple[Any, str]]:
    """The events of a sample in order, each with the agent it belongs to; the events an older
    log nests inside a tool call follow that call, as the called agent's when it is one."""
    from inspect_ai.event import SpanBeginEvent, ToolEvent

    for event in events:
        if isinstance(event, SpanBeginEvent):
            spans[event.id] = (event.parent_id, event.type or "", event.name)
        owner = agent or _agent_id(event.span_id, spans)
        yield event, owner
        if isinstance(event, ToolEvent) and event.events:
            called = f"{AGENT_ID}:{slug(event.agent)}" if event.agent else owner
            yield from _with_agents(event.events, spans, called)


def _unusable(sample: EvalSample) -> str | None:
    """Why a sample's score is not used whatever it is: it errored or was invalidated."""
    if sample.error is not None:
        return "errored"
    if sample.invalidation is not None:
        return "invalidated"
    return None


@dataclass(frozen=True)
class _Refused:
    """A sample of an archive whose member was refused before it was read (past a cap, E-116):
    its trial fails closed (`_refused_trial`)."""

    id: int | str
    epoch: int


def _refused_trial(writer: _RunWriter, refused: _Refused) -> None:
    """A refused sample's eval.scored, without score or passed: its trial fails closed (D-11)."""
    payload = Object([("taskId", task_id(refused.id)), ("trialIndex", _number(refused.epoch - 1))])
    writer.emit("eval.scored", payload, None)
    writer.samples.append((refused.id, refused.epoch))


def _trial(
    writer: _RunWriter,
    sample: EvalSample,
    scorer: str | None,
    key: str | None,
    pass_score: float,
    model_class: str | None = None,
) -> str | None:
    """One sample x epoch as a trial's events; None when its score was read, else why not.
    `model_class`, when given, is its bracket's `modelClass` (E-146)."""
    from inspect_ai.event import ModelEvent, SpanBeginEvent, ToolEvent

    invocation = f"{sample.id}#{sample.epoch}"
    started = Object([("agentId", AGENT_ID), ("invocationId", invocation)])
    if model_class is not None:
        started.append(("modelClass", model_class))
    writer.emit("agent.invocation-started", started, sample.started_at)
    why = _unusable(sample)
    if sample.error is not None:
        writer.errored.add((sample.id, sample.epoch))
    outcome = "failed" if sample.error is not None else "completed"
    completed = Object([("invocationId", invocation), ("agentId", AGENT_ID), ("outcome", outcome)])
    closed = False
    for event, agent in _with_agents(sample.events, {}, None):
        if isinstance(event, SpanBeginEvent) and event.type == "scorers" and not closed:
            writer.emit("agent.invocation-completed", completed, event.timestamp)
            closed = True
        elif isinstance(event, ToolEvent):
            # arguments JSON cannot hold (NaN, Infinity) are unknown: null matches no expected
            # args (D-2), where `{}` would
            arguments = _json(event.arguments)
            payload = Object(
                [
                    ("agentId", agent),
                    ("toolName", event.function),
                    ("callId", event.id),
                    ("inputs", arguments),
                ]
            )
            writer.emit("agent.tool-called", payload, event.timestamp)
        elif isinstance(event, ModelEvent):
            _usage(writer, event)
    if not closed:
        writer.emit("agent.invocation-completed", completed, sample.completed_at)
    score = None
    found = (sample.scores or {}).get(scorer) if scorer is not None else None
    if why is None and found is not None:
        score = score_of(found.value, key)
    payload = Object([("taskId", task_id(sample.id)), ("trialIndex", _number(sample.epoch - 1))])
    if score is not None:
        payload.append(("score", _number(score)))
        payload.append(("passed", score >= pass_score))
    if sample.total_time is not None and math.isfinite(sample.total_time):
        payload.append(("latencyMs", _number(round(sample.total_time * 1000, 3))))
    writer.emit("eval.scored", payload, sample.completed_at)
    writer.samples.append((sample.id, sample.epoch))
    if score is not None:
        return None
    return why or "unscored"


@dataclass(frozen=True)
class LogRead:
    """What reading one Inspect log found besides its events: its header, and each task's
    input (the first sample's of each id), for a starting suite (`suite_of`)."""

    log: EvalLog
    inputs: dict[str, dict[str, Any]]


#: samples read from an archive at a time: Inspect reads each group with one pass over the
#: archive's directory (one sample at a time would read the directory once per sample)
SAMPLE_GROUP = 256
#: and at most this many decompressed bytes of samples per group (a larger sample is read
#: alone): Inspect holds a group's samples, eight read at once, until the group is read
GROUP_BYTES = 64 << 20
#: compressed bytes read, and decompressed bytes handed out, at a time while measuring
_READ = 64 << 10
_OUT = 1 << 20
#: the compression methods of an archive member Inspect's reader inflates (stored, deflate,
#: zstd); it refuses any other
_STORED, _DEFLATE, _ZSTD = 0, 8, 93
#: the members Inspect's reader knows by name, shown in a message as they are (any other name
#: may be the log's own, a sample id)
_KNOWN_MEMBERS = frozenset(
    {"header.json", "reductions.json", "summaries.json", "_journal/start.json"}
)


@contextlib.contextmanager
def _readable(path: str, limits: InputLimits) -> Iterator[tuple[str, Format]]:
    """The log at `path` as Inspect's reader opens it: its format read off the content (Inspect
    goes by the suffix), and a gzip-compressed log decompressed into a temporary file, against
    the caps (`TooLarge`: nothing past them is written)."""
    with open(path, "rb") as handle:
        compressed = handle.read(2) == b"\x1f\x8b"
    if not compressed:
        yield path, _format_of(path)
        return
    with tempfile.TemporaryDirectory(prefix="evalbatch-inspect-") as scratch:
        plain = Path(scratch) / "log"
        with (
            open(path, "rb") as raw,
            gzip.GzipFile(fileobj=raw) as source,
            open(plain, "wb") as target,
        ):
            size = 0
            while chunk := source.read(_OUT):
                size += len(chunk)
                try:
                    check_inflated(size, raw.tell(), limits)
                except TooLarge as exc:
                    raise TooLarge(f"it decompresses {exc}") from None
                target.write(chunk)
        yield str(plain), _format_of(str(plain))


def _format_of(path: str) -> Format:
    with open(path, "rb") as handle:
        return "eval" if is_eval_archive(handle.read(4)) else "json"


def _check_json_log(path: str, limits: InputLimits) -> None:
    """A `.json` log is read whole by Inspect's reader, and its header first by a streaming
    parser that nests as deep as the file does: at most `max_member_bytes` of it, nested at most
    `max_depth` deep (`TooLarge`, `TooDeep`), before that reader sees it."""
    size = os.path.getsize(path)
    if size > limits.max_member_bytes:
        raise TooLarge(
            f"a JSON log is read whole: {size:,} bytes, past the cap of "
            f"{limits.max_member_bytes:,} bytes"
        )
    with open(path, "rb") as handle:
        check_depth(handle.read(), limits)


def _is_sample_member(name: str) -> bool:
    """Whether an archive member holds a sample, as Inspect's reader tells them."""
    return name.startswith("samples/") and name.endswith(".json")


def _member_label(name: str) -> str:
    """A member as a message names it: Inspect's own names as they are, any other by its
    pattern (a sample's name holds the sample's id)."""
    if name in _KNOWN_MEMBERS:
        return name
    if _is_sample_member(name):
        return "a sample, samples/*.json"
    if name.startswith("_journal/summaries/"):
        return "_journal/summaries/*"
    return "not one Inspect's reader names"


@dataclass
class _Members:
    """What measuring an archive found: each member's decompressed size by name (the largest,
    should a name repeat), and the sample members refused, by name, with their index and why."""

    sizes: dict[str, int] = field(default_factory=dict)
    refused: dict[str, tuple[int, str]] = field(default_factory=dict)


class _Range:
    """The next `size` bytes of `handle`, read in pieces; `consumed` counts those read."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle = handle
        self.left = size
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        wanted = _READ if size < 0 else size
        data = self.handle.read(max(0, min(wanted, self.left)))
        self.left -= len(data)
        self.consumed += len(data)
        return data


def _directory(path: str) -> list[Any]:
    """The archive's members as Inspect's reader lists them: its central directory read by
    Inspect's own code, so the names, offsets and sizes measured are the ones it goes by."""
    from inspect_ai._util._async import run_coroutine
    from inspect_ai._util.async_zip import AsyncZipReader
    from inspect_ai._util.asyncfiles import AsyncFilesystem

    async def entries() -> list[Any]:
        async with AsyncFilesystem() as filesystem:
            return (await AsyncZipReader(filesystem, path).entries()).entries

    return run_coroutine(entries())


def _inflated_size(handle: BinaryIO, entry: Any, limits: InputLimits) -> int:
    """The bytes member `entry` inflates to, its data found and inflated as Inspect's reader
    does (after the local header's name and extra field, whatever size the directory
    declares: that reader inflates all of it), counted without being held; `TooLarge` as soon
    as they breach a cap. Data that cannot be inflated counts what came out: Inspect's reader
    says it is damaged when it reads it."""
    handle.seek(entry.local_header_offset)
    local = handle.read(30)
    if len(local) < 30:
        return 0
    name_length, extra_length = struct.unpack_from("<HH", local, 26)
    handle.seek(entry.local_header_offset + 30 + name_length + extra_length)
    data = _Range(handle, entry.compressed_size)
    method = int(entry.compression_method)
    if method == _STORED:
        return int(entry.compressed_size)
    size = 0
    try:
        if method == _DEFLATE:
            inflater = zlib.decompressobj(-15)
            while not inflater.eof and (chunk := data.read(_READ)):
                while chunk:
                    size += len(inflater.decompress(chunk, _OUT))
                    check_inflated(size, data.consumed, limits)
                    chunk = inflater.unconsumed_tail
        elif method == _ZSTD:
            import zstandard  # Inspect's own dependency, for its zstd members

            source = cast(IO[bytes], data)  # read as a file is: `read(size)`
            frames = zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True)
            while piece := frames.read(_OUT):
                size += len(piece)
                check_inflated(size, data.consumed, limits)
    except TooLarge:
        raise
    except Exception:  # damaged data: Inspect's reader says so when it reads the member
        pass
    return size


def _measured(path: str, limits: InputLimits) -> _Members:
    """Every member of the archive at `path`, measured before Inspect's reader reads any (E-116):
    its declared sizes, then its data. A sample member past a cap is refused (`_Members`); any
    other member past one raises `TooLarge`: the log is not read."""
    members = _Members()
    with open(path, "rb") as handle:
        for index, entry in enumerate(_directory(path)):
            name = entry.filename
            try:
                # Inspect's reader holds a member's compressed bytes whole, then all they inflate to
                check_inflated(entry.compressed_size, entry.compressed_size, limits)
                check_inflated(entry.uncompressed_size, entry.compressed_size, limits)
            except TooLarge as exc:
                why = f"declares a size {exc}"
            else:
                try:
                    size = _inflated_size(handle, entry, limits)
                except TooLarge as exc:
                    why = f"inflates {exc}"
                else:
                    members.sizes[name] = max(size, members.sizes.get(name, 0))
                    continue
            if not _is_sample_member(name):
                raise TooLarge(f"archive member {index} ({_member_label(name)}) {why}")
            members.refused.setdefault(name, (index, why))
    return members


def _sample_keys(source: str) -> list[SampleKey] | None:
    """The (id, epoch) of every sample of an archive, in its order; None for an archive without
    sample summaries (an older log, read whole)."""
    from inspect_ai.log import read_eval_log_sample_summaries

    try:
        return [(s.id, s.epoch) for s in read_eval_log_sample_summaries(source, format="eval")]
    except Exception:  # an archive without sample summaries (older logs)
        return None


def _member_names(keys: list[SampleKey]) -> dict[str, SampleKey] | None:
    """The member each sample is read from, named as Inspect's reader names it; None when that
    reader's naming cannot be found (an Inspect this reader does not know)."""
    try:
        from inspect_ai.log._recorders.eval import _sample_filename
    except ImportError:
        return None
    return {_sample_filename(sample_id, epoch): (sample_id, epoch) for sample_id, epoch in keys}


def _samples(
    source: str,
    form: Format,
    keys: list[SampleKey] | None,
    sizes: dict[SampleKey, int],
    refused: frozenset[SampleKey],
) -> Iterator[EvalSample | _Refused]:
    """The samples of a log, in its order, a group at a time for an archive (attachments
    resolved, so a long tool argument is its text, not a reference to it); a refused one as
    `_Refused`, never read."""
    from inspect_ai.log import read_eval_log

    if keys is None:  # a .json log, or an archive without sample summaries: read whole
        yield from read_eval_log(source, resolve_attachments=True, format=form).samples or []
        return
    group: list[SampleKey] = []
    total = 0
    for key in keys:
        size = sizes.get(key, 0)
        if key in refused or (group and (len(group) == SAMPLE_GROUP or total + size > GROUP_BYTES)):
            yield from _group(source, group)
            group, total = [], 0
        if key in refused:
            yield _Refused(*key)
            continue
        group.append(key)
        total += size
    yield from _group(source, group)


def _group(source: str, group: list[SampleKey]) -> Iterator[EvalSample]:
    """The samples `group` names, read with one pass over the archive's directory."""
    from inspect_ai.log import read_eval_log_sample, read_eval_log_samples_by_id

    if not group:
        return
    try:
        found = read_eval_log_samples_by_id(source, group, resolve_attachments=True, format="eval")
    except Exception:  # a damaged sample: those before it, one by one, then its error
        for sample_id, epoch in group:
            yield read_eval_log_sample(
                source, id=sample_id, epoch=epoch, resolve_attachments=True, format="eval"
            )
        raise
    yield from found


def read_inspect_log(
    sink: RowSink, options: InspectOptions, limits: InputLimits = DEFAULT_LIMITS
) -> LogRead | None:
    """Every event of the Inspect log `sink.path` into `sink`, and what else the read found
    (None when the log could not be read: one problem, this file only). Nothing Inspect's
    reader would hold past `limits` is read (E-115, E-116)."""
    try:
        import inspect_ai.log  # noqa: F401  (Inspect's log reader: the extra evalbatch[inspect])
    except ImportError:
        sink.problem(
            None,
            "inspect-unavailable",
            "an Inspect log: install evalbatch[inspect] (Inspect's log reader) to read it",
        )
        return None
    try:
        with _readable(sink.path, limits) as (source, form):
            return _read(sink, source, form, options, limits)
    except OSError as exc:
        sink.problem(None, "input-unreadable", f"cannot be read ({type(exc).__name__})")
        return None
    except (TooLarge, TooDeep) as exc:
        sink.problem(None, "input-unreadable", f"not read: {exc}")
        return None


def _read(
    sink: RowSink, source: str, form: Format, options: InspectOptions, limits: InputLimits
) -> LogRead | None:
    from inspect_ai.log import read_eval_log

    members = _Members()
    if form == "json":
        _check_json_log(source, limits)
    else:
        try:
            members = _measured(source, limits)
        except TooLarge:
            raise
        except Exception as exc:  # a directory Inspect's reader cannot read either
            sink.problem(
                None, "input-unreadable", f"not a readable Inspect log ({type(exc).__name__})"
            )
            return None
    version = _json_log_version(source)
    if version is None or version in KNOWN_VERSIONS:
        try:
            log = read_eval_log(source, header_only=True, format=form)
        except Exception as exc:  # whatever Inspect's reader meets in a damaged file
            reason = f"not a readable Inspect log ({type(exc).__name__})"
            sink.problem(None, "input-unreadable", reason)
            return None
        version = log.version
    if version not in KNOWN_VERSIONS:
        sink.problem(
            None,
            "inspect-log-version",
            f"Inspect log version {version} is not one this reader knows "
            f"({', '.join(map(str, sorted(KNOWN_VERSIONS)))})",
        )
        return None
    keys = _sample_keys(source) if form == "eval" else None
    names = _member_names(keys) if keys is not None else None
    if members.refused and names is None:
        index, breach = next(iter(members.refused.values()))
        raise TooLarge(
            f"archive member {index} (a sample, samples/*.json) {breach}, and which sample it "
            "holds cannot be told without reading the whole log"
        )
    refused = frozenset(names[name] for name in members.refused if names and name in names)
    for index, breach in members.refused.values():
        sink.problem(
            f"member {index}",
            "input-unreadable",
            f"a sample (samples/*.json) that {breach} is not read: its trial fails closed (D-11) "
            "and the eval is left without eval.completed",
        )
    sizes = {key: members.sizes.get(name, 0) for name, key in (names or {}).items()}
    writer = _RunWriter(sink, log.eval.eval_id)
    start = writer.reserve()  # eval.started is first, written once the counts are known
    scorer, key = _scorer_name(log, options)
    unscored: Counter[str] = Counter()
    left_out = _LeftOut()
    read = LogRead(log, {})
    try:
        for sample in _samples(source, form, keys, sizes, refused):
            if isinstance(sample, _Refused):
                _refused_trial(writer, sample)
                unscored["past a cap"] += 1
                continue
            read.inputs.setdefault(task_id(sample.id), _input(sample.input))
            if options.errored == "leave-out" and sample.error is not None:
                left_out.trials[sample.id] += 1
                continue
            left_out.kept[sample.id] += 1
            why = _trial(writer, sample, scorer, key, options.pass_score, options.model_class)
            if why is not None:
                unscored[why] += 1
    except Exception as exc:  # whatever Inspect's reader meets in a damaged file
        sink.problem(
            f"after event {writer.sequence}",
            "inspect-samples-unreadable",
            f"the rest of the samples cannot be read ({type(exc).__name__}); "
            "those read are kept, the eval is left without eval.completed",
        )
        _started(writer, start, log, left_out)
        _names(writer, log, sink.path, left_out)
        return read
    tasks = _started(writer, start, log, left_out)
    if left_out.trials:
        sink.problem(
            None,
            "inspect-sample-left-out",
            f"{left_out.count} errored sample(s) left out, as Inspect leaves them out of its "
            "figures (--inspect-errored leave-out, E-147)",
        )
    if unscored:
        counts = ", ".join(f"{n} {why}" for why, n in sorted(unscored.items()))
        sink.problem(
            None,
            "inspect-sample-unscored",
            f"{sum(unscored.values())} sample(s) without a usable score from the scorer used "
            f"({counts}): each fails closed (D-11)",
        )
    if log.status == "success":
        # a log not read whole has no eval.completed: Inspect's figures cover what was not read
        if not members.refused:
            completed = Object([("taskCount", _number(tasks))])
            mean = inspect_mean(log, scorer, key)
            if mean is not None:
                completed.insert(0, ("aggregateScore", _number(mean)))
            writer.emit("eval.completed", completed, log.stats.completed_at)
    else:
        sink.problem(
            None,
            "inspect-eval-unfinished",
            f"the eval's status is {log.status}: its scored samples are graded, and the eval is "
            "left without eval.completed",
        )
    _names(writer, log, sink.path, left_out)
    return read


@dataclass
class _LeftOut:
    """Per sample id, the trials written and the errored ones left out (E-147)."""

    kept: Counter[int | str] = field(default_factory=Counter)
    trials: Counter[int | str] = field(default_factory=Counter)

    @property
    def count(self) -> int:
        return sum(self.trials.values())

    def whole_samples(self) -> int:
        """Samples every epoch of which was left out: no task of the run."""
        return sum(1 for sample_id in self.trials if not self.kept[sample_id])

    def some_epochs(self) -> bool:
        """Whether a sample written lost some of its epochs."""
        return any(self.kept[sample_id] for sample_id in self.trials)


def _started(writer: _RunWriter, sequence: int, log: EvalLog, left_out: _LeftOut) -> int:
    """The eval.started at its kept `sequence`; its taskCount, returned. Samples left out whole
    (E-147) are not tasks of the run; where a sample written lost some epochs, the trials differ
    from task to task and no trialCount is written (each task then has the trials it kept, D-4)."""
    tasks = _task_count(log) - left_out.whole_samples()
    started = Object(
        [
            ("suiteId", suite_id(log.eval.task)),
            ("suiteVersion", suite_version(log.eval.task_version)),
            ("taskCount", _number(tasks)),
        ]
    )
    if not left_out.some_epochs():
        started.append(("trialCount", _number(log.eval.config.epochs or 1)))
    writer.emit("eval.started", started, log.eval.created, sequence)
    return tasks


def _names(writer: _RunWriter, log: EvalLog, path: str, left_out: _LeftOut) -> None:
    """What Inspect calls the run and its trials (E-146), after every other event of the log, so
    the events before them are the ones an earlier evalbatch wrote (an ingest into the same
    directory adds these beside them, D-3, E-34): the task, the model (`provider/model`) and the
    log file's name, then per trial its sample id (as Inspect typed it) and epoch. Ids and names
    in vendor events of their own, since OpenWOP's eval payloads are closed (§H)."""
    names = Object(
        [
            ("task", log.eval.task),
            ("model", log.eval.model),
            ("logFile", os.path.basename(path)),
        ]
    )
    if left_out.trials:
        names.append(("erroredLeftOut", _number(left_out.count)))
    writer.emit(EVAL_NAMES, names, None)
    for sample_id, epoch in writer.samples:
        trial = Object(
            [
                ("taskId", task_id(sample_id)),
                ("trialIndex", _number(epoch - 1)),
                ("sampleId", sample_id if isinstance(sample_id, str) else _number(sample_id)),
                ("epoch", _number(epoch)),
            ]
        )
        if (sample_id, epoch) in writer.errored:
            trial.append(("errored", True))
        writer.emit(SAMPLE_NAMES, trial, None)


def starting_suite(
    path: str,
    limits: InputLimits = DEFAULT_LIMITS,
    *,
    options: InspectOptions | None = None,
    suite_options: StartingSuiteOptions | None = None,
) -> dict[str, Any] | None:
    """A starting suite file for the task of the Inspect log at `path`, read as `options` say
    (`suite_of`); None when the log cannot be read."""
    options = options or InspectOptions()
    read = read_inspect_log(RowSink(path), options, limits)
    return suite_of(read, options, suite_options) if read is not None else None


def suite_of(
    read: LogRead,
    options: InspectOptions | None = None,
    suite_options: StartingSuiteOptions | None = None,
) -> dict[str, Any] | None:
    """A starting suite file for a log's task (RFC 0244 §1): one golden task per sample the eval
    was to run (its input as given, `{}` for one the log does not hold: an interrupted eval),
    and the trials block from the epochs, for the user to add trajectory expectations to. None
    for a log that names no sample.

    Its bar is the one the samples were graded with (E-149): `passScore` is `options.pass_score`
    (`--inspect-pass-score`), so a sample's `passed` and the suite's reading of its score agree,
    and `passRule` is `suite_options`' (`mean` unless chosen: a task passes when its mean score
    over the epochs reaches the bar, as Inspect's own mean over epochs reads it)."""
    options = options or InspectOptions()
    suite_options = suite_options or StartingSuiteOptions()
    log = read.log
    ids = [task_id(i) for i in _sample_ids(log) or []] or list(read.inputs)
    if not ids:
        return None
    tasks = {
        name: {"taskId": name, "input": read.inputs.get(name, {}), "expected": {"kind": "golden"}}
        for name in ids
    }
    return {
        "suiteId": suite_id(log.eval.task),
        "version": suite_version(log.eval.task_version),
        "targetAgentId": AGENT_ID,
        "modes": ["golden"],
        "thresholds": {"passScore": options.pass_score},
        "trials": {"count": log.eval.config.epochs or 1, "passRule": suite_options.rule},
        "tasks": list(tasks.values()),
    }


def _input(given: Any) -> dict[str, Any]:
    """A sample's input as a suite task's: its text, or its messages as role and text."""
    if isinstance(given, str):
        return {"message": given}
    return {"messages": [{"role": message.role, "content": message.text} for message in given]}


class OtherEval(ValueError):
    """The log read is not the run's: its eval id is another (`read_some_samples`)."""


class UnknownVersion(ValueError):
    """A log of a version this reader does not know (`read_some_samples`); the message names
    the version."""


@dataclass(frozen=True)
class SomeSamples:
    """Some samples of one log, read on demand (`read_some_samples`): its header, each sample
    found by (its id as text, its epoch), and the ones refused before they were read (past a
    cap, E-116), with why."""

    log: EvalLog
    samples: dict[tuple[str, int], EvalSample]
    refused: dict[tuple[str, int], str]


def read_some_samples(
    path: str,
    eval_id: str,
    wanted: frozenset[tuple[str, int]],
    limits: InputLimits = DEFAULT_LIMITS,
) -> SomeSamples:
    """The samples `wanted` (id as text, epoch) of the Inspect log at `path`, read by Inspect's
    reader for `explain --sample-text` (E-150) after the checks `read_inspect_log` makes (E-115,
    E-116): a gzip-compressed log decompressed against the caps, a `.json` log capped in size
    and depth, every member of an archive measured; a wanted sample whose member is past a cap
    is refused, not read. Only the wanted samples of an archive are read (a `.json` log, or an
    archive without sample summaries, is read whole, as Inspect reads it).

    Raises:
        OtherEval: the log's eval id is not `eval_id` (checked before any sample is read).
        TooLarge, TooDeep: the log, or a member other than a sample, is past a cap.
        OSError: the file cannot be read.
        UnknownVersion: a log version this reader does not know.
        Exception: whatever Inspect's reader meets in a damaged log.
    """
    from inspect_ai.log import read_eval_log

    with _readable(path, limits) as (source, form):
        members = _Members()
        if form == "json":
            _check_json_log(source, limits)
        else:
            members = _measured(source, limits)
        version = _json_log_version(source)
        if version is not None and version not in KNOWN_VERSIONS:
            raise UnknownVersion(f"Inspect log version {version} is not one this reader knows")
        log = read_eval_log(source, header_only=True, format=form)
        if log.eval.eval_id != eval_id:
            raise OtherEval(eval_id)
        keys = _sample_keys(source) if form == "eval" else None
        if keys is not None:
            keys = [(i, epoch) for i, epoch in keys if (str(i), epoch) in wanted]
        names = _member_names(keys) if keys is not None else None
        if members.refused and names is None:
            index, breach = next(iter(members.refused.values()))
            raise TooLarge(
                f"archive member {index} (a sample, samples/*.json) {breach}, and which sample "
                "it holds cannot be told without reading the whole log"
            )
        refused = {
            names[name]: breach
            for name, (_, breach) in members.refused.items()
            if names and name in names
        }
        sizes = {key: members.sizes.get(name, 0) for name, key in (names or {}).items()}
        found: dict[tuple[str, int], EvalSample] = {}
        for sample in _samples(source, form, keys, sizes, frozenset(refused)):
            key = (str(sample.id), sample.epoch)
            if not isinstance(sample, _Refused) and key in wanted:
                found.setdefault(key, sample)
    return SomeSamples(log, found, {(str(i), epoch): why for (i, epoch), why in refused.items()})


def scorer_used(log: EvalLog, scorer: str | None) -> tuple[str | None, str | None]:
    """The scorer whose score the mapping counts (E-111) with `InspectOptions(scorer=scorer)`,
    and its key: `scorer` (`NAME` or `NAME/KEY`), else the log's first."""
    return _scorer_name(log, InspectOptions(scorer=scorer))
