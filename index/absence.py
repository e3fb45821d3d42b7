"""Given a question, its terms' postings and a scope, return what makes the question specific
that the scope does not hold: the evidence of absence (pure).

A question asked in the wrong workspace shares its topic words with the workspace ("When did
Jon go to the gym?" where someone else goes to the gym) and lacks what makes it specific: the
person, the service, the id, the date. The lexical share (`carryd.index.lexical`) reads the
missing part as one term among several, weighted by its corpus-wide IDF, and a speaker's name
that heads every second turn of *another* conversation carries almost none (in LoCoMo's two
development conversations "Caroline" is in 339 of 826 entries). So what the scope lacks is
read apart, per question and scope, from two kinds of evidence:

- **by form** (`specific_terms`): an identifier (a word with a digit, an underscore, a
  camelCase hump or a connector between letters: ``INC-6102``, ``pg-sessions``,
  ``events.raw.v4``) or a number in the question that no entry in scope holds (it may be
  absent from the whole root: an invented id; nothing paraphrases an id), or a name (a word
  that does not open a sentence and starts with a capital of any script: "Jon", "Øystein",
  "Łukasz"; not a month or weekday, `CALENDAR`) or initials ("SLA") that the corpus holds and
  the scope does not; or a name of several words ("the Data Platform Primary schedule") whose
  words entries elsewhere hold together and no entry in scope does, though each word alone
  may be in scope (words no entry holds together say nothing);
- **by distribution**: a term of the question that the corpus holds but the scope does not,
  where the scope would hold it by chance unless the term belongs elsewhere: with the scope
  holding a share ``f`` of the corpus's entries and the term ``d`` entries, the chance that
  none of them falls in scope is ``(1 - f)^d``; below `CHANCE` the absence is the term's
  own (a name heading another conversation's turns, a topic word of another team), not
  the luck of a rare word; or **several** (`SEVERAL`) terms of the question that the corpus
  holds and the scope lacks, however rare: a name in a language without capitals (a Chinese
  name is absent as its characters and their bigrams together), a service and its host. One
  such word alone is the question's own wording more often than not (on LoCoMo 5% of the real
  questions hold one, "Which cities has Jon visited?" where only the other conversation says
  "city"; 0.4% hold two). These plain words say nothing when the question also holds a term
  that belongs to the scope, the same chance read the other way (all ``d`` of its entries in
  scope, ``f^d`` below `CHANCE`): a terse lab notebook never writes "how much" where another
  lab's prose does, and "How much does the core charge for an S4 flowcell?" names this lab's
  flowcell. A name or id of another scope is never outweighed so: it is the question's subject.
  Measured on the user's corpus: no list of names, no per-set number.

A name the whole root lacks (`unmet_names`) is not a term the scope lacks: it may be a
paraphrase ("my plane to Portugal" for a note on the flight to Lisbon), or a person or thing
the memory never met ("the scratch quota on the Juniper cluster" where the notes give another
cluster's). Words cannot tell the two apart; the meaning can: recall lowers every hit of such a
question by the same weight except an entry that holds none of its words and that the model
places at or above the ceiling of its ramp (`carryd.index.fusion`). Initials ("OKR") are left
out: notes often write them out.

Terms the whole root lacks that are plain words ("educaton", "likely") are not evidence of
absence: a question is written in its own words, and the lexical share already keeps their
IDF in its denominator.

What recall does with it (`carryd.index.fusion`, `ABSENCE_WEIGHT`): every hit of the answer, in
both arms, loses the same log-odds when the scope lacks any of these terms; the carry reads
the same confidence, so its recalled-memory selection reads the same gate.

Whole root as the scope (no workspace): only the form evidence can speak (nothing is
"elsewhere").

On the development sets and the independent development roots, the figures are in
`bench/bench_recall.py`'s summary (both test models, gate 0.03, held-out halves): on the fitting
halves the evidence speaks for 6 of 648 real questions asked where their answer is and for 628
of 648 near misses (`ABSENCE_WEIGHT` is the log of that ratio).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from carryd.index.tokenize import terms

if TYPE_CHECKING:
    import numpy as np
    from carryd.index.lexical import TermPostings

__all__ = ["CALENDAR", "CHANCE", "SEVERAL", "absent_terms", "specific_terms", "unmet_names"]

# The chance below which a term's absence from the scope is the term's, not luck's.
CHANCE = 0.01
# How many terms the corpus holds and the scope lacks make the question another scope's.
SEVERAL = 2

# What makes a word specific by its form: an identifier or number, a name, or initials (a word
# all in capitals: "OKR", "SLA", which notes often write out).
Form = Literal["identifier", "name", "initials"]
# Month and weekday names, which English and German capitalise though they name no person,
# service or place (language-specific words kept as data; other languages write them small).
CALENDAR = frozenset(
    "january february march april may june july august september october november december"
    " monday tuesday wednesday thursday friday saturday sunday"
    " januar februar märz juni juli oktober dezember"
    " montag dienstag mittwoch donnerstag freitag samstag sonntag".split()
    + [f"{day}s" for day in "monday tuesday wednesday thursday friday saturday sunday".split()]
)

# A word, for the form rules: a run without spaces, quotes, brackets or CJK (Chinese has no
# capitals and no spaces: its Latin and digit runs are words, its characters are not).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[^\s\"'“”‘’«»()\[\]{{}}<>,;!?，。？！、；：（）·{_CJK}]+")
_SENTENCE_END = (".", "?", "!", ":", "。", "？", "！")
_CONNECTED = re.compile(r"[^\W_][_./:\-\\][^\W_]|_")
_HUMP = re.compile(r"[a-z][A-Z]")


def specific_terms(query: str) -> tuple[str, ...]:
    """Given a question, return the terms of its names, identifiers and numbers (by form,
    each word's whole term as the tokenizer makes it), in question order."""
    return tuple(term for term, _ in _forms(query))


def _forms(query: str) -> tuple[tuple[str, Form], ...]:
    """(term, form) of each name, initials, identifier and number of a question."""
    return tuple(dict.fromkeys((term, form) for term, form, _ in _words(query)))


def _words(query: str) -> list[tuple[str, Form, bool]]:
    """(term, form, continues the name before it) of each name, initials, identifier and
    number of a question, in order: a name continues the one before when only spaces part
    them ("Data Platform Primary")."""
    found: list[tuple[str, Form, bool]] = []
    end = -1  # where the last name ended (-1: none, or something came between)
    for match in _WORD.finditer(query):
        word = match.group().strip(".:'\"-")
        if not word or not any(character.isalnum() for character in word):
            end = -1
            continue
        before = query[: match.start()].rstrip()
        opens = not before or before.endswith(_SENTENCE_END)
        form: Form | None = None
        if (
            any(character.isdigit() for character in word)
            or _CONNECTED.search(word) is not None
            or _HUMP.search(word) is not None
        ):
            form = "identifier"
        # Any script's capital: "Øystein", "Łukasz" and "Ángel" are names as "Jon" is; a
        # month or a weekday is not, though English and German write it with one.
        elif word[0].isupper() and not opens and word.casefold() not in CALENDAR:
            form = "initials" if len(word) > 1 and word.isupper() else "name"
        made = terms(word) if form is not None else ()
        if form is not None and made:
            continues = form != "identifier" and end >= 0 and not query[end : match.start()].strip()
            found.append((made[0], form, continues))
        closed = match.group().endswith(_SENTENCE_END) or form in (None, "identifier")
        end = -1 if closed or not made else match.end()
    return found


def _phrases(query: str) -> tuple[tuple[str, ...], ...]:
    """Given a question, return its names of two or more words ("Data Platform Primary",
    "Lunar New Year"), each as its distinct terms."""
    runs: list[list[str]] = []
    for term, form, continues in _words(query):
        if continues and runs:
            runs[-1].append(term)
        elif form != "identifier":
            runs.append([term])
        else:
            runs.append([])
    return tuple(phrase for run in runs if len(phrase := tuple(dict.fromkeys(run))) >= 2)


def absent_terms(
    query: str,
    query_terms: Sequence[str],
    postings: Mapping[str, TermPostings],
    scope_mask: np.ndarray | None,
) -> tuple[str, ...]:
    """Given a question, its distinct terms, the postings of those the index holds and the
    scope's row mask over the snapshot's entries (None: the whole root), return the terms
    that make the question specific and that no entry in scope holds (see the module
    docstring), in question order."""
    import numpy as np

    forms = dict(reversed(_forms(query)))  # a term's first form wins
    specific = {term for term in forms if term in set(query_terms)}
    share = 1.0
    if scope_mask is not None and scope_mask.size:
        share = float(np.count_nonzero(scope_mask)) / scope_mask.size
    out: list[str] = []  # what says by itself that the question is another scope's
    weak: list[str] = []  # plain words that belong elsewhere
    elsewhere: list[str] = []  # terms the corpus holds and the scope lacks
    present = False  # the question holds a term that belongs to the scope
    ordered = tuple(dict.fromkeys([*query_terms, *specific]))
    for term in ordered:
        posting = postings.get(term)
        rows = None if posting is None else posting.rows
        held = 0 if rows is None else int(rows.size)
        if rows is not None and held and (scope_mask is None or bool(scope_mask[rows].any())):
            if scope_mask is not None and bool(scope_mask[rows].all()) and share**held < CHANCE:
                present = True
            continue  # the scope holds it
        if held:
            elsewhere.append(term)
        if term in specific and (held or forms[term] == "identifier"):
            out.append(term)  # an identifier the scope lacks, or a name that is elsewhere
        elif held and (1.0 - share) ** held < CHANCE:
            weak.append(term)
    if scope_mask is not None:
        out.extend(_phrases_elsewhere(query, postings, scope_mask))
        if not present:
            out.extend(weak)
            if len(elsewhere) >= SEVERAL:
                out.extend(elsewhere)
    chosen = set(out)
    return tuple(term for term in dict.fromkeys([*ordered, *out]) if term in chosen)


def unmet_names(
    query: str, query_terms: Sequence[str], postings: Mapping[str, TermPostings]
) -> tuple[str, ...]:
    """Given a question, its distinct terms and the postings of those the index holds, return
    the terms of its names that no entry of the root holds ("the Juniper cluster", "Henrik"),
    in question order: a person or thing the memory never met, or a paraphrase of one it did
    ("my plane to Portugal" for a note on Lisbon), which only the meaning can find
    (`carryd.index.fusion`: a hit found by the question's words is lowered, one the model reads
    as the question without them is not). Initials ("OKR") are often written out: not here."""
    wanted = set(query_terms)
    return tuple(
        term
        for term, form in _forms(query)
        if form == "name"
        and term in wanted
        and (term not in postings or postings[term].rows.size == 0)
    )


def _phrases_elsewhere(
    query: str, postings: Mapping[str, TermPostings], scope_mask: np.ndarray
) -> list[str]:
    """Given a question, its terms' postings and a scope's row mask, return the terms of each
    name of several words that entries of the corpus hold together and no entry in scope
    does: "the Data Platform Primary schedule" asked where "data", "platform" and "primary"
    each appear, but only another team's notes name that schedule. (Words that no entry holds
    together say nothing: a name the corpus never met may be a paraphrase.)"""
    import numpy as np

    out: list[str] = []
    for phrase in _phrases(query):
        together: np.ndarray | None = None
        for term in phrase:
            posting = postings.get(term)
            rows = np.empty(0, dtype=np.int64) if posting is None else posting.rows
            together = rows if together is None else np.intersect1d(together, rows)
        if together is not None and together.size and not bool(scope_mask[together].any()):
            out.extend(phrase)
    return out
