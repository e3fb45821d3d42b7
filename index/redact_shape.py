"""Credentials found by their shape alone, wherever they stand: a vendor-like prefix followed by
a long random run (`hvs.…`, `ntn_…`, `GOCSPX-…`, `dapi<hex>`, `AGE-SECRET-KEY-1…`) — a rule on
the shape, not a list of prefixes — a long random token of all three character classes, a
secret path segment of a webhook URL, and a 40-character AWS-secret-shaped string next to words
that say it is one. Guards keep what is random but public (`redact_lexicon.public_shape`, hex
digests and hashes, carryd's own `mem_` ids). Scanning is one pass over runs of token
characters: linear time.
"""

from __future__ import annotations

import base64
import json
import re

from carryd.index.redact_finding import Finding
from carryd.index.redact_lexicon import (
    entropy,
    has_digit,
    name_parts,
    public_shape,
    random_like,
    secret_name,
    words_joined,
)

__all__ = ["find_by_shape"]

_RUN = re.compile(r"(?<![A-Za-z0-9_\-.+/=])[A-Za-z0-9_\-.+/]{20,}={0,2}(?![A-Za-z0-9_\-.+/=])")
# A prefix: one word of 2-12 letters and a separator (`hvs.`, `ntn_`, `tskey-`, `GOCSPX-`).
_PREFIX = re.compile(r"[A-Za-z]{2,12}[_\-.]")
_GLUED_HEX = re.compile(r"([a-z]{3,6})([0-9a-f]{32,128})")
_HEX = re.compile(r"[0-9a-fA-F]+")
# Words that name a digest or an id, never a vendor: `sha256-<hex>`, `commit-<hex>`.
_DIGEST_WORDS = frozenset(
    {
        "sha",
        "md",
        "blake",
        "hash",
        "commit",
        "rev",
        "git",
        "oid",
        "id",
        "etag",
        "digest",
        "checksum",
        "sum",
        "crc",
        "cache",
        "build",
        "object",
        "tree",
        "blob",
        "mem",
        "sha1",
        "uuid",
        "guid",
        "trace",
        "span",
        "request",
        "req",
        "run",
        "job",
        "node",
        "pod",
        "vendor",
        "chunk",
        "index",
        "main",
        "app",
        "assets",
        "bundle",
        "release",
        "image",
    }
)
# Prefixes of keys that are public by design: Stripe's and Mapbox's publishable keys.
_PUBLIC_PREFIXES = frozenset({"pk", "pub", "npub"})
_CARRYD_ID = re.compile(r"mem_[0-9a-fA-F]{32}")
# Just before a run: what makes it a digest or a reference (`sha256:`, `h1:`, `@`, `#`).
_DIGEST_BEFORE = re.compile(
    r"(?i)(?:sha\d{0,3}|md5|h1|blake2b?|oid|digest|integrity|@|#)[:=\s\"']{0,2}$"
)


def _padded_base64(run: str) -> bool:
    """Given a run, return whether it ends in base64 padding (`=`) at a length that is a
    multiple of 4: a base64 blob, which like one holding `+` or `/` is judged by its context."""
    return run.endswith("=") and len(run) % 4 == 0


def _public_json(run: str) -> bool:
    """Given a run, return whether it is base64 of a JSON object or array (it starts `eyJ` or
    `W3`) whose names say nothing of a secret: data, public by what it decodes to. A JWT has
    dots and is no single run; a docker `auths` blob names `auth` and stays a secret."""
    if not run.startswith(("eyJ", "W3")) or len(run) > 65536:
        return False
    padded = run + "=" * (-len(run) % 4)
    try:
        decoded = json.loads(base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_")))
    except (ValueError, RecursionError):  # not base64, UTF-8 or JSON; or nested too deep
        return False
    return not _names_a_secret(decoded, 0)


def _names_a_secret(value: object, depth: int) -> bool:
    """Given decoded JSON, return whether one of its names (at any depth up to 8) says it holds
    a secret, or it is nested too deep to tell."""
    if depth > 8:
        return True
    if isinstance(value, dict):
        return any(
            secret_name(str(name)) or _names_a_secret(member, depth + 1)
            for name, member in value.items()
        )
    if isinstance(value, list):
        return any(_names_a_secret(member, depth + 1) for member in value)
    return False


# A Bitcoin address in base58 (`1…`, `3…`, both letter cases, no 0, O, I or l): public, and
# judged so only when nothing names it (a value after `password:` is a password whatever it
# looks like).
_BASE58_ADDRESS = re.compile(r"[13](?=.*[A-Z])(?=.*[a-z])[1-9A-HJ-NP-Za-km-z]{25,34}")


def _run_kind(run: str) -> bool:
    """Given a run of token characters, return whether its shape is a credential's."""
    if _padded_base64(run) or _public_json(run) or _BASE58_ADDRESS.fullmatch(run):
        return False
    run = run.rstrip(".=")
    if "/" in run or "+" in run or public_shape(run) or _CARRYD_ID.fullmatch(run):
        return False  # base64 blobs and paths are judged by their context, not their shape
    if words_joined(run):
        return False
    prefix = _PREFIX.match(run)
    if prefix is not None and prefix.group()[:-1].lower() in _PUBLIC_PREFIXES:
        return False
    if prefix is not None and prefix.group()[:-1].lower() not in _DIGEST_WORDS:
        body = run[prefix.end() :]
        if _HEX.fullmatch(body.replace("-", "").replace("_", "")):
            return len(body) >= 32 and random_like(body, 32)
        return random_like(body, 27)
    glued = _GLUED_HEX.fullmatch(run)
    if glued is not None:
        word = glued.group(1)
        return (
            word not in _DIGEST_WORDS and not _HEX.fullmatch(word) and random_like(glued.group(2))
        )
    if _HEX.fullmatch(run.replace("-", "")):
        return False
    return (
        len(run) >= 32
        and any(character.isupper() for character in run)
        and any(character.islower() for character in run)
        and any(character.isdigit() for character in run)
        and random_like(run, 32)
        and entropy(run) >= 4.2
    )


def _shaped(text: str) -> list[Finding]:
    found: list[Finding] = []
    for match in _RUN.finditer(text):
        before = text[max(0, match.start() - 12) : match.start()]
        if _DIGEST_BEFORE.search(before):
            continue
        line_start = max(0, text.rfind("\n", max(0, match.start() - 80), match.start()) + 1)
        if _PUBLIC_WORDS.search(text, max(line_start, match.start() - 80), match.start()):
            continue  # `wallet address 7xKX…`, `public key …`: public by what the line says
        if _named_an_id(text, line_start, match.start()):
            continue
        if _run_kind(match.group()):
            found.append(Finding(match.start(), match.end(), "token"))
    return found


# `name=`, `name: `, `"name": "` right before a value.
_NAME_BEFORE = re.compile(r"([A-Za-z_][\w.\-]{0,62})[\"']?[ \t]{0,3}(?:=|:)[ \t]{0,3}[\"'`]?$")
# The word `id` in prose right before a value (`program id <value>`), and the word before it.
_ID_WORD_BEFORE = re.compile(
    r"(?:([A-Za-z]{1,20})[ \t]{1,3})?(?<![\w\-])(?:id|ids|ID|Id)[ \t]{1,3}$"
)
# Ids that people keep secret: a session's, a login's.
_SECRET_ID_PARTS = frozenset({"session", "sess", "auth", "access", "refresh", "csrf", "xsrf"})


def _named_an_id(text: str, line_start: int, start: int) -> bool:
    """Given the start of a value and of its line, return whether the name it is assigned to
    (`scroll_id=`, `traceId:`, `"request-id": "`, `x-amz-id-2:`) or the word before it
    (`program id …`) says it is an id: random by design, public, unless the name says it holds
    a secret or a session's id."""
    words = _ID_WORD_BEFORE.search(text, max(line_start, start - 40), start)
    if words is not None:
        return _SECRET_ID_PARTS.isdisjoint(name_parts(words.group(1) or ""))
    name = _NAME_BEFORE.search(text, max(line_start, start - 70), start)
    if name is None:
        return False
    parts = name_parts(name.group(1))
    while len(parts) > 1 and parts[-1].isdigit():
        parts.pop()  # `x-amz-id-2`
    return (
        bool(parts)
        and parts[-1] in ("id", "ids")
        and not secret_name(name.group(1))
        and _SECRET_ID_PARTS.isdisjoint(parts)
    )


# Words before a random token, on its line, that say it is public.
_PUBLIC_WORDS = re.compile(
    r"(?i)\b(?:address|public|pubkey|publishable|fingerprint|checksum|digest|hash|commit|txid|"
    r"tx|transaction|block|signature|cid|etag|cache)\b"
)
_HOOK_URL = re.compile(
    r"(?i)https?://[^\s/]{1,200}/(?:[^\s/?#]{1,80}/){0,4}?"
    r"[^\s/?#]{0,30}(?:hook|services|trigger|notify|incoming)[^\s/?#]{0,30}/"
    r"([^\s?#)>\]\"']{16,400})"
)


def _webhooks(text: str) -> list[Finding]:
    """Given a text, return the secret path of webhook URLs (`…/hooks/<id>`)."""
    found: list[Finding] = []
    for match in _HOOK_URL.finditer(text):
        path = match.group(1)
        pieces = [piece for piece in path.split("/") if piece]
        if any(random_like(piece, 16) for piece in pieces):
            found.append(Finding(match.start(1), match.end(1), "webhook"))
    return found


# Forty characters standing alone: a run of base64url (`-`, `_`) is longer than forty, and a
# window of it is no AWS secret.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=_\-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_\-])")
# Words that make a random 40-character string public: it is a cache key, a digest, an id.
_PUBLIC_CONTEXT = re.compile(
    r"(?i)cache|etag|hash|digest|checksum|fingerprint|sha\d|commit|revision|nonce|"
    r"request[ _-]?id|trace|build[ _-]?id|object[ _-]?id|content[ _-]?id|key[ _-]?id"
)
_AWS_CONTEXT = re.compile(r"(?i)aws|secret|akia|asia|credential")


def _aws_secrets(text: str) -> list[Finding]:
    """Given a text, return the 40-character strings with the shape and randomness of an AWS
    secret access key, unless the line so far names them a cache key, a digest or an id and
    says nothing of AWS or secrets."""
    found: list[Finding] = []
    for match in _AWS_SECRET.finditer(text):
        value = match.group()
        if (
            not (_UPPER.search(value) and _LOWER.search(value) and has_digit(value))
            or entropy(value) < 4.3
        ):
            continue
        # The line so far, at most 240 characters back: a string on a line of its own is
        # redacted whatever the line before it says.
        window = max(0, match.start() - 240)
        line_start = max(window, text.rfind("\n", window, match.start()) + 1)
        public = _PUBLIC_CONTEXT.search(text, line_start, match.start())
        if public is None or _AWS_CONTEXT.search(text, line_start, match.start()):
            found.append(Finding(match.start(), match.end(), "aws_secret_key"))
    return found


_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")


# A product or license key: 4-8 groups of 4-8 capitals and digits (`XXXX-XXXXXX-XXXXXX-…`).
_GROUPED_KEY = re.compile(
    r"(?<![A-Za-z0-9\-])[A-Z0-9]{4,8}(?:-[A-Z0-9]{4,8}){3,7}(?![A-Za-z0-9\-])"
)
# Words that say a license or product key is near, in the languages notes are written in.
_LICENSE_WORDS = re.compile(
    r"(?i)licen[cs]|lizenz|licença|licenza|licentie|serial|product[ _-]?key|activat|aktivier|"
    r"ライセンス|プロダクトキー|许可证|授权码|序列号|激活码|라이선스|라이센스|시리얼|лиценз|"
    r"ключ продукта|серийн"
)


def _grouped_keys(text: str) -> list[Finding]:
    """Given a text, return the product and license keys in it: grouped capitals and digits,
    two or more groups mixing both (a random key's groups do; a part number's and an
    uppercase UUID's, hex only, do not), with a word naming a license in the 300 characters
    before it."""
    found: list[Finding] = []
    for match in _GROUPED_KEY.finditer(text):
        groups = match.group().split("-")
        mixed = sum(1 for group in groups if has_digit(group) and not group.isdigit())
        if mixed < 2 or _HEX.fullmatch(match.group().replace("-", "")):
            continue
        if _LICENSE_WORDS.search(text, max(0, match.start() - 300), match.start()):
            found.append(Finding(match.start(), match.end(), "license_key"))
    return found


def find_by_shape(text: str) -> list[Finding]:
    """Given a text, return the credentials its token shapes show."""
    return [*_shaped(text), *_webhooks(text), *_aws_secrets(text), *_grouped_keys(text)]
