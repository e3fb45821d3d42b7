"""The whole carry from its inputs: segments, order, budgets, redaction, memory, determinism."""

from __future__ import annotations

import dataclasses
import re

import pytest
from carryd.carry.flat import FlatInputs, build_flat_carry
from carryd.carry.render import (
    ANCHORS_HEADING,
    COST_SLACK,
    MEMORY_HEADING,
    STANDING_HEADING,
    UNSHOWN_DEFAULTS,
    CarryBudgets,
    CarryInputs,
    build_carry,
    recall_queries,
    recall_query,
)
from carryd.carry.segments import plan_history_rows
from carryd.carry.select import MemorySelectionPolicy
from carryd.daemon.config import DEFAULT_DISCIPLINE
from carryd.index.errors import PromptBudgetError
from carryd.index.recall import RecallHit

LEDGER = """\
# Handoff ledger

## Task status
- Refund flow: contract tests 14/17 passing.
- ✅ Webhook signature verification merged.

## Goal
Make the refund flow pass all 17 contract tests, then delete `lib/payments/legacy.js`.

## Tried approaches and failure reasons
- ❌ Retrying refunds inside the webhook handler: Stripe times out after 10 s and resends,
  which produced double refunds. Failed.
- ❌ Using the order total for partial refunds: wrong when a coupon was applied.
- ✅ Queueing refunds in `refund_jobs` and acknowledging the webhook at once: solved.

## Progress and next steps
- [ ] Compute partial refunds from line items, not from the order total.
- [ ] Fix `ERR_REFUND_CURRENCY_MISMATCH` in the multi-currency contract test.
"""

PLAN = """\
# Webshop checkout rewrite

## Current state
- Checkout service moved to `services/checkout/`.
- Next milestone: remove the legacy adapter.

## History
- 2026-10-02: split the cart from the monolith.
"""

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c2Tg1JYbGq3nB0x7m8K9ZqLr4T5uVwXyZ0a1B2c3D4e5F6g\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRETS = (AWS, GITHUB, "MIIEowIBAAKCAQEA", "BEGIN RSA PRIVATE KEY")


def inputs(**changes: object) -> CarryInputs:
    base = CarryInputs(
        workspace="webshop",
        discipline=DEFAULT_DISCIPLINE,
        ledger_path="webshop/handoff/LEDGER.md",
        plan_path="webshop/PLAN.md",
        ledger_text=LEDGER,
        plan_text=PLAN,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def with_tried(items: str) -> str:
    """The fixture ledger with `items` appended to its tried section."""
    heading = "## Progress and next steps\n"
    return LEDGER.replace(heading, items + "\n" + heading)


def refund_attempts(count: int) -> str:
    """`count` long failed attempts, one line each."""
    return "".join(
        f"- ❌ attempt {n}: tried variant {n} of the refund queue — failed, because "
        + "the webhook retried while the queue was still draining " * 3
        + "\n"
        for n in range(count)
    )


def hit(
    memory_id: str,
    path: str,
    workspace: str | None,
    confidence: float,
    l0: str,
    slot: str | None = None,
) -> RecallHit:
    return RecallHit(
        id=memory_id,
        workspace=workspace,
        path=path,
        line_start=4,
        line_end=6,
        l0=l0,
        l0_source="heading",
        score=0.03,
        confidence=confidence,
        decision="inject",
        match_reason="lexical",
        slot=slot,
    )


def decisions(plan) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {d.name: (d.status, d.reason) for d in plan.segment_decisions}


def test_the_carry_has_its_segments_in_order_within_budget() -> None:
    plan = build_carry(inputs())
    text = plan.text
    assert text.startswith(DEFAULT_DISCIPLINE + "\n\n")  # I1: the discipline's bytes come first
    # Status and next steps first, history last.
    order = [
        text.index("# Handoff ledger (`webshop/handoff/LEDGER.md`)"),
        text.index("# Plan: current state (`webshop/PLAN.md`)"),
        text.index("# Plan history (`webshop/PLAN.md`)"),  # in full: it fits the plan budget
        text.index("# How to read more"),
    ]
    assert order == sorted(order)
    assert ANCHORS_HEADING not in text  # no row repeats a history shown in full
    assert decisions(plan) == {
        "discipline": ("selected", "required"),
        "notice": ("dropped", "empty"),
        "anchors": ("selected", "fits"),
        "ledger": ("selected", "fits"),
        "plan": ("selected", "fits"),
        "standing": ("dropped", "empty"),
        "memory": ("dropped", "empty"),
        "trailer": ("selected", "required"),
    }
    # The plan's own title sits under the carry's heading.
    assert "# Plan: current state (`webshop/PLAN.md`)\n## Webshop checkout rewrite\n" in text
    assert "\n### Current state\n" in text
    # The history fits what the current state leaves of the plan budget: it is carried in
    # full, its headings demoted too, and no anchor row repeats it.
    assert "# Plan history (`webshop/PLAN.md`)\n### History\n- 2026-10-02: split the cart" in text
    assert text.endswith("(paths relative to the memory root).\n")
    assert plan.used_chars == len(text) <= plan.budget_chars
    assert "carryd expand <id>" not in text  # no id in this carry, so nothing to expand


def test_recall_query_is_goal_then_next_steps() -> None:
    query = recall_query(inputs())
    assert query.startswith("Make the refund flow pass all 17 contract tests")
    assert "ERR_REFUND_CURRENCY_MISMATCH" in query
    assert "Stripe times out" not in query
    assert recall_query(inputs(ledger_text=None)) == ""


def test_a_workspace_without_ledger_and_plan_gets_a_short_carry_saying_so() -> None:
    plan = build_carry(inputs(ledger_text=None, plan_text=None))
    assert "> Workspace `webshop` has no handoff ledger (`webshop/handoff/LEDGER.md`) and no " in (
        plan.text
    )
    assert len(plan.text) < 1_500
    assert decisions(plan)["notice"] == ("selected", "required")


def test_plan_without_ledger_says_which_is_missing() -> None:
    plan = build_carry(inputs(ledger_text=None))
    assert "has no handoff ledger (`webshop/handoff/LEDGER.md`) yet." in plan.text
    assert "# Plan: current state" in plan.text


def test_secrets_never_reach_the_carry() -> None:
    ledger = LEDGER.replace(
        "## Goal\n", f"## Goal\nDeploy with key {AWS} and token {GITHUB}.\n\n{PEM}\n\n"
    )
    plan_text = PLAN.replace("## History", f"- token = {GITHUB}\n\n## History")
    memory = (
        hit("mem_" + "1" * 32, "webshop/notes.md", "webshop", 0.9, f"aws key {AWS}"),
        hit("mem_" + "2" * 32, "MEMORY.md", None, 0.9, f"github {GITHUB}"),
    )
    plan = build_carry(
        inputs(ledger_text=ledger, plan_text=plan_text, recall_hits=memory),
        CarryBudgets(memory=MemorySelectionPolicy(min_score=0.5)),
    )
    for secret in SECRETS:
        assert secret not in plan.text
    assert "[redacted:" in plan.text
    assert decisions(plan)["memory"] == ("selected", "fits")
    for secret in SECRETS:
        assert secret not in recall_query(inputs(ledger_text=ledger))


def test_recalled_memory_is_selected_by_s15_and_excludes_what_the_carry_holds() -> None:
    notes = "mem_" + "a" * 32
    default = "mem_" + "b" * 32
    other = "mem_" + "c" * 32
    in_ledger = "mem_" + "d" * 32
    weak = "mem_" + "e" * 32
    slot = "preference:automation-language"  # the explicit conflict key both entries name
    hits = (
        hit(in_ledger, "webshop/handoff/LEDGER.md", "webshop", 0.95, "Goal"),
        hit(default, "MEMORY.md", None, 0.9, "I usually prefer Python for scripts", slot),
        hit(notes, "webshop/notes.md", "webshop", 0.7, "All automation is TypeScript", slot),
        hit(other, "tooling/PLAN.md", "tooling", 0.99, "Migrating shell setup to fish"),
        hit(weak, "webshop/logs/a.md", "webshop", 0.02, "Flaky checkout test"),  # P < gate
    )
    plan = build_carry(inputs(recall_hits=hits))
    reasons = {d.memory_id: (d.reason, d.winner_id) for d in plan.memory_decisions}
    assert reasons == {
        notes: ("selected", None),
        default: ("authority_loser", notes),
        other: ("scope_mismatch", None),
        weak: ("low_confidence", None),
    }
    assert plan.memory_excluded == (in_ledger,)
    assert f'{MEMORY_HEADING}\n<recalled_memory>\n<memory_hit id="{notes}"' in plan.text
    assert 'authority="workspace_override" slot="preference:automation-language"' in plan.text
    assert "prefer Python" not in plan.text


def test_a_tight_total_cuts_the_ledger_by_weight_and_keeps_required() -> None:
    full = build_carry(inputs())
    tight = build_carry(inputs(), CarryBudgets(total_chars=1_500))
    assert len(tight.text) <= 1_500
    assert tight.text.startswith(DEFAULT_DISCIPLINE)
    assert "# How to read more" in tight.text
    assert len(tight.text) < len(full.text)
    assert decisions(tight)["plan"][1] in ("over_budget", "fits", "shrunk")
    assert decisions(tight)["ledger"] == ("selected", "shrunk")
    # A cut leaves a pointer naming the lines it left out; the newest open steps survive.
    assert "… not shown: L" in tight.text
    assert "Using the order total for partial refunds: wrong when a coupon" in tight.text


def test_required_segments_that_do_not_fit_raise() -> None:
    with pytest.raises(PromptBudgetError):
        build_carry(inputs(), CarryBudgets(total_chars=len(DEFAULT_DISCIPLINE)))


def test_a_long_plan_history_keeps_the_newest_dated_rows_within_the_plan_budget() -> None:
    history = "".join(
        f"- 2026-{month:02d}-{day:02d}: step {month}.{day} changed the importer\n"
        for month in (8, 9, 10)
        for day in range(1, 29)
    )
    plan_text = f"# Plan\n\n## Current state\nok\n\n## History\n{history}"
    plan = build_carry(inputs(plan_text=plan_text), CarryBudgets(plan_chars=1_500))
    assert 0 < plan.anchors_shown < plan.anchors_total == 84
    table = plan.text[plan.text.index(ANCHORS_HEADING) :].split("\n# How to read more")[0]
    plan_segment = plan.text[plan.text.index("# Plan: current state") :].split("\n\n#")[0]
    assert len(table) + len(plan_segment) <= 1_500  # the history spends the plan's budget
    assert "2026-10-28: step 10.28" in table  # newest first …
    assert "2026-08-01" not in table
    dates = [line[2:12] for line in table.split("\n") if line.startswith("- 2026-")]
    assert len(dates) == plan.anchors_shown
    assert dates == sorted(dates)  # … shown in document order
    assert f"+{plan.anchors_total - plan.anchors_shown} older entries → webshop/PLAN.md:" in table


def test_duplicate_ledger_titles_use_the_last_ledger() -> None:
    older = "# Handoff ledger 2026-11-01\n\n## Goal\nAn old goal nobody wants.\n\n"
    plan = build_carry(inputs(ledger_text=older + LEDGER))
    assert "An old goal nobody wants" not in plan.text
    assert "Make the refund flow pass" in plan.text
    assert any("ledger titles" in warning for warning in plan.warnings)
    assert "webshop/handoff/LEDGER.md:1-" not in plan.text  # no anchor into the stale ledger


@pytest.mark.parametrize(
    "ledger_text",
    [
        "Some notes\n" + "".join(f"- line {n}: checked host-{n}.\n" for n in range(900)),
        "## Goal\nship it\n\n## Random thoughts\n- a\n",  # one known section of four
        "# Handoff\n## Ideas\n- x\n## Questions\n- y\n",
        "# Übergabe\n## Stand\n- 14/17 Tests grün\n## Sackgassen\n- Cache leeren: verworfen\n",
    ],
)
def test_a_ledger_with_unknown_headings_is_planned_not_flat(ledger_text: str) -> None:
    """Issue 20 item 1: the built-in section names are weights, not a gate."""
    plan = build_carry(inputs(ledger_text=ledger_text), CarryBudgets(total_chars=6_000))
    assert plan.fallback is None
    assert len(plan.text) <= 6_000
    assert "# Handoff ledger (`webshop/handoff/LEDGER.md`)" in plan.text
    last = [line for line in ledger_text.strip().split("\n") if line.strip()][-1]
    assert last in plan.text  # the newest item is kept whole
    if len(ledger_text) > 6_000:
        assert "… not shown: L" in plan.text


def test_two_known_sections_are_planned_and_unknown_ones_are_named() -> None:
    ledger_text = "## 目标\n- ship\n\n## 决策\n- use Kafka\n\n## 踩坑\n- ❌ Redis — lost acks\n"
    plan = build_carry(inputs(ledger_text=ledger_text))
    assert plan.fallback is None
    assert plan.unrecognised_sections == ("决策",)
    assert "## 决策\n- use Kafka" in plan.text  # carried under its own heading


def test_an_invalid_sidecar_is_a_warning_not_an_error() -> None:
    plan = build_carry(inputs(sidecar_text="{not json"))
    assert plan.text == build_carry(inputs()).text
    assert any(warning.startswith("sidecar:") for warning in plan.warnings)


def test_rendering_is_deterministic() -> None:
    hits = (hit("mem_" + "a" * 32, "webshop/notes.md", "webshop", 0.7, "TypeScript"),)
    first = build_carry(inputs(recall_hits=hits))
    assert build_carry(inputs(recall_hits=hits)) == first


INLINE = CarryBudgets(total_chars=9_000)  # the SessionStart variant's budget


def test_the_inline_variant_never_mentions_what_it_left_out() -> None:
    plan_text = "# Webshop checkout rewrite\n\n## Current state\n- Checkout moved.\n"  # no history
    plan = build_carry(inputs(plan_text=plan_text), INLINE)
    assert ANCHORS_HEADING not in plan.text and "mem_" not in plan.text
    assert "carryd expand" not in plan.text  # no id to expand: neither trailer nor discipline
    assert "below" not in DEFAULT_DISCIPLINE
    assert decisions(plan)["anchors"] == ("dropped", "empty")


def test_the_inline_variant_puts_status_and_next_steps_before_history() -> None:
    big = "".join(f"- [ ] step {number}: " + "details " * 20 + "\n" for number in range(60))
    heading = "## Progress and next steps\n"
    ledger_text = LEDGER.replace(heading, heading + big)
    plan = build_carry(inputs(ledger_text=ledger_text), INLINE)
    text = plan.text
    assert len(text) <= 9_000
    assert text.index("# Handoff ledger") < text.index("# How to read more")
    assert "- [ ] step 59:" in text  # the newest open step
    if ANCHORS_HEADING in text:
        assert text.index("# Handoff ledger") < text.index(ANCHORS_HEADING)
    for block in text.split("\n\n"):  # no empty segment: every "# " heading has text under it
        assert "\n" in block.strip() or not block.startswith("# "), block


def test_a_plan_that_is_only_a_title_is_no_segment() -> None:
    plan = build_carry(inputs(plan_text="# Webshop\n\n## History\n- 2026-10-02: split the cart\n"))
    assert "# Plan: current state" not in plan.text
    assert decisions(plan)["plan"] == ("dropped", "empty")
    assert "# Plan history (`webshop/PLAN.md`)\n### History\n- 2026-10-02: split the cart\n" in (
        plan.text
    )  # the history is still carried


def test_anchor_rows_only_for_what_is_not_in_full_and_never_a_bare_heading() -> None:
    plan_text = (
        "# Plan\n\n## Current state\n- ship 2.3\n\n## History\n"
        "### 2026-09-01 v2.2.5\n- fixed the importer; moved CI to uv\n\n### v2.2.4\n"
        "- 2026-08-20: dropped Python 3.9\n"
    )
    # A history that fits the plan budget is carried in full: a row would only repeat it.
    plan = build_carry(inputs(plan_text=plan_text))
    assert ANCHORS_HEADING not in plan.text
    assert "#### 2026-09-01 v2.2.5\n- fixed the importer; moved CI to uv" in plan.text
    # One that does not fit is anchored (a long history: see the next test), one dated row
    # per entry — never a bare heading, never the current state or the ledger.
    rows = [row.l0 for row in plan_history_rows(inputs(plan_text=plan_text))[0]]
    assert rows == [
        "2026-09-01: fixed the importer; moved CI to uv",  # dated by its heading
        "2026-08-20: dropped Python 3.9",
    ]


def test_a_ledger_that_does_not_fit_names_the_ids_that_hold_what_it_cut() -> None:
    big = refund_attempts(80)
    ledger_text = with_tried(big)
    plan = build_carry(inputs(ledger_text=ledger_text))
    ledger = plan.text.split("# Handoff ledger (`")[1].split("\n# Plan")[0]
    assert decisions(plan)["ledger"] == ("selected", "shrunk")
    assert len(plan.text) <= plan.budget_chars
    assert "attempt 79: tried variant 79" in ledger  # the newest first
    # every attempt keeps its line (with its reason) or is named by a pointer to its lines
    for n in range(80):
        assert f"attempt {n}:" in ledger or "… not shown: L" in ledger
    assert plan.text.endswith(
        "- The full ledger is `webshop/handoff/LEDGER.md` and the full plan is `webshop/PLAN.md` "
        "(paths relative to the memory root).\n"
    )
    assert "carryd expand" not in plan.text  # it names no id: no offer to expand one


def test_recall_queries_are_short_goal_status_and_each_open_step() -> None:
    assert recall_queries(inputs()) == (
        "Make the refund flow pass all 17 contract tests, then delete `lib/payments/legacy.js`.",
        "Refund flow: contract tests 14/17 passing.",  # the current status line, not the ✅ one
        "Fix `ERR_REFUND_CURRENCY_MISMATCH` in the multi-currency contract test.",  # newest first
        "Compute partial refunds from line items, not from the order total.",
    )
    assert recall_queries(inputs(ledger_text=None)) == ()
    secret = LEDGER.replace("## Goal\n", f"## Goal\nDeploy with key {AWS}. Then more.\n\n")
    assert all(AWS not in query for query in recall_queries(inputs(ledger_text=secret)))


def test_root_level_defaults_reach_the_carry_whole_and_over_budget_ones_are_named() -> None:
    """Issue 10 item 5: MEMORY.md and notes/ entries are standing candidates with their whole
    text (a rule list is more than its L0); a recall hit on one only lends its confidence;
    a default the memory budget cannot hold is named with its id and lines."""
    from carryd.index.entries import parse_entries

    memory = "# standing rules\n\n- Talk to me in Chinese.\n- Always `uv run`, never global pip.\n"
    notes = "# prod\n" + "- Never touch prod from a laptop; PR to infra-gitops instead.\n" * 30
    defaults = (*parse_entries("MEMORY.md", memory), *parse_entries("notes/prod.md", notes))
    rules, prod = defaults[0].id, defaults[1].id
    hits = (hit(rules, "MEMORY.md", None, 0.3, "standing rules — Talk to me in Chinese."),)
    policy = MemorySelectionPolicy(min_score=0.5, top_k=5, max_chars=1_000, max_tokens=800)
    budgets = dataclasses.replace(CarryBudgets(), memory=policy)
    plan = build_carry(inputs(root_defaults=defaults, recall_hits=hits), budgets)
    reasons = {d.memory_id: d.reason for d in plan.memory_decisions}
    assert reasons == {rules: "selected", prod: "char_budget_exceeded"}
    # A standing default is the user's own Markdown under its file's name: no wrapper, no id.
    assert (
        f"{STANDING_HEADING}\n## standing rules (`MEMORY.md:1-4`)\n- Talk to me in Chinese.\n"
        "- Always `uv run`, never global pip.\n"
    ) in plan.text
    assert "<memory_hit" not in plan.text
    assert f"{UNSHOWN_DEFAULTS} prod (notes/prod.md:1-31)" in plan.text  # title and lines
    assert build_carry(inputs(root_defaults=defaults, recall_hits=hits), budgets) == plan


def test_the_trailer_names_the_root_in_every_command() -> None:
    root = "/home/me/my memory"
    note = hit("mem_" + "a" * 32, "webshop/notes/refunds.md", "webshop", 0.9, "refund notes")
    plan = build_carry(inputs(root=root, recall_hits=(note,)))
    trailer = plan.text[plan.text.index("# How to read more") :]
    assert (
        "`carryd recall \"<question>\" --workspace webshop --root '/home/me/my memory'`" in trailer
    )
    assert "`carryd expand <id> --root '/home/me/my memory'`" in trailer
    assert root not in plan.text[: -len(trailer)]
    assert build_carry(inputs(root=root, recall_hits=(note,))) == plan  # byte-stable


def _flat_size(carry_inputs: CarryInputs) -> int:
    return len(
        build_flat_carry(
            FlatInputs(
                workspace=carry_inputs.workspace,
                discipline=carry_inputs.discipline,
                plan_text=carry_inputs.plan_text,
                ledger_text=carry_inputs.ledger_text,
                plan_path=carry_inputs.plan_path,
                ledger_path=carry_inputs.ledger_path,
            )
        ).text
    )


def _defaults(count: int, lines: int = 1) -> tuple[object, ...]:
    from carryd.index.entries import parse_entries

    return tuple(
        entry
        for number in range(count)
        for entry in parse_entries(
            f"notes/rules{number:02d}.md",
            f"# rules {number}\n\n- Rule {number}: never deploy on a Friday, number {number}; "
            "refunds and webhooks wait for Monday.\n"
            + "".join(
                f"- and rule {number}.{extra}: keep the change log short\n"
                for extra in range(1, lines)
            ),
        )
    )


def test_a_carry_costs_at_most_flat_injection_plus_its_slack_for_the_same_files() -> None:
    big = refund_attempts(80)
    long = inputs(ledger_text=with_tried(big))
    long = dataclasses.replace(long, root_defaults=_defaults(3))
    plan = build_carry(long)
    flat = _flat_size(long)
    # the flat injection's cost (plus its slack) is the ceiling
    assert plan.budget_chars == int(flat * (1 + COST_SLACK)) < 18_000
    assert COST_SLACK <= 0.1  # issue 20: ③'s characters ≤ ①'s + 10%
    assert len(plan.text) <= plan.budget_chars
    # Within it the standing rules come first; the ledger's oldest attempts pay for them
    # (one-line dead ends, then the pointer) and the newest stay whole.
    assert all(f"Rule {n}: never deploy on a Friday" in plan.text for n in range(3))
    assert "attempt 79: tried variant 79" in plan.text
    # A short hand-off may cost its framing plus the memory budget: the rules still fit.
    short = dataclasses.replace(inputs(), root_defaults=_defaults(3))
    small = build_carry(short)
    assert _flat_size(short) < small.budget_chars <= 18_000
    assert all(f"Rule {n}: never deploy" in small.text for n in range(3))
    assert "Make the refund flow pass all 17 contract tests" in small.text


def test_standing_rules_give_way_to_the_ledgers_dead_ends_under_a_tight_budget() -> None:
    attempts = "".join(
        f"- ❌ attempt {n}: tried queue variant {n} — failed, the webhook retried.\n"
        for n in range(20)
    )
    tight = dataclasses.replace(
        inputs(ledger_text=with_tried(attempts)),
        root_defaults=_defaults(6, lines=4),
    )
    plan = build_carry(tight, CarryBudgets(total_chars=3_800))
    assert len(plan.text) <= plan.budget_chars <= 3_800
    for n in range(20):  # every dead end keeps its line …
        assert f"attempt {n}: tried queue variant {n}" in plan.text, n
    # … the last defaults give way, rule by rule: each note shows its first rule before any
    # shows its second, and every note not shown is named.
    shown = [n for n in range(6) if f"Rule {n}: never deploy" in plan.text]
    assert shown == list(range(len(shown))) and 0 < len(shown) < 6
    assert not any(f"rule {n}.1:" in plan.text for n in range(6) if n not in shown)
    assert UNSHOWN_DEFAULTS in plan.text
    for entry in tight.root_defaults[len(shown) :]:
        title = entry.heading_path[-1]
        name = entry.path.removeprefix("notes/").removesuffix(".md")
        assert f"{title} ({entry.path}:{entry.line_start}-{entry.line_end})" in plan.text or (
            re.search(rf"notes/\{{[^}}]*\b{name}\b", plan.text)
        ), entry.path
    assert decisions(plan)["standing"] == ("selected", "shrunk")


def test_what_a_carry_holds_does_not_depend_on_the_roots_path_length() -> None:
    big = "".join(f"- ❌ attempt {n}: tried variant {n} — failed, timed out.\n" for n in range(200))
    long = inputs(ledger_text=with_tried(big))
    long = dataclasses.replace(long, root_defaults=_defaults(3, lines=4))
    short_root, long_root = "/m", "/home/someone/with/a/much/longer/path/to/their/memory"
    short = build_carry(dataclasses.replace(long, root=short_root))
    longer = build_carry(dataclasses.replace(long, root=long_root))
    assert decisions(short)["ledger"] == ("selected", "shrunk")  # the ceiling binds
    assert longer.text == short.text.replace(short_root, long_root)


def test_a_smaller_carry_keeps_every_failed_attempt_and_names_the_rules_it_leaves_out() -> None:
    attempts = "".join(
        f"- ❌ attempt {n}: tried queue variant {n} — failed: the webhook retried while the "
        f"queue held {n} jobs. We then read the worker logs for an hour and found nothing "
        "else worth noting, and the refund ran twice.\n"
        for n in range(12)
    )
    base = dataclasses.replace(
        inputs(ledger_text=with_tried(attempts)),
        root_defaults=_defaults(6, lines=6),
    )
    full = build_carry(base, CarryBudgets(total_chars=12_000, free_chars=12_000))
    cut = build_carry(base, CarryBudgets(total_chars=4_200))
    rules = [f"Rule {n}: never deploy" for n in range(6)]
    assert sum(rule in cut.text for rule in rules) < sum(rule in full.text for rule in rules)
    hidden = [
        range(int(a), int(b or a) + 1)
        for a, b in re.findall(r"… not shown: L(\d+)(?:-(\d+))?", cut.text)
    ]
    lines = base.ledger_text.split("\n") if base.ledger_text else []
    for n in range(12):  # a dead end is never lost: shown with its reason, or under a pointer
        assert f"attempt {n}: tried queue variant {n}" in full.text
        line = next(i for i, text in enumerate(lines, 1) if f"attempt {n}:" in text)
        assert f"attempt {n}: tried queue variant {n} — failed: the webhook" in cut.text or any(
            line in span for span in hidden
        ), n
    for entry in base.root_defaults:  # a rule not shown is named by its title or its path
        name = entry.path.removeprefix("notes/").removesuffix(".md")
        assert entry.text.split("\n- ")[1][:20] in cut.text or (
            f"{entry.heading_path[-1]} ({entry.path}:" in cut.text
            or re.search(rf"notes/\{{[^}}]*\b{name}\b", cut.text)
        ), entry.path


def test_a_short_hand_off_is_not_cut_below_what_a_host_injects_anyway() -> None:
    # Rules that cost more than the ledger: trimmed to flat's cost, the ledger would pay.
    short = dataclasses.replace(inputs(), root_defaults=_defaults(8, lines=6))
    trimmed = build_carry(short)
    free = build_carry(short, CarryBudgets(free_chars=9_000))
    assert decisions(trimmed)["standing"][1] == "shrunk" or decisions(trimmed)["ledger"][1] == (
        "shrunk"
    )
    # Under the SessionStart budget a host injects the carry whole: nothing is cut.
    assert len(free.text) <= free.budget_chars == 9_000
    assert {decisions(free)[name] for name in ("ledger", "plan", "standing")} == {
        ("selected", "fits")
    }
    assert all(f"Rule {n}: never deploy" in free.text for n in range(8))
