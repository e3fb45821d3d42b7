"""Names of the memory root's layout that light callers need without the Markdown parser.

`carryd status` and the status line judge a carry's freshness from these; importing
`index/entries.py` for them would load markdown-it and the redactor (~30 ms per hook call).
"""

from __future__ import annotations

# Top-level folders that hold root-level memory (DESIGN.md: `MEMORY.md, notes/*.md`), not a
# workspace: their entries are the user's cross-project defaults.
ROOT_LEVEL_DIRS = ("notes",)
