"""The Python API takes paths as users write them (E-91).

Every function that reads or writes files accepts one `str`, one `Path` or a list of either (a
string is one path, never its letters); suite files are `suites=` everywhere (the keyword
`suite_paths=`, never released, is gone); and everything the Python examples of
the README and docs/ use is importable from `evalbatch` itself.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import evalbatch
from evalbatch import api
from evalbatch.cli import cli
from evalbatch.commands.run import run as run_command
from evalbatch.errors import OptionError
from evalbatch.extract import extractor
from evalbatch.inputs.path_forms import as_paths
from evalbatch.options import (
    BATCH_EVENTS,
    EXTRACTORS,
    MAX_THREADS,
    ON_MISS_DEFAULTS,
    PASS_SCORE,
    THREADS,
    Bounds,
)
from tests.helpers import (
    ROOT,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    bound_probes,
    cli_accepts,
)

REGRESS = ROOT / "data" / "samples" / "regress"
RUN = "acme/run-trials-k2-0001"


@pytest.fixture(scope="module")
def graded_from_lists() -> evalbatch.GradeResult:
    return evalbatch.grade_paths([SAMPLE_EVENTS], [SAMPLE_SUITES])


@pytest.mark.parametrize(
    ("events", "suites"),
    [
        (str(SAMPLE_EVENTS), str(SAMPLE_SUITES)),
        (SAMPLE_EVENTS, SAMPLE_SUITES),
        ([str(SAMPLE_EVENTS)], [SAMPLE_SUITES]),
        (sorted(SAMPLE_EVENTS.glob("*.parquet")), (str(SAMPLE_SUITES),)),
    ],
    ids=["str", "Path", "list-mixed", "list-of-files"],
)
def test_grade_paths_takes_a_str_a_path_or_a_list(
    events: api.Paths, suites: api.Paths, graded_from_lists: evalbatch.GradeResult
) -> None:
    """E-91: `grade_paths("data/samples/events", "data/samples/suites")` grades the
    samples as the list form does (it used to read each string as one-letter paths)."""
    result = evalbatch.grade_paths(events, suites)
    assert result.runs.height == 3
    assert result.runs["has_suite"].all()
    for name in ("runs", "tasks", "trials", "problems"):
        assert_frame_equal(getattr(result, name), getattr(graded_from_lists, name))


def test_as_paths_never_iterates_a_string() -> None:
    """E-91: one string or `Path` is one path."""
    assert as_paths("data/samples/events") == ["data/samples/events"]
    assert as_paths(Path("a/b")) == ["a/b"]
    assert as_paths(["a", Path("b")]) == ["a", "b"]
    assert as_paths(()) == []


def test_write_outputs_takes_strings(tmp_path: Path) -> None:
    """E-91: `write_outputs(str, str, suites=str)` writes every graded run."""
    report = evalbatch.write_outputs(str(SAMPLE_EVENTS), str(tmp_path), suites=str(SAMPLE_SUITES))
    lines = (tmp_path / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    assert report.summary_count == 3 == len(lines)
    assert all(json.loads(line)["summary"]["suiteId"] for line in lines)


def test_the_other_functions_take_strings(tmp_path: Path) -> None:
    """E-91: regress, verify, explain, load_suites and ingest take one string too."""
    report = evalbatch.regress_paths(
        str(REGRESS / "baseline.parquet"), str(REGRESS / "candidate.parquet"), str(SAMPLE_SUITES)
    )
    assert report.comparisons
    verified = evalbatch.verify_paths(str(SAMPLE_EVENTS), suites=str(SAMPLE_SUITES))
    assert len(verified.runs) == 3
    explained = evalbatch.explain_paths(str(SAMPLE_EVENTS), str(SAMPLE_SUITES), RUN)
    assert explained.graded and explained.run_id == RUN
    assert len(evalbatch.load_suites(str(SAMPLE_SUITES))) == len(
        evalbatch.load_suites([SAMPLE_SUITES])
    )
    export = tmp_path / "events.ndjson"
    export.write_text(
        json.dumps(
            {
                "runId": "r-1",
                "sequence": 1,
                "type": "run.started",
                "timestamp": "2026-12-01T00:00:00Z",
                "payload": {},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    ingested = evalbatch.ingest_paths(str(export), tmp_path / "out")
    assert (ingested.events, ingested.runs) == (1, 1)


@pytest.mark.parametrize("function", ["grade_paths", "verify_paths"])
def test_suite_paths_keyword_is_gone(function: str) -> None:
    """E-91: `suites=` is the one keyword; `suite_paths=`, which 0.1.0 was never
    released under, is an unexpected keyword like any other."""
    call = getattr(evalbatch, function)
    with pytest.raises(TypeError, match="suite_paths"):
        call([SAMPLE_EVENTS], suite_paths=[SAMPLE_SUITES])


def test_suites_keyword_is_the_same_everywhere() -> None:
    """E-91: one keyword per concept: every function taking suite files calls the
    parameter `suites`."""
    import inspect

    names = ("grade_paths", "write_outputs", "regress_paths", "verify_paths", "explain_paths")
    for name in (*names, "infer_paths"):
        parameters = inspect.signature(getattr(evalbatch, name)).parameters
        assert "suites" in parameters and "suite_paths" not in parameters, name
    assert "suites" in inspect.signature(evalbatch.connect).parameters


def _docs_python() -> list[str]:
    """The Python examples of README.md and of every page of docs/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    blocks: list[str] = []
    for page in pages:
        blocks += re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    return blocks


def test_everything_the_docs_import_is_in_evalbatch() -> None:
    """E-91: each `from evalbatch import ...` and `evalbatch.X` of the Python examples
    of the README and docs/ is importable from `evalbatch` (write_outputs was only in
    evalbatch.api)."""
    names: set[str] = set()
    blocks = _docs_python()
    assert blocks
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module == "evalbatch":
                names.update(alias.name for alias in node.names)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "evalbatch"
            ):
                names.add(node.attr)
    assert {"grade_paths", "write_outputs", "connect", "Resources"} <= names
    for name in sorted(names):
        assert getattr(evalbatch, name) is getattr(api, name), name


def test_evalbatch_exports_the_whole_api() -> None:
    """E-91: `evalbatch` and `evalbatch.api` offer the same names."""
    assert sorted(evalbatch.__all__) == sorted(api.__all__)


# --------------------------------------------------------------------------------------------
# E-130: options that check themselves, with the ranges the CLI has


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"default_pass_score": 7.0, "on_miss_default": "bogus"}, "default_pass_score = 7.0"),
        ({"default_pass_score": -0.1}, "default_pass_score = -0.1"),
        ({"default_pass_score": math.nan}, "default_pass_score = nan"),
        ({"default_pass_score": math.inf}, "default_pass_score = inf"),
        ({"default_pass_score": True}, "default_pass_score = True"),
        ({"default_pass_score": "0.5"}, "default_pass_score = '0.5'"),
        ({"on_miss_default": "bogus"}, "on_miss_default = 'bogus'"),
        ({"on_miss_default": None}, "on_miss_default = None"),
    ],
)
def test_e130_grade_options_refuse_what_the_cli_refuses(
    fields: dict[str, object], named: str
) -> None:
    """E-130 / D-9 / D-15: a GradeOptions the CLI could not be given is refused when it is made,
    naming the field, the value and what is allowed (not graded with exit 0)."""
    with pytest.raises(OptionError, match=re.escape(f"GradeOptions.{named}: must be")) as raised:
        evalbatch.GradeOptions(**fields)  # type: ignore[arg-type]
    assert isinstance(raised.value, ValueError)
    assert "[0, 1]" in str(raised.value) or "'count', 'fail'" in str(raised.value)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"threads": 0}, "threads = 0"),
        ({"threads": MAX_THREADS + 1}, f"threads = {MAX_THREADS + 1}"),
        ({"threads": 2.0}, "threads = 2.0"),
        ({"threads": True}, "threads = True"),
        ({"batch_events": 0}, "batch_events = 0"),
        ({"batch_events": -5}, "batch_events = -5"),
        ({"batch_events": False}, "batch_events = False"),
        ({"extractor": "simdjson"}, "extractor = 'simdjson'"),
        ({"extractor": None}, "extractor = None"),
    ],
)
def test_e130_resources_refuse_what_the_cli_refuses(fields: dict[str, object], named: str) -> None:
    """E-130 / E-64 / E-108: Resources the CLI could not be given are refused when made."""
    with pytest.raises(OptionError, match=re.escape(f"Resources.{named}: must be")):
        evalbatch.Resources(**fields)  # type: ignore[arg-type]


def test_e130_defaults_and_every_cli_edge_still_construct() -> None:
    """E-130: the defaults, and each value at an edge the CLI takes, make the objects."""
    assert evalbatch.GradeOptions() == evalbatch.GradeOptions(1.0, "count")
    for score in (0, 1, 0.0, 1.0, 0.75, np.float64(0.5), np.int64(1)):
        for on_miss in ON_MISS_DEFAULTS:
            evalbatch.GradeOptions(default_pass_score=score, on_miss_default=on_miss)
    assert evalbatch.Resources().extractor == "auto"
    for threads in (None, 1, MAX_THREADS, np.int64(4)):
        for name in EXTRACTORS:
            evalbatch.Resources(threads=threads, batch_events=1, extractor=name)


@pytest.mark.parametrize(
    ("option", "name", "bounds", "make"),
    [
        ("--default-pass-score", "default_pass_score", PASS_SCORE, evalbatch.GradeOptions),
        ("--threads", "threads", THREADS, evalbatch.Resources),
        ("--batch-events", "batch_events", BATCH_EVENTS, evalbatch.Resources),
    ],
)
def test_e130_the_cli_and_the_objects_allow_the_same_numbers(
    option: str, name: str, bounds: Bounds, make: Any
) -> None:
    """E-130: one range, declared once: at, just inside and just outside each end (and NaN,
    infinities), `evalbatch run` takes a value exactly when the object does."""
    for value in bound_probes(bounds):
        text = str(value) if isinstance(value, int) else repr(value)
        try:
            make(**{name: value})
            made = True
        except OptionError as exc:
            assert f".{name} = " in str(exc)
            made = False
        assert cli_accepts(run_command, name, text) == made, (option, value)


@pytest.mark.parametrize(
    "args",
    [
        ["--default-pass-score", "7.0"],
        ["--default-pass-score", "nan"],
        ["--on-miss-default", "bogus"],
        ["--threads", "0"],
        ["--batch-events", "0"],
        ["--extractor", "simdjson"],
    ],
)
def test_e130_the_cli_still_refuses_with_its_usage_line(args: list[str]) -> None:
    """E-130 / E-82: the same bad values on the command line are click's usage error (exit 2,
    the usage line and the option named), before the option objects are made."""
    result = CliRunner().invoke(cli, ["run", str(SAMPLE_EVENTS), "--out", "unused", *args])
    assert result.exit_code == 2, result.output
    assert "Usage: cli run" in result.output or "Usage: evalbatch run" in result.output
    assert f"Invalid value for '{args[0]}'" in result.output
    assert "Traceback" not in result.output


def test_e130_evalbatch_extractor_is_read_by_the_cli_not_by_resources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-130 / E-108: EVALBATCH_EXTRACTOR set in the environment leaves `Resources()` "auto" (the
    library reads no environment) and is what `evalbatch run` takes when --extractor is not
    given; --extractor still wins over it."""
    monkeypatch.setenv("EVALBATCH_EXTRACTOR", "duckdb")
    assert evalbatch.Resources() == evalbatch.Resources(extractor="auto")
    assert evalbatch.Resources().extractor == "auto"

    def extractor_of(*extra: str) -> str:
        out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        args = ["run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--out", str(out)]
        result = CliRunner().invoke(cli, [*args, "--json", "--quiet", *extra])
        assert result.exit_code == 0, result.output
        return str(json.loads(result.stdout)["extractor"])

    assert extractor_of() == "duckdb"
    if extractor.library() is not None:  # where the native extractor is built
        assert extractor_of("--extractor", "native").startswith("native")
        monkeypatch.setenv("EVALBATCH_EXTRACTOR", "native")
        assert extractor_of().startswith("native")
        assert extractor_of("--extractor", "duckdb") == "duckdb"
