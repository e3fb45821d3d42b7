"""Issue 20: a carry packs a ledger by each unit's likelihood of holding what a fresh context
must know — a logistic model over the unit's structure, whose weights are data fitted on the
development scenarios (`bench/p9_fit.py`). These tests hold the model to what its features
mean: newer over older, open over done, prose over pasted output, the status over notes."""

from __future__ import annotations

import ast
from pathlib import Path

from carryd.carry.outline import parse_outline
from carryd.carry.unit_value import FEATURES, fact_likelihood
from carryd.carry.unit_weights import INTERCEPT, WEIGHTS
from carryd.carry.units import units_of

PATH = "ws/handoff/LEDGER.md"
LINE = "Raised the pool to 40 on replica r7; p99 stayed at 900 ms because pgbouncer caps it."


def likelihood_of(ledger: str, needle: str) -> float:
    outline = parse_outline(ledger, PATH)
    for item in outline.items:
        units = units_of(item.text)
        for unit, value in zip(
            units, fact_likelihood(item, units, len(outline.items)), strict=True
        ):
            if needle in unit.text:
                return value
    raise AssertionError(f"{needle!r} not in the ledger")


def test_the_weights_are_the_fitted_ones_for_every_feature() -> None:
    assert set(WEIGHTS) == set(FEATURES)
    assert INTERCEPT < 0  # most units hold no must-know fact
    source = Path(__file__).resolve().parents[2] / "carry" / "unit_weights.py"
    assert "bench/p9_fit.py" in (ast.get_docstring(ast.parse(source.read_text("utf-8"))) or "")


def test_the_newest_entry_of_a_log_outweighs_the_oldest() -> None:
    sessions = "".join(
        f"## 2026-11-{n:02d} (session {n})\n- {LINE.replace('r7', f'r{n}')}\n- note {n}.\n"
        for n in range(1, 9)
    )
    ledger = f"# Ledger\n\n{sessions}"
    assert likelihood_of(ledger, "replica r8") > likelihood_of(ledger, "replica r1")


def test_an_open_step_outweighs_the_same_step_done() -> None:
    ledger = f"# Ledger\n\n## Next\n- [ ] {LINE}\n- [x] {LINE.replace('r7', 'r9')}\n"
    assert likelihood_of(ledger, "replica r7") > likelihood_of(ledger, "replica r9")


def test_prose_outweighs_the_same_words_pasted_as_output() -> None:
    prose = f"# Ledger\n\n## Notes\n- note 1.\n- {LINE}\n"
    pasted = f"# Ledger\n\n## Notes\n- note 1.\n\n```\n{LINE}\n```\n"
    assert likelihood_of(prose, "replica r7") > likelihood_of(pasted, "replica r7")


def test_where_things_stand_outweighs_a_plain_note() -> None:
    ledger = (
        f"# Ledger\n\n## Task status\n- {LINE}\n\n## Notes\n"
        + "".join(f"- note {n}: nothing.\n" for n in range(5))
        + f"- {LINE.replace('r7', 'r9')}\n"
    )
    assert likelihood_of(ledger, "replica r7") > likelihood_of(ledger, "replica r9")
