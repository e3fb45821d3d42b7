"""The semantic calibration measured on the corpus at index time, end to end with two real
models (the test all-MiniLM-L6 and paraphrase-MiniLM-L3, whose cosines differ): the same
inject decisions, stored with the model identity, reused until the model or the corpus's size
changes, and the reference notes when the corpus is too small to measure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.config import Settings, parse_settings
from carryd.daemon.indexer.calibrating import (
    CORPUS_KEY,
    REFERENCE_KEY,
    calibration_in_use,
    stored_calibration,
)
from carryd.daemon.indexer.indexing import sync_root
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.layout import open_store
from carryd.daemon.recall.recalling import Recaller
from carryd.daemon.running.status import render_text, status_report
from carryd.index.calibration import StoredCalibration, unrelated_cosines
from carryd.index.embed import Embedder
from carryd.index.store import Store

from tests.testmodel import build_second_model

# A small memory root: ten files on unrelated subjects, four notes each.
FILES = {
    "MEMORY.md": "# Habits\n\n"
    "## Editor\n\nI use vim with a light colour scheme and relative line numbers.\n\n"
    "## Coffee\n\nTwo espressos before noon, none after three in the afternoon.\n\n"
    "## Running\n\nI run ten kilometres along the river every Saturday morning.\n\n"
    "## Reading\n\nCurrently reading a history of the Roman empire, one chapter a night.\n",
    "family/notes.md": "# Family\n\n"
    "## Sister\n\nMy sister Lena lives in Hamburg and works as a nurse.\n\n"
    "## Grandmother\n\nGrandmother turns ninety in June; the party is at her farm.\n\n"
    "## Kids school\n\nThe children's school starts at eight and ends at half past three.\n\n"
    "## Dog\n\nThe dog needs his heartworm pill on the first day of each month.\n",
    "health/notes.md": "# Health\n\n"
    "## Dentist\n\nThe dentist moved my appointment to the 14th at half past nine.\n\n"
    "## Allergy\n\nI am allergic to penicillin; tell every new doctor.\n\n"
    "## Knee\n\nThe physiotherapist gave me squats and lunges for the left knee.\n\n"
    "## Sleep\n\nGoing to bed before eleven helps with the morning headaches.\n",
    "shop/deploy.md": "# Webshop deploy\n\n"
    "## Staging\n\nStaging is rebuilt every Sunday night from the production snapshot.\n\n"
    "## Rollback\n\nTo roll back, redeploy the previous container tag with the release script.\n\n"
    "## Secrets\n\nAPI keys rotate automatically every thirty days through the vault.\n\n"
    "## Certificates\n\nThe TLS certificate of the storefront expires in November.\n",
    "shop/payments.md": "# Payments\n\n"
    "## Currency\n\nAmounts are integers in cents everywhere in the billing code.\n\n"
    "## Provider\n\nWe switched the card processor to Adyen because of lower fees in Europe.\n\n"
    "## Refunds\n\nRefunds above five hundred euros need a second approval from finance.\n\n"
    "## Flaky test\n\nThe invoice test fails only when the clock crosses midnight UTC.\n",
    "garden/notes.md": "# Garden\n\n"
    "## Tomatoes\n\nWater the tomatoes every evening during the July heatwave.\n\n"
    "## Hedge\n\nThe hedge is trimmed in late September after the birds have nested.\n\n"
    "## Compost\n\nTurn the compost heap every two weeks and keep it damp.\n\n"
    "## Roses\n\nThe climbing roses need feeding in April with a potash fertiliser.\n",
    "travel/notes.md": "# Travel\n\n"
    "## Lisbon\n\nFlight to Lisbon leaves at 7:40 from terminal two in May.\n\n"
    "## Passport\n\nThe passport expires next year; renew it before the Japan trip.\n\n"
    "## Hotel\n\nThe hotel in Kyoto is booked for five nights near the station.\n\n"
    "## Luggage\n\nAlways pack a spare charger and the travel adapter in the carry-on.\n",
    "house/notes.md": "# House\n\n"
    "## Boiler\n\nThe boiler service is due every October; the engineer is called Mark.\n\n"
    "## Water filter\n\nReplace the fridge water filter every six months.\n\n"
    "## Bins\n\nRecycling is collected on Tuesday mornings, general waste on Fridays.\n\n"
    "## Roof\n\nA roofer fixed the loose tiles above the bathroom in March.\n",
    "money/notes.md": "# Money\n\n"
    "## Taxes\n\nThe tax return is due at the end of July; receipts are in the blue folder.\n\n"
    "## Mortgage\n\nThe mortgage rate is fixed until 2029.\n\n"
    "## Savings\n\nA standing order moves two hundred euros to savings on payday.\n\n"
    "## Insurance\n\nCar insurance renews automatically in February.\n",
    "music/notes.md": "# Music\n\n"
    "## Cello\n\nCello lesson every Thursday at six with Mrs Novak.\n\n"
    "## Concert\n\nTickets for the symphony concert are in the email from the box office.\n\n"
    "## Playlist\n\nThe focus playlist is mostly ambient piano and film scores.\n\n"
    "## Guitar\n\nThe acoustic guitar needs new strings before the summer camp.\n",
}
# Paraphrases that share (almost) no word with their note: only the semantic arm finds them,
# so only a calibration that reads the model's cosines right lets them through the gate.
RELATED = {
    "when do I see the tooth doctor": ("health/notes.md", "Dentist"),
    "what did the physio prescribe for my leg": ("health/notes.md", "Knee"),
    "who services the heating": ("house/notes.md", "Boiler"),
    "when is granny's birthday celebration": ("family/notes.md", "Grandmother"),
    "how do we undo a bad release": ("shop/deploy.md", "Rollback"),
    "what time does my plane to Portugal depart": ("travel/notes.md", "Lisbon"),
    "when is the rubbish picked up": ("house/notes.md", "Bins"),
    "what medicine does the puppy need": ("family/notes.md", "Dog"),
}
# About nothing the root holds: nothing may pass the gate.
UNRELATED = (
    "how do I bake croissants",
    "volcano eruption in Iceland",
    "best chess opening for beginners",
    "who won the football world cup",
    "how to learn Korean grammar",
    "quantum computing qubit error correction",
)


@pytest.fixture(scope="module")
def second_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_second_model(tmp_path_factory.getbasetemp() / "second-model")


def settings_for(root: Path, model: Path) -> Settings:
    return parse_settings({"root": str(root), "model": {"model_path": str(model)}})


def loaded(settings: Settings) -> Embedder:
    embedder, why = load_embedder_for(settings)
    assert embedder is not None, why
    return embedder


def write_root(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def stores() -> Iterator[list[Store]]:
    opened: list[Store] = []
    yield opened
    for store in opened:
        store.close()


def indexed(root: Path, model: Path, stores: list[Store]) -> tuple[Settings, Store, Embedder]:
    settings = settings_for(root, model)
    store = open_store(settings)
    stores.append(store)
    embedder = loaded(settings)
    report = sync_root(settings, store=store, embedder=embedder)
    assert not report.problems and report.degraded is None
    return settings, store, embedder


def injected(recaller: Recaller, settings: Settings, query: str) -> list[tuple[str, str]]:
    """Given a query, return (path, L0 heading) of every hit that passes the carry's gate
    (`carry.memory_min_confidence`: what the carry's recalled memory injects)."""
    answer = recaller.recall(query, min_confidence=settings.carry.memory_min_confidence)
    assert answer["degraded"] is None
    return [(hit["path"], hit["l0"].split(" — ")[0]) for hit in answer["hits"]]


def decisions(recaller: Recaller, settings: Settings) -> dict[str, object]:
    """The inject decisions that matter on the fixture: for a paraphrase, the note its best
    injected hit is and every file an injected hit comes from; for an unrelated query, what
    passes the gate (nothing)."""
    made: dict[str, object] = {}
    for query in RELATED:
        hits = injected(recaller, settings, query)
        made[query] = (hits[0] if hits else None, sorted({path for path, _ in hits}))
    for query in UNRELATED:
        made[query] = injected(recaller, settings, query)
    return made


def test_two_models_each_calibrated_on_the_corpus_make_the_same_inject_decisions(
    tmp_path: Path, model_dir: Path, second_dir: Path, stores: list[Store]
) -> None:
    made = []
    calibrations = []
    for number, model in enumerate((model_dir, second_dir)):
        root = tmp_path / f"root{number}"
        write_root(root, FILES)
        settings, store, embedder = indexed(root, model, stores)
        stored = stored_calibration(store)
        assert stored is not None and stored.identity == embedder.identity.key()
        assert stored.calibration.source == "corpus" and stored.entries == 50
        assert not stored.calibration.multilingual  # measured: neither model reads Chinese
        calibrations.append(stored.calibration)
        made.append(decisions(Recaller(settings, store, embedder, None), settings))
    # Two models with their own cosine ranges, two measured calibrations ...
    assert calibrations[0] != calibrations[1]
    # ... and the same decisions: every paraphrase's note passes the gate, nothing else does.
    assert made[0] == made[1]
    expected: dict[str, object] = {query: (gold, [gold[0]]) for query, gold in RELATED.items()} | {
        query: [] for query in UNRELATED
    }
    assert made[0] == expected


def test_the_calibration_is_stored_once_and_reused_until_the_model_or_corpus_size_changes(
    tmp_path: Path, model_dir: Path, second_dir: Path, stores: list[Store]
) -> None:
    root = tmp_path / "root"
    write_root(root, FILES)
    settings, store, embedder = indexed(root, model_dir, stores)
    first = store.meta(CORPUS_KEY)
    assert first is not None
    # An edit (a new note, an edited one): the calibration is not measured again.
    write_root(
        root,
        {
            "garden/notes.md": FILES["garden/notes.md"] + "\n## Pond\n\nThe pond pump is noisy.\n",
            "MEMORY.md": FILES["MEMORY.md"].replace("ten kilometres", "twelve kilometres"),
        },
    )
    generation = store.generation()
    report = sync_root(settings, store=store, embedder=embedder)
    assert report.embedded == 2
    assert store.meta(CORPUS_KEY) == first
    assert store.generation() == generation + 1  # the edit's one commit, no calibration commit
    # Recall reads the stored calibration.
    recalled = calibration_in_use(store, embedder)
    assert recalled == StoredCalibration.from_json(first)
    # The corpus doubles: measured again, at its new size.
    write_root(
        root,
        {f"more/{relative}": text.replace("# ", "# More ", 1) for relative, text in FILES.items()},
    )
    sync_root(settings, store=store, embedder=embedder)
    doubled = stored_calibration(store)
    assert doubled is not None and doubled.entries == 101
    # Another model: re-embedded and measured again for its identity.
    second = loaded(settings_for(root, second_dir))
    sync_root(settings_for(root, second_dir), store=store, embedder=second)
    changed = stored_calibration(store)
    assert changed is not None
    assert changed.identity == second.identity.key() != embedder.identity.key()
    assert changed.calibration != doubled.calibration
    reference = StoredCalibration.from_json(store.meta(REFERENCE_KEY))
    assert reference is not None and reference.identity == second.identity.key()


def test_a_corpus_too_small_to_measure_gets_the_models_reference_calibration(
    tmp_path: Path, model_dir: Path, stores: list[Store]
) -> None:
    root = tmp_path / "tiny"
    write_root(root, {"MEMORY.md": FILES["health/notes.md"]})
    settings, store, embedder = indexed(root, model_dir, stores)
    stored = stored_calibration(store)
    assert stored is not None and stored.calibration.source == "reference"
    assert stored.identity == embedder.identity.key() and stored.entries == 5
    assert not stored.calibration.multilingual
    assert 0.0 < stored.calibration.floor < stored.calibration.ceiling < 1.0
    # The reference measurement is kept beside it, for this model identity.
    reference = StoredCalibration.from_json(store.meta(REFERENCE_KEY))
    assert reference is not None and reference.calibration == stored.calibration
    recaller = Recaller(settings, store, embedder, None)
    tooth = injected(recaller, settings, "when do I see the tooth doctor")
    assert tooth[0] == ("MEMORY.md", "Dentist")
    for query in UNRELATED:
        assert injected(recaller, settings, query) == [], query


def test_recall_measures_the_reference_itself_when_the_index_stores_no_calibration(
    tmp_path: Path, model_dir: Path, stores: list[Store]
) -> None:
    root = tmp_path / "root"
    write_root(root, FILES)
    settings, store, embedder = indexed(root, model_dir, stores)
    store.apply(store_batch_without_calibration(embedder))
    assert stored_calibration(store) is None
    in_use = calibration_in_use(store, embedder)
    assert in_use.calibration.source == "reference"
    recaller = Recaller(settings, store, embedder, None)
    answer = recaller.recall("when do I see the tooth doctor", min_confidence=0.0)
    assert answer["degraded"] is None and answer["hits"][0]["l0"].startswith("Dentist")
    assert answer["hits"][0]["arms"]["semantic"] is not None


def store_batch_without_calibration(embedder: Embedder) -> Any:
    """A batch that empties the stored calibration records (as an index from before them)."""
    from carryd.index.store import Batch

    return Batch(identity=embedder.identity.key(), meta=((CORPUS_KEY, ""), (REFERENCE_KEY, "")))


def test_status_shows_the_calibration_in_use(
    tmp_path: Path, model_dir: Path, stores: list[Store]
) -> None:
    root = tmp_path / "root"
    write_root(root, FILES)
    settings, _, _ = indexed(root, model_dir, stores)
    report = status_report(settings, now=0)
    calibration = report["calibration"]
    assert calibration["source"] == "corpus" and calibration["current_model"]
    assert calibration["pairs"] > 0 and calibration["floor"] < calibration["ceiling"]
    (line,) = [line for line in render_text(report, now=0).splitlines() if "calibration" in line]
    assert line.startswith("calibration: corpus, ") and "floor" in line and "ceiling" in line


def conversation(number: int, text: str) -> str:
    """Given a FILES note file, return it as a conversation: every note a turn under a
    speaker heading, so every L0 starts with a speaker's name (LoCoMo's shape)."""
    notes = [part.split("\n\n", 1)[1].strip() for part in text.split("## ")[1:]]
    turns = [
        f"### {('Caroline', 'Melanie')[turn % 2]} · D{number}:{turn + 1}\n\n{note}\n"
        for turn, note in enumerate(notes)
    ]
    return "\n".join(turns)


def test_the_ramp_is_read_on_query_shaped_text_not_on_the_headings_l0s_share(
    tmp_path: Path, model_dir: Path, stores: list[Store]
) -> None:
    """Every L0 of a conversation starts with a speaker's name, a question does not: the ramp
    a question's cosine is read on comes from the L0s' openings without their headings, so it
    lies well below the cosines between the L0s themselves."""
    root = tmp_path / "talk"
    write_root(
        root,
        {f"s{number}.md": conversation(number, text) for number, text in enumerate(FILES.values())},
    )
    _, store, embedder = indexed(root, model_dir, stores)
    stored = stored_calibration(store)
    assert stored is not None and stored.calibration.source == "corpus"
    ids, matrix = store.vectors(embedder.identity.key())
    rows = store.entries_by_id(list(ids))
    assert all(rows[entry_id].l0.startswith(("Caroline — ", "Melanie — ")) for entry_id in ids)
    pairs = unrelated_cosines(matrix, [rows[entry_id].path for entry_id in ids])
    assert pairs is not None
    assert stored.calibration.ramp_from < pairs.ramp_from - 0.05
    assert stored.calibration.ceiling < pairs.ceiling
