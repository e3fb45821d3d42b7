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


def test_a_bold_line_naming_a_section_heads_the_list_below_it() -> None:
    # A ledger without headings: "**Offen, Stand 02.12.:**" is its next steps.
    ledger = (
        "Übergabe-Ledger, neueste Einträge unten.\n\n"
        + "".join(f"- {n:02d}.11.: Lauf {n}, Lag p95 {40 + n} min.\n" for n in range(1, 29))
        + "\n**Offen, Stand 02.12. (nach Priorität):**\n"
        "- MR !241 fertig machen, dann `airflow dags test ch_export_shop 2024-12-01`.\n"
        "- Dashboards 31, 44, 45 auf FINAL umstellen.\n"
    )
    outline = parse_outline(ledger, PATH)
    assert [item.section for item in outline.items[-2:]] == ["next", "next"]
    cut = pack_outline(outline, 700, path=PATH)
    assert "airflow dags test ch_export_shop 2024-12-01" in cut and "31, 44, 45" in cut


def test_a_list_item_labelling_next_steps_makes_its_sub_items_next_steps() -> None:
    ledger = (
        "# Ledger\n\n## Sesión 10\n- Intento 26: protobuf → −18 ms, revertido.\n"
        "- Siguiente (s10), en este orden:\n"
        "  1. añadir noCompress en app/build.gradle.kts y medir\n"
        "  2. abrir PR de `perf/arranque-s10` contra `develop`\n"
        "- Salida de `tools/bench_summary.py`: median=798.\n"
    )
    items = parse_outline(ledger, PATH).items
    assert [(item.line_start, item.section) for item in items] == [
        (4, None),
        (6, "next"),
        (7, "next"),
        (8, None),
    ]


def test_a_failure_word_in_a_sub_item_does_not_make_the_whole_entry_an_attempt() -> None:
    ledger = (
        "# Ledger\n\n## Scratch\n- Nov 19 (session 12) — LATEST:\n"
        "  - status: best honest model is still EXP-31 (r-0931) at 0.689.\n"
        "  - EXP-33 is not a win; the idea failed on honest labels.\n"
    )
    item = parse_outline(ledger, PATH).items[0]
    assert item.state == "plain"


def test_the_unit_naming_the_cause_is_the_reason_kept_before_the_verdict() -> None:
    text = (
        "- Intento 23: R8 full mode en gradle.properties, benchmark 901 → 879 ms.\n"
        "  - pero crash en checkout: Gson devuelve campos null en `PedidoDto`.\n"
        "    - causa: los DTO no tienen @Keep y R8 elimina el constructor que usa Gson.\n"
        "  - revertido en d07a3e8 → 9a2c114, fila tachada."
    )
    from carryd.carry.units import reason_ranked

    units = units_of(text)
    assert "causa:" in units[reason_ranked(units)[0]].text


def test_a_tables_last_rows_are_kept_before_its_first() -> None:
    rows = "".join(f"| build {n} | {300 + n} ms | run {n} |\n" for n in range(1, 13))
    ledger = "# Ledger\n\n## Mediciones\n| build | TTID | notes |\n|---|---|---|\n" + rows
    cut = pack_outline(parse_outline(ledger, PATH), 260, path=PATH)
    assert "| build 12 |" in cut and "| build 1 |" not in cut


def test_a_code_block_is_closed_with_its_own_fence() -> None:
    from carryd.carry.units import closed

    assert closed("````md\n```sh\nmake\n```\nleft open").endswith("\n````")
    tilde = "~~~\nSELECT 1;\nSELECT 2;"
    assert joined(tilde, units_of(tilde), [0, 1]) == "~~~\nSELECT 1;\n~~~"


def test_a_why_label_opens_the_reason_in_any_language() -> None:
    from carryd.carry.units import reason_ranked

    for text, why in (
        (
            "- Intento 24: regenerar el baseline profile con más recorridos.\n"
            "  - el perfil pasó de 180 KB a 1,1 MB y el arranque EMPEORÓ +35 ms en Moto G.\n"
            "    - por qué: dex2oat compila código que no se usa al arrancar, más page faults.\n"
            "  - vuelto al perfil de solo arranque. Regla: solo `startActivityAndWait()`.",
            "por qué:",
        ),
        (
            "- Attempt 9: bigger batch size in the consumer.\n"
            "  - p99 went from 120 ms to 480 ms on `orders-7`.\n"
            "  - why: every batch waits for its slowest partition, one slow broker stalls all.\n"
            "  - reverted in 4f2c1aa, see PR #88.",
            "why:",
        ),
    ):
        units = units_of(text)
        assert why in units[reason_ranked(units)[0]].text, text
