"""Issue 20 item 3: root-level notes compete — rules before knowledge, MEMORY.md's rules first
in the user's order, then relevance to the work (the plan's and the ledger's distinctive
words); rules are shown one by one, and what is not shown is named by its title, path or
lines."""

from __future__ import annotations

import dataclasses

from carryd.carry.budgets import CarryBudgets
from carryd.carry.render import CarryInputs, build_carry
from carryd.carry.standing import (
    NOT_SHOWN,
    UNSHOWN_DEFAULTS,
    UNSHOWN_NOTES,
    note_relevance,
    standing_rules,
)
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
    work = "Goal: fix duplicate renewal charges in billing; renewal queries run on billing-ro."
    ranked = standing_rules(entries(), {}, note_relevance(entries(), work))
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
    # named by title and lines where there is room, else by path
    assert UNSHOWN_DEFAULTS in tight.text
    assert "psql services (notes/psql.md:1-3)" in tight.text or "notes/{editor, psql}.md" in (
        tight.text
    )
    assert "I'm Priya" not in tight.text  # an introduction never takes a rule's place


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
        relevance = note_relevance(found, "prune docker volumes")
        ranked = [entry.path for entry, _ in standing_rules(found, {}, relevance)]
        assert ranked[0] == "MEMORY.md" and ranked[1] == first, (pointer, ranked)
    # a file name inside a longer name is no pointer to it
    memory = "# MEMORY\n\n- Never push to main; see old-laptop.md.\n"
    found = [*parse_entries("MEMORY.md", memory)]
    for path, text in notes.items():
        found.extend(parse_entries(path, text))
    relevance = note_relevance(found, "prune docker volumes")
    ranked = [entry.path for entry, _ in standing_rules(found, {}, relevance)]
    assert ranked[1] == "notes/ci-runners.md"  # by path order, as without any pointer


LONG_MEMORY = (
    "# Meine Regeln (gelten für alle Projekte)\n\n"
    "- Antworte mir auf Deutsch. Code und Commit-Messages auf Englisch.\n"
    "- Commit messages: Conventional Commits, Ticket-ID in den Body.\n"
    "- Never `git push --force` to a shared branch.\n"
    "- Vor jedem Push: `make lint test` lokal, sonst wird nicht gepusht.\n"
    "- Python: immer `uv`. Never `pip install` into the system Python.\n"
    "- MRs erst als Draft aufmachen, aus Draft nehmen wenn CI grün ist.\n"
    "- Keine Schreibzugriffe auf Produktivdatenbanken ohne Rückfrage bei mir.\n"
    "- When you are unsure whether something is destructive: ask first.\n"
)
FIELD_NOTES = {
    "notes/feldgeraete-regeln.md": "# Regeln für Feldgeräte\n\n"
    "- Keine Updates an Feldknoten freitags, und nie aus der Ferne auf Werkseinstellungen.\n",
    "notes/git-gewohnheiten.md": "# Git-Gewohnheiten\n\n"
    "- Rebase statt Merge, aber nie force-push auf geteilte Branches.\n",
}
OTA_WORK = (
    "# Plan\n\nGoal: alle 1.800 Feldknoten per OTA aktualisieren, ohne dass ein Knoten vor Ort "
    "angefasst werden muss.\n\n# Ledger\n- Welle 3: 120 Feldknoten, 4 hängen im Bootloader.\n"
    "- Feldknoten mit altem Modem brauchen den Delta-Patch.\n"
)


def ota_inputs(memory: str = LONG_MEMORY) -> CarryInputs:
    found = [*parse_entries("MEMORY.md", memory)]
    for path, text in FIELD_NOTES.items():
        found.extend(parse_entries(path, text))
    plan, ledger = OTA_WORK.split("# Ledger\n")
    return CarryInputs(
        workspace="ota",
        discipline=DEFAULT_DISCIPLINE,
        ledger_path="ota/handoff/LEDGER.md",
        plan_path="ota/PLAN.md",
        ledger_text="# Ledger\n\n" + ledger * 60,
        plan_text=plan,
        root_defaults=tuple(found),
    )


def test_a_long_memory_md_gives_way_rule_by_rule_in_the_users_order() -> None:
    plan = build_carry(ota_inputs(), CarryBudgets(total_chars=3_200))
    standing = plan.text[plan.text.index("# Your standing rules") :]
    standing = standing[: standing.index("\n# ")]
    # its first rule is never lost because the whole file does not fit: rules are shown one
    # by one, the user's first ones first, and the lines left out are named
    assert "Antworte mir auf Deutsch" in standing
    assert "Never `git push --force`" in standing
    assert "ask first" not in standing  # the last rule gave way …
    assert f"{NOT_SHOWN} MEMORY.md:" in standing  # … and its lines are named


def test_the_note_that_shares_the_works_own_words_is_shown_before_a_generic_one() -> None:
    short = "# Regeln\n\n- Antworte mir auf Deutsch.\n"
    roomy = build_carry(ota_inputs(short), CarryBudgets(total_chars=3_200))
    assert "Keine Updates an Feldknoten freitags" in roomy.text
    assert "Rebase statt Merge" in roomy.text  # where both fit, both are shown
    plan = build_carry(ota_inputs(short), CarryBudgets(total_chars=2_700))
    assert "Keine Updates an Feldknoten freitags" in plan.text
    assert "Rebase statt Merge" not in plan.text  # where one fits, it is the relevant one …
    assert "git-gewohnheiten" in plan.text  # … and the other is named
    relevance = note_relevance(ota_inputs(short).root_defaults, OTA_WORK)
    assert relevance["notes/feldgeraete-regeln.md"] > relevance["notes/git-gewohnheiten.md"]


def test_words_most_notes_share_weigh_little_in_any_language() -> None:
    notes = [
        *parse_entries("notes/a.md", "# A\n\n- Pour les déploiements, toujours dans la journée.\n"),
        *parse_entries("notes/b.md", "# B\n\n- Pour les revues, toujours dans la journée.\n"),
        *parse_entries("notes/c.md", "# C\n\n- Le cluster pgbackrest ne se redémarre jamais.\n"),
    ]
    relevance = note_relevance(notes, "Pour la journée: restaurer le stanza pgbackrest du cluster.")
    assert relevance["notes/c.md"] > relevance["notes/a.md"]
    assert relevance["notes/c.md"] > relevance["notes/b.md"]
