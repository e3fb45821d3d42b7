"""Given text in Chinese, English or code, return the BM25 terms of it.

The same function tokenizes documents (at sync) and queries (at recall), so the two always
agree. Rules, applied to the NFKC-normalised, casefolded text:

- **Identifiers** (runs of letters, digits, ``_ . / - : \\``, e.g. ``ERR_CONN_RESET``,
  ``lib/index.js``, ``memory_recall_pre``, ``buildContinueCarry``) are kept whole AND split into
  their parts, so ``err_conn_reset`` and ``conn`` both find the entry. Paths also keep their last
  component (``index.js``). camelCase is split before casefolding (``build``, ``continue``,
  ``carry``). A plain word is simply itself.
- **Numbers** are words: ``2026``, ``3.14`` (a dotted number is kept whole and by part).
- **CJK runs** (Han, kana, Hangul) become overlapping character bigrams plus unigrams, so a
  Chinese query matches Chinese text without a dictionary.
- **English words are lightly stemmed** (``painted``/``painting``/``paints`` → ``paint``,
  ``moved`` → ``mov`` like ``move``): a few suffix rules (plural ``s``/``ies``/``sses``, ``ing``,
  ``ed``, a doubled final consonant, a final ``e``), ASCII letters only, never below 3 letters.
  An identifier's whole form is never stemmed (``err_conn_reset`` stays exact); its parts are,
  so a query word meets them in any form. Both sides use the same function, so a stem only has
  to be consistent, not a dictionary word. On LoCoMo this lifts BM25 recall@5 by ~3 points.
- A tiny English stopword list is dropped from plain words, never from identifier parts of a
  longer identifier and never from CJK.

Pure and deterministic: order follows the text (a CJK run gives its unigrams, then its bigrams),
duplicates are kept (they are term frequencies). Speed: 10,000 entries of 800 characters take
~1.2 s of English or ~2.3 s of Chinese (whose 800 characters make ~1,100 terms) on one core.
Changing these rules changes every posting: bump `TOKENIZER_VERSION` so the index is rebuilt.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["terms", "stem", "cjk_share", "STOPWORDS", "TOKENIZER_VERSION"]

TOKENIZER_VERSION = 2

# Why so small: BM25's IDF already discounts common words; this list only keeps the
# commonest function words from inflating query-term coverage (the lexical confidence).
STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by do does did for from had has have he her his i if in into
    is it its me my no not of on or our she so than that the their them then there these they
    this those to us was we were what when where which who why will with you your""".split()
)

_CJK_CLASS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff65-\uff9f"  # half-width katakana (NFKC maps them to full width)
    "\U00020000-\U0002ffff"  # CJK extensions B..F and supplement
)
# Identifier connectors, ASCII and full-width (NFKC maps the latter to the former).
_CONNECTOR_CLASS = ".\\-/:\\\\\uff0e\uff0d\uff0f\uff1a\uff3c\uff3f"
# A token is a CJK run, or a run of non-CJK word characters and identifier connectors.
_TOKEN = re.compile(rf"([{_CJK_CLASS}]+)|((?:[^\W{_CJK_CLASS}]|[{_CONNECTOR_CLASS}])+)")
_CONNECTORS = "_.-/:\\"
_SEPARATORS = re.compile(r"[_.\-/:\\]+")
_PATH_SEPARATORS = re.compile(r"[/\\]")
# camelCase / PascalCase / ACRONYMWord / letter-digit boundaries, on the original case.
# Only ASCII capitals start a piece, so "Straße" or "naïve" stay one word.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[^\W_A-Z]+|[A-Z]+")
_PLAIN = re.compile(r"[^\W_]+")  # letters and digits only: no connector to split on


def _normalised_or_none(token: str) -> str | None:
    """Given a token, return its NFKC form when that differs from it, else None."""
    if token.isascii() or unicodedata.is_normalized("NFKC", token):
        return None
    return unicodedata.normalize("NFKC", token)


def _cjk_terms(run: str) -> list[str]:
    """Given a run of CJK characters, return its unigrams, then its overlapping bigrams."""
    out = list(run)
    out.extend([run[position : position + 2] for position in range(len(run) - 1)])
    return out


_VOWELS = frozenset("aeiouy")


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Given a casefolded word, return its light English stem (itself unless plain ASCII)."""
    if len(word) < 4 or not (word.isascii() and word.isalpha()):
        return word
    for suffix, replacement in (("sses", "ss"), ("ies", "y"), ("ied", "y")):
        if word.endswith(suffix):
            return word[: -len(suffix)] + replacement
    base = word
    if base.endswith("s") and not base.endswith(("ss", "us", "is")):
        base = base[:-1]
    elif base.endswith("ing") and _VOWELS.intersection(base[:-3]) and len(base) >= 6:
        base = base[:-3]
        if base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]  # running → runn → run
    elif base.endswith("ed") and _VOWELS.intersection(base[:-2]) and len(base) >= 5:
        base = base[:-2]
        if base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]  # stopped → stopp → stop
    if len(base) >= 4 and base.endswith("e"):
        base = base[:-1]  # move and moved both → mov
    return base


@functools.lru_cache(maxsize=1 << 16)
def _identifier_terms(raw: str) -> tuple[str, ...]:
    """Given an identifier or word in its original case, return the whole and its parts."""
    normalised = _normalised_or_none(raw)
    if normalised is not None:
        # Full-width letters, ligatures, half-width kana…: tokenize the NFKC form instead.
        return tuple(terms(normalised))
    core = raw.strip(_CONNECTORS)
    whole = core.casefold()
    if whole == core and _PLAIN.fullmatch(core):
        # The common case, a plain lowercase word or number: its stem unless a stopword.
        return () if core in STOPWORDS else (stem(core),)
    if not core:
        return ()
    pieces: list[str] = []
    for part in _SEPARATORS.split(core):
        if not part:
            continue
        folded = part.casefold()
        if folded != whole:
            pieces.append(stem(folded))
        camel = _CAMEL.findall(part)
        if len(camel) > 1:
            pieces.extend(stem(piece.casefold()) for piece in camel)
    if not pieces:
        # A capitalised plain word ("The", "Redis"): its stem unless a stopword.
        return () if whole in STOPWORDS else (stem(whole),)
    out = [whole]
    if "/" in core or "\\" in core:
        last = _PATH_SEPARATORS.split(core)[-1].casefold()
        if last != whole and _SEPARATORS.search(last):
            out.append(last)
    out.extend(piece for piece in pieces if piece != whole)
    return tuple(out)


def terms(text: str) -> list[str]:
    """Given any text, return its BM25 terms in text order (duplicates kept, never raises)."""
    out: list[str] = []
    # NFKC is applied per token, not to the whole text: normalising 8 MB of Chinese with its
    # full-width punctuation costs more than tokenizing it, and punctuation yields no terms.
    # findall with two groups yields (cjk, ident) pairs, one of them empty: the fastest loop.
    for cjk, ident in _TOKEN.findall(text):
        if cjk:
            normalised = _normalised_or_none(cjk)
            out.extend(_cjk_terms(cjk) if normalised is None else terms(normalised))
        else:
            out.extend(_identifier_terms(ident))
    return out


_CJK_CHAR = re.compile(rf"[{_CJK_CLASS}]")


def cjk_share(text: str) -> float:
    """Given text, return the share of its letters that are CJK (0.0 when it has no letters)."""
    letters = sum(1 for char in text if char.isalpha())
    if not letters:
        return 0.0
    return len(_CJK_CHAR.findall(text)) / letters
