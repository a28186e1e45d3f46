"""The installed evalbatch version, as provenance records and exports carry it."""

from __future__ import annotations

from functools import cache
from importlib import metadata


@cache
def package_version() -> str:
    """The installed evalbatch version ("unknown" for a source tree that is not installed).
    Read once: each lookup parses the package's metadata file."""
    try:
        return metadata.version("evalbatch")
    except metadata.PackageNotFoundError:
        return "unknown"
