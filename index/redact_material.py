"""Key material that is not a token: mnemonic word lists (BIP-39 seed phrases), byte-array
keypairs (`[12,201,…]`), 64-hex private keys next to words that say so, and the private
members of a JSON Web Key. Also the public blocks that must survive redaction: certificates,
public keys, `ssh-rsa` lines, data URIs and base64 bodies of public file types, whose spans the
engine keeps. Every pattern is bounded: linear time.
"""

from __future__ import annotations

import re

from carryd.index.redact_finding import Finding
from carryd.index.redact_lexicon import random_like

__all__ = ["find_material", "public_spans"]

# 12-24 words of 3-8 lowercase letters separated by single spaces or line breaks.
_WORDS = re.compile(r"(?<![\w\-])(?:[a-z]{3,8}(?:[ \t]|\r?\n){1,3}){11,23}[a-z]{3,8}(?![\w\-])")
# Lowercase pieces one of which every `_MNEMONIC_CONTEXT` match holds: a cheap test first.
_MNEMONIC_WORDS = (
    "mnemonic",
    "seed",
    "recovery",
    "phrase",
    "wallet",
    "bip",
    "助记",
    "助記",
    "シード",
    "ニーモニック",
    "복구",
    "시드",
    "фраза",
    "palabras",
    "semilla",
    "wörter",
)
_MNEMONIC_CONTEXT = re.compile(
    r"(?i)mnemonic|seed[ _-]?(?:phrase|words)|(?:recovery|backup|secret|wallet)[ _-]?"
    r"(?:recovery[ _-]?)?(?:phrase|words|seed)|wallet|bip-?39|助记词|助記詞|シードフレーズ|"
    r"ニーモニック|복구 ?(?:구문|문구)|시드 ?(?:구문|문구)|сид-?фраза|фраза восстановления|"
    r"frase (?:semilla|de recuperación)|palabras de recuperación|wiederherstellungs|phrase secrète|"
    r"phrase de récupération"
)


def _mnemonics(text: str) -> list[Finding]:
    """Given a text, return the word lists that are seed phrases: 12-24 lowercase words on
    lines of their own or in quotes, with a word that names a seed phrase before them."""
    found: list[Finding] = []
    for window_start, window_end in _after_context(text):
        for match in _WORDS.finditer(text, window_start, window_end):
            if _seed_phrase(text, match):
                found.append(Finding(match.start(), match.end(), "mnemonic"))
    return found


def _after_context(text: str) -> list[tuple[int, int]]:
    """Given a text, return the spans (merged) from each word that names a seed phrase to
    400 characters past it: the only places a seed phrase is looked for."""
    lowered = text.lower()
    starts: list[int] = []
    for word in _MNEMONIC_WORDS:
        position = lowered.find(word)
        while position >= 0:
            starts.append(position)
            position = lowered.find(word, position + 1)
    spans: list[tuple[int, int]] = []
    for start in sorted(starts):
        end = min(len(text), start + 600)
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def _seed_phrase(text: str, match: re.Match[str]) -> bool:
    """Given a run of 12-24 lowercase words, return whether it stands as a seed phrase: on
    lines of its own or after `:`, `=` or a quote, with a word naming one before it."""
    count = len(match.group().split())
    before = text[max(0, match.start() - 200) : match.start()]
    window = max(0, match.start() - 400)  # a bounded look back: linear time
    line_start = max(window, text.rfind("\n", window, match.start()) + 1)
    prefix = text[line_start : match.start()]
    standalone = not prefix.strip(" \t\"'`>*-") or prefix.rstrip().endswith(
        (":", "=", '"', "'", "`")
    )
    return standalone and count >= 12 and _MNEMONIC_CONTEXT.search(before) is not None


_BYTE_ARRAY = re.compile(
    r"\[(?:[ \t\n]{0,3}\d{1,3}[ \t\n]{0,3},){31,127}[ \t\n]{0,3}\d{1,3}[ \t\n]{0,3}\]"
)


def _byte_arrays(text: str) -> list[Finding]:
    """Given a text, return arrays of 32-128 byte values (a Solana keypair file is 64)."""
    found: list[Finding] = []
    for match in _BYTE_ARRAY.finditer(text):
        numbers = [int(number) for number in re.findall(r"\d+", match.group())]
        if all(number <= 255 for number in numbers) and len(set(numbers)) >= 16:
            found.append(Finding(match.start(), match.end(), "private_key"))
    return found


_HEX_KEY = re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z])")
_KEY_CONTEXT = re.compile(
    r"(?i)priv|secret|seed|signing|keystore|mnemonic|私钥|秘密鍵|개인\s?키|"
    r"приватн|privé|privado|privat"
)


def _hex_keys(text: str) -> list[Finding]:
    """Given a text, return 64-hex strings (an Ethereum or Ed25519 private key) with a word
    that says it is private within the 120 characters before it."""
    found: list[Finding] = []
    for match in _HEX_KEY.finditer(text):
        just_before = text[max(0, match.start() - 12) : match.start()].lower()
        if any(word in just_before for word in ("sha", "digest", "hash", "oid", "commit", "@")):
            continue
        if _KEY_CONTEXT.search(text, max(0, match.start() - 120), match.start()):
            found.append(Finding(match.start(), match.end(), "private_key"))
    return found


_JWK_MEMBER = re.compile(r"\"(?:d|p|q|dp|dq|qi|k|oth)\"[ \t]*:[ \t]*\"([A-Za-z0-9_\-]{16,4096})\"")


def _jwk_members(text: str) -> list[Finding]:
    """Given a text, return the private members (`d`, `p`, `q`, `dp`, `dq`, `qi`, `k`) of JSON
    Web Keys."""
    return [
        Finding(match.start(1), match.end(1), "private_key")
        for match in _JWK_MEMBER.finditer(text)
        if random_like(match.group(1), 16)
    ]


def find_material(text: str) -> list[Finding]:
    """Given a text, return the key material in it."""
    return [*_mnemonics(text), *_byte_arrays(text), *_hex_keys(text), *_jwk_members(text)]


_PUBLIC_BLOCK = re.compile(
    r"-{5}BEGIN (CERTIFICATE|TRUSTED CERTIFICATE|CERTIFICATE REQUEST|NEW CERTIFICATE REQUEST|"
    r"X509 CRL|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|PGP MESSAGE|"
    r"SSH2 PUBLIC KEY|OPENSSH PUBLIC KEY|DH PARAMETERS|EC PARAMETERS)-{5}"
)
_SSH_PUBLIC = re.compile(
    r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d{3}|sk-ssh-ed25519@openssh\.com)"
    r"[ \t]+AAAA[A-Za-z0-9+/]{16,16384}={0,3}"
)
_FULL_LINES = r"(?:\r?\n[ \t]*[A-Za-z0-9+/=]{16,100}(?=\r?\n|$)){0,100000}"
_DATA_URI = re.compile(
    r"data:[\w/+.\-]{1,100}(?:;[\w=\-]{1,40}){0,3};base64,[A-Za-z0-9+/=]{1,10000000}" + _FULL_LINES
)
# The base64 of a public file type's first bytes: PNG, JPEG, GIF, PDF, ZIP, WebP/RIFF, SVG/XML.
_PUBLIC_BASE64 = re.compile(
    r"(?m)^[ \t]*(?:iVBORw0KGgo|/9j/|R0lGOD|JVBERi0|UEsDB|UklGR|PD94bWwg|PHN2Zy)"
    r"[A-Za-z0-9+/=]{0,100}" + _FULL_LINES
)


# The public members of a JSON Web Key: an RSA key's modulus and exponent, an EC or OKP key's
# coordinates. Its private members (`d`, `p`, `q`, …) are found by `_jwk_members`.
_JWK_PUBLIC_MEMBER = re.compile(r"\"(?:n|e|x|y)\"[ \t]*:[ \t]*\"([A-Za-z0-9_\-]{1,4096})\"")
# `${NAME:?message}`: the shell's error when NAME is unset, a message, never a value.
_UNSET_MESSAGE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]{0,62}:?\?[^}\n]{0,200}\}")


def public_spans(text: str) -> list[tuple[int, int]]:
    """Given a text, return the spans of what is public however random it looks:
    certificate, public-key and signature blocks, `ssh-rsa AAAA…` lines, data URIs and base64
    bodies that start like a public file type, the public members of a JSON Web Key, and the
    message of a shell's `${NAME:?message}`."""
    spans: list[tuple[int, int]] = []
    if '"kty"' in text:
        spans.extend(match.span(1) for match in _JWK_PUBLIC_MEMBER.finditer(text))
    if "${" in text:
        spans.extend(match.span() for match in _UNSET_MESSAGE.finditer(text))
    if "-----BEGIN " in text:
        for match in _PUBLIC_BLOCK.finditer(text):
            end_line = f"-----END {match.group(1)}-----"
            end = text.find(end_line, match.end())
            spans.append((match.start(), len(text) if end < 0 else end + len(end_line)))
    for pattern in (_SSH_PUBLIC, _DATA_URI, _PUBLIC_BASE64):
        spans.extend(match.span() for match in pattern.finditer(text))
    return spans
