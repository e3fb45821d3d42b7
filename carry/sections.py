"""The ledger's known sections: one table (kind, default names, synonyms, weight) and the
configured names (`[carry.sections]`).

Apart from the ledger parser (`carryd.carry.ledger`, which re-exports these names) so that
`carryd.daemon.config` can read the defaults without loading the parser and Markdown (a
SessionStart hook with a fresh carry reads a file and imports little else; issue 10 item 7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SECTION_ORDER", "SECTION_TABLE", "KnownKind", "SectionNames", "SectionSpec"]

KnownKind = Literal["status", "goal", "tried", "next"]


@dataclass(frozen=True)
class SectionSpec:
    """One known ledger section: its kind, default names (configurable), synonyms, weight."""

    kind: KnownKind
    names: tuple[str, ...]  # the defaults of `carry.sections.<kind>`; configuration replaces them
    aliases: tuple[str, ...]  # built-in synonyms, always recognised besides the names
    weight: float  # share of the ledger budget (seed P6: .35 / .30 / .20 / .15)


# THE table of ledger sections, in canonical order. Synonyms are broad on purpose: a ledger
# whose sections are called `## 状态 / ## 目标 / ## 失败尝试 / ## 下一步` must not lose them.
SECTION_TABLE: tuple[SectionSpec, ...] = (
    SectionSpec(
        "status",
        ("任务状态", "Task status"),
        (
            "状态", "当前状态", "进展", "现状", "当前进展", "进度", "当前进度", "任务进度", "近况",
            "Status", "Current status", "Current state", "State", "Progress", "Task state",
            "Where we are", "Where things stand", "Situation", "Working tree",
            "Working tree state", "State of the working tree", "Current edit", "Where I stopped",
            "Where I left off", "Left off",
            # other languages: data, so a new one is a new line
            "Estado", "Estado actual", "Situación", "Estado atual", "Situação",
            "Aktueller Stand", "Stand", "Stand der Dinge", "Zustand", "État", "État actuel",
            "Situation actuelle", "Statut", "Où on en est", "Point de situation",
            "Status atual", "Situação atual", "Onde estamos", "現状", "現在の状態",
            "현재 상황",
            "状況", "ステータス", "進捗", "現在の状況", "상태", "현황", "현재 상태", "진행 상황",
            "Current", "Now", "Right now", "Status right now", "Current numbers",
            "Huidige stand", "Stand van zaken", "Stato attuale", "Stato", "Situazione",
            "Stan obecny", "Aktualny stan", "Текущее состояние", "Статус", "Состояние",
            "Mevcut durum", "Durum", "Güncel durum", "Nuläge", "Läge", "目前狀態", "狀態",
            "現況", "目前進度", "いまの状況", "今の状況", "Gdzie jesteśmy", "Waar we staan",
            "Dove siamo", "Где мы", "Где мы сейчас", "Neredeyiz", "Var vi är", "Where we are now",
        ),
        0.15,
    ),
    SectionSpec(
        "goal",
        ("目标", "Goal"),
        (
            "任务", "任务目标", "目的", "总目标", "当前目标", "本次目标", "需求",
            "Goals", "Objective", "Objectives", "Mission", "Task", "Aim", "Purpose",
            "The goal", "Current goal",
            "Objetivo", "Ziel", "Ziele", "Objectif", "Objectifs", "目的", "ゴール", "目標",
            "목표", "목적", "Doel", "Obiettivo", "Cel", "Цель", "Hedef", "Amaç", "Mål",
        ),
        0.20,
    ),
    SectionSpec(
        "tried",
        ("已试方案与失败原因", "Tried approaches and failure reasons"),
        (
            "失败尝试", "踩坑", "踩坑记录", "死路", "已尝试", "已试", "已试方案", "尝试过的方案",
            "失败方案", "失败原因", "走过的弯路", "弯路", "排除项", "已排除", "试过的方法",
            "Dead ends", "Dead end", "Tried", "What failed", "What didn't work", "Attempts",
            "Failed attempts", "Tried approaches", "Tried approaches and failures",
            "Failed approaches", "What we tried", "Approaches tried", "Things tried",
            "Ruled out", "Pitfalls",
            "Intentos fallidos", "Intentos", "Lo que no funcionó", "Descartado", "Tentativas",
            "Tentativas falhas", "O que não funcionou", "Sackgassen", "Fehlversuche", "Versuche",
            "Was nicht funktioniert hat", "Impasses", "Tentatives", "Essais",
            "Ce qui n'a pas marché",
            "試したこと", "失敗した試み", "失敗", "ハマりどころ", "실패한 시도", "시도", "실패",
            "시도한 것", "Valkuilen", "Wat niet werkte", "Tentativi", "Tentativi falliti",
            "Cosa non ha funzionato", "Vicoli ciechi", "Nie działa", "Porzucone", "Próby",
            "Что не сработало", "Попытки", "Тупики", "Denenenler", "Başarısız denemeler",
            "İşe yaramayanlar", "Återvändsgränder", "Det som inte fungerade", "Försök",
            "踩雷紀錄", "踩雷", "失敗嘗試",
        ),
        0.35,
    ),
    SectionSpec(
        "next",
        ("进度与下一步", "Progress and next steps"),
        (
            "下一步", "待办", "后续", "后续步骤", "下一步计划", "待办事项", "待做", "接下来",
            "Next", "Next steps", "Next step", "Next actions", "TODO", "Todo", "To do",
            "To-do", "Open items", "Open tasks", "Remaining work", "Progress and next step",
            "Task list", "Tasks",
            "Pendiente", "Pendientes", "Siguiente", "Próximos pasos", "Siguientes pasos",
            "Próximos passos", "Pendências", "Nächste Schritte", "Offen", "Offene Punkte",
            "Prochaines étapes", "À faire", "Suite", "La suite", "Étapes suivantes",
            "Prochaine étape", "Reste à faire", "Als Nächstes", "Nächster Schritt",
            "Weiteres Vorgehen", "Próximo passo", "Próximas etapas", "A fazer", "Por hacer",
            "次", "次のステップ", "次にやること", "次の作業", "今後", "やること", "残タスク",
            "다음", "다음 할 일", "할 일", "다음 단계", "남은 일", "다음 작업", "해야 할 일",
            "Up next", "Next up", "Remaining", "Volgende stappen", "Open punten", "Te doen",
            "Prossimi passi", "Da fare", "Passi successivi", "Następne kroki", "Do zrobienia",
            "Следующие шаги", "Что дальше", "Дальше", "Sonraki adımlar", "Yapılacaklar",
            "Nästa steg", "Att göra", "待辦", "待辦事項",
        ),
        0.30,
    ),
)  # fmt: skip

# Canonical order of the known sections.
SECTION_ORDER: tuple[KnownKind, ...] = tuple(spec.kind for spec in SECTION_TABLE)


def _names(kind: KnownKind) -> tuple[str, ...]:
    return next(spec.names for spec in SECTION_TABLE if spec.kind == kind)


@dataclass(frozen=True)
class SectionNames:
    """Configured heading names per known section (`[carry.sections]`), defaults from the table.

    `daemon.config` uses this class as its `LedgerSections`, so the defaults live here only.
    Configured names replace a section's default names; its built-in synonyms stay.
    """

    status: tuple[str, ...] = _names("status")
    goal: tuple[str, ...] = _names("goal")
    tried: tuple[str, ...] = _names("tried")
    next: tuple[str, ...] = _names("next")
