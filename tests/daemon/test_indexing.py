"""`carryd index` / `carryd verify` end to end: real parser, real SQLite, real fastembed with the
offline test model. The 1,000-entry root is indexed once per module and copied per test."""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import ModelSettings, Settings, load_settings
from carryd.daemon.indexer.indexing import SyncReport, sync_root
from carryd.daemon.indexer.model import explicit_model_keys, load_embedder_for
from carryd.daemon.indexer.verifying import repair_root, verify_root
from carryd.index.entries import parse_entries
from carryd.index.store import Store
from carryd.index.tokenize import TOKENIZER_VERSION, terms

REPO = Path(__file__).resolve().parents[2]
WORKSPACES = ("alpha", "beta", "gamma")
WORDS = "ledger carry vector sqlite handoff plan recall anchor budget index".split()
FILES, PER_FILE = 50, 20  # 2 heading-less blocks + 18 heading sections per file


def file_text(number: int) -> str:
    lines = [
        f"Preamble {number} opens the file with a first sentence. It goes on a little.",
        "",
        f"Second block {number} also starts plainly. Then more words follow.",
        "",
    ]
    for section in range(PER_FILE - 2):
        word = WORDS[(number + section) % len(WORDS)]
        lines += [
            f"## Topic {number}-{section} about {word}",
            "",
            f"Body of {number}-{section}: the {word} notes say what was tried and what failed."
            f" Detail {number}-{section} follows later.",
            "",
        ]
    return "\n".join(lines)


def relative_path(number: int) -> str:
    folder = "" if number % 10 == 0 else WORKSPACES[number % 3] + "/"
    return f"{folder}notes-{number:02d}.md"


def build_root(root: Path, files: int = FILES) -> Path:
    for number in range(files):
        path = root / relative_path(number)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(file_text(number), encoding="utf-8")
    return root


def run(*argv: str) -> tuple[int, dict[str, Any] | None, str]:
    """Run the CLI in-process; return (exit code, parsed JSON stdout or None, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    text = out.getvalue().strip()
    return code, (json.loads(text) if text.startswith("{") else None), err.getvalue()


def index_json(root: Path, *extra: str) -> dict[str, Any]:
    code, answer, _ = run("index", "--root", str(root), "--json", *extra)
    assert code == 0 and answer is not None
    return answer


def sync(root: Path, **options: Any) -> SyncReport:
    return sync_root(load_settings(None, root=str(root)), **options)


def counts(answer: dict[str, Any]) -> tuple[int, int, int, int]:
    return answer["files"], answer["entries"], answer["embedded"], answer["removed"]


@pytest.fixture(scope="module")
def template(
    tmp_path_factory: pytest.TempPathFactory, model_dir: Path
) -> Iterator[tuple[Path, Any]]:
    """A 1,000-entry root, indexed once with the real model through `carryd index --json`."""
    base = tmp_path_factory.mktemp("template")
    root = build_root(base / "root")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("CARRYD_CONFIG", "CARRYD_ROOT"):
            patch.delenv(name, raising=False)
        patch.setenv("XDG_CONFIG_HOME", str(base / "config"))
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("CARRYD_MODEL_PATH", str(model_dir))
        first = index_json(root)
    yield root, first


@pytest.fixture
def root(template: tuple[Path, Any], tmp_path: Path, use_model: Path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(template[0], copy, symlinks=True)
    return copy


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def stored(root: Path, relative: str) -> dict[str, Any]:
    with Store.open(root / ".carryd" / "index.sqlite") as store:
        return {row.line_start: row for row in store.rows_for_paths([relative])}


# -- the 1,000-entry root ------------------------------------------------------------------


def test_first_run_embeds_every_entry(template: tuple[Path, Any]):
    assert template[1] == {
        "files": 50,
        "entries": 1000,
        "embedded": 1000,
        "removed": 0,
        "unchanged": 0,
        "degraded": None,
        "problems": [],
    }


def test_a_second_run_embeds_nothing_and_parses_no_file(root: Path):
    answer = index_json(root)
    assert counts(answer) == (50, 1000, 0, 0)
    assert answer["unchanged"] == 50
    report = sync(root)
    assert (report.parsed, report.embedded, report.unchanged) == (0, 0, 50)
    assert report.touched_workspaces == frozenset()


def test_changing_one_heading_embeds_one(root: Path):
    edit(root / relative_path(3), "## Topic 3-5 about", "## Topic 3-5 regarding")
    answer = index_json(root)
    assert answer["embedded"] == 1
    assert answer["entries"] == 1000
    assert answer["unchanged"] == 49


def test_changing_the_first_sentence_of_a_headingless_entry_embeds_one_and_keeps_its_id(
    root: Path,
):
    relative = relative_path(4)
    before = stored(root, relative)[1]
    edit(root / relative, "Preamble 4 opens the file", "Preamble 4 now opens the file")
    answer = index_json(root)
    assert counts(answer) == (50, 1000, 1, 0)
    after = stored(root, relative)[1]
    assert after.id == before.id
    assert after.l0 != before.l0 and after.l0_hash != before.l0_hash


def test_a_body_edit_that_keeps_the_l0_embeds_nothing_but_updates_hashes_and_postings(root: Path):
    relative = relative_path(7)
    line = 5 + 4 * 2  # the third heading section
    before = stored(root, relative)[line]
    # the L0 is the heading plus the body's first sentence: edit the second one
    edit(root / relative, "Detail 7-2 follows", "Detail 7-2 zeppelinword follows")
    answer = index_json(root)
    assert counts(answer) == (50, 1000, 0, 0)
    after = stored(root, relative)[line]
    assert after.id == before.id
    assert after.l0_hash == before.l0_hash
    assert after.text_hash != before.text_hash
    with Store.open(root / ".carryd" / "index.sqlite") as store:
        [term] = terms("zeppelinword")
        assert store.postings([term]) == {term: {after.id: 1}}


def test_adding_an_entry(root: Path):
    path = root / relative_path(8)
    path.write_text(path.read_text() + "\n## A brand new topic\n\nWith a body.\n")
    assert counts(index_json(root)) == (50, 1001, 1, 0)


def test_deleting_an_entry(root: Path):
    edit(root / relative_path(9), "## Topic 9-17 about", "")  # the last heading goes:
    # its body now belongs to the section above, whose L0 (the heading) stays the same
    assert counts(index_json(root)) == (50, 999, 0, 1)


def test_adding_a_file(root: Path):
    (root / "alpha" / "fresh.md").write_text("# One\n\na\n\n# Two\n\nb\n\n# Three\n\nc\n")
    assert counts(index_json(root)) == (51, 1003, 3, 0)


def test_deleting_a_file(root: Path):
    (root / relative_path(11)).unlink()
    answer = index_json(root)
    assert counts(answer) == (49, 980, 0, 20)
    assert answer["unchanged"] == 49


def test_a_same_size_edit_in_the_same_mtime_tick_is_still_seen(root: Path):
    path = root / relative_path(12)
    info = path.stat()
    edit(path, "Topic 12-0 about", "Topic 12-0 ABOUT")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size
    report = sync(root)
    # just indexed: the stat is "racily clean", so the file is hashed and the edit found
    assert (report.parsed, report.embedded) == (1, 1)


def test_paths_restrict_the_sync_to_what_changed(root: Path):
    relative = relative_path(13)  # in workspace "beta"
    edit(root / relative, "## Topic 13-1 about", "## Topic 13-1 on")
    (root / relative_path(14)).unlink()
    report = sync(root, paths=[relative, str(root / relative_path(14))])
    assert (report.parsed, report.embedded, report.removed) == (1, 1, 21)
    assert report.touched_workspaces == frozenset({"beta", "gamma"})
    assert (report.files, report.entries) == (49, 980)
    in_alpha = sum(relative_path(n).startswith("alpha/") for n in range(FILES))
    shutil.rmtree(root / "alpha")
    report = sync(root, paths=["alpha"])
    assert report.removed == in_alpha * PER_FILE and report.parsed == 0
    assert report.touched_workspaces == frozenset({"alpha"})
    assert verify_root(load_settings(None, root=str(root))).ok


# -- small roots ---------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root = build_root(tmp_path / "small", files=3)  # notes-00.md, beta/…, gamma/…
    (root / "alpha").mkdir()
    return root


def test_without_a_model_the_index_still_builds_and_says_why(
    small: Path, tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    empty = tmp_path / "no-model"
    empty.mkdir()
    environment = {**os.environ, "CARRYD_MODEL_PATH": str(empty), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "index", "--root", str(small), "--json"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert counts(answer) == (3, 60, 0, 0)
    assert str(empty) in answer["degraded"] and "ONNX" in answer["degraded"]
    with Store.open(small / ".carryd" / "index.sqlite") as store:
        assert store.counts()["vectors"] == 0
        [term] = terms("preamble")
        assert len(store.postings([term])[term]) == 3  # one preamble block per file
    # once a model is there, the entries left without vectors are embedded
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(model_dir))
    assert counts(index_json(small)) == (3, 60, 60, 0)
    assert counts(index_json(small)) == (3, 60, 0, 0)


def test_a_model_identity_change_re_embeds_everything_and_says_so_once(
    small: Path, use_model: Path, tmp_path: Path
):
    assert index_json(small)["embedded"] == 60
    config = tmp_path / "config.toml"
    config.write_text('[model]\npassage_prefix = "passage: "\nquery_prefix = "query: "\n')
    code, answer, stderr = run("index", "--root", str(small), "--config", str(config), "--json")
    assert code == 0 and answer is not None and answer["embedded"] == 60
    assert "model identity changed" in stderr
    # One run embedded every entry into the new set and swapped it in: the old set is gone,
    # with no copy of the index kept aside (the old set served until the swap).
    assert "re-embedding for model" in stderr and "complete" in stderr
    assert not list((small / ".carryd").glob("index.sqlite.old-model-*"))
    code, answer, stderr = run("index", "--root", str(small), "--config", str(config), "--json")
    assert answer is not None and answer["embedded"] == 0 and "model identity" not in stderr
    with Store.open(small / ".carryd" / "index.sqlite") as store:
        assert len(store.vector_identities()) == 1
        assert store.next_identity() == "" and store.counts()["vectors"] == 60


def test_bad_inputs_are_reported_by_path_and_the_rest_indexes(small: Path, use_model: Path):
    (small / "alpha" / "binary.md").write_bytes(b"# title\n\x00\x01\x02\x03")
    (small / "alpha" / "latin1.md").write_bytes("# café\n".encode("latin-1"))
    with open(small / "beta" / "huge.md", "wb") as handle:  # 50 MB, sparse: instant
        handle.truncate(50_000_000)
    (small / "beta" / "loop").symlink_to(small / "beta")
    (small / "gamma.md").symlink_to(small / "nowhere.md")
    os.mkfifo(small / "alpha" / "pipe.md")
    code, answer, stderr = run("index", "--root", str(small), "--json")
    assert code == 0 and answer is not None
    assert counts(answer) == (3, 60, 60, 0)
    reported = {problem["path"]: problem["reason"] for problem in answer["problems"]}
    assert set(reported) == {
        "alpha/binary.md",
        "alpha/latin1.md",
        "beta/huge.md",
        "beta/loop",
        "gamma.md",
        "alpha/pipe.md",
    }
    assert "NUL" in reported["alpha/binary.md"]
    assert "UTF-8" in reported["alpha/latin1.md"]
    assert "too large" in reported["beta/huge.md"]
    assert "loop" in reported["beta/loop"]
    assert "broken" in reported["gamma.md"]
    for path in reported:
        assert path in stderr


def test_a_file_that_goes_bad_leaves_the_index(small: Path, use_model: Path):
    index_json(small)
    (small / relative_path(1)).write_bytes(b"\x00binary now")
    answer = index_json(small)
    assert counts(answer) == (2, 40, 0, 20)
    assert [problem["path"] for problem in answer["problems"]] == [relative_path(1)]


def test_an_unreadable_file_is_reported_by_path(tmp_path: Path):
    """Root reads a mode-000 file anyway (CAP_DAC_OVERRIDE), so as root `carryd index` runs in a
    child that dropped the two capabilities that bypass file permissions, and so meets EACCES
    like any user would."""
    root = build_root(tmp_path / "root", files=1)
    (root / "secret.md").write_text("# secret\n")
    (root / "secret.md").chmod(0)
    try:
        if os.geteuid() != 0:
            code, answer, _ = run("index", "--root", str(root), "--json")
        else:
            result = subprocess.run(
                [sys.executable, "-m", "carryd.daemon.cli", "index", "--root", str(root), "--json"],
                capture_output=True,
                text=True,
                env={**os.environ, "CARRYD_MODEL_PATH": str(tmp_path / "no-model")},
                preexec_fn=_drop_permission_bypass,
                timeout=120,
            )
            code, answer = result.returncode, json.loads(result.stdout or "null")
    finally:
        (root / "secret.md").chmod(0o644)
    assert code == 0
    assert answer is not None and answer["entries"] == 20
    assert answer["problems"] == [{"path": "secret.md", "reason": "unreadable (permission denied)"}]


def _drop_permission_bypass() -> None:
    """In a child about to exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH for good."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for capability in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.mark.parametrize(
    ("damage", "kind"),
    [
        (lambda db: db.write_bytes(b"garbage, not SQLite " * 200), "corrupt"),
        (lambda db: db.write_bytes(db.read_bytes()[:1000]), "corrupt"),
        (
            lambda db: _sql(db, "UPDATE meta SET value = '0' WHERE key = 'schema_version'"),
            "old-schema",
        ),
    ],
    ids=["garbage", "truncated", "old-schema"],
)
def test_a_bad_index_is_moved_aside_and_rebuilt(
    small: Path, tmp_path: Path, monkeypatch, damage, kind
):
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(tmp_path / "no-model"))  # fast: no vectors
    index_json(small)
    database = small / ".carryd" / "index.sqlite"
    damage(database)
    code, answer, stderr = run("index", "--root", str(small), "--json")
    assert code == 0 and answer is not None
    assert counts(answer) == (3, 60, 0, 0)
    asides = [
        path
        for path in (small / ".carryd").glob(f"index.sqlite.{kind}-*")
        if not path.name.endswith(("-wal", "-shm"))
    ]
    assert len(asides) == 1, stderr
    assert f"moved to {asides[0].name}" in stderr


def _sql(database: Path, statement: str) -> None:
    connection = sqlite3.connect(database)
    with connection:
        connection.execute(statement)
    connection.close()


def test_verify_agrees_after_a_sync_and_lists_each_difference_after_tampering(
    small: Path, use_model: Path
):
    index_json(small)
    code, answer, _ = run("verify", "--root", str(small), "--json")
    assert (code, answer) == (0, {"ok": True, "problems": [], "skipped": []})
    entries = parse_entries(relative_path(1), (small / relative_path(1)).read_text())
    database = small / ".carryd" / "index.sqlite"
    with sqlite3.connect(database) as connection:
        connection.execute("DELETE FROM vectors WHERE entry_id = ?", (entries[0].id,))
        connection.execute("UPDATE entries SET l0_hash = 'x' WHERE id = ?", (entries[1].id,))
        connection.execute("DELETE FROM postings WHERE entry_id = ?", (entries[2].id,))
    connection.close()
    (small / "alpha" / "unindexed.md").write_text("# not yet\n")
    code, answer, _ = run("verify", "--root", str(small), "--json")
    assert code == 1 and answer is not None and answer["ok"] is False
    found = {(problem["kind"], problem["path"]) for problem in answer["problems"]}
    assert found == {
        ("file_not_indexed", "alpha/unindexed.md"),
        ("vector_missing", relative_path(1)),
        ("l0_hash", relative_path(1)),
        ("vector_missing", relative_path(1)),  # entries[1]: its vector no longer fits
        ("vector_stale", relative_path(1)),
        ("postings", relative_path(1)),
    }
    settings = load_settings(None, root=str(small))
    report = repair_root(settings, verify_root(settings))
    assert report.parsed == 2 and report.embedded == PER_FILE + 1  # the damaged file + the new
    assert verify_root(settings).ok


def test_the_human_summary(small: Path, use_model: Path):
    code, answer, _ = run("index", "--root", str(small))
    assert code == 0 and answer is None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["index", "--root", str(small)])
    assert out.getvalue().startswith("indexed 3 files, 60 entries: embedded 0, removed 0")


def test_model_keys_count_as_chosen_when_written_or_changed(tmp_path: Path, model_dir: Path):
    config = tmp_path / "config.toml"
    config.write_text(
        f'[model]\nmodel_path = "{model_dir}"\nname = "Xenova/multilingual-e5-small"\n'
    )
    settings = load_settings(config, root=str(tmp_path))
    assert explicit_model_keys(settings) == {"name": "Xenova/multilingual-e5-small"}
    embedder, degraded = load_embedder_for(settings, lazy=True)
    assert degraded is None and embedder is not None
    # the name was written, so it wins, and an E5 name brings E5 prefixes
    assert embedder.identity.name == "Xenova/multilingual-e5-small"
    assert embedder.identity.passage_prefix == "passage: "
    changed = dataclasses.replace(
        Settings(), model=dataclasses.replace(ModelSettings(), model_path=str(model_dir), dim=256)
    )
    assert explicit_model_keys(changed) == {"dim": 256}
    # nothing chosen: everything inferred from the folder, no prefixes for MiniLM
    plain = dataclasses.replace(Settings(), model=ModelSettings(model_path=str(model_dir)))
    embedder, _ = load_embedder_for(plain, lazy=True)
    assert embedder is not None and embedder.identity.query_prefix == ""


def test_a_sync_with_nothing_to_do_commits_nothing(small: Path, use_model: Path):
    settings = load_settings(None, root=str(small))
    with Store.open(settings.db_path) as store:
        sync_root(settings, store=store)
        sync_root(settings, store=store)  # refreshes the racily-clean stats once
        generation = store.generation()
        report = sync_root(settings, store=store)
        assert (report.parsed, report.embedded, report.unchanged) == (0, 0, 3)
        assert store.generation() == generation


def test_a_new_tokenizer_version_recomputes_every_posting_without_embedding(
    small: Path, use_model: Path
):
    index_json(small)
    database = small / ".carryd" / "index.sqlite"
    _sql(database, "DELETE FROM postings")
    _sql(database, f"UPDATE meta SET value = '{TOKENIZER_VERSION - 1}' WHERE key = 'tokenizer'")
    settings = load_settings(None, root=str(small))
    kinds = {difference.kind for difference in verify_root(settings).problems}
    assert kinds == {"tokenizer", "postings"}
    report = sync(small)
    assert (report.parsed, report.embedded, report.removed) == (3, 0, 0)
    assert verify_root(settings).ok
    assert sync(small).parsed == 0


def test_progress_reports_embedded_so_far_against_the_total(
    small: Path, use_model: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr("carryd.daemon.indexer.indexing.COMMIT_EMBEDDINGS", 25)
    calls: list[tuple[int, int]] = []
    report = sync(small, progress=lambda done, total: calls.append((done, total)))
    assert report.embedded == 60
    # whole files (20 entries each) per batch of about 25 embeddings: 40, then the last 20
    assert calls == [(0, 60), (40, 60), (60, 60)]
    calls.clear()
    sync(small, progress=lambda done, total: calls.append((done, total)))
    assert calls and set(calls) == {(0, 0)}  # nothing to embed: still told


def test_files_index_skips_for_a_reason_are_listed_by_verify_not_differences(
    small: Path, use_model: Path
):
    (small / "alpha" / "binary.md").write_bytes(b"# title\n\x00\x01\x02\x03")
    (small / "alpha" / "latin1.md").write_bytes("# café\n".encode("latin-1"))
    (small / "beta" / "nul.md").write_bytes(b"# fine start\n\nthen a NUL \x00 here\n")
    index_json(small)
    code, answer, _ = run("verify", "--root", str(small), "--json")
    assert answer is not None
    assert (code, answer["ok"], answer["problems"]) == (0, True, [])
    assert {problem["path"] for problem in answer["skipped"]} == {
        "alpha/binary.md",
        "alpha/latin1.md",
        "beta/nul.md",
    }
    code, _, _ = run("verify", "--root", str(small))
    assert code == 0
    # A file that can be indexed but is not yet still is a difference.
    (small / "alpha" / "new.md").write_text("# New\n\nNot indexed yet.\n", encoding="utf-8")
    code, answer, _ = run("verify", "--root", str(small), "--json")
    assert code == 1 and answer is not None
    assert [(p["kind"], p["path"]) for p in answer["problems"]] == [
        ("file_not_indexed", "alpha/new.md")
    ]


def test_a_finished_sync_clears_the_record_of_an_interrupted_run(small: Path, use_model: Path):
    from carryd.daemon.state import read_indexing, write_indexing

    settings = load_settings(None, root=str(small))
    write_indexing(settings, {"pid": 2**22 + 12345, "embedded": 10, "to_embed": 60})
    assert read_indexing(settings) is not None
    sync(small)  # one batch: it records no progress of its own, and still clears the old one
    assert read_indexing(settings) is None


@pytest.mark.parametrize("batch_size", [25, 10_000])
def test_a_failed_commit_is_raised_by_the_sync_not_waited_for(
    small: Path, use_model: Path, monkeypatch: pytest.MonkeyPatch, batch_size: int
):
    """Batches commit on a writer thread while the next one embeds (one batch: inline); a
    commit that fails ends the sync with its error, and batches committed before it stay."""
    from carryd.index.errors import IndexUnavailable
    from carryd.index.store import Store

    monkeypatch.setattr("carryd.daemon.indexer.indexing.COMMIT_EMBEDDINGS", batch_size)
    applied: list[int] = []
    real_apply = Store.apply

    def apply(self: Store, batch: Any) -> int:
        if applied:
            raise IndexUnavailable("disk is full (test)")
        applied.append(len(batch.upsert_entries))
        return real_apply(self, batch) if batch_size < 10_000 else _raise()

    def _raise() -> int:
        raise IndexUnavailable("disk is full (test)")

    monkeypatch.setattr(Store, "apply", apply)
    with pytest.raises(IndexUnavailable, match="disk is full"):
        sync(small)
    monkeypatch.setattr(Store, "apply", real_apply)
    with Store.open(small / ".carryd" / "index.sqlite") as store:
        assert store.counts()["entries"] == (40 if batch_size < 10_000 else 0)
