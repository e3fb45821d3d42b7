"""The memory root moved away and recreated while the daemon runs: the daemon notices (the
folder at the root's path has another inode) and re-roots on the new folder; a root that is
gone for good ends the daemon with a message naming it. Before, the daemon kept watching the
moved tree, the new root got no carries, and `carryd status` said "daemon: not running"
while it ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.fault.conftest import carryd
from tests.fault.helpers import Daemon, make_root, settle, wait_for


def status(root: Path) -> dict[str, object]:
    report: dict[str, object] = json.loads(carryd("status", "--json", "--root", str(root)).stdout)
    return report


def test_a_replaced_root_is_re_rooted(tmp_path: Path, use_model: Path) -> None:
    root = make_root(tmp_path / "root")
    daemon = Daemon(root, tmp_path / "daemon.log").wait_ready()
    try:
        settle(daemon.settings)
        root.rename(tmp_path / "root.old")
        make_root(root)
        (root / "fresh" / "handoff").mkdir(parents=True)
        (root / "fresh" / "PLAN.md").write_text("# Plan\n\n## Current state\n- new root\n")
        carry = root / ".carryd" / "carry" / "fresh.md"
        wait_for(carry.exists, 90, "a carry for the new root's workspace")
        assert daemon.process.poll() is None, daemon.text()
        report = status(root)
        assert report["daemon"]["running"], report["daemon"]  # type: ignore[index]
        assert "daemon: running" in carryd("status", "--root", str(root)).stdout
        # It watches the new tree, not the moved one.
        (root / "fresh" / "later.md").write_text("# Later\n\nzebracorn-after-the-move\n")

        def found() -> bool:
            result = carryd("recall", "zebracorn-after-the-move", "--json", "--root", str(root))
            return any(hit["path"] == "fresh/later.md" for hit in json.loads(result.stdout)["hits"])

        wait_for(found, 60, "the new root's edit to be indexed")
    finally:
        code = daemon.stop()
    assert code == 0, daemon.text()
    assert "the memory root was replaced" in daemon.text()
    assert "Traceback" not in daemon.text()


def test_a_root_gone_for_good_ends_the_daemon_with_a_message(
    tmp_path: Path, use_model: Path
) -> None:
    root = make_root(tmp_path / "root")
    daemon = Daemon(root, tmp_path / "daemon.log").wait_ready()
    try:
        settle(daemon.settings)
        shutil.rmtree(root)
        code = daemon.process.wait(60)
    finally:
        daemon.ensure_dead()
    assert code == 1, daemon.text()
    assert f"{root}: the memory root was moved or deleted while the daemon ran" in daemon.text()
    assert "Traceback" not in daemon.text()
