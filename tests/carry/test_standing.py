"""Issue 20 item 3: root-level notes compete — rules before knowledge, MEMORY.md's rules first
in the user's order, then relevance to the goal; a note not shown is named by title and path."""

from __future__ import annotations

import dataclasses

from carryd.carry.budgets import CarryBudgets
from carryd.carry.render import CarryInputs, build_carry
from carryd.carry.standing import UNSHOWN_DEFAULTS, UNSHOWN_NOTES, standing_rules
from carryd.daemon.config import DEFAULT_DISCIPLINE
from carryd.index.entries import Entry, parse_entries

MEMORY = (
    "# MEMORY\n\nI'm Priya, payments squad.\n\n## Hard rules\n"
    "- NEVER write to the production billing database.\n"
    "- Never issue refunds through the PSP API yourself.\n"
)
NOTES = {
    "notes/recipes.md": "# Recipes\n\n- Sourdough: 70% hydration, 4 h bulk.\n",
    "notes/editor.md": "# Editor\n\n- Always format on save in the editor.\n",
    "notes/psql.md": "# psql services\n\n- Never connect to billing-rw from a laptop; "
    "use billing-ro for renewal queries.\n",
}


def entries() -> tuple[Entry, ...]:
    found = list(parse_entries("MEMORY.md", MEMORY))
    for path, text in NOTES.items():
        found.extend(parse_entries(path, text))
    return tuple(found)


def test_memory_rules_come_first_then_relevant_rules_and_knowledge_is_left_out() -> None:
    ranked = standing_rules(entries(), {}, frozenset({"renewal", "billing"}))
    titles = [(e.path, e.heading_path[-1] if e.heading_path else "") for e, _ in ranked]
    assert titles[0] == ("MEMORY.md", "Hard rules")  # the user's own rules first
    assert titles.index(("notes/psql.md", "psql services")) < titles.index(
        ("notes/editor.md", "Editor")
    )  # relevance to the goal decides among rule notes
    assert ("notes/recipes.md", "Recipes") not in titles  # knowledge is no standing rule


def test_a_note_not_shown_is_named_by_its_title_and_path() -> None:
    carry_inputs = CarryInputs(
        workspace="billing",
        discipline=DEFAULT_DISCIPLINE,
        ledger_path="billing/handoff/LEDGER.md",
        plan_path="billing/PLAN.md",
        ledger_text="# Ledger\n\n"
        + "".join(f"- Tried variant {n}: failed, lease lost in run {n}.\n" for n in range(200)),
        plan_text="# Plan\n\nGoal: fix duplicate renewal charges in billing.\n",
        root_defaults=entries(),
    )
    plan = build_carry(carry_inputs, CarryBudgets(total_chars=4_000))
    assert "- NEVER write to the production billing database." in plan.text
    assert "Sourdough" not in plan.text
    assert f"{UNSHOWN_NOTES} notes/{{recipes}}.md" in plan.text  # knowledge: named by file
    roomy = build_carry(carry_inputs, CarryBudgets(total_chars=18_000, free_chars=18_000))
    assert "Never connect to billing-rw from a laptop" in roomy.text
    tight = build_carry(
        dataclasses.replace(carry_inputs, plan_text=None), CarryBudgets(total_chars=2_400)
    )
    assert "Never connect to billing-rw" not in tight.text  # over this budget the rule is named
    assert UNSHOWN_DEFAULTS in tight.text and "psql services (notes/psql.md:1-3)" in tight.text


def test_a_rule_note_memory_md_points_to_ranks_over_an_equally_relevant_one() -> None:
    notes = {
        "notes/ci-runners.md": "# CI runners\n\n- Never prune docker volumes on a runner.\n",
        "notes/laptop.md": "# Laptop\n\n- Never prune docker volumes on the laptop.\n",
    }
    for pointer, first in (
        ("notes/ci-runners.md", "notes/ci-runners.md"),
        ("laptop.md", "notes/laptop.md"),
    ):
        memory = f"# MEMORY\n\n- Never push to main.\n- See {pointer} before running anything.\n"
        found = [*parse_entries("MEMORY.md", memory)]
        for path, text in notes.items():
            found.extend(parse_entries(path, text))
        ranked = [entry.path for entry, _ in standing_rules(found, {}, frozenset({"docker"}))]
        assert ranked[0] == "MEMORY.md" and ranked[1] == first, (pointer, ranked)
    # a file name inside a longer name is no pointer to it
    memory = "# MEMORY\n\n- Never push to main; see old-laptop.md.\n"
    found = [*parse_entries("MEMORY.md", memory)]
    for path, text in notes.items():
        found.extend(parse_entries(path, text))
    ranked = [entry.path for entry, _ in standing_rules(found, {}, frozenset({"docker"}))]
    assert ranked[1] == "notes/ci-runners.md"  # by path order, as without any pointer
