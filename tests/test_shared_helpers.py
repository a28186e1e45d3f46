"""One helper per concern (E-132): the file mode, the atomic writer, the message of a failed
write and the strict-JSON constant hook are each defined once, and each behaves as its callers
rely on."""

from __future__ import annotations

import ast
import json
import os
import stat
from pathlib import Path

import pytest

from evalbatch import files, jsonvalue
from evalbatch.errors import OutputError, write_failed

ROOT = Path(__file__).resolve().parent.parent

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
    """A newcomer finds one file mode, one atomic writer, one write-failure message and one
    NaN/Infinity hook, not a copy per module."""
    defined = _top_level_functions()
    repeated = {name: defined[name] for name in ONE_DEFINITION if len(defined.get(name, [])) > 1}
    assert repeated == {}
    assert all(name in defined for name in ("file_mode", "write_atomic", "write_aside"))
    assert all(name in defined for name in ("write_failed", "reject_constant"))


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
