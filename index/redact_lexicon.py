"""What marks a credential by its context, and what a random secret value looks like.

Labels (the words people write before a password or a token, in many languages) are data in
`redact_labels`. Names: the parts of an identifier (`db_password`, `datadog.apiKey`,
`SECRET_KEY_BASE`) that say it holds a secret. Values: `secret_like` and `random_like` tell a
generated credential from a word, a number, a path, a placeholder, words joined by separators
or a value with a visible pattern (`0123456789abcdef`). Guards: `public_shape` names the
random-looking strings that are public by their shape (UUIDs, digests, content ids, ARNs,
ULIDs) and must survive. Everything here is pure and linear in its input.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache

from carryd.index.redact_labels import NOT_CREDENTIAL_BEFORE_KEY
from carryd.index.redact_rules import password_value

# Parts of an identifier that say it holds a secret (compared on lowercase parts).
SECRET_PARTS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "pw",
        "secret",
        "secrets",
        "token",
        "tokens",
        "key",
        "apikey",
        "authkey",
        "credential",
        "credentials",
        "creds",
        "auth",
        "mnemonic",
        "seed",
        "privatekey",
        "storepass",
        "keypass",
        "srcstorepass",
        "deststorepass",
        "passin",
        "passout",
        "license",
        "licence",
        "sessid",
        "jsessionid",
        "phpsessid",
        "sid",
        "cookie",
        "signature",
        "salt",
        "pepper",
        "otp",
        "totp",
        "pin",
        "sig",
        "requirepass",
        "masterauth",
        "dockerconfigjson",
        "dockercfg",
    }
)
# Parts that make a name public or not a value at all, whatever else it holds.
PUBLIC_PARTS = frozenset(
    {
        "public",
        "pub",
        "pubkey",
        "publickey",
        "fingerprint",
        "ref",
        "path",
        "file",
        "url",
        "uri",
        "host",
        "name",
        "user",
        "username",
        "type",
        "hash",
        "length",
        "len",
        "size",
        "expires",
        "expiry",
        "ttl",
        "policy",
        "prompt",
        "stdin",
        "field",
        "column",
        "env",
        "arn",
        "region",
        "count",
        "max",
        "min",
        "timeout",
        "format",
        "mode",
        "id",
        "sha",
        "algorithm",
    }
)
# `id` makes a name public (`key_id`, `accessKeyId`) except in these, whose values people treat
# as secrets too.
_SECRET_WITH_ID = ("private_key_id", "privatekeyid", "secretkeyid")

_NAME_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def name_parts(name: str) -> list[str]:
    """Given an identifier (`datadog.apiKey`, `SECRET_KEY_BASE`), return its lowercase parts."""
    return [part.lower() for part in _NAME_PARTS.findall(name)]


@lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Given an identifier, return whether it names a secret: one of its parts (or its whole
    lowercase form) is a secret word and none makes it public."""
    if len(name) > 80:
        return False
    lowered = name.lower()
    if any(marker in lowered for marker in _SECRET_WITH_ID):
        return True
    parts = name_parts(name)
    if not parts or PUBLIC_PARTS.intersection(parts):
        return False
    if parts[-1] == "key" and len(parts) > 1 and parts[-2] in NOT_CREDENTIAL_BEFORE_KEY:
        return False  # cache_key, primaryKey, object-key
    compact = re.sub(r"[^a-z]", "", lowered)
    return bool(SECRET_PARTS.intersection(parts)) or compact.endswith(
        ("password", "passwd", "secret", "token", "apikey", "storepass", "keypass")
    )


def entropy(value: str) -> float:
    """Given a string, return its Shannon entropy in bits per character."""
    if not value:
        return 0.0
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_SAMPLE = 128  # characters enough to see whether a value is random; bounds the cost
_DIGIT = re.compile(r"[0-9]")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_NOT_ALNUM = re.compile(r"[^0-9A-Za-z]")
# Neighbours of different classes (digit, upper, lower, other), counted by the regex engine.
_CLASS_CHANGE = re.compile(
    r"(?:(?<=[0-9])(?=[^0-9])|(?<=[A-Z])(?=[^A-Z])|(?<=[a-z])(?=[^a-z])"
    r"|(?<=[^0-9A-Za-z])(?=[0-9A-Za-z]))"
)
_HEX_ONLY = re.compile(r"[0-9a-fA-F]+")


def has_digit(value: str) -> bool:
    return _DIGIT.search(value) is not None


def _patterned(value: str) -> bool:
    """Given a string, return whether it has a visible pattern: many neighbours one code point
    apart (`0123456789abcdef`, `fedcba98`) or one character repeated."""
    sample = value[:_SAMPLE]
    if len(sample) < 8:
        return False
    codes = list(map(ord, sample))
    steps = sum(1 for a, b in zip(codes, codes[1:], strict=False) if -1 <= a - b <= 1)
    return steps >= 0.4 * (len(sample) - 1)


# Words and numbers joined by separators: a file name, a version, a slug, a routing key
# (`tool-cli_3.4.1_linux_amd64.tar.gz`, `invoice.paid.v2`). A piece is letters, optionally
# followed by a few digits (`amd64`, `v2`), or digits alone.
_WORDY_PIECE = re.compile(r"[A-Za-z]{1,16}[0-9]{0,3}|[0-9]{1,10}")
_SEPARATORS = re.compile(r"[_\-.]")


def words_joined(value: str) -> bool:
    """Given a value, return whether it is three or more words or numbers joined by `_`, `-`
    or `.`: the pieces of a random token mix letters and digits at random, a name's do not."""
    pieces = [piece for piece in _SEPARATORS.split(value[:_SAMPLE]) if piece]
    return len(pieces) >= 3 and all(_WORDY_PIECE.fullmatch(piece) for piece in pieces)


def random_like(value: str, minimum: int = 16) -> bool:
    """Given a string, return whether it reads like generated key material: long enough, with
    letters and digits (or two letter cases), the entropy of random characters for its
    alphabet, no visible pattern, and the frequent changes of character class of random
    characters (words joined in camelCase or with a number change class rarely). Judged on
    its first `_SAMPLE` characters."""
    if len(value) < minimum:
        return False
    sample = value[:_SAMPLE]
    digits = _DIGIT.search(sample) is not None
    upper = _UPPER.search(sample) is not None
    lower = _LOWER.search(sample) is not None
    classes = digits + upper + lower
    if classes < 2 or not (upper or lower) or _patterned(sample):
        return False
    if len(_CLASS_CHANGE.findall(sample)) < 0.25 * (len(sample) - 1):
        return False
    bits = entropy(sample)
    if _HEX_ONLY.fullmatch(sample):
        # Hex: 16 symbols. n random ones show about 4 - 15 / (2 n ln 2) bits each (3.66 for
        # 32); the bar is that less a margin of ~2.5 standard deviations, so 1 random key in
        # 300 is taken for a pattern (a bar of 3.5 refused 1 in 5 random 32-hex keys).
        return bits >= min(3.5, 4 - 15 / (2 * len(sample) * math.log(2)) - 0.45)
    threshold = min(4.0, math.log2(len(sample)) - 0.9) if classes == 3 else 3.4
    # Words joined by separators last: the costliest test, and rarely reached.
    return bits >= min(threshold, math.log2(len(sample)) - 0.9) and not words_joined(sample)


def strong_password(value: str, quoted: bool) -> bool:
    """Given a value near a password label with no separator between them, return whether it
    is unmistakably a password: 8+ characters with a digit and a letter, and a symbol inside
    or both letter cases (a word or a number in a sentence is not)."""
    if len(value) < 8 or not secret_like(value, quoted) or not has_digit(value):
        return False
    symbol = _NOT_ALNUM.search(value, 1, len(value) - 1) is not None
    mixed = _UPPER.search(value) is not None and _LOWER.search(value) is not None
    return symbol or mixed


def credential_value(value: str, quoted: bool, password: bool) -> bool:
    """Given a value a label or a secret name points at, return whether it is the credential:
    secret-like, and holding a digit (a password) or random-looking (a token, a key)."""
    if not secret_like(value, quoted):
        return False
    if random_like(value, 12):
        return True
    digit = has_digit(value)
    if password:
        return digit or (quoted and len(value) >= 12)
    letter = _UPPER.search(value) is not None or _LOWER.search(value) is not None
    # A key is no words joined (`invoice.paid.v2` is a routing key's name); a password may be.
    return (
        digit and letter and len(value) >= 12 and entropy(value) >= 3.2 and not words_joined(value)
    )


def path_like(value: str) -> bool:
    """Given a value, return whether it is a path or resource name made of words
    (`projects/acme/secrets/db/versions/5`, `uploads/2026/11/x.png`), not base64."""
    segments = value.strip("/").split("/")
    if len(segments) < 3:
        return False
    words = sum(1 for segment in segments if segment.isdigit() or _WORD_SEGMENT.fullmatch(segment))
    return words >= 2


_WORD_SEGMENT = re.compile(r"[a-z][a-z_-]{2,}[a-z0-9]|[a-z]{1,3}")


def secret_like(value: str, quoted: bool = False) -> bool:
    """Given a value next to a secret's label, return whether it can be the secret: not a
    placeholder, path or prose word; 6+ characters holding a digit or a symbol beside letters,
    or random-looking."""
    if len(value) < 6 or len(value) > 4096 or public_shape(value):
        return False
    if not (password_value(value) or (quoted and password_value(re.sub(r"[(\[{]", "", value)))):
        return False  # a code expression, a path, a placeholder; a quoted value may hold `(`
    if not value.isascii() and any(
        unicodedata.east_asian_width(character) in ("W", "F") for character in value
    ):
        return False
    if value.startswith(("$", "%", "<", "{", "-")) or value.endswith(":") or "://" in value:
        return False
    if "/" in value and path_like(value):
        return False
    if random_like(value, 12):
        return True
    has_letter = any(character.isalpha() for character in value)
    digit = has_digit(value)
    has_symbol = _NOT_ALNUM.search(value, 1, len(value) - 1) is not None
    mixed_case = _UPPER.search(value, 1) is not None and _LOWER.search(value) is not None
    if value.isdigit() or not has_letter:
        return len(value) >= 10 and not value.isdigit() and entropy(value) >= 3.0
    if not (digit or has_symbol or mixed_case):
        # One bare word: a secret only if it is long and reads random (an app password).
        return (
            len(value) >= 12
            and value.islower()
            and entropy(value) >= 3.3
            and re.search(r"[^aeiou]{5}", value) is not None
        )
    return digit or has_symbol or mixed_case


_PUBLIC_SHAPES = re.compile(
    r"""(?x)^(?:
        (?:sha1|sha224|sha256|sha384|sha512|sha3-\d+|md5|blake2b?|h1|xxh\d*)[:\-=].*  # digests
      | arn:aws[a-z-]*:.*                                  # ARNs
      | Qm[1-9A-HJ-NP-Za-km-z]{44}                         # IPFS content id v0
      | ba[fg][a-z2-7]{50,}                                # IPFS content id v1
      | 0[0-9A-HJKMNP-TV-Z]{25}                            # ULID
      | (?:bc1|tb1|ltc1)[02-9ac-hj-np-z]{20,}              # bech32 addresses (public)
      | age1[02-9ac-hj-np-z]{50,}                          # age public key
      | (?:npub|nevent|note)1[02-9ac-hj-np-z]{20,}
      | (?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+)\b.*
      | data:[\w/+.-]+;base64,.*
    )$"""
)


def public_shape(value: str) -> bool:
    """Given a random-looking string, return whether its shape says it is public: a prefixed
    digest, an ARN, a content id, a ULID, an address or public key, a data URI. (A UUID is
    public by itself, but next to a secret's name it is the secret: Heroku's API keys.)"""
    return bool(_PUBLIC_SHAPES.match(value))
