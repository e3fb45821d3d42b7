"""Given the text of a handoff ledger (`handoff/LEDGER.md`), return its sections and items.

A ledger has four known sections — status / goal / tried (dead ends) / next — named by ONE table,
`SECTION_TABLE` (kind, configurable names, built-in Chinese and English synonyms, weight);
`daemon.config` reads its names from here, so a new section is a change to this file only.
Parsing rules, all deterministic and none of them raising:

- Headings are found with a real Markdown parser (markdown-it-py), so a `#` inside a fenced
  code block is not a heading. A heading names a section when its text, after stripping
  numbering ("1.", "一、", "(2)"), emoji, emphasis, a trailing parenthetical and trailing colons,
  equals one of the section's names or synonyms (English case-insensitively; "目标 / Goal"
  matches by either half).
- Duplicate titles (a known write-side defect: two `# 交接账本 …` lines with different
  timestamps): a level-1 heading that is not a section heading is a ledger title when it is
  the first one, repeats the first one's words (dates and numbers aside) or names a
  ledger/hand-off; the LAST title starts the current ledger, everything before it is ignored
  and `duplicate_titles` counts the extra titles.
- Any other heading that is not nested inside a section (a `## 决策`, a `# Notes`) starts an
  "other" section, carried at the lowest weight under its own heading and named in
  `Ledger.unrecognised`; text between the title and the first section is an "other" section
  without a heading. Nothing is dropped silently.
- A section runs until the next heading at the same or a shallower level. Deeper headings
  inside a section are items of their own (`block="heading"`).
- Items are the section's top-level blocks: a list item together with its continuation lines
  and nested sub-items, a paragraph, a fenced block, a table, a quote. Pure HTML comments and
  thematic breaks are skipped.
- An item's kind comes from EXPLICIT markers in its text only, never from the section it sits
  in: the earliest marker wins (see `item_kinds.item_kind`). Without a marker the kind is
  "plain", so a success written under 已试方案与失败原因 stays a success.
- A known section that appears twice gets the later items appended to the first, with a
  warning.
"""

from __future__ import annotations

import re
import types
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Literal

# Re-exported: an item's kind comes from its markers, whose home is `carryd.carry.item_kinds`.
from carryd.carry.item_kinds import ItemKind as ItemKind
from carryd.carry.item_kinds import item_kind as item_kind

# Re-exported: the section table's home is `carryd.carry.sections` (light to import).
from carryd.carry.sections import SECTION_ORDER as SECTION_ORDER
from carryd.carry.sections import SECTION_TABLE as SECTION_TABLE
from carryd.carry.sections import KnownKind as KnownKind
from carryd.carry.sections import SectionNames as SectionNames
from carryd.carry.sections import SectionSpec as SectionSpec

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

SectionKind = Literal["status", "goal", "tried", "next", "other"]
BlockKind = Literal["list", "paragraph", "heading", "other"]


@dataclass(frozen=True)
class LedgerItem:
    """One item of a section; `text` is the item's source lines, exactly (trailing blanks cut)."""

    text: str
    kind: ItemKind
    line_start: int  # 1-based, inclusive, in the ledger file
    line_end: int  # 1-based, inclusive
    weight: float | None = None  # from the sidecar (P7), when one matched
    block: BlockKind = "list"


@dataclass(frozen=True)
class LedgerSection:
    kind: SectionKind
    heading: str  # the heading's source line(s), e.g. "## 已试方案与失败原因" ("" for a preamble)
    items: tuple[LedgerItem, ...]
    line_start: int  # the heading line
    line_end: int  # last line of the section's last item (the heading line when empty)
    level: int = 2


@dataclass(frozen=True)
class Ledger:
    title: str | None  # text of the current (last) title, without "#"
    title_line: int | None
    sections: tuple[LedgerSection, ...]  # document order, at most one per known kind
    duplicate_titles: int  # titles beyond the first (0 for a healthy ledger)
    warnings: tuple[str, ...]
    unrecognised: tuple[str, ...] = ()  # headings of the "other" sections, document order

    @property
    def recognised(self) -> tuple[KnownKind, ...]:
        """Return the known section kinds the ledger has, in document order."""
        known: list[KnownKind] = []
        for section in self.sections:
            if section.kind != "other":
                known.append(section.kind)
        return tuple(known)

    def section(self, kind: SectionKind) -> LedgerSection | None:
        """Given a section kind, return that section or None."""
        for section in self.sections:
            if section.kind == kind:
                return section
        return None


@dataclass(frozen=True)
class Block:
    """A top-level Markdown block: 1-based inclusive lines, its kind, and heading facts."""

    kind: Literal["heading", "list", "paragraph", "fence", "other", "comment", "rule"]
    line_start: int
    line_end: int
    heading_level: int = 0
    heading_text: str = ""


_NEWLINES = re.compile(r"\r\n?|\n")


def source_lines(text: str) -> list[str]:
    """Given a text, return its lines split exactly as markdown-it numbers them."""
    return _NEWLINES.split(text.replace("\0", "\ufffd"))


@cache
def _parser() -> MarkdownIt:
    """The block parser, built on first use: the section table above is read by the config
    and the per-message hooks, which must not pay for importing markdown-it."""
    from markdown_it import MarkdownIt

    # Block structure is all we need: skipping inline parsing keeps pathological text fast.
    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def markdown_blocks(text: str) -> tuple[Block, ...]:
    """Given Markdown text, return its top-level blocks in document order.

    Lists are split into their top-level items (each with its nested content). Non-blank lines
    no block covers (link reference definitions) become "other" blocks, so that every
    non-blank line belongs to exactly one block.
    """
    lines = source_lines(text)
    tokens = _parser().parse(text)
    found: list[Block] = []
    for position, token in enumerate(tokens):
        if token.map is None or token.nesting == -1:
            continue
        start, end = token.map
        if token.level == 0:
            if token.type == "heading_open":
                inline = tokens[position + 1] if position + 1 < len(tokens) else None
                content = inline.content if inline is not None else ""
                level = int(token.tag[1:]) if token.tag[1:].isdigit() else 1
                found.append(Block("heading", start + 1, end, level, content))
            elif token.type == "paragraph_open":
                found.append(Block("paragraph", start + 1, end))
            elif token.type in ("fence", "code_block"):
                found.append(Block("fence", start + 1, end))
            elif token.type == "hr":
                found.append(Block("rule", start + 1, end))
            elif token.type == "html_block":
                comment = token.content.strip()
                is_comment = comment.startswith("<!--") and comment.endswith("-->")
                found.append(Block("comment" if is_comment else "other", start + 1, end))
            elif token.type in ("bullet_list_open", "ordered_list_open"):
                continue  # its items come next, at level 1
            else:
                found.append(Block("other", start + 1, end))
        elif token.level == 1 and token.type == "list_item_open":
            found.append(Block("list", start + 1, end))
    blocks: list[Block] = []
    covered = [False] * (len(lines) + 2)
    for block in found:
        last = block.line_end
        while last > block.line_start and not lines[last - 1].strip():
            last -= 1  # markdown-it counts trailing blank lines into list items
        last = min(last, len(lines))
        if block.line_start > last:
            continue
        trimmed = Block(block.kind, block.line_start, last, block.heading_level, block.heading_text)
        blocks.append(trimmed)
        for line_number in range(trimmed.line_start, trimmed.line_end + 1):
            covered[line_number] = True
    for line_number, line in enumerate(lines, start=1):
        if line.strip() and not covered[line_number]:
            blocks.append(Block("other", line_number, line_number))
    blocks.sort(key=lambda block: (block.line_start, block.line_end))
    return tuple(blocks)


_NUMBERING = re.compile(
    r"^(?:"
    r"\(\s*(?:\d+|[一二三四五六七八九十百]+|[a-z])\s*\)"
    r"|(?:\d+(?:\.\d+)*|[一二三四五六七八九十百]+|[a-z]|[ivxlc]+)\s*[.)、:]"
    r"|\d+(?:\.\d+)*(?=\s)"
    r"|第[一二三四五六七八九十百\d]+[部节章步]"
    r")\s*"
)
_TRAILING_PAREN = re.compile(r"\s*\([^()]*\)\s*$")
_EMPHASIS = re.compile(r"[*_`~]+")
_TRAILING_PUNCTUATION = re.compile(r"[:;,.。]+$")


def normalize_heading(text: str) -> str:
    """Given heading text, return the comparable form: no numbering, emoji, emphasis or colon."""
    folded = unicodedata.normalize("NFKC", text)
    folded = _EMPHASIS.sub("", folded)
    folded = "".join(
        " " if unicodedata.category(char) in ("So", "Sk", "Cf", "Co", "Cs") else char
        for char in folded
    )
    folded = folded.replace("\ufe0f", "").replace("\ufe0e", "")
    folded = " ".join(folded.split()).casefold()
    folded = _NUMBERING.sub("", folded, count=1)
    folded = re.sub(r"(?<=[a-z])[-‐](?=[a-z])", " ", folded)  # "dead-ends" == "dead ends"
    for _ in range(3):
        stripped = _TRAILING_PAREN.sub("", folded)
        if stripped == folded or not stripped:
            break
        folded = stripped
    return _TRAILING_PUNCTUATION.sub("", folded.strip()).strip()


@lru_cache(maxsize=8)
def _section_table(names: SectionNames) -> Mapping[str, KnownKind]:
    """Given the configured names, return every name and synonym, normalised, with its section
    (the first section to claim a name keeps it), longest name first. Built once per names:
    every heading of every ledger and plan is looked up in it."""
    table: dict[str, KnownKind] = {}
    for spec in SECTION_TABLE:
        configured: Sequence[str] = getattr(names, spec.kind)
        for name in (*configured, *spec.aliases):
            key = normalize_heading(name)
            if key:
                table.setdefault(key, spec.kind)
    ordered = sorted(table.items(), key=lambda pair: (-len(pair[0]), pair[0]))
    return types.MappingProxyType(dict(ordered))


def section_kind_of(heading_text: str, names: SectionNames = SectionNames()) -> KnownKind | None:  # noqa: B008
    """Given a heading's text, return the known ledger section it names, or None."""
    return _match_section(heading_text, _section_table(names))


# Between the halves of a heading that names a section twice ("目标 / Goal", "Tried & failed",
# "Status 状态") or names it with a rider ("Tried, didn't work").
_HALVES = re.compile(
    r"\s*(?:[/|｜·&+,;，；、]|\band\b|\bor\b|与|和|及|以及)\s*"
    r"|(?<=[a-z])\s+(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])\s+(?=[a-z])"
)
# Generic words a Chinese heading may add after a section's name ("下一步要做的", "踩坑记录").
_CJK_RIDERS = re.compile(r"(?:要做的|要做|记录|清单|列表|汇总|一览|事项|部分|情况|说明|备忘|们)+")
_IDEOGRAPHS = re.compile(r"^[\u4e00-\u9fff]")


def _match_section(heading_text: str, table: Mapping[str, KnownKind]) -> KnownKind | None:
    """Given a heading's text and the name table, return the section it names, or None.

    In order: the whole heading; either half of a heading that joins two names; a heading
    that starts with a name and adds only a rider (an English name followed by more words,
    "Next up"; a Chinese name followed by a generic word, "下一步要做的"), longest name first.
    """
    key = normalize_heading(heading_text)
    if key in table:
        return table[key]
    for part in _HALVES.split(key):
        part = part.strip().rstrip(":")
        if part in table:
            return table[part]
    for name in table:  # longest first
        if not key.startswith(name) or len(key) == len(name):
            continue
        rest = key[len(name) :]
        if _IDEOGRAPHS.match(name):
            if _CJK_RIDERS.fullmatch(rest.strip()):
                return table[name]
        elif rest[0] in " -—–:(" and not _IDEOGRAPHS.match(rest.strip() or "x"):
            return table[name]
    return None


_TITLE_WORDS = re.compile(r"交接|账本|接力|handoff|hand-off|hand off|ledger|carry", re.IGNORECASE)
_TITLE_NOISE = re.compile(r"[\d\W_]+")


def _title_skeleton(text: str) -> str:
    """Given a title, return its words without dates, times, numbers and punctuation."""
    return _TITLE_NOISE.sub("", normalize_heading(text))


_ITEM_BLOCK: dict[str, BlockKind] = {
    "list": "list",
    "paragraph": "paragraph",
    "heading": "heading",
    "fence": "other",
    "other": "other",
    "comment": "other",
    "rule": "other",
}


@dataclass
class _Draft:
    """A section while it is being collected (local to one parse_ledger call)."""

    kind: SectionKind
    heading: str
    line_start: int
    level: int
    items: list[LedgerItem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.first_level = self.level


def _title_indices(blocks: Sequence[Block], table: Mapping[str, KnownKind]) -> list[int]:
    """Given the blocks, return the indices of the level-1 headings that are ledger titles."""
    titles: list[int] = []
    first = ""
    for index, block in enumerate(blocks):
        if block.kind != "heading" or block.heading_level != 1:
            continue
        if _match_section(block.heading_text, table) is not None:
            continue
        skeleton = _title_skeleton(block.heading_text)
        if not titles:
            titles.append(index)
            first = skeleton
        elif skeleton == first or _TITLE_WORDS.search(block.heading_text):
            titles.append(index)
    return titles


def parse_ledger(text: str, *, names: SectionNames = SectionNames()) -> Ledger:  # noqa: B008
    """Given a ledger's text, return its current title, sections, items and warnings.

    The steps: find the current title (the last one), collect the blocks after it into
    sections and items, build the sections, and name the headings the table does not know.
    """
    blocks = markdown_blocks(text)
    table = _section_table(names)
    titles = _title_indices(blocks, table)
    title_warnings = _titles_warning(blocks, titles)
    first_block = titles[-1] + 1 if titles else 0
    drafts, section_warnings = _collect_sections(blocks[first_block:], source_lines(text), table)
    built = _built_sections(drafts)
    unrecognised = tuple(
        heading_text(section.heading)
        for section in built
        if section.kind == "other" and section.heading
    )
    warnings = [*title_warnings, *section_warnings]
    if unrecognised:
        warnings.append(
            "sections the ledger's table does not know, carried at the lowest weight: "
            + ", ".join(repr(name) for name in unrecognised)
        )
    last = blocks[titles[-1]] if titles else None
    return Ledger(
        title=last.heading_text.strip() if last is not None else None,
        title_line=last.line_start if last is not None else None,
        sections=built,
        duplicate_titles=max(0, len(titles) - 1),
        warnings=tuple(warnings),
        unrecognised=unrecognised,
    )


def _titles_warning(blocks: Sequence[Block], titles: Sequence[int]) -> tuple[str, ...]:
    """Given the blocks and the title indices, return the warning for duplicate titles."""
    if len(titles) <= 1:
        return ()
    last = blocks[titles[-1]]
    return (
        f"{len(titles)} ledger titles (lines "
        + ", ".join(str(blocks[index].line_start) for index in titles)
        + f"); using the last one, line {last.line_start}",
    )


def _collect_sections(
    blocks: Sequence[Block], lines: Sequence[str], table: Mapping[str, KnownKind]
) -> tuple[list[_Draft], list[str]]:
    """Given the blocks after the current title, return the sections they form (document
    order, items collected) and the warnings for sections that appear twice."""

    def snippet(start: int, end: int) -> str:
        return "\n".join(lines[start - 1 : end])

    warnings: list[str] = []
    drafts: list[_Draft] = []  # document order
    known: dict[SectionKind, _Draft] = {}
    current: _Draft | None = None
    for block in blocks:
        if block.kind == "heading":
            kind = _match_section(block.heading_text, table)
            if kind is not None:
                if kind in known:
                    warnings.append(
                        f"line {block.line_start}: section '{kind}' appears again; "
                        "its items are added to the first one"
                    )
                    current = known[kind]
                    current.level = block.heading_level
                else:
                    heading = snippet(block.line_start, block.line_end).rstrip()
                    current = _Draft(kind, heading, block.line_start, block.heading_level)
                    known[kind] = current
                    drafts.append(current)
                continue
            if current is None or not current.heading or block.heading_level <= current.level:
                heading = snippet(block.line_start, block.line_end).rstrip()
                current = _Draft("other", heading, block.line_start, block.heading_level)
                drafts.append(current)
                continue
        if block.kind in ("comment", "rule"):
            continue
        if current is None:  # text between the title and the first heading
            current = _Draft("other", "", block.line_start, 0)
            drafts.append(current)
        raw = snippet(block.line_start, block.line_end)
        current.items.append(
            LedgerItem(
                raw, item_kind(raw), block.line_start, block.line_end, None, _ITEM_BLOCK[block.kind]
            )
        )
    return drafts, warnings


def _built_sections(drafts: Sequence[_Draft]) -> tuple[LedgerSection, ...]:
    """Given the collected sections, return them frozen (an empty headless one is dropped)."""
    return tuple(
        LedgerSection(
            draft.kind,
            draft.heading,
            tuple(draft.items),
            draft.line_start,
            max([draft.line_start, *(item.line_end for item in draft.items)]),
            draft.first_level,
        )
        for draft in drafts
        if draft.kind != "other" or draft.items or draft.heading
    )


def heading_text(heading: str) -> str:
    """Given a heading's source line(s), return its text ("" for none; setext underline cut)."""
    first = heading.split("\n", 1)[0].strip()
    return first.lstrip("#").strip()
