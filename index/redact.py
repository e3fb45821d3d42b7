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
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

MARKER_PREFIX = "[redacted:"
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


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] | None = None
    # The secret is the first group that took part in the match when `group`, else the match.
    group: bool = True
    # Speed (every entry is redacted at sync): a rule runs only when one of its lowercase
    # triggers occurs in the lowercased text, and, if `long_token`, when the text holds a run
    # of 20 token characters at all. No triggers: no literal to look for.
    triggers: tuple[str, ...] = ()
    long_token: bool = False
    # Matches start at a trigger: try one match per trigger occurrence instead of a
    # case-insensitive scan of the whole text (the costly part of redaction).
    anchored: bool = False
    # A token shape: the finding is extended to the end of the token it starts (a fixed-length
    # pattern must not leave the rest of a longer key behind), and it is also looked for
    # across a line break inside the token.
    extend: bool = False
    # Lines of long tokens: runs only when two runs of 40+ token characters exist, from the
    # first of them (a multi-line scan of every text would double the cost of redaction).
    block_of_lines: bool = False


def find_secrets(text: str) -> list[Secret]:
    """Given a text, return its secrets ordered by position, non-overlapping."""
    rules = _rules()
    lowered = text.lower()
    present = frozenset(trigger for trigger in _triggers() if trigger in lowered)
    found = _find(text, rules, present, None)
    found.extend(_table_secrets(text))
    # A key wrapped over two lines: only when a token rule's trigger is there at all.
    joined = None if present.isdisjoint(_token_triggers()) else _unwrapped(text)
    if joined is not None:
        view, positions, breaks = joined
        token_rules = tuple(rule if rule.extend and rule.triggers else None for rule in rules)
        for start, end, rule_index in _find(view, token_rules, present, breaks):
            # Only what crosses a removed break is new; the rest was found on the text itself.
            if any(start < position < end for position in breaks):
                found.append((positions[start], positions[end - 1] + 1, rule_index))
    return _merge(text, found)


def _find(
    text: str,
    rules: tuple[_Rule | None, ...],
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
            for start in _anchors(lowered, rule.triggers):
                line_end = text.find("\n", start)
                match = rule.pattern.match(text, start, len(text) if line_end < 0 else line_end)
                if match is not None:
                    matches.append(match)
        else:
            matches.extend(rule.pattern.finditer(text))
        for match in matches:
            start, end = _secret_span(match, rule.group)
            if breaks is not None:
                # A match may run on past a removed break only into the rest of a key.
                end = next(
                    (b for b in sorted(breaks) if start < b < end and not _continues(text, b)), end
                )
            if start < end and (rule.accept is None or rule.accept(text[start:end])):
                if rule.extend:
                    end = _token_end(text, end, breaks)
                found.append((start, end, rule_index))
    return found


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


def _merge(text: str, found: list[tuple[int, int, int]]) -> list[Secret]:
    """Given findings (start, end, rule index), return them as secrets: overlapping ones
    merged (kind of the most specific rule), each widened to whole characters."""
    merged: list[Secret] = []
    rules = _rules()
    current: tuple[int, int, int] | None = None
    for start, end, rule_index in sorted(_whole_characters(text, span) for span in found):
        if current is not None and start < current[1]:
            current = (current[0], max(current[1], end), min(current[2], rule_index))
            continue
        if current is not None:
            merged.append(Secret(_kind(rules, current[2]), current[0], current[1]))
        current = (start, end, rule_index)
    if current is not None:
        merged.append(Secret(_kind(rules, current[2]), current[0], current[1]))
    return merged


def _kind(rules: tuple[_Rule, ...], rule_index: int) -> str:
    return rules[rule_index].kind if rule_index < len(rules) else _TABLE_KINDS[rule_index]


def _whole_characters(text: str, span: tuple[int, int, int]) -> tuple[int, int, int]:
    """Given a span, return it widened so that it neither starts on nor stops before a mark
    that belongs to the character next to it (combining marks, variation selectors, a
    zero-width joiner and what it joins, emoji modifiers)."""
    start, end, rule_index = span
    while start > 0 and _attaches(text[start]):
        start -= 1
    while end < len(text) and (_attaches(text[end]) or text[end - 1] == "\u200d"):
        end += 1
    return start, end, rule_index


def _attaches(character: str) -> bool:
    """Given a character, return whether it is drawn as part of the one before it."""
    return (
        unicodedata.category(character) in ("Mn", "Mc", "Me")
        or character == "\u200d"
        or "\ufe00" <= character <= "\ufe0f"
        or "\U0001f3fb" <= character <= "\U0001f3ff"
        or "\U000e0020" <= character <= "\U000e007f"
    )


# ---------------------------------------------------------------------------------------------
# Markdown tables: a label cell names the secret in the next cell, a header names a column.

_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")


@cache
def _table_labels() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Given nothing, return (password label, token label): a whole cell naming a secret."""
    passwords, tokens = _names()
    markup = r"[*_`]{0,3}"

    def label(names: str) -> re.Pattern[str]:
        return re.compile(rf"(?i)^{markup}(?:{names})s?{markup}:?{markup}$")

    cjk = "|".join(_CJK_NAMES)
    return label(passwords + rf"|\w{{0,6}}(?:{cjk})"), label(tokens)


def _table_secrets(text: str) -> list[tuple[int, int, int]]:
    """Given a text, return (start, end, stand-in rule index) of every table cell that holds
    a secret by its row label or its column header."""
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
        return _password_value(value) if kind == 10_000 else _token_value(value)

    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    found: list[tuple[int, int, int]] = []
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
                found.append((start, end, kind))
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


# ---------------------------------------------------------------------------------------------
# Value checks: keep prose, placeholders, code expressions and markers out.

_PLACEHOLDER = re.compile(
    r"""(?ix)^(
        \*+ | x{3,} | \.{3} | … | -+ | _+ | <.* | \$\{?[A-Za-z_][A-Za-z0-9_]*\}? | \{\{.*\}\}
        | %\(?[A-Za-z_]*\)?s? | null | none | nil | true | false | empty | redacted | hidden
        | required | optional | string | your[_-]?\w* | changeme_placeholder
    )$"""
)


def _not_placeholder(value: str) -> bool:
    return MARKER_PREFIX not in value and not _PLACEHOLDER.match(value)


_PATH = re.compile(r"^(?:~|\.{1,2})?/[\w.\-/]*$")


def _password_value(value: str) -> bool:
    """Not a placeholder, not a code expression, not a path (`pwd: /srv/app`, a secrets
    file), not CJK prose (密码：请看保险库)."""
    return (
        _not_placeholder(value)
        and not re.search(r"[(\[{]", value)
        and not _PATH.match(value)
        and not all(unicodedata.east_asian_width(character) in ("W", "F") for character in value)
    )


def _token_value(value: str) -> bool:
    """A value assigned to an api_key/secret/token name: long enough and not a word."""
    return (
        len(value) >= 8
        and _password_value(value)
        and any(character.isdigit() for character in value)
        and any(character.isalpha() for character in value)
    )


def _has_digit(value: str) -> bool:
    return any(character.isdigit() for character in value)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_like_aws_secret(value: str) -> bool:
    """40 base64 characters of all three classes with the entropy of random bytes (~4.6 bits);
    hex digests (lowercase only) and paths made of words (lower entropy) stay."""
    return (
        any(character.isupper() for character in value)
        and any(character.islower() for character in value)
        and _has_digit(value)
        and _entropy(value) >= 4.3
    )


# ---------------------------------------------------------------------------------------------
# Rules, most specific first (the first rule of an overlapping group names its kind).

# Markdown around a label (`**password**:`, `**API key:**`, `` `token`: ``) is allowed on
# both sides of the assignment sign.
_ASSIGN = r"""(?:[*_`]{1,3})?["'\]]?[ \t]*(?:=|:=|:|=>|：)(?:[*_]{1,3})?[ \t]*"""
_STOP = r"""\s"'`,;，。；"""
# A quoted or backticked value, or a bare one that holds a non-letter, or a bare word ending
# its line (config style); "password: see the vault" is prose, not an assignment.
_VALUE = (
    rf"""(?:`([^`\n]+)`|"([^"\n]+)"|'([^'\n]+)'|["']?([^{_STOP}]*[^A-Za-z{_STOP}][^{_STOP}]*"""
    rf"""|[A-Za-z]+(?=[ \t]*(?:[#\r\n]|$))))"""
)
# A name part starts a word, follows a separator (db_password) or a camelCase hump (apiKey).
_NAME_START = r"(?:(?<![A-Za-z0-9])|(?<=[_.-])|(?-i:(?<=[a-z])(?=[A-Z])))"
# Names of our own beside detect-secrets' keyword DENYLIST (see `_keyword_rules`).
_OWN_TOKEN_NAMES = (
    "api_?key",
    "api_?secret",
    "api_?token",
    "secret_?key",
    "client_?secret",
    "access_?token",
    "auth_?token",
    "refresh_?token",
    "access_?key",
    "private_?key",
    "signing_?secret",
    "webhook_?secret",
    "secret",
    "token",
)
_OWN_PASSWORD_NAMES = ("password", "passwd", "passphrase")
# Chinese labels: password, passcode, secret key (and its common misspelling), private key,
# token, credential.
_CJK_NAMES = ("密码", "口令", "密钥", "秘钥", "私钥", "令牌", "凭证", "凭据")

_TOKEN_RULES: tuple[_Rule, ...] = (
    # Whole key blocks, from BEGIN to END (or to the end of the text when END is missing).
    _Rule(
        "private_key",
        re.compile(
            r"(?s)-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}"
            r".*?(?:-{4,5} ?END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}|\Z)"
        ),
        triggers=("private key",),
    ),
    _Rule(
        "private_key",
        re.compile(r"(?s)PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)"),
        triggers=("putty-user-key-file-",),
    ),
    # The body of a key block whose BEGIN line is elsewhere (a renderer split the block at
    # its blank line, or only the middle was pasted): two or more lines of 40-76 base64
    # characters with the mix of random bytes.
    _Rule(
        "private_key",
        re.compile(
            r"(?m)^[ \t]*[A-Za-z0-9+/]{40,76}={0,2}[ \t]*\r?\n"
            r"(?:[ \t]*[A-Za-z0-9+/]{40,76}={0,2}[ \t]*(?:\r?\n|\Z))+"
            r"(?:[ \t]*[A-Za-z0-9+/]{1,76}={0,2}[ \t]*(?:\r?\n|\Z))?"
            r"(?:[ \t]*=[A-Za-z0-9+/]{4}[ \t]*(?:\r?\n|\Z))?"
        ),
        lambda block: _looks_like_aws_secret("".join(block.split())),
        group=False,
        block_of_lines=True,
    ),
    _Rule(
        "anthropic_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"),
        triggers=("sk-ant-",),
        extend=True,
    ),
    _Rule(
        "openai_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        _has_digit,
        triggers=("sk-",),
        extend=True,
    ),
    _Rule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}"),
        triggers=("github_pat_",),
        extend=True,
    ),
    _Rule(
        "google_api_key",
        re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"),
        triggers=("aiza",),
        extend=True,
    ),
    _Rule(
        "huggingface_token",
        re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
        triggers=("hf_",),
        extend=True,
    ),
    _Rule(
        "npm_token",
        re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"),
        triggers=("npm_",),
        extend=True,
    ),
    _Rule(
        "jwt",
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_=-]{8,}\.[A-Za-z0-9_=-]{8,}(?:\.[A-Za-z0-9_=+/-]+)?"
        ),
        triggers=("eyj",),
        extend=True,
    ),
    # Stripe secret and restricted keys, live and test (detect-secrets: live only, 24 chars).
    _Rule(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[0-9A-Za-z]{16,}"),
        triggers=("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        extend=True,
    ),
    _Rule(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9+/=]{24,}"),
        triggers=("whsec_",),
        extend=True,
    ),
    _Rule(
        "discord_webhook",
        re.compile(
            r"(?i)https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
            r"(\d{5,}/[A-Za-z0-9_-]{20,})"
        ),
        triggers=("/api/webhooks/",),
        extend=True,
    ),
    _Rule(
        "digitalocean_token",
        re.compile(r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}"),
        triggers=("_v1_",),
        extend=True,
    ),
    _Rule(
        "shopify_token",
        re.compile(r"(?<![A-Za-z0-9_])shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
        triggers=("shpat_", "shpss_", "shpca_", "shppa_"),
        extend=True,
    ),
    # Credentials in a URL, the user name possibly empty (`redis://:pw@host`) and the password
    # holding characters detect-secrets' pattern refuses (`#`, `!`, `$`).
    _Rule(
        "basic_auth",
        re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@\[\]]*:([^\s/?@]+)@"),
        _not_placeholder,
        triggers=("://",),
    ),
    # `curl -u user:password`, `--user user:password`.
    _Rule(
        "basic_auth",
        re.compile(r"(?:^|(?<=[\s'\"]))(?:-u|--user)[ \t=]+['\"]?[^\s:'\"@]+:([^\s'\"]+)"),
        lambda value: _password_value(value) and not value.isdigit(),  # `-u 1000:1000` is uid:gid
        triggers=("-u", "--user"),
    ),
    # (detect-secrets' fixed-shape patterns come here, see _rules)
)

# Values after a name: a secret only by where it stands, so any token rule names it first.
_KEYWORD_RULES: tuple[_Rule, ...] = (
    _Rule(
        "aws_secret_key",
        re.compile(
            r"(?i)aws[A-Za-z0-9_.-]{0,20}?(?:secret|sk)[A-Za-z0-9_.-]{0,20}"
            + _ASSIGN
            + r"""["']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"""
        ),
        triggers=("aws",),
        anchored=True,
    ),
    _Rule(
        "bearer_token",
        re.compile(
            r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|token|bot)[ \t]+"
            r"([A-Za-z0-9\-._~+/]+=*)"
        ),
        _not_placeholder,
        triggers=("authorization",),
        anchored=True,
    ),
    _Rule(
        "basic_auth",
        re.compile(r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?basic[ \t]+([A-Za-z0-9+/]+=*)"),
        _not_placeholder,
        triggers=("authorization",),
        anchored=True,
    ),
    _Rule(
        "bearer_token",
        re.compile(r"\b[Bb]earer[ \t]+([A-Za-z0-9\-._~+/]{16,}=*)"),
        _has_digit,
        triggers=("bearer",),
        anchored=True,
    ),
)


@cache
def _names() -> tuple[str, str]:
    """Given nothing, return (password names, token names) as regex alternations: detect-secrets'
    keyword DENYLIST split by kind, plus our own names."""
    from detect_secrets.plugins.keyword import DENYLIST

    def password_like(name: str) -> bool:
        return "pass" in name or "pwd" in name or "contrase" in name

    password_names = {*(n for n in DENYLIST if password_like(n)), *_OWN_PASSWORD_NAMES}
    token_names = {*(n for n in DENYLIST if not password_like(n)), *_OWN_TOKEN_NAMES}

    def alternation(names: set[str]) -> str:
        # detect-secrets writes an optional separator as `_?`; people also write `-` or a space.
        ordered = sorted(names, key=lambda name: (-len(name), name))
        return "|".join(name.replace("_?", "[_\\- ]?") for name in ordered)

    return alternation(password_names) + r"|(?<=[_.-])pass", alternation(token_names)


def _name_triggers(names: str) -> tuple[str, ...]:
    """Given a names alternation, return the literal each name starts with."""
    return tuple(
        sorted({re.split(r"[\[(]", name, maxsplit=1)[0] for name in names.split("|")} - {""})
    )


def _keyword_rules() -> tuple[_Rule, ...]:
    """Given nothing, return the name = value rules: password names, Chinese labels, token
    names."""
    passwords, tokens = _names()
    return (
        _Rule(
            "password",
            re.compile(r"(?i)(?:" + passwords + r")s?" + _ASSIGN + _VALUE),
            _password_value,
            triggers=(*_name_triggers(passwords), "pass"),
            anchored=True,
        ),
        _Rule(
            "password",
            re.compile(
                r"(?:" + "|".join(_CJK_NAMES) + r")[ \t]*(?:[:：=]|是|为|為)[ \t]*" + _VALUE
            ),
            _password_value,
            triggers=_CJK_NAMES,
            anchored=True,
        ),
        _Rule(
            "generic_api_key",
            re.compile(r"(?i)" + _NAME_START + "(?:" + tokens + ")s?" + _ASSIGN + _VALUE),
            _token_value,
            triggers=_name_triggers(tokens),
            anchored=True,
        ),
    )


# The last resort: a bare 40-character AWS-secret-shaped string with no name next to it.
_FALLBACK_RULES: tuple[_Rule, ...] = (
    _Rule(
        "aws_secret_key",
        re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        _looks_like_aws_secret,
        long_token=True,
    ),
)


@dataclass(frozen=True)
class _Borrowed:
    """How one detect-secrets pattern is used: kind (None: skipped), whether its first group
    is the secret, and the lowercase literals one of which any match contains."""

    kind: str | None
    group: bool = False
    triggers: tuple[str, ...] = ()


# detect-secrets plugins whose patterns are used unchanged: (module, class, one _Borrowed per
# pattern in the plugin's denylist). The GitHub pattern's group is the prefix, not the secret.
# Artifactory's password pattern (AP + 9 alphanumerics) matches ordinary identifiers.
_DETECT_SECRETS: tuple[tuple[str, str, tuple[_Borrowed, ...]], ...] = (
    (
        "aws",
        "AWSKeyDetector",
        (
            _Borrowed("aws_access_key", triggers=("a3t", "abia", "acca", "akia", "asia")),
            _Borrowed("aws_secret_key", group=True, triggers=("aws",)),
        ),
    ),
    (
        "github_token",
        "GitHubTokenDetector",
        (_Borrowed("github_token", triggers=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),),
    ),
    (
        "gitlab_token",
        "GitLabTokenDetector",
        (_Borrowed("gitlab_token", triggers=("gl", "gr1348941")),) * 7,
    ),
    (
        "slack",
        "SlackDetector",
        (
            _Borrowed("slack_token", triggers=("xox",)),
            _Borrowed("slack_token", triggers=("hooks.slack.com",)),
        ),
    ),
    ("stripe", "StripeDetector", (_Borrowed("stripe_key", triggers=("k_live_",)),)),
    ("openai", "OpenAIDetector", (_Borrowed("openai_key", triggers=("t3blbkfj",)),)),
    ("sendgrid", "SendGridDetector", (_Borrowed("sendgrid_key", triggers=("sg.",)),)),
    ("pypi_token", "PypiTokenDetector", (_Borrowed("pypi_token", triggers=("pypi-",)),) * 2),
    ("square_oauth", "SquareOAuthDetector", (_Borrowed("square_token", triggers=("sq0csp-",)),)),
    (
        "azure_storage_key",
        "AzureStorageKeyDetector",
        (_Borrowed("azure_storage_key", triggers=("accountkey=",)),),
    ),
    ("discord", "DiscordBotTokenDetector", (_Borrowed("discord_token"),)),
    ("telegram_token", "TelegramBotTokenDetector", (_Borrowed("telegram_token"),)),
    ("twilio", "TwilioKeyDetector", (_Borrowed("twilio_key"),) * 2),
    ("mailchimp", "MailchimpDetector", (_Borrowed("mailchimp_key", triggers=("-us",)),)),
    (
        "artifactory",
        "ArtifactoryDetector",
        (_Borrowed("artifactory_token", triggers=("akc",)), _Borrowed(None)),
    ),
    ("npm", "NpmDetector", (_Borrowed("npm_token", group=True, triggers=("_authtoken",)),)),
    ("basic_auth", "BasicAuthDetector", (_Borrowed("basic_auth", group=True, triggers=("://",)),)),
)


@cache
def _triggers() -> tuple[str, ...]:
    """Given nothing, return every rule's triggers, each once."""
    return tuple(sorted({trigger for rule in _rules() for trigger in rule.triggers}))


@cache
def _rules() -> tuple[_Rule, ...]:
    """Given nothing, return every rule, most specific first: own token shapes,
    detect-secrets' token shapes, name = value assignments, the bare AWS-secret fallback."""
    import importlib

    borrowed: list[_Rule] = []
    for module_name, class_name, uses in _DETECT_SECRETS:
        module = importlib.import_module(f"detect_secrets.plugins.{module_name}")
        patterns = tuple(getattr(module, class_name).denylist)
        if len(patterns) != len(uses):
            # A detect-secrets release changed this plugin: take all of its patterns as they
            # are (whole match, no triggers) rather than silently dropping any.
            kind = next(use.kind for use in uses if use.kind is not None)
            uses = (_Borrowed(kind),) * len(patterns)
        for pattern, use in zip(patterns, uses, strict=True):
            if use.kind is not None:
                borrowed.append(
                    _Rule(
                        use.kind,
                        pattern,
                        _not_placeholder,
                        group=use.group,
                        triggers=use.triggers,
                        long_token=not use.triggers,
                        extend=True,
                    )
                )
    return (*_TOKEN_RULES, *borrowed, *_KEYWORD_RULES, *_keyword_rules(), *_FALLBACK_RULES)


# Table findings are not rules; these stand-in rule indices sort after every rule's.
_TABLE_KINDS = {10_000: "password", 10_001: "generic_api_key"}


@cache
def _token_triggers() -> tuple[str, ...]:
    """Given nothing, return the triggers of the token rules a wrapped key is looked for with."""
    return tuple(sorted({t for rule in _rules() if rule.extend for t in rule.triggers}))
