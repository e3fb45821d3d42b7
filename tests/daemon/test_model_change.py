"""A real model change re-embeds into a new vector set and swaps it in when complete.

Before: pointing carryd at another model dropped every vector of the old one in the first
batch of the next sync (after copying the index aside as `index.sqlite.old-model-*`, which
nothing read again), so recall was lexical for every entry the new model had not reached yet.
Now the old set keeps answering recall (queries embed with the old model, loaded from where the
index recorded it) until the new set has a vector for every entry; then one transaction swaps
it in. An interrupted re-embedding resumes without embedding again what it committed, and a
new model that cannot load leaves the old set serving. Real models on both sides: the two
offline test models (`tests/testmodel.py`), no mocks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from carryd.daemon.config import Settings, parse_settings
from carryd.daemon.indexer import indexing
from carryd.daemon.indexer.indexing import sync_root
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.indexer.verifying import verify_root
from carryd.daemon.recall.access import LocalRecall
from carryd.daemon.running.status import render_text, status_report
from carryd.index.store import Store

from tests.testmodel import build_second_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"
QUERY = "payment provider webhook"  # found by meaning too (both models)


@pytest.fixture(scope="module")
def second_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_second_model(tmp_path_factory.getbasetemp() / "second-model")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> tuple[Path, int]:
    """The README's example root indexed with the first test model (once; copied per test),
    and its entry count."""
    root = tmp_path_factory.mktemp("built") / "root"
    shutil.copytree(EXAMPLES, root)
    report = sync_root(settings_for(root, model_dir))
    assert report.embedded == report.entries > 20 and report.degraded is None
    return root, report.entries


@pytest.fixture(autouse=True)
def small_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    # A commit every few embeddings (whole files each), so a small root re-embeds in several
    # transactions and a stop after the first leaves the new set part done.
    monkeypatch.setattr(indexing, "COMMIT_EMBEDDINGS", 4)


@pytest.fixture
def root(built: tuple[Path, int], tmp_path: Path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(built[0], copy)
    return copy


@pytest.fixture
def total(built: tuple[Path, int]) -> int:
    return built[1]


def settings_for(root: Path, model: Path) -> Settings:
    return parse_settings({"root": str(root), "model": {"model_path": str(model)}})


def identity_key(settings: Settings) -> str:
    embedder, reason = load_embedder_for(settings, lazy=True)
    assert embedder is not None, reason
    return embedder.identity.key()


class Stop(Exception):
    """What the test's progress callback raises: the sync stops as a Ctrl-C would stop it."""


def interrupted_sync(settings: Settings) -> None:
    """Sync with `settings`, stopped right after its first batch of embeddings committed."""

    def progress(embedded: int, total: int) -> None:
        if embedded:
            raise Stop(f"{embedded} of {total}")

    with pytest.raises(Stop):
        sync_root(settings, progress=progress)


def semantic_hits(answer_hits: tuple) -> list[tuple[str, float]]:
    return [(hit.id, round(hit.semantic.raw, 5)) for hit in answer_hits if hit.semantic]


def answer(recall: LocalRecall):
    return recall.answer(QUERY, min_confidence=0, limit=5)


def served_model(recall: LocalRecall) -> str:
    _, _, embedder = recall.recaller().warm.served()
    assert embedder is not None
    return embedder.identity.key()


def test_recall_answers_from_the_old_set_until_the_new_one_is_complete_then_swaps(
    root: Path, total: int, model_dir: Path, second_model: Path
):
    old, new = settings_for(root, model_dir), settings_for(root, second_model)
    old_key, new_key = identity_key(old), identity_key(new)
    assert old_key != new_key
    before = LocalRecall(old)
    expected = answer(before)
    assert semantic_hits(expected.hits), expected  # the query is found by meaning
    before.close()

    interrupted_sync(new)
    with Store.open(old.db_path) as store:
        assert store.next_identity() == new_key
        done = store.vector_count(new_key)
        assert 0 < done < total
        assert store.vector_identities() == {old_key: total}  # the old set is whole

    # Recall configured for the new model answers from the old set, with the old model: the
    # same answer as before the change (one recaller kept open across the swap, as the
    # daemon's is).
    during = LocalRecall(new)
    meanwhile = answer(during)
    assert meanwhile.degraded is None
    assert semantic_hits(meanwhile.hits) == semantic_hits(expected.hits)
    assert served_model(during) == old_key

    report = status_report(new)
    progress = report["re_embedding"]
    assert progress["done"] == done and progress["total"] == total
    assert "paraphrase-MiniLM-L3-v2" in progress["model"]
    text = render_text(report, now=0)
    assert f"re-embedding for model {progress['model']}: {done}/{total}" in text
    assert any("finishes the re-embedding" in step for step in report["next"])

    # `verify` checks the old set (the one serving) and names the re-embedding's progress.
    verified = verify_root(new)
    assert verified.ok, verified.problems
    assert any(f"{done}/{total}" in line for line in verified.notes), verified.notes

    resumed = sync_root(new)
    assert resumed.embedded == total - done  # nothing done is embedded again
    assert any("complete" in note for note in resumed.notes), resumed.notes
    with Store.open(old.db_path) as store:
        assert store.next_identity() == ""
        assert store.vector_identities() == {new_key: total}
        assert store.missing_vectors(new_key) == []
    # The recaller kept open now searches the new set with the new model, as a fresh one does.
    after = answer(during)
    assert served_model(during) == new_key
    snapshot, _, _ = during.recaller().warm.served()
    assert snapshot.matrix is not None and snapshot.matrix.shape[0] == total
    fresh = LocalRecall(new)
    assert after == answer(fresh) and after.degraded is None
    fresh.close()
    during.close()
    assert status_report(new)["re_embedding"] is None
    assert sync_root(new).embedded == 0


def test_a_new_model_that_cannot_load_leaves_the_old_set_serving(
    root: Path, total: int, model_dir: Path, second_model: Path, tmp_path: Path
):
    old, new = settings_for(root, model_dir), settings_for(root, second_model)
    broken_folder = tmp_path / "no-model"
    broken_folder.mkdir()
    broken = settings_for(root, broken_folder)
    old_key, new_key = identity_key(old), identity_key(new)
    expected = answer(LocalRecall(old))

    # A configured model that cannot load: both sets stay as they are, recall is unchanged.
    report = sync_root(broken)
    assert report.degraded is not None and report.embedded == 0
    with Store.open(old.db_path) as store:
        assert store.vector_identities() == {old_key: total} and store.next_identity() == ""
    answered = answer(LocalRecall(broken))
    assert answered.degraded is None
    assert semantic_hits(answered.hits) == semantic_hits(expected.hits)

    # The same mid-way through a re-embedding: the new set keeps what it has, the old serves.
    interrupted_sync(new)
    with Store.open(old.db_path) as store:
        done = store.vector_count(new_key)
    report = sync_root(broken)
    assert report.degraded is not None and report.embedded == 0
    with Store.open(old.db_path) as store:
        assert store.vector_identities() == {old_key: total}
        assert store.next_identity() == new_key and store.vector_count(new_key) == done
    assert semantic_hits(answer(LocalRecall(broken)).hits) == semantic_hits(expected.hits)
    assert sync_root(new).embedded == total - done


def test_changing_back_mid_way_drops_the_unfinished_set(
    root: Path, total: int, model_dir: Path, second_model: Path
):
    old, new = settings_for(root, model_dir), settings_for(root, second_model)
    old_key = identity_key(old)
    interrupted_sync(new)
    report = sync_root(old)
    assert report.embedded == 0  # the old set was never touched
    with Store.open(old.db_path) as store:
        assert store.next_identity() == ""
        assert store.vector_identities() == {old_key: total}
        assert store.counts()["vectors"] == total
    assert status_report(old)["re_embedding"] is None


def test_an_edit_during_the_re_embedding_is_embedded_for_the_new_model(
    root: Path, total: int, model_dir: Path, second_model: Path
):
    old, new = settings_for(root, model_dir), settings_for(root, second_model)
    new_key = identity_key(new)
    interrupted_sync(new)
    edited = root / "webshop" / "notes.md"
    edited.write_text(edited.read_text("utf-8") + "\n## Added later\n\nWritten mid-way.\n", "utf-8")
    (root / "tooling" / "PLAN.md").unlink()
    sync_root(new)
    with Store.open(old.db_path) as store:
        entries = store.counts()["entries"]
        assert entries < total  # the added section is in, the deleted plan's entries are out
        assert store.next_identity() == ""
        assert store.vector_identities() == {new_key: entries}
        assert store.missing_vectors(new_key) == []


def test_with_the_old_model_gone_the_new_set_answers_for_what_it_has(
    root: Path, total: int, model_dir: Path, second_model: Path, tmp_path: Path
):
    """The old set can only be searched with the old model's query vectors (another model's
    are in another space, whatever their dimension): when its folder is gone, recall searches
    the part of the new set that is done, and lexically the rest, until the swap."""
    moved = tmp_path / "old-model"
    shutil.copytree(model_dir, moved)
    old, new = settings_for(root, moved), settings_for(root, second_model)
    index = old.db_path
    shutil.rmtree(root / ".carryd")
    assert sync_root(old).embedded == total
    interrupted_sync(new)
    with Store.open(index) as store:
        done = store.vector_count(identity_key(new))
    shutil.rmtree(moved)
    during = LocalRecall(new)
    answered = answer(during)
    assert answered.degraded is None
    assert served_model(during) == identity_key(new)
    snapshot, _, _ = during.recaller().warm.served()
    assert snapshot.matrix is not None and snapshot.matrix.shape[0] == done
    during.close()
    assert f"{done}/{total}" in render_text(status_report(new), now=0)
