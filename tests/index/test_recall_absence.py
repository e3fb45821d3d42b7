"""The evidence of absence (`carryd.index.absence`) and how a hit's confidence reads it
(`carryd.index.fusion.absent_confidence`): pure, no store and no model."""

from __future__ import annotations

import numpy as np
from carryd.index.absence import CHANCE, absent_terms, specific_terms, unmet_names
from carryd.index.fusion import ABSENCE_WEIGHT, Arm, ArmCandidate, absent_confidence, fuse
from carryd.index.lexical import TermPostings, query_terms


def postings_of(rows_by_term: dict[str, list[int]]) -> dict[str, TermPostings]:
    return {
        term: TermPostings(
            rows=np.asarray(rows, dtype=np.int64), frequencies=np.ones(len(rows), dtype=np.float64)
        )
        for term, rows in rows_by_term.items()
    }


def test_names_identifiers_and_numbers_are_what_makes_a_question_specific() -> None:
    assert specific_terms("When did Jon go to the gym?") == ("jon",)
    assert specific_terms("Who was incident commander for INC-6102?") == ("inc-6102",)
    assert specific_terms("What port does query-cache listen on in 2026?") == (
        "query-cache",
        "2026",
    )
    assert specific_terms("How long is retention on events.raw.v4?") == ("events.raw.v4",)
    # A sentence's first word is not a name by its capital; plain words are not specific.
    assert specific_terms("Which gym does she like best? Gym days are long.") == ()
    assert specific_terms("生命数耗完即算为什么？") == ()


def test_a_name_the_scope_lacks_is_absent_and_one_it_holds_is_not() -> None:
    query = "When did Jon go to the gym?"
    terms = query_terms(query)
    # Rows 0-3 are workspace A (Jon's), rows 4-7 workspace B (Gina's); both go to the gym.
    postings = postings_of({"jon": [0, 1], "gym": [0, 4], "go": [1, 5]})
    a = np.array([True] * 4 + [False] * 4)
    assert absent_terms(query, terms, postings, a) == ()
    assert absent_terms(query, terms, postings, ~a) == ("jon",)
    # The whole root holds Jon: nothing is absent there.
    assert absent_terms(query, terms, postings, None) == ()
    # A name the whole root lacks may be a paraphrase ("Portugal" for a note on Lisbon) ...
    trip = "When does my plane to Portugal depart?"
    assert absent_terms(trip, query_terms(trip), postings_of({"plane": [0]}), a) == ()
    # ... an invented id is absent everywhere, the whole root included.
    other = "Who was incident commander for INC-6102?"
    assert absent_terms(other, query_terms(other), postings_of({"incident": [0, 4]}), None) == (
        "inc-6102",
    )


def test_a_plain_word_is_absent_only_when_it_belongs_elsewhere_not_by_chance() -> None:
    query = "what did they say about the charity gala"
    terms = query_terms(query)
    half = np.array([True] * 10 + [False] * 10)  # the scope holds half the entries
    # In 7 entries, all outside: (1/2)^7 < CHANCE, the word is the other half's.
    many = postings_of({"charity": list(range(10, 17)), "gala": [0]})
    assert 0.5**7 < CHANCE
    assert absent_terms(query, terms, many, half) == ("charity",)
    # In 2 entries outside: (1/2)^2 is chance, a rare word says nothing about the scope.
    few = postings_of({"charity": [11, 12], "gala": [0]})
    assert absent_terms(query, terms, few, half) == ()
    # Two such words, however rare, are several: the question is the other half's.
    two = postings_of({"charity": [11, 12], "gala": [13]})
    assert absent_terms(query, terms, two, half) == ("charity", "gala")
    # A Chinese name (no capitals) is absent as its characters and their bigrams together.
    chinese = "高英是哪位皇帝的皇后？"
    rows = {term: [15] for term in query_terms(chinese)} | {"皇": [0, 15], "后": [0, 15]}
    assert absent_terms(chinese, query_terms(chinese), postings_of(rows), half)[:3] == (
        "高",
        "英",
        "是",
    )
    # A plain word the whole root lacks is the question's own wording, not evidence.
    assert absent_terms(query, terms, postings_of({"gala": [0]}), half) == ()


def test_a_name_of_several_words_is_absent_when_only_another_scope_holds_them_together() -> None:
    query = "Who is the last escalation step for the Data Platform Primary schedule?"
    terms = query_terms(query)
    assert specific_terms(query) == ("data", "platform", "primary")
    a = np.array([True] * 4 + [False] * 4)  # rows 0-3: this team's notes, 4-7: another's
    # This team's notes say "data", "platform" and "primary", never in one entry; the other
    # team's schedule note holds all three.
    held = {"data": [0, 4], "platform": [1, 4], "primary": [2, 4], "escal": [3, 5], "schedul": [3]}
    assert absent_terms(query, terms, postings_of(held), a) == ("data", "platform", "primary")
    # One entry in scope holding them together is this scope's name.
    together = {**held, "data": [0, 4], "platform": [0, 4], "primary": [0, 4]}
    assert absent_terms(query, terms, postings_of(together), a) == ()
    # Words no entry holds together say nothing: a name the corpus never met may be a paraphrase.
    apart = {**held, "primary": [2, 6]}
    assert absent_terms(query, terms, postings_of(apart), a) == ()
    # A lone capitalised word is no phrase; a sentence's first word does not start one.
    assert (
        absent_terms(
            "Platform Primary schedule?",
            query_terms("Platform Primary schedule?"),
            postings_of(held),
            a,
        )
        == ()
    )


def test_names_in_any_script_with_capitals_are_names() -> None:
    assert specific_terms("What timezone is Øystein Bakke in?")[0] == "øystein"
    assert "łukasz" in specific_terms("Did Łukasz approve the rollout?")
    query = "Did Ángel approve the rollout?"
    a = np.array([True, True, False, False])
    found = absent_terms(query, query_terms(query), postings_of({"ángel": [3], "rollout": [0]}), a)
    assert found == ("ángel",)


def test_months_weekdays_and_initials_are_not_names_the_root_must_hold() -> None:
    # Capitalised, yet no person, service or place: "on Tuesdays", "the March run".
    assert specific_terms("Who has Rig A on Tuesdays?") == ("rig",)
    assert specific_terms("Why did two lanes come out low on the March run?") == ()
    assert specific_terms("Wer hat Rig C am Freitag?")[0] == "rig"
    # Initials are often written out in the notes ("objectives and key results").
    query = "What p99 target does the OKR set for the Juniper cluster?"
    terms = query_terms(query)
    assert unmet_names(query, terms, postings_of({"p99": [0], "cluster": [0]})) == ("juniper",)
    assert unmet_names(query, terms, postings_of({"juniper": [3], "cluster": [0]})) == ()


def test_plain_words_of_another_scope_say_nothing_when_the_question_holds_this_scopes_own() -> None:
    # A terse lab notebook never writes "how" or "much"; another lab's notes do. The question
    # names this lab's flowcell, in five entries all in scope: it is this scope's question.
    query = "How much does the core charge for an S4 flowcell?"
    terms = query_terms(query)
    fifth = np.array([True] * 10 + [False] * 40)  # the scope holds a fifth of the entries
    rows = {
        "how": [20, 30],
        "much": [31],
        "cor": [1, 40],
        "charg": [2],
        "flowcell": [1, 2, 3, 4, 5],
        "s4": [1],
    }
    assert 0.2**5 < CHANCE
    assert absent_terms(query, terms, postings_of(rows), fifth) == ()
    # Without a term of its own in scope the two words are another scope's.
    rows["flowcell"] = [1, 41]
    assert absent_terms(query, terms, postings_of(rows), fifth) == ("how", "much")
    # A name or id of another scope is never outweighed: it is the question's subject.
    rows.update({"flowcell": [1, 2, 3, 4, 5], "s4": [45]})
    assert absent_terms(query, terms, postings_of(rows), fifth) == ("s4",)


def test_a_name_the_root_lacks_lowers_every_hit_but_a_paraphrase_the_model_reads() -> None:
    # "What's the scratch quota on the Juniper cluster?" where the notes hold another
    # cluster's quota: a hit found by the words is lowered, as is a lukewarm nominee ...
    found = Arm("lexical", 1.0, (ArmCandidate("quota", 1, 3.0, 0.4, ("quota",), 0.6, 0.5),))
    nominee = Arm("semantic", 1.0, (ArmCandidate("lisbon", 1, 0.7, 0.2),))
    for places in ({"quota": 1.4, "lisbon": 0.5}, {"quota": 1.4, "lisbon": 2.3}):
        plain = {
            hit.id: hit.confidence
            for hit in fuse([found, nominee], min_confidence=0.03, places=places)
        }
        unmet = {
            hit.id: hit.confidence
            for hit in fuse([found, nominee], min_confidence=0.03, places=places, unmet=True)
        }
        assert unmet["quota"] == absent_confidence(plain["quota"], True) < plain["quota"]
        # ... while an entry sharing none of the question's words that the model places at or
        # above its ceiling is the paraphrase ("my plane to Portugal": the flight to Lisbon).
        kept = places["lisbon"] >= 1.0
        assert (unmet["lisbon"] == plain["lisbon"]) is kept
        assert (unmet["lisbon"] == absent_confidence(plain["lisbon"], True)) is not kept


def test_absence_lowers_every_confidence_by_the_same_log_odds_and_nothing_else() -> None:
    assert ABSENCE_WEIGHT < 0
    for confidence in (0.01, 0.2, 0.6, 0.95):
        lowered = absent_confidence(confidence, True)
        assert lowered < confidence
        shift = np.log(lowered / (1 - lowered)) - np.log(confidence / (1 - confidence))
        assert abs(shift - ABSENCE_WEIGHT) < 1e-9
        assert absent_confidence(confidence, False) == confidence
    assert absent_confidence(0.0, True) == 0.0
