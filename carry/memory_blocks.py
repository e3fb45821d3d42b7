"""Given selected memory candidates, return the blocks the carry shows them in (seed 000, S15).

A relevance hit is an atomic `<memory_hit …>` block inside `<recalled_memory>`, its provenance
as attributes and its text escaped. A standing default (a root-level file's entry) is the
user's own Markdown under its file's name, headings one level deeper, with no wrapper: it is
shown whole, so there is nothing to expand and nothing to tell apart from the carry's markup.
`select` measures candidates with exactly these functions, so what it packs is what the carry
holds. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from carryd.carry.candidates import MemoryContextCandidate

__all__ = [
    "MEMORY_CLOSE",
    "MEMORY_OPEN",
    "render_memory_context",
    "render_memory_hit",
    "render_memory_parts",
    "render_standing",
]

MEMORY_OPEN = "<recalled_memory>"
MEMORY_CLOSE = "</recalled_memory>"


def render_memory_hit(candidate: MemoryContextCandidate) -> str:
    """Given a candidate, return its atomic `<memory_hit …>` block (provenance as attributes)."""
    attributes = [("id", candidate.memory_id), ("authority", candidate.authority)]
    if candidate.conflict_key is not None:
        attributes.append(("slot", candidate.conflict_key))
    provenance = candidate.provenance
    if provenance.location is not None:
        attributes.append(("source", provenance.location))
    if provenance.title:
        attributes.append(("title", provenance.title))
    if provenance.captured_at:
        attributes.append(("captured_at", provenance.captured_at))
    rendered = " ".join(f'{name}="{_escape(value, quote=True)}"' for name, value in attributes)
    return f"<memory_hit {rendered}>\n{_escape(candidate.text)}\n</memory_hit>"


def render_memory_context(candidates: Iterable[MemoryContextCandidate]) -> str:
    """Given selected candidates in order, return the segment's text ("" if none): the
    standing defaults' block, then the `<recalled_memory>` block of the relevance hits."""
    standing, recalled = render_memory_parts(candidates)
    return "\n\n".join(part for part in (standing, recalled) if part)


def render_memory_parts(candidates: Iterable[MemoryContextCandidate]) -> tuple[str, str]:
    """Given selected candidates in order, return the standing defaults' block and the
    `<recalled_memory>` block ("" each when it has none).

    A standing default is the user's own text shown whole, where they wrote it, not a
    retrieved snippet: it is carried as Markdown under its file's name (its headings one
    level deeper), with no per-hit wrapper, id or escaping — there is nothing to expand and
    nothing to tell apart from the carry's own markup. Relevance hits keep S15's atomic
    `<memory_hit>` blocks with their provenance.
    """
    chosen = list(candidates)
    standing = "\n\n".join(render_standing(c) for c in chosen if c.standing)
    blocks = [render_memory_hit(c) for c in chosen if not c.standing]
    recalled = "\n".join([MEMORY_OPEN, *blocks, MEMORY_CLOSE]) if blocks else ""
    return standing, recalled


_ATX = re.compile(r"^(#{1,5})(?=\s)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s")


def render_standing(candidate: MemoryContextCandidate) -> str:
    """Given a standing default, return it as Markdown: its title (or a label) naming where it
    lives, then its text, every ATX heading outside code fences one level deeper."""
    location = candidate.provenance.location or candidate.memory_id
    lines = candidate.text.split("\n")
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines[index] = _ATX.sub(lambda m: "#" + m.group(1), line)
    if _HEADING.match(lines[0]):
        lines[0] = f"{lines[0].rstrip()} (`{location}`)"
        while len(lines) > 1 and not lines[1].strip():
            del lines[1]
    else:
        lines.insert(0, f"From `{location}`:")
    return "\n".join(lines)


# An ampersand is escaped only where it would read as an entity ("&lt;", "&#60;"): the text
# stays unambiguous, and a command such as `cargo fmt && cargo clippy` pastes as written.
_ENTITY_LIKE = re.compile(r"&(?=#?\w+;)")


def _escape(text: str, *, quote: bool = False) -> str:
    escaped = _ENTITY_LIKE.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")
    if quote:
        escaped = escaped.replace('"', "&quot;").replace("\n", " ")
    return escaped
