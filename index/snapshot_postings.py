"""The warm snapshot's resident postings: the common terms' postings by row, read once with a
full load and patched on every refresh from the changed entries' own postings. Pure.

Why they are kept: recall reads a query term's postings from the store on first use, and a
common term's are tens of thousands of rows at 100,000 entries — ~50 ms of SQLite and ~30 ms of
Python each, 300-700 ms for a new question holding three or four common words (measured on the
100,000-entry bench root at load 5). The cost is in proportion to the term's document frequency,
not to the root, so which terms to keep is an absolute count: from `RESIDENT_MIN_DF` entries on
(a rarer term is read in a few milliseconds). Their memory is bounded by the postings of the
root (12 bytes a posting: 32 MiB for the 2.8 million common postings of the 100,000-entry
bench root, where every note draws from a vocabulary of 34 words; about 1 MiB at 10,000).

A refresh patches only the terms a changed entry held or holds — delete its old row, insert its
new one, both by binary search in the ascending rows, so a common term costs a memcpy, not a
sort. When entries come or go every row number moves: each kept term is re-mapped by one
gather (the relative order of the ids that stay does not change).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from carryd.index.lexical import TermPostings, with_rows, without_rows
from carryd.index.snapshot_rows import Snapshot

__all__ = ["COUNT", "RESIDENT_MIN_DF", "ROW", "patched_resident", "resident_of"]

RESIDENT_MIN_DF = 1_000
# Kept by row in 12 bytes a posting, not `TermPostings.of`'s 16: the term frequency as an int32
# (BM25's arithmetic on an integer frequency is float64 all the same, a Python float times an
# integer array, so the scores are the same to the last bit). The rows stay int64: numpy
# indexes with int64, and int32 rows were cast on every use (a query's common term 30% slower).
ROW = "int64"
COUNT = "int32"


def resident_of(
    postings: Iterable[tuple[str, Sequence[str], Sequence[int]]], row_of: Mapping[str, int]
) -> dict[str, TermPostings]:
    """Given (term, entry ids, their term frequencies) per term and the snapshot's row of each
    id, return term → its postings by row, the rows and frequencies `TermPostings.of` builds
    (ids the snapshot does not hold dropped), as `ROW` and `COUNT` integers."""
    import numpy as np

    resident = {}
    for term, ids, frequencies in postings:
        rows = np.fromiter((row_of.get(entry_id, -1) for entry_id in ids), ROW, len(ids))
        counts = np.asarray(frequencies, dtype=COUNT).reshape(len(ids))
        keep = (rows >= 0) & (counts > 0)
        rows, counts = rows[keep], counts[keep]
        if rows.size > 1 and not bool((rows[1:] > rows[:-1]).all()):
            order = np.argsort(rows, kind="stable")  # (the store's id order is the row order)
            rows, counts = rows[order], counts[order]
        resident[term] = TermPostings(rows=rows, frequencies=counts)
    return resident


def patched_resident(
    previous: Snapshot,
    row_of: Mapping[str, int],
    changed: Iterable[str],
    now: Mapping[str, Mapping[str, int]] | None,
) -> dict[str, TermPostings]:
    """Given the last snapshot, the new row order, the ids written since and term → {id: tf}
    of those ids now (`Store.postings_of`; None: not read, and the resident postings are
    dropped), return the resident postings after the change: what `resident_of` would build
    from the store now, for the same terms."""
    import numpy as np

    resident, previous_ids, previous_row_of = previous.resident, previous.entry_ids, previous.row_of
    if not resident or now is None:
        return {}
    changed_ids = list(changed)
    gone = np.asarray(  # (in the rows' own type: a search in another casts the whole term)
        sorted(previous_row_of[i] for i in changed_ids if i in previous_row_of), dtype=ROW
    )
    remap = None
    if row_of is not previous_row_of:
        remap = np.fromiter(
            (row_of.get(entry_id, -1) for entry_id in previous_ids), ROW, len(previous_ids)
        )
    patched = {}
    for term, postings in resident.items():
        rows, counts = without_rows(postings.rows, postings.frequencies, gone)
        if remap is not None:
            rows = remap[rows]  # only ids that stay are left: none maps to -1
        held = now.get(term)
        if held:
            added = sorted((row_of[i], tf) for i, tf in held.items() if i in row_of and tf > 0)
            rows, counts = with_rows(rows, counts, added)
        if rows is postings.rows:
            patched[term] = postings
        else:
            patched[term] = TermPostings(rows=rows, frequencies=counts)
    return patched
