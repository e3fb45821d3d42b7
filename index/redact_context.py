"""Credentials found by their context: a label in any of many languages (`mot de passe :`,
`Passwort:`, `비밀번호:`, `heslo X`), a name that says it holds a secret (`datadog.apiKey=`,
`license-key:`, `<password>…</password>`), a YAML block scalar under such a name, and the
lines a label introduces (`recovery codes:` and a list). Command lines, headers and cookies are
in `redact_command`. Every pattern is bounded, so each match attempt costs at most a few
hundred steps and a text is scanned in linear time.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from carryd.index.redact_finding import VALUE, Finding, Value, value_span
from carryd.index.redact_lexicon import (
    NOT_CREDENTIAL_BEFORE_KEY,
    PASSWORD_LABELS,
    TOKEN_LABELS,
    credential_value,
    random_like,
    secret_like,
    secret_name,
)

__all__ = ["find_by_context"]


def _wide(character: str) -> bool:
    return (
        unicodedata.east_asian_width(character) in ("W", "F") or "\u0e00" <= character <= "\u0e7f"
    )


def _label_alternation(labels: tuple[str, ...]) -> str:
    """Given labels, return a regex alternation: words in scripts with spaces are whole words,
    CJK and Thai labels may stand inside a run of letters."""
    pieces = []
    for label in sorted(set(labels), key=lambda label: (-len(label), label)):
        escaped = re.escape(label).replace(r"\ ", r"[ _-]?")
        pieces.append(escaped if _wide(label[0]) else rf"(?<!\w){escaped}(?!\w)")
    return "|".join(pieces)


@cache
def _label_pattern() -> re.Pattern[str]:
    return re.compile(
        rf"(?i)(?P<password>{_label_alternation(PASSWORD_LABELS)})"
        rf"|(?P<token>{_label_alternation(TOKEN_LABELS)})"
    )


# After a label: a short filler (`for the server account`, `(valid 90 days)`), a separator and
# the value; or the value right after the label.
_SEPARATED = re.compile(
    r"[^\n:：=。，;；`\"@/]{0,48}?(?:[:：=]|→|->|\s(?:is|est|ist|es|é|er|är|jest|je|là|là)\s|是|为|為|は)"
    r"[^\S\n]{0,3}[*_]{0,2}[^\S\n]{0,2}" + VALUE
)
_ADJACENT = re.compile(r"[^\S\n]{1,3}" + VALUE)
_LINE_END = re.compile(r"[^\n:：=。，;；`\"]{0,48}?[:：][^\S\n]*(?=\n)")


def _labelled(text: str) -> list[Finding]:
    """Given a text, return the values that follow a password or token label."""
    found: list[Finding] = []
    covered = 0
    for match in _label_pattern().finditer(text):
        if match.start() < covered:
            continue
        is_password = match.lastgroup == "password"
        if not is_password and _not_a_credential_key(text, match):
            continue
        position = match.end()
        span = None
        strong = False
        separated = _SEPARATED.match(text, position)
        if separated is not None:
            span = value_span(separated, 1)
        if span is None or not _acceptable(span, is_password, strong=False):
            adjacent = _ADJACENT.match(text, position)
            span = value_span(adjacent, 1) if adjacent is not None else None
            strong = True
        if span is not None and _acceptable(span, is_password, strong):
            kind = "password" if is_password else "generic_api_key"
            found.append(Finding(span[0], span[1], kind))
            covered = span[1]
            continue
        introduced = _LINE_END.match(text, position)
        if introduced is not None:
            found.extend(_introduced_lines(text, introduced.end() + 1))
    return found


def _not_a_credential_key(text: str, match: re.Match[str]) -> bool:
    """Given a token-label match, return whether it is the word `key` of a compound that is
    not a credential (`cache key`, `primary key`, `public key`)."""
    if not match.group().lower().endswith(("key", "키", "キー")):
        return False
    before = text[max(0, match.start() - 24) : match.start()]
    return NOT_CREDENTIAL_BEFORE_KEY.search(before.rstrip()) is not None


def _acceptable(span: Value, is_password: bool, strong: bool) -> bool:
    """Given a value after a label, whether it is the secret: a password-like value after a
    separator; a value with a digit (password) or a random one (token) right after a label."""
    if strong and not is_password:
        return random_like(span.text, 16)
    return credential_value(span.text, span.quoted, is_password)


_LIST_MARKER = re.compile(
    r"^[ \t]*(?:>[ \t]*)*(?:[-*+][ \t]+|\d{1,3}[.)][ \t]+)?`?([^\s`]{6,400})`?[ \t]*$"
)


def _introduced_lines(text: str, start: int) -> list[Finding]:
    """Given the start of the lines after `label:` at a line's end, return the secret-looking
    items of the list or lines that follow (recovery codes, a key on its own line)."""
    found: list[Finding] = []
    position = start
    seen_content = False
    for _ in range(24):
        if position >= len(text):
            break
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        line = text[position:end]
        if not line.strip():
            if seen_content:
                break
        else:
            item = _LIST_MARKER.match(line)
            if item is None or not secret_like(item.group(1)):
                break
            seen_content = True
            found.append(Finding(position + item.start(1), position + item.end(1), "password"))
        position = end + 1
    return found


# `name = value`, `name: value`, `"name": "value"`, `name => value`; the name is checked by
# `secret_name` before the value is looked at.
_NAME_THEN_SIGN = re.compile(
    r"(?<![\w.\-])([A-Za-z_][\w.\-]{0,62})[\"']?[^\S\n]{0,3}(?:=>|:=|=|:(?!//)|：)[^\S\n]{0,3}"
)
_VALUE_HERE = re.compile(VALUE)
_WEAK_PARTS = ("key", "auth", "sid", "pin", "salt", "seed", "license", "licence", "cookie")


def _assigned(text: str) -> list[Finding]:
    """Given a text, return the values assigned to names that say they hold a secret."""
    found: list[Finding] = []
    covered = 0
    for match in _NAME_THEN_SIGN.finditer(text):
        if match.start() < covered or not secret_name(match.group(1)):
            continue
        value = _VALUE_HERE.match(text, match.end())
        span = value_span(value, 1) if value is not None else None
        if span is None or span.text.endswith((":", "|", ">", ">-", "|-")):
            continue
        name = match.group(1).lower()
        weak = not any(
            strong in name for strong in ("pass", "pwd", "secret", "token", "mnemonic", "cred")
        ) and any(part in name for part in _WEAK_PARTS)
        accepted = (
            random_like(span.text, 12)
            if weak
            else credential_value(span.text, span.quoted, "pass" in name or "pwd" in name)
        )
        if accepted:
            found.append(Finding(span[0], span[1], "password" if "pass" in name else "secret"))
            covered = span[1]
    return found


_BLOCK_SCALAR = re.compile(
    r"(?m)^([ \t]*)(?:-[ \t]+)?[\"']?([A-Za-z_][\w.\-]{0,62})[\"']?[ \t]*:[ \t]*[|>][+-]?\d?[ \t]*$"
)


def _block_scalars(text: str) -> list[Finding]:
    """Given a text, return the lines of each YAML block scalar (`password: |`,
    `client_secret: >-`) under a name that says it holds a secret."""
    found: list[Finding] = []
    for match in _BLOCK_SCALAR.finditer(text):
        if not secret_name(match.group(2)):
            continue
        indent = len(match.group(1).expandtabs())
        position = match.end() + 1
        while position < len(text):
            end = text.find("\n", position)
            end = len(text) if end < 0 else end
            line = text[position:end]
            stripped = line.strip()
            if stripped and len(line) - len(line.lstrip()) <= indent:
                break
            if stripped:
                offset = position + line.index(stripped)
                found.append(Finding(offset, offset + len(stripped), "secret"))
            position = end + 1
    return found


_XML_ELEMENT = re.compile(
    r"<([A-Za-z][\w.:\-]{0,62})(?:[ \t][^<>\n]{0,200})?>([^<>\n]{1,400})</\1>"
)
_XML_PAIR = re.compile(
    r"(?i)\b(?:key|name)[ \t]*=[ \t]*\"([^\"\n]{1,80})\""
    r"[ \t]+value[ \t]*=[ \t]*\"([^\"\n]{1,400})\""
)


def _markup(text: str) -> list[Finding]:
    """Given a text, return the values of XML elements (`<password>…</password>`) and
    key/value attribute pairs (`<add key="ApiKey" value="…"/>`) whose name holds a secret."""
    if "<" not in text:
        return []
    found: list[Finding] = []
    for pattern in (_XML_ELEMENT, _XML_PAIR):
        for match in pattern.finditer(text):
            name, value = match.group(1), match.group(2).strip()
            if secret_name(name.rsplit(":", 1)[-1]) and credential_value(value, True, True):
                found.append(Finding(match.start(2), match.end(2), "secret"))
    return found


def find_by_context(text: str) -> list[Finding]:
    """Given a text, return the credentials that labels, secret names, block scalars and
    markup point at."""
    return [*_labelled(text), *_assigned(text), *_block_scalars(text), *_markup(text)]
