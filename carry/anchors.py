"""Given what a carry does not inject in full, return its anchor table rows (seed P5).

A row is id, a one-line abstract, path:lines. Rows exist only for text that does NOT follow in
full: PLAN history entries (`history_rows`, each with its date; the history is never
injected), and whatever a caller passes to `anchor_rows`. Items a cut ledger leaves out are
anchored where they stood, inside the ledger segment (a one-line summary with its lines, and
the section's pointer naming the `carryd expand` ids), so they keep their document order.
Never a row for a bare heading. Abstracts are pure parsing — no model, no LLM, nothing that
changes with the query — so the same files always render the same bytes. The table lets the
next context drill down with `carryd expand <id>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from carryd.carry.plan import HistoryItem
from carryd.carry.spans import EntrySpan, line_span
from carryd.carry.summary import summary_line
from carryd.index.entries import Entry

TABLE_HEADER = "| id | L0 | lines |\n|---|---|---|"


@dataclass(frozen=True)
class AnchorRow:
    id: str
    l0: str
    path: str
    line_start: int
    line_end: int

    @property
    def location(self) -> str:
        """Return "path:12-14" ("path:12" for one line)."""
        return f"{self.path}:{line_span(self.line_start, self.line_end)}"


def anchor_rows(entries: Sequence[Entry]) -> tuple[AnchorRow, ...]:
    """Given entries in the order they should appear, return one row per entry.

    An id seen before is skipped (the first row wins), so a caller that passes an entry twice
    does not get two rows for it.
    """
    seen: set[str] = set()
    rows: list[AnchorRow] = []
    for entry in entries:
        if entry.id in seen:
            continue
        seen.add(entry.id)
        rows.append(AnchorRow(entry.id, entry.l0, entry.path, entry.line_start, entry.line_end))
    return tuple(rows)


def table_cell(text: str) -> str:
    """Given any text, return it as one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|")


def render_anchor_table(rows: Sequence[AnchorRow]) -> str:
    """Given anchor rows, return a compact Markdown table ("" for no rows), no trailing newline."""
    if not rows:
        return ""
    body = "\n".join(
        f"| {table_cell(row.id)} | {table_cell(row.l0)} | {table_cell(row.location)} |"
        for row in rows
    )
    return f"{TABLE_HEADER}\n{body}"


def history_rows(
    items: Sequence[HistoryItem], entries: Sequence[EntrySpan], *, path: str
) -> tuple[AnchorRow, ...]:
    """Given PLAN history entries (document order) and the plan's index entries, return one row
    each: the id of the entry that holds it, its date and one-line summary, its lines.

    An entry with no id (outside every index entry) gets no row.
    """
    rows: list[AnchorRow] = []
    for item in items:
        entry_id = next(
            (entry for start, end, entry in entries if start <= item.line_start <= end), None
        )
        if entry_id is None:
            continue
        summary = summary_line(item.text, dead_end=False).lstrip("-*+ ")
        if item.date is not None and item.date not in summary:
            summary = f"{item.date}: {summary}"
        rows.append(AnchorRow(entry_id, summary, path, item.line_start, item.line_end))
    return tuple(rows)
