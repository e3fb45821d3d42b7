"""Given text, find the credentials in it and return it with each one replaced by
`[redacted:<kind>]`.

Where the patterns come from:
- Token formats with a fixed shape (AWS key ids, GitHub/GitLab/Slack/Stripe/SendGrid/PyPI/…
  tokens, credentials in URLs) are detect-secrets' (Yelp) maintained plugin patterns: we read
  the compiled regular expressions from the plugin classes' `denylist` on first use. Only the
  patterns are used; none of detect-secrets' scanning machinery runs, because its
  `analyze_line` consults process-global settings and may verify secrets over the network,
  neither of which a pure core may do (importing the plugins reads no file). The import costs
  ~0.15 s, so it happens on the first call, not at import time.
- detect-secrets lacks, or matches too little of, what memory notes hold: whole private-key
  blocks (its plugin matches only the BEGIN line), password assignments (`password = …`,
  `密码：…`), `Authorization: Bearer …` headers, current OpenAI / Anthropic / Google /
  Hugging Face / npm key formats, JWTs with their signature, an AWS secret access key
  written next to its name or on its own. Those patterns are written here. Its keyword and
  high-entropy plugins are not used: they flag ordinary hex hashes and identifiers in prose.

- detect-secrets' keyword plugin knows which names hold a secret (`db_pass`, `pwd`,
  `client_key`, `contraseña`, …): its `DENYLIST` supplies the names of the name = value rules,
  whose value grammar (quoted, backticked, bare; Markdown bold labels; placeholders and prose
  kept) is ours, because its own value regexes need code-style quotes and miss `.env` lines.
- Whole values: detect-secrets' fixed-length patterns stop early (its Stripe pattern takes 24
  characters of a ~100-character key), so every token finding is extended to the end of the
  token it starts; a token wrapped over two lines (a hard-wrapped note) is found on a view of
  the text with the line break removed and redacted on both lines.
- Markdown tables: a row whose label cell names a secret (`| password | x |`), or a column
  whose header does, has its value cells redacted.

Overlapping findings merge into one span (kind of the most specific rule), widened so that it
never splits a character from its combining marks. `redact` repeats until nothing is found, so
`redact(redact(x)) == redact(x)`; the markers never match a rule.

Beside those rules, detectors that work by design rather than by list run on every text:
`redact_context` (labels in many languages, names that hold a secret, YAML block scalars,
markup), `redact_command` (flags, tools' password flags, headers of any scheme, cookies),
`redact_shape` (a prefix and a long random run, random tokens, webhook paths, AWS secrets next
to words that say so) and `redact_material` (seed phrases, byte-array and hex private keys, JWK
members). What is random but public (certificates, public keys, data URIs, digests, ARNs) is
kept: `redact_material.public_spans` and `redact_lexicon.public_shape`.

Linear time: every quantifier of a detector is bounded, an anchored rule is tried once per
trigger outside the last match, and a value cut at the bound is carried on to its token's end.

The pattern tables live in `redact_rules.py`; this module is the engine that runs them.
"""

from __future__ import annotations

import re
import string
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cache

from carryd.index.redact_command import find_on_command_lines
from carryd.index.redact_context import find_by_context
from carryd.index.redact_finding import MAX_VALUE, Retries
from carryd.index.redact_lexicon import public_shape
from carryd.index.redact_material import find_material, public_spans
from carryd.index.redact_rules import (
    MARKER_PREFIX,
    REPEATED,
    Rule,
    all_rules,
    all_triggers,
    token_triggers,
)
from carryd.index.redact_shape import find_by_shape
from carryd.index.redact_table import table_secrets

__all__ = ["MARKER_PREFIX", "Secret", "find_secrets", "redact"]

_TOKEN_CHARACTERS = r"A-Za-z0-9_\-./+=:~"
_LONG_TOKEN = re.compile(rf"(?<![{_TOKEN_CHARACTERS}])[{_TOKEN_CHARACTERS}]{{20,}}")

_LEADING_DELIMITERS = frozenset(" \t\r\n\"'=:")
_TRAILING_DELIMITERS = frozenset(" \t\r\n\"'")
_MAX_PASSES = 8


@dataclass(frozen=True)
class Secret:
    """One credential found in a text: its kind and its [start, end) character span."""

    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[Secret]:
    """Given a text, return its secrets ordered by position, non-overlapping."""
    rules = all_rules()
    lowered = text.lower()
    present = frozenset(trigger for trigger in all_triggers() if trigger in lowered)
    found = [
        (start, end, index, rules[index].kind)
        for start, end, index in _find(text, rules, present, None)
    ]
    found.extend((start, end, _TABLE_RANK, kind) for start, end, kind in table_secrets(text))
    # A key wrapped over two lines: only when a token rule's trigger is there at all.
    joined = None if present.isdisjoint(token_triggers()) else _unwrapped(text)
    if joined is not None:
        view, positions, breaks = joined
        ordered_breaks = sorted(breaks)
        token_rules = tuple(rule if rule.extend and rule.triggers else None for rule in rules)
        for start, end, rule_index in _find(view, token_rules, present, breaks):
            # Only what crosses a removed break is new; the rest was found on the text itself.
            first = bisect_right(ordered_breaks, start)
            if first < len(ordered_breaks) and ordered_breaks[first] < end:
                found.append(
                    (positions[start], positions[end - 1] + 1, rule_index, rules[rule_index].kind)
                )
    # Context, command-line, shape and key-material findings rank after every rule.
    detected = [
        *find_by_context(text),
        *find_on_command_lines(text),
        *find_by_shape(text),
        *find_material(text),
    ]
    found.extend((start, end, _DETECTOR_RANK, kind) for start, end, kind in detected)
    return _merge(text, _outside_public(text, found))


# Table findings rank after every rule's, the detectors' after those.
_TABLE_RANK, _DETECTOR_RANK = 10_000, 20_000


def _outside_public(
    text: str, found: list[tuple[int, int, int, str]]
) -> list[tuple[int, int, int, str]]:
    """Given findings, return those not wholly inside a public block (a certificate, a public
    key, a data URI): random-looking, and meant to be read."""
    spans = sorted(public_spans(text))
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = [start for start, _ in merged]
    kept = []
    for finding in found:
        if public_shape(text[finding[0] : finding[1]]):
            continue
        index = bisect_right(starts, finding[0]) - 1
        if index < 0 or finding[1] > merged[index][1]:
            kept.append(finding)
    return kept


def _find(
    text: str,
    rules: tuple[Rule | None, ...],
    present: frozenset[str],
    breaks: frozenset[int] | None,
) -> list[tuple[int, int, int]]:
    """Given a text, rules (None: skipped) and the triggers present in the text, return
    (start, end, rule index) of every match; `breaks` are the positions of removed line breaks
    in an unwrapped view."""
    lowered = text.lower()
    # str.lower() keeps offsets except for a few letters (e.g. "İ"); then anchors are off.
    same_offsets = len(lowered) == len(text)
    runs: list[tuple[int, int]] | None = None
    found: list[tuple[int, int, int]] = []  # (start, end, rule index)
    for rule_index, rule in enumerate(rules):
        if rule is None or (rule.triggers and present.isdisjoint(rule.triggers)):
            continue
        matches: list[re.Match[str]] = []
        if rule.block_of_lines:
            if runs is None:
                runs = [match.span() for match in _LONG_TOKEN.finditer(text)]
            long_runs = [start for start, end in runs if end - start >= 40]
            if len(long_runs) >= 2:
                line_start = text.rfind("\n", 0, long_runs[0]) + 1
                matches.extend(rule.pattern.finditer(text, line_start))
        elif rule.long_token:
            # The secret lies inside a run of 20+ token characters: search only those runs.
            if runs is None:
                runs = [match.span() for match in _LONG_TOKEN.finditer(text)]
            for run_start, run_end in runs:
                matches.extend(rule.pattern.finditer(text, run_start, run_end))
        elif rule.anchored and same_offsets:
            retries = Retries()
            for start in _anchors(lowered, rule.triggers):
                if not retries.allows(start):
                    continue
                # A match never runs past its line nor past the longest value a rule takes.
                line_end = text.find("\n", start, start + _ANCHOR_REACH)
                stop = min(len(text), start + _ANCHOR_REACH) if line_end < 0 else line_end
                match = rule.pattern.match(text, start, stop)
                if match is None:
                    continue
                span = _accepted(text, match, rule, breaks)
                if span is None:
                    retries.refused(match.end())
                else:
                    found.append((*span, rule_index))
                    retries.accepted(span[1])
            continue
        else:
            matches.extend(rule.pattern.finditer(text))
        extended_to = 0  # a match inside the last one's extension adds nothing: linear time
        for match in matches:
            if match.start() < extended_to:
                continue
            span = _accepted(text, match, rule, breaks)
            if span is not None:
                found.append((*span, rule_index))
                extended_to = span[1] if rule.extend else extended_to
    return found


_ANCHOR_REACH = 2 * MAX_VALUE


def _accepted(
    text: str, match: re.Match[str], rule: Rule, breaks: frozenset[int] | None
) -> tuple[int, int] | None:
    """Given a rule's match, return the span of the secret it found (extended to its token's
    end for a token rule), or None when the rule's value check refuses it."""
    start, end = _secret_span(match, rule.group)
    if breaks is not None:
        # A match may run on past a removed break only into the rest of a key.
        ordered = _sorted_breaks(breaks)
        for index in range(bisect_right(ordered, start), bisect_left(ordered, end)):
            if not _continues(text, ordered[index]):
                end = ordered[index]
                break
    if (
        start >= end
        or (rule.accept is not None and not rule.accept(text[start:end]))
        or REPEATED.search(text, start, end)
    ):
        return None
    if rule.extend:
        end = _token_end(text, end, breaks)
    return start, end


@cache
def _sorted_breaks(breaks: frozenset[int]) -> list[int]:
    return sorted(breaks)


_WHOLE_TOKEN = frozenset(string.ascii_letters + string.digits + "_-")


def _token_end(text: str, end: int, breaks: frozenset[int] | None) -> int:
    """Given a token finding's end, return the end of the token it lies in: past letters,
    digits, `_` and `-`, and past a removed line break only when what follows it looks like
    the rest of a key, not a word (see `_continues`)."""
    while end < len(text) and text[end] in _WHOLE_TOKEN:
        if breaks is not None and end in breaks and not _continues(text, end):
            break
        end += 1
    return end


def _continues(text: str, position: int) -> bool:
    """Given a position after a removed line break, return whether the run of token characters
    there looks like a key's continuation: 6+ characters with a digit, or mixed case with an
    inner capital (an all-caps word such as a list of names is not)."""
    end = position
    while end < len(text) and text[end] in _WHOLE_TOKEN:
        end += 1
    piece = text[position:end]
    return len(piece) >= 6 and (
        any(character.isdigit() for character in piece)
        or (
            any(character.isupper() for character in piece[1:])
            and any(character.islower() for character in piece)
        )
    )


# A line break between two token characters, with the indentation (and quote marker) of the
# next line: a hard wrap inside a key.
_WRAP = re.compile(r"(?<=[A-Za-z0-9_\-+/=])[ \t]*\r?\n[ \t>]*(?=[A-Za-z0-9_\-+/=])")


def _unwrapped(text: str) -> tuple[str, list[int], frozenset[int]] | None:
    """Given a text, return it with every line break inside a run of token characters removed,
    each view position's offset in the text, and the view positions where a break was (None
    when the text has no such break)."""
    pieces: list[str] = []
    positions: list[int] = []
    breaks: set[int] = set()
    last = 0
    for match in _WRAP.finditer(text):
        pieces.append(text[last : match.start()])
        positions.extend(range(last, match.start()))
        breaks.add(len(positions))
        last = match.end()
    if not breaks:
        return None
    pieces.append(text[last:])
    positions.extend(range(last, len(text)))
    return "".join(pieces), positions, frozenset(breaks)


def _anchors(lowered: str, triggers: tuple[str, ...]) -> list[int]:
    """Given a lowercase text and triggers, return the sorted positions of the triggers."""
    starts: set[int] = set()
    for trigger in triggers:
        position = lowered.find(trigger)
        while position >= 0:
            starts.add(position)
            position = lowered.find(trigger, position + 1)
    return sorted(starts)


def redact(text: str) -> str:
    """Given a text, return it with every secret replaced by `[redacted:<kind>]`."""
    for _ in range(_MAX_PASSES):
        secrets = find_secrets(text)
        if not secrets:
            return text
        pieces: list[str] = []
        position = 0
        for secret in secrets:
            pieces.append(text[position : secret.start])
            pieces.append(f"{MARKER_PREFIX}{secret.kind}]")
            position = secret.end
        pieces.append(text[position:])
        text = "".join(pieces)
    return text


def _secret_span(match: re.Match[str], group: bool) -> tuple[int, int]:
    if group and match.re.groups:
        for group_index in range(1, match.re.groups + 1):
            start, end = match.span(group_index)
            if start < end:
                return start, end
        return 0, 0
    # Some detect-secrets patterns include the delimiters around the token (`(?:\s|=|:|"|^)`).
    start, end = match.span()
    text = match.string
    while start < end and text[start] in _LEADING_DELIMITERS:
        start += 1
    while end > start and text[end - 1] in _TRAILING_DELIMITERS:
        end -= 1
    return start, end


def _merge(text: str, found: list[tuple[int, int, int, str]]) -> list[Secret]:
    """Given findings (start, end, rank, kind), return them as secrets: overlapping ones
    merged (kind of the best-ranked, i.e. most specific, rule), each widened to whole
    characters, and one cut at the longest value a rule takes carried on to its token's end."""
    merged: list[Secret] = []
    current: tuple[int, int, int, str] | None = None
    for start, end, rank, kind in sorted(_whole_characters(text, span) for span in found):
        if current is not None and start < current[1]:
            best = min((current[2], current[3]), (rank, kind))
            current = (current[0], max(current[1], end), *best)
            continue
        if current is not None:
            merged.append(Secret(current[3], current[0], current[1]))
        current = (start, end, rank, kind)
    if current is not None:
        merged.append(Secret(current[3], current[0], current[1]))
    return [_to_token_end(text, secret, merged, index) for index, secret in enumerate(merged)]


def _to_token_end(text: str, secret: Secret, merged: list[Secret], index: int) -> Secret:
    """Given a secret as long as a bounded rule could take, return it carried on to the next
    space, never into the next secret."""
    if secret.end - secret.start < MAX_VALUE:
        return secret
    limit = merged[index + 1].start if index + 1 < len(merged) else len(text)
    end = secret.end
    while end < limit and not text[end].isspace():
        end += 1
    # The space it stops at may be joined to what came before (`…\u200d `): whole characters.
    _, end, _, _ = _whole_characters(text, (secret.start, end, 0, secret.kind))
    return Secret(secret.kind, secret.start, end)


def _whole_characters(text: str, span: tuple[int, int, int, str]) -> tuple[int, int, int, str]:
    """Given a span, return it widened so that it neither starts on nor stops before a mark
    that belongs to the character next to it (combining marks, variation selectors, a
    zero-width joiner and what it joins, emoji modifiers)."""
    start, end, rank, kind = span
    while start > 0 and _attaches(text[start]):
        start -= 1
    while end < len(text) and (_attaches(text[end]) or text[end - 1] == "\u200d"):
        end += 1
    return start, end, rank, kind


def _attaches(character: str) -> bool:
    """Given a character, return whether it is drawn as part of the one before it."""
    return (
        unicodedata.category(character) in ("Mn", "Mc", "Me")
        or character == "\u200d"
        or "\ufe00" <= character <= "\ufe0f"
        or "\U0001f3fb" <= character <= "\U0001f3ff"
        or "\U000e0020" <= character <= "\U000e007f"
    )
