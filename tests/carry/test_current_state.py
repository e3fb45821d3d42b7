"""Issue 20: where things stand and what was decided survive a tight cut, in any words.

A section dated with the file's newest date and outside any log is the current state; the
status section and the open next steps are kept first; a decision holds however old its entry;
an attempt under its own numbered heading keeps its reason even when its opening does not fit;
the cut names what it leaves out by the lines of the file its heading names.
"""

from __future__ import annotations

import re

from carryd.carry.outline import parse_outline
from carryd.carry.outline_pack import pack_outline

PATH = "ws/handoff/LEDGER.md"


def _filler_log(count: int, start: int = 1) -> str:
    return "\n".join(
        f"## 2026-10-{n:02d}\n- Moved batch {n} of the jobs; runner pool r{n} at {n * 3}% load, "
        f"queue p50 {40 + n} s, cache hit {50 + n}% on `build:x86:{n}`.\n"
        for n in range(start, start + count)
    )


def test_a_section_dated_with_the_newest_date_is_kept_as_the_current_state() -> None:
    # Unknown words in Chinese; the date makes it current, beside two numbered headings that
    # are no log ("最近 7 天", "剩下的 18 个").
    ledger = (
        "# 交接本\n\n## 接手先看（2026-11-26 晚更新）\n"
        "- 迁移进度：142 / 171 个 job 已迁移；剩 18 个。\n"
        "- 相关 MR：!2317，draft。\n\n"
        "## 各阶段耗时（最近 7 天中位数）\n- build 12 分钟，test 9 分钟，package 4 分钟。\n\n"
        "## 剩下的 18 个 job\n- fw-release-sign、fw-nightly-arm64 以及其他 16 个。\n\n"
        "## 流水账\n"
        + "".join(
            f"- 11-{n:02d} 迁移第 {n} 批，runner r{n} 负载 {n * 3}%，缓存命中 {50 + n}%。\n"
            for n in range(1, 26)
        )
    )
    outline = parse_outline(ledger, PATH)
    current = [item for item in outline.items if item.section == "status"]
    assert [item.line_start for item in current] == [4, 5]
    cut = pack_outline(outline, 900, path=PATH)
    assert "142 / 171" in cut and "!2317" in cut


def test_open_next_steps_and_the_status_come_before_old_entries_facts() -> None:
    ledger = (
        "# Ledger\n## Status\n- PROD: nothing deployed yet; PR #642 waits for Jorge's OK.\n\n"
        + _filler_log(25)
        + "\n## Next\n"
        + "".join(f"- [x] Done step {n} with `tool-{n}`.\n" for n in range(6))
        + "- [ ] Ask Marta which occurrence finance uses for the repeated hour.\n"
        + "- [ ] Backfill PROD only after Jorge's OK in #data-backfill.\n"
    )
    cut = pack_outline(parse_outline(ledger, PATH), 1200, path=PATH)
    assert "nothing deployed yet" in cut
    assert "which occurrence finance uses" in cut and "only after Jorge's OK" in cut


def test_an_old_decision_outweighs_an_old_entry_of_the_same_size() -> None:
    log = _filler_log(20)
    ledger = (
        "# Ledger\n## 2026-09-30\n- DECISION (with Rafael): the NLB stays in terraform, "
        "the Envoy Service is ClusterIP behind a TargetGroupBinding.\n"
        "- Looked at the Envoy chart values and the service annotations once more today.\n\n" + log
    )
    cut = pack_outline(parse_outline(ledger, PATH), 2600, path=PATH)
    assert "the NLB stays in terraform" in cut
    assert "Looked at the Envoy chart values" not in cut  # its sibling, as old, gives way


def test_an_attempt_under_its_numbered_heading_keeps_its_reason_alone() -> None:
    attempts = "\n".join(
        f"### Attempt {n} — tuning knob {n}\n"
        f"Changed knob {n} from {n} to {n * 2} on the staging consumer and watched the lag for "
        f"an hour on the dashboard; the first numbers looked promising at the evening peak. "
        f"It was not the knob: the consumer {n} does not join the group protocol {n}.\n"
        for n in range(1, 31)
    )
    ledger = "# Ledger\nAppend-only.\n\n" + attempts
    cut = pack_outline(parse_outline(ledger, PATH), 4000, path=PATH)
    kept = [n for n in range(1, 31) if f"does not join the group protocol {n}." in cut]
    assert len(kept) >= 15  # whole, about 12 would fit
    reason_alone = [line for line in cut.split("\n") if line.startswith("… It was not the knob")]
    assert reason_alone  # the heading says what was tried; the reason stands alone
    for n in kept:
        assert f"### Attempt {n} — tuning knob {n}" in cut


def test_what_is_left_out_is_named_by_its_lines() -> None:
    ledger = "# Ledger\n" + _filler_log(40)
    cut = pack_outline(parse_outline(ledger, PATH), 1500, path=PATH)
    pointers = re.findall(r"^… not shown: L(\d+)(?:-(\d+))?$", cut, re.MULTILINE)
    assert pointers
    shown_or_named: set[int] = set()
    for start, end in pointers:
        shown_or_named.update(range(int(start), int(end or start) + 1))
    source = ledger.split("\n")
    for number, line in enumerate(source, start=1):
        if line.strip() and number not in shown_or_named:
            assert line in cut, (number, line)


def test_work_left_half_done_in_the_newest_entry_is_kept_whole_in_any_language() -> None:
    # Newest session first; its uncommitted, half-done change is where things stand, and it
    # is long: its later sentences (what is missing) must come with it, before old entries.
    half_done = {
        "es": "- A medias (SIN COMMIT): `App.kt` implementa `ImageLoaderFactory`. Falta borrar "
        "el `@Provides` de `CoilModule`; hay DOS instancias hasta entonces. No medir aún.",
        "en": "- WIP (uncommitted): `App.kt` now implements `ImageLoaderFactory`. Still to do: "
        "drop the `@Provides` in `CoilModule`; there are TWO instances until then.",
        "ja": "- 作業中（未コミット）：`App.kt` が `ImageLoaderFactory` を実装。`CoilModule` の "
        "`@Provides` を消すまでインスタンスが二つある。まだ計測しない。",
    }
    for language, item in half_done.items():
        sessions = "\n".join(_filler_log(1, start=n) for n in range(20, 0, -1))
        ledger = f"# Ledger\n\n## 2026-11-30\n{item}\n\n{sessions}\n"
        cut = pack_outline(parse_outline(ledger, PATH), 900, path=PATH)
        assert item in cut, language


def test_a_short_list_of_dated_figures_keeps_its_newest_and_the_one_marked_current() -> None:
    # four dated figures, oldest first: the oldest is the wordiest, the newest is a local run,
    # the one before it is the figure the author marks as the current one
    numbers = (
        "## Numbers\n"
        "- 2026-09-02: 36/500 = 7.2% on main @ 5d1e0b7, runners 01-12, shards 10, infra 4.\n"
        "- 2026-09-16: 31/1,000 = 3.1% on main @ a3f9c21.\n"
        "- 2026-09-30: 11/1,200 = 0.9% on main @ c7d42e9 — **current CI number**\n"
        "- 2026-10-07: 0/400 locally on the branch.\n"
    )
    ledger = "# Ledger\n\n" + _filler_log(20) + "\n" + numbers
    outline = parse_outline(ledger, PATH)
    dated = [item for item in outline.items if item.text.startswith("- 2026-")]
    assert [item.recency for item in dated] == sorted(item.recency for item in dated)
    assert dated[0].recency < dated[-1].recency  # the dates say which is newest
    cut = pack_outline(outline, 700, path=PATH)
    assert "0.9% on main @ c7d42e9" in cut, cut
    assert "36/500" not in cut or "0/400" in cut, cut


def test_a_working_tree_heading_is_where_things_stand() -> None:
    ledger = (
        "# Ledger\n\n" + _filler_log(25) + "\n## Working tree state at end of S12 (current edit)\n"
        "Branch io/order-by, 1 commit ahead of main (4e8b6d0), pushed, PR not opened yet.\n"
        "- `internal/store/queries/pending.sql`: ORDER BY created_at, id\n"
    )
    outline = parse_outline(ledger, PATH)
    assert {item.section for item in outline.items if "pending.sql" in item.text} == {"status"}
    cut = pack_outline(outline, 900, path=PATH)
    assert "PR not opened yet" in cut and "ORDER BY created_at, id" in cut, cut


def test_a_table_with_a_superseded_row_is_not_superseded_and_keeps_its_current_rows() -> None:
    table = (
        "## Decisions\n| id | decision | state |\n|---|---|---|\n"
        "| D1 | pin redpanda v23.3.5 | kept |\n"
        "| D2 | quarantine via `-skip` (PR #4479), rerun twice, notify #ci-flakes"
        " | (superseded) by D3 |\n"
        "| D3 | the integration job runs on every PR, non-required, never skipped | current |\n"
        "| D4 | gotestsum --rerun-fails (attempt 1), with `--packages ./...` | REVERTED |\n"
    )
    ledger = "# Ledger\n\n" + table + "\n" + _filler_log(4)
    outline = parse_outline(ledger, PATH)
    [decisions] = [item for item in outline.items if item.text.startswith("| id")]
    assert decisions.state == "plain"
    cut = pack_outline(outline, 500, path=PATH)
    assert "non-required, never skipped" in cut, cut


def test_a_heading_over_work_in_progress_is_where_things_stand_in_any_language() -> None:
    for heading in (
        "## 作業中のファイル（コンテキストが切れたらここから）",
        "## WIP",
        "## A medias",
    ):
        ledger = (
            "# Ledger\n\n"
            + _filler_log(25)
            + f"\n{heading}\n- `analysis/synonyms_v14.txt`: 26 of 38 lines written (#38).\n"
        )
        outline = parse_outline(ledger, PATH)
        [edit] = [item for item in outline.items if "synonyms_v14" in item.text]
        assert edit.section == "status", heading
        assert "26 of 38 lines" in pack_outline(outline, 700, path=PATH), heading


def test_work_in_progress_in_an_old_entry_is_not_where_things_stand() -> None:
    ledger = (
        "# Ledger\n\n## 2026-10-01\n### EDITANDO AGORA (não commitado)\n"
        "- `janela.go` pela metade.\n"
        + "\n## 2026-10-02\n- Terminei `janela.go`, commit b71e0d4.\n"
        + "\n## 2026-10-03\n- Varredura de 1 dia em hml: 6 min 40 s.\n"
    )
    outline = parse_outline(ledger, PATH)
    [old] = [item for item in outline.items if "pela metade" in item.text]
    assert old.section is None
