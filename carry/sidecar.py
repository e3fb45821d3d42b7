"""Given the raw `handoff/sidecar.json`, return its items; given a ledger, apply them (seed P7).

The sidecar is written by the host in the same turn as the ledger (no extra LLM round). Its
shape is a JSON list of items, or an object `{"items": [...]}`; each item is

    {"id": str, "type": "solution"|"failure"|"todo"|"meta"|"status"|"goal",
     "w": number (finite, >= 0), "text": str, "refs": [str, ...] (optional), "st": str (optional)}

Fail-soft throughout (I4): a missing, unreadable or malformed sidecar gives `(None, warning)`;
an item that is malformed is skipped and named in the warning while the valid ones are used;
nothing here raises.

Matching a ledger item to a sidecar item (`apply_sidecar`), first rule that finds one wins,
sidecar order breaking ties:
1. a ref naming lines that overlap the item: "12", "L12", "12-14", "L12-L14",
   "handoff/LEDGER.md:12-14" (a path prefix is not checked: the sidecar describes one ledger);
2. the same text after normalisation (NFKC, casefold, whitespace collapsed, list bullet,
   checkbox, leading kind emoji and trailing full stop removed);
3. the sidecar text (normalised, at least 8 chars) contained in the item's normalised text.
A matched item takes the sidecar's kind (solution→success, failure, todo — or done when `st`
says done/closed/resolved/完成/已完成 —, meta, status, goal) and its weight `w`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Literal

from carryd.carry.ledger import ItemKind, Ledger, LedgerItem, LedgerSection

SidecarType = Literal["solution", "failure", "todo", "meta", "status", "goal"]
SIDECAR_TYPES: tuple[SidecarType, ...] = ("solution", "failure", "todo", "meta", "status", "goal")
KIND_OF_TYPE: dict[SidecarType, ItemKind] = {
    "solution": "success",
    "failure": "failure",
    "todo": "todo",
    "meta": "meta",
    "status": "status",
    "goal": "goal",
}
DONE_STATES = frozenset({"done", "closed", "resolved", "complete", "completed", "完成", "已完成"})
MIN_CONTAINED_CHARS = 8


@dataclass(frozen=True)
class SidecarItem:
    id: str
    type: SidecarType
    w: float
    text: str
    refs: tuple[str, ...]
    st: str


@dataclass(frozen=True)
class Sidecar:
    items: tuple[SidecarItem, ...]


def _item(raw: object, where: str) -> tuple[SidecarItem | None, str | None]:
    if not isinstance(raw, dict):
        return None, f"{where}: expected an object, got {type(raw).__name__}"
    item_id = raw.get("id")
    if not isinstance(item_id, str) or not item_id.strip():
        return None, f"{where}.id: expected a non-empty string"
    kind = raw.get("type")
    if kind not in SIDECAR_TYPES:
        return None, f"{where}.type: expected one of {'|'.join(SIDECAR_TYPES)}, got {kind!r}"
    weight = raw.get("w")
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        return None, f"{where}.w: expected a number, got {type(weight).__name__}"
    if not math.isfinite(weight) or weight < 0:
        return None, f"{where}.w: expected a finite number >= 0, got {weight!r}"
    text = raw.get("text")
    if not isinstance(text, str):
        return None, f"{where}.text: expected a string"
    refs = raw.get("refs", [])
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        return None, f"{where}.refs: expected a list of strings"
    state = raw.get("st", "")
    if not isinstance(state, str):
        return None, f"{where}.st: expected a string"
    return SidecarItem(item_id, kind, float(weight), text, tuple(refs), state), None


def parse_sidecar(raw: str | bytes | None) -> tuple[Sidecar | None, str | None]:
    """Given the sidecar file's content (None when there is no file), return it and a warning.

    Missing or invalid: `(None, warning naming what is wrong)`. Valid with some bad items:
    `(Sidecar(good items), warning naming the skipped ones)`. All valid: `(Sidecar, None)`.
    """
    if raw is None:
        return None, "sidecar: no sidecar file"
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            return None, f"sidecar: not UTF-8 ({error.reason} at byte {error.start})"
    if not raw.strip():
        return None, "sidecar: empty file"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as error:
        return None, f"sidecar: not valid JSON ({str(error)[:120]})"
    items_raw: object = data
    if isinstance(data, dict):
        if "items" not in data:
            return None, "sidecar: an object needs an 'items' list"
        items_raw = data["items"]
    if not isinstance(items_raw, list):
        return None, f"sidecar: 'items' must be a list, got {type(items_raw).__name__}"
    items: list[SidecarItem] = []
    problems: list[str] = []
    seen: set[str] = set()
    for index, raw_item in enumerate(items_raw):
        item, problem = _item(raw_item, f"items[{index}]")
        if item is None:
            problems.append(problem or f"items[{index}]: invalid")
        elif item.id in seen:
            problems.append(f"items[{index}].id: duplicate id {item.id!r}")
        else:
            seen.add(item.id)
            items.append(item)
    if problems:
        shown = "; ".join(problems[:3])
        if len(problems) > 3:
            shown += f"; +{len(problems) - 3} more"
        if not items:
            return None, f"sidecar: no valid items ({shown})"
        return Sidecar(tuple(items)), f"sidecar: skipped {len(problems)} invalid item(s): {shown}"
    if not items:
        return None, "sidecar: no items"
    return Sidecar(tuple(items)), None


_REF = re.compile(r"(?:^|:)L?(\d{1,9})(?:\s*[-–]\s*L?(\d{1,9}))?$")
_LEADING = re.compile(r"^(?:\s*(?:[-*+]|\d+[.)])\s+)?(?:\[[ xX]\]\s*)?(?:[✅✔☑✓❌✘✗✖☐]\ufe0f?\s*)*")


def _normalize(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text)
    folded = _LEADING.sub("", folded.strip())
    return " ".join(folded.split()).casefold().rstrip(".。;；!！")


def ref_lines(ref: str) -> tuple[int, int] | None:
    """Given a ref such as "12", "L12-L14" or "handoff/LEDGER.md:12-14", return its line range."""
    match = _REF.search(ref.strip())
    if match is None:
        return None
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    return (min(start, end), max(start, end))


def _match(item: LedgerItem, sidecar: Sidecar) -> SidecarItem | None:
    for candidate in sidecar.items:
        for ref in candidate.refs:
            lines = ref_lines(ref)
            if lines and lines[0] <= item.line_end and item.line_start <= lines[1]:
                return candidate
    text = _normalize(item.text)
    for candidate in sidecar.items:
        if _normalize(candidate.text) == text and text:
            return candidate
    for candidate in sidecar.items:
        wanted = _normalize(candidate.text)
        if len(wanted) >= MIN_CONTAINED_CHARS and wanted in text:
            return candidate
    return None


def _kind(candidate: SidecarItem) -> ItemKind:
    if candidate.type == "todo" and candidate.st.strip().casefold() in DONE_STATES:
        return "done"
    return KIND_OF_TYPE[candidate.type]


def apply_sidecar(ledger: Ledger, sidecar: Sidecar) -> Ledger:
    """Given a ledger and its sidecar, return the ledger with matched items' kinds and weights."""
    sections: list[LedgerSection] = []
    for section in ledger.sections:
        items: list[LedgerItem] = []
        for item in section.items:
            candidate = _match(item, sidecar)
            if candidate is not None:
                item = replace(item, kind=_kind(candidate), weight=candidate.w)
            items.append(item)
        sections.append(replace(section, items=tuple(items)))
    return replace(ledger, sections=tuple(sections))
