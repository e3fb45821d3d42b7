"""Markdown tables: a row whose label cell names a secret (`| password | x |`), or a column
whose header does (`| host | Passwort |`), has its value cells redacted. Labels are
detect-secrets' keyword names, our own, and the many-language labels of `redact_lexicon`."""

from __future__ import annotations

import re
from functools import cache

from carryd.index.redact_finding import Finding
from carryd.index.redact_labels import PASSWORD_LABELS, TOKEN_LABELS
from carryd.index.redact_rules import CJK_NAMES, password_value, secret_names, token_value

__all__ = ["table_secrets"]


_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")


@cache
def _table_labels() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Given nothing, return (password label, token label): a whole cell naming a secret."""
    passwords, tokens = secret_names()
    markup = r"[*_`]{0,3}"

    def label(names: str) -> re.Pattern[str]:
        return re.compile(rf"(?i)^{markup}(?:{names})s?{markup}:?{markup}$")

    cjk = "|".join(CJK_NAMES)

    def words(labels: tuple[str, ...]) -> str:
        return "|".join(re.escape(label).replace(r"\ ", r"[ _-]?") for label in labels)

    return (
        label(passwords + rf"|\w{{0,6}}(?:{cjk})|" + words(PASSWORD_LABELS)),
        label(tokens + "|" + words(TOKEN_LABELS)),
    )


def table_secrets(text: str) -> list[Finding]:
    """Given a text, return every table cell that holds a secret by its row label or its
    column header."""
    if "|" not in text:
        return []
    password_label, token_label = _table_labels()

    def label_kind(cell: str) -> int | None:
        if password_label.match(cell):
            return 10_000
        if token_label.match(cell):
            return 10_001
        return None

    def secret_value(cell: str, kind: int) -> bool:
        value = cell.strip("`")
        if not value or any(character.isspace() for character in value):
            return False
        accepted: bool = password_value(value) if kind == 10_000 else token_value(value)
        return accepted

    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    found: list[Finding] = []
    columns: dict[int, int] = {}  # column index -> kind, for the table being read
    for number, line in enumerate(lines):
        if "|" not in line:
            columns = {}
            continue
        cells = _cells(line, offsets[number])
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if _TABLE_SEPARATOR.match(following) and "|" in following:
            # Keyed from the right: text before a row's first pipe (a list marker, a label)
            # may add a cell on the left of the header only.
            columns = {
                index - len(cells): kind
                for index, (_, _, cell) in enumerate(cells)
                if (kind := label_kind(cell)) is not None
            }
            continue  # a header row holds labels, not values
        if _TABLE_SEPARATOR.match(line):
            continue
        for index, (start, end, cell) in enumerate(cells):
            kind = columns.get(index - len(cells))
            if kind is None and index > 0:
                kind = label_kind(cells[index - 1][2])
            if kind is not None and secret_value(cell, kind):
                found.append(Finding(start, end, _TABLE_KINDS[kind]))
    return found


def _cells(line: str, offset: int) -> list[tuple[int, int, str]]:
    """Given a table line and its offset, return (start, end, stripped text) of its cells."""
    cells: list[tuple[int, int, str]] = []
    bounds = [index for index, character in enumerate(line) if character == "|"]
    if not bounds:
        return cells
    edges = bounds if line.strip().startswith("|") else [-1, *bounds]
    if not line.strip().endswith("|"):
        edges = [*edges, len(line)]
    for left, right in zip(edges, edges[1:], strict=False):
        raw = line[left + 1 : right]
        stripped = raw.strip()
        if stripped:
            start = left + 1 + raw.index(stripped)
            cells.append((offset + start, offset + start + len(stripped), stripped))
        else:
            cells.append((offset + left + 1, offset + left + 1, ""))
    return cells


_TABLE_KINDS = {10_000: "password", 10_001: "generic_api_key"}
