"""One credential found by a context, shape or material detector: its [start, end) span and
its kind. Kept in a module of its own so the detectors (`redact_context`, `redact_shape`,
`redact_material`) and the engine (`redact`) share it without importing each other."""

from __future__ import annotations

import re
from typing import NamedTuple


class Finding(NamedTuple):
    """A credential's [start, end) character span in a text and its kind."""

    start: int
    end: int
    kind: str


# The longest value a context rule takes: past this a value is cut, and redacted to its
# token's end by the engine. Bounding every quantifier keeps each match attempt constant-time.
MAX_VALUE = 400

# A value after a label or a name: backticked, double- or single-quoted, or bare.
VALUE = (
    r"(?:`([^`\n]{1,400})`|\"([^\"\n]{1,400})\"|'([^'\n]{1,400})'"
    r"|([^\s\"'`,;，。；<>()\[\]{}|]{1,400}))"
)


class Value(NamedTuple):
    """A value's [start, end) span, its text, and whether it was quoted or backticked."""

    start: int
    end: int
    text: str
    quoted: bool


# A value attached to a flag (`-pSECRET`): quoted or bare, never a backticked span (the
# backtick after `mysql -p` in prose closes the inline code). Group one never takes part.
ATTACHED_VALUE = (
    r"(?:((?!))|\"([^\"\n]{1,400})\"|'([^'\n]{1,400})'|([^\s\"'`,;，。；<>()\[\]{}|]{1,400}))"
)


def value_span(match: re.Match[str], first_group: int) -> Value | None:
    """Given a match of `VALUE` (or `ATTACHED_VALUE`) whose groups start at `first_group`,
    return the value (trailing sentence punctuation dropped from a bare value), or None."""
    for offset in range(4):
        start, end = match.span(first_group + offset)
        if start < end:
            value = match.string[start:end]
            if offset == 3:
                stripped = value.rstrip(".,:;)")
                end -= len(value) - len(stripped)
                value = stripped
            return Value(start, end, value, offset < 3) if value else None
    return None


class Retries:
    """Which starts (of labels, names, triggers) inside a value already judged to try: every
    one past the value, and at most `limit` inside a refused one (`bold-password: **password**:
    X` holds a second label whose value is the secret); none inside an accepted one. This keeps
    a line such as `"token=" * N`, where every value holds the next start, linear in time."""

    def __init__(self, limit: int = 2) -> None:
        self.accepted_end = 0
        self.refused_end = 0
        self.tries = 0
        self.limit = limit

    def allows(self, start: int) -> bool:
        """Given a start, return whether to try it, and count it."""
        if start < self.accepted_end:
            return False
        if start >= self.refused_end:
            self.tries = 0
            return True
        self.tries += 1
        return self.tries <= self.limit

    def accepted(self, end: int) -> None:
        self.accepted_end = max(self.accepted_end, end)

    def refused(self, end: int) -> None:
        self.refused_end = max(self.refused_end, end)
