"""Properties of parsing, L0 extraction and redaction over arbitrary Markdown-ish Unicode."""

from __future__ import annotations

import hashlib

import pytest
from carryd.index.entries import Entry, parse_entries
from carryd.index.l0 import _cut_allowed, extract_l0, is_abstract, truncate, without_labels
from carryd.index.redact import redact
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- strategies ------------------------------------------------------------------------------

ASCII_WORDS = st.sampled_from(
    [
        "npm",
        "publish",
        "needs",
        "OTP",
        "cache",
        "key",
        "lib/index.js",
        "3.14",
        "v2.2.6",
        "e.g.",
        "ERR_CONN_RESET",
        "**bold**",
        "`code`",
        "[link](http://x)",
        "snake_case",
        "mem_a1",
    ]
)
CJK_WORDS = st.sampled_from(
    ["发布", "需要", "一次性密码", "缓存键", "变了", "踩坑", "记录", "日本語", "한국어"]
)
EMOJI = st.sampled_from(["👍🏽", "👨\u200d👩\u200d👧", "🇨🇳", "e\u0301", "🚀", "\u200d", "\ufe0f"])
PUNCTUATION = st.sampled_from([".", "。", "!", "？", ";", "；", ",", "，", " ", "…"])
WORD = st.one_of(ASCII_WORDS, CJK_WORDS, EMOJI, PUNCTUATION)
PHRASE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)
ANY_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=40
)
LINE = st.one_of(PHRASE, ANY_LINE)


def _heading(level: int, text: str) -> str:
    return "#" * level + " " + text


HEADING = st.builds(
    _heading,
    st.integers(1, 6),
    st.one_of(PHRASE, st.sampled_from(["2026-11-29", "3", "v2.2.6", ""])),
)
FENCE = st.builds(
    lambda marker, lines, closed: "\n".join(
        [marker + "bash", *lines, *([marker] if closed else [])]
    ),
    st.sampled_from(["```", "~~~", "````"]),
    st.lists(st.one_of(LINE, st.just("# not a heading"), st.just("## nor this")), max_size=4),
    st.booleans(),
)
LIST = st.lists(PHRASE, min_size=1, max_size=4).map(
    lambda items: "\n".join(f"- {item}" for item in items)
)
ANCHOR_POOL = [f"mem_{index:032x}" for index in range(4)]
COMMENT = st.one_of(
    st.sampled_from([f"<!-- {anchor} -->" for anchor in ANCHOR_POOL]),
    st.builds(lambda key: f"<!-- slot: {key} -->", PHRASE),
    st.just("<!-- plain comment -->"),
)
TABLE = st.just("| a | b |\n|---|---|\n| 1 | 2 |")
FRONT_MATTER = st.just("---\ntitle: x\n---")
BLOCK = st.one_of(
    HEADING, HEADING, PHRASE, LINE, FENCE, LIST, COMMENT, TABLE, st.just(""), st.just("***")
)


@st.composite
def markdown(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(BLOCK, max_size=14))
    if draw(st.booleans()):
        blocks.insert(0, draw(FRONT_MATTER))
    text = "".join(block + draw(st.sampled_from(["\n", "\n\n", "\n\n\n"])) for block in blocks)
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return text.replace("\n", newline)


DOCUMENT = st.one_of(markdown(), st.text(max_size=300))


def _line_count(text: str) -> int:
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    if not normalized:
        return 0
    return normalized.count("\n") + (0 if normalized.endswith("\n") else 1)


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _check_entry(entry: Entry, lines: list[str]) -> None:
    assert entry.text == "\n".join(lines[entry.line_start - 1 : entry.line_end])
    assert entry.text_hash == _sha(entry.text)
    assert entry.l0_hash == _sha(entry.l0)
    assert len(entry.l0) <= 100 and "\n" not in entry.l0
    assert entry.id.startswith("mem_") and len(entry.id) == 36
    assert entry.l0_source in ("heading", "firstSentence", "truncate")
    # Never blank lines only, and trimmed of trailing blank lines (CommonMark: spaces, tabs).
    assert entry.text.split("\n")[-1].strip(" \t")


# --- parsing ---------------------------------------------------------------------------------


@FAST
@given(DOCUMENT)
def test_parse_never_raises_and_ranges_are_ordered_disjoint_and_inside(text: str) -> None:
    entries = parse_entries("ws/notes.md", text)
    count = _line_count(text)
    lines = _lines(text)
    previous_end = 0
    for entry in entries:
        assert 1 <= entry.line_start <= entry.line_end <= count
        assert entry.line_start > previous_end
        previous_end = entry.line_end
        _check_entry(entry, lines)
    assert len({entry.id for entry in entries}) == len(entries)


@FAST
@given(st.lists(markdown(), min_size=2, max_size=5))
def test_ids_are_unique_within_a_root(documents: list[str]) -> None:
    ids: list[str] = []
    for file_index, text in enumerate(documents):
        # Explicit anchors are unique per file here: copying one anchor into two files is
        # the one duplicate only the caller (seeing every file) can resolve.
        for anchor in ANCHOR_POOL:
            text = text.replace(anchor, f"mem_{file_index:08x}{anchor[12:]}")
        path = f"ws{file_index % 2}/notes-{file_index}.md"
        ids.extend(entry.id for entry in parse_entries(path, text))
    assert len(ids) == len(set(ids))


SECTION_HEADING = st.one_of(PHRASE, st.sampled_from(["2026-11-29", "3", "v2.2.6", "发布注意事项"]))
PROSE = st.lists(
    st.one_of(ASCII_WORDS, CJK_WORDS, EMOJI, PUNCTUATION), min_size=1, max_size=20
).map(lambda words: "Prose " + " ".join(words))
CLOSED_FENCE = st.builds(
    lambda marker, lines: "\n".join([marker + "bash", *lines, marker]),
    st.sampled_from(["```", "~~~", "````"]),
    st.lists(st.one_of(PHRASE, st.just("# not a heading"), st.just("## nor this")), max_size=4),
)
BODY_EXTRA = st.one_of(PROSE, LIST, CLOSED_FENCE)


@st.composite
def sections(draw: st.DrawFn) -> list[tuple[int, str, list[str]]]:
    count = draw(st.integers(1, 5))
    return [
        (
            draw(st.integers(1, 4)),
            draw(SECTION_HEADING),
            [draw(PROSE), *draw(st.lists(BODY_EXTRA, max_size=3))],
        )
        for _ in range(count)
    ]


def _render(parts: list[tuple[int, str, list[str]]], preamble: str) -> str:
    chunks = [preamble] if preamble else []
    for level, heading, body in parts:
        chunks.append(_heading(level, heading))
        chunks.extend(body)
    return "\n\n".join(chunks) + "\n"


@FAST
@given(sections(), st.one_of(st.just(""), PROSE), st.data())
def test_ids_and_l0_survive_a_body_edit_after_the_first_sentence(
    parts: list[tuple[int, str, list[str]]], preamble: str, data: st.DataObject
) -> None:
    before = parse_entries("ws/a.md", _render(parts, preamble))
    target = data.draw(st.integers(0, len(parts) - 1))
    edited = [(level, heading, list(body)) for level, heading, body in parts]
    edited[target][2].append("Appended later. 后来追加的一句。")
    after = parse_entries("ws/a.md", _render(edited, preamble))
    assert [entry.id for entry in before] == [entry.id for entry in after]
    assert [entry.l0 for entry in before] == [entry.l0 for entry in after]
    offset = 1 if preamble else 0
    changed = [
        index
        for index, (old, new) in enumerate(zip(before, after, strict=True))
        if old.text_hash != new.text_hash
    ]
    assert changed == [target + offset]


# --- L0 --------------------------------------------------------------------------------------


@FAST
@given(
    st.one_of(st.none(), st.text(max_size=150), PHRASE),
    st.one_of(st.text(max_size=400), markdown()),
    st.integers(0, 160),
)
def test_l0_is_bounded_and_one_line(heading: str | None, body: str, max_chars: int) -> None:
    l0, source = extract_l0(heading, body, max_chars=max_chars)
    assert len(l0) <= max_chars
    assert "\n" not in l0
    assert source in ("heading", "firstSentence", "truncate")


@FAST
@given(PHRASE, PROSE, PROSE, st.lists(ASCII_WORDS, min_size=1, max_size=8).map(" ".join))
def test_l0_covers_only_the_opening_of_the_first_block(
    heading: str, first: str, later: str, tail: str
) -> None:
    """An edit beyond what the L0 covers never changes it: later blocks, or the first block
    past the cut; the heading and the opening do."""
    l0, _ = extract_l0(heading, f"{first}\n\n{later}")
    assert extract_l0(heading, f"{first}\n\n{later} {tail}")[0] == l0
    if l0.endswith("…") and "…" not in heading + first:  # the ellipsis marks a cut
        assert extract_l0(heading, f"{first} {tail}\n\n{later}")[0] == l0
    assume(is_abstract(without_labels(heading)))
    assert extract_l0(f"Other {heading}", f"{first}\n\n{later}")[0] != l0


TRICKY = st.sampled_from(
    [
        "\u0301",
        "\u093c",
        "\u094d",
        "\u0915",
        "\u0924",
        "\u0bbe",
        "\u0e33",
        "\u0600",
        "\u200d",
        "\u200c",
        "\ufe0f",
        "\U0001f3fd",
        "\U0001f1e8",
        "\U0001f1f3",
        "\U000e0067",
        "\u1100",
        "\u1161",
        "\u11a8",
        "\uac00",
        "\uac01",
        "\uff9e",
        "\r",
        "\n",
        "\x00",
        "👨",
        "👩",
        "🏳",
        "a",
        " ",
        "中",
    ]
)
GRAPHEME_TEXT = st.lists(st.one_of(TRICKY, TRICKY, WORD, st.text(max_size=3)), max_size=80).map(
    "".join
)


def _grapheme_boundaries(text: str) -> set[int]:
    # The `regex` module implements UAX #29 fully; it is present with the test extras.
    regex = pytest.importorskip("regex")
    return {0} | {match.end() for match in regex.finditer(r"\X", text)}


@FAST
@given(GRAPHEME_TEXT, st.integers(1, 120))
def test_truncate_cuts_on_grapheme_boundaries(text: str, max_chars: int) -> None:
    result = truncate(text, max_chars)
    assert len(result) <= max_chars
    if result == text:
        return
    assert result.endswith("…")
    kept = result[:-1]
    assert text.startswith(kept)
    assert len(kept) in _grapheme_boundaries(text)


@FAST
@given(GRAPHEME_TEXT)
def test_allowed_cuts_are_grapheme_boundaries(text: str) -> None:
    boundaries = _grapheme_boundaries(text)
    for index in range(len(text) + 1):
        if _cut_allowed(text, index):
            assert index in boundaries, (text, index)


# --- redaction -------------------------------------------------------------------------------

SECRET = st.sampled_from(
    [
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yBmb1zP\n"
        "-----END EC PRIVATE KEY-----",
        "password = hunter2x",
        "Authorization: Bearer abc123def456ghi",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ]
)


@FAST
@given(
    st.lists(st.one_of(SECRET, LINE, PHRASE, st.text(max_size=30)), max_size=12),
    st.sampled_from([" ", "\n", ""]),
)
def test_redact_is_idempotent(pieces: list[str], joiner: str) -> None:
    text = joiner.join(pieces)
    once = redact(text)
    assert redact(once) == once


@FAST
@given(
    st.lists(st.one_of(LINE, PHRASE), max_size=6),
    SECRET,
    st.lists(st.one_of(LINE, PHRASE), max_size=6),
)
def test_planted_secrets_never_survive(before: list[str], secret: str, after: list[str]) -> None:
    text = "\n".join([*before, secret, *after])
    redacted = redact(text)
    value = secret.split("=")[-1].split("Bearer")[-1].strip()
    if "PRIVATE KEY" in secret:
        value = "MHcCAQEEIBkg4LVWM9nuwNSk3yBmb1zP"
    assert value not in redacted
