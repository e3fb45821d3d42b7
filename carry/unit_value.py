"""Given a ledger item and its units, return how likely each unit holds what a fresh context
must know — the value a carry packs by (`carryd.carry.outline_pack`).

The likelihood is a logistic model over what a unit's structure says, in any language: its
length and its fact-like tokens (figures, ids, code, paths, flags), where its item stands
(recency in a log or a list, its place in the file, the newest entry), the item's state from
its own marks (open, failed, done, superseded), the known section above it, and the unit's
place in its item (the first says what the item is; later ones hold an attempt's reason). The
weights are data (`carryd.carry.unit_weights`), fitted by `bench/p9_fit.py` on the development
split of the hand-off scenarios written without sight of carryd, and checked on the held-out
test split only through the bench's summary line. Pure: no IO, no clock, no numpy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from carryd.carry.marks import decides, marked_current, reason_start, struck_out
from carryd.carry.outline import Item
from carryd.carry.unit_weights import INTERCEPT, WEIGHTS
from carryd.carry.units import Unit, reason_scores, salience, shape_of

OPENING_SHARE = 0.15  # the file's first items, where a summary of where things stand often sits
NEWEST = 0.999  # an item this recent is in the newest entry (or a section kept current)
_DIGIT = re.compile(r"\d")

# The features, in the order `bench/p9_fit.py` fits them.
FEATURES: tuple[str, ...] = (
    "loglen",  # log of the unit's length
    "salient",  # fact-like tokens (ids, figures, code, paths, flags)
    "salient_density",  # … per 100 characters
    "digit_density",  # digits per 10 characters
    "code",  # code spans
    "recency",  # the item's recency, 0 oldest … 1 newest
    "newest",  # the item is in the newest entry, or in a section kept current
    "position",  # the item's place in the file, 0 first … 1 last
    "opening",  # the item is among the file's first ones (a summary kept at the top)
    "in_log",  # the item is an entry's, in a dated or numbered log
    "weight",  # the known section's weight above it (1: none)
    "first",  # the unit is its item's first
    "place",  # the unit's place in its item, 0 first … 1 last
    "units",  # log of the item's number of units
    "reason_cue",  # the unit names a reason ("because", 原因, "causa:")
    "reason_score",  # how likely it holds an attempt's reason (`units.reason_scores`)
    "decision",  # the item opens as a decision
    "current",  # the author marks it as where things stand ("**current**", "| current |")
    "struck",  # the unit is struck through
    "table",  # the item is a table
    "fence",  # the item is a code block
    "state_open",
    "state_failed",
    "state_done",
    "state_superseded",
    "section_status",
    "section_goal",
    "section_tried",
    "section_next",
)


def unit_features(item: Item, units: Sequence[Unit], items: int) -> list[dict[str, float]]:
    """Given an item, its units and the number of items in the file, return each unit's
    features (`FEATURES`, by name)."""
    shape = shape_of(item.text)
    scores = reason_scores(units) if len(units) > 1 else [0.0] * len(units)
    opening = decides(item.text)
    found: list[dict[str, float]] = []
    for index, unit in enumerate(units):
        text = unit.text
        size = len(text) + 1
        tokens = salience(text)
        found.append(
            {
                "loglen": math.log(size),
                "salient": float(tokens),
                "salient_density": 100.0 * tokens / size,
                "digit_density": 10.0 * len(_DIGIT.findall(text)) / size,
                "code": text.count("`") / 2,
                "recency": item.recency,
                "newest": 1.0 if item.recency >= NEWEST else 0.0,
                "position": item.position / max(1, items - 1),
                "opening": max(0.0, 1.0 - item.position / max(1.0, OPENING_SHARE * items)),
                "in_log": 1.0 if item.in_log else 0.0,
                "weight": item.weight,
                "first": 1.0 if index == 0 else 0.0,
                "place": index / max(1, len(units) - 1),
                "units": math.log(len(units)),
                "reason_cue": 1.0 if reason_start(text) is not None else 0.0,
                "reason_score": scores[index],
                "decision": 1.0 if opening else 0.0,
                "current": 1.0 if marked_current(text) else 0.0,
                "struck": 1.0 if struck_out(text) else 0.0,
                "table": 1.0 if shape == "table" else 0.0,
                "fence": 1.0 if shape == "fence" else 0.0,
                "state_open": 1.0 if item.state == "open" else 0.0,
                "state_failed": 1.0 if item.state == "failed" else 0.0,
                "state_done": 1.0 if item.state == "done" else 0.0,
                "state_superseded": 1.0 if item.state == "superseded" else 0.0,
                "section_status": 1.0 if item.section == "status" else 0.0,
                "section_goal": 1.0 if item.section == "goal" else 0.0,
                "section_tried": 1.0 if item.section == "tried" else 0.0,
                "section_next": 1.0 if item.section == "next" else 0.0,
            }
        )
    return found


def fact_likelihood(item: Item, units: Sequence[Unit], items: int) -> list[float]:
    """Given an item, its units and the number of items in the file, return for each unit the
    modelled probability that it holds a fact a fresh context must know (0..1)."""
    return [
        _logistic(INTERCEPT + sum(WEIGHTS.get(name, 0.0) * value for name, value in row.items()))
        for row in unit_features(item, units, items)
    ]


def _logistic(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
