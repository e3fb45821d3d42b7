"""Given an entry's heading and body, return its L0 abstract (about 100 characters) and where
the abstract came from.

The rules, in order (Chinese and English alike):
1. `heading` — the heading, when it is a real abstract, followed by the opening of the body.
   A heading made only of dates, times, weekdays, numbers, versions or short ids
   ("2026-11-29", "2026年11月29日", "3", "v2.2.6", "D1:3") or only punctuation/symbols says
   nothing about the entry and falls through to 2. Of a heading split into labelled parts
   ("Caroline · D1:3", "Outage | 2026-11-29"; parts separated by a spaced · | • — –), the parts
   that are such labels are left out: the entry's id, path and lines already locate it, and for
   the embedding model a label is noise that outweighs a short abstract. The rest of the limit is
   filled with the opening of the body's first prose block ("Release pitfalls — npm publish
   needs OTP. Tag after bumping…"), cut like rule 3 when it does not fit: for retrieval a heading
   alone is a bare topic, and the opening of the body is the most informative text that stays
   put while the body grows. Only that opening is ever used, so an edit beyond what the L0
   covers (later blocks, or the first block past the cut) never changes it. A heading longer
   than the limit is cut (source `truncate`).
2. `firstSentence` — the first sentence of the first prose block of the body (a paragraph,
   list item, table row or quote; code fences are passed over while prose follows), with
   Markdown markup, links and HTML comments removed, when it fits. A sentence ends at 。！？；
   or at . ! ? ; followed by a space or the block's end (so 3.14, lib/index.js and v2.2.6
   stay whole; "e.g." and friends do not end a sentence).
3. `truncate` — otherwise that block cut to the limit: at a word boundary where one is near,
   never inside a grapheme cluster (combining marks, ZWJ emoji sequences, flags, skin tones),
   ending with "…".

The result is one line, secrets redacted, and never longer than `max_chars` (len of the str).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Literal

from carryd.index.redact import redact

L0Source = Literal["heading", "firstSentence", "truncate"]

ELLIPSIS = "…"
# How much of a block (or heading) is read for its L0: enough for any sentence that fits,
# and a bound on the cost of pathological Markdown.
_LEAD_LIMIT = 4000
_TRAILING_JUNK = frozenset(" \t,;:、，；：—–-([（【")
# Between a heading used as an abstract and the opening of its body.
HEADING_SEPARATOR = " — "
# A word boundary this far into the budget is worth cutting at; nearer the start it costs
# too much of the abstract, so cut mid-word (still on a grapheme boundary).
_WORD_BOUNDARY_MIN_SHARE = 0.6


# ---------------------------------------------------------------------------------------------
# Headings that are not abstracts.

_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WEEKDAYS = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"
)
_NOT_ABSTRACT_TOKEN = re.compile(
    r"(?i)"
    r"\d{4}-\d{1,2}-\d{1,2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{4}[-/.年]\d{1,2}(?:[-/.月]\d{1,2}[日号]?)?|\d{1,2}月\d{1,2}[日号]|\d{4}年|\d{1,2}[月日号]"
    r"|\d{1,2}:\d{2}(?::\d{2})?"
    rf"|\b(?:{_MONTHS})\b\.?|\b(?:{_WEEKDAYS})\b\.?|\b(?:am|pm|utc|gmt)\b"
    r"|(?:周|星期|礼拜)[一二三四五六日天]|上午|下午|晚上"
    r"|\bv?\d+(?:[._-]\d+)*(?:-?(?:rc|alpha|beta|a|b)\d*)?\b"
    # short ids: a letter or three and a number, maybe with sub-numbers ("D1:3", "S15", "Q3")
    r"|\b[A-Za-z]{1,3}\d+(?:[:._/-]\d+)*\b"
)
# Parts of a heading: separated by a spaced middle dot, bar, bullet or dash.
_HEADING_PARTS = re.compile(r"\s+[·|•—–]\s+")


def is_abstract(heading: str) -> bool:
    """Given a heading's plain text, return whether it says what the entry is about: not
    only dates, times, numbers, versions, short ids, punctuation or symbols."""
    rest = _NOT_ABSTRACT_TOKEN.sub(" ", heading)
    return any(character.isalpha() for character in rest)


def without_labels(heading: str) -> str:
    """Given a heading's plain text, return it without the parts that are only labels (see
    is_abstract; parts separated by a spaced · | • — –), the remaining parts joined by " · "."""
    parts = _HEADING_PARTS.split(heading)
    if len(parts) == 1:
        return heading
    return " · ".join(part for part in parts if is_abstract(part))


# ---------------------------------------------------------------------------------------------
# Markdown to plain text.

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_ATX_OPEN = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+|$)")
_ATX_CLOSE = re.compile(r"[ \t]+#+[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BLOCKQUOTE = re.compile(r"^ {0,3}(?:>[ \t]?)+")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+(?:\[[ xX]\][ \t]+)?|$)")
_THEMATIC_BREAK = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(.{1,2000}?)\1", re.DOTALL)
# (one of these must occur for the rule to apply, pattern, replacement). Spans are bounded
# so that unclosed markers cost linear, not quadratic, time.
_INLINE_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (("]",), re.compile(r"!\[([^\]]{0,500})\]\([^)]{0,2000}\)"), r"\1"),  # image → its alt text
    (("]",), re.compile(r"\[([^\]]{1,500})\]\([^)]{0,2000}\)"), r"\1"),  # link → its text
    (("]",), re.compile(r"\[([^\]]{1,500})\]\[[^\]]{0,500}\]"), r"\1"),  # reference link → its text
    (("<",), re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>"), r"\1"),  # autolink → the address
    (("<",), re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]{0,500})?/?>"), ""),  # inline HTML tags
    (
        ("**", "__", "~~"),
        re.compile(r"(\*\*|__|~~)(?=\S)(.{1,500}?)(?<=\S)\1"),
        r"\2",
    ),  # strong, strikethrough
    (("*",), re.compile(r"(?<![\w*])\*(?=\S)(.{1,500}?)(?<=\S)\*(?![\w*])"), r"\1"),  # *emphasis*
    (
        ("_",),
        re.compile(r"(?<![\w_])_(?=\S)(.{1,500}?)(?<=\S)_(?![\w_])"),
        r"\1",
    ),  # _emphasis_, not snake_case
    (("\\",), re.compile(r"\\([!-/:-@\[-`{-~])"), r"\1"),  # backslash escapes
)


def plain_inline(text: str) -> str:
    """Given one block's inline Markdown, return its plain text on one line."""
    if "`" not in text:
        return " ".join(_strip_inline(text).split())
    pieces: list[str] = []
    position = 0
    for match in _CODE_SPAN.finditer(text):
        pieces.append(_strip_inline(text[position : match.start()]))
        pieces.append(match.group(2).strip())  # code keeps its characters verbatim
        position = match.end()
    pieces.append(_strip_inline(text[position:]))
    return " ".join("".join(pieces).split())


def _strip_inline(text: str) -> str:
    for needed, pattern, replacement in _INLINE_RULES:
        if any(marker in text for marker in needed):  # most text needs no rule at all
            text = pattern.sub(replacement, text)
    return text


def plain_heading(heading: str) -> str:
    """Given a heading's text (with or without its leading #s), return it as plain text."""
    heading = _HTML_COMMENT.sub(" ", heading[:_LEAD_LIMIT]).strip()
    heading = _ATX_CLOSE.sub("", _ATX_OPEN.sub("", heading))
    return plain_inline(heading)


def _blocks(body: str) -> Iterator[tuple[Literal["prose", "code"], str]]:
    """Given a body, yield its blocks in order as (kind, raw text); lazily, since only the
    first prose block matters."""
    body = _HTML_COMMENT.sub("", body) if "<!--" in body else body
    paragraph: list[str] = []
    fence: tuple[str, list[str]] | None = None
    for raw_line in body.split("\n"):
        line = raw_line.rstrip("\r")
        if fence is not None:
            marker, code = fence
            stripped = line.strip()
            if stripped.startswith(marker) and stripped.strip(marker[0]) == "":
                yield "code", "\n".join(code)
                fence = None
            else:
                code.append(line)
            continue
        line = _BLOCKQUOTE.sub("", line)
        fence_match = _FENCE.match(line)
        boundary = (
            not line.strip()
            or fence_match is not None
            or _ATX_OPEN.match(line) is not None
            or _THEMATIC_BREAK.match(line) is not None
            or (_SETEXT_UNDERLINE.match(line) is not None and bool(paragraph))
            or _TABLE_DELIMITER.match(line) is not None
            and "|" in line
        )
        starts_unit = _LIST_ITEM.match(line) is not None or line.lstrip().startswith("|")
        if (boundary or starts_unit) and paragraph:
            yield "prose", "\n".join(paragraph)
            paragraph = []
        if fence_match is not None:
            fence = (fence_match.group(1), [])
        elif _ATX_OPEN.match(line):
            yield "prose", _ATX_CLOSE.sub("", _ATX_OPEN.sub("", line))
        elif not boundary:
            if starts_unit:
                line = _LIST_ITEM.sub("", line) if _LIST_ITEM.match(line) else _table_row(line)
            paragraph.append(line)
    if fence is not None:
        yield "code", "\n".join(fence[1])
    if paragraph:
        yield "prose", "\n".join(paragraph)


def _table_row(line: str) -> str:
    cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    return ", ".join(cell for cell in cells if cell)


def _lead_block(body: str) -> str:
    """Given a body, return the plain, redacted text of its first prose block (or of its first
    code block when it has no prose); "" when it has neither."""
    first_code: str | None = None
    for kind, raw in _blocks(body):
        if kind == "code":
            if first_code is None and raw.strip():
                first_code = raw
            continue
        # Redact the whole block (a key block may run past any limit), then read only its
        # start: the L0 needs about a sentence, and the rest cannot change it.
        redacted = redact(raw)[:_LEAD_LIMIT]
        text = plain_inline(redacted)
        if text != " ".join(redacted.split()):
            # Removing markup joined what it separated; a secret might have been split by it.
            text = redact(text)
        if text:
            return text
    if first_code is None:
        return ""
    return redact(" ".join(redact(first_code)[:_LEAD_LIMIT].split()))


# ---------------------------------------------------------------------------------------------
# Sentences and cuts.

_SENTENCE_END = re.compile(
    r"[。！？；]+[」』”’）)\]\"']*"  # CJK: the mark ends the sentence wherever it is
    r"|[.!?;]+[”’)\]\"']*(?=\s|$)"  # ASCII: only before a space or the end (3.14, lib/a.js)
)
_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "vs", "cf", "mr", "mrs", "ms", "dr", "prof", "fig", "approx", "incl", "resp"}
)


def first_sentence(text: str) -> str:
    """Given one block's plain text, return its first sentence (the whole block when no
    sentence ends inside it)."""
    for match in _SENTENCE_END.finditer(text):
        if match.group().startswith("."):
            word = text[max(0, match.start() - 16) : match.start()].rsplit(None, 1)[-1:] or [""]
            if word[0].lower().lstrip("(\"'") in _ABBREVIATIONS:
                continue
        sentence = text[: match.end()].strip()
        if sentence:
            return sentence
    return text.strip()


# Grapheme boundaries (UAX #29), only as far as a safe cut needs them: `_cut_allowed` may
# refuse a real boundary (cutting a little earlier is harmless) but never allows a cut inside
# an extended grapheme cluster. Written on unicodedata rather than the `regex` module's \X
# because `regex` is not a dependency of carryd (it only arrives with the test extras);
# tests/index/test_properties.py checks every allowed cut against \X.
_ZWJ = "\u200d"
_PREPEND = frozenset(
    [*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x0D4E, 0x110BD, 0x110CD]
    + [0x111C2, 0x111C3, 0x1193F, 0x11941, 0x11A3A, *range(0x11A84, 0x11A8A), 0x11D46, 0x11F02]
)
_JOINS_PREVIOUS = frozenset(
    # ZWNJ, Thai/Lao AM (SpacingMark), halfwidth voiced marks; emoji skin tones; tag characters
    [0x200C, 0x0E33, 0x0EB3, 0xFF9E, 0xFF9F, *range(0x1F3FB, 0x1F400), *range(0xE0020, 0xE0080)]
)
_REGIONAL_INDICATORS = range(0x1F1E6, 0x1F200)


def _hangul_type(character: str) -> str:
    code = ord(character)
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    return ""


def _joins_previous(character: str) -> bool:
    """Whether a character always belongs to the cluster before it (Extend, ZWJ,
    SpacingMark), or might in a newer Unicode than this Python knows (unassigned)."""
    return (
        character == _ZWJ
        or ord(character) in _JOINS_PREVIOUS
        or unicodedata.category(character) in ("Mn", "Me", "Mc", "Cn")
    )


def _cut_allowed(text: str, index: int) -> bool:
    """Given a text and an index inside it, return whether cutting at index splits no
    grapheme cluster (conservatively)."""
    if index <= 0 or index >= len(text):
        return True
    before, after = text[index - 1], text[index]
    if _joins_previous(after) or before == _ZWJ or ord(before) in _PREPEND:
        return False
    if before == "\r" and after == "\n":
        return False
    hangul_before, hangul_after = _hangul_type(before), _hangul_type(after)
    if hangul_before and hangul_after:
        if hangul_before == "L" or (hangul_before in ("LV", "V") and hangul_after in ("V", "T")):
            return False
        if hangul_before in ("LVT", "T") and hangul_after == "T":
            return False
    if ord(before) in _REGIONAL_INDICATORS and ord(after) in _REGIONAL_INDICATORS:
        run = 0
        while index - run - 1 >= 0 and ord(text[index - run - 1]) in _REGIONAL_INDICATORS:
            run += 1
        return run % 2 == 0  # flags pair up from the start of the run
    if after.isalpha():
        # Indic conjuncts (GB9c): a virama, maybe followed by marks, joins the next letter.
        position = index - 1
        while position > 0 and unicodedata.category(text[position]) in ("Mn", "Me"):
            if unicodedata.combining(text[position]) == 9:
                return False
            position -= 1
        if unicodedata.combining(text[position]) == 9:
            return False
    return True


def truncate(text: str, max_chars: int) -> str:
    """Given a text and a limit, return the text if it fits, else its longest prefix that
    ends on a grapheme boundary (preferring a nearby word boundary) plus "…", within the limit."""
    if len(text) <= max_chars:
        return text
    if max_chars < 1:
        return ""
    budget = max_chars - len(ELLIPSIS)
    cut = budget
    while cut > 0 and not _cut_allowed(text, cut):
        cut -= 1
    if 0 < cut < len(text) and _in_word(text[cut - 1]) and _in_word(text[cut]):
        space = text.rfind(" ", 0, cut)
        if space >= budget * _WORD_BOUNDARY_MIN_SHARE and _cut_allowed(text, space):
            cut = space
    head = text[:cut]
    while head and head[-1] in _TRAILING_JUNK and _cut_allowed(text, len(head) - 1):
        head = head[:-1]
    return head + ELLIPSIS


def _in_word(character: str) -> bool:
    """Whether a character belongs to a space-separated word (not CJK, where every
    character boundary is a word boundary)."""
    return character.isalnum() and unicodedata.east_asian_width(character) not in ("W", "F")


def extract_l0(heading: str | None, body: str, *, max_chars: int = 100) -> tuple[str, L0Source]:
    """Given an entry's heading (its Markdown text, None for a block outside any heading) and
    its body, return its L0 abstract and the abstract's source; secrets are redacted before
    anything is cut."""
    title = redact(plain_heading(heading)) if heading else None
    return l0_from_title(title, body, max_chars=max_chars)


def l0_from_title(title: str | None, body: str, *, max_chars: int = 100) -> tuple[str, L0Source]:
    """Given an entry's heading already as plain, redacted text (None: no heading) and its
    body, return its L0 abstract and the abstract's source (see extract_l0)."""
    title = title or ""
    lead = _lead_block(body)
    sentence = first_sentence(lead) if lead else ""
    if title and is_abstract(title):
        topic = without_labels(title) or title
        if len(topic) > max_chars:
            return truncate(topic, max_chars), "truncate"
        if not lead:
            return topic, "heading"
        separator = " " if topic.endswith((":", "：")) else HEADING_SEPARATOR
        filled = truncate(f"{topic}{separator}{lead}", max_chars)
        if len(filled) - len(ELLIPSIS) <= len(topic) + len(separator):
            return topic, "heading"  # no room for even a word of the body
        return filled, "heading"
    if sentence:
        if len(sentence) <= max_chars:
            return sentence, "firstSentence"
        return truncate(lead, max_chars), "truncate"
    if title:
        # A date or number heading over an empty body is still all the entry says.
        if len(title) > max_chars:
            return truncate(title, max_chars), "truncate"
        return title, "heading"
    return "", "truncate"
