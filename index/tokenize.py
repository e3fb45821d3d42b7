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
- A tiny English stopword list is dropped from plain words, never from identifier parts of a
  longer identifier and never from CJK.

Pure and deterministic: order follows the text, duplicates are kept (they are term frequencies).
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["terms", "STOPWORDS"]

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
        # The common case, a plain lowercase word or number: itself unless a stopword.
        return () if core in STOPWORDS else (core,)
    if not core:
        return ()
    pieces: list[str] = []
    for part in _SEPARATORS.split(core):
        if not part:
            continue
        camel = _CAMEL.findall(part)
        pieces.append(part.casefold())
        if len(camel) > 1:
            pieces.extend(piece.casefold() for piece in camel)
    if len(pieces) == 1:
        # A capitalised plain word ("The", "Redis"): itself unless a stopword.
        return () if whole in STOPWORDS else (whole,)
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
