"""Semantic calibration measured on the corpus: the same inject decisions whatever the model's
cosine range, deterministic, and a prior when the corpus is too small to measure."""

from __future__ import annotations

import numpy as np
import pytest
from carryd.daemon.config import INJECT_GATE
from carryd.index.calibration import (
    MEASURE_VERSION,
    QUERY_WORDS,
    StoredCalibration,
    calibrate,
    measure_corpus,
    needs_measuring,
    pseudo_query,
    query_ramp,
    reads_chinese,
    reference_calibration,
    sample_ids,
    unrelated_cosines,
)
from carryd.index.calibration_reference import REFERENCE_VERSION, TRANSLATIONS, UNRELATED
from carryd.index.fusion import SemanticCalibration
from carryd.index.l0 import HEADING_SEPARATOR, l0_from_title

from tests.calibrations import MINILM


def corpus(seed: int = 7, files: int = 40, per_file: int = 5, dim: int = 64) -> np.ndarray:
    """Given a seed, return unit 'L0 vectors': each file a topic, its entries near the topic."""
    generator = np.random.default_rng(seed)
    topics = generator.normal(size=(files, dim))
    rows = np.repeat(topics, per_file, axis=0) + 0.9 * generator.normal(
        size=(files * per_file, dim)
    )
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def squeezed(vectors: np.ndarray, share: float) -> np.ndarray:
    """Given unit vectors, return another 'model' of them whose every cosine is
    share·cosine + (1 - share): the same order, an E5-like squeezed range near 1."""
    constant = np.zeros((len(vectors), 1)) + 1.0
    return np.hstack([np.sqrt(share) * vectors, np.sqrt(1 - share) * constant])


GROUPS = [f"file_{n // 5:02}.md" for n in range(200)]


def test_two_models_with_different_cosine_ranges_make_the_same_inject_decisions() -> None:
    wide = corpus()
    narrow = squeezed(wide, 0.15)  # unrelated pairs at ~0.85, like E5
    generator = np.random.default_rng(1)
    # Queries: some paraphrase an entry (near its vector), some are about nothing in the corpus.
    near = wide[:30] + 0.35 * generator.normal(size=(30, wide.shape[1])) / np.sqrt(wide.shape[1])
    unrelated = generator.normal(size=(30, wide.shape[1]))
    queries = np.vstack([near, unrelated])
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    decisions = []
    for vectors, query_vectors in ((wide, queries), (narrow, squeezed(queries, 0.15))):
        calibration = calibrate("m", vectors, GROUPS, multilingual=True)
        assert calibration is not None and calibration.source == "corpus"
        cosines = query_vectors @ vectors.T
        decisions.append(
            [
                [calibration.confidence(float(c)) >= INJECT_GATE for c in row]
                + [float(c) > calibration.floor for c in row]
                for row in cosines
            ]
        )
    assert decisions[0] == decisions[1]
    flat = [value for row in decisions[0] for value in row]
    assert any(flat) and not all(flat)  # the fixture exercises both decisions
    # The paraphrases inject their own entry; the unrelated queries inject nothing. (The semantic
    # arm alone injects what it nominates, above the floor, when its probability passes the
    # default gate.)
    calibration = calibrate("m", wide, GROUPS, multilingual=True)
    assert calibration is not None

    def injects(cosine: float) -> bool:
        assert calibration is not None
        return cosine > calibration.floor and calibration.confidence(cosine) >= INJECT_GATE

    own = [injects(float(near_query @ wide[n])) for n, near_query in enumerate(queries[:30])]
    assert sum(own) >= 25
    unrelated_pairs = (queries[30:] @ wide.T).ravel()
    injected = [injects(float(c)) for c in unrelated_pairs]
    assert sum(injected) / len(injected) < 0.1  # the tail of a random direction, not the 25/30


def test_the_unrelated_distribution_follows_the_range_of_the_model() -> None:
    wide = unrelated_cosines(corpus(), GROUPS)
    narrow = unrelated_cosines(squeezed(corpus(), 0.15), GROUPS)
    assert wide is not None and narrow is not None
    assert narrow.mean == pytest.approx(0.15 * wide.mean + 0.85, abs=1e-9)
    assert narrow.spread == pytest.approx(0.15 * wide.spread, abs=1e-9)
    for level in ("ramp_from", "floor", "ceiling"):
        assert getattr(narrow, level) == pytest.approx(0.15 * getattr(wide, level) + 0.85)
    assert wide.ramp_from < wide.floor < wide.ceiling


def test_same_vectors_same_calibration() -> None:
    assert calibrate("m", corpus(), GROUPS, multilingual=False) == calibrate(
        "m", corpus(), GROUPS, multilingual=False
    )


def test_only_pairs_from_different_files_count() -> None:
    # Two files whose entries are identical within a file: unrelated pairs are across files.
    vectors = np.array([[1.0, 0.0]] * 20 + [[0.0, 1.0]] * 20)
    groups = ["a.md"] * 20 + ["b.md"] * 20
    measured = unrelated_cosines(vectors, groups)
    assert measured is not None
    assert measured.mean == pytest.approx(0.0) and measured.ceiling == pytest.approx(0.0)


def test_too_small_a_corpus_keeps_the_prior() -> None:
    vectors = corpus(files=2, per_file=3)
    groups = ["a.md"] * 3 + ["b.md"] * 3
    assert calibrate("m", vectors, groups, multilingual=False, fallback=MINILM) is MINILM
    assert calibrate("m", vectors[:1], groups[:1], multilingual=False) is None


def test_unreadable_l0s_are_left_out() -> None:
    vectors = corpus()
    readable = [n < 100 for n in range(200)]
    part = unrelated_cosines(vectors, GROUPS, readable=readable)
    same = unrelated_cosines(vectors[:100], GROUPS[:100])
    assert part == same
    assert unrelated_cosines(vectors, GROUPS, readable=[False] * 200) is None


def test_a_calibration_is_a_semantic_calibration() -> None:
    calibration = calibrate("m", corpus(), GROUPS, multilingual=False)
    assert isinstance(calibration, SemanticCalibration)
    assert not calibration.reads("发布时踩了哪些坑？")


def stored(
    identity: str = "model-a",
    entries: int = 100,
    version: int = REFERENCE_VERSION,
    method: int = MEASURE_VERSION,
) -> StoredCalibration:
    measured = measure_corpus("m", corpus(), GROUPS, multilingual=False)
    assert measured is not None
    record = StoredCalibration.of(identity, measured[0], measured[1], entries)
    return StoredCalibration(
        identity=record.identity,
        calibration=record.calibration,
        entries=record.entries,
        pairs=record.pairs,
        mean=record.mean,
        spread=record.spread,
        reference_version=version,
        method=method,
    )


@pytest.mark.parametrize(
    ("record", "identity", "entries", "again"),
    [
        (None, "model-a", 10, True),  # never measured
        (stored(), "model-b", 100, True),  # another model
        (stored(version=REFERENCE_VERSION - 1), "model-a", 100, True),  # other reference notes
        (stored(method=MEASURE_VERSION - 1), "model-a", 100, True),  # measured the older way
        (stored(), "model-a", 101, False),  # an edit
        (stored(), "model-a", 199, False),
        (stored(), "model-a", 200, True),  # doubled
        (stored(), "model-a", 51, False),
        (stored(), "model-a", 50, True),  # halved
        (stored(entries=0), "model-a", 0, False),  # still nothing to measure
        (stored(entries=0), "model-a", 1, True),
    ],
)
def test_measured_again_only_on_a_model_change_or_a_corpus_that_doubled_or_halved(
    record: StoredCalibration | None, identity: str, entries: int, again: bool
) -> None:
    assert needs_measuring(record, identity, entries) is again


def test_a_stored_calibration_reads_back_equal() -> None:
    record = stored()
    assert StoredCalibration.from_json(record.to_json()) == record
    assert record.calibration.source == "corpus"
    assert record.summary().startswith(f"corpus, {record.pairs} unrelated pairs from 100 entries")


@pytest.mark.parametrize(
    "text", [None, "", "not json", "{}", '{"source": "prior"}', '{"source": "corpus"}']
)
def test_an_unreadable_record_reads_as_none_and_is_measured_again(text: str | None) -> None:
    assert StoredCalibration.from_json(text) is None


def test_the_sample_is_seeded_and_independent_of_order() -> None:
    ids = [f"id{n:05}" for n in range(10_000)]
    sample = sample_ids(ids, size=500)
    assert len(sample) == 500 == len(set(sample)) and set(sample) <= set(ids)
    assert sample_ids(reversed(ids), size=500) == sample
    assert sample_ids(ids[:300], size=500) == ids[:300]


def translations(reads: bool, dim: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Given whether the 'model' reads Chinese, return English and Chinese note vectors: a
    reader puts a translation next to its note, a non-reader puts Chinese anywhere."""
    generator = np.random.default_rng(3)
    english = generator.normal(size=(12, dim))
    chinese = (
        english + 0.3 * generator.normal(size=(12, dim))
        if reads
        else (generator.normal(size=(12, dim)))
    )
    english /= np.linalg.norm(english, axis=1, keepdims=True)
    chinese /= np.linalg.norm(chinese, axis=1, keepdims=True)
    return english, chinese


def test_reading_chinese_is_measured_on_translations() -> None:
    assert reads_chinese(*translations(True), floor=0.5)
    assert not reads_chinese(*translations(False), floor=0.5)
    # Finding translations by chance-level shared features is not reading: the cosines must
    # also clear what the arm would nominate.
    assert not reads_chinese(*translations(True), floor=0.99)


def test_the_reference_notes_are_many_unrelated_subjects_in_several_languages() -> None:
    assert len(set(UNRELATED)) == len(UNRELATED)
    latin = [text for text in UNRELATED if not any("\u4e00" <= char <= "\u9fff" for char in text)]
    # An English-only model still has enough notes to measure on.
    assert len(latin) * (len(latin) - 1) // 2 >= 1000
    assert len(TRANSLATIONS) >= 12
    assert not set(UNRELATED) & {text for pair in TRANSLATIONS for text in pair}


def test_a_reference_calibration_from_vectors() -> None:
    vectors = corpus(files=len(UNRELATED), per_file=1)
    measured = reference_calibration("m", vectors, UNRELATED, *translations(False))
    assert measured is not None
    calibration, cosines = measured
    assert calibration.source == "reference" and not calibration.multilingual
    assert cosines.pairs > 0 and calibration.floor < calibration.ceiling
    reader = reference_calibration("m", vectors, UNRELATED, *translations(True))
    assert reader is not None and reader[0].multilingual


def test_no_calibration_constant_in_the_code() -> None:
    """Calibrations come from measurements only: no module of index/ or daemon/ holds a
    `SemanticCalibration` made at import (a per-model prior), and no lookup by model name."""
    import ast
    from pathlib import Path

    import carryd.index.fusion as fusion

    assert not hasattr(fusion, "calibration_for")
    repo = Path(__file__).resolve().parents[2]
    for path in sorted([*(repo / "index").glob("*.py"), *(repo / "daemon").glob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                assert value.func.id != "SemanticCalibration", f"{path.name}:{node.lineno}"


def test_a_pseudo_query_is_the_opening_of_an_l0_without_its_heading() -> None:
    body = "I went to a LGBTQ support group yesterday and it was so powerful, really moving."
    l0, source = l0_from_title("Caroline · D1:3", body)
    assert source == "heading" and l0.startswith("Caroline" + HEADING_SEPARATOR)
    words = body.split()[:QUERY_WORDS]
    assert pseudo_query(l0, source) == " ".join(words)
    # An L0 without a heading keeps its opening words, whatever dash its text holds.
    assert pseudo_query("npm publish — needs OTP.", "firstSentence") == "npm publish — needs OTP."
    assert pseudo_query("Short note…", "truncate") == "Short note"


def scaffolded(vectors: np.ndarray, share: float) -> np.ndarray:
    """Given unit vectors, return them with a component every row shares (the heading
    scaffolding a corpus's L0s have in common), unit again."""
    shared = np.zeros((len(vectors), 1)) + 1.0
    rows = np.hstack([np.sqrt(1 - share) * vectors, np.sqrt(share) * shared])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_ramp_is_read_on_pseudo_queries_and_the_floor_on_l0_pairs() -> None:
    """L0s sharing scaffolding sit closer to each other than a query sits to them: the ramp a
    query's cosine is read on comes from (pseudo-query, L0) pairs of different files, the
    nomination floor from the L0 pairs."""
    plain = corpus()
    l0s = scaffolded(plain, 0.3)
    queries = np.hstack([plain, np.zeros((len(plain), 1))])  # the same texts, no scaffolding
    pairs = unrelated_cosines(l0s, GROUPS)
    ramp = query_ramp(queries, GROUPS, l0s, GROUPS)
    assert pairs is not None and ramp is not None
    measured = measure_corpus(
        "m", l0s, GROUPS, multilingual=False, queries=queries, query_groups=GROUPS
    )
    assert measured is not None
    calibration, record = measured
    assert record == pairs and calibration.floor == pairs.floor
    assert (calibration.ramp_from, calibration.ceiling) == (ramp.ramp_from, ramp.ceiling)
    assert calibration.ramp_from < pairs.ramp_from - 0.1  # the scaffolding no longer counts
    # Without pseudo-queries the L0 pairs give the ramp too.
    alone = calibrate("m", l0s, GROUPS, multilingual=False)
    assert alone is not None and (alone.ramp_from, alone.ceiling) == (
        pairs.ramp_from,
        pairs.ceiling,
    )
    # A pseudo-query is never paired with an L0 of its own file, and too few pairs tell nothing.
    assert query_ramp(queries[:5], GROUPS[:5], l0s[:5], GROUPS[:5]) is None


def test_a_record_without_its_method_is_of_the_older_method() -> None:
    record = stored()
    assert StoredCalibration.from_json(record.to_json()) == record
    text = record.to_json().replace(f', "method": {MEASURE_VERSION}', "")
    older = StoredCalibration.from_json(text)
    assert older is not None and older.method == 1
    assert needs_measuring(older, "model-a", 100)
