"""What a host advertises under `agents.evalSuite`, and which suites it must refuse (E-100).

RFC 0244 §G: a host advertises each facet (`trajectory`, `trials.maxTrials`, `fixtureMatching`,
`regressionVerdict`) only if it implements the section, and at run create it MUST refuse with
`400 validation_error`, naming the field, a suite that uses a feature whose facet it does not
advertise — the rule RFC 0081 applies to an unadvertised mode. A host without
`agents.evalSuite` answers an eval run with `501 capability_not_provided` (RFC 0081).

`evalbatch validate --capabilities` asks this before a run (would the host accept the suite?);
`evalbatch verify --capabilities` asks it after (did the host grade what it had to refuse?). Both
read one rule: `refusals`.

A capabilities document is read off its shape (E-100): the document a host serves (`agents` at
its top, or under `capabilities`), the bare `agents` block, or the `evalSuite` block itself. The
`evalSuite` block is checked against a closed schema shipped in the package; a document that is
none of these, or whose block does not validate, is a `CapabilitiesError` (exit code 2), never
read as "everything advertised" or "nothing advertised".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard

from evalbatch.errors import EvalbatchError
from evalbatch.inputs import limits
from evalbatch.inputs.suites import REPEATED_KEY, format_path, schema_faults
from evalbatch.jsonvalue import reject_constant

CAPABILITY_SCHEMA = "agents-eval-suite-capability.schema.json"

#: the members only the `evalSuite` block holds: a document with one of them at its top is that
#: block
_BLOCK_MEMBERS = frozenset(
    {
        "supported",
        "modes",
        "maxTasksPerSuite",
        "maxCostUsdPerSuite",
        "trajectory",
        "trials",
        "fixtureMatching",
        "regressionVerdict",
    }
)

#: the two answers a refusal can carry: an unadvertised feature or mode (RFC 0244 §G, RFC 0081),
#: and a host that runs no eval suite at all (RFC 0081)
Status = Literal["400 validation_error", "501 capability_not_provided"]


class CapabilitiesError(EvalbatchError):
    """A capabilities document that cannot be read as one (exit code 2)."""


@dataclass(frozen=True)
class EvalSuiteFacets:
    """What one host advertises under `agents.evalSuite` (RFC 0081 and RFC 0244 §G).

    `supported` is False when the document has no `evalSuite` block or it says
    `supported: false`; an `evalSuite` block without `supported` advertises support (E-100: the
    RFC's own example carries none). `max_trials` is None when `trials` is not advertised.
    """

    source: str
    supported: bool
    modes: tuple[str, ...] = ()
    trajectory: bool = False
    max_trials: int | None = None
    fixture_matching: bool = False
    regression_verdict: bool = False
    max_tasks_per_suite: int | None = None
    max_cost_usd_per_suite: float | None = None

    def advertised(self) -> dict[str, Any]:
        """The facets as the document gave them, for `--json` (ids, enums, counts only)."""
        return {
            "supported": self.supported,
            "modes": list(self.modes),
            "trajectory": self.trajectory,
            "trials": None if self.max_trials is None else {"maxTrials": self.max_trials},
            "fixtureMatching": self.fixture_matching,
            "regressionVerdict": self.regression_verdict,
            "maxTasksPerSuite": self.max_tasks_per_suite,
            "maxCostUsdPerSuite": self.max_cost_usd_per_suite,
        }


@dataclass(frozen=True)
class Refusal:
    """One field a host would refuse a suite on: the answer, the suite's JSON path (or the log's
    field, for `verify`), the facet it lacks, and why, in the RFC's words (content-free: paths,
    facet names, modes and counts only)."""

    status: Status
    path: str
    facet: str
    message: str

    def __str__(self) -> str:
        return f"{self.status} on {self.path}: {self.message}"

    def as_json(self) -> dict[str, str]:
        return {
            "status": self.status,
            "path": self.path,
            "facet": self.facet,
            "message": self.message,
        }


# --------------------------------------------------------------------------------------------
# Reading a capabilities document


def _evalsuite_block(doc: Any, source: str) -> Mapping[str, Any] | None:
    """The `evalSuite` block of `doc`, read off its shape (E-100); None when a served document
    or an `agents` block holds none (the host runs no eval suite)."""
    if not isinstance(doc, dict):
        raise CapabilitiesError(f"{source}: not a capabilities document: not a JSON object")
    if "agents" in doc:  # the document a host serves: its agents block
        agents = doc["agents"]
        if not isinstance(agents, dict):
            raise CapabilitiesError(f"{source}: agents must be an object")
        block = agents.get("evalSuite")
    elif "evalSuite" in doc:  # the agents block
        block = doc["evalSuite"]
    elif "capabilities" in doc:  # the served document, wrapped once
        return _evalsuite_block(doc["capabilities"], f"{source}: capabilities")
    elif _BLOCK_MEMBERS & set(doc):  # the evalSuite block itself
        block = doc
    elif "protocolVersion" in doc:  # a served document without agents: no evalSuite (501)
        return None
    else:
        raise CapabilitiesError(
            f"{source}: not a capabilities document: it holds no agents.evalSuite, no agents "
            "block and no evalSuite block"
        )
    if block is not None and not isinstance(block, dict):
        raise CapabilitiesError(f"{source}: agents.evalSuite must be an object")
    return block


def facets_of(doc: Any, source: str) -> EvalSuiteFacets:
    """The facets a capabilities document advertises (E-100).

    Raises:
        CapabilitiesError: the document is none of the shapes a host serves, or its `evalSuite`
            block fails the schema (each fault named by its JSON path).
    """
    block = _evalsuite_block(doc, source)
    if block is None or block.get("supported") is False:  # RFC 0081: no eval suite (501)
        return EvalSuiteFacets(source=source, supported=False)
    faults = [f for f in schema_faults(CAPABILITY_SCHEMA, block) if f.severity == "error"]
    if faults:
        listed = "; ".join(f"agents.evalSuite{f.path[1:]}: {f.message}" for f in faults[:5]) + (
            "; ..." if len(faults) > 5 else ""
        )
        raise CapabilitiesError(f"{source}: not a valid agents.evalSuite block: {listed}")
    trials = block.get("trials")
    return EvalSuiteFacets(
        source=source,
        supported=block.get("supported", True),
        modes=tuple(block["modes"]),
        trajectory=block.get("trajectory") is True,
        max_trials=trials["maxTrials"] if isinstance(trials, dict) else None,
        fixture_matching=block.get("fixtureMatching") is True,
        regression_verdict=block.get("regressionVerdict") is True,
        max_tasks_per_suite=block.get("maxTasksPerSuite"),
        max_cost_usd_per_suite=block.get("maxCostUsdPerSuite"),
    )


def read_capabilities(path: str | Path) -> EvalSuiteFacets:
    """Read a capabilities document from a JSON file (see `facets_of`).

    Raises:
        CapabilitiesError: the file cannot be read, is not JSON (or nests deeper than E-115
            allows), or is no capabilities document.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM, as suites allow
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise CapabilitiesError(f"{source}: cannot be read ({reason})") from None
    repeats = limits.RepeatedKeys()
    try:
        doc = limits.loads(text, parse_constant=reject_constant, object_pairs_hook=repeats)
    except limits.TooDeep as exc:  # before the schema validator recurses (E-115)
        raise CapabilitiesError(f"{source}: {exc}") from None
    except ValueError:
        raise CapabilitiesError(f"{source}: not JSON") from None
    repeated = repeats.paths(doc)
    if repeated:  # which of two values a host would read is undefined (E-123)
        listed = "; ".join(f"{format_path(parts)}: {REPEATED_KEY}" for parts in repeated[:5])
        more = "; ..." if len(repeated) > 5 else ""
        raise CapabilitiesError(f"{source}: not a valid capabilities document: {listed}{more}")
    return facets_of(doc, source)


# --------------------------------------------------------------------------------------------
# The refusal rule (RFC 0244 §G, RFC 0081), one feature at a time


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


_NOT_SUPPORTED = "the host advertises no agents.evalSuite: it runs no eval suite (RFC 0081)"


def _mode_refusals(modes: Any, path: str, facets: EvalSuiteFacets) -> list[Refusal]:
    """Each mode not in the host's `modes` (RFC 0081), at `path[i]`."""
    return [
        Refusal(
            "400 validation_error",
            f"{path}[{i}]",
            "modes",
            f"mode '{mode}' is not in the host's agents.evalSuite.modes (RFC 0081)",
        )
        for i, mode in enumerate(modes if isinstance(modes, list) else [])
        if isinstance(mode, str) and mode not in facets.modes
    ]


def _task_count_refusal(tasks: list[Any], facets: EvalSuiteFacets) -> list[Refusal]:
    """More tasks than the host's `maxTasksPerSuite` (RFC 0081)."""
    if facets.max_tasks_per_suite is None or len(tasks) <= facets.max_tasks_per_suite:
        return []
    return [
        Refusal(
            "400 validation_error",
            "$.tasks",
            "maxTasksPerSuite",
            f"{len(tasks)} tasks, above the host's maxTasksPerSuite "
            f"{facets.max_tasks_per_suite} (RFC 0081)",
        )
    ]


def _trial_count_refusal(
    count: Any, path: str, name: str, facets: EvalSuiteFacets
) -> list[Refusal]:
    """A count of trials above 1 without `trials`, or above `trials.maxTrials` (RFC 0244 §G)."""
    if not _is_count(count) or count <= 1:
        return []
    if facets.max_trials is None:
        return [
            Refusal(
                "400 validation_error",
                path,
                "trials",
                f"{name} {count} > 1, and the host does not advertise trials (RFC 0244 §G)",
            )
        ]
    if count > facets.max_trials:
        return [
            Refusal(
                "400 validation_error",
                path,
                "trials.maxTrials",
                f"{name} {count} is above the host's trials.maxTrials {facets.max_trials} "
                "(RFC 0244 §G)",
            )
        ]
    return []


def _task_refusals(
    task: Mapping[str, Any], parts: tuple[str | int, ...], facets: EvalSuiteFacets
) -> list[Refusal]:
    """The fields of one task a host would refuse (RFC 0244 §G)."""
    found: list[Refusal] = []
    expected = task.get("expected")
    if isinstance(expected, dict) and not facets.trajectory:
        if expected.get("kind") == "trajectory":
            found.append(
                _unadvertised((*parts, "expected", "kind"), "trajectory", 'kind "trajectory"')
            )
        if "trajectory" in expected:
            found.append(
                _unadvertised(
                    (*parts, "expected", "trajectory"), "trajectory", "expected.trajectory"
                )
            )
    fixtures = task.get("fixtures")
    if isinstance(fixtures, dict) and not facets.fixture_matching:
        if "onMiss" in fixtures:
            found.append(
                _unadvertised((*parts, "fixtures", "onMiss"), "fixtureMatching", "fixtures.onMiss")
            )
        responses = fixtures.get("toolResponses")
        for j, entry in enumerate(responses if isinstance(responses, list) else []):
            if isinstance(entry, dict) and "args" in entry:
                found.append(
                    _unadvertised(
                        (*parts, "fixtures", "toolResponses", j, "args"),
                        "fixtureMatching",
                        "toolResponses[].args",
                    )
                )
    return found


def _unadvertised(parts: Sequence[str | int], facet: str, feature: str) -> Refusal:
    return Refusal(
        "400 validation_error",
        format_path(parts),
        facet,
        f"{feature} needs the {facet} facet, which the host does not advertise (RFC 0244 §G)",
    )


def _suite_features(suite: Mapping[str, Any], facets: EvalSuiteFacets) -> list[Refusal]:
    """The suite's own features a host would refuse: its number of tasks and each task's."""
    tasks = suite.get("tasks")
    tasks = tasks if isinstance(tasks, list) else []
    found = _task_count_refusal(tasks, facets)
    for i, task in enumerate(tasks):
        if isinstance(task, dict):
            found += _task_refusals(task, ("tasks", i), facets)
    return found


def _suite_trial_count(suite: Mapping[str, Any]) -> Any:
    trials = suite.get("trials")
    return trials.get("count") if isinstance(trials, dict) else None


def refusals(suite: Any, facets: EvalSuiteFacets) -> list[Refusal]:
    """Every field `facets`' host would refuse `suite` on at run create.

    A host that advertises no eval suite refuses every suite with `501 capability_not_provided`
    (RFC 0081). Otherwise, `400 validation_error` naming each field (RFC 0244 §G): a mode not in
    `modes` (RFC 0081); more tasks than `maxTasksPerSuite`; `trials.count` > 1 without `trials`,
    or above `trials.maxTrials`; `expected.trajectory` or `kind: "trajectory"` without
    `trajectory`; `fixtures.onMiss` or `toolResponses[].args` without `fixtureMatching`.
    """
    if not isinstance(suite, dict):
        return []
    if not facets.supported:
        return [Refusal("501 capability_not_provided", "$", "supported", _NOT_SUPPORTED)]
    return [
        *_mode_refusals(suite.get("modes"), "$.modes", facets),
        *_trial_count_refusal(_suite_trial_count(suite), "$.trials.count", "trials.count", facets),
        *_suite_features(suite, facets),
    ]


def run_refusals(
    suite: Any, started: Mapping[str, Any] | None, facets: EvalSuiteFacets
) -> list[Refusal]:
    """What a host had to refuse of an eval run it graded (RFC 0244 §G, for `verify`): the modes
    the run asked for (its `eval.started.modes`, else its suite's), its count of trials (its
    suite's `trials.count` and its `eval.started.trialCount`), and, with its suite, the suite's
    tasks and their features. A path names the event's field, or the suite's (`$...`)."""
    started = started if isinstance(started, Mapping) else {}
    suite = suite if isinstance(suite, dict) else {}
    if not facets.supported:
        return [
            Refusal(
                "501 capability_not_provided",
                "eval.started",
                "supported",
                "the host advertises no agents.evalSuite but ran an eval (RFC 0081)",
            )
        ]
    modes = started.get("modes")
    if isinstance(modes, list):
        found = _mode_refusals(modes, "eval.started.modes", facets)
    else:
        found = _mode_refusals(suite.get("modes"), "$.modes", facets)
    count = _suite_trial_count(suite)
    if count is not None:
        found += _trial_count_refusal(count, "$.trials.count", "trials.count", facets)
    logged = started.get("trialCount")
    if logged != count:  # the run's own count, when it says another: both are checked
        found += _trial_count_refusal(logged, "eval.started.trialCount", "trialCount", facets)
    return found + _suite_features(suite, facets)
