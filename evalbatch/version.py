"""The installed evalbatch version, as provenance records and exports carry it."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The installed evalbatch version ("unknown" for a source tree that is not installed)."""
    try:
        return metadata.version("evalbatch")
    except metadata.PackageNotFoundError:
        return "unknown"
