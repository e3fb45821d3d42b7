"""Given the PLAN and ledger entries of a workspace, return the carry's anchor table (seed P5).

One row per entry — id, L0 abstract, path:lines — in the order the caller passes them (plan
rows, then ledger rows, each in document order). The L0 comes from the index's own
extraction (`carryd.index.l0`, already redacted there): no model, no LLM, nothing that
changes with the query, so the same entries always render the same bytes (I1). The table lets
the next context drill down with `carryd expand <id>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from carryd.carry.truncate import line_span
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
