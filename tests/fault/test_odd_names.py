"""File names carryd cannot carry as text: bytes that are not UTF-8 (`bad\\xff.md`) and a
newline in a name. Each is skipped and named (stderr, `carryd status`), never fatal to the
batch: `carryd index` used to exit 1 with `UnicodeEncodeError: surrogates not allowed` and
index none of the other changed files, and the daemon's reconcile failed the same way."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.fault.conftest import carryd
from tests.fault.helpers import Daemon, make_root, settle, wait_for

BAD_BYTES = b"bad\xff.md"
NEWLINE = "new\nline.md"


def add_odd_files(folder: Path) -> None:
    with open(os.fsencode(folder) + b"/" + BAD_BYTES, "wb") as stream:
        stream.write(b"# Bad name\n\nzebracorn-bad-bytes\n")
    (folder / NEWLINE).write_text("# Newline\n\nzebracorn-newline\n", encoding="utf-8")


def recall_paths(root: Path, query: str) -> set[str]:
    result = carryd("recall", query, "--json", "--min-confidence", "0", "--root", str(root))
    assert result.returncode == 0, result.stderr
    return {hit["path"] for hit in json.loads(result.stdout)["hits"]}


def test_odd_names_are_skipped_and_named_and_the_rest_indexed(
    tmp_path: Path, use_model: Path
) -> None:
    root = make_root(tmp_path / "root")
    add_odd_files(root / "proj")
    (root / "proj" / "plain.md").write_text("# Plain\n\nzebracorn-plain-file\n")
    result = carryd("index", "--root", str(root))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "skipped proj/bad\\xff.md: the file name is not UTF-8" in result.stderr
    assert "skipped proj/new\\nline.md: the file name holds a newline" in result.stderr
    assert "skipped 2 files" in result.stdout
    assert "proj/plain.md" in recall_paths(root, "zebracorn-plain-file")
    status = carryd("status", "--root", str(root))
    assert "skipped: proj/bad\\xff.md: the file name is not UTF-8; rename it" in status.stdout
    assert "skipped: proj/new\\nline.md" in status.stdout
    report = json.loads(carryd("status", "--json", "--root", str(root)).stdout)
    found = {item["path"] for item in report["skipped"]}
    assert found == {"proj/bad\\xff.md", "proj/new\\nline.md"}


def test_expand_headers_stay_one_line(tmp_path: Path, use_model: Path) -> None:
    root = make_root(tmp_path / "root")
    add_odd_files(root / "proj")
    assert carryd("index", "--root", str(root)).returncode == 0
    recall = carryd("recall", "rollout", "--json", "--root", str(root))
    ids = [hit["id"] for hit in json.loads(recall.stdout)["hits"]]
    result = carryd("expand", *ids, "--root", str(root))
    assert result.returncode == 0, result.stderr
    headers = [line for line in result.stdout.splitlines() if line.startswith("<!-- mem_")]
    assert len(headers) == len(ids) and all(line.endswith(" -->") for line in headers)


def test_the_daemon_skips_odd_names_at_reconcile_and_while_watching(
    tmp_path: Path, use_model: Path
) -> None:
    root = make_root(tmp_path / "root")
    add_odd_files(root / "proj")
    daemon = Daemon(root, tmp_path / "daemon.log").wait_ready()
    try:
        settle(daemon.settings)
        assert "proj/note-1.md" in recall_paths(root, "Note 1 version 0")
        add_odd_files(root / "ops")
        (root / "ops" / "later.md").write_text("# Later\n\nzebracorn-written-later\n")
        wait_for(
            lambda: "ops/later.md" in recall_paths(root, "zebracorn-written-later"),
            60,
            "the daemon to index a file written beside odd names",
        )
        status = carryd("status", "--root", str(root))
        assert "skipped: proj/bad\\xff.md" in status.stdout, status.stdout
    finally:
        assert daemon.stop() == 0
    assert "Traceback" not in daemon.text()
    assert "UnicodeEncodeError" not in daemon.text()
