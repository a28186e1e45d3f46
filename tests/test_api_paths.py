"""The Python API takes paths as users write them (issue 17 item 5).

Every function that reads or writes files accepts one `str`, one `Path` or a list of either (a
string is one path, never its letters); suite files are `suites=` everywhere, the old keyword
`suite_paths=` still works with a `DeprecationWarning`; and everything the Python examples of
the README and docs/ use is importable from `evalbatch` itself.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import evalbatch
from evalbatch import api
from evalbatch.pipeline.grading import as_paths
from tests.conftest import ROOT, SAMPLE_EVENTS, SAMPLE_SUITES

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
    """Issue 17 item 5: `grade_paths("data/samples/events", "data/samples/suites")` grades the
    samples as the list form does (it used to read each string as one-letter paths)."""
    result = evalbatch.grade_paths(events, suites)
    assert result.runs.height == 3
    assert result.runs["has_suite"].all()
    for name in ("runs", "tasks", "trials", "problems"):
        assert_frame_equal(getattr(result, name), getattr(graded_from_lists, name))


def test_as_paths_never_iterates_a_string() -> None:
    """Issue 17 item 5: one string or `Path` is one path."""
    assert as_paths("data/samples/events") == ["data/samples/events"]
    assert as_paths(Path("a/b")) == ["a/b"]
    assert as_paths(["a", Path("b")]) == ["a", "b"]
    assert as_paths(()) == []


def test_write_outputs_takes_strings(tmp_path: Path) -> None:
    """Issue 17 item 5: `write_outputs(str, str, suites=str)` writes every graded run."""
    report = evalbatch.write_outputs(str(SAMPLE_EVENTS), str(tmp_path), suites=str(SAMPLE_SUITES))
    lines = (tmp_path / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    assert report.summary_count == 3 == len(lines)
    assert all(json.loads(line)["summary"]["suiteId"] for line in lines)


def test_the_other_functions_take_strings(tmp_path: Path) -> None:
    """Issue 17 item 5: regress, verify, explain, load_suites and ingest take one string too."""
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
def test_suite_paths_keyword_still_works_with_a_warning(
    function: str, graded_from_lists: evalbatch.GradeResult
) -> None:
    """Issue 17 item 5: `suite_paths=` is the old spelling of `suites=`, kept for one version:
    it warns and means the same; both at once is an error."""
    call = getattr(evalbatch, function)
    with pytest.warns(DeprecationWarning, match=rf"{function}\(suite_paths=\.\.\.\)"):
        result = call([SAMPLE_EVENTS], suite_paths=[SAMPLE_SUITES])
    if function == "grade_paths":
        assert_frame_equal(result.runs, graded_from_lists.runs)
    else:
        assert len(result.runs) == 3
    with pytest.raises(TypeError, match="both suites= and suite_paths="):
        call([SAMPLE_EVENTS], suites=[SAMPLE_SUITES], suite_paths=[SAMPLE_SUITES])


def test_suites_keyword_is_the_same_everywhere() -> None:
    """Issue 17 item 5: one keyword per concept: every function taking suite files calls the
    parameter `suites`."""
    import inspect

    for name in ("grade_paths", "write_outputs", "regress_paths", "verify_paths"):
        assert "suites" in inspect.signature(getattr(evalbatch, name)).parameters, name
    assert "suites" in inspect.signature(evalbatch.explain_paths).parameters
    assert "suites" in inspect.signature(evalbatch.connect).parameters


def _docs_python() -> list[str]:
    """The Python examples of README.md and of every page of docs/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    blocks: list[str] = []
    for page in pages:
        blocks += re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    return blocks


def test_everything_the_docs_import_is_in_evalbatch() -> None:
    """Issue 17 item 5: each `from evalbatch import ...` and `evalbatch.X` of the Python examples
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
    """Issue 17 item 5: `evalbatch` and `evalbatch.api` offer the same names."""
    assert sorted(evalbatch.__all__) == sorted(api.__all__)
