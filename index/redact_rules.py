"""The pattern tables of `redact.py`: which credentials there are and how each is recognised.

Own token shapes, detect-secrets' borrowed token shapes (read from its plugins on first use),
name = value assignments, and the value checks that keep prose and placeholders out.
`redact.py` is the engine that runs them; see its docstring for where each pattern comes from.
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


@dataclass(frozen=True)
class Rule:
    """One credential pattern: its kind, how its value is checked and when it runs at all."""

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


# ---------------------------------------------------------------------------------------------
# Value checks: keep prose, placeholders, code expressions and markers out.

_PLACEHOLDER = re.compile(
    r"""(?ix)^(
        \*+ | x{3,} | \.{3} | … | -+ | _+ | <.* | \$\{?[A-Za-z_][A-Za-z0-9_]*\}? | \{\{.*\}\}
        | %\(?[A-Za-z_]*\)?s? | null | none | nil | true | false | empty | redacted | hidden
        | required | optional | string | your[_-]?\w* | changeme_placeholder
        | password | passwd | pass | secret | changeme | example
    )$"""
)
# Eight of one character in a row: a placeholder (`sk_live_xxxxxxxx…`), never a real key.
REPEATED = re.compile(r"(.)\1{7}")


def _not_placeholder(value: str) -> bool:
    return (
        MARKER_PREFIX not in value and not _PLACEHOLDER.match(value) and not REPEATED.search(value)
    )


_PATH = re.compile(r"^(?:~|\.{1,2})?/[\w.\-/]*$")
# An assignment (`token: expires_in=3600`), a YAML tag (`!vault |`, `!Ref DbPassword`).
_NOT_A_VALUE = re.compile(r"(?:[a-z]+_[a-z_]+|[a-z]{4,})=[^=]|![A-Za-z]+$")


def password_value(value: str) -> bool:
    """Not a placeholder, not a code expression, not a path (`pwd: /srv/app`, a secrets
    file), not CJK prose (密码：请看保险库), not an assignment or a YAML tag."""
    return (
        _not_placeholder(value)
        and any(character.isalnum() for character in value)  # not `, ` between two backticks
        and value == value.strip()  # nor ` and ` between two inline-code labels
        and not value.endswith((":", "："))  # a label of its own (`**password**:`)
        and not re.search(r"[(\[{]", value)
        and not _PATH.match(value)
        and not all(unicodedata.east_asian_width(character) in ("W", "F") for character in value)
        and not _NOT_A_VALUE.match(value)
    )


def token_value(value: str) -> bool:
    """A value assigned to an api_key/secret/token name: long enough and not a word."""
    return (
        len(value) >= 8
        and password_value(value)
        and any(character.isdigit() for character in value)
        and any(character.isalpha() for character in value)
    )


def _has_digit(value: str) -> bool:
    return any(character.isdigit() for character in value)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _one_body(block: str) -> bool:
    """Given lines of base64, return whether they can be one wrapped body: base64 pads only its
    end, so a line ending in `=` before the last (an armour checksum `=abcd` aside) makes them
    separate values (`wg show` peers)."""
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    body = lines[:-1] if lines and lines[-1].startswith("=") else lines
    return not any(line.endswith("=") for line in body[:-1])


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
    rf"""(?:`([^`\n]{{1,400}})`|"([^"\n]{{1,400}})"|'([^'\n]{{1,400}})'"""
    rf"""|["']?([^{_STOP}]{{0,200}}[^A-Za-z{_STOP}][^{_STOP}]{{0,200}}"""
    rf"""|[A-Za-z]{{1,200}}(?=[ \t]*(?:[#\r\n]|$))))"""
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
CJK_NAMES = ("密码", "口令", "密钥", "秘钥", "私钥", "令牌", "凭证", "凭据")

_TOKEN_RULES: tuple[Rule, ...] = (
    # Whole key blocks, from BEGIN to END (or to the end of the text when END is missing).
    Rule(
        "private_key",
        re.compile(
            r"(?s)-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}"
            r".*?(?:-{4,5} ?END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}|\Z)"
        ),
        triggers=("private key",),
    ),
    Rule(
        "private_key",
        re.compile(r"(?s)PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)"),
        triggers=("putty-user-key-file-",),
    ),
    # The body of a key block whose BEGIN line is elsewhere (a renderer split the block at
    # its blank line, or only the middle was pasted): two or more lines of 40-76 base64
    # characters with the mix of random bytes.
    Rule(
        "private_key",
        re.compile(
            r"(?m)^[ \t]*[A-Za-z0-9+/]{40,76}={0,2}[ \t]*\r?\n"
            r"(?:[ \t]*[A-Za-z0-9+/]{40,76}={0,2}[ \t]*(?:\r?\n|\Z))+"
            r"(?:[ \t]*[A-Za-z0-9+/]{1,76}={0,2}[ \t]*(?:\r?\n|\Z))?"
            r"(?:[ \t]*=[A-Za-z0-9+/]{4}[ \t]*(?:\r?\n|\Z))?"
        ),
        lambda block: _one_body(block) and _looks_like_aws_secret("".join(block.split())),
        group=False,
        block_of_lines=True,
    ),
    Rule(
        "anthropic_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"),
        triggers=("sk-ant-",),
        extend=True,
    ),
    Rule(
        "openai_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        _has_digit,
        triggers=("sk-",),
        extend=True,
    ),
    Rule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}"),
        triggers=("github_pat_",),
        extend=True,
    ),
    Rule(
        "google_api_key",
        re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"),
        triggers=("aiza",),
        extend=True,
    ),
    Rule(
        "huggingface_token",
        re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
        triggers=("hf_",),
        extend=True,
    ),
    Rule(
        "npm_token",
        re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"),
        triggers=("npm_",),
        extend=True,
    ),
    Rule(
        "jwt",
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_=-]{8,}\.[A-Za-z0-9_=-]{8,}(?:\.[A-Za-z0-9_=+/-]+)?"
        ),
        triggers=("eyj",),
        extend=True,
    ),
    # Stripe secret and restricted keys, live and test (detect-secrets: live only, 24 chars).
    Rule(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[0-9A-Za-z]{16,}"),
        triggers=("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        extend=True,
    ),
    Rule(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9+/=]{24,}"),
        triggers=("whsec_",),
        extend=True,
    ),
    Rule(
        "discord_webhook",
        re.compile(
            r"(?i)https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
            r"(\d{5,}/[A-Za-z0-9_-]{20,})"
        ),
        triggers=("/api/webhooks/",),
        extend=True,
    ),
    Rule(
        "digitalocean_token",
        re.compile(r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}"),
        triggers=("_v1_",),
        extend=True,
    ),
    Rule(
        "shopify_token",
        re.compile(r"(?<![A-Za-z0-9_])shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
        triggers=("shpat_", "shpss_", "shpca_", "shppa_"),
        extend=True,
    ),
    # Credentials in a URL, the user name possibly empty (`redis://:pw@host`) and the password
    # holding characters detect-secrets' pattern refuses (`#`, `!`, `$`).
    Rule(
        "basic_auth",
        re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@\[\]]{0,200}:([^\s/?@]{1,400})@"),
        _not_placeholder,
        triggers=("://",),
    ),
    # `curl -u user:password`, `--user user:password`.
    Rule(
        "basic_auth",
        re.compile(
            r"(?:^|(?<=[\s'\"]))(?:-u|--user)[ \t=]{1,3}['\"]?[^\s:'\"@]{1,100}:([^\s'\"]{1,400})"
        ),
        lambda value: password_value(value) and not value.isdigit(),  # `-u 1000:1000` is uid:gid
        triggers=("-u", "--user"),
    ),
    # (detect-secrets' fixed-shape patterns come here, see all_rules)
)

# Values after a name: a secret only by where it stands, so any token rule names it first.
_KEYWORD_RULES: tuple[Rule, ...] = (
    Rule(
        "aws_secret_key",
        re.compile(
            r"(?i)aws[A-Za-z0-9_.-]{0,20}?(?:secret|sk)[A-Za-z0-9_.-]{0,20}"
            + _ASSIGN
            + r"""["']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"""
        ),
        triggers=("aws",),
        anchored=True,
    ),
    Rule(
        "bearer_token",
        re.compile(
            r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|token|bot)[ \t]+"
            r"([A-Za-z0-9\-._~+/]{1,400}={0,3})"
        ),
        _not_placeholder,
        triggers=("authorization",),
        anchored=True,
    ),
    Rule(
        "basic_auth",
        re.compile(
            r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?basic[ \t]+"
            r"([A-Za-z0-9+/]{1,400}={0,3})"
        ),
        _not_placeholder,
        triggers=("authorization",),
        anchored=True,
    ),
    Rule(
        "bearer_token",
        re.compile(r"\b[Bb]earer[ \t]+([A-Za-z0-9\-._~+/]{16,400}={0,3})"),
        _has_digit,
        triggers=("bearer",),
        anchored=True,
    ),
)


@cache
def secret_names() -> tuple[str, str]:
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


def _keyword_rules() -> tuple[Rule, ...]:
    """Given nothing, return the name = value rules: password names, Chinese labels, token
    names."""
    passwords, tokens = secret_names()
    return (
        Rule(
            "password",
            # Not after a digit: `1Password` is the vault a note points to, not a label.
            re.compile(r"(?i)(?<![0-9])(?:" + passwords + r")s?" + _ASSIGN + _VALUE),
            password_value,
            triggers=(*_name_triggers(passwords), "pass"),
            anchored=True,
        ),
        Rule(
            "password",
            re.compile(r"(?:" + "|".join(CJK_NAMES) + r")[ \t]*(?:[:：=]|是|为|為)[ \t]*" + _VALUE),
            password_value,
            triggers=CJK_NAMES,
            anchored=True,
        ),
        Rule(
            "generic_api_key",
            re.compile(r"(?i)" + _NAME_START + "(?:" + tokens + ")s?" + _ASSIGN + _VALUE),
            token_value,
            triggers=_name_triggers(tokens),
            anchored=True,
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
    # detect-secrets' npm pattern (`//.+/:_authToken=`) backtracks over a long line: own rule.
    ("npm", "NpmDetector", (_Borrowed(None),)),
    ("basic_auth", "BasicAuthDetector", (_Borrowed("basic_auth", group=True, triggers=("://",)),)),
)


@cache
def all_triggers() -> tuple[str, ...]:
    """Given nothing, return every rule's triggers, each once."""
    return tuple(sorted({trigger for rule in all_rules() for trigger in rule.triggers}))


@cache
def all_rules() -> tuple[Rule, ...]:
    """Given nothing, return every rule, most specific first: own token shapes,
    detect-secrets' token shapes, name = value assignments. (A bare AWS-secret-shaped string
    is judged by its context in `redact_shape`.)"""
    import importlib

    borrowed: list[Rule] = []
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
                    Rule(
                        use.kind,
                        pattern,
                        _not_placeholder,
                        group=use.group,
                        triggers=use.triggers,
                        long_token=not use.triggers,
                        extend=True,
                    )
                )
    return (*_TOKEN_RULES, *borrowed, *_KEYWORD_RULES, *_keyword_rules())


@cache
def token_triggers() -> tuple[str, ...]:
    """Given nothing, return the triggers of the token rules a wrapped key is looked for with."""
    return tuple(sorted({t for rule in all_rules() if rule.extend for t in rule.triggers}))
