"""The marks people use for an item's state, in every language: data, not code.

A new language is a new row here. `item_state` reads an item's text and returns what its own
marks say — "failed", "superseded", "done", "open" or "plain" — never from the section it sits
in. Symbols ([x], [ ], ✅, ❌, ~~strikethrough~~) are language-free; words come per language.
`rule_force` says whether a note states a standing rule (an imperative: never / always / must,
必须 / 不要, しない / 禁止, …). `REASON_CUES` are where the reason of a failed attempt starts.
Pure: no IO.
"""

from __future__ import annotations

import re
from typing import Literal

ItemState = Literal["failed", "superseded", "done", "open", "plain"]

# Per language: words marking a failed attempt, a superseded/obsolete item, a done item and an
# open one. Matched case-insensitively as whole words (Latin scripts) or as substrings (CJK).
STATE_WORDS: dict[str, dict[ItemState, tuple[str, ...]]] = {
    "en": {
        "failed": (
            "failed", "fails", "failure", "broke", "broken", "doesn't work", "didn't work",
            "does not work", "did not work", "reverted", "dropped", "abandoned", "dead end",
            "no luck", "rejected", "ruled out", "not the cause", "no effect", "won't work",
            "gave up", "backed out", "rolled back", "no change", "still fails", "inconclusive",
            "not a pass", "didn't help", "did not help", "made it worse", "no improvement",
            "no go", "no-go", "didn't pan out", "did not pan out", "no dice", "not viable",
            "scrapped", "discarded",
        ),
        "superseded": ("superseded", "obsolete", "outdated", "replaced by", "no longer", "stale"),
        "done": ("done", "finished", "completed", "merged", "shipped", "resolved", "fixed"),
        "open": ("todo", "to do", "open", "pending", "next", "blocked", "waiting",
                 "in progress", "wip", "work in progress", "half done", "half-done",
                 "uncommitted", "not committed"),
    },
    "zh": {
        "failed": ("失败", "不行", "放弃", "没用", "无效", "回滚", "排除", "不是原因", "行不通",
                   "报错", "没成", "不成", "没效果", "白费", "不通过", "没解决", "不管用", "驳回"),
        "superseded": ("已废弃", "废弃", "作废", "过时", "已过期", "被取代", "不再"),
        "done": ("已完成", "完成了", "搞定", "已合并", "已解决", "已修复"),
        "open": ("待办", "未完成", "待定", "待确认", "进行中", "卡着", "改了一半", "做到一半",
                 "未提交"),
    },
    "ja": {
        "failed": ("ダメ", "だめ", "却下", "失敗", "効果なし", "断念", "戻した", "無理", "不可",
                   "NG", "不完全", "効かない", "うまくいかない", "動かない", "ロールバック",
                   "差し戻し", "没案", "ボツ", "不採用"),
        "superseded": ("廃止", "取り消し", "古い", "置き換え", "撤回"),
        "done": ("完了", "済み", "済", "対応済", "マージ済"),
        "open": ("未対応", "未完了", "対応中", "保留", "要確認", "作業中", "途中", "進行中",
                 "未コミット"),
    },
    "ko": {
        "failed": ("실패", "안 됨", "안됨", "포기", "롤백", "효과 없음", "원복", "기각", "불가",
                   "안 됐", "안됐", "소용없", "효과없", "반려", "폐기"),
        "superseded": ("폐기", "대체됨", "무효", "취소"),
        "done": ("완료", "해결", "머지됨"),
        "open": ("할 일", "미완", "진행 중", "대기", "보류", "수정 중", "작업 중", "진행중",
                 "편집 중", "커밋 안 됨", "커밋 안됨", "미커밋"),
    },
    "es": {
        "failed": ("falló", "fallo", "fracasó", "descartado", "descartada", "no funcionó",
                   "no funciona", "revertido", "revertida", "no sirve", "no sirvió",
                   "sin efecto", "abandonado"),
        "superseded": ("obsoleto", "obsoleta", "reemplazado", "reemplazada", "ya no"),
        "done": ("hecho", "hecha", "terminado", "listo", "resuelto", "completado"),
        "open": ("pendiente", "por hacer", "abierto", "bloqueado", "a medias", "en curso",
                 "en progreso", "sin commit"),
    },
    "pt": {
        "failed": ("falhou", "descartado", "não funcionou", "não funciona", "revertido",
                   "não deu certo", "sem efeito", "abandonado"),
        "superseded": ("obsoleto", "substituído", "não vale mais"),
        "done": ("feito", "concluído", "resolvido", "pronto"),
        "open": ("pendente", "a fazer", "em aberto", "bloqueado", "em andamento", "pela metade",
                 "editando", "não commitado", "sem commit", "em progresso"),
    },
    "de": {
        "failed": ("fehlgeschlagen", "verworfen", "funktioniert nicht", "zurückgerollt",
                   "sackgasse", "klappt nicht", "gescheitert", "ging nicht", "ohne wirkung",
                   "hat nicht geholfen", "doch nicht", "abgelehnt", "lehnt ab", "geplatzt",
                   "bricht ab", "brach ab", "fehlversuch", "bringt nichts", "hilft nicht",
                   "nicht möglich", "aufgegeben", "rückgängig gemacht", "ohne erfolg",
                   "bringt nix", "hat nicht funktioniert", "kein effekt", "revertiert"),
        "superseded": ("veraltet", "überholt", "ersetzt", "obsolet"),
        "done": ("erledigt", "fertig", "gemergt", "behoben"),
        "open": ("offen", "ausstehend", "zu tun", "blockiert", "in arbeit", "halb fertig",
                 "angefangen"),
    },
    "fr": {
        "failed": ("échoué", "échec", "abandonné", "ne marche pas", "ne fonctionne pas",
                   "annulé", "rejeté", "impasse", "n'a pas marché", "sans effet",
                   "n'a pas aidé", "aucun effet", "n'a rien changé", "laissé tomber"),
        "superseded": ("obsolète", "remplacé", "périmé"),
        "done": ("fait", "terminé", "corrigé", "résolu"),
        "open": ("à faire", "en attente", "ouvert", "bloqué", "en cours", "à moitié"),
    },
    "nl": {
        "failed": ("mislukt", "faalde", "faalt", "werkt niet", "werkte niet", "afgewezen",
                   "teruggedraaid", "verworpen", "doodlopend", "geen effect", "hielp niet",
                   "opgegeven", "niet mogelijk", "gaf dezelfde fout", "geen verschil"),
        "superseded": ("achterhaald", "vervangen door", "verouderd", "niet meer geldig"),
        "done": ("gedaan", "klaar", "afgerond", "opgelost", "gemerged"),
        "open": ("open", "te doen", "nog doen", "geblokkeerd", "bezig", "half af",
                 "niet gecommit", "onderhanden"),
    },
    "it": {
        "failed": ("fallito", "fallita", "scartato", "scartata", "non funziona",
                   "non ha funzionato", "annullato", "revertito", "nessun effetto",
                   "non è servito", "abbandonato", "bocciato", "peggiorato", "vicolo cieco"),
        "superseded": ("obsoleto", "obsoleta", "superato", "sostituito da", "non più valido"),
        "done": ("fatto", "completato", "risolto", "chiuso", "mergiato"),
        "open": ("da fare", "in sospeso", "aperto", "bloccato", "in corso", "a metà",
                 "non committato"),
    },
    "pl": {
        "failed": ("nie działa", "nie zadziałało", "porażka", "odrzucone", "odrzucony",
                   "wycofane", "cofnięte", "porzucone", "bez efektu", "nie pomogło"),
        "superseded": ("nieaktualne", "zastąpione", "przestarzałe"),
        "done": ("zrobione", "gotowe", "zakończone", "naprawione"),
        "open": ("do zrobienia", "otwarte", "w toku", "zablokowane", "w trakcie"),
    },
    "ru": {
        "failed": ("не работает", "не сработало", "провал", "откатили", "отклонено",
                   "отказались", "без эффекта", "не помогло", "тупик"),
        "superseded": ("устарело", "заменено", "неактуально"),
        "done": ("готово", "сделано", "исправлено", "закрыто"),
        "open": ("сделать", "в работе", "открыто", "заблокировано", "в процессе"),
    },
}  # fmt: skip

# Imperatives that make a note a rule (before knowledge): per language, substrings (CJK) or
# whole words. A note the user marks as a rule ("Rule:", "規則", "规则") counts too.
RULE_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("never", "always", "must", "don't", "do not", "only ever", "required", "rule",
           "mandatory", "forbidden", "ask before", "ask first", "no exceptions"),
    "zh": ("必须", "不要", "别", "禁止", "一律", "永远", "务必", "不许", "不准", "规则", "一定要"),
    "ja": ("しない", "禁止", "必ず", "しないこと", "してはいけない", "ルール", "厳守", "絶対"),
    "ko": ("하지 마", "금지", "반드시", "항상", "절대", "규칙", "말 것", "않는다"),
    "es": ("nunca", "siempre", "no hagas", "prohibido", "obligatorio", "regla", "debe"),
    "pt": ("nunca", "sempre", "não faça", "proibido", "obrigatório", "regra"),
    "de": ("niemals", "nie", "immer", "muss", "verboten", "regel", "pflicht"),
    "fr": ("jamais", "toujours", "ne pas", "interdit", "obligatoire", "règle", "doit"),
    "nl": ("nooit", "altijd", "moet", "verboden", "niet doen", "regel", "verplicht"),
    "it": ("non mai", "sempre", "non fare", "vietato", "obbligatorio", "regola", "deve"),
    "pl": ("nigdy", "zawsze", "musi", "zakazane", "nie rób", "zasada", "obowiązkowo"),
    "ru": ("никогда", "всегда", "нельзя", "запрещено", "обязательно", "правило", "не делать"),
}  # fmt: skip

# Words that open a decision ("DECISION (with Rafael): …", "决定：…", "Entscheidung: …"): a
# decision holds until superseded, however old the entry it was written in.
DECISION_WORDS = (
    "decision", "decided", "we decided", "agreed", "decisión", "decidido", "decidimos",
    "acordado", "decisão", "decidimos", "entscheidung", "entschieden", "beschlossen",
    "décision", "décidé", "决定", "决策", "结论", "定了", "決定", "方針", "結論", "결정", "결론",
    "besluit", "besloten", "decisione", "deciso", "decyzja", "решение", "решили",
)  # fmt: skip

# Words that mark an entry as the one things stand at ("**current CI number**", "| current |",
# "ÚLTIMA FILA VÁLIDA"): counted only where the author sets them apart — in bold, in brackets,
# alone in a table cell, after a dash or semicolon at the end, or shouted in capitals.
CURRENT_WORDS = (
    "current", "latest", "valid", "still valid", "in force", "actual", "vigente", "válido",
    "válida", "aktuell", "gültig", "actuel", "actuelle", "en vigueur", "atual", "現在", "最新",
    "当前", "现行", "有効", "현재", "최신", "유효", "huidig", "huidige", "geldig", "attuale",
    "valido", "aktualny", "текущий", "актуально",
)  # fmt: skip

# Where the reason of a failed attempt starts (the clause after it is the reason).
REASON_CUES = (
    "because", "reason:", "reason is", "cause:", "caused by", "due to", "root cause", "turns out",
    "turned out", "原因", "因为", "由于", "理由", "导致", "原因は", "理由は", "せいで", "원인",
    "때문", "이유", "porque", "causa", "motivo", "debido a", "weil", "grund:", "ursache",
    "parce que", "à cause", "cause :", "omdat", "doordat", "reden:", "oorzaak", "perché",
    "poiché", "causa:", "ponieważ", "przyczyna", "потому что", "из-за", "причина",
    # a "why" label opens the reason ("por qué no sirvió: …", "why: …", "warum: …")
    "why:", "why it", "por qué", "por que", "porquê", "warum", "pourquoi", "为什么", "为啥",
    "なぜ", "何故", "왜", "waarom", "dlaczego", "почему",
)  # fmt: skip

# Where an attempt that looked fine turned out wrong ("but", 但是, 그런데, しかし, pero, …): the
# reason follows, when no explicit cue names it.
TURN_CUES = (
    "but ", "however", "turned out", "until ", "但是", "但", "结果", "可是", "然而", "그런데",
    "하지만", "그러나", "しかし", "ところが", "でも", "pero ", "sin embargo", "aber ", "jedoch",
    "mais ", "cependant", "porém", "mas ", "maar ", "echter", "però", "tuttavia", "однако",
)  # fmt: skip

# An item that opens as an attempt ("Tried …", "시도:", "試した", "Intento 3") is read as one:
# it keeps its reason like a failed one (what was tried, and how it came out).
ATTEMPT_WORDS = (
    "tried", "attempt", "try:", "experiment", "试了", "尝试", "試した", "試し", "トライ", "시도",
    "intento", "probé", "probamos", "versuch", "probiert", "essai", "tentative", "tentativa",
    "geprobeerd", "poging", "tentativo", "provato", "próba", "próbowałem", "попытка",
    "попробовали",
    # an explanation of why something failed is read like one ("Reason: …", "Cause #2 found")
    "reason", "cause", "root cause", "原因", "원인", "causa", "ursache", "理由",
)  # fmt: skip

# A negation: a red herring ruled out ("It was not the poll thread: …", 不是, ではなく, 아니라,
# no era, nicht, pas) often introduces the real reason in the same sentence.
NEGATION_CUES = (
    " not ", "n't ", "isn't", "wasn't", "不是", "并非", "而是", "ではな", "じゃな", "아니", "않",
    " no es ", " no era ", " no fue ", " nicht ", " kein", " pas ", " não ", " niet ",
    " geen ", " non ", " nie ", " не ",
)  # fmt: skip

# Where an explanation concludes ("So …", 所以, つまり, 따라서, por lo tanto, daher, donc).
CONCLUSION_CUES = (
    "so ", "therefore", "thus", "which means", "所以", "因此", "结论", "つまり", "結論", "따라서",
    "결론", "그래서", "por lo tanto", "así que", "conclusión", "daher", "deshalb", "also ",
    "donc", "portanto", "então", "daarom", "quindi", "perciò", "więc", "поэтому",
)  # fmt: skip

_FAILED_MARK = re.compile(r"❌|✘|✗|✖|🚫|⛔")
_SYMBOLS: tuple[tuple[ItemState, re.Pattern[str]], ...] = (
    ("superseded", re.compile(r"\(superseded[^)]*\)|\bsuperseded\b", re.IGNORECASE)),
    ("open", re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\[\s\]|☐)")),
    ("done", re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\[[xX]\]")),
    ("failed", _FAILED_MARK),
    ("done", re.compile(r"✅|✔|☑|✓")),
)
# Done/open words count only at an item's opening ("Done: …", "TODO …", "完了 …"): inside a
# status line ("本番反映済み 5 件", "3 open PRs") they describe something else.
HEAD_WORDS_CHARS = 14
OPENING_SLACK = 3  # a done/open word must start within the opening's first characters
_OPENING = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\[[^\]]{0,12}\]\s*)?[*_`\s]*")
_STRIKE = re.compile(r"~~(.+?)~~", re.DOTALL)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _word_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    latin = [w for w in words if not _CJK.search(w)]
    cjk = [w for w in words if _CJK.search(w)]
    parts = []
    if latin:
        parts.append(r"(?<![\w])(?:" + "|".join(re.escape(w) for w in latin) + r")(?![\w])")
    if cjk:
        parts.append("|".join(re.escape(w) for w in cjk))
    return re.compile("|".join(parts) if parts else r"(?!x)x", re.IGNORECASE)


_STATE_PATTERNS: dict[ItemState, re.Pattern[str]] = {
    state: _word_pattern(
        tuple(word for table in STATE_WORDS.values() for word in table.get(state, ()))
    )
    for state in ("failed", "superseded", "done", "open")
}
_ATTEMPT = _word_pattern(ATTEMPT_WORDS)
_DATED = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*[\[(]?\d{4}-\d{2}-\d{2}[\])]?:?\s*")
_ATTEMPT_THEN = re.compile(f"(?:{_ATTEMPT.pattern})[^\n→]{{0,12}}(?:→|->|=>)", re.IGNORECASE)
_REASON_LABEL = re.compile(
    r"(?:(?<![\w])(?:reason|root cause|cause|causa|motivo|ursache|grund|raison)"
    r"|原因|원인|이유|理由)\s*[:：]",
    re.IGNORECASE,
)
_RULE_PATTERN = _word_pattern(tuple(w for words in RULE_WORDS.values() for w in words))


def struck_out(text: str) -> bool:
    """Given an item, return whether most of it is struck through (~~…~~)."""
    struck = sum(len(match.group(1)) for match in _STRIKE.finditer(text))
    letters = len(text.strip())
    return struck > 0 and struck >= 0.4 * letters


def unstruck(text: str) -> str:
    """Given a text, return it without its struck spans: "~~655~~ 649 ms" says 649 ms."""
    return _STRIKE.sub("", text)


def item_state(text: str) -> ItemState:
    """Given an item's text, return its state from its own marks (first line weighs most)."""
    if struck_out(text):
        return "superseded"
    head = text.split("\n", 1)[0]
    for state, pattern in _SYMBOLS:
        if pattern.search(head):
            return state
    for state, pattern in _SYMBOLS:
        if state in ("failed", "superseded") and pattern.search(text):
            return state
    opening = _OPENING.sub("", head)[:HEAD_WORDS_CHARS]
    # A superseded word marks the item at its opening ("Obsolete: …", "廃止: …"); inside the
    # text it describes something else ("… which no longer matches", "F-06 HS256 廃止").
    match = _STATE_PATTERNS["superseded"].search(opening)
    if match is not None and match.start() <= OPENING_SLACK:
        return "superseded"
    failed = _STATE_PATTERNS["failed"]
    # "커밋 안 됨" is "not committed": a failure word inside an open phrase is no failure
    if failed.search(text) and failed.search(_STATE_PATTERNS["open"].sub(" ", text)):
        return "failed"
    for state in ("open", "done"):
        match = _STATE_PATTERNS[state].search(opening)
        if match is not None and match.start() <= OPENING_SLACK:
            return state
    if _ATTEMPT.search(_OPENING.sub("", _DATED.sub("", head))[: HEAD_WORDS_CHARS + 6]):
        return "failed"
    if _ATTEMPT_THEN.search(head):
        return "failed"  # "… 라이브러리도 시도 → …", "tried X -> Y": an attempt and its outcome
    if _REASON_LABEL.search(text):
        return "failed"  # "… 원인: …", "Root cause: …": why something broke, kept like a dead end
    return "plain"


_ATTEMPT_HEADING = _word_pattern(
    (*ATTEMPT_WORDS, "attempts", "dead end", "dead ends", "pitfalls", "gotchas", "踩坑", "弯路",
     "失败", "失敗", "ハマりどころ", "실패", "시도", "fallidos", "intentos", "versuche",
     "sackgassen", "échecs", "essais", "tentativas", "没案", "ボツ", "却下", "不採用", "废案",
     "rejected", "ruled out", "descartes", "verworfen", "valkuilen", "pogingen", "tentativi",
     "vicoli ciechi", "próby", "попытки")
)  # fmt: skip


_DECISION = _word_pattern(DECISION_WORDS)
DECISION_OPENING = 24  # a decision word within an item's first characters opens it


def decides(text: str) -> bool:
    """Given an item's text, return whether it opens as a decision ("Decision: …", "决定 …")."""
    opening = _OPENING.sub("", _DATED.sub("", text.split("\n", 1)[0]))[:DECISION_OPENING]
    return _DECISION.search(opening) is not None


_CURRENT = "|".join(re.escape(word) for word in sorted(CURRENT_WORDS, key=len, reverse=True))
_CURRENT_WORD = rf"(?<![^\W\d_])(?:{_CURRENT})(?![^\W\d_])"
_CURRENT_WORD_RE = re.compile(_CURRENT_WORD)
_CURRENT_MARK = re.compile(
    rf"\*\*[^*\n]{{0,40}}?{_CURRENT_WORD}[^*\n]{{0,40}}?\*\*"  # **current CI number**
    rf"|[(\[（【|]\s*{_CURRENT_WORD}\s*[)\]）】|]"  # (current), | current |
    rf"|[;—–]\s*{_CURRENT_WORD}\W{{0,3}}$",  # "lazy client; current"
    re.IGNORECASE | re.MULTILINE,
)
_SHOUTED = re.compile(r"(?<!\w)[^\W\d_a-z]{3,}(?:\s+[^\W\d_a-z]{3,})+(?!\w)")


def marked_current(text: str) -> bool:
    """Given an entry's text, return whether its author marks it as where things stand now
    ("— **current CI number**", "| D5 | … | current |", "ÚLTIMA FILA VÁLIDA")."""
    if _CURRENT_MARK.search(text):
        return True
    return any(
        _CURRENT_WORD_RE.search(shout.casefold()) and shout.upper() == shout
        for shout in _SHOUTED.findall(text)
    )


# Words that open a heading over work left in progress ("## 作業中のファイル", "### EDITANDO
# AGORA (não commitado)", "## WIP"): that section is where the work stands.
IN_PROGRESS_WORDS = (
    "wip", "work in progress", "in progress", "editing", "currently editing", "uncommitted",
    "not committed", "half done", "half-done", "a medias", "sin commit", "en curso",
    "en progreso", "editando", "não commitado", "sem commit", "em andamento", "pela metade",
    "in arbeit", "halb fertig", "en cours", "作業中", "対応中", "途中", "進行中", "未コミット",
    "进行中", "改了一半", "做到一半", "수정 중", "작업 중", "편집 중", "진행 중", "진행중",
    "onderhanden", "half af", "niet gecommit", "in lavorazione", "a metà", "in corso",
    "w trakcie", "в работе",
)  # fmt: skip
_IN_PROGRESS = _word_pattern(IN_PROGRESS_WORDS)


def in_progress(heading: str) -> bool:
    """Given a heading's words, return whether it opens over work left in progress."""
    match = _IN_PROGRESS.search(_OPENING.sub("", heading)[:HEAD_WORDS_CHARS])
    return match is not None and match.start() <= OPENING_SLACK


def failure_at(text: str) -> int | None:
    """Given a text, return where its first failure word or mark stands (None: nowhere)."""
    found = [
        match.start()
        for match in (_STATE_PATTERNS["failed"].search(text), _FAILED_MARK.search(text))
        if match is not None
    ]
    return min(found) if found else None


def marked_failed(text: str) -> bool:
    """Given a text, return whether it carries a failure mark (❌, ✗, …)."""
    return _FAILED_MARK.search(text) is not None


def names_attempts(heading: str) -> bool:
    """Given a heading's words, return whether it names attempts or dead ends."""
    return _ATTEMPT_HEADING.search(heading) is not None


# A prohibition shouted in capitals ("NO prod changes Friday–Sunday", "KEINE Deploys", "NIE
# wdrażać"): "no" in lower case is too common a word to count.
_SHOUTED_NO = re.compile(r"(?<![\w-])(?:NO|NOT|KEIN|KEINE|NIE|PAS|NÃO|NON|НЕ|НЕЛЬЗЯ)(?= [^\W\d_])")


def rule_force(text: str) -> int:
    """Given a note's text, return how many imperatives it states (0: knowledge, not a rule)."""
    return len(_RULE_PATTERN.findall(text)) + len(_SHOUTED_NO.findall(text))


def reason_start(text: str, cues: tuple[str, ...] = REASON_CUES) -> int | None:
    """Given an item's text, return where its reason clause starts (None: no cue)."""
    folded = text.casefold()
    best: int | None = None
    for cue in cues:
        position = folded.find(cue)
        if position > 0 and (best is None or position < best):
            best = position
    return best
