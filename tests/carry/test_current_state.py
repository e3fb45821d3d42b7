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
        "- Looked at the Envoy chart values and the service annotations once more today.\n\n"
        + log
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
