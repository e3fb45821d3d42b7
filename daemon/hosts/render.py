"""What a host's model reads, rendered for that host on top of the carry carryd composes
(`carryd.daemon.carries.inline.compose_context`) and the notes the triggers state.

Gemini CLI escapes `<` and `>` in every hook's `additionalContext` (`&lt;`, `&gt;`), so for it
the carry's markup gets other markers: `<recalled_memory>` becomes `[recalled memory]` …
`[end of recalled memory]`, a `<memory_hit id="…" …>` block `[memory hit id="…" …]` …
`[end of memory hit]`, an HTML comment `<!-- slot: … -->` `[slot: …]`, a placeholder such as
`carryd expand <id>` `carryd expand {id}`; any other angle bracket (in the user's own text,
which the carry carries escaped as `&lt;`/`&gt;`) becomes `‹` or `›`. Nothing else changes,
and the result holds no `<` or `>`.
"""

from __future__ import annotations

import re

__all__ = ["without_angle_brackets"]

_TAGS = (
    (re.compile(r"<recalled_memory>"), "[recalled memory]"),
    (re.compile(r"</recalled_memory>"), "[end of recalled memory]"),
    (re.compile(r"</memory_hit>"), "[end of memory hit]"),
    (re.compile(r"<memory_hit(\s[^<>\n]*)?>"), lambda m: f"[memory hit{m.group(1) or ''}]"),
    (re.compile(r"<!--\s*(.*?)\s*-->", re.S), lambda m: f"[{m.group(1)}]"),
    # A placeholder: a word (letters, digits, dashes, spaces) between angle brackets.
    (re.compile(r"<([A-Za-z][\w\- ]{0,40})>"), lambda m: "{" + m.group(1) + "}"),
)
_ENTITIES = (("&lt;", "‹"), ("&gt;", "›"), ("<", "‹"), (">", "›"))


def without_angle_brackets(text: str) -> str:
    """Given text for a model, return it with no `<` or `>` (Gemini CLI's rendering)."""
    for pattern, replacement in _TAGS:
        text = pattern.sub(replacement, text)
    for old, new in _ENTITIES:
        text = text.replace(old, new)
    return text
