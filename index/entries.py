"""Given a Markdown file's relative path and text, return its memory entries.

(Skeleton: the Entry type is fixed here so every package can code against it; the parser
is being written.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

L0Source = Literal["heading", "firstSentence", "truncate"]


@dataclass(frozen=True)
class Entry:
    """One memory entry: a heading section, or a top-level block outside any heading."""

    id: str  # "mem_" + 32 lowercase hex; an explicit <!-- mem_… --> anchor wins
    path: str  # POSIX path relative to the memory root, e.g. "proj/logs/2026-11-29.md"
    workspace: str | None  # first path component when the file is inside a folder; None = root level
    line_start: int  # 1-based, inclusive (the heading line for a section)
    line_end: int  # 1-based, inclusive
    heading_path: tuple[str, ...]  # headings from the top down to this entry's own; () for a block
    text: str  # full text of the entry (heading line + body), exactly as in the file
    l0: str  # the L0 abstract, ~100 chars, secrets already redacted
    l0_source: L0Source
    text_hash: str  # sha256 hex of `text`
    l0_hash: str  # sha256 hex of `l0`
    slot: str | None = None  # explicit conflict key from entry metadata (<!-- slot: … -->)
