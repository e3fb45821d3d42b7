"""`carryd status` without a daemon: freshness, fallback, model probe, exit codes, daemon.json."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import ModelSettings, Settings
from carryd.daemon.layout import carry_report
from carryd.daemon.running.daemon_state import DaemonState
from carryd.daemon.running.status import probe_model, render_text, status_report
from carryd.daemon.state import pid_alive, read_state


def make_settings(root: Path, model_path: str = "") -> Settings:
    return Settings(
        root=str(root), model=dataclasses.replace(ModelSettings(), model_path=model_path)
    )


def write_source(root: Path, relative: str, mtime: float, text: str = "# Note\nbody\n") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def write_carry(root: Path, workspace: str, mtime: float, *, fallback: bool = False) -> bytes:
    carry_dir = root / ".carryd" / "carry"
    carry_dir.mkdir(parents=True, exist_ok=True)
    data = f"carry of {workspace}\n".encode()
    manifest = {
        "sha256": hashlib.sha256(data).hexdigest(),
        "fallback": fallback,
        "reason": "ledger unreadable" if fallback else None,
    }
    (carry_dir / f"{workspace}.md").write_bytes(data)
    (carry_dir / f"{workspace}.json").write_text(json.dumps(manifest))
    for name in (f"{workspace}.md", f"{workspace}.json"):
        os.utime(carry_dir / name, (mtime, mtime))
    return data


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_source(root, "MEMORY.md", 1000)
    write_source(root, "proj/notes.md", 1000)
    write_source(root, "proj/PLAN.md", 1100)
    write_source(root, "proj/node_modules/x.md", 9999)  # ignored folder: never a source
    write_source(root, ".carryd/carry/other.md", 9999)  # carryd's state: never a source
    return root


@pytest.mark.parametrize(
    ("newest_source", "checked_at", "stale", "behind"),
    [
        (1100, None, False, 0.0),  # carry (2000) newer than every source
        (2500, None, True, 500.0),  # a source edited after the carry
        (2500, 3000, False, 0.0),  # ...but the daemon re-planned it later and found no change
        (3500, 3000, True, 500.0),
    ],
)
def test_carry_freshness(
    root: Path, newest_source: float, checked_at: float | None, stale: bool, behind: float
) -> None:
    settings = make_settings(root)
    data = write_carry(root, "proj", 2000)
    write_source(root, "proj/handoff/LEDGER.md", newest_source)
    report = carry_report(settings, "proj", checked_at=checked_at, now=4000)
    assert report["exists"]
    assert report["bytes"] == len(data)
    assert report["sha256"] == hashlib.sha256(data).hexdigest()
    assert report["fallback"] is False
    assert report["stale"] is stale
    assert report["behind_seconds"] == behind
    assert report["newest_source"]["path"] == (
        "proj/handoff/LEDGER.md" if newest_source > 1100 else "proj/PLAN.md"
    )
    assert report["age_seconds"] == 4000 - max(2000, checked_at or 0)


def test_root_level_memory_and_the_sidecar_count_as_sources(root: Path) -> None:
    settings = make_settings(root)
    write_carry(root, "proj", 2000)
    write_source(root, "MEMORY.md", 2100)
    assert (
        carry_report(settings, "proj", checked_at=None, now=3000)["newest_source"]["path"]
        == "MEMORY.md"
    )
    write_source(root, "notes/tools.md", 2150)  # notes/ is root-level memory too
    report = carry_report(settings, "proj", checked_at=None, now=3000)
    assert report["newest_source"]["path"] == "notes/tools.md"
    write_source(root, "proj/handoff/sidecar.json", 2200, text="{}")
    report = carry_report(settings, "proj", checked_at=None, now=3000)
    assert report["newest_source"]["path"] == "proj/handoff/sidecar.json"
    assert report["stale"]


def test_missing_carry(root: Path) -> None:
    report = carry_report(make_settings(root), "proj", checked_at=None, now=0)
    assert not report["exists"] and report["stale"]
    assert report["reason"] == "no carry file yet"


def linked_model(model_dir: Path, folder: Path) -> Path:
    """A folder of symlinks to the real test model's files (so a test may remove one)."""
    folder.mkdir()
    for item in model_dir.iterdir():
        (folder / item.name).symlink_to(item)
    return folder


def test_model_probe(tmp_path: Path, model_dir: Path) -> None:
    assert probe_model(make_settings(tmp_path)) is None  # the default model: judged by the daemon
    assert "does not exist" in (probe_model(make_settings(tmp_path, str(tmp_path / "nope"))) or "")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no .onnx" in (probe_model(make_settings(tmp_path, str(empty))) or "")
    # An ONNX file alone is no model: nothing could tokenize the text.
    (empty / "model.onnx").write_bytes(b"x")
    assert "tokenizer.json" in (probe_model(make_settings(tmp_path, str(empty))) or "")
    assert probe_model(make_settings(tmp_path, str(model_dir))) is None


def test_status_report_healthy_then_stale_fallback_and_degraded(
    root: Path, tmp_path: Path, model_dir: Path
) -> None:
    model = linked_model(model_dir, tmp_path / "model")
    settings = make_settings(root, str(model))
    write_carry(root, "proj", 2000)
    report = status_report(settings, now=3000)
    assert report["healthy"], report["problems"]
    assert report["daemon"]["running"] is False
    assert report["counts"] is None  # no index yet
    assert [c["workspace"] for c in report["carries"]] == ["proj"]

    write_source(root, "proj/notes.md", 2500)
    report = status_report(settings, now=3000)
    assert not report["healthy"]
    assert report["problems"] == ["carry proj: stale (proj/notes.md changed since)"]

    write_carry(root, "proj", 2600, fallback=True)
    report = status_report(settings, now=3000)
    assert report["problems"] == ["carry proj: fallback (ledger unreadable)"]

    write_carry(root, "proj", 2600)
    for onnx in model.glob("*.onnx"):
        onnx.unlink()
    report = status_report(settings, now=3000)
    assert report["model"]["degraded"] and not report["model"]["loaded"]
    assert report["problems"][0].startswith("model degraded: model folder")
    assert "DEGRADED" in render_text(report, now=3000)


def test_a_new_workspace_without_carry_is_unhealthy(root: Path) -> None:
    settings = make_settings(root)
    write_carry(root, "proj", 2000)
    (root / "fresh-ws").mkdir()
    report = status_report(settings, now=3000)
    assert report["problems"] == ["carry fresh-ws: missing"]


def test_daemon_json_of_a_dead_daemon_reads_as_not_running(root: Path) -> None:
    settings = make_settings(root)
    state = DaemonState(settings, pid=2**22 + 12345, clock=lambda: 1000.0)
    state.update(state="running")
    assert read_state(settings)["pid"] == 2**22 + 12345
    assert not pid_alive(2**22 + 12345)
    report = status_report(settings, now=1100)
    assert report["daemon"]["running"] is False
    assert report["daemon"]["pid"] is None


def test_daemon_json_of_a_live_daemon_still_starting(root: Path) -> None:
    settings = make_settings(root)
    DaemonState(settings, clock=lambda: 1000.0).update(state="starting")
    report = status_report(settings, now=1100)
    assert report["daemon"] == {
        **report["daemon"],
        "running": True,
        "answering": False,
        "pid": os.getpid(),
        "state": "starting",
        "uptime_seconds": 100.0,
    }
    assert "control socket not answering" in render_text(report, now=1100)


@dataclasses.dataclass(frozen=True)
class FakeReport:
    """A sync report's JSON face, as `SyncReport.to_json()` gives it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "files": 3,
            "entries": 9,
            "embedded": 1,
            "removed": 0,
            "unchanged": 2,
            "degraded": None,
            "problems": [{"path": "x.md", "reason": "binary"}],
        }


@dataclasses.dataclass(frozen=True)
class FakeCarry:
    workspace: str
    changed: bool
    fallback: bool = False
    reason: str | None = None


def test_daemon_state_records_syncs_atomically(root: Path) -> None:
    settings = make_settings(root)
    now = [1000.0]
    state = DaemonState(settings, queued=lambda: 4, clock=lambda: now[0])
    now[0] = 1010.0
    state.record_sync(
        kind="batch",
        paths=2,
        events=7,
        report=FakeReport(),
        carries=[FakeCarry("proj", True)],
        seconds=0.25,
    )
    state.record_sync(kind="reconcile", paths=None, events=0, report=None, carries=[], seconds=1.5)
    state.record_error("batch of 1 paths", OSError("x.md: unreadable"))
    recorded = read_state(settings)
    assert recorded is not None
    assert recorded["syncs"] == 1 and recorded["reconciles"] == 1 and recorded["events"] == 7
    assert recorded["queued"] == 4
    assert recorded["carries_checked"] == {"proj": 1010.0}
    assert recorded["last_sync"]["kind"] == "reconcile"
    assert recorded["last_error"]["message"] == "OSError: x.md: unreadable"
    assert sorted(p.name for p in (root / ".carryd").iterdir()) == ["carry", "daemon.json"]
    snapshot = state.snapshot()
    assert snapshot["uptime_seconds"] == 10.0


def test_cli_status_json_and_exit_codes(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_carry(root, "proj", 2000)
    assert main(["status", "--json", "--root", str(root)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["healthy"] and report["carries"][0]["stale"] is False
    write_source(root, "proj/PLAN.md", 2500)
    assert main(["status", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "daemon: not running" in out and "STALE" in out


def test_status_counts_an_existing_index(root: Path) -> None:
    from carryd.index.store import Store

    settings = make_settings(root)
    with Store.open(settings.db_path):
        pass
    report = status_report(settings, now=0)
    assert report["counts"] == {"files": 0, "entries": 0, "vectors": 0}


def test_status_names_the_model_a_local_folder_really_holds(
    root: Path, use_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a daemon, status resolves the folder's identity (its own files), not the
    configured default's name."""
    main(["status", "--json", "--root", str(root)])
    identity = json.loads(capsys.readouterr().out)["model"]["identity"]
    assert identity.startswith("nreimers/MiniLM-L6-H384-uncased (model.onnx, 384-d, mean)")
    assert str(use_model) in identity


def test_status_names_ledger_sections_outside_the_table(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 10 item 3: a heading the section table does not know is carried at the lowest
    weight, and `carryd status` says which (the manifest's `unrecognised_sections`)."""
    write_carry(root, "proj", 2000)
    manifest_path = root / ".carryd" / "carry" / "proj.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["unrecognised_sections"] = ["Random thoughts", "决策"]
    manifest_path.write_text(json.dumps(manifest))
    os.utime(manifest_path, (2000, 2000))
    assert main(["status", "--root", str(root)]) == 0  # healthy: named, not a problem
    out = capsys.readouterr().out
    assert "ledger sections outside the table, carried last: 'Random thoughts', '决策'" in out
    report = status_report(make_settings(root), now=2100)
    assert report["carries"][0]["unrecognised_sections"] == ["Random thoughts", "决策"]


# --- honest status: a degraded model, an index run, what to run next ----------------------


def test_without_a_daemon_a_model_folder_that_cannot_work_is_degraded(
    root: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "half-a-model"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not a model")
    write_carry(root, "proj", 2000)
    code = main(["status", "--json", "--root", str(root)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["model"]["degraded"] is None  # the default model: unknown
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(folder))
    code = main(["status", "--json", "--root", str(root)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and not report["healthy"]
    assert str(folder) in report["model"]["degraded"]
    assert main(["status", "--root", str(root)]) == 1
    text = capsys.readouterr().out
    assert "DEGRADED" in text and "health: ok" not in text


def test_without_a_daemon_the_last_index_run_tells_a_degraded_default_model(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No model folder, offline, nothing cached: `carryd index` builds a lexical index and
    says why; status, with no daemon ever run, says the same."""
    assert main(["index", "--root", str(root), "--json"]) == 0
    degraded = json.loads(capsys.readouterr().out)["degraded"]
    assert degraded
    assert main(["carry", "--root", str(root)]) == 0
    capsys.readouterr()
    assert main(["status", "--json", "--root", str(root)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["model"]["degraded"] == degraded
    assert report["problems"][0] == f"model degraded: {degraded}"


def test_an_index_run_in_progress_or_cut_short_is_reported_with_counts(root: Path) -> None:
    from carryd.daemon.state import write_indexing

    settings = make_settings(root)
    write_carry(root, "proj", 2000)
    assert status_report(settings, now=3000)["healthy"]
    progress = {
        "pid": os.getpid(),
        "started_at": 2900.0,
        "updated_at": 2990.0,
        "embedded": 512,
        "to_embed": 2000,
        "files_committed": 26,
        "files_to_commit": 100,
    }
    write_indexing(settings, progress)
    report = status_report(settings, now=3000)
    assert not report["healthy"]
    assert report["indexing"]["running"] is True
    assert report["problems"] == [
        f"indexing in progress (pid {os.getpid()}): this run has embedded 512 of the 2000 "
        "entries it embeds, committed 26 of 100 files; the index is partial"
    ]
    assert "indexing: indexing in progress" in render_text(report, now=3000)
    write_indexing(settings, {**progress, "pid": 2**22 + 12345})  # no such process
    report = status_report(settings, now=3000)
    assert report["indexing"]["interrupted"] is True
    assert "stopped before finishing: this run has embedded 512 of the 2000" in (
        report["problems"][0]
    )
    assert any("carryd index" in step for step in report["next"])


def test_right_after_index_the_missing_carries_say_what_to_run(
    root: Path, use_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "--root", str(root)]) == 0
    capsys.readouterr()
    assert main(["status", "--root", str(root)]) == 1
    text = capsys.readouterr().out
    assert "carry proj: MISSING" in text
    assert f"next: `carryd carry --root {root}` writes the carries (proj)" in text
    assert "carryd run" in text
    assert main(["carry", "--root", str(root)]) == 0
    capsys.readouterr()
    assert main(["status", "--json", "--root", str(root)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["healthy"] and report["next"] == [] and report["indexing"] is None


def test_a_remembered_download_failure_is_shown_with_when_carryd_tries_again(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed download of the default model is remembered (model_fetch); status says when
    it failed, why, and when carryd tries again, instead of leaving the model "unknown"."""
    from carryd.daemon.indexer.model import model_cache_dir
    from carryd.daemon.indexer.model_fetch import guard_for

    settings = make_settings(root)
    write_carry(root, "proj", 2000)
    assert status_report(settings, now=2100)["model"]["degraded"] is None
    guard = guard_for(model_cache_dir(settings), settings.model)
    guard.download_failed(_identity(settings), "timed out")
    report = status_report(settings, now=2100)
    failure = report["model"]["download_failed"]
    assert "timed out" in failure["reason"] and failure["at"] and failure["retry_after"]
    assert not report["healthy"]
    assert f"failed at {failure['at']}" in report["model"]["degraded"]
    assert f"tries again after {failure['retry_after']}" in report["model"]["degraded"]
    assert main(["status", "--root", str(root)]) == 1
    assert "download failed at" in capsys.readouterr().out
    # A local model folder is what the user chose instead: the old failure no longer counts.
    local = dataclasses.replace(settings, model=dataclasses.replace(settings.model, model_path="x"))
    assert "download_failed" not in status_report(local, now=2100)["model"]


def _identity(settings: Settings) -> Any:
    from carryd.index.model_identity import ModelIdentity

    model = settings.model
    return ModelIdentity(
        name=model.name,
        file=model.file,
        query_prefix=model.query_prefix,
        passage_prefix=model.passage_prefix,
        dim=model.dim,
        pooling=model.pooling,
    )
