"""The framing a hook puts around an inline carry: the carry's text, then the full carry's path.

Its own small module so that a hook with a fresh carry imports no planner and no secret
scanner, and the carry writer plans the SessionStart variant under the same framing.
"""

from __future__ import annotations


def compose_context(carry_text: str, carry_path: str) -> str:
    """Given the inline carry and the full carry's path, return the context text to inject."""
    return carry_text.rstrip("\n") + context_suffix(carry_path)


def context_suffix(carry_path: str) -> str:
    """Given the full carry's path, return the line a hook adds after the inline carry."""
    return f"\n\nFull carry: {carry_path}"
