"""Markdown → entries: sections, top-level blocks, line ranges, ids, slots, hashes."""

from __future__ import annotations

import hashlib

import pytest
from carryd.index.entries import Entry, parse_entries, workspace_of

ANCHOR = "mem_0123456789abcdef0123456789abcdef"
OTHER_ANCHOR = "mem_fedcba9876543210fedcba9876543210"


def _shape(entries: tuple[Entry, ...]) -> list[tuple[int, int, tuple[str, ...]]]:
    return [(entry.line_start, entry.line_end, entry.heading_path) for entry in entries]


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("\n\n  \n", [], id="blank-only"),
        pytest.param("# Title\n", [(1, 1, ("Title",))], id="heading-only"),
        pytest.param(
            "# A\nbody a\n\n## B\nbody b\n\n\n# C\nbody c\n",
            [(1, 2, ("A",)), (4, 5, ("A", "B")), (8, 9, ("C",))],
            id="nested-headings",
        ),
        pytest.param(
            "# A\n### Deep\n## Mid\n#### Deeper\n# Top",
            [
                (1, 1, ("A",)),
                (2, 2, ("A", "Deep")),
                (3, 3, ("A", "Mid")),
                (4, 4, ("A", "Mid", "Deeper")),
                (5, 5, ("Top",)),
            ],
            id="skipped-levels",
        ),
        pytest.param(
            "Intro line one\nline two\n\n- item a\n- item b\n\n```\ncode\n```\n\n# H\nx\n",
            [(1, 2, ()), (4, 5, ()), (7, 9, ()), (11, 12, ("H",))],
            id="preamble-blocks",
        ),
        pytest.param(
            "# Real\n```bash\n# not a heading\n## nor this\n```\nafter\n",
            [(1, 6, ("Real",))],
            id="fence-with-hash-lines",
        ),
        pytest.param(
            "~~~\n# inside tilde fence\n~~~\n",
            [(1, 3, ())],
            id="tilde-fence-preamble",
        ),
        pytest.param(
            "---\ntitle: Notes\ntags: [a]\n---\n# Heading\nbody\n",
            [(5, 6, ("Heading",))],
            id="front-matter",
        ),
        pytest.param("---\ntitle: only front matter\n---\n", [], id="front-matter-only"),
        pytest.param(
            "Setext title\n============\nbody\n\nSub\n---\nmore\n",
            [(1, 3, ("Setext title",)), (5, 7, ("Setext title", "Sub"))],
            id="setext",
        ),
        pytest.param(
            "> # quoted heading\n> text\n\n- # listed heading\n",
            [(1, 2, ()), (4, 4, ())],
            id="nested-headings-are-not-sections",
        ),
        pytest.param(
            "# 发布注意事项\nnpm 发布需要一次性密码。\n\n## 踩坑记录\n缓存键变了。\n",
            [(1, 2, ("发布注意事项",)), (4, 5, ("发布注意事项", "踩坑记录"))],
            id="cjk",
        ),
        pytest.param(
            "# A\r\nbody\r\n\r\n# B\r\nmore\r\n",
            [(1, 2, ("A",)), (4, 5, ("B",))],
            id="crlf",
        ),
        pytest.param("# A\rbody\r# B\r", [(1, 2, ("A",)), (3, 3, ("B",))], id="cr-only"),
        pytest.param(
            f"<!-- {ANCHOR} -->\nParagraph after its anchor.\n\n# H\n",
            [(1, 2, ()), (4, 4, ("H",))],
            id="anchor-comment-joins-next-block",
        ),
        pytest.param(
            f"Paragraph.\n\n<!-- {ANCHOR} -->\n",
            [(1, 3, ())],
            id="trailing-anchor-joins-previous-block",
        ),
        pytest.param("no trailing newline", [(1, 1, ())], id="no-final-newline"),
        pytest.param("\ufeff# Title\nbody\n", [(1, 2, ("Title",))], id="byte-order-mark"),
        pytest.param("\ufeff---\na: 1\n---\n# T\n", [(4, 4, ("T",))], id="bom-front-matter"),
    ],
)
def test_entry_line_ranges_and_heading_paths(
    text: str, shape: list[tuple[int, int, tuple[str, ...]]]
) -> None:
    assert _shape(parse_entries("notes.md", text)) == shape


def test_entry_fields() -> None:
    text = "# Release pitfalls\nnpm publish needs OTP. Also tag.\n<!-- slot: release:otp -->\n"
    (entry,) = parse_entries("proj/notes/release.md", text)
    body = "# Release pitfalls\nnpm publish needs OTP. Also tag.\n<!-- slot: release:otp -->"
    assert entry == Entry(
        id=entry.id,
        path="proj/notes/release.md",
        workspace="proj",
        line_start=1,
        line_end=3,
        heading_path=("Release pitfalls",),
        text=body,
        l0="Release pitfalls — npm publish needs OTP. Also tag.",
        l0_source="heading",
        text_hash=hashlib.sha256(body.encode()).hexdigest(),
        l0_hash=hashlib.sha256(
            "Release pitfalls — npm publish needs OTP. Also tag.".encode()
        ).hexdigest(),
        slot="release:otp",
    )
    assert entry.id.startswith("mem_") and len(entry.id) == 36
    assert all(character in "0123456789abcdef" for character in entry.id[4:])


def test_text_is_the_exact_lines() -> None:
    text = "# A\r\n  indented  \r\n\tTab\r\n"
    (entry,) = parse_entries("a.md", text)
    assert entry.text == "# A\n  indented  \n\tTab"


@pytest.mark.parametrize(
    ("path", "workspace"),
    [("a.md", None), ("ws/a.md", "ws"), ("ws/logs/2026-11-29.md", "ws"), ("./ws/a.md", "ws")],
)
def test_workspace_of(path: str, workspace: str | None) -> None:
    assert workspace_of(path) == workspace


def test_explicit_anchor_wins() -> None:
    entries = parse_entries(
        "a.md", f"# One <!-- {ANCHOR} -->\nbody\n\n# Two\n<!-- {OTHER_ANCHOR} -->\n"
    )
    assert [entry.id for entry in entries] == [ANCHOR, OTHER_ANCHOR]
    assert entries[0].heading_path == ("One",)


def test_uppercase_anchor_is_normalised() -> None:
    (entry,) = parse_entries("a.md", f"# One\n<!-- {ANCHOR.upper().replace('MEM_', 'mem_')} -->\n")
    assert entry.id == ANCHOR


def test_duplicate_anchor_keeps_only_the_first() -> None:
    entries = parse_entries("a.md", f"# One\n<!-- {ANCHOR} -->\n# Two\n<!-- {ANCHOR} -->\n")
    assert entries[0].id == ANCHOR
    assert entries[1].id != ANCHOR and entries[1].id.startswith("mem_")
    assert entries[1].id == parse_entries("a.md", "# One\n\n# Two\n")[1].id


def test_anchor_inside_code_is_not_an_anchor() -> None:
    (entry,) = parse_entries("a.md", f"# Doc\n```\n<!-- {ANCHOR} -->\n<!-- slot: x -->\n```\n")
    assert entry.id != ANCHOR and entry.slot is None


def test_an_anchor_copying_a_derived_id_does_not_duplicate_it() -> None:
    derived = parse_entries("a.md", "# One\n")[0].id
    entries = parse_entries("a.md", f"# One\n\n# Two\n<!-- {derived} -->\n")
    assert entries[1].id == derived
    assert len({entry.id for entry in entries}) == 2


@pytest.mark.parametrize(
    ("comment", "slot"),
    [
        ("<!-- slot: deploy:target -->", "deploy:target"),
        ("<!--slot:   user.lang   -->", "user.lang"),
        ("<!-- slot: -->", None),
        ("<!-- another comment -->", None),
    ],
)
def test_slot(comment: str, slot: str | None) -> None:
    (entry,) = parse_entries("a.md", f"# H\nbody\n{comment}\n")
    assert entry.slot == slot


def test_ids_survive_body_edits_and_depend_on_path_and_heading_path() -> None:
    original = parse_entries("a.md", "Intro.\n\n# A\nfirst.\n\n# A\nsecond.\n")
    edited = parse_entries("a.md", "Intro, edited.\n\n# A\nfirst. More.\n\n# A\nsecond!\n")
    assert [entry.id for entry in original] == [entry.id for entry in edited]
    assert original[1].id != original[2].id  # same heading path, different ordinal
    moved = parse_entries("b.md", "Intro.\n\n# A\nfirst.\n\n# A\nsecond.\n")
    assert not {entry.id for entry in moved} & {entry.id for entry in original}
    renamed = parse_entries("a.md", "Intro.\n\n# B\nfirst.\n\n# A\nsecond.\n")
    assert renamed[1].id != original[1].id


def test_fenced_hash_lines_are_not_headings() -> None:
    text = "# Build\n```python\n# comment\nprint(1)\n```\n"
    (entry,) = parse_entries("a.md", text)
    assert entry.heading_path == ("Build",) and entry.line_end == 5


def test_secrets_never_reach_l0_or_heading_path() -> None:
    key = "AKIAIOSFODNN7EXAMPLE"
    entries = parse_entries("a.md", f"# Key {key}\nkey {key} here.\n\nInfo {key}.\n")
    for entry in entries:
        assert key not in entry.l0
        assert all(key not in heading for heading in entry.heading_path)
    assert key in entries[0].text  # the text stays as in the file; callers redact on output


def test_date_heading_entries_take_their_first_sentence() -> None:
    (entry,) = parse_entries("ws/logs/2026-11-29.md", "## 2026-11-29\n修复了登录问题。之后重构。\n")
    assert (entry.l0, entry.l0_source) == ("修复了登录问题。", "firstSentence")
    assert entry.heading_path == ("2026-11-29",)


def test_lone_surrogates_and_nul_do_not_break_parsing() -> None:
    entries = parse_entries("a.md", "# A\ud800\nx\x00y\n")
    assert len(entries) == 1 and entries[0].text == "# A\ud800\nx\x00y"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(" _a" * 10000, id="unclosed-underscores"),
        pytest.param("**a __b ~~c " * 3000, id="unclosed-strong"),
        pytest.param("[a](" * 10000, id="unclosed-links"),
        pytest.param("`a ``b " * 5000, id="backtick-runs"),
        pytest.param("> " * 3000 + "x", id="deep-quote"),
        pytest.param("-----BEGIN PRIVATE KEY-----\n" * 2000, id="key-headers"),
        pytest.param("# " + " _a" * 10000, id="huge-heading"),
    ],
)
def test_pathological_markdown_parses_in_linear_time(text: str) -> None:
    """Unclosed markers once made L0 extraction quadratic (minutes for 200 KB)."""
    entries = parse_entries("a.md", text)
    assert len(entries) == 1 and len(entries[0].l0) <= 100


@pytest.mark.parametrize(
    ("path", "workspace"),
    [
        ("MEMORY.md", None),
        ("notes/tools.md", None),  # DESIGN.md: notes/*.md is root-level memory
        ("notes/deep/more.md", None),
        ("webshop/notes.md", "webshop"),
        ("webshop/logs/2026-11-28.md", "webshop"),
    ],
)
def test_workspace_is_the_top_folder_except_root_level_notes(
    path: str, workspace: str | None
) -> None:
    assert workspace_of(path) == workspace
