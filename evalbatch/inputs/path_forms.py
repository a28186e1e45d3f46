"""The path forms the library takes: one path (a `str` or a `Path`) or a list of them.

Every function that reads or writes files takes `Paths` and turns it into a list with `as_paths`
(E-91). It lives with the inputs, below every stage, so a stage's own function (such as
`ingest_paths`) takes any path form itself and the facade only names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: one path or several: every function of the library that reads or writes files takes this
Paths = str | Path | Sequence[str | Path]


def as_paths(paths: Paths) -> list[str]:
    """`paths` as a list: a single string or `Path` is one path, never iterated letter by letter
    (E-91)."""
    if isinstance(paths, str | Path):
        return [str(paths)]
    return [str(path) for path in paths]
