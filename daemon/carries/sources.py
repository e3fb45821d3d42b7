"""The files a carry is planned from: read each one and record its hash, size and mtime.

A carry's manifest names every source it was built from (`SourceFile`), so a reader can tell
which ledger, plan and sidecar bytes it reflects. These readers follow the carry's rules for a
file: absent is None, a link out of the root is refused unless `follow`, and the sidecar's
problems are warnings, never errors.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from carryd.daemon.indexer.scan import outside_root


@dataclass(frozen=True)
class SourceFile:
    """A file a carry is planned from: root-relative path, sha256, size and mtime."""

    path: str
    sha256: str
    size: int
    mtime: float


def source_file(relative: str, data: bytes, stat: os.stat_result) -> SourceFile:
    return SourceFile(relative, hashlib.sha256(data).hexdigest(), len(data), stat.st_mtime)


def read_source(
    root: Path, relative: str, sources: list[SourceFile], *, follow: bool = False
) -> str | None:
    """Given a source's path, return its text (None when absent, or a link out of the root
    unless `follow`); unreadable or not UTF-8 raises."""
    path = root / relative
    if not path.exists() and not path.is_symlink():
        return None
    if not follow and outside_root(root, path, relative) is not None:
        return None
    data = path.read_bytes()
    sources.append(source_file(relative, data, path.stat()))
    return data.decode("utf-8-sig")


def read_sidecar(
    root: Path, relative: str, sources: list[SourceFile], warnings: list[str], *, follow: bool
) -> str | None:
    """Given the sidecar's path, return its text; any problem is a warning, never an error."""
    path = root / relative
    if not path.exists() and not path.is_symlink():
        return None
    if not follow and (outside := outside_root(root, path, relative)) is not None:
        warnings.append(f"sidecar: {outside.reason}")
        return None
    try:
        data = path.read_bytes()
        sources.append(source_file(relative, data, path.stat()))
        return data.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        warnings.append(f"sidecar: {relative}: ignored: {error}")
        return None


def read_source_lenient(
    root: Path, relative: str, sources: list[SourceFile], *, follow: bool = False
) -> str | None:
    """Given a source's path, return its text with bad bytes replaced (None if unreadable or
    a link out of the root unless `follow`)."""
    path = root / relative
    if not follow and outside_root(root, path, relative) is not None:
        return None
    try:
        data = path.read_bytes()
        sources.append(source_file(relative, data, path.stat()))
    except OSError:
        return None
    return data.decode("utf-8-sig", errors="replace")
