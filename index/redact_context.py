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

from carryd.index.redact_finding import VALUE, Finding, Retries, Value, value_span
from carryd.index.redact_labels import (
    COMPOUND_TAILS,
    NOT_CREDENTIAL_BEFORE_KEY,
    PASSWORD_LABELS,
    TOKEN_LABELS,
)
from carryd.index.redact_lexicon import (
    credential_value,
    has_digit,
    path_like,
    random_like,
    secret_like,
    secret_name,
    strong_password,
    words_joined,
)

__all__ = ["find_by_context"]


def _wide(character: str) -> bool:
    return (
        unicodedata.east_asian_width(character) in ("W", "F") or "\u0e00" <= character <= "\u0e7f"
    )


@cache
def _labels() -> tuple[dict[str, tuple[tuple[str, bool], ...]], tuple[tuple[str, bool], ...]]:
    """Given nothing, return the labels in two forms: by first word (lowercase label, is a
    password label) for labels made of letters in scripts that separate words, and a list of
    the others (CJK, Thai, Devanagari, mixed), which stand inside runs of letters. A label of
    several words is also taken joined by `_`, `-` or nothing."""
    variants: dict[str, bool] = {}
    for is_password, kind_labels in ((False, TOKEN_LABELS), (True, PASSWORD_LABELS)):
        for label in kind_labels:
            lowered = label.lower()
            for joined in (lowered, lowered.replace(" ", "_"), lowered.replace(" ", "-")):
                variants.setdefault(joined, is_password)
            if not _wide(label[0]):
                variants.setdefault(lowered.replace(" ", ""), is_password)
    by_first_word: dict[str, list[tuple[str, bool]]] = {}
    inside_words: list[tuple[str, bool]] = []
    for label, is_password in variants.items():
        words = _LETTERS.findall(label)
        if words and "".join(words) == re.sub(r"[ _-]", "", label) and not _wide(label[0]):
            by_first_word.setdefault(words[0], []).append((label, is_password))
        else:
            inside_words.append((label, is_password))
    ordered = {
        word: tuple(sorted(labels, key=lambda item: -len(item[0])))
        for word, labels in by_first_word.items()
    }
    return ordered, tuple(inside_words)


_LETTERS = re.compile(r"[^\W\d_]+")


def _label_at(
    lowered: str, position: int, candidates: tuple[tuple[str, bool], ...]
) -> list[tuple[int, int, bool]]:
    """Given a lowercase text, a word start and the labels that begin with that word (longest
    first), return the one that stands there as whole words, if any."""
    for label, is_password in candidates:
        end = position + len(label)
        if lowered.startswith(label, position) and not (
            end < len(lowered) and lowered[end].isalnum()
        ):
            return [(position, end, is_password)]
    return []


def _label_hits(text: str) -> list[tuple[int, int, bool]]:
    """Given a text, return (start, end, is a password label) of every label in it, sorted,
    a label inside a longer one left out. Words are looked up in a table (a regex alternation
    of a few hundred labels costs twenty times more on prose); labels that stand inside runs of
    letters are searched for only in a text that is not ASCII."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a letter whose lowercase is longer (`İ`): offsets differ
        lowered = "".join(character.lower()[0] for character in text)
    by_first_word, inside_words = _labels()
    hits: list[tuple[int, int, bool]] = []
    for word in by_first_word.keys() & set(_LETTERS.findall(lowered)):
        position = lowered.find(word)
        while position >= 0:
            if not (position > 0 and lowered[position - 1].isalnum()):
                hits.extend(_label_at(lowered, position, by_first_word[word]))
            position = lowered.find(word, position + 1)
    if not text.isascii():
        for label, is_password in inside_words:
            position = lowered.find(label)
            while position >= 0:
                hits.append((position, position + len(label), is_password))
                position = lowered.find(label, position + 1)
    hits.extend(_compound_tails(lowered))
    hits.sort(key=lambda hit: (hit[0], -hit[1]))
    kept: list[tuple[int, int, bool]] = []
    for hit in hits:
        if not kept or hit[0] >= kept[-1][1]:
            kept.append(hit)
    return kept


def _compound_tails(lowered: str) -> list[tuple[int, int, bool]]:
    """Given a lowercase text, return the labels that end a longer word (`…schlüssel`,
    `…passwort`): the word is the label's span, so a value after it is taken as after the
    label itself."""
    hits: list[tuple[int, int, bool]] = []
    for tail, is_password in COMPOUND_TAILS:
        position = lowered.find(tail)
        while position >= 0:
            end = position + len(tail)
            if (
                position > 0
                and lowered[position - 1].isalpha()
                and not (end < len(lowered) and lowered[end].isalnum())
            ):
                start = position
                while start > 0 and position - start < 40 and lowered[start - 1].isalpha():
                    start -= 1
                hits.append((start, end, is_password))
            position = lowered.find(tail, end)
    return hits


# After a label: a short filler (`for the server account`, `(valid 90 days)`), a separator and
# the value; or the value right after the label.
# The verbs that stand for a colon: "is" in English, Dutch, French, German, Spanish,
# Portuguese, Italian, Swedish, Norwegian, Danish, Polish, Czech, Slovak, Croatian, Greek.
_IS = r"\s(?:is|est|ist|es|é|è|er|är|jest|je|to|είναι|là)\s"
_AFTER_SEPARATOR = r"[^\S\n]{0,3}[*_]{0,2}[^\S\n]{0,2}" + VALUE
_SEPARATED = re.compile(
    # Right after the label any separator; after a filler a colon only with a space after it
    # (`key arn:aws:…` is not `key: arn…`).
    r"(?:[^\S\n]{0,3}(?:[:：=]|→|->|是|为|為|は)"
    rf"|[^\n:：=。，;；`\"@/]{{1,48}}?(?:[:：](?=\s)|=|→|->|{_IS}|是|为|為|は))" + _AFTER_SEPARATOR
)
_ADJACENT = re.compile(r"[^\S\n]{1,3}" + VALUE)
# A label, up to three short words, a value (`heslo k routeru X`): taken only when the value
# is a strong password (see `_acceptable`).
_NEAR = tuple(
    re.compile(rf"(?:[^\S\n]{{1,3}}[^\s:：=`\"'.,;()]{{1,20}}){{{words}}}[^\S\n]{{1,3}}" + VALUE)
    for words in (1, 2, 3)
)
_LINE_END = re.compile(r"[^\n:：=。，;；`\"]{0,48}?[:：][^\S\n]*(?=\n)")


def _labelled(text: str) -> list[Finding]:
    """Given a text, return the values that follow a password or token label."""
    found: list[Finding] = []
    retries = Retries()
    for start, position, is_password in _label_hits(text):
        if not retries.allows(start):
            continue
        if not is_password and _not_a_credential_key(text, start, position):
            continue
        span, examined_end = _label_value(text, position, is_password)
        if span is not None:
            found.append(
                Finding(span.start, span.end, "password" if is_password else "generic_api_key")
            )
            retries.accepted(span.end)
            continue
        retries.refused(examined_end)
        introduced = _LINE_END.match(text, position)
        if introduced is not None:
            codes = "code" in text[start:position].lower()
            lines = _introduced_lines(text, introduced.end() + 1, codes)
            found.extend(lines)
            if lines:
                retries.accepted(lines[-1].end)
    return found


def _label_value(text: str, position: int, is_password: bool) -> tuple[Value | None, int]:
    """Given the end of a label, return the secret value that follows it (after a separator,
    right after the label, or a few words on for a password) or None, and how far was read."""
    examined_end = position
    candidates = [(_SEPARATED, False, False), (_ADJACENT, True, False)]
    candidates += [(near, True, True) for near in _NEAR] if is_password else []
    for pattern, strong, far in candidates:
        match = pattern.match(text, position)
        span = value_span(match, 1) if match is not None else None
        if span is None:
            continue
        examined_end = max(examined_end, span.end)
        # A few words away from its label, only a random-looking value is taken
        # (`password: kept in 1Password` names a vault, not a password).
        if _acceptable(span, is_password, strong) and (not far or random_like(span.text, 10)):
            return span, examined_end
    return None, examined_end


def _not_a_credential_key(text: str, start: int, end: int) -> bool:
    """Given a token label's span, return whether it is the word `key` of a compound that is
    not a credential (`cache key`, `primary key`, `public key`)."""
    if not text[start:end].lower().endswith(("key", "키", "キー")):
        return False
    before = text[max(0, start - 24) : start].rstrip(" _-").rsplit(None, 1)
    return bool(before) and before[-1].lower().rsplit("_", 1)[-1] in NOT_CREDENTIAL_BEFORE_KEY


def _acceptable(span: Value, is_password: bool, strong: bool) -> bool:
    """Given a value after a label, whether it is the secret: a password-like value after a
    separator; a value with a digit (password) or a random one (token) right after a label."""
    if strong and not is_password:
        return random_like(span.text, 16)
    if strong:
        return strong_password(span.text, span.quoted)
    return credential_value(span.text, span.quoted, is_password)


_LIST_MARKER = re.compile(
    r"^[ \t]*(?:>[ \t]*)*(?:[-*+][ \t]+|\d{1,3}[.)][ \t]+)?`?([^\s`]{6,400})`?[ \t]*$"
)


# One backup or recovery code: groups of letters and digits (`9486-6388`, `k3j2-9x0q`).
_CODE = re.compile(r"[0-9A-Za-z]{3,10}(?:-[0-9A-Za-z]{3,10}){0,3}")


def _code(item: str) -> bool:
    """Given a list item under a codes label (`backup codes:`), return whether it is a code:
    grouped letters and digits, 6+ of them, a digit among them."""
    return (
        _CODE.fullmatch(item) is not None
        and sum(character.isalnum() for character in item) >= 6
        and has_digit(item)
    )


def _introduced_lines(text: str, start: int, codes: bool = False) -> list[Finding]:
    """Given the start of the lines after `label:` at a line's end, return the secret-looking
    items of the list or lines that follow (recovery codes, a key on its own line); under a
    label that names codes, short numeric codes too."""
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
            if item is None or not (secret_like(item.group(1)) or (codes and _code(item.group(1)))):
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
    retries = Retries()
    for match in _NAME_THEN_SIGN.finditer(text):
        if not secret_name(match.group(1)) or not retries.allows(match.start()):
            continue
        value = _VALUE_HERE.match(text, match.end())
        span = value_span(value, 1) if value is not None else None
        if span is None:
            continue
        retries.refused(span.end)
        if span.text.endswith((":", "|", ">", ">-", "|-")):
            continue
        name = match.group(1).lower()
        if name.endswith("key") and _not_a_credential_key(text, match.start(1), match.end(1)):
            continue
        weak = not any(
            strong in name for strong in ("pass", "pwd", "secret", "token", "mnemonic", "cred")
        ) and any(part in name for part in _WEAK_PARTS)
        accepted = (
            random_like(span.text, 12) and not path_like(span.text)
            if weak
            else credential_value(span.text, span.quoted, "pass" in name or "pwd" in name)
        )
        if accepted:
            found.append(Finding(span.start, span.end, "password" if "pass" in name else "secret"))
            retries.accepted(span.end)
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
    patterns = (_XML_ELEMENT, _XML_PAIR) if "value" in text.lower() else (_XML_ELEMENT,)
    for pattern in patterns:
        for match in pattern.finditer(text):
            name, value = match.group(1), match.group(2).strip()
            if secret_name(name.rsplit(":", 1)[-1]) and credential_value(value, True, True):
                found.append(Finding(match.start(2), match.end(2), "secret"))
    return found


# A quoted secret name and a quoted value beside it, as in calls and maps:
# `getenv("API_TOKEN", "…")`, `Map.of("password", "…")`, `("apiKey", "…")`.
_QUOTED_PAIR = re.compile(
    r"([\"'])([A-Za-z_][\w.\-]{1,62})\1[ \t]*,[ \t]*([\"'])([^\"'\n]{6,400})\3"
)
# A code-like secret name, a space, a random value: `set aws_secret_access_key …`,
# `requirepass …` (redis.conf), `token_value …`.
_NAME_SPACE_VALUE = re.compile(
    r"(?<![\w.\-])([A-Za-z][A-Za-z0-9]{0,40}(?:[_.][A-Za-z0-9]{1,40}){1,6}"
    r"|[a-z][a-z0-9]{0,20}(?:[A-Z][a-z0-9]{1,20}){1,4}|requirepass|masterauth)"
    r"[ \t]{1,3}([^\s\"'`]{8,400})"
)


def _pairs(text: str) -> list[Finding]:
    """Given a text, return values beside a quoted secret name, and random values a space
    after a code-like secret name."""
    found: list[Finding] = []
    for match in _QUOTED_PAIR.finditer(text):
        name, value = match.group(2), match.group(4)
        if secret_name(name) and credential_value(value, True, "pass" in name.lower()):
            found.append(Finding(match.start(4), match.end(4), "secret"))
    for match in _NAME_SPACE_VALUE.finditer(text):
        name, value = match.group(1), match.group(2)
        if secret_name(name) and (random_like(value, 12) or strong_password(value, False)):
            found.append(Finding(match.start(2), match.end(2), "secret"))
    return found


# Words that say someone logged in, in the languages notes are written in: a quoted password
# on their line is what they logged in with (`logged into the NAS as admin, "…"`, `mit "…"
# angemeldet`).
# Matched on the lowercase text, word boundaries checked in code: a pattern that starts with
# `\b` or `(?i)` costs ten times more on prose.
_LOGIN = re.compile(
    r"log(?:ged|s)?[ \t]?(?:in|on)(?:to)?|sign(?:ed|s)?[ \t]?in(?:to)?|creds|anmeld|angemeldet|"
    r"eingeloggt|connecté|connexion|iniciar sesión|inicié sesión|entrei|accedi|登录|登入|ログイン|"
    r"로그인|вош[её]л|войти|залогин|zalogowa"
)
# Login words that end a word (`login`, not `loginName`; `creds`, not `credsFile`).
_WHOLE_LOGIN_WORDS = ("log", "sign", "creds", "connexion", "entrei")
_QUOTED = re.compile(r"[\"'`“‘«]([^\s\"'`“”‘’«»]{8,64})[\"'`”’»]")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
# A symbol other than the separators of names (`Dashboard-v2`, `api_v2.1` are names).
_SYMBOL_INSIDE = re.compile(r"[^0-9A-Za-z_.\-]")


def _login_quoted(text: str) -> list[Finding]:
    """Given a text, return the quoted passwords within 120 characters of a word saying someone
    logged in, on its line: a digit, a letter and a symbol other than `-_.` inside, or random
    and 16+ long (`Viewer2024` and `Dashboard-v2` are names). An address, a path or words
    joined by dots (a host, a version) are none."""
    found: list[Finding] = []
    reached = 0  # each stretch of a line is read once: linear time
    lowered = text.lower()
    if len(lowered) != len(text):  # a letter whose lowercase is longer (`İ`): offsets differ
        lowered = "".join(character.lower()[0] for character in text)
    for login in _LOGIN.finditer(lowered):
        word = login.group()
        if not _wide(word[0]) and login.start() > 0 and lowered[login.start() - 1].isalnum():
            continue
        end = login.end()
        if word.startswith(_WHOLE_LOGIN_WORDS) and end < len(text) and lowered[end].isalnum():
            continue
        line_start = text.rfind("\n", max(0, login.start() - 120), login.start()) + 1
        start = max(line_start, login.start() - 120, reached)
        line_end = text.find("\n", login.end(), login.end() + 120)
        stop = min(len(text), login.end() + 120) if line_end < 0 else line_end
        reached = max(reached, stop)
        for match in _QUOTED.finditer(text, start, stop):
            value = match.group(1)
            if "@" in value or "/" in value or "\\" in value or words_joined(value):
                continue
            if _TIMESTAMP.search(value):
                continue  # a run id (`scheduled__2024-11-30T23:30:00+00:00`), not a password
            symbol = _SYMBOL_INSIDE.search(value, 1, len(value) - 1) is not None
            if strong_password(value, True) and (symbol or random_like(value, 16)):
                found.append(Finding(match.start(1), match.end(1), "password"))
    return found


def find_by_context(text: str) -> list[Finding]:
    """Given a text, return the credentials that labels, secret names, block scalars and
    markup point at."""
    return [
        *_labelled(text),
        *_assigned(text),
        *_block_scalars(text),
        *_markup(text),
        *_pairs(text),
        *_login_quoted(text),
    ]
