"""Fusion: decisions from absolute confidences, ranking in rank space, evidence on every hit."""

from __future__ import annotations

import math

import pytest
from carryd.index.fusion import (
    SEMANTIC_WEIGHTS,
    Arm,
    ArmCandidate,
    Neighbour,
    SemanticCalibration,
    combined_confidence,
    fuse,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.calibrations import E5, GENERIC, MINILM


def lexical(*items: tuple[str, float, float], divisor: float = 4.0) -> Arm:
    """Given (id, bm25, confidence) best first, return a lexical arm."""
    return Arm(
        "lexical",
        divisor,
        tuple(ArmCandidate(id, rank, raw, conf) for rank, (id, raw, conf) in enumerate(items, 1)),
    )


def semantic(*items: tuple[str, float, float], divisor: float = 4.0) -> Arm:
    """Given (id, cosine, confidence) best first, return a semantic arm."""
    return Arm(
        "semantic",
        divisor,
        tuple(ArmCandidate(id, rank, raw, conf) for rank, (id, raw, conf) in enumerate(items, 1)),
    )


def test_rrf_score_is_the_rank_space_sum_with_divisors() -> None:
    hits = fuse(
        [
            lexical(("a", 9.0, 0.9), ("b", 5.0, 0.6), ("c", 1.0, 0.2), divisor=8.0),
            semantic(("b", 0.7, 0.8), ("c", 0.5, 0.6), ("d", 0.3, 0.1), divisor=2.0),
        ],
        min_confidence=0.5,
    )
    by_id = {hit.id: hit for hit in hits}
    assert by_id["b"].score == pytest.approx(1 / (60 + 2 / 8) + 1 / (60 + 1 / 2))
    assert by_id["a"].score == pytest.approx(1 / (60 + 1 / 8))
    assert by_id["d"].score == pytest.approx(1 / (60 + 3 / 2))
    assert [hit.id for hit in hits] == ["b", "c", "a", "d"]
    assert all(hit.rank_mode == "rrf" for hit in hits)
    assert by_id["b"].lexical is not None and by_id["b"].lexical.rank == 2
    assert by_id["b"].semantic is not None and by_id["b"].semantic.contribution == pytest.approx(
        1 / (60 + 1 / 2)
    )
    assert by_id["b"].match_reason == "lexical+semantic"
    assert by_id["a"].match_reason == "lexical" and by_id["a"].semantic is None
    assert by_id["d"].match_reason == "semantic" and by_id["d"].lexical is None


def evidenced(entry_id: str, share: float, saturation: float, confidence: float) -> Arm:
    """Given one lexical candidate's evidence, return a lexical arm holding it."""
    return Arm(
        "lexical",
        4.0,
        (ArmCandidate(entry_id, 1, 3.0, confidence, ("term",), share, saturation),),
    )


@pytest.mark.parametrize(
    ("arms", "places", "expected"),
    [
        # No semantic evidence: the lexical arm's own probability.
        ([evidenced("x", 0.5, 0.2, 0.3)], None, 0.3),
        # A lexical candidate the semantic arm did not nominate still has a cosine: the combined
        # model reads both (far below the floor: evidence against; near it: evidence for).
        ([evidenced("x", 0.5, 0.2, 0.3)], {"x": -4.0}, combined_confidence(0.5, 0.2, -4.0)),
        ([evidenced("x", 0.5, 0.2, 0.3)], {"x": 0.4}, combined_confidence(0.5, 0.2, 0.4)),
        # Nominated by both arms: the same model, the arms' own votes play no part.
        (
            [evidenced("x", 0.5, 0.2, 0.3), semantic(("x", 0.7, 0.2))],
            {"x": 1.5},
            combined_confidence(0.5, 0.2, 1.5),
        ),
        # A nominee holding no query term: the semantic arm's own vote.
        ([semantic(("x", 0.7, 0.2))], {"x": 1.5}, 0.2),
    ],
)
def test_confidence_is_one_log_odds_model_of_both_arms_evidence(
    arms: list[Arm], places: dict[str, float] | None, expected: float
) -> None:
    (hit,) = fuse(arms, min_confidence=0.05, places=places)
    assert hit.confidence == pytest.approx(expected)
    assert hit.decision == ("inject" if expected >= 0.05 else "below_threshold")
    assert hit.place == (places or {}).get("x")


def test_a_cosine_far_below_the_floor_lowers_a_lexical_hit() -> None:
    # Not a noisy-OR: the semantic evidence can speak against a hit, not only for it.
    arm = evidenced("x", 0.6, 0.3, 0.2)
    (unrelated,) = fuse([arm], min_confidence=0.05, places={"x": -5.0})
    (related,) = fuse([arm], min_confidence=0.05, places={"x": 2.0})
    assert unrelated.confidence < arm.candidates[0].confidence < related.confidence
    assert unrelated.decision == "below_threshold" and related.decision == "inject"
    assert unrelated.lexical is not None and unrelated.lexical.share == 0.6


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(-10.0, 5.0),
    st.floats(0.001, 1.0),
)
def test_the_combined_confidence_is_a_probability_rising_with_each_kind_of_evidence(
    share: float, saturation: float, place: float, extra: float
) -> None:
    value = combined_confidence(share, saturation, place)
    assert 0.0 <= value <= 1.0
    assert combined_confidence(min(1.0, share + extra), saturation, place) >= value
    assert combined_confidence(share, min(1.0, saturation + extra), place) >= value
    assert combined_confidence(share, saturation, place + extra) >= value


def test_confidence_does_not_depend_on_the_other_candidates() -> None:
    alone = fuse([semantic(("x", 0.61, 0.9))], min_confidence=0.5)
    crowd = fuse(
        [
            semantic(*[(f"y{n:02}", 0.9, 1.0) for n in range(25)], ("x", 0.61, 0.9)),
            lexical(*[(f"z{n:02}", 20.0, 1.0) for n in range(24)]),
        ],
        min_confidence=0.5,
    )
    assert len(crowd) == 50
    assert next(hit for hit in crowd if hit.id == "x").confidence == alone[0].confidence == 0.9


def test_fewer_than_three_candidates_order_by_raw_confidence_not_rank() -> None:
    # The lexical rank 1 is a weak match; the semantic candidate is surer.
    hits = fuse(
        [lexical(("weak", 2.0, 0.3)), semantic(("sure", 0.8, 0.9))],
        min_confidence=0.5,
    )
    assert [hit.id for hit in hits] == ["sure", "weak"]
    assert [hit.score for hit in hits] == [0.9, 0.3]
    assert all(hit.rank_mode == "raw" for hit in hits)
    assert len({hit.score for hit in hits}) == 2


def test_a_single_candidate_keeps_its_own_score_not_a_flat_half() -> None:
    (hit,) = fuse([semantic(("only", 0.12, 0.0))], min_confidence=0.5)
    assert hit.score == 0.0 and hit.decision == "below_threshold"
    (hit,) = fuse([lexical(("only", 3.0, 0.93))], min_confidence=0.5)
    assert hit.score == 0.93 and hit.decision == "inject"


def test_raw_order_breaks_equal_confidence_by_cosine_then_id() -> None:
    hits = fuse([semantic(("b", 0.8, 1.0), ("a", 0.7, 1.0))], min_confidence=0.5)
    assert [hit.id for hit in hits] == ["b", "a"]
    hits = fuse([lexical(("b", 1.0, 0.6), ("a", 1.0, 0.6))], min_confidence=0.5)
    assert [hit.id for hit in hits] == ["a", "b"]


def test_no_candidates_no_hits() -> None:
    assert fuse([], min_confidence=0.5) == ()
    assert fuse([lexical(), semantic()], min_confidence=0.5) == ()


def test_limit_cuts_after_ranking() -> None:
    arms = [lexical(*[(f"e{n}", 10.0 - n, 0.9) for n in range(6)])]
    assert [hit.id for hit in fuse(arms, min_confidence=0.5, limit=2)] == ["e0", "e1"]


def test_parent_propagation_only_when_too_few_and_only_when_asked() -> None:
    arms = [lexical(("a", 5.0, 0.9))]
    neighbours = {
        "a": (Neighbour("t", "topic"), Neighbour("f", "file"), Neighbour("w", "workspace")),
    }
    assert [hit.id for hit in fuse(arms, min_confidence=0.5)] == ["a"]
    hits = fuse(arms, min_confidence=0.4, neighbours=neighbours)
    assert [(hit.id, hit.match_reason) for hit in hits] == [
        ("a", "lexical"),
        ("t", "parent_topic"),
        ("f", "parent_file"),
        ("w", "parent_workspace"),
    ]
    assert hits[1].parent_of == "a"
    assert hits[1].confidence == pytest.approx(0.45) and hits[1].decision == "inject"
    assert hits[3].decision == "below_threshold"
    many = [lexical(("a", 5.0, 0.9), ("b", 4.0, 0.9), ("c", 3.0, 0.9))]
    assert [hit.id for hit in fuse(many, min_confidence=0.5, neighbours=neighbours)] == [
        "a",
        "b",
        "c",
    ]


@pytest.mark.parametrize("calibration", [MINILM, E5, GENERIC])
def test_semantic_confidence_is_a_probability_rising_with_the_cosine(
    calibration: SemanticCalibration,
) -> None:
    cosines = [-0.3, 0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99]
    values = [calibration.confidence(cosine) for cosine in cosines]
    assert all(0.0 < value < 1.0 for value in values)
    assert all(low < high for low, high in zip(values, values[1:], strict=False))
    start = calibration.floor if calibration.ramp_from is None else calibration.ramp_from
    assert calibration.confidence(start) < calibration.confidence(calibration.ceiling)
    # A lone semantic vote at the top of the ramp is a strong hint, not a sure thing.
    assert 0.1 < calibration.confidence(calibration.ceiling) < 0.5


def test_minilm_nominates_above_the_measured_floor() -> None:
    assert MINILM.ramp_from is not None and MINILM.ramp_from < MINILM.floor < MINILM.ceiling


def test_the_ramp_starts_at_the_floor_by_default() -> None:
    default = SemanticCalibration(name="x", floor=0.4, ceiling=0.8, multilingual=True)
    explicit = SemanticCalibration(
        name="x", floor=0.4, ceiling=0.8, multilingual=True, ramp_from=0.4
    )
    assert default.confidence(0.6) == explicit.confidence(0.6)
    # Two models whose ramps sit at different cosines give the same confidence at the same
    # place on their ramp (the weights are model-free).
    squeezed = SemanticCalibration(name="e", floor=0.82, ceiling=0.86, multilingual=True)
    assert default.confidence(0.6) == pytest.approx(squeezed.confidence(0.84))
    assert default.place(0.6) == pytest.approx(squeezed.place(0.84)) == pytest.approx(0.5)


def test_a_nominees_vote_is_the_semantic_weights_read_at_its_place() -> None:
    calibration = SemanticCalibration(name="x", floor=0.4, ceiling=0.8, multilingual=True)
    intercept, slope = SEMANTIC_WEIGHTS
    expected = 1.0 / (1.0 + math.exp(-(intercept + slope * calibration.place(0.7))))
    assert calibration.confidence(0.7) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("calibration", "text", "reads"),
    [
        (MINILM, "release pitfalls", True),
        (MINILM, "发布时踩了哪些坑？", False),
        (MINILM, "如何修复 ERR_CONN_RESET？", True),  # Latin letters outnumber the Han ones
        (MINILM, "如何修复连接重置错误 ERR？", False),
        (MINILM, "", True),
        (E5, "发布时踩了哪些坑？", True),
        (GENERIC, "发布时踩了哪些坑？", True),
    ],
)
def test_an_english_only_model_does_not_read_chinese(
    calibration: SemanticCalibration, text: str, reads: bool
) -> None:
    assert calibration.reads(text) is reads


_ids = st.sampled_from([f"mem_{n}" for n in range(12)])


@st.composite
def arms(draw: st.DrawFn) -> list[Arm]:
    out = []
    for name in ("lexical", "semantic"):
        ids = draw(st.lists(_ids, unique=True, max_size=8))
        confidences = draw(st.lists(st.floats(0, 1), min_size=len(ids), max_size=len(ids)))
        divisor = draw(st.sampled_from([2.0, 4.0, 8.0]))
        out.append(
            Arm(
                name,  # type: ignore[arg-type]
                divisor,
                tuple(
                    ArmCandidate(entry_id, rank, 1.0 - rank / 10, confidence)
                    for rank, (entry_id, confidence) in enumerate(
                        zip(ids, confidences, strict=True), 1
                    )
                ),
            )
        )
    return out


@settings(max_examples=150, deadline=None)
@given(arms(), st.floats(0, 1), st.dictionaries(_ids, st.floats(-8.0, 4.0)))
def test_fusion_properties(
    given_arms: list[Arm], threshold: float, places: dict[str, float]
) -> None:
    hits = fuse(given_arms, min_confidence=threshold, places=places)
    ids = {c.id for arm in given_arms for c in arm.candidates}
    assert sorted(hit.id for hit in hits) == sorted(ids)  # every candidate, once
    # arm order moot
    assert fuse(list(reversed(given_arms)), min_confidence=threshold, places=places) == hits
    for hit in hits:
        if hit.lexical is not None and hit.id in places:
            expected = combined_confidence(
                hit.lexical.share, hit.lexical.saturation, places[hit.id]
            )
        elif hit.lexical is not None:
            expected = hit.lexical.confidence
        else:
            assert hit.semantic is not None
            expected = hit.semantic.confidence
        assert hit.confidence == pytest.approx(expected)
        assert hit.place == places.get(hit.id)
        assert hit.decision == ("inject" if hit.confidence >= threshold else "below_threshold")
    if len(hits) >= 3:
        keys = [(-hit.score, hit.id) for hit in hits]
        assert keys == sorted(keys)
