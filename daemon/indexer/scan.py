"""Given a memory root, return its Markdown files (a cheap stat walk) and the ones it must skip.

- `scan_root` walks the root: relative POSIX paths of `*.md` files with their size and mtime,
  never entering `<state_dir>` (top level) or any folder named in `index.ignore_dirs`. Symlinked
  folders are followed, but a link back to one of its own ancestors (a loop) or to a folder
  already walked is reported and not entered: the walk tracks folders by (device, inode).
  A file or folder whose real path lies outside the root (`ln -s /etc/passwd notes.md`,
  `ln -s ~/.aws aws`) is reported as skipped unless `index.follow_links_outside_root`.
- `scan_paths` does the same for a few paths a watcher reported (files or folders).
- `read_markdown` reads one file: it returns its text and hashes, or the `Problem` that makes it
  unindexable (binary, not UTF-8, over `max_file_bytes`, unreadable, not a regular file, a broken
  link or a link loop). A FIFO named `x.md` is opened non-blocking, so it can never hang a sync.

Problems carry the path and a reason a person can act on; they are skipped and the rest indexes.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from carryd.daemon.config import IndexSettings
from carryd.index.sync import FileStat

ProblemCode = Literal[
    "binary",
    "not_utf8",
    "too_large",
    "unreadable",
    "not_regular",
    "broken_symlink",
    "symlink_loop",
    "duplicate_folder",
    "duplicate_id",
    "outside_root",
    "odd_name",
]

MARKDOWN_SUFFIX = ".md"


@dataclass(frozen=True)
class Problem:
    """A path carryd skipped, and why."""

    path: str
    reason: str
    code: ProblemCode = "unreadable"

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class ScanResult:
    files: dict[str, FileStat] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class FileContent:
    """One Markdown file, read: its text (BOM removed) and the stat and hash of its bytes."""

    path: str
    text: str
    size: int
    mtime_ns: int
    sha256: str


def shown(relative: str) -> str:
    """Given a relative path as the file system gave it, return it printable on one line:
    bytes that are not UTF-8 as `\\xff`, a newline or other control character escaped."""
    raw = relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(
        character if character.isprintable() or character == " " else repr(character)[1:-1]
        for character in raw
    )


def odd_name(relative: str) -> Problem | None:
    """Given a relative path, return the problem with its name, or None: a name that is not
    UTF-8 (the index, the carries and every answer are UTF-8 text) or that holds a newline or
    another control character (it would break the one-line headers of `expand` and the
    manifests) is skipped and named, never indexed."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return Problem(shown(relative), "the file name is not UTF-8; rename it", "odd_name")
    if any(not (character.isprintable() or character == " ") for character in relative):
        return Problem(
            shown(relative),
            "the file name holds a newline or control character; rename it",
            "odd_name",
        )
    return None


def is_markdown(name: str) -> bool:
    return name.lower().endswith(MARKDOWN_SUFFIX)


def scan_root(root: Path, settings: IndexSettings) -> ScanResult:
    """Given the memory root and the index settings, return every Markdown file and problem."""
    walker = _Walker(Path(root), settings)
    walker.walk_folder(walker.root, "", ())
    return walker.result()


def scan_paths(root: Path, paths: Iterable[str], settings: IndexSettings) -> ScanResult:
    """Given relative paths (files or folders) a watcher reported, return what is on disk there.

    Paths outside the root, inside `<state_dir>` or an ignored folder, and non-Markdown files
    are left out; a folder is walked.
    """
    walker = _Walker(Path(root), settings)
    for relative in sorted(set(paths)):
        if not in_scope(relative, settings):
            continue
        problem = odd_name(relative)
        if problem is not None:
            if is_markdown(relative) or os.path.isdir(walker.root / relative):
                walker.problems.append(problem)
            continue
        full = walker.root / relative
        if not walker.inside(full, relative):
            continue
        try:
            info = os.stat(full)
        except OSError as error:
            if is_markdown(relative):
                walker.stat_problem(relative, error, follow_failed=os.path.islink(full))
            continue
        if stat.S_ISDIR(info.st_mode):
            walker.walk_folder(full, relative, walker.ancestors_of(relative))
        elif is_markdown(relative):
            walker.add_file(relative, info)
    return walker.result()


def in_scope(relative: str, settings: IndexSettings) -> bool:
    """Given a relative POSIX path, return whether it lies where carryd indexes."""
    parts = [part for part in relative.split("/") if part]
    if not parts or any(part in (".", "..") for part in parts):
        return False
    if parts[0] == settings.state_dir:
        return False
    return not any(part in settings.ignore_dirs for part in parts[:-1]) and (
        parts[-1] not in settings.ignore_dirs
    )


def read_markdown(
    root: Path, relative: str, max_file_bytes: int, *, follow_links_outside_root: bool = False
) -> FileContent | Problem | None:
    """Given the root, a relative path and the size limit, return the file's content, the
    problem that makes it unindexable, or None when it no longer exists."""
    full = Path(root) / relative
    if not follow_links_outside_root:
        # Checked again here, not only by the scan: a link may be swapped in between.
        outside = outside_root(Path(root), full, relative)
        if outside is not None:
            return outside
    try:
        # O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
        descriptor = os.open(full, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        if os.path.islink(full):
            return Problem(relative, "broken symbolic link", "broken_symlink")
        return None
    except OSError as error:
        return _open_problem(relative, error)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return Problem(relative, "not a regular file (FIFO, socket or device)", "not_regular")
        if info.st_size > max_file_bytes:
            return _too_large(relative, info.st_size, max_file_bytes)
        chunks: list[bytes] = []
        remaining = max_file_bytes + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as error:
        return _open_problem(relative, error)
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if len(data) > max_file_bytes:
        return _too_large(relative, len(data), max_file_bytes)
    if b"\x00" in data:
        return Problem(relative, "binary file (contains NUL bytes), not Markdown", "binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Problem(
            relative,
            f"not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}); "
            "save it as UTF-8",
            "not_utf8",
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return FileContent(
        path=relative,
        text=text,
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        sha256=hashlib.sha256(data).hexdigest(),
    )


def outside_root(root: Path, full: Path, relative: str) -> Problem | None:
    """Given the root, a path under it and that path relative to the root, return the problem
    when symbolic links lead the path out of the root (None: its real path is inside)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(full)
    if real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep):
        return None
    return Problem(
        relative,
        f"symbolic link to {real}, outside the memory root; not indexed "
        "(set index.follow_links_outside_root = true to index it)",
        "outside_root",
    )


def _too_large(relative: str, size: int, limit: int) -> Problem:
    return Problem(
        relative,
        f"too large ({size:,} bytes > index.max_file_bytes {limit:,}); split it or raise the limit",
        "too_large",
    )


def _open_problem(relative: str, error: OSError) -> Problem:
    if error.errno == errno.ELOOP:
        return Problem(relative, "symbolic link loop", "symlink_loop")
    if error.errno in (errno.EACCES, errno.EPERM):
        return Problem(relative, "unreadable (permission denied)", "unreadable")
    return Problem(relative, f"unreadable ({error.strerror})", "unreadable")


class _Walker:
    """One walk's state: the files and problems found, and the folders already entered."""

    def __init__(self, root: Path, settings: IndexSettings) -> None:
        self.root = root.resolve()
        self.settings = settings
        self.files: dict[str, FileStat] = {}
        self.problems: list[Problem] = []
        self.entered: dict[tuple[int, int], str] = {}

    def result(self) -> ScanResult:
        return ScanResult(files=dict(sorted(self.files.items())), problems=tuple(self.problems))

    def inside(self, full: Path, relative: str) -> bool:
        """Given a path and its relative form, return whether it may be indexed (its real
        path is inside the root, or the settings allow outside); report it when not."""
        if self.settings.follow_links_outside_root:
            return True
        problem = outside_root(self.root, full, relative)
        if problem is not None:
            self.problems.append(problem)
        return problem is None

    def ancestors_of(self, relative: str) -> tuple[tuple[int, int], ...]:
        chain: list[tuple[int, int]] = []
        folder = self.root
        for part in [""] + relative.split("/")[:-1]:
            folder = folder / part if part else folder
            try:
                info = os.stat(folder)
            except OSError:
                break
            chain.append((info.st_dev, info.st_ino))
        return tuple(chain)

    def add_file(self, relative: str, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            self.problems.append(
                Problem(relative, "not a regular file (FIFO, socket or device)", "not_regular")
            )
        elif info.st_size > self.settings.max_file_bytes:
            self.problems.append(_too_large(relative, info.st_size, self.settings.max_file_bytes))
        else:
            self.files[relative] = FileStat(size=info.st_size, mtime_ns=info.st_mtime_ns)

    def stat_problem(self, relative: str, error: OSError, *, follow_failed: bool) -> None:
        if error.errno == errno.ELOOP:
            self.problems.append(Problem(relative, "symbolic link loop", "symlink_loop"))
        elif follow_failed and isinstance(error, FileNotFoundError):
            self.problems.append(
                Problem(relative, "broken symbolic link (its target is missing)", "broken_symlink")
            )
        elif not isinstance(error, FileNotFoundError):
            self.problems.append(_open_problem(relative, error))

    def walk_folder(
        self, folder: Path, relative: str, ancestors: tuple[tuple[int, int], ...]
    ) -> None:
        try:
            info = os.stat(folder)
        except OSError as error:
            self.stat_problem(relative or ".", error, follow_failed=True)
            return
        key = (info.st_dev, info.st_ino)
        if key in ancestors:
            self.problems.append(
                Problem(
                    relative,
                    "symbolic link loop (links to a folder that contains it); not followed",
                    "symlink_loop",
                )
            )
            return
        if key in self.entered:
            self.problems.append(
                Problem(
                    relative,
                    f"links to a folder already indexed as '{self.entered[key] or '.'}'; "
                    "not indexed twice",
                    "duplicate_folder",
                )
            )
            return
        self.entered[key] = relative
        chain = ancestors + (key,)
        try:
            with os.scandir(folder) as listing:
                children = sorted(listing, key=lambda child: child.name)
        except OSError as error:
            self.problems.append(_open_problem(relative or ".", error))
            return
        for child in children:
            child_relative = f"{relative}/{child.name}" if relative else child.name
            if not relative and child.name == self.settings.state_dir:
                continue
            problem = odd_name(child_relative)
            if problem is not None:
                if is_markdown(child.name) or child.is_dir():
                    self.problems.append(problem)
                continue
            if child.is_symlink():
                if child.name in self.settings.ignore_dirs:
                    continue
                if not (os.path.isdir(child.path) or is_markdown(child.name)):
                    continue
                if not self.inside(Path(child.path), child_relative):
                    continue
            try:
                is_folder = child.is_dir(follow_symlinks=True)
            except OSError:
                is_folder = False
            if is_folder:
                if child.name not in self.settings.ignore_dirs:
                    self.walk_folder(Path(child.path), child_relative, chain)
                continue
            if not is_markdown(child.name):
                continue
            try:
                child_info = os.stat(child.path)
            except OSError as error:
                self.stat_problem(child_relative, error, follow_failed=child.is_symlink())
                continue
            self.add_file(child_relative, child_info)
