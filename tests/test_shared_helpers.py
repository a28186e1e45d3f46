"""One helper per concern (E-132, E-133): the file mode, the atomic writer, the message of a
failed write, the strict-JSON constant hook and the `--json` writer are each defined once, and
each behaves as its callers rely on. And one name per meaning (E-135): no two modules, nor two
public top-level functions, of evalbatch/ share a name."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalbatch import files, jsonvalue
from evalbatch.cli import cli
from evalbatch.commands.printing import echo_json
from evalbatch.errors import OutputError, write_failed

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"

#: helpers that were written several times over and now live in one place
ONE_DEFINITION = (
    "_file_mode",
    "file_mode",
    "write_atomic",
    "write_aside",
    "_write_error",
    "write_failed",
    "_reject_constant",
    "reject_constant",
    "echo_json",
)

#: the one copy left apart on purpose: the reference grader shares no code with the engine
INDEPENDENT = {"evalbatch/reference.py"}


def _top_level_functions() -> dict[str, list[str]]:
    """Each top-level function name of evalbatch/ (outside INDEPENDENT) -> the files defining it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "evalbatch").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where in INDEPENDENT:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.setdefault(node.name, []).append(where)
    return found


def test_each_shared_helper_is_defined_once() -> None:
    """A newcomer finds one file mode, one atomic writer, one write-failure message, one
    NaN/Infinity hook and one `--json` writer, not a copy per module."""
    defined = _top_level_functions()
    repeated = {name: defined[name] for name in ONE_DEFINITION if len(defined.get(name, [])) > 1}
    assert repeated == {}
    assert all(name in defined for name in ("file_mode", "write_atomic", "write_aside"))
    assert all(name in defined for name in ("write_failed", "reject_constant", "echo_json"))


#: names that may stay on several modules or public functions, each with why (E-135): none today
SHARED_NAMES_ALLOWED: dict[str, str] = {}


def test_no_two_modules_share_a_name() -> None:
    """E-135: a module's basename names one thing across evalbatch/ (`report.py` was both the
    HTML page and verify's findings). `commands/` mirrors the command names (`commands/run.py`
    is `evalbatch run`), so a module named after a command is exempt there; its other modules
    (`click_options`, `printing`, ...) are held to the rule like any other."""
    command_names = set(cli.commands)
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "evalbatch").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        if path.parent.name == "commands" and path.stem in command_names:
            continue
        found.setdefault(path.stem, []).append(path.relative_to(ROOT).as_posix())
    for package in sorted((ROOT / "evalbatch").glob("*/__init__.py")):
        found.setdefault(package.parent.name, []).append(f"evalbatch/{package.parent.name}/")
    shared = {n: w for n, w in found.items() if len(w) > 1 and n not in SHARED_NAMES_ALLOWED}
    assert shared == {}


def test_no_two_public_functions_share_a_name() -> None:
    """E-135: a public top-level function's name means one thing across evalbatch/ (the
    reference grader, which copies on purpose, aside): `place_trials` was both D-5's placement
    and the end of the SQL stage, `connect` both `evalbatch.connect` and a bare connection."""
    defined = _top_level_functions()
    shared = {
        name: where
        for name, where in defined.items()
        if not name.startswith("_") and len(where) > 1 and name not in SHARED_NAMES_ALLOWED
    }
    assert shared == {}
    assert "place_trials" in defined and "connect" in defined  # the walk found the package


def test_no_local_copy_of_the_constant_hook() -> None:
    """No nested `parse_constant` hook either: every strict reader passes
    `jsonvalue.reject_constant` (the reference grader has its own, on purpose)."""
    hooks = []
    for path in sorted((ROOT / "evalbatch").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "parse_constant":
                hooks.append((where, ast.unparse(node.value)))
    assert hooks, "no strict JSON reader found"
    others = [(w, h) for w, h in hooks if w not in INDEPENDENT]
    assert {h for _, h in others} <= {"reject_constant", "jsonvalue.reject_constant"}, others


def test_the_file_mode_never_touches_the_umask(monkeypatch: pytest.MonkeyPatch) -> None:
    """E-132: the umask is read once, at import; the mode is 0666 less it, and asking for the
    mode (or writing a file) never sets the umask while other threads create files."""

    def refuse(_mask: int) -> int:
        raise AssertionError("os.umask called after import")

    umask = os.umask(0o022)
    os.umask(umask)
    monkeypatch.setattr(os, "umask", refuse)
    assert files.file_mode() == 0o666 & ~umask
    assert files.file_mode() & 0o111 == 0


def test_the_umask_is_read_without_setting_it_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /proc/self/status says the umask, it is read from there, never set."""
    if not Path("/proc/self/status").is_file():
        pytest.skip("no /proc here: the umask is read by one os.umask pair at import")

    def refuse(_mask: int) -> int:
        raise AssertionError("os.umask called")

    umask = os.umask(0o022)
    os.umask(umask)
    monkeypatch.setattr(os, "umask", refuse)
    assert files._read_umask() == umask


def test_write_atomic_writes_whole_files_with_the_file_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one atomic writer: the text in place, the ordinary mode (not mkstemp's 0600), no
    scratch file left; directories made on the way; umask never called."""
    monkeypatch.setattr(os, "umask", lambda _mask: pytest.fail("os.umask called"))
    target = tmp_path / "sub" / "page.html"
    assert files.write_atomic(target, iter(["é", "\n", "b"])) == target
    assert target.read_text(encoding="utf-8") == "é\nb"
    assert stat.S_IMODE(target.stat().st_mode) == files.file_mode()
    assert [p.name for p in target.parent.iterdir()] == ["page.html"]


def test_write_aside_failure_leaves_the_old_file_and_names_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed write is one `OutputError` line: the target, the OS's reason, the caller's
    consequence; the previous file unchanged and no scratch file (E-72)."""
    target = tmp_path / "out.csv"
    target.write_text("yesterday")

    def full(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full)
    with (
        pytest.raises(OutputError) as caught,
        files.write_aside(target, "nothing written") as scratch,
    ):
        scratch.write_text("today")
    assert str(caught.value) == (
        f"{target}: could not be written: No space left on device [ENOSPC]; nothing written"
    )
    assert "\n" not in str(caught.value)
    assert target.read_text() == "yesterday"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_write_aside_removes_the_scratch_file_on_any_error(tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    with pytest.raises(KeyError), files.write_aside(target, "nothing written") as scratch:
        scratch.write_text("half")
        raise KeyError("stop")
    assert list(tmp_path.iterdir()) == []


def test_write_aside_never_replaces_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with (
        pytest.raises(OutputError, match="not a regular file"),
        files.write_aside(fifo, "nothing written") as scratch,
    ):
        scratch.write_text("x")
    assert fifo.is_fifo()
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_write_failed_names_the_file_inside_a_directory_when_asked(tmp_path: Path) -> None:
    exc = OSError(28, "No space left on device", str(tmp_path / "out" / "tasks.parquet"))
    left = "the previous outputs are unchanged"
    plain = write_failed(tmp_path / "out", exc, left)
    named = write_failed(tmp_path / "out", exc, left, name_file=True)
    assert str(plain).startswith(f"{tmp_path / 'out'}: could not be written: ")
    assert str(named).startswith(f"{tmp_path / 'out'} ({tmp_path / 'out' / 'tasks.parquet'}): ")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_reject_constant_refuses_what_json_does_not_have(constant: str) -> None:
    """D-7: NaN and the infinities are not JSON; the hook's error is a ValueError (every
    reader catches that) and says so."""
    with pytest.raises(jsonvalue.NotJson, match=f"{constant} is not JSON"):
        json.loads(f"[{constant}]", parse_constant=jsonvalue.reject_constant)
    assert issubclass(jsonvalue.NotJson, ValueError)


def test_echo_json_is_utf8_and_always_decodes(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """E-133: non-ASCII as itself in UTF-8, indented by 2, keys in order; a lone surrogate (a
    path's undecodable byte) as its JSON escape."""
    echo_json({"b": "é", "a": ["\udcff", 1]})
    raw = capsysbinary.readouterr().out
    assert raw == '{\n  "b": "é",\n  "a": [\n    "\\udcff",\n    1\n  ]\n}\n'.encode()
    assert json.loads(raw) == {"b": "é", "a": ["\udcff", 1]}


def test_every_json_option_prints_through_echo_json() -> None:
    """Each command with `--json` prints it with `printing.echo_json`, and no command module
    dumps JSON itself (bar `sql`'s `--format json` cells)."""
    commands = ROOT / "evalbatch" / "commands"
    for path in sorted(commands.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if '"--json"' in text:
            assert "echo_json(" in text, path.name
        if path.name not in {"printing.py", "sql.py"}:
            assert "json.dumps" not in text, path.name


def _utf8_document(raw: bytes) -> object:
    """The document a `--json` printed, checked to be the one escaping: its bytes are exactly
    `echo_json`'s of what they decode to."""
    document = json.loads(raw)
    assert raw == (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return document


def test_every_command_json_decodes_with_the_one_escaping(tmp_path: Path) -> None:
    """E-133: `run`, `history`, `regress`, `verify`, `explain`, `validate` and `ingest --json`
    each print one JSON document, non-ASCII text (here the directory `données-é`) as itself."""
    here = tmp_path / "données-é"
    shutil.copytree(SAMPLES / "events", here / "events")
    shutil.copytree(SAMPLES / "regress", here / "regress")
    shutil.copytree(SAMPLES / "suites", here / "suites")
    events, suites = here / "events" / "trajectory.parquet", here / "suites"
    out = here / "out"
    runs = [
        ("run", events, "--suites", suites, "--out", out, "--json", "--threads", "1"),
        ("history", out, "--json"),
        (
            "regress",
            here / "regress" / "baseline.parquet",
            here / "regress" / "candidate.parquet",
            "--suites",
            suites,
            "--json",
            "--threads",
            "1",
        ),
        ("verify", events, "--suites", suites, "--json", "--threads", "1"),
        ("explain", events, "--suites", suites, "--run-id", "acme/run-trajectory-0001", "--json"),
        ("validate", suites, "--json"),
        ("ingest", SAMPLES / "inspect" / "arithmetic.eval", "--out", here / "ingested", "--json"),
    ]
    with_accent = set()
    for args in runs:
        if args[0] == "ingest" and importlib.util.find_spec("inspect_ai") is None:
            continue
        result = CliRunner().invoke(cli, [str(a) for a in args])
        assert result.exit_code in (0, 1, 3), (args[0], result.output)
        _utf8_document(result.stdout_bytes)
        if "données-é".encode() in result.stdout_bytes:
            with_accent.add(args[0])
    assert {"run", "history", "validate"} <= with_accent, with_accent
