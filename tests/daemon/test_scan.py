"""The stat walk and the file reader on real temp folders: what is indexed, what is skipped."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from carryd.daemon.config import IndexSettings
from carryd.daemon.indexer.scan import (
    FileContent,
    Problem,
    in_scope,
    read_markdown,
    scan_paths,
    scan_root,
)
from carryd.index.sync import FileStat

SETTINGS = IndexSettings(max_file_bytes=1_000)
ALLOW_OUTSIDE = IndexSettings(max_file_bytes=1_000, follow_links_outside_root=True)


def write(root: Path, relative: str, data: bytes | str = "# Note\n\nbody\n") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def codes(problems: tuple[Problem, ...]) -> dict[str, str]:
    return {problem.path: problem.code for problem in problems}


def test_scan_lists_markdown_by_relative_posix_path_and_skips_state_and_ignored(tmp_path: Path):
    for relative in ["MEMORY.md", "notes/a.md", "ws/logs/2026-11-29.md", "ws/UPPER.MD"]:
        write(tmp_path, relative)
    for relative in [".carryd/carry/ws.md", "ws/.git/x.md", "node_modules/y.md", "ws/a.txt"]:
        write(tmp_path, relative)
    result = scan_root(tmp_path, SETTINGS)
    assert list(result.files) == ["MEMORY.md", "notes/a.md", "ws/UPPER.MD", "ws/logs/2026-11-29.md"]
    info = os.stat(tmp_path / "MEMORY.md")
    assert result.files["MEMORY.md"] == FileStat(info.st_size, info.st_mtime_ns)
    assert result.problems == ()


def test_scan_reports_each_bad_path_and_keeps_the_rest(tmp_path: Path):
    write(tmp_path, "good.md")
    write(tmp_path, "ws/good.md")
    write(tmp_path, "big.md", b"x" * 1_001)
    (tmp_path / "ws" / "loop").symlink_to(tmp_path / "ws")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "missing.md")
    (tmp_path / "a.md").symlink_to(tmp_path / "b.md")
    (tmp_path / "b.md").symlink_to(tmp_path / "a.md")
    os.mkfifo(tmp_path / "fifo.md")
    result = scan_root(tmp_path, SETTINGS)
    assert list(result.files) == ["good.md", "ws/good.md"]
    assert codes(result.problems) == {
        "a.md": "symlink_loop",
        "b.md": "symlink_loop",
        "big.md": "too_large",
        "dangling.md": "broken_symlink",
        "fifo.md": "not_regular",
        "ws/loop": "symlink_loop",
    }


def test_a_symlinked_folder_outside_the_root_is_followed_once_when_allowed(tmp_path: Path):
    outside = tmp_path / "outside"
    write(outside, "shared.md")
    root = tmp_path / "root"
    root.mkdir()
    (root / "ws").mkdir()
    (root / "ws" / "shared").symlink_to(outside)
    (root / "ws" / "again").symlink_to(outside)
    (outside / "back").symlink_to(root)  # a loop through the outside folder
    result = scan_root(root, ALLOW_OUTSIDE)
    assert list(result.files) == ["ws/again/shared.md"]
    assert codes(result.problems) == {
        "ws/again/back": "symlink_loop",
        "ws/shared": "duplicate_folder",
    }


def test_scan_paths_handles_files_folders_and_vanished_paths(tmp_path: Path):
    write(tmp_path, "ws/a.md")
    write(tmp_path, "ws/sub/b.md")
    write(tmp_path, "ws/c.txt")
    write(tmp_path, ".carryd/x.md")
    result = scan_paths(
        tmp_path, ["ws/a.md", "ws/sub", "ws/gone.md", "ws/c.txt", ".carryd/x.md"], SETTINGS
    )
    assert list(result.files) == ["ws/a.md", "ws/sub/b.md"]
    assert result.problems == ()


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("a.md", True),
        ("ws/x/y.md", True),
        (".carryd/carry/ws.md", False),
        ("ws/.git/x.md", False),
        ("ws/node_modules", False),
        ("../outside.md", False),
        ("", False),
    ],
)
def test_in_scope(relative: str, expected: bool):
    assert in_scope(relative, IndexSettings()) is expected


def test_read_markdown_returns_text_stat_and_hash(tmp_path: Path):
    data = "\ufeff# 标题\r\n\r\n正文。\n".encode()
    path = write(tmp_path, "ws/a.md", data)
    content = read_markdown(tmp_path, "ws/a.md", 1_000)
    info = os.stat(path)
    assert content == FileContent(
        path="ws/a.md",
        text="# 标题\r\n\r\n正文。\n",  # BOM removed, line ends left to the parser
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        sha256=hashlib.sha256(data).hexdigest(),
    )


@pytest.mark.parametrize(
    ("data", "code", "reason"),
    [
        (b"# ok\n\x00\x01\x02", "binary", "NUL bytes"),
        (b"# caf\xe9\n", "not_utf8", "byte 0xe9 at offset 5"),
        (b"x" * 1_001, "too_large", "1,001 bytes > index.max_file_bytes 1,000"),
    ],
)
def test_read_markdown_reports_unindexable_content(tmp_path: Path, data, code, reason):
    write(tmp_path, "bad.md", data)
    problem = read_markdown(tmp_path, "bad.md", 1_000)
    assert isinstance(problem, Problem)
    assert (problem.path, problem.code) == ("bad.md", code)
    assert reason in problem.reason


def test_read_markdown_never_blocks_on_a_fifo(tmp_path: Path):
    os.mkfifo(tmp_path / "pipe.md")
    problem = read_markdown(tmp_path, "pipe.md", 1_000)
    assert isinstance(problem, Problem) and problem.code == "not_regular"


def test_read_markdown_of_a_vanished_file_is_none_and_a_dangling_link_a_problem(tmp_path: Path):
    assert read_markdown(tmp_path, "gone.md", 1_000) is None
    (tmp_path / "link.md").symlink_to(tmp_path / "gone.md")
    problem = read_markdown(tmp_path, "link.md", 1_000)
    assert isinstance(problem, Problem) and problem.code == "broken_symlink"


# --- symbolic links out of the root (issue 11) ---------------------------------------------


def outside_tree(tmp_path: Path) -> Path:
    """A root whose workspace links a secret file and a folder outside it, plus one link that
    stays inside."""
    write(tmp_path / "home", ".aws/credentials.md", "aws_secret_access_key = x\n")
    write(tmp_path / "home", "notes/private.md")
    root = tmp_path / "root"
    write(root, "ws/a.md")
    (root / "ws" / "passwd.md").symlink_to(tmp_path / "home" / ".aws" / "credentials.md")
    (root / "ws" / "home-notes").symlink_to(tmp_path / "home" / "notes")
    (root / "ws" / "alias.md").symlink_to(root / "ws" / "a.md")
    return root


def test_files_and_folders_linked_from_outside_the_root_are_skipped_with_the_reason(
    tmp_path: Path,
):
    root = outside_tree(tmp_path)
    result = scan_root(root, SETTINGS)
    assert list(result.files) == ["ws/a.md", "ws/alias.md"]
    assert codes(result.problems) == {
        "ws/home-notes": "outside_root",
        "ws/passwd.md": "outside_root",
    }
    reason = next(p.reason for p in result.problems if p.path == "ws/passwd.md")
    assert "outside the memory root" in reason
    assert "index.follow_links_outside_root" in reason


def test_scan_paths_never_reaches_out_of_the_root_either(tmp_path: Path):
    root = outside_tree(tmp_path)
    result = scan_paths(
        root, ["ws/passwd.md", "ws/home-notes", "ws/home-notes/private.md"], SETTINGS
    )
    assert result.files == {}
    assert set(codes(result.problems).values()) == {"outside_root"}


def test_the_setting_lets_links_out_of_the_root_be_indexed(tmp_path: Path):
    root = outside_tree(tmp_path)
    result = scan_root(root, ALLOW_OUTSIDE)
    assert list(result.files) == [
        "ws/a.md",
        "ws/alias.md",
        "ws/home-notes/private.md",
        "ws/passwd.md",
    ]


def test_read_markdown_refuses_a_file_whose_real_path_is_outside(tmp_path: Path):
    root = outside_tree(tmp_path)
    problem = read_markdown(root, "ws/passwd.md", 1_000)
    assert isinstance(problem, Problem) and problem.code == "outside_root"
    content = read_markdown(root, "ws/passwd.md", 1_000, follow_links_outside_root=True)
    assert isinstance(content, FileContent) and "aws_secret_access_key" in content.text
    assert isinstance(read_markdown(root, "ws/alias.md", 1_000), FileContent)
