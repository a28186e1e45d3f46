"""Inspect users at home: an eval set's index files are left alone (E-143).

The logs are written by Inspect itself: its `eval_set`, mock model and log writer
(examples/inspect/make_eval_sets.py), cached in pytest's cache as test_inspect_logs.py's are.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalbatch.cli import cli
from evalbatch.inputs import inspect_logs
from tests.helpers import ROOT, written_by_inspect

MAKE_EVAL_SETS = ROOT / "examples" / "inspect" / "make_eval_sets.py"
#: what an Inspect eval set keeps beside its logs (E-143)
INDEX_FILES = {"eval-set.json", "logs.json"}
#: text of the samples (inputs, answers) that no message may show
SAMPLE_TEXT = ("add 1 2", "add 5 6", "wrong")


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Path:
    """`base/` and `cand/`, two eval sets as Inspect's `eval_set` left them; a copy of the
    cached ones, which no test can change."""
    cache = getattr(pytestconfig, "cache", None)
    cache_dir = cache.mkdir("inspect-eval-sets") if cache else tmp_path_factory.mktemp("sets")
    out = tmp_path_factory.mktemp("inspect-eval-sets") / "sets"
    shutil.copytree(written_by_inspect(MAKE_EVAL_SETS, cache_dir), out)
    return out


def _log(sets: Path, side: str, task: str = "arithmetic") -> Path:
    (found,) = (sets / side).glob(f"*_{task}_*.eval")
    return found


def _invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(cli, [str(arg) for arg in args], catch_exceptions=False)


# --- E-143 the index files of an eval set ------------------------------------------------------


def test_e143_an_eval_set_directory_ingests_with_no_problem(tmp_path: Path, sets: Path) -> None:
    """The directory `eval_set` wrote: its logs are ingested, its index files named in a note
    and in `indexFiles`, never read as events nor reported; exit 0."""
    base = sets / "base"
    assert INDEX_FILES | {".eval-set-id"} <= {path.name for path in base.iterdir()}
    result = _invoke("ingest", base, "--out", tmp_path / "events", "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert report["problems"] == [] and report["runs"] == 2 and report["files"] == 2
    assert {Path(path).name for path in report["indexFiles"]} == INDEX_FILES
    shown = _invoke("ingest", base, "--out", tmp_path / "again")
    assert "not events: 2 Inspect eval-set index files (eval-set.json, logs.json) left alone" in (
        shown.stdout
    )
    quiet = _invoke("ingest", base, "--out", tmp_path / "quiet", "--quiet")
    assert "index" not in quiet.stdout and quiet.exit_code == 0


def test_e143_an_index_file_is_known_by_its_name_and_its_content(
    tmp_path: Path, sets: Path
) -> None:
    """Inspect's own index files are index files wherever they are; a file of the same name
    that opens otherwise (an OpenWOP export called logs.json) is read as events."""
    base = sets / "base"
    assert all(inspect_logs.is_eval_set_index(str(base / name)) for name in INDEX_FILES)
    assert not inspect_logs.is_eval_set_index(str(_log(sets, "base")))
    export = tmp_path / "export" / "logs.json"
    export.parent.mkdir()
    event = {"runId": "r-1", "sequence": 0, "type": "eval.started", "payload": {}}
    export.write_text(json.dumps([event]))
    assert not inspect_logs.is_eval_set_index(str(export))
    result = _invoke("ingest", export, "--out", tmp_path / "events", "--json")
    assert json.loads(result.stdout)["events"] == 1 and result.exit_code == 0
    alone = _invoke("ingest", base / "logs.json", "--out", tmp_path / "none")
    assert alone.exit_code == 2
    assert "only 1 Inspect eval-set index file (logs.json), left alone" in alone.stderr
