"""Symbolic links out of the memory root: `ln -s /etc/passwd ws/passwd.md` must not put
/etc/passwd into recall, expand or a carry, and says why it skipped the link; the config key
`index.follow_links_outside_root` lets a user opt in; a folder link created while the daemon
runs is indexed at once (no reconcile needed)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fault.conftest import carryd

SECRET_LINE = "root:x:0:0:root:/root:/bin/bash"


def make_root(tmp_path: Path) -> tuple[Path, Path]:
    """A root with one workspace that links a passwd-like file, a folder and its PLAN.md out."""
    outside = tmp_path / "outside"
    (outside / "shared").mkdir(parents=True)
    (outside / "passwd").write_text(f"{SECRET_LINE}\ndaemon:x:1:1::/usr/sbin:/bin/false\n")
    (outside / "shared" / "creds.md").write_text("# Cloud creds\n\nzebracorn-outside-note\n")
    (outside / "PLAN.md").write_text(f"# Plan\n\n## Current state\n- {SECRET_LINE}\n")
    root = tmp_path / "root"
    (root / "webshop" / "handoff").mkdir(parents=True)
    (root / "webshop" / "notes.md").write_text(
        "# Refunds\n\nRefund currency comes from the charge.\n"
    )
    (root / "webshop" / "passwd.md").symlink_to(outside / "passwd")
    (root / "webshop" / "shared").symlink_to(outside / "shared")
    (root / "webshop" / "PLAN.md").symlink_to(outside / "PLAN.md")
    return root, outside


def indexed_paths(root: Path) -> set[str]:
    connection = sqlite3.connect(f"file:{root / '.carryd' / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return {row[0] for row in connection.execute("SELECT path FROM files")}
    finally:
        connection.close()


def test_links_out_of_the_root_are_skipped_everywhere(tmp_path: Path, use_model: Path) -> None:
    root, _ = make_root(tmp_path)
    index = carryd("index", "--root", str(root), "--json")
    assert index.returncode == 0, index.stderr
    report = json.loads(index.stdout)
    skipped = {problem["path"]: problem["reason"] for problem in report["problems"]}
    assert set(skipped) >= {"webshop/passwd.md", "webshop/shared"}
    assert "outside the memory root" in skipped["webshop/passwd.md"]
    assert indexed_paths(root) == {"webshop/notes.md"}

    recall = carryd("recall", "root:x:0:0", "--root", str(root), "--json", "--min-confidence", "0")
    assert recall.returncode == 0, recall.stderr
    hits = json.loads(recall.stdout)["hits"]
    assert all("passwd" not in hit["path"] for hit in hits)
    assert "root:x:0" not in json.dumps(hits)  # (the answer echoes the query itself)

    carry = carryd("carry", "--root", str(root), "--workspace", "webshop", "--print")
    assert carry.returncode == 0, carry.stderr
    assert "root:x:0" not in carry.stdout and "/bin/bash" not in carry.stdout

    verify = carryd("verify", "--root", str(root), "--json")
    assert verify.returncode == 0, verify.stdout  # a skipped link is not an index difference


def test_the_config_key_lets_a_user_follow_links_out(tmp_path: Path, use_model: Path) -> None:
    root, _ = make_root(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text("[index]\nfollow_links_outside_root = true\n")
    index = carryd("index", "--root", str(root), "--config", str(config), "--json")
    assert index.returncode == 0, index.stderr
    assert indexed_paths(root) >= {"webshop/passwd.md", "webshop/shared/creds.md"}


def test_a_folder_link_made_or_removed_while_the_daemon_runs_is_synced_at_once(
    tmp_path: Path, use_model: Path
) -> None:
    root, outside = make_root(tmp_path)
    (root / "webshop" / "shared").unlink()
    config = tmp_path / "config.toml"
    config.write_text(
        "[index]\nfollow_links_outside_root = true\n"
        "[daemon]\ndebounce_ms = 50\nreconcile_minutes = 600.0\n"
    )
    log = (tmp_path / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "carryd.daemon.cli",
            "run",
            "--root",
            str(root),
            "--config",
            str(config),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for(lambda: "webshop/notes.md" in safe_paths(root), 60, "the start-up index")
        (root / "webshop" / "shared").symlink_to(outside / "shared")
        wait_for(
            lambda: "webshop/shared/creds.md" in safe_paths(root), 15, "the linked folder's note"
        )
        (root / "webshop" / "shared").unlink()
        wait_for(
            lambda: "webshop/shared/creds.md" not in safe_paths(root),
            15,
            "the unlinked folder's note to leave the index",
        )
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()


def safe_paths(root: Path) -> set[str]:
    try:
        return indexed_paths(root)
    except sqlite3.Error:
        return set()


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)
