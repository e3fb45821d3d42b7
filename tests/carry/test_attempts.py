"""Issue 20: a failed attempt written as a paragraph keeps its decisive reason.

The reason is read from structure, in any language: what follows the attempt's first
sentence, later sentences before earlier ones (the decisive reason comes after a red herring),
facts (numbers, ids, code) — cue words are a bonus, never the gate. Sentences are never cut
inside, and the state of an item comes from its own marks where they mean a state.
"""

from __future__ import annotations

import re

from carryd.carry.marks import item_state
from carryd.carry.outline import parse_outline
from carryd.carry.outline_pack import pack_outline
from carryd.carry.plan import split_plan
from carryd.carry.units import cause_units, reason_units, units_of

PATH = "ws/handoff/LEDGER.md"

# Each attempt: what was tried, a red herring (with a "but"), filler, the decisive reason last.
ATTEMPTS = {
    "en": (
        "- Attempt {n}: raised the client pool to {p} connections on replica r{n}.\n"
        "  It looked like the pool was the limit, but the timeouts stayed at 30 s.\n"
        "  Load graphs for that hour are in the dashboard.\n"
        "  The proxy caps every client at default_pool_size = {n}0 in pgbouncer.ini."
    ),
    "zh": (
        "- 尝试 {n}：把 runner 并发调到 {p}。\n"
        "  看起来是并发不够，但是排队时间没变。\n"
        "  当天的监控截图放在群里了。\n"
        "  真正的瓶颈是 NFS 上 sccache 的锁 lock-{n}，单个 key 同时只能写一个。"
    ),
    "ja": (
        "- 試した {n}: ワーカーを {p} 台に増やした。\n"
        "  台数の問題に見えたが、待ち時間は同じだった。\n"
        "  当日のグラフは共有フォルダにある。\n"
        "  実際はセッションが Redis のシャード shard-{n} に集中していて、そこが詰まっていた。"
    ),
    "es": (
        "- Intento {n}: subir el timeout del DAG a {p} h.\n"
        "  Parecía un problema de tiempo, pero el backfill seguía cortándose.\n"
        "  Los registros de esa noche están en el bucket.\n"
        "  El almacén XS-{n} corta cualquier consulta a los 14 400 s y no se puede cambiar."
    ),
}


def attempts_ledger() -> tuple[str, list[str]]:
    """A ledger of eight paragraph attempts in four languages (newest last) between a status,
    notes and next steps; and each attempt's decisive line."""
    items, decisive = [], []
    for n in range(1, 9):
        language = list(ATTEMPTS)[n % 4]
        text = ATTEMPTS[language].format(n=n, p=n + 40)
        items.append(text)
        decisive.append(text.split("\n")[-1].strip())
    status = "".join(f"- Service s{n}: moved, p99 {170 + n} ms, 0 errors.\n" for n in range(6))
    notes = "".join(f"- Host h{n} runs kernel 6.{n} and has 64 GB of memory.\n" for n in range(12))
    ledger = (
        f"# Hand-off ledger\n\n## Status\n{status}\n## Notes\n{notes}\n"
        "## Tried approaches and failure reasons\n" + "\n".join(items) + "\n\n"
        "## Next steps\n- [ ] move the billing service.\n- [ ] ask Ana about the cut-over.\n"
    )
    return ledger, decisive


def test_paragraph_attempts_keep_their_decisive_reason_in_every_language() -> None:
    ledger, decisive = attempts_ledger()
    outline = parse_outline(ledger, PATH)
    # Room for every attempt's floor (after the status), not for every attempt whole.
    budget = int(len(ledger) * 0.75)
    cut = pack_outline(outline, budget, path=PATH)
    assert len(cut) <= budget
    for line in decisive:
        assert line in cut, line
    assert "- [ ] move the billing service." in cut  # attempts do not crowd out the next step
    # With less room the oldest attempts give way whole, under a pointer: an attempt shown
    # always shows its decisive reason, never what was tried alone.
    tight = pack_outline(outline, int(len(ledger) * 0.6), path=PATH)
    hidden = [
        range(int(a), int(b or a) + 1)
        for a, b in re.findall(r"… not shown: L(\d+)(?:-(\d+))?", tight)
    ]
    for number, line in enumerate(decisive, start=1):
        item = next(i for i in outline.items if f" {number + 40}" in i.text.split("\n")[0])
        if item.text.split("\n")[0].strip() in tight:
            assert line in tight, (number, tight)
        else:
            assert any(item.line_start in span for span in hidden), (number, tight)


def test_the_newest_attempts_are_kept_whole() -> None:
    ledger, _ = attempts_ledger()
    outline = parse_outline(ledger, PATH)
    failed = [item for item in outline.items if item.state == "failed"]
    for share, count in ((0.7, 1), (0.9, 3)):
        cut = pack_outline(outline, int(len(ledger) * share), path=PATH)
        for item in failed[-count:]:
            for line in item.text.split("\n"):
                assert line.strip() in cut, (share, line)


def test_the_reason_is_read_from_structure_not_from_cue_words() -> None:
    for language, template in ATTEMPTS.items():
        units = units_of(template.format(n=3, p=43))
        chosen = [units[index].text for index in reason_units(units)]
        assert any("3" in piece and piece == units[-1].text for piece in chosen), language
    # A closing verdict lends its weight to the sentence before it.
    verdict = units_of("- Theory: a worker panics after charging. Grepped logs: 0 panics. Dropped.")
    assert verdict[reason_units(verdict)[0]].text.startswith("Grepped logs: 0 panics")


def test_a_long_attempt_keeps_its_cause_and_result_within_the_cap() -> None:
    text = (
        "- Tried the cooperative-sticky assignor on staging. "
        + "The rebalance storm looked like the trigger. " * 6
        + "Duplicates stayed at 41 in 20,000, so the consumer is not where they come from."
    )
    units = units_of(text)
    chosen = cause_units(units, 260)
    shown = [units[index].text for index in chosen]
    assert chosen[0] == 0 and shown[-1].startswith("Duplicates stayed at 41")
    assert sum(len(piece) + 1 for piece in shown) <= 260


def test_no_unit_ends_inside_a_sentence() -> None:
    text = "- Tried e.g. the v2 export vs. the old one. Both drop rows, i.e. the bug is upstream."
    pieces = [unit.text.strip() for unit in units_of(text)]
    assert pieces == [
        "- Tried e.g. the v2 export vs. the old one.",
        "Both drop rows, i.e. the bug is upstream.",
    ]


def test_a_word_inside_an_item_does_not_mark_its_state() -> None:
    # "no longer" / 廃止 describe something inside the text; they do not supersede the item.
    assert item_state("- Reason for 44: the UPDATE's claimed_by no longer matches → lost.") != (
        "superseded"
    )
    assert item_state("- 9 件中: 未完 2 件（F-03 CSP enforce, F-06 HS256 廃止）。") == "plain"
    assert item_state("- Obsolete: the old export path") == "superseded"
    # ❌ in a tracker's cells is a status; a table is of attempts when its header says so.
    tracker = "| ID | PR | prod |\n|---|---|---|\n| F-07 | #12 | ❌ 12/01 |\n| F-08 | #19 | ✅ |\n"
    attempts = "| Attempt | result | why |\n|---|---|---|\n| -dontobfuscate | ❌ | not R8 |\n"
    states = [item.state for item in parse_outline(f"## Tracker\n{tracker}").items]
    assert states == ["plain"]
    assert [item.state for item in parse_outline(f"## Notes\n{attempts}").items] == ["failed"]


def test_a_dated_status_section_is_the_current_state_not_a_log_entry() -> None:
    ledger = "# Ledger\n\n## Estado (reescrito el 2026-11-26)\n- PROD: nada desplegado todavía.\n"
    ledger += "".join(f"\n## Día {n} — 2026-11-{n:02d}\n- trabajo {n}.\n" for n in range(1, 6))
    outline = parse_outline(ledger, PATH)
    status = outline.items[0]
    assert not status.in_log and status.recency == 1.0 and status.weight > 1.0
    assert len(outline.log_entries) == 5


def test_headings_numbered_in_any_words_make_a_log() -> None:
    ledger = "# Ledger\n" + "".join(
        f"\n### Attempt {n} — step {n}\nDid thing {n}.\n" for n in range(1, 5)
    )
    outline = parse_outline(ledger, PATH)
    assert len(outline.log_entries) == 4
    recency = [item.recency for item in outline.items]
    assert recency == sorted(recency) and recency[-1] == 1.0  # newest last, by number
    german = "## Versuch 1\nx\n## Versuch 2\ny\n## Versuch 3\nz\n"
    assert len(parse_outline(german).log_entries) == 3


def test_experiment_ids_as_headings_make_a_log_newest_last() -> None:
    # "### EXP-01" … "### EXP-34" (an ML ledger): numbered entries, the oldest first; an
    # entry's suffix ("EXP-03b") ranks it right after its number.
    names = ["EXP-01", "EXP-02", "EXP-03", "EXP-03b", "EXP-04", "EXP-34"]
    ledger = "# Ledger\n" + "".join(
        f"\n### {name}\n- result: {i}\n" for i, name in enumerate(names)
    )
    outline = parse_outline(ledger, PATH)
    assert len(outline.log_entries) == len(names)
    recency = [item.recency for item in outline.items]
    assert recency == sorted(recency) and recency[0] == 0.0 and recency[-1] == 1.0
    assert len(set(recency)) == len(names)


def test_the_reason_after_a_ruled_out_red_herring_beats_the_symptoms_figures() -> None:
    text = (
        "Canary with the poll loop on its own thread. Looked great for 6 hours. "
        "Then the job flagged 1,204 orders missing between offsets 88,412,907 and 88,414,111. "
        "It was not the new thread: the build still had `DEBUG_AUTOCOMMIT=1`, so offsets were "
        "committed on a timer ahead of our watermark. Incident INC-5530."
    )
    units = units_of(text)
    best = reason_units(units, limit=1)[0]
    assert units[best].text.startswith("It was not the new thread")


def test_an_attempt_named_before_its_outcome_is_an_attempt_in_any_language() -> None:
    for text in (
        "  - `react-native-edge-to-edge` 라이브러리도 시도 → 경고 폭탄",
        "  - (b) hot-updater 를 S3 + Lambda 로 세팅 → 보안팀에서 반려",
        "- we tried the replica -> it forks too",
        "- 把缓存放到 NFS 上，被安全组驳回",
    ):
        assert item_state(text) == "failed", text
    assert item_state("- the plan moved → see PLAN.md") == "plain"


def test_a_plans_numbered_options_are_not_its_history() -> None:
    plan = "# Plan\n\n## Options\n" + "".join(
        f"\n### Option {n}\nKeep the {n}-node layout and measure p99.\n" for n in range(1, 5)
    )
    assert split_plan(plan).history_blocks == ()


def test_an_item_that_labels_a_cause_is_kept_like_a_dead_end() -> None:
    for text in (
        "- 사고 기록: 스택트레이스가 전부 난독화. 원인: CI 에서 매핑 업로드 태스크가 안 붙음.",
        "- First gRPC test cut the stream at 5 min.\n  Reason: Envoy streamIdleTimeout default 5m.",
        "- 缓存命中率 0%。原因：runner id 不同，缓存 key 全不一样。",
        "- El backfill se cortó. Causa: timeout de 14 400 s en XS.",
    ):
        assert item_state(text) == "failed", text


def test_dated_paragraphs_written_newest_first_are_read_newest_first() -> None:
    ledger = "".join(
        f"{day:02d}.11.2026 — Session on the export. Tried batch size {day * 10}. "
        f"It failed because lock-{day} is held by the nightly job.\n\n"
        for day in range(28, 8, -1)
    )
    outline = parse_outline(ledger, PATH)
    assert not outline.headings and len(outline.items) == 20
    assert outline.items[0].recency == 1.0 and outline.items[-1].recency < 0.5
    cut = pack_outline(outline, 1_200, path=PATH)
    assert outline.items[0].text in cut  # the newest, at the top, whole
    # Written oldest first, the document's order stands (newest last).
    oldest_first = parse_outline("\n\n".join(reversed(ledger.strip().split("\n\n"))) + "\n")
    assert oldest_first.items[-1].recency == 1.0
