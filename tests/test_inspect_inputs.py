"""Inspect users at home: an eval set's index files are left alone (E-143), and every command
takes Inspect logs where it takes event logs, each converted once into a cache by the mapping
`ingest` uses (E-144).

The logs are written by Inspect itself: its `eval_set`, mock model and log writer
(examples/inspect/make_eval_sets.py), cached in pytest's cache as test_inspect_logs.py's are.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch.cli import cli
from evalbatch.inputs import inspect_cache, inspect_logs
from evalbatch.inputs.inspect_logs import InspectOptions
from tests.helpers import OUTPUT_FILES, ROOT, SAMPLE_EVENTS, SAMPLES, written_by_inspect

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


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test starts with an empty cache and as a new process would: no log converted yet."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(inspect_cache.CACHE_ENV, str(cache))
    monkeypatch.setattr(inspect_cache, "_SEEN", {})
    return cache


def _log(sets: Path, side: str, task: str = "arithmetic") -> Path:
    (found,) = (sets / side).glob(f"*_{task}_*.eval")
    return found


def _invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(cli, [str(arg) for arg in args], catch_exceptions=False)


def _ingested(tmp: Path, *paths: Path) -> Path:
    events = tmp / f"ingested-{len(list(tmp.glob('ingested-*')))}"
    result = _invoke("ingest", *paths, "--out", events, "--quiet")
    assert result.exit_code == 0, result.output
    return events


def _outputs(out: Path) -> dict[str, bytes]:
    """The five output files (§4): `run-inputs.json` records the paths as given, so differs."""
    return {name: (out / name).read_bytes() for name in OUTPUT_FILES}


def _conversions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each log `ingest_paths` converts from now on, by the cache's hand."""
    from evalbatch.inputs import ingest

    seen: list[str] = []
    convert = ingest.ingest_paths

    def counted(paths: Any, *args: Any, **kwargs: Any) -> Any:
        seen.extend(map(str, paths))
        return convert(paths, *args, **kwargs)

    monkeypatch.setattr(ingest, "ingest_paths", counted)
    return seen


# --- E-143 the index files of an eval set ------------------------------------------------------


@pytest.mark.slow
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


def test_e143_e144_run_grades_an_eval_set_directory_with_no_file_problem(
    tmp_path: Path, sets: Path
) -> None:
    """`run` on the eval set's directory grades its two logs and reports nothing of the index
    files; a glob that names only them finds no events."""
    result = _invoke("run", sets / "base", "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    problems = pl.read_parquet(tmp_path / "out" / "problems.parquet")
    assert problems.filter(pl.col("run_id").is_null()).height == 0
    assert pl.read_parquet(tmp_path / "out" / "runs.parquet").height == 2
    only_index = _invoke("run", str(sets / "base" / "*.json"), "--out", tmp_path / "none")
    assert only_index.exit_code == 2
    assert "no Parquet file or Inspect log found" in only_index.stderr


# --- E-144 Inspect logs wherever a log goes ----------------------------------------------------


@pytest.mark.slow
def test_e144_run_on_logs_writes_what_ingest_then_run_writes(tmp_path: Path, sets: Path) -> None:
    """A log named directly, an eval set's directory and Parquet, mixed: the outputs are those
    of `run` on the same Parquet and the directory `ingest` made of the logs, byte for byte."""
    base, cand = _log(sets, "base"), sets / "cand"
    direct = _invoke("run", SAMPLE_EVENTS, base, cand, "--out", tmp_path / "direct", "--quiet")
    assert direct.exit_code == 0, direct.output
    events = _ingested(tmp_path, base, cand)
    via_ingest = _invoke("run", SAMPLE_EVENTS, events, "--out", tmp_path / "ingested", "--quiet")
    assert via_ingest.exit_code == 0
    assert _outputs(tmp_path / "direct") == _outputs(tmp_path / "ingested")
    runs = pl.read_parquet(tmp_path / "direct" / "runs.parquet")
    assert runs.filter(pl.col("suite_id").str.starts_with("inspect.")).height == 3


@pytest.mark.slow
def test_e144_regress_on_two_logs_gives_the_ingested_verdict(tmp_path: Path, sets: Path) -> None:
    """`regress base.eval cand.eval` is `regress` on the two ingested directories: the same
    `--json` document, and the verdict the candidate earned (it answers every sample right)."""
    base, cand = _log(sets, "base"), _log(sets, "cand")
    direct = _invoke("regress", base, cand, "--json")
    ingested = _invoke("regress", _ingested(tmp_path, base), _ingested(tmp_path, cand), "--json")
    assert direct.exit_code == ingested.exit_code == 0, direct.output
    assert json.loads(direct.stdout) == json.loads(ingested.stdout)
    (comparison,) = json.loads(direct.stdout)["comparisons"]
    assert comparison["regression"]["verdict"] == "improved"


def test_e144_a_second_command_on_the_same_log_converts_nothing(
    tmp_path: Path, sets: Path, monkeypatch: pytest.MonkeyPatch, _fresh_cache: Path
) -> None:
    """The first command converts the log into the cache; the next one, a new process, reads
    the entry: `ingest_paths` is not called and the entry's files are the ones written."""
    log = _log(sets, "base")
    converted = _conversions(monkeypatch)
    assert _invoke("run", log, "--out", tmp_path / "first", "--quiet").exit_code == 0
    assert converted == [str(log)]
    (entry,) = (_fresh_cache / inspect_cache.ENTRIES).iterdir()
    files = {path: path.stat() for path in entry.rglob("*.parquet")}
    monkeypatch.setattr(inspect_cache, "_SEEN", {})  # as a new process starts
    copy = tmp_path / "renamed.eval"
    shutil.copy(log, copy)  # the same content under another name: the same entry
    assert _invoke("run", copy, "--out", tmp_path / "second", "--quiet").exit_code == 0
    assert _invoke("regress", log, _log(sets, "cand")).exit_code == 0
    assert converted == [str(log), str(_log(sets, "cand"))]
    assert {path: path.stat() for path in entry.rglob("*.parquet")} == files
    assert _outputs(tmp_path / "first") == _outputs(tmp_path / "second")


def test_e144_an_entry_is_named_by_content_options_and_mapping(
    sets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What decides the Parquet decides the entry: the log's bytes (not its name), the scorer
    and pass score, the caps and the mapping's source; nothing else."""
    log = _log(sets, "base")
    copy = tmp_path / "copy.eval"
    shutil.copy(log, copy)
    key = inspect_cache._entry_key(str(log), InspectOptions(), inspect_cache.DEFAULT_LIMITS)
    assert key == inspect_cache._entry_key(
        str(copy), InspectOptions(), inspect_cache.DEFAULT_LIMITS
    )
    limits = inspect_cache.DEFAULT_LIMITS
    others = {
        inspect_cache._entry_key(str(log), InspectOptions(pass_score=0.5), limits),
        inspect_cache._entry_key(str(log), InspectOptions(scorer="match"), limits),
        inspect_cache._entry_key(str(log), InspectOptions(), replace(limits, max_ratio=7)),
        inspect_cache._entry_key(str(_log(sets, "cand")), InspectOptions(), limits),
    }
    assert key not in others and len(others) == 4
    monkeypatch.setattr(inspect_cache, "mapping_version", lambda: "another mapping")
    assert inspect_cache._entry_key(str(log), InspectOptions(), limits) not in others | {key}


def test_e144_an_entry_is_in_place_whole_or_not_at_all(
    sets: Path, monkeypatch: pytest.MonkeyPatch, _fresh_cache: Path
) -> None:
    """While a log is converted its entry is not there under its name (a private directory is
    renamed into place once the conversion is written): no command reads half of one. After,
    nothing of the making is left."""
    from evalbatch.inputs import ingest

    log = str(_log(sets, "base"))
    key = inspect_cache._entry_key(log, InspectOptions(), inspect_cache.DEFAULT_LIMITS)
    assert key is not None
    entries = _fresh_cache / inspect_cache.ENTRIES
    convert = ingest.ingest_paths
    during: list[list[str]] = []

    def watched(paths: Any, out: Any, **kwargs: Any) -> Any:
        report = convert(paths, out, **kwargs)
        during.append(sorted(path.name for path in entries.iterdir()))
        return report

    monkeypatch.setattr(ingest, "ingest_paths", watched)
    converted = inspect_cache.convert(log)
    assert len(during) == 1 and key not in during[0]
    assert [name.startswith(".converting-") for name in during[0]] == [True]
    assert [path.name for path in entries.iterdir()] == [key]
    assert all(Path(name).is_relative_to(entries / key) for name in converted.files)


def test_e144_a_log_that_cannot_be_read_is_named_and_the_rest_is_graded(
    tmp_path: Path, sets: Path
) -> None:
    """A log cut short beside a good one: `run` grades the good one and names the cut file in a
    problem (exit 3), no traceback; `regress` with it on a side compares nothing (fail closed,
    E-65) and names it. No message shows a sample's content."""
    good = _log(sets, "base")
    cut = tmp_path / "logs" / "cut.eval"
    cut.parent.mkdir()
    cut.write_bytes(_log(sets, "cand").read_bytes()[:20_000])
    result = _invoke("run", cut.parent, good, "--out", tmp_path / "out")
    assert result.exit_code == 3, result.output
    problems = pl.read_parquet(tmp_path / "out" / "problems.parquet")
    (unread,) = problems.filter(pl.col("run_id").is_null()).to_dicts()
    assert unread["code"] == "input-unreadable" and str(cut) in unread["message"]
    assert pl.read_parquet(tmp_path / "out" / "runs.parquet")["graded"].to_list() == [True]
    gate = _invoke("regress", cut, good)
    assert gate.exit_code == 2 and str(cut) in gate.stderr
    for text in (result.output, gate.output, *problems["message"].to_list()):
        assert "Traceback" not in text
        assert not any(secret in text for secret in SAMPLE_TEXT), text


def test_e144_without_inspects_reader_the_message_says_what_to_install(
    tmp_path: Path, sets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the `inspect` extra a log is not converted (nothing is cached) and the command
    says which extra reads it; the Parquet given beside it is graded."""
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    log = _log(sets, "base")
    alone = _invoke("regress", log, _log(sets, "cand"))
    assert alone.exit_code == 2
    assert "install evalbatch[inspect]" in alone.stderr and str(log) in alone.stderr
    mixed = _invoke("run", SAMPLE_EVENTS, log, "--out", tmp_path / "out")
    assert mixed.exit_code == 3
    assert "install evalbatch[inspect]" in mixed.output
    assert not any((tmp_path / "cache").rglob("*.parquet"))  # nothing cached


def test_e144_the_cache_lives_where_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`$EVALBATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/evalbatch` (absolute only, as XDG says),
    else `~/.cache/evalbatch`."""
    monkeypatch.setenv(inspect_cache.CACHE_ENV, str(tmp_path / "mine"))
    assert inspect_cache.cache_root() == tmp_path / "mine"
    monkeypatch.delenv(inspect_cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert inspect_cache.cache_root() == tmp_path / "xdg" / "evalbatch"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert inspect_cache.cache_root() == tmp_path / "home" / ".cache" / "evalbatch"


@pytest.mark.slow  # explain, verify, sql, suite infer and connect, each grading the logs
def test_e144_explain_verify_sql_infer_and_connect_take_logs_and_eval_sets(
    tmp_path: Path, sets: Path
) -> None:
    """Every other command that reads event logs reads an eval set's directory and a log
    beside Parquet as it reads the directory `ingest` made of them."""
    import evalbatch

    base = sets / "base"
    log = _log(sets, "base")
    events = _ingested(tmp_path, base)
    runs = pl.read_parquet(sorted(events.rglob("*.parquet")))["runId"].unique().sort().to_list()
    for args in (
        ("explain", "--run-id", runs[0], "--json"),
        ("verify", "--json"),
        ("sql", "-e", "SELECT run_id, task_id, score FROM tasks ORDER BY ALL", "--format", "csv"),
    ):
        command, *rest = args
        direct = _invoke(command, base, *rest)
        ingested = _invoke(command, events, *rest)
        assert direct.exit_code == ingested.exit_code == 0, (args, direct.output)
        assert direct.stdout.replace(str(base), "IN") == ingested.stdout.replace(
            str(events), "IN"
        ), args
    proposed = []
    for source, name in ((base, "direct.json"), (events, "ingested.json")):
        infer = ("suite", "infer", source, "--suite-id", "inspect.evals.arithmetic")
        assert _invoke(*infer, "-o", tmp_path / name, "--quiet").exit_code == 0
        proposed.append((tmp_path / name).read_bytes())
    assert proposed[0] == proposed[1]
    query = "SELECT run_id, count(*) AS n FROM event_log GROUP BY ALL ORDER BY run_id"
    with evalbatch.connect([SAMPLE_EVENTS, log]) as con:
        direct_rows = con.sql(query).fetchall()
    with evalbatch.connect([SAMPLE_EVENTS, _ingested(tmp_path, log)]) as con:
        assert con.sql(query).fetchall() == direct_rows
    assert log.name.split("_")[0] and len(direct_rows) > 1


@pytest.mark.slow  # two new interpreters, each importing Inspect
def test_e144_two_commands_at_once_share_one_whole_entry(tmp_path: Path, sets: Path) -> None:
    """Two processes converting the same log at once: both read whole Parquet files, of one
    entry (the second to finish uses the first one's), and nothing else is left in the cache."""
    script = (
        "import sys, pyarrow.parquet as pq\n"
        "from evalbatch.inputs import inspect_cache\n"
        "entry = inspect_cache.convert(sys.argv[1])\n"
        "print(sum(pq.read_table(f).num_rows for f in entry.files), *entry.files)\n"
    )
    cache = tmp_path / "shared"
    env = {**os.environ, "PYTHONPATH": str(ROOT), inspect_cache.CACHE_ENV: str(cache)}
    log = str(_log(sets, "cand"))
    started = [
        subprocess.Popen(
            [sys.executable, "-c", script, log], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    printed = [process.communicate(timeout=300)[0].split() for process in started]
    assert [process.returncode for process in started] == [0, 0]
    assert printed[0][0] == printed[1][0] != "0"
    entries = sorted(path.name for path in (cache / inspect_cache.ENTRIES).iterdir())
    assert len(entries) == 1 and not entries[0].startswith(".")
    assert all(
        Path(name).is_relative_to(cache / inspect_cache.ENTRIES / entries[0])
        for found in printed
        for name in found[1:]
    )


@pytest.mark.slow
def test_e144_the_readme_pair_is_two_runs_of_one_task() -> None:
    """The README's `regress base.eval cand.eval`: two Inspect logs of one task, graded as the
    README says (the candidate answers every sample right)."""
    pair = SAMPLES / "inspect-regress"
    result = _invoke("regress", pair / "base.eval", pair / "cand.eval", "--json")
    assert result.exit_code == 0, result.output
    (comparison,) = json.loads(result.stdout)["comparisons"]
    assert comparison["suiteId"] == "inspect.evals.arithmetic"
    assert comparison["regression"]["verdict"] == "improved"
