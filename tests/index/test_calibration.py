"""Semantic calibration measured on the corpus: the same inject decisions whatever the model's
cosine range, deterministic, and a prior when the corpus is too small to measure."""

from __future__ import annotations

import numpy as np
import pytest
from carryd.daemon.config import INJECT_GATE
from carryd.index.calibration import calibrate, unrelated_cosines
from carryd.index.fusion import MINILM, SemanticCalibration


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
