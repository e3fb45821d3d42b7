"""Given a ledger item's text, return its kind from the explicit markers in it (never from the
section it sits in): success, failure, todo, done or meta, and "plain" without a marker.

`ItemKind` also names the kinds the sidecar assigns ("status", "goal"); the markers here only
ever give the five above or "plain".
"""

from __future__ import annotations

import re
from typing import Literal

ItemKind = Literal["success", "failure", "todo", "done", "meta", "status", "goal", "plain"]

# Kind markers. The leftmost marker that stands in a marker context wins; at one position the
# earlier alternative wins, so "不成功" (failure) beats the "成功" inside it. Contexts:
# - "any": symbols, checkboxes, negations and tags are explicit wherever they are;
# - "cjk": a Chinese word counts unless another ideograph follows it ("失败原因", "成功率" and
#   "修复失败的测试" are not markers; "失败。", "成功，" and "失败了" are);
# - "word": an English word counts at the start of the item, after a separator (— – - : → > (
#   [ , ;) or before punctuation or the end of a line ("— failed.", "Fixed: …", "it works."),
#   not inside a phrase ("the tried/failed section", "fixed-size").
MarkerContext = Literal["any", "cjk", "word"]
_EN = r"(?<![\w/-])"
_EN_END = r"(?![\w/-])"
_MARKER_PATTERNS: tuple[tuple[ItemKind, MarkerContext, str], ...] = (
    ("failure", "any", r"不成功|未成功|没有?成功|未解决|没有?解决|未修复|没修好"),
    (
        "failure",
        "any",
        rf"(?i:{_EN}(?:not\s+(?:yet\s+)?(?:fixed|solved|working)|unsolved|unfixed"
        rf"|(?:does\s*n[o']?t|did\s*n[o']?t|won'?t|can'?t)\s+work){_EN_END})",
    ),
    ("todo", "any", r"未完成|\[\s\]|☐"),
    ("success", "any", r"\[[xX]\]|✅|✔|☑|✓"),
    ("failure", "any", r"❌|✘|✗|✖"),
    ("success", "cjk", r"成功|已解决|解决了|已修复|修复了"),
    ("failure", "cjk", r"失败"),
    ("success", "word", rf"(?i:{_EN}(?:solved|fixed|works|worked|resolved){_EN_END})"),
    ("failure", "word", rf"(?i:{_EN}(?:failed|fails|failure|broken){_EN_END})"),
    ("todo", "any", rf"{_EN}TODO{_EN_END}|(?i:{_EN}todo\s*[:：])"),
    ("todo", "cjk", r"待办"),
    ("done", "any", rf"{_EN}DONE{_EN_END}|(?i:{_EN}done\s*[:：])"),
    ("done", "cjk", r"已完成|完成了"),
    ("done", "word", rf"(?i:{_EN}completed{_EN_END})"),
    ("meta", "any", r"(?i:\[meta\]|(?<![\w-])meta\s*[:：])"),
    ("meta", "cjk", r"元指令"),
)
_MARKERS = re.compile(
    "|".join(f"(?P<k{index}>{pattern})" for index, (_, _, pattern) in enumerate(_MARKER_PATTERNS))
)
_IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ITEM_START = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\[[ xX]\])?[\s*_`]*(?:[✅✔☑✓❌✘✗✖☐]\ufe0f?[\s*_`]*)*$"
)
_WORD_BEFORE = "—–-:：→>(（[【,，;；=|"
_WORD_AFTER = ".!?;:：,，)）]】。！？；\n"


def _in_context(text: str, start: int, end: int, context: MarkerContext) -> bool:
    if context == "any":
        return True
    if context == "cjk":
        following = text[end : end + 1]
        return not following or following == "了" or not _IDEOGRAPH.match(following)
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start].rstrip(" \t*_`")
    after = text[end:].lstrip(" \t*_`")
    return (
        not before
        or _ITEM_START.match(text[line_start:start]) is not None
        or before[-1] in _WORD_BEFORE
        or not after
        or after[0] in _WORD_AFTER
    )


def item_kind(text: str) -> ItemKind:
    """Given an item's text, return its kind from explicit markers only ("plain" without one).

    success: ✅ ✔ ☑ ✓ [x] 成功 已解决 解决了 已修复 修复了 solved fixed works resolved;
    failure: ❌ ✘ ✗ ✖ 失败 failed fails failure broken, and negations (不成功 未解决 not fixed
    doesn't work …); todo: [ ] ☐ TODO "todo:" 待办 未完成; done: 已完成 完成了 DONE "done:"
    completed; meta: 元指令 "meta:" [meta]. The leftmost marker in a marker context decides
    (see the comment above `_MARKER_PATTERNS`).
    """
    for match in _MARKERS.finditer(text):
        if match.lastgroup is None:
            continue
        kind, context, _ = _MARKER_PATTERNS[int(match.lastgroup[1:])]
        if _in_context(text, match.start(), match.end(), context):
            return kind
    return "plain"
