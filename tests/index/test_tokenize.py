"""The tokenizer: one function for documents and queries, Chinese and English alike."""

from __future__ import annotations

import unicodedata

import pytest
from carryd.index.tokenize import stem, terms
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   \n\t", []),
        ("Redis server", ["redis", "server"]),
        ("the cache and the queue", ["cach", "queu"]),  # stopwords dropped; final e stemmed
        ("Retry 3 times in 2026", ["retry", "3", "tim", "2026"]),
        ("ERR_CONN_RESET", ["err_conn_reset", "err", "conn", "reset"]),
        ("lib/index.js", ["lib/index.js", "index.js", "lib", "index", "js"]),
        ("memory_recall_pre", ["memory_recall_pre", "memory", "recall", "pre"]),
        ("buildContinueCarry", ["buildcontinuecarry", "build", "continu", "carry"]),
        ("getHTTPResponses", ["gethttpresponses", "get", "http", "respons"]),
        ("is_ready", ["is_ready", "is", "ready"]),  # identifier parts keep stopwords
        ("end of sentences.", ["end", "sentenc"]),  # trailing connectors are punctuation
        ("__init__", ["init"]),
        ("v1.2.3", ["v1.2.3", "v1", "2", "3"]),
        ("Straße naïve", ["strass", "naïve"]),  # casefold, and no split inside non-ASCII words
        ("我们讨论", ["我", "们", "讨", "论", "我们", "们讨", "讨论"]),
        ("库", ["库"]),
        ("用 Redis 替代", ["用", "redis", "替", "代", "替代"]),
        ("MySQL。", ["mysql", "my", "sql"]),
        (
            "ｌｉｂ／ｉｎｄｅｘ．ｊｓ",
            ["lib/index.js", "index.js", "lib", "index", "js"],
        ),  # full-width
        ("ＥＲＲ＿ＣＯＮＮ＿ＲＥＳＥＴ", ["err_conn_reset", "err", "conn", "reset"]),
        ("ﬁnd", ["find"]),  # ligature
    ],
)
def test_terms_table(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("painted", "paint"),
        ("painting", "paint"),
        ("paints", "paint"),
        ("running", "run"),
        ("stopped", "stop"),
        ("move", "mov"),
        ("moved", "mov"),
        ("parties", "party"),
        ("studied", "study"),
        ("classes", "class"),
        ("status", "status"),  # -us, -is, -ss are not plurals
        ("analysis", "analysis"),
        ("process", "process"),
        ("conn", "conn"),  # nothing removed, nothing undoubled
        ("sing", "sing"),  # too short to lose -ing
        ("js", "js"),
        ("naïve", "naïve"),  # not ASCII: untouched
        ("v8", "v8"),
    ],
)
def test_stem_table(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ("ERR_CONN_RESET", "the socket died with err_conn_reset again"),
        ("conn reset", "the socket died with ERR_CONN_RESET again"),
        ("index.js", "edit lib/index.js first"),
        ("recall", "hook memory_recall_pre runs first"),
        ("continue carry", "see buildContinueCarry"),
        ("数据库", "我们选了新的数据库方案"),
        ("向量", "向量数据库"),
        ("When did she paint a sunrise?", "I painted that lake sunrise last year"),
        ("moving boxes", "we moved the box"),
    ],
)
def test_a_query_shares_terms_with_its_document(query: str, document: str) -> None:
    assert set(terms(query)) <= set(terms(document))


_ALPHABET = st.sampled_from(
    list("abcXYZ019 _./-:\\\n。，数据库向量") + ["ＡＢ", "ｊｓ", "／", "．", "ﬁ", "ｶﾀ"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_terms_ignore_nfkc_compatibility_forms(text: str) -> None:
    assert terms(unicodedata.normalize("NFKC", text)) == terms(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_terms_never_raise_and_are_deterministic_casefolded_nonempty(text: str) -> None:
    first = terms(text)
    assert first == terms(text)
    assert all(term and term == term.casefold() for term in first)
    assert all(not term.isspace() for term in first)
