"""Issue 20, seen on ledgers written without sight of carryd: a session log whose sessions
hold numbered attempts, attempts marked in their heading, commands continued over lines,
sentences in scripts without spaces, day-month dates, and verdicts that close on a reason.
"""

from __future__ import annotations

from carryd.carry.outline import parse_outline
from carryd.carry.outline_pack import pack_outline
from carryd.carry.units import joined, units_of

PATH = "ws/handoff/LEDGER.md"


def _session(day: int, first: int) -> str:
    return f"## 11/{day:02d} セッション{day}\n\n" + "".join(
        f"### 試行{n} ✗ 変更 {n}\n- 結果: p95 {100 + n}ms、目標未達。\n\n"
        for n in range(first, first + 3)
    )


def test_attempts_inside_the_newest_session_rank_above_every_older_session() -> None:
    # Newest session first; inside it the attempts are numbered oldest first. The first
    # attempt of the newest session is still newer than anything of the session before.
    ledger = "# 台帳\n\n" + "".join(_session(day, 3 * day) for day in (9, 8, 7, 6))
    outline = parse_outline(ledger, PATH)
    by_attempt = {
        outline.headings[item.heading].title.split()[0]: item.recency
        for item in outline.items
        if item.heading is not None
    }
    newest_session = [by_attempt[f"試行{n}"] for n in (27, 28, 29)]
    older = [value for key, value in by_attempt.items() if int(key[2:]) < 27]
    assert newest_session == sorted(newest_session)  # within the session: by number
    assert min(newest_session) > max(older)


def test_items_under_a_heading_marked_failed_are_that_attempts_lines() -> None:
    ledger = (
        "# Ledger\n\n### 試行43 ✗ sliced scroll で全量\n"
        "- 実行: `reindex-run-1127a`（slices=4）\n"
        "- 原因: `search.max_open_scroll_context` = 500 に到達。\n"
    )
    states = {item.text.split(":")[0]: item.state for item in parse_outline(ledger, PATH).items}
    assert states == {"- 実行": "failed", "- 原因": "failed"}


def test_a_command_continued_over_lines_is_kept_whole_or_not_at_all() -> None:
    text = (
        "```\npython -m reindexer.run --src https://old:9200 --index products \\\n"
        "  --dest products_v3 --batch 2000 \\\n  --run-id reindex-run-1128a\n"
        "done in 2h24m\n```"
    )
    units = units_of(text)
    assert [unit.text.count("\n") for unit in units] == [0, 2, 0]
    shown = joined(text, units, [0, 1])
    assert "--src https://old:9200" in shown and "--run-id reindex-run-1128a" in shown


def test_sentences_joined_as_the_source_wrote_them() -> None:
    for line in (
        "- 決定: 実行途中でスライス数を変えない。変えるなら新しい run-id で最初から。",
        "- 原因是 runner id 不同，缓存没命中。 失败：缓存 key 全不一样，命中率 13%。",
    ):
        units = units_of(line)
        assert len(units) == 2
        assert joined(line, units, [0, 1]) == line


def test_a_day_and_month_does_not_end_a_sentence() -> None:
    line = "- Die +17 order_items wurden vor dem 19.11. 14:20 gelöscht, ohne Tombstone."
    assert [unit.text for unit in units_of(line)] == [line]


def test_a_verdict_is_never_shown_without_the_reason_it_closes_on() -> None:
    # More dead ends than their share holds: the older ones compete for the rest of the room,
    # and a cheap "Dropped." must not come without the sentence it closes on.
    ledger = "# Ledger\n\n## Log\n" + "".join(
        f"- 2026-10-{n:02d}: Theory {n}: worker {n} panics after the charge and is re-run. "
        f"Grepped Loki for run {n}: 0 panics in renewal path {n}. Dropped.\n"
        for n in range(1, 29)
    )
    verdicts = 0
    for budget in range(600, 3000, 200):
        cut = pack_outline(parse_outline(ledger, PATH), budget, path=PATH)
        for line in cut.splitlines():
            if line.rstrip().endswith("Dropped.") or "Dropped. (L" in line:
                verdicts += 1
                number = line.split("Theory ")[1].split(":")[0]
                assert f"0 panics in renewal path {number}." in line, (budget, line)
    assert verdicts
