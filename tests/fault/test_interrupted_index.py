"""Ctrl-C (or a kill) during `carryd index` (issue 11, "Ctrl-C during carryd index loses all
work"): a sync commits whole files in batches, so the re-run embeds only what is missing, and
status shows the run in progress, then cut short, with its counts."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from carryd.daemon.config import load_settings
from carryd.daemon.running.status import status_report
from carryd.daemon.state import read_indexing

from tests.fault.helpers import cli, note_text, start_cli, wait_for

pytestmark = pytest.mark.fault

FILES, SECTIONS = 40, 19  # 40 files of 20 entries (a first block and 19 sections)


def vectors(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
            return int(connection.execute("SELECT count(*) FROM vectors").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_an_interrupted_index_resumes_where_it_stopped(tmp_path: Path, use_model: Path) -> None:
    root = tmp_path / "root"
    for number in range(FILES):
        path = root / ("proj" if number % 2 else "ops") / f"notes-{number:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(number, 0, sections=SECTIONS), encoding="utf-8")
    total = FILES * (SECTIONS + 1)
    db = root / ".carryd" / "index.sqlite"

    settings = load_settings(None, root=str(root))
    run = start_cli(root, "index", "--json")

    def first_batch_committed() -> bool:
        record = read_indexing(settings) or {}
        return bool(record.get("embedded")) or run.poll() is not None

    wait_for(first_batch_committed, 120, "a first batch committed")
    report = status_report(settings)  # in-process: quick
    assert not report["healthy"]
    if run.poll() is None:
        # Mid-run, status says the index is partial and how far it got.
        indexing = report["indexing"]
        assert indexing is not None and indexing["running"] is True
        assert indexing["to_embed"] == total and 0 < indexing["embedded"] <= total
        assert any(problem.startswith("indexing in progress") for problem in report["problems"])
    run.send_signal(signal.SIGINT)  # Ctrl-C
    code = run.wait(60)
    if code == 0:
        pytest.fail("the index finished before it could be interrupted; make the root larger")
    assert code == 130, run.communicate()
    kept = vectors(db)
    assert 0 < kept < total, kept

    status = cli(root, "status", "--json")
    report = json.loads(status.stdout)
    assert report["indexing"]["interrupted"] is True
    assert any("stopped before finishing" in problem for problem in report["problems"])
    assert any("carryd index" in step for step in report["next"])

    started = time.monotonic()
    again = cli(root, "index", "--json")
    assert again.returncode == 0, again.stderr
    answer = json.loads(again.stdout)
    assert answer["entries"] == total and answer["files"] == FILES
    assert answer["embedded"] == total - kept, (answer, kept)
    assert time.monotonic() - started < 120
    verify = cli(root, "verify", "--json")
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stdout
    assert json.loads(cli(root, "status", "--json").stdout)["indexing"] is None
