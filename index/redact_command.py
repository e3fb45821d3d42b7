"""Credentials on command lines, in headers and in cookies: flags whose name holds a secret
(`--authkey=…`, `-deststorepass …`), the short flags that take a password in the tools people
paste (`mysql -p…`, `sshpass -p …`, `redis-cli -a …`), `pass:` arguments, `user%password`,
`login TOKEN`, `login("user", "password")` calls, `Authorization: <scheme> <value>` with any
scheme, and cookie values. Every pattern is bounded: linear time on any line.
"""

from __future__ import annotations

import math
import re
from functools import cache

from carryd.index.redact_finding import ATTACHED_VALUE, VALUE, Finding, value_span
from carryd.index.redact_lexicon import (
    PUBLIC_PARTS,
    credential_value,
    entropy,
    has_digit,
    name_parts,
    random_like,
    secret_name,
)

__all__ = ["find_on_command_lines"]

_FLAG = re.compile(r"-{1,2}([A-Za-z][\w.\-]{1,40})(?:=|[ \t]{1,3})" + VALUE)
_NOT_A_VALUE = ("env:", "file:", "fd:", "stdin", "-")

# Tools whose short flag takes a password: (command words, flag, value attached to the flag).
_SHORT_FLAGS: tuple[tuple[tuple[str, ...], str, bool], ...] = (
    (
        (
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
        ),
        "p",
        True,
    ),
    (("7z", "7za"), "p", True),
    (("sshpass", "psexec", "mongo", "docker login", "podman login", "oras login"), "p", False),
    (("redis-cli", "keydb-cli"), "a", False),
    (("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd"), "w", False),
    (("sqlcmd", "bcp", "zip", "unzip", "ipmitool", "rar"), "P", False),
    (("xfreerdp", "wfreerdp"), "/p:", True),
    # SNMP v1/v2c: the community string is the shared secret.
    (
        ("snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmptable", "snmptrap"),
        "c",
        False,
    ),
)


def _flags(text: str) -> list[Finding]:
    """Given a text, return the values of flags whose name says they hold a secret."""
    found: list[Finding] = []
    for match in _FLAG.finditer(text):
        if match.start() > 0 and _WORD.match(text, match.start() - 1):
            continue
        if not secret_name(match.group(1)):
            continue
        span = value_span(match, 2)
        if (
            span is not None
            and not span.text.startswith(_NOT_A_VALUE)
            and credential_value(span.text, span.quoted, "pass" in match.group(1).lower())
        ):
            found.append(Finding(span[0], span[1], "password"))
    return found


# Any flag, short or long, and a value of 20+ characters standing alone after it.
_ANY_FLAG = re.compile(
    r"(?<![\w\-])-{1,2}([A-Za-z][\w\-]{0,40})(?:=|[ \t]{1,3})[\"']?([A-Za-z0-9_\-]{20,400})"
    r"(?![\w\-.:/@=])"
)


def _random_flag_values(text: str) -> list[Finding]:
    """Given a text, return the values of flags that read as generated keys whatever the flag
    is called (`ossutil config -i … -k …`, `tool --api …`): of all three character classes,
    random, with the entropy of random characters. A flag whose name says it is public (`--id`,
    `--sha`, `--name`) keeps its value; hex ids and slugs fall short of the three classes."""
    found: list[Finding] = []
    if "-" not in text:
        return found
    for match in _ANY_FLAG.finditer(text):
        value = match.group(2)
        if (
            PUBLIC_PARTS.isdisjoint(name_parts(match.group(1)))
            and _UPPER.search(value)
            and _LOWER.search(value)
            and has_digit(value)
            and random_like(value, 20)
            and entropy(value) >= min(4.0, math.log2(len(value)) - 0.7)
        ):
            found.append(Finding(match.start(2), match.end(2), "secret"))
    return found


_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")


def _short_flags(text: str) -> list[Finding]:
    """Given a text, return the passwords passed with a tool's short flag, on the lines that
    name the tool (`-p 6379` of redis-cli is a port; its `-a` is the password)."""
    found: list[Finding] = []
    lowered = text.lower()
    for commands, flag, attached in _SHORT_FLAGS:
        if not any(command in lowered for command in commands):
            continue
        dash = "" if flag.startswith("/") else "-"
        gap = "" if attached else r"[ \t]{1,3}"
        value = ATTACHED_VALUE if attached else VALUE
        pattern = re.compile(rf"(?<![\w\-/]){dash}{re.escape(flag)}{gap}" + value)
        for line_start, line in _lines_naming(text, lowered, commands):
            for match in pattern.finditer(line):
                span = value_span(match, 1)
                if span is not None and credential_value(span.text, span.quoted, True):
                    found.append(Finding(line_start + span[0], line_start + span[1], "password"))
    return found


def _lines_naming(text: str, lowered: str, commands: tuple[str, ...]) -> list[tuple[int, str]]:
    """Given a text, its lowercase form and command words, return (offset, line) of the lines
    (a `\\`-continued command counts as one) that name one of the commands as a word. Each
    line is cut once, from the previous line's end: linear time."""
    pattern = _command_pattern(commands)
    lines: list[tuple[int, str]] = []
    reached = 0
    for match in pattern.finditer(lowered):
        if match.start() < reached:
            continue
        start = text.rfind("\n", reached, match.start()) + 1 or reached
        start = max(start, reached)
        end = text.find("\n", match.end())
        while end >= 0 and text[max(start, end - 2) : end].rstrip().endswith("\\"):
            end = text.find("\n", end + 1)
        end = len(text) if end < 0 else end
        lines.append((start, text[start:end]))
        reached = end + 1
    return lines


@cache
def _command_pattern(commands: tuple[str, ...]) -> re.Pattern[str]:
    words = "|".join(re.escape(command) for command in commands)
    return re.compile(rf"(?<![\w\-])(?:{words})(?![\w\-])")


# (pattern, kind, run on the lowercased text, must start a word). Each pattern starts with a
# literal, so the regex engine skips to it; a word boundary is checked after the match, since a
# leading look-behind makes the engine try every position (twenty times slower on prose).
_PATTERNS: tuple[tuple[re.Pattern[str], str, bool, bool], ...] = (
    # openssl -passin/-passout pass:VALUE
    (re.compile(r"pass:([^\s'\"`]{1,400})"), "password", False, True),
    # smbclient -U 'DOMAIN\user%password', rpcclient, winexe
    (re.compile(r"-U[ \t]{1,3}['\"]?[^\s%'\"]{1,100}%([^\s'\"]{1,400})"), "password", False, True),
    # Windows: net use Z: \\host\share PASSWORD /user:…, and /password:… arguments
    (
        re.compile(
            r"net[ \t]+use\b[^\n]{0,80}?\\\\[^\s]{1,200}[ \t]+([^\s/*][^\s]{0,200})[ \t]+/user:"
        ),
        "password",
        True,
        True,
    ),
    (re.compile(r"/(?:password|pass|pwd):([^\s'\"]{1,400})"), "password", True, True),
    # `cargo login TOKEN`, `vault login TOKEN`, `… auth login TOKEN`
    (re.compile(r"login[ \t]{1,3}([A-Za-z0-9_\-.]{16,400})(?![\w\-])"), "token", False, True),
    # login("user", "password"), auth=("user", "password"), HTTPBasicAuth("user", "password")
    (
        re.compile(
            r"(?:login|auth|basicauth|credentials?)[ \t]*(?:=[ \t]*)?\([ \t]*"
            r"([\"'])[^\"'\n]{1,100}\1[ \t]*,[ \t]*([\"'])([^\"'\n]{4,400})\2"
        ),
        "password",
        True,
        False,
    ),
    # PowerShell: ConvertTo-SecureString 'VALUE' -AsPlainText
    (
        re.compile(
            r"convertto-securestring[ \t]{1,3}(?:-string[ \t]{1,3})?[\"']([^\"'\n]{4,400})[\"']"
        ),
        "password",
        True,
        True,
    ),
    # echo 'VALUE' | docker login --password-stdin
    (
        re.compile(
            r"echo[ \t]{1,3}[\"']?([^\s\"'|]{6,400})[\"']?[ \t]*\|[^|\n]{0,200}--password-stdin"
        ),
        "password",
        False,
        True,
    ),
    # net user NAME PASSWORD
    (
        re.compile(r"net[ \t]+user[ \t]+[^\s/]{1,64}[ \t]+([^\s/*][^\s]{5,200})"),
        "password",
        True,
        True,
    ),
    # ~/.pgpass: host:port:database:user:password
    (
        re.compile(
            r"(?m)^[\w.\-*]{1,200}:(?:\d{1,5}|\*):[\w.\-*]{1,200}:[\w.\-*@]{1,200}:([^\s:]{6,400})$"
        ),
        "password",
        False,
        False,
    ),
    # Authorization: <any scheme> <credentials> (Bearer, Basic, Token, SSWS, Bot, ApiKey, …)
    (
        re.compile(
            r"authorization[\"']?[ \t]*[:=]?[ \t]*[\"']?[a-z][\w\-]{1,30}[ \t]{1,3}"
            r"([^\s\"',;]{8,400})"
        ),
        "bearer_token",
        True,
        True,
    ),
)


def _patterns(text: str) -> list[Finding]:
    """Given a text, return what the fixed command-line and header patterns find."""
    found: list[Finding] = []
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(character.lower()[0] for character in text)
    for pattern, kind, on_lowered, word_start in _PATTERNS:
        for match in pattern.finditer(lowered if on_lowered else text):
            if word_start and match.start() > 0 and _WORD.match(text, match.start() - 1):
                continue
            group = match.lastindex or 0
            value = text[match.start(group) : match.end(group)]
            accepted = (
                random_like(value, 16) if kind == "token" else credential_value(value, False, True)
            )
            if kind == "password" and (group == 3 or "securestring" in pattern.pattern):
                accepted = len(value) >= 6 and not value.startswith(("$", "{", "%"))
            if accepted:
                found.append(Finding(match.start(group), match.end(group), kind))
    return found


_WORD = re.compile(r"[\w\-]")


_COOKIE_LINE = re.compile(r"(?i)cookie|(?<![\w\-])-b[ \t]|--cookie")
_COOKIE_PAIR = re.compile(r"(?<![\w.\-%])([\w.\-]{1,64})=([^\s;,'\"`]{8,400})")
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "priority"})


def _cookies(text: str) -> list[Finding]:
    """Given a text, return the values of cookies on lines that set or send cookies."""
    found: list[Finding] = []
    if "cookie" not in text.lower() and "-b" not in text:
        return found
    position = 0
    for line in text.split("\n"):
        if _COOKIE_LINE.search(line):
            for match in _COOKIE_PAIR.finditer(line):
                name, value = match.group(1), match.group(2)
                if name.lower() in _COOKIE_ATTRIBUTES or "://" in value:
                    continue
                if random_like(value, 12):
                    found.append(
                        Finding(position + match.start(2), position + match.end(2), "cookie")
                    )
        position += len(line) + 1
    return found


def find_on_command_lines(text: str) -> list[Finding]:
    """Given a text, return the credentials passed on command lines, in headers and in
    cookies."""
    return [
        *_flags(text),
        *_short_flags(text),
        *_random_flag_values(text),
        *_patterns(text),
        *_cookies(text),
    ]
