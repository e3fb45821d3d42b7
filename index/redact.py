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

Overlapping findings merge into one span (kind of the most specific rule). `redact` repeats
until nothing is found, so `redact(redact(x)) == redact(x)`; the markers never match a rule.
"""

from __future__ import annotations

import math
import re
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


def find_secrets(text: str) -> list[Secret]:
    """Given a text, return its secrets ordered by position, non-overlapping."""
    lowered = text.lower()
    # str.lower() keeps offsets except for a few letters (e.g. "İ"); then anchors are off.
    same_offsets = len(lowered) == len(text)
    rules, triggers = _rules(), _triggers()
    present = {trigger for trigger in triggers if trigger in lowered}
    runs: list[tuple[int, int]] | None = None
    found: list[tuple[int, int, int]] = []  # (start, end, rule index)
    for rule_index, rule in enumerate(rules):
        if rule.triggers and present.isdisjoint(rule.triggers):
            continue
        matches: list[re.Match[str]] = []
        if rule.long_token:
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
            if start < end and (rule.accept is None or rule.accept(text[start:end])):
                found.append((start, end, rule_index))
    return _merge(found)


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


def _merge(found: list[tuple[int, int, int]]) -> list[Secret]:
    merged: list[Secret] = []
    rules = _rules()
    current: tuple[int, int, int] | None = None
    for start, end, rule_index in sorted(found):
        if current is not None and start < current[1]:
            current = (current[0], max(current[1], end), min(current[2], rule_index))
            continue
        if current is not None:
            merged.append(Secret(rules[current[2]].kind, current[0], current[1]))
        current = (start, end, rule_index)
    if current is not None:
        merged.append(Secret(rules[current[2]].kind, current[0], current[1]))
    return merged


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


def _password_value(value: str) -> bool:
    """Not a placeholder, not a code expression, not CJK prose (密码：请看保险库)."""
    return (
        _not_placeholder(value)
        and not re.search(r"[(\[{]", value)
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

_ASSIGN = r"""["']?[ \t]*(?:=|:=|:|=>|：)[ \t]*"""
_STOP = r"""\s"'`,;，。；"""
# A quoted value, or a bare one that holds a non-letter, or a bare word ending its line
# (config style); "password: see the vault" is prose, not an assignment.
_VALUE = (
    rf"""(?:"([^"\n]+)"|'([^'\n]+)'|["']?([^{_STOP}]*[^A-Za-z{_STOP}][^{_STOP}]*"""
    rf"""|[A-Za-z]+(?=[ \t]*(?:[#\r\n]|$))))"""
)
# A name part starts a word, follows a separator (db_password) or a camelCase hump (apiKey).
_NAME_START = r"(?:(?<![A-Za-z0-9])|(?<=[_.-])|(?-i:(?<=[a-z])(?=[A-Z])))"
_TOKEN_NAMES = (
    r"(?:api[_-]?key|apikey|api[_-]?secret|api[_-]?token|secret[_-]?key|client[_-]?secret"
    r"|access[_-]?token|auth[_-]?token|refresh[_-]?token|access[_-]?key|private[_-]?key"
    r"|secret|token)s?"
)

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
    _Rule(
        "anthropic_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"),
        triggers=("sk-ant-",),
    ),
    _Rule(
        "openai_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        _has_digit,
        triggers=("sk-",),
    ),
    _Rule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}"),
        triggers=("github_pat_",),
    ),
    _Rule(
        "google_api_key",
        re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"),
        triggers=("aiza",),
    ),
    _Rule(
        "huggingface_token",
        re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
        triggers=("hf_",),
    ),
    _Rule("npm_token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"), triggers=("npm_",)),
    _Rule(
        "jwt",
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_=-]{8,}\.[A-Za-z0-9_=-]{8,}(?:\.[A-Za-z0-9_=+/-]+)?"
        ),
        triggers=("eyj",),
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
    _Rule(
        "password",
        re.compile(r"(?i)(?:password|passwd|passphrase)s?" + _ASSIGN + _VALUE),
        _password_value,
        triggers=("password", "passwd", "passphrase"),
        anchored=True,
    ),
    _Rule(
        "password",
        re.compile(r"(?:密码|口令)[ \t]*(?:[:：=]|是|为)[ \t]*" + _VALUE),
        _password_value,
        triggers=("密码", "口令"),
        anchored=True,
    ),
    _Rule(
        "generic_api_key",
        re.compile(r"(?i)" + _NAME_START + _TOKEN_NAMES + _ASSIGN + _VALUE),
        _token_value,
        triggers=("api", "secret", "client", "access", "auth", "refresh", "private", "token"),
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
                    )
                )
    return (*_TOKEN_RULES, *borrowed, *_KEYWORD_RULES, *_FALLBACK_RULES)
