"""Given an item's text, return its one-line summary: what a dropped item leaves behind.

A summary is cut on clause boundaries only (。！？；，, ". ", "; ", ", ", dashes, arrows),
never inside a clause unless its first clause alone is far too long; it never splits a
`code span`, and it keeps the item's date. A failed attempt's summary is a dead-end line,
"what was tried → why it failed": the item's first clause(s), then the clause that gives the
reason (原因 / 因为 / because / due to / … , else the next clause after the attempt).
Pure: no IO, no clock.
"""

from __future__ import annotations

import re

from carryd.carry.recency import explicit_date

SUMMARY_CHARS = 120  # a plain item's one-line summary (about an L0)
TRIED_CHARS = 80  # the "what was tried" half of a dead-end line
REASON_CHARS = 100  # the "why it failed" half
# The brief form, for when even every attempt's summary does not fit: a shorter line each.
BRIEF_SUMMARY_CHARS = 80
BRIEF_TRIED_CHARS = 48
BRIEF_REASON_CHARS = 60
HARD_LIMIT_FACTOR = 1.6  # a single first clause may run this much over before it is cut
ARROW = " → "
ELLIPSIS = " … "  # joins a reason's start to its conclusion

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SUB_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# Positions right after which a clause ends.
_BOUNDARY = re.compile(
    r"[。！？；，、]|[.!?;,:](?=\s|$)|\s[—–-]{1,2}\s|——|\s→\s|\s->\s|：(?=\S)|$"
)
# Where the "why" of a failed attempt starts: an explicit reason anywhere in the rest; else
# the turn ("but", "until", "结果") after which an attempt that looked fine went wrong, when it
# comes early; else the text right after the attempt.
_REASON_CUE = re.compile(
    r"原因|理由|因为|由于|导致|报错|症状"
    r"|(?i:\bbecause\b|\breason\b|\bdue to\b|\bcaused by\b|\bsymptom\b)"
)
_TURN_CUE = re.compile(
    r"结果|但是?|可是|然而|却|发现"
    r"|(?i:\bbut\b|\bhowever\b|\buntil\b|\bturned out\b|\bonly to\b)"
)


_SENTENCE_END = re.compile(r"[。！？；]|[.!?;](?=\s)")
# A bare "failed:" / "失败，" opening the rest says nothing the arrow does not.
_FAILED_WORD = re.compile(
    r"^(?:(?i:failed|fails|failure|broken)|失败了?|不成功|无效)[\s:：,，.。;；—–-]*"
)


def flatten(text: str) -> tuple[str, str]:
    """Given an item's text, return its bullet prefix ("- ", "- [ ] ", "") and its text on one
    line (continuation lines and sub-items joined with spaces, their bullets dropped)."""
    lines = text.split("\n")
    first = lines[0]
    bullet = _BULLET.match(first)
    prefix = ""
    if bullet is not None:
        prefix = first[: bullet.end()].lstrip()
        first = first[bullet.end() :]
        box = re.match(r"\[[ xX]\]\s*", first)
        if box is not None:
            prefix += first[: box.end()]
            first = first[box.end() :]
    rest = [_SUB_BULLET.sub("", line).strip() for line in lines[1:]]
    body = " ".join(part for part in [first.strip(), *rest] if part and part != "```")
    return prefix, " ".join(body.split())


def clause_prefix(text: str, limit: int) -> str:
    """Given one line of text and a limit, return its longest prefix of whole clauses within
    the limit; else its first clause that says something (not a bare "label:") when that is
    not far too long; else a cut at a word, marked "…". Never ends inside a `code span`."""
    if len(text) <= limit:
        return text
    best = ""
    hard = int(limit * HARD_LIMIT_FACTOR)
    first_full = ""  # the first clause ending that is not a colon, within the hard limit
    for match in _BOUNDARY.finditer(text):
        candidate = text[: match.end()].rstrip(" —–-→>")
        if len(candidate) > hard:
            break
        if not candidate.strip(" :：") or candidate.count("`") % 2:
            continue
        if candidate[-1] in ":：":
            continue  # "attempt 7 (11-26):" alone names the attempt, not what happened
        if len(candidate) <= limit:
            best = candidate
        elif not first_full:
            first_full = candidate
    if best and (len(best) >= limit // 3 or not first_full):
        return best.rstrip()
    if first_full:  # a clause of a word or two ("cannot,") says less than the whole clause
        return first_full.rstrip()
    return _word_cut(text, limit)


def _word_cut(text: str, limit: int) -> str:
    cut = text[: max(limit - 1, 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    if cut.count("`") % 2 == 1:
        cut = cut[: cut.rfind("`")]
    return cut.rstrip(" ，,;；:：—–-") + "…"


def summary_line(text: str, *, dead_end: bool, brief: bool = False) -> str:
    """Given an item's text, return its one-line summary with its bullet and checkbox.

    A dead end reads "what was tried → why it failed". The item's own date is kept. `brief`
    asks for the shorter form.
    """
    prefix, flat = flatten(text)
    if dead_end:
        _, first = flatten(text.split("\n", 1)[0])
        limits = (BRIEF_TRIED_CHARS, BRIEF_REASON_CHARS) if brief else (TRIED_CHARS, REASON_CHARS)
        body = dead_end_summary(first, flat[len(first) :].strip(), *limits)
    else:
        body = clause_prefix(flat, BRIEF_SUMMARY_CHARS if brief else SUMMARY_CHARS)
    found = explicit_date(text)
    if found is not None and found[1] not in body:
        body = f"{found[1]}: {body}"
    return f"{prefix}{body}"


def dead_end_summary(
    first: str, details: str, tried_chars: int = TRIED_CHARS, reason_chars: int = REASON_CHARS
) -> str:
    """Given a failed attempt's first line and the rest (one line each), return
    "what was tried → why it failed"."""
    whole = f"{first} {details}".strip()
    if len(whole) <= tried_chars + reason_chars:
        return whole
    tried = clause_prefix(first, tried_chars)
    if tried.endswith("…"):  # the attempt's clause is cut; its reason starts after it
        boundary = _next_boundary(first, len(tried) - 1)
        if boundary is None and not details:  # one long clause: no split at all
            return clause_prefix(whole, tried_chars + reason_chars)
        rest = f"{first[boundary:] if boundary is not None else ''} {details}"
    else:
        rest = f"{first[len(tried) :]} {details}"
    rest = rest.strip().lstrip(" ，,;；:：—–-→>。.")
    if not rest:
        return tried
    cue = _REASON_CUE.search(rest)
    if cue is not None:  # the reason is the sentence that gives it, from its start
        starts = [match.end() for match in _SENTENCE_END.finditer(rest, 0, cue.start())]
        source = rest[starts[-1] if starts else 0 :].lstrip()
    else:
        turn = _TURN_CUE.search(rest, 0, reason_chars)
        source = rest[turn.start() :] if turn is not None else rest
    source = _FAILED_WORD.sub("", source, count=1)
    reason = clause_prefix(source, reason_chars)
    if reason and len(reason) < len(source):
        reason = _with_conclusion(source, reason_chars) or reason
    return f"{tried}{ARROW}{reason}" if reason else tried


def _next_boundary(text: str, start: int) -> int | None:
    """Given a line and a position inside its first clause, return where the next clause
    starts — the clause right after the one that was cut, whose words are the attempt's
    outcome — or None when the clause runs to the end. Never inside a `code span`."""
    for match in _BOUNDARY.finditer(text, start):
        end = match.end()
        if end >= len(text.rstrip()):
            return None
        if text[:end].count("`") % 2 == 0:
            return end
    return None


def _with_conclusion(source: str, reason_chars: int) -> str | None:
    """Given a reason whose first sentence does not fit, return its start and its last
    sentence, "start … conclusion" (None when there is no such last sentence that fits).

    A failed attempt often ends on its verdict ("…so X is not a usable key.", "Rafa confirmed:
    the LB only relays the 502."); the start alone would drop it.
    """
    ends = [match.end() for match in _SENTENCE_END.finditer(source)]
    ends = [end for end in ends if source[end:].strip()]
    if not ends or len(source[: ends[0]].strip()) <= reason_chars:
        return None  # no later sentence, or the reason's own sentence is shown whole
    conclusion = source[ends[-1] :].strip()
    if len(conclusion) > reason_chars or conclusion.count("`") % 2:
        return None
    room = max(reason_chars - len(conclusion) - len(ELLIPSIS), reason_chars // 3)
    head = clause_prefix(source[: ends[-1]].strip(), room).rstrip(" …")
    if not head or head.endswith(conclusion):
        return None
    return f"{head}{ELLIPSIS}{conclusion}"
