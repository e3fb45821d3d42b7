"""Line spans as a carry names them: an index entry's span and id, and "12-14" for a range.

Pure; shared by the plan, the anchors and the segments.
"""

from __future__ import annotations

EntrySpan = tuple[int, int, str]  # an index entry's first and last line and its id


def line_span(line_start: int, line_end: int) -> str:
    """Given an inclusive 1-based line range, return "12-14" (or "12" for one line)."""
    return str(line_start) if line_start == line_end else f"{line_start}-{line_end}"
