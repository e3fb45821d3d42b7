"""Given a Markdown file's relative path and text, return its memory entries.

An entry is a heading section — the heading line(s) up to the next heading of any level — or,
for text outside any heading (before the first heading), one top-level block: a paragraph,
list, fence, table, quote, HTML block (a thematic break `***` is not one). markdown-it-py
(CommonMark) finds the blocks and their line maps, so a `# line` inside a fenced code block is
code, not a heading. Headings nested in a list or quote are part of their block, not section
boundaries. Blank lines between blocks
belong to no entry; ranges are 1-based, inclusive, trimmed of trailing blank lines and never
overlap. YAML front matter (`---` … `---` at the very top) is not an entry. CRLF and CR line
ends count as line ends; an entry's `text` joins its lines with "\\n" (a leading byte-order
mark is dropped).

Ids: an explicit `<!-- mem_<32 hex> -->` comment in the entry (outside code) wins; when two
entries of a file carry the same explicit id, the first keeps it. Otherwise the id is derived
from (path, heading path, ordinal among the file's entries with that heading path), or for a
top-level block from (path, "block", ordinal among top-level blocks), so editing an entry's
body keeps its id. Ids are unique within a file, and (the path being hashed) within a root —
except explicit anchors copied into two files, which only the caller, seeing every file, can
resolve. A comment holding only an anchor or a slot, standing alone before the first heading,
belongs to the block after it (or, at the end, to the block before it).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from carryd.index.l0 import L0Source, l0_from_title, plain_heading
from carryd.index.layout import ROOT_LEVEL_DIRS
from carryd.index.redact import redact
from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["ROOT_LEVEL_DIRS", "Entry", "L0Source", "parse_entries", "workspace_of"]

L0_MAX_CHARS = 100

# Only block structure and line maps are used; headings' inline Markdown is reduced to plain
# text by l0.plain_heading, so markdown-it's inline pass (a third of its time) is skipped.
_PARSER = MarkdownIt("commonmark").disable(["inline", "text_join"])
_ANCHOR = re.compile(r"<!--[ \t]*(mem_[0-9a-fA-F]{32})[ \t]*-->")
_SLOT = re.compile(r"<!--[ \t]*slot:[ \t]*(.*?)[ \t]*-->")
_METADATA_ONLY = re.compile(
    r"^\s*(?:<!--[ \t]*(?:mem_[0-9a-fA-F]{32}|slot:.*?)[ \t]*-->\s*)+$", re.DOTALL
)
_BOM = "\ufeff"
_FRONT_MATTER_OPEN = "---"
_FRONT_MATTER_CLOSE = ("---", "...")


@dataclass(frozen=True)
class Entry:
    """One memory entry: a heading section, or a top-level block outside any heading."""

    id: str  # "mem_" + 32 lowercase hex; an explicit <!-- mem_… --> anchor wins
    path: str  # POSIX path relative to the memory root, e.g. "proj/logs/2026-11-29.md"
    workspace: (
        str | None
    )  # first path component when the file is inside a folder; None = root level
    line_start: int  # 1-based, inclusive (the heading line for a section)
    line_end: int  # 1-based, inclusive
    heading_path: tuple[str, ...]  # headings from the top down to this entry's own; () for a block
    text: str  # full text of the entry (heading line + body), exactly as in the file
    l0: str  # the L0 abstract, ~100 chars, secrets already redacted
    l0_source: L0Source
    text_hash: str  # sha256 hex of `text`
    l0_hash: str  # sha256 hex of `l0`
    slot: str | None = None  # explicit conflict key from entry metadata (<!-- slot: … -->)


@dataclass(frozen=True)
class _Span:
    """An entry before ids: 0-based [start, end) lines, where its body starts, its heading."""

    start: int
    end: int
    body_start: int
    heading: str | None  # the heading's plain, redacted text; None for a top-level block
    heading_path: tuple[str, ...]


def workspace_of(path: str) -> str | None:
    """Given a root-relative path, return its workspace (first folder); None at root level."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if len(parts) < 2 or parts[0] in ROOT_LEVEL_DIRS:
        return None
    return parts[0]


def parse_entries(path: str, text: str) -> tuple[Entry, ...]:
    """Given a file's root-relative POSIX path and its text, return its entries in document
    order (never raises on any str)."""
    lines = _split_lines(text)
    if not lines:
        return ()
    if lines[0].startswith(_BOM):
        # Editors on Windows save one; markdown-it would read "\ufeff# Title" as a paragraph.
        lines = [lines[0][len(_BOM) :], *lines[1:]]
    front_matter_end = _front_matter_end(lines)
    parse_lines = [""] * front_matter_end + lines[front_matter_end:]
    tokens = _PARSER.parse("\n".join(parse_lines) + "\n")
    spans = _spans(tokens, lines)
    code_lines = _code_lines(tokens)
    texts = ["\n".join(lines[span.start : span.end]) for span in spans]
    ids = _ids(path, spans, [_explicit_id(lines, span, code_lines) for span in spans])
    workspace = workspace_of(path)
    entries: list[Entry] = []
    for span, entry_text, entry_id in zip(spans, texts, ids, strict=True):
        body = "\n".join(lines[span.body_start : span.end])
        l0, source = l0_from_title(span.heading, body, max_chars=L0_MAX_CHARS)
        entries.append(
            Entry(
                id=entry_id,
                path=path,
                workspace=workspace,
                line_start=span.start + 1,
                line_end=span.end,
                heading_path=span.heading_path,
                text=entry_text,
                l0=l0,
                l0_source=source,
                text_hash=_sha256(entry_text),
                l0_hash=_sha256(l0),
                slot=_slot(lines, span, code_lines),
            )
        )
    return tuple(entries)


def _split_lines(text: str) -> list[str]:
    """Given a file's text, return its lines as markdown-it counts them (\\r\\n, \\r, \\n)."""
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    if not normalized:
        return []
    lines = normalized.split("\n")
    if normalized.endswith("\n"):
        lines.pop()
    return lines


def _front_matter_end(lines: list[str]) -> int:
    """Given a file's lines, return how many of them the YAML front matter takes (0: none)."""
    if lines[0].rstrip() != _FRONT_MATTER_OPEN:
        return 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FRONT_MATTER_CLOSE:
            return index + 1
    return 0


def _is_blank(line: str) -> bool:
    """CommonMark's blank line: nothing but spaces and tabs (str.strip would also eat \x0c,
    \x85, \x1f…, which markdown-it reads as text)."""
    return not line.strip(" \t")


def _trim_end(lines: list[str], start: int, end: int) -> int:
    while end > start + 1 and _is_blank(lines[end - 1]):
        end -= 1
    return end


def _spans(tokens: list[Token], lines: list[str]) -> list[_Span]:
    """Given the tokens and lines of a file, return its entries' spans in document order."""
    blocks = [
        (index, token)
        for index, token in enumerate(tokens)
        if token.level == 0 and token.map is not None and token.nesting >= 0
    ]
    headings = [(index, token) for index, token in blocks if token.type == "heading_open"]
    first_heading = headings[0][1].map[0] if headings and headings[0][1].map else len(lines)
    spans = _preamble_spans([token for _, token in blocks], lines, first_heading)
    stack: list[tuple[int, str]] = []  # (level, heading text) of the enclosing headings
    for position, (index, token) in enumerate(headings):
        assert token.map is not None  # filtered above
        level = int(token.tag[1:]) if token.tag[1:].isdigit() else 1
        inline = tokens[index + 1].content if index + 1 < len(tokens) else ""
        while stack and stack[-1][0] >= level:
            stack.pop()
        title = redact(plain_heading(inline))
        stack.append((level, title))
        start, heading_end = token.map
        next_start = len(lines)
        if position + 1 < len(headings):
            next_map = headings[position + 1][1].map
            next_start = next_map[0] if next_map else len(lines)
        end = _trim_end(lines, start, max(next_start, heading_end))
        spans.append(
            _Span(start, end, min(heading_end, end), title, tuple(text for _, text in stack))
        )
    return spans


def _preamble_spans(blocks: list[Token], lines: list[str], first_heading: int) -> list[_Span]:
    """Given the top-level blocks and the first heading's line, return one span per block
    before it; a comment holding only an anchor or slot joins the block after (or before) it."""
    ranges: list[tuple[int, int]] = []
    pending_metadata: int | None = None
    # A thematic break (***) only separates; it says nothing an entry could hold.
    preamble = [
        block
        for block in blocks
        if block.map and block.map[0] < first_heading and block.type != "hr"
    ]
    for block in preamble:
        assert block.map is not None
        start, end = block.map[0], min(block.map[1], first_heading)
        if block.type == "html_block" and _METADATA_ONLY.match(block.content):
            if pending_metadata is None:
                pending_metadata = start
            continue
        if pending_metadata is not None:
            start, pending_metadata = pending_metadata, None
        ranges.append((start, end))
    if pending_metadata is not None:
        last_end = max(block.map[1] for block in preamble if block.map)
        if ranges:
            ranges[-1] = (ranges[-1][0], min(last_end, first_heading))
        else:
            ranges.append((pending_metadata, min(last_end, first_heading)))
    spans: list[_Span] = []
    for start, end in ranges:
        trimmed = _trim_end(lines, start, end)
        spans.append(_Span(start, trimmed, start, None, ()))
    return spans


def _code_lines(tokens: list[Token]) -> frozenset[int]:
    """Given the tokens, return the 0-based lines inside code (where comments are code)."""
    return frozenset(
        line
        for token in tokens
        if token.type in ("fence", "code_block") and token.map is not None
        for line in range(token.map[0], token.map[1])
    )


def _metadata_lines(lines: list[str], span: _Span, code_lines: frozenset[int]) -> list[str]:
    return [
        lines[index]
        for index in range(span.start, span.end)
        if index not in code_lines and "<!--" in lines[index]
    ]


def _explicit_id(lines: list[str], span: _Span, code_lines: frozenset[int]) -> str | None:
    for line in _metadata_lines(lines, span, code_lines):
        match = _ANCHOR.search(line)
        if match:
            return match.group(1).lower()
    return None


def _slot(lines: list[str], span: _Span, code_lines: frozenset[int]) -> str | None:
    for line in _metadata_lines(lines, span, code_lines):
        match = _SLOT.search(line)
        if match:
            return match.group(1).strip() or None
    return None


def _ids(path: str, spans: list[_Span], explicit: list[str | None]) -> list[str]:
    """Given the spans and their explicit anchors, return one unique id per span."""
    ids: list[str | None] = [None] * len(spans)
    used: set[str] = set()
    for position, anchor in enumerate(explicit):
        if anchor is not None and anchor not in used:
            ids[position] = anchor
            used.add(anchor)
    ordinals: dict[tuple[str, ...] | None, int] = {}
    for position, span in enumerate(spans):
        key = span.heading_path if span.heading is not None else None
        ordinal = ordinals.get(key, 0)
        ordinals[key] = ordinal + 1
        if ids[position] is not None:
            continue
        parts: list[object] = [path, "block" if key is None else list(key), ordinal]
        candidate = _derived_id(parts)
        salt = 0
        while candidate in used:  # only when an explicit anchor copies a derived id
            salt += 1
            candidate = _derived_id([*parts, salt])
        ids[position] = candidate
        used.add(candidate)
    return [entry_id for entry_id in ids if entry_id is not None]


def _derived_id(parts: list[object]) -> str:
    payload = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return "mem_" + hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
