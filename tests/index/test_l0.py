"""L0 abstracts: heading (without label parts) filled with the body's opening when it is one,
else the first sentence, else a grapheme-safe cut."""

from __future__ import annotations

import pytest
from carryd.index.l0 import (
    L0Source,
    extract_l0,
    first_sentence,
    is_abstract,
    plain_heading,
    truncate,
    without_labels,
)

FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # one grapheme, 7 code points (ZWJ sequence)
THUMBS = "👍🏽"  # emoji + skin-tone modifier
FLAG = "🇨🇳"  # two regional indicators
E_ACUTE = "e\u0301"  # e + combining acute


@pytest.mark.parametrize(
    ("heading", "body", "expected"),
    [
        pytest.param(
            "Release pitfalls",
            "npm publish needs OTP. Also bump the changelog before tagging.",
            (
                "Release pitfalls — npm publish needs OTP. Also bump the changelog before tagging.",
                "heading",
            ),
            id="heading-plus-opening",
        ),
        pytest.param(
            "Release pitfalls",
            "A first sentence that is far too long to be appended to the heading without "
            "blowing the hundred character budget. Second.",
            (
                "Release pitfalls — A first sentence that is far too long to be appended to the "
                "heading without…",
                "heading",
            ),
            id="heading-filled-with-a-cut-opening",
        ),
        pytest.param(
            "Caroline · D1:3",
            "I went to a support group yesterday and it was so powerful.",
            ("Caroline — I went to a support group yesterday and it was so powerful.", "heading"),
            id="id-label-part-left-out",
        ),
        pytest.param(
            "Deploy outage | 2026-11-29 | v2.2.6",
            "The load balancer dropped health checks.",
            ("Deploy outage — The load balancer dropped health checks.", "heading"),
            id="date-and-version-parts-left-out",
        ),
        pytest.param(
            "2026-11-29 · D1:3",
            "Fixed the login redirect loop. Then refactored the session store.",
            ("Fixed the login redirect loop.", "firstSentence"),
            id="all-parts-labels",
        ),
        pytest.param(
            "Step 3 · Python 3.12 upgrade",
            "Wheels first.",
            ("Step 3 · Python 3.12 upgrade — Wheels first.", "heading"),
            id="parts-with-words-kept",
        ),
        pytest.param(
            "A heading that is long enough to leave no room for a word of the body text here",
            "Supercalifragilisticexpialidocious.",
            (
                "A heading that is long enough to leave no room for a word of the body text here",
                "heading",
            ),
            id="no-room-for-the-body",
        ),
        pytest.param("## Deploy notes ##", "", ("Deploy notes", "heading"), id="raw-atx-heading"),
        pytest.param(
            "发布注意事项",
            "npm 发布需要一次性密码。其余步骤见下文。",
            ("发布注意事项 — npm 发布需要一次性密码。其余步骤见下文。", "heading"),
            id="chinese-heading",
        ),
        pytest.param(
            "Why:",
            "Because the cache key changed. More.",
            ("Why: Because the cache key changed. More.", "heading"),
            id="colon-heading",
        ),
        pytest.param(
            "2026-11-29",
            "Fixed the login redirect loop. Then refactored the session store.",
            ("Fixed the login redirect loop.", "firstSentence"),
            id="bare-date-heading",
        ),
        pytest.param(
            "2026年11月29日",
            "修复了登录跳转的死循环。随后重构了会话存储。",
            ("修复了登录跳转的死循环。", "firstSentence"),
            id="chinese-date-heading",
        ),
        pytest.param(
            "3",
            "Pin the numpy version; the wheels broke.",
            ("Pin the numpy version;", "firstSentence"),
            id="number-heading",
        ),
        pytest.param(
            "v2.2.6",
            "Shipped the hotfix! Users confirmed.",
            ("Shipped the hotfix!", "firstSentence"),
            id="version-heading",
        ),
        pytest.param(
            "---",
            "Separator heading? Falls through.",
            ("Separator heading?", "firstSentence"),
            id="punctuation-heading",
        ),
        pytest.param("2026-11-29", "", ("2026-11-29", "heading"), id="date-heading-empty-body"),
        pytest.param(
            None,
            "The value is 3.14 and lives in lib/index.js for now. Next sentence.",
            ("The value is 3.14 and lives in lib/index.js for now.", "firstSentence"),
            id="number-and-filename-do-not-end-a-sentence",
        ),
        pytest.param(
            None,
            "Use a flag, e.g. --dry-run first. Then apply.",
            ("Use a flag, e.g. --dry-run first.", "firstSentence"),
            id="abbreviation",
        ),
        pytest.param(
            None,
            "- **Bold** [the docs](https://example.com) and `snake_case_name` item\n- second",
            ("Bold the docs and snake_case_name item", "firstSentence"),
            id="markup-stripped",
        ),
        pytest.param(
            None,
            "<!-- mem_0123456789abcdef0123456789abcdef -->\n> Quoted *insight* here. More.",
            ("Quoted insight here.", "firstSentence"),
            id="comment-and-quote",
        ),
        pytest.param(
            None,
            "```bash\n# not a heading\nnpm publish\n```\n\nPublishing needs OTP. More.",
            ("Publishing needs OTP.", "firstSentence"),
            id="fence-skipped-for-prose",
        ),
        pytest.param(
            None,
            "```\nnpm publish --otp 123\n```",
            ("npm publish --otp 123", "firstSentence"),
            id="fence-only",
        ),
        pytest.param(
            None,
            "| Key | Value |\n|---|---|\n| a | b |",
            ("Key, Value", "firstSentence"),
            id="table",
        ),
        pytest.param(
            None,
            "全角问号结尾吗？是的！",
            ("全角问号结尾吗？", "firstSentence"),
            id="chinese-question",
        ),
        pytest.param(
            None,
            "token AKIAIOSFODNN7EXAMPLE leaked. Rotate.",
            ("token [redacted:aws_access_key] leaked.", "firstSentence"),
            id="redacted",
        ),
        pytest.param(None, "", ("", "truncate"), id="empty"),
    ],
)
def test_extract_l0(heading: str | None, body: str, expected: tuple[str, L0Source]) -> None:
    assert extract_l0(heading, body) == expected


def test_long_first_sentence_is_truncated_at_a_word_boundary() -> None:
    body = "This sentence keeps going " + "and going " * 15 + "until it ends."
    l0, source = extract_l0(None, body)
    assert source == "truncate"
    assert len(l0) <= 100 and l0.endswith("…")
    assert l0[:-1].endswith(("keeps going", "and", "going"))


def test_long_chinese_text_is_cut_at_the_limit() -> None:
    body = "这是一段没有句号的很长的中文记录" * 10
    l0, source = extract_l0(None, body)
    assert (len(l0), source) == (100, "truncate")
    assert l0 == body[:99] + "…"


def test_a_long_heading_is_truncated() -> None:
    heading = "Heading " * 20
    l0, source = extract_l0(heading, "Body.")
    assert source == "truncate" and len(l0) <= 100


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"),
    [
        pytest.param("a" * 97 + FAMILY + " tail", 100, "a" * 97 + "…", id="zwj-family-at-cut"),
        pytest.param(
            "a" * 90 + FAMILY + " tail", 100, "a" * 90 + FAMILY + "…", id="zwj-family-fits"
        ),
        pytest.param("x" * 98 + E_ACUTE + " more", 100, "x" * 98 + "…", id="combining-mark-at-cut"),
        pytest.param("b" * 98 + THUMBS + " c", 100, "b" * 98 + "…", id="skin-tone-at-cut"),
        pytest.param("c" * 98 + FLAG + " d", 100, "c" * 98 + "…", id="flag-at-cut"),
        pytest.param(FLAG * 60, 100, FLAG * 49 + "…", id="flags-only"),
        pytest.param("short", 100, "short", id="fits"),
        pytest.param("one two three four", 10, "one two…", id="word-boundary"),
        pytest.param("abcdefghijklmnopqrstuvwxyz", 10, "abcdefghi…", id="no-boundary-near"),
        pytest.param("abc", 0, "", id="zero-budget"),
        pytest.param("\U0001f600" * 200, 100, "\U0001f600" * 99 + "…", id="astral-characters"),
    ],
)
def test_truncate_never_splits_a_grapheme(text: str, max_chars: int, expected: str) -> None:
    result = truncate(text, max_chars)
    assert result == expected
    assert len(result) <= max_chars


@pytest.mark.parametrize(
    ("heading", "abstract"),
    [
        ("2026-11-29", False),
        ("2026/11/29", False),
        ("2026-11-29T10:30:00Z", False),
        ("2026年11月29日", False),
        ("11月29日 周六", False),
        ("Nov 29, 2026", False),
        ("Monday 14:00", False),
        ("3", False),
        ("v2.2.6", False),
        ("1.0.0-rc1", False),
        ("#3", False),
        ("D1:3", False),
        ("S15", False),
        ("***", False),
        ("🚀", False),
        ("", False),
        ("Release pitfalls", True),
        ("发布注意事项", True),
        ("Step 3", True),
        ("H2O", True),
        ("S3 bucket policy", True),
        ("第3天", True),
        ("2026-11-29 outage", True),
        ("May the cache be warm", True),
    ],
)
def test_is_abstract(heading: str, abstract: bool) -> None:
    assert is_abstract(heading) is abstract


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("One. Two.", "One."),
        ("Ends with question? Yes.", "Ends with question?"),
        ('He said "stop." Then left.', 'He said "stop."'),
        ("第一句。第二句。", "第一句。"),
        ("分号也结束；后面不算", "分号也结束；"),
        ("no terminator at all", "no terminator at all"),
        ("version v2.2.6 is out", "version v2.2.6 is out"),
    ],
)
def test_first_sentence(text: str, sentence: str) -> None:
    assert first_sentence(text) == sentence


@pytest.mark.parametrize(
    ("heading", "plain"),
    [
        ("# Title", "Title"),
        ("Title <!-- mem_0123456789abcdef0123456789abcdef -->", "Title"),
        ("**Bold** `code` [link](x)", "Bold code link"),
        ("### Closed ###", "Closed"),
    ],
)
def test_plain_heading(heading: str, plain: str) -> None:
    assert plain_heading(heading) == plain


def test_body_edits_beyond_what_the_l0_covers_keep_the_l0() -> None:
    before = extract_l0("Release pitfalls", "npm publish needs OTP. Tag after.")
    after = extract_l0("Release pitfalls", "npm publish needs OTP. Tag after.\n\nA new paragraph.")
    assert before == after
    opening = "npm publish needs a one-time password from the authenticator app. " * 2
    cut = extract_l0("Release pitfalls", opening + "Tag after.")
    assert cut == extract_l0("Release pitfalls", opening + "Tag before, not after.")


def test_heading_and_opening_edits_change_the_l0() -> None:
    base = extract_l0("Release pitfalls", "npm publish needs OTP. Tag after.")
    assert extract_l0("Release traps", "npm publish needs OTP. Tag after.") != base
    assert extract_l0("Release pitfalls", "pnpm publish needs OTP. Tag after.") != base
    assert extract_l0(None, "Fixed it. More.") != extract_l0(None, "Broke it. More.")


@pytest.mark.parametrize(
    ("heading", "topic"),
    [
        ("Caroline · D1:3", "Caroline"),
        ("Release pitfalls", "Release pitfalls"),
        ("Outage — 2026-11-29 — payments", "Outage · payments"),
        ("a|b", "a|b"),  # only spaced separators split
        ("2026-11-29 · 3", ""),
    ],
)
def test_without_labels(heading: str, topic: str) -> None:
    assert without_labels(heading) == topic
