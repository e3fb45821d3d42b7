"""Issue 20: any ledger is read as an outline and cut into whole units, never mid-sentence.

Log-shaped ledgers (dated or numbered headings, newest last or first), unknown headings in
several languages, a ledger with no headings, item state from the item's own marks, the
pointer for every part left out, and two properties over random ledgers: no printed line
starts or ends inside a source sentence except at an explicit `…`, and every failed attempt's
reason is shown whole or its lines are named.
"""

from __future__ import annotations

import re
import textwrap

from carryd.carry.dating import heading_key
from carryd.carry.marks import item_state, rule_force
from carryd.carry.outline import Outline, parse_outline
from carryd.carry.outline_pack import pack_outline, whole_outline
from carryd.carry.units import reason_units, units_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PATH = "ws/handoff/LEDGER.md"
# Lines of the file the heading names; when nothing fits but a pointer, the whole file by path.
POINTER = re.compile(r"^… not shown: (?:L|\S+:)(\d+)(?:-(\d+))?$")
PART = re.compile(r" \(L(\d+)(?:-(\d+))?\)$")


def session_log(count: int, *, newest_first: bool = False) -> str:
    """A session log: one dated heading per session, each with a status line, a failed
    attempt with its reason and an open next step."""
    entries = []
    for n in range(1, count + 1):
        entries.append(
            f"## 2026-11-{n:02d} (session {n})\n"
            f"- Status: {n} of 40 routes moved to edge-b, p99 {170 + n} ms.\n"
            f"- Tried raising the idle timeout to {n * 10}s. Failed: the stream still dropped "
            f"after five minutes because listener {n} keeps its own default.\n"
            f"- [ ] Next: move route group {n} behind listener grpc-{n}.\n"
        )
    if newest_first:
        entries.reverse()
    return "# Hand-off ledger — edge\n\n" + "\n".join(entries)


def covered_lines(text: str) -> set[int]:
    """The ledger lines a cut names: under a `… not shown` pointer or an item's `(Lx-y)`."""
    lines: set[int] = set()
    for line in text.split("\n"):
        for match in (POINTER.match(line), PART.search(line)):
            if match is not None:
                start = int(match.group(1))
                lines.update(range(start, int(match.group(2) or start) + 1))
    return lines


def test_dated_headings_make_a_log_whose_newest_entry_is_kept_whole() -> None:
    for newest_first in (False, True):
        ledger = session_log(30, newest_first=newest_first)
        outline = parse_outline(ledger, PATH)
        assert len(outline.log_entries) == 30
        newest = max(outline.items, key=lambda item: item.recency)
        assert "session 30" in outline.headings[newest.heading or 0].text
        cut = pack_outline(outline, 2_500, path=PATH)
        assert len(cut) <= 2_500
        assert "## 2026-11-30 (session 30)" in cut
        assert "- [ ] Next: move route group 30 behind listener grpc-30." in cut
        assert "- Status: 30 of 40 routes moved to edge-b, p99 200 ms." in cut
        assert "- Status: 1 of 40 routes" not in cut  # the oldest status yields first


def test_numbered_and_dated_headings_in_several_languages_are_log_entries() -> None:
    for title in ("Session 14", "세션 12 — 2026-11-24 (화)", "Día 3 — 2026-11-11", "第3天",
                  "2026年11月24日", "Tag 4", "3日目"):  # fmt: skip
        assert heading_key(title) is not None, title
    assert heading_key("Log（短く）") is None  # "log" is a heading's word, not an entry
    assert heading_key("Decisions") is None


def test_unknown_headings_in_any_language_are_carried_with_their_items() -> None:
    for ledger in (
        "# Übergabe\n## Stand\n- 14/17 Tests grün.\n## Sackgassen\n- Cache leeren: verworfen.\n",
        "# 引き継ぎ\n## 現状\n- 14/17 通過。\n## ハマりどころ\n- キャッシュ削除はダメ。\n",
        "# 인수인계\n## 현황\n- 14/17 통과.\n## 실패한 시도\n- 캐시 삭제 실패.\n",
        "# Traspaso\n## Estado actual\n- 14/17 pasan.\n## Intentos\n- Borrar caché: falló.\n",
    ):
        outline = parse_outline(ledger, PATH)
        assert len(outline.items) == 2
        assert whole_outline(outline) == ledger.strip()  # nothing lost, nothing added
        cut = pack_outline(outline, 60, path=PATH)
        assert len(cut) <= 60
        # what does not fit is named by its lines
        assert covered_lines(cut) | _shown_lines(cut, ledger) >= set(range(3, 6))


def _shown_lines(cut: str, ledger: str) -> set[int]:
    source = ledger.split("\n")
    return {number for number, line in enumerate(source, start=1) if line and line in cut}


def test_a_ledger_without_headings_is_a_list_appended_to_newest_last() -> None:
    ledger = "".join(
        f"{n}. [2026-10-{n % 28 + 1:02d}] Finding {n}: checked pool size {n * 5} on replica "
        f"r{n}. It was not the cause.\n"
        for n in range(1, 61)
    )
    outline = parse_outline(ledger, PATH)
    assert not outline.headings and len(outline.items) == 60
    assert outline.items[-1].recency > outline.items[0].recency
    cut = pack_outline(outline, 3_000, path=PATH)
    assert "60. [2026-10-05] Finding 60: checked pool size 300" in cut
    assert len(cut) <= 3_000
    assert covered_lines(cut) | _shown_lines(cut, ledger) == set(range(1, 61))


def test_state_comes_from_the_items_own_marks_in_every_language() -> None:
    assert item_state("- [x] migrate the queue") == "done"
    assert item_state("- [ ] migrate the queue") == "open"
    assert item_state("- ~~use Redis streams for the outbox~~") == "superseded"
    assert item_state("- Redis streams (superseded by 14)") == "superseded"
    assert item_state("- ❌ sccache on NFS") == "failed"
    for failed in (
        "尝试 PVC 缓存，失败了",
        "没成：安全组不批",
        "キャッシュ削除はダメ",
        "캐시 삭제 실패",
        "La caché: no funcionó",
        "Cache leeren: verworfen",
        "Vider le cache : échec",
        "Sharding by tenant: didn't pan out, the hot tenant still pins one node",
        "Read replica für den Export: bringt nix, die Sperre liegt auf dem Primary",
        "同義語を index 側に: 不採用",
    ):
        assert item_state(failed) == "failed", failed
    # done words inside a status line describe something else
    assert item_state("- 9 件中: 本番反映済み 5 件") == "plain"
    # "커밋 안 됨" is "not committed": work in progress, not a failed attempt
    assert item_state("- 지금 편집 중 (커밋 안 됨, 브랜치 `fix/legacy-upload`):") == "open"
    assert item_state("- 시도 3: 빌드 캐시 공유 → 안 됨") == "failed"


def test_a_failed_attempt_keeps_its_reason_sentence() -> None:
    text = (
        "- Tried proxy protocol v2 on the target group. It looked fine in staging. "
        "Failed: Envoy answered 400 because it did not expect the PROXY header."
    )
    units = units_of(text)
    reason = [units[index].text for index in reason_units(units)]
    assert any("because it did not expect the PROXY header" in piece for piece in reason)
    verdict = units_of("- Theory: a worker panics after charging. Grepped logs: 0 panics. Dropped.")
    assert [verdict[i].text for i in reason_units(verdict)][0].startswith("Grepped logs: 0 panics")


def test_rules_are_told_from_knowledge_in_several_languages() -> None:
    for rule in (
        "Never run terraform apply locally.",
        "返事は日本語で。本番には絶対に実行しない",
        "必须先找安全组确认",
        "프로덕션 배포는 하지 않는다. 금지",
        "Nunca ejecutes dbt run",
    ):
        assert rule_force(rule) > 0, rule
    assert rule_force("The laptop has 16 GB of RAM and runs Fedora.") == 0


SENTENCES = st.sampled_from(
    [
        "Checked the pool size on replica r3.",
        "It was not the cause.",
        "Raised the timeout to 30 s because the PSP p99 is 9 s.",
        "失败：缓存 key 全不一样。",
        "原因是 runner id 不同。",
        "再現しない。",
        "`make test-integration` passes locally.",
        "Dropped.",
    ]
)
ITEM = st.builds(
    lambda bullet, words: f"{bullet}{' '.join(words)}",
    st.sampled_from(["- ", "- ❌ ", "- [ ] ", "1. ", "- Tried: "]),
    st.lists(SENTENCES, min_size=1, max_size=5),
)
HEADING = st.sampled_from(["## Status", "## 2026-11-03 (session 5)", "## 踩坑", "### Notes"])
BLOCK = st.one_of(ITEM, HEADING)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BLOCK, min_size=1, max_size=40), st.integers(min_value=0, max_value=4_000))
def test_no_line_is_cut_inside_a_sentence_and_every_reason_is_shown_or_named(
    blocks: list[str], budget: int
) -> None:
    ledger = "\n".join(blocks) + "\n"
    outline = parse_outline(ledger, PATH)
    cut = pack_outline(outline, budget, path=PATH)
    assert len(cut) <= budget
    allowed = _whole_runs(outline)
    headings = {heading.text for heading in outline.headings}
    for line in cut.split("\n") if cut else []:
        if POINTER.match(line) or line in headings:
            continue
        body = PART.sub("", line).removesuffix(" …").removeprefix("… ")  # an explicit gap
        for piece in body.split(" … "):
            assert BULLET.sub("", piece.strip()) in allowed, (piece, line)
    if budget < 60:
        return  # too small even for one pointer
    named = covered_lines(cut)
    for item in outline.items:
        if item.state != "failed":
            continue
        units = units_of(item.text)
        lines = set(range(item.line_start, item.line_end + 1))
        for index in reason_units(units):
            assert units[index].text.strip() in cut or lines <= named, item.text


BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _whole_runs(outline: Outline) -> set[str]:
    """Every run of whole, consecutive units on one source line (bullet dropped)."""
    runs: set[str] = set()
    for item in outline.items:
        units = units_of(item.text)
        for start in range(len(units)):
            for end in range(start + 1, len(units) + 1):
                if units[end - 1].line != units[start].line:
                    break
                runs.add(BULLET.sub("", " ".join(u.text.strip() for u in units[start:end])))
    return runs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BLOCK, min_size=1, max_size=24), st.integers(min_value=60, max_value=3_000))
def test_no_pointer_hides_an_item_that_would_fit_in_its_place(
    blocks: list[str], budget: int
) -> None:
    ledger = "\n".join(blocks) + "\n"
    outline = parse_outline(ledger, PATH)
    cut = pack_outline(outline, budget, path=PATH)
    lines = cut.split("\n")
    slack = budget - len(cut)
    for item in outline.items:
        heading = outline.headings[item.heading].text if item.heading is not None else None
        if heading is not None and heading not in lines:
            continue  # showing it would show its heading too
        span = (
            str(item.line_start)
            if item.line_start == item.line_end
            else (f"{item.line_start}-{item.line_end}")
        )
        pointer = f"… not shown: L{span}"
        if pointer in lines:  # a pointer naming this item alone
            assert len(item.text) > len(pointer) + slack, (item.text, cut)


def test_a_struck_table_row_yields_to_the_rows_still_standing() -> None:
    # the current figure is the table's first row; the rows after it are struck, replaced
    rows = ["| run | checkout p99 | note |", "|---|---|---|"]
    rows.append("| r-71 | 212 ms | after the pool fix 4f2c1aa, current |")
    rows += [
        f"| ~~r-{80 + n}~~ | ~~{400 - n * 7} ms~~ | ~~before the pool fix~~ |" for n in range(5)
    ]
    ledger = "# Ledger\n\n## Status\n" + "\n".join(rows) + "\n\n## Next\n- [ ] Roll the fix.\n"
    outline = parse_outline(ledger, PATH)
    for budget in (200, 260):
        cut = pack_outline(outline, budget, path=PATH)
        assert "| r-71 | 212 ms | after the pool fix 4f2c1aa, current |" in cut, cut
        assert "L4-11" in cut  # the struck rows are named, not dropped


def test_a_table_keeps_its_last_standing_row_over_rows_corrected_in_place() -> None:
    # the author corrects cells in place ("~~530~~ 512 ms") and strikes a reverted row at the
    # end: the row things stand at is the last one not struck, and a corrected cell holds one
    # figure, not two
    rows = ["| build | p50 | p90 | note |", "|---|---|---|---|"]
    rows.append("| 1.0 (baseline) | 388 ms | 655 ms | before the regression |")
    for n in range(4):
        old, new = 930 - 60 * n, 915 - 60 * n
        rows.append(
            f"| dev@{n}a91e0d (s{n + 4}) | ~~{old}~~ {new} ms | ~~{old + 90}~~ {new + 80} ms"
            f" | re-measured in s{n + 5} with 15 runs (was {n + 5}) |"
        )
    rows.append("| perf@7f3c2a1 (s9) | 651 ms | 702 ms | lazy client; current |")
    rows.append("| ~~perf@d07a3e8 (s10)~~ | ~~640 ms~~ | ~~690 ms~~ | ~~full mode~~ reverted |")
    ledger = "# Ledger\n\n## Measurements\n" + "\n".join(rows) + "\n\n## Next\n- [ ] Ship it.\n"
    outline = parse_outline(ledger, PATH)
    cut = pack_outline(outline, 260, path=PATH)
    assert "| perf@7f3c2a1 (s9) | 651 ms | 702 ms | lazy client; current |" in cut, cut
    assert "- [ ] Ship it." in cut, cut


def test_an_attempt_is_never_shown_without_its_reason() -> None:
    # short, fact-dense titles and long reasons: a title alone is the cheapest line to show,
    # and a fresh context reading it alone would try the attempt again
    attempts = "".join(
        f"{n}. **`swap-mode-{n}` with SZX {n} (`CONFIG_OTA_{n}=y`)** – session {n}\n"
        f"   - the download stops at {20 + n} % and then only times out (run L{n}, 3/5)\n"
        f"   - Reason: the carrier reports an MTU of {1000 + n}, so blocks of {1024 + n} bytes and"
        f" the DTLS header are dropped without any ICMP message reaching the node\n\n"
        for n in range(1, 10)
    )
    ledger = "# Ledger\n\n## Dead ends\n\n" + attempts + "## Next\n- [ ] Try SZX 5.\n"
    outline = parse_outline(ledger, PATH)
    for budget in (600, 900, 1400):
        cut = pack_outline(outline, budget, path=PATH)
        for n in range(1, 10):
            if f"`swap-mode-{n}`" in cut:
                assert f"an MTU of {1000 + n}," in cut, (n, budget, cut)


def test_a_table_of_metrics_updated_in_place_is_weighed_by_its_rows_dates() -> None:
    # one row per metric, each with the day it was last measured (day first: "17/11"); the
    # rows are not appended, so the last row is not the newest
    rows = ["| metric | value | when | how |", "|---|---|---|---|"]
    rows.append("| auto-reconciled | 98.9% | 04/12 | Grafana |")
    rows.append("| open items | 187 | 04/12 | Grafana |")
    rows += [f"| stage {n} | {300 + n} | {10 + n:02d}/11 | Grafana |" for n in range(8)]
    ledger = "# Ledger\n\n## Measurements\n" + "\n".join(rows) + "\n\n## Next\n- [ ] Ship it.\n"
    outline = parse_outline(ledger, PATH)
    for budget in (200, 300):
        cut = pack_outline(outline, budget, path=PATH)
        assert "| auto-reconciled | 98.9% | 04/12 | Grafana |" in cut, cut


def test_every_row_of_a_table_of_dead_ends_is_an_attempt_with_its_reason() -> None:
    # the heading says the rows are rejected ideas; no row says "failed" by itself
    rows = ["| idea | # | result | why not |", "|---|---|---|---|"]
    rows += [f"| variant {n} | #{n} | 0.40{n} | blocks split on token {n} |" for n in range(6)]
    log = "".join(
        f"- #{10 + n} measured run r-{n} at 0.44{n}, p95 {160 + n} ms.\n" for n in range(30)
    )
    ledger = "# Ledger\n\n## 没案一覧\n" + "\n".join(rows) + "\n\n## Log\n" + log
    outline = parse_outline(ledger, PATH)
    cut = pack_outline(outline, 900, path=PATH)
    for n in range(6):
        assert f"| variant {n} | #{n} | 0.40{n} | blocks split on token {n} |" in cut, cut


def test_numbered_attempts_written_newest_first_keep_the_newest_first() -> None:
    # no dates, no session headings: the attempts' own numbers say which is newest
    attempts = "".join(
        f"- Attempt {n}: raised the pool to {n * 10} connections. Failed: the export still"
        f" timed out after {n + 30} s because shard {n} holds its lock.\n"
        for n in range(14, 0, -1)
    )
    ledger = "# Ledger\n\n## Dead ends\n" + attempts
    outline = parse_outline(ledger, PATH)
    recency = {item.text.split(":")[0]: item.recency for item in outline.items}
    assert recency["- Attempt 14"] > recency["- Attempt 1"]
    cut = pack_outline(outline, 700, path=PATH)
    assert "- Attempt 14: raised the pool to 140 connections." in cut, cut
    assert "because shard 14 holds its lock" in cut, cut


def wrapped_ledger() -> tuple[str, list[str]]:
    """A ledger written in an editor that wraps at about 100 characters: each item's sentences
    run over lines. Returns it and each sentence as it reads unwrapped."""
    items, sentences = [], []
    for n in range(1, 31):
        first = (
            f"Attempt {n}: on the target, delete the {n} extra rows (ids in logs/extra_{n}.txt) "
            "BEFORE anything refreshes tax rules on the source, otherwise the refreshed rows "
            f"replicate over and the apply worker loops on duplicate key {n}."
        )
        second = f"Measured lag after it: {n * 3} s on sub_billing_{n}."
        sentences += [first, second]
        wrapped = textwrap.fill(f"{first} {second}", width=96, subsequent_indent="   ")
        items.append(f"{n}. {wrapped[3:] if wrapped.startswith('   ') else wrapped}")
    return "# Ledger\n\n## Log\n" + "\n".join(items) + "\n", sentences


def test_a_sentence_wrapped_over_lines_is_kept_or_left_out_whole() -> None:
    ledger, sentences = wrapped_ledger()
    outline = parse_outline(ledger, PATH)
    assert any("\n" in unit.text for item in outline.items for unit in units_of(item.text))
    for budget in (600, 1_500, 3_000, 5_000):
        cut = pack_outline(outline, budget, path=PATH)
        flat = " ".join(" ".join(line.split()) for line in cut.split("\n"))
        for sentence in sentences:
            words = sentence.split()
            head, tail = " ".join(words[:6]), " ".join(words[-3:])
            # a sentence is whole or absent: its head is never shown without its tail
            assert (head in flat) == (tail in flat), (budget, sentence)


def test_bold_session_labels_newest_first_make_a_log() -> None:
    sessions = []
    for n in range(12, 0, -1):  # newest at the top, no headings: bold labels, day first
        sessions.append(
            f"**Sesión {n} — {n + 10:02d}/05**{' ← ÚLTIMA' if n == 12 else ''}\n\n"
            f"- lag entre {n} y {n + 2} s en horas punta\n"
            f"- probé la variante {n}: descartado porque el disco llegó al {60 + n} %\n"
        )
    ledger = "Ledger de la migración. Lo más nuevo ARRIBA.\n\n" + "\n".join(sessions)
    outline = parse_outline(ledger, PATH)
    assert len(outline.log_entries) == 12
    newest = next(item for item in outline.items if "variante 12:" in item.text)
    oldest = next(item for item in outline.items if "variante 1:" in item.text)
    assert newest.recency > oldest.recency
    cut = pack_outline(outline, 700, path=PATH)
    assert "lag entre 12 y 14 s" in cut and "variante 1:" not in cut


def test_short_dates_written_day_first_order_a_log() -> None:
    entries = [f"## {day:02d}/06 — session\n- measured p99 {day} ms\n" for day in (3, 10, 30)]
    entries += ["## 02/07 — session\n- measured p99 77 ms\n"]
    outline = parse_outline("# Log\n\n" + "\n".join(reversed(entries)), PATH)
    by_text = {item.text: item.recency for item in outline.items}
    assert by_text["- measured p99 77 ms"] == 1.0  # the 2nd of July is the newest
    assert by_text["- measured p99 3 ms"] == 0.0  # the 3rd of June the oldest
    assert heading_key("10/06", 2026, day_first=True) == (2026, 6, 10)
    assert heading_key("10/06", 2026) == (2026, 10, 6)


def test_dated_logs_in_two_places_are_one_history() -> None:
    old = "".join(f"### S{n} — 2025-01-{n:02d}\n- step {n}\n" for n in range(1, 5))
    new = "".join(f"### S{n} — 2025-01-{n + 10:02d}\n- step {n}\n" for n in range(5, 10))
    ledger = (
        f"# Ledger\n\n## Sessions S1–S4 (old)\n{old}\n## State\n- x\n\n"
        f"## Sessions (newest last)\n{new}"
    )
    outline = parse_outline(ledger, PATH)
    rank = {item.text: item.recency for item in outline.items}
    assert rank["- step 4"] < rank["- step 5"] < rank["- step 9"] == 1.0


def test_words_for_failed_attempts_in_more_languages() -> None:
    for failed in (
        "Geprobeerd: repo2-s3-uri-style=path, zelfde fout. Mislukt.",
        "Provato il lazy init di Sentry: non ha funzionato, il cold start resta 1,4 s",
        "Próba z większym poolem: nie pomogło",
        "Попробовали увеличить таймаут: не помогло",
    ):
        assert item_state(failed) == "failed", failed
    assert rule_force("Nooit een restore naar productie zonder akkoord.") > 0
    assert rule_force("- NO prod changes Friday, Saturday, Sunday.") > 0  # shouted
    assert rule_force("- no change in p99 after the restart.") == 0
    assert rule_force("Mai 2024: il cliente ha chiesto un report.") == 0


def test_a_section_named_current_in_any_language_is_where_things_stand() -> None:
    for heading in (
        "## CURRENT (updated 2024-10-15 ~01:40 UTC, session 19)",
        "## Stan obecny",
        "## Текущее состояние",
        "## 目前狀態",
        "## Nuläge",
        "## Gdzie jesteśmy (aktualizuj!)",
    ):
        ledger = (
            f"# Ledger\n\n{heading}\n- kd-033 is RUNNING, step 31,500 / 48,000\n\n"
            "## Learnings (written 2024-09-06)\n- T=4 is the sweet spot\n\n"
            "## What we learned (rewritten 2024-10-03)\n- T=2 beats T=4\n\n"
            "## Notes (2024-10-01)\n- nothing\n"
        )
        outline = parse_outline(ledger, PATH)
        item = next(i for i in outline.items if "kd-033" in i.text)
        assert item.section == "status" and item.recency == 1.0, heading
