"""Fit the unit-value model of `carryd.carry.unit_value` on the development split.

A carry packs a ledger by each unit's value per character; the value is the modelled
probability that a unit (a sentence, a table row, a line of code) holds a fact a fresh context
must know. This script fits that model — a logistic regression over `unit_value.FEATURES`,
L2-regularised, by Newton's method in numpy — on the ledgers of `bench/p9/independent/dev`:
a unit is a positive when it holds a key phrase of one of the scenario's ledger facts.

It reads the development split only; the test split is never opened here. It prints, per
development scenario, how many ledger facts a greedy packing by value per character keeps at
two ledger budgets with the model fitted on the other scenarios (leave one scenario out)
beside the weights in use now (fitted on them all: in-sample), then the weights fitted on every
development scenario. With `--write` those weights replace `carry/unit_weights.py`;
`--exclude PREFIX` leaves scenarios out of the fit, to check it on ones it never saw.

    .venv/bin/python bench/p9_fit.py [--write] [--l2 1.0] [--exclude ir- ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEV = HERE / "p9" / "independent" / "dev"
WEIGHTS_FILE = HERE.parent / "carry" / "unit_weights.py"
BUDGETS = (9_500, 6_100)  # about the ledger's room in ③ and in ④

sys.path.insert(0, str(HERE))
from bench_p9 import norm  # noqa: E402
from carryd.carry.outline import parse_outline  # noqa: E402
from carryd.carry.unit_value import FEATURES, fact_likelihood, unit_features  # noqa: E402
from carryd.carry.units import Unit, units_of  # noqa: E402
from carryd.index.redact import redact  # noqa: E402


@dataclass
class Ledger:
    scenario: str
    texts: list[str]  # every unit's text, normalised
    sizes: np.ndarray  # every unit's length + 1
    features: np.ndarray  # one row a unit, `FEATURES` order
    labels: np.ndarray  # 1: the unit holds a key phrase of a ledger fact
    current: np.ndarray  # the weights in use now: each unit's likelihood
    facts: list[tuple[str, ...]]  # the ledger facts' phrases, normalised


def load(folder: Path) -> Ledger:
    """Given a scenario folder, return its ledger's units, features and labels."""
    meta = json.loads((folder / "scenario.json").read_text("utf-8"))
    path = f"{meta['workspace']}/handoff/LEDGER.md"
    outline = parse_outline(redact((folder / "root" / path).read_text("utf-8")), path)
    facts = []
    for line in (folder / "facts.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            fact = json.loads(line)
            if fact["source"] == path:
                facts.append(tuple(norm(phrase) for phrase in fact["phrases"]))
    phrases = {phrase for fact in facts for phrase in fact}
    texts, rows, current = [], [], []
    for item in outline.items:
        units = units_of(item.text) or [Unit(0, item.text)]
        rows.extend(unit_features(item, units, len(outline.items)))
        current.extend(fact_likelihood(item, units, len(outline.items)))
        texts.extend(norm(unit.text) for unit in units)
    labels = np.array([any(p in text for p in phrases) for text in texts], dtype=float)
    return Ledger(
        scenario=folder.name,
        texts=texts,
        sizes=np.array([len(t) + 1 for t in texts], dtype=float),
        features=np.array([[row[name] for name in FEATURES] for row in rows], dtype=float),
        labels=labels,
        current=np.array(current),
        facts=facts,
    )


def fit(features: np.ndarray, labels: np.ndarray, l2: float) -> np.ndarray:
    """Given features and labels, return the fitted [intercept, weights…] (Newton's method on
    the L2-regularised log-likelihood; the intercept is not penalised)."""
    x = np.hstack([np.ones((len(features), 1)), features])
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - labels) + penalty * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def likelihood(w: np.ndarray, features: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(w[0] + features @ w[1:])))


def kept(ledger: Ledger, values: np.ndarray, budget: int) -> int:
    """Given a ledger and its units' values, return how many of its facts a greedy packing by
    value per character keeps within `budget` characters."""
    order = np.argsort(-(values / ledger.sizes), kind="stable")
    used, chosen = 0.0, []
    for index in order:
        if used + ledger.sizes[index] <= budget:
            used += ledger.sizes[index]
            chosen.append(ledger.texts[index])
    text = " ".join(chosen)
    return sum(all(phrase in text for phrase in fact) for fact in ledger.facts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {WEIGHTS_FILE.name}")
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty (default 1.0)")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="leave out the scenarios whose id starts with this (repeatable): fit without them, "
        "to check the fit on development scenarios it never saw",
    )
    args = parser.parse_args(argv)

    ledgers = [
        load(folder)
        for folder in sorted(DEV.iterdir())
        if (folder / "scenario.json").is_file() and not folder.name.startswith(tuple(args.exclude))
    ]
    print(
        f"{len(ledgers)} development ledgers, {sum(len(ledger.texts) for ledger in ledgers)} units"
    )
    header = " ".join(f"now@{b} loso@{b}" for b in BUDGETS)
    print(f"{'scenario':34} facts {header}")
    totals = np.zeros(2 * len(BUDGETS), dtype=int)
    for held in ledgers:
        rest = [ledger for ledger in ledgers if ledger is not held]
        w = fit(
            np.vstack([ledger.features for ledger in rest]),
            np.concatenate([ledger.labels for ledger in rest]),
            args.l2,
        )
        values = likelihood(w, held.features)
        row = []
        for budget in BUDGETS:
            row += [kept(held, held.current, budget), kept(held, values, budget)]
        totals += row
        cells = " ".join(
            f"{value:>{len(f'now@{b}')}}"
            for value, b in zip(row, np.repeat(BUDGETS, 2), strict=True)
        )
        print(f"{held.scenario:34} {len(held.facts):5} {cells}")
    facts = sum(len(ledger.facts) for ledger in ledgers)
    cells = " ".join(
        f"{value:>{len(f'now@{b}')}}"
        for value, b in zip(totals, np.repeat(BUDGETS, 2), strict=True)
    )
    print(f"{'total':34} {facts:5} {cells}")

    w = fit(
        np.vstack([ledger.features for ledger in ledgers]),
        np.concatenate([ledger.labels for ledger in ledgers]),
        args.l2,
    )
    print(f"\nfitted on all {len(ledgers)}: intercept {w[0]:+.4f}")
    for name, weight in sorted(zip(FEATURES, w[1:], strict=True), key=lambda pair: -abs(pair[1])):
        print(f"  {name:18} {weight:+.4f}")
    if args.write:
        lines = [
            '"""The weights of `carryd.carry.unit_value`, fitted by `bench/p9_fit.py --write`',
            f"on the {len(ledgers)} development scenarios (L2 {args.l2}); regenerate, do not edit."
            '"""',
            "",
            f"INTERCEPT = {w[0]:.4f}",
            "WEIGHTS: dict[str, float] = {",
            *(f'    "{name}": {weight:.4f},' for name, weight in zip(FEATURES, w[1:], strict=True)),
            "}",
            "",
        ]
        WEIGHTS_FILE.write_text("\n".join(lines), "utf-8")
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
