"""Write each workspace's carry file and its manifest (the shell around `carryd.carry.render`).

For one workspace: read PLAN.md, handoff/LEDGER.md and handoff/sidecar.json; ask recall for the
ledger's goal and next steps (an in-process `Recaller`, or the daemon's warm one); build the
carry (pure); write `<root>/.carryd/carry/<workspace>.md` and `<workspace>.json` atomically
(temp file in the same folder, fsync, `os.replace`), and skip the write when the bytes are
unchanged.

I4 — the host is never left without a carry: any failure in any step (an unreadable ledger,
recall raising, a missing or corrupt index, a bug) is caught at ONE boundary, `_build`, logged
with the path and reason, and the carry becomes the ancestor's flat injection; the manifest
says `fallback: true` and why. Should even that fail, a minimal carry (discipline, a notice,
the trailer) is written. The one exception is `--max-chars`: a caller asking for a smaller
budget gets `PromptBudgetError` when the required segments alone do not fit.

The `.md` holds no timestamps and no absolute paths; those go to the manifest.

This module plans a carry and orchestrates a write; `sources` reads the files a carry is
planned from and `writing` writes the carry folder (carry, manifest, inline variant) and
tidies it. Their public names are re-exported here, so callers import from one place.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from carryd.carry.flat import FLAT_NOTE, FlatInputs, build_flat_carry, trailer
from carryd.carry.ledger import SectionNames
from carryd.carry.planner import SegmentDecision
from carryd.carry.render import (
    CarryBudgets,
    CarryInputs,
    build_carry,
    recall_queries,
)
from carryd.carry.select import MemorySelectionPolicy
from carryd.daemon.carries.inline import compose_context  # the hook's own framing, not a copy
from carryd.daemon.carries.sources import (  # noqa: F401 — re-exported
    SourceFile,
    read_sidecar,
    read_source,
    read_source_lenient,
)
from carryd.daemon.carries.writing import (  # noqa: F401 — re-exported
    CARRY_SUFFIXES,
    MANIFEST_VERSION,
    STATE_TEMP_AGE,
    BuiltCarry,
    CarryResult,
    carry_paths,
    inline_path,
    manifest_of,
    tidy_carry_dir,
    write_built_carry,
)
from carryd.daemon.errors import UsageError
from carryd.daemon.indexer.index_lock import index_lock
from carryd.daemon.indexer.scan import FileContent, read_markdown, scan_paths
from carryd.daemon.layout import check_workspace, list_workspaces
from carryd.daemon.recall.access import LocalRecall, RecallAccess
from carryd.index.entries import ROOT_LEVEL_DIRS, Entry, parse_entries
from carryd.index.errors import PromptBudgetError
from carryd.index.recall import RecallHit
from carryd.index.redact import redact

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.store import Store

log = logging.getLogger(__name__)

ROOT_RULES_FILE = "MEMORY.md"  # the root-level rules the flat fallback carries

# Seconds `write_carry` (a hook's rewrite) waits for another writer before giving up.
WRITE_CARRY_LOCK_TIMEOUT = 2.0


# --- workspaces -------------------------------------------------------------------------------


def budgets_from_settings(settings: Settings, *, max_chars: int | None = None) -> CarryBudgets:
    """Given settings (and an optional smaller total, such as the SessionStart variant's
    `hooks.inline_chars`), return the carry's budgets."""
    carry = settings.carry
    return CarryBudgets(
        free_chars=settings.hooks.inline_chars,
        total_chars=carry.total_chars if max_chars is None else max_chars,
        ledger_chars=carry.ledger_chars,
        plan_chars=carry.plan_chars,
        memory=MemorySelectionPolicy(
            min_score=carry.memory_min_confidence,
            top_k=carry.memory_top_k,
            max_chars=carry.memory_max_chars,
            max_tokens=carry.memory_max_tokens,
        ),
    )


# --- building ---------------------------------------------------------------------------------


def build_workspace_carry(
    settings: Settings,
    workspace: str,
    *,
    max_chars: int | None = None,
    store: Store | None = None,
    recaller: RecallAccess | None = None,
) -> BuiltCarry:
    """Given a workspace, return its carry (planned, or the flat fallback) without writing it.

    With `max_chars` the carry is planned under that smaller total budget and
    PromptBudgetError propagates when its required segments alone do not fit.
    """
    check_workspace(settings, workspace)
    source = recaller if recaller is not None else _local_recall(settings, store)
    try:
        return _build(settings, workspace, source, max_chars=max_chars)
    finally:
        if source is not recaller:
            source.close()


def _local_recall(settings: Settings, store: Store | None) -> RecallAccess:
    """Given settings (and the caller's store), return the recall a carry run opens itself:
    the model loaded up front, and no index is a failure (recall would silently find
    nothing), remembered so every workspace of the run falls back for the same reason."""
    return LocalRecall(settings, store=store, lazy_model=False, missing_index="fail")


def inline_budget(settings: Settings, workspace: str) -> int:
    """Given a workspace, return the budget its SessionStart variant is planned under: the
    hook's `hooks.inline_chars` less the line the hook adds (naming the full carry's path)."""
    carry_path = str(settings.carry_dir / f"{workspace}.md")
    return max(0, settings.hooks.inline_chars - len(compose_context("", carry_path)))


def _build(
    settings: Settings, workspace: str, source: RecallAccess, *, max_chars: int | None
) -> BuiltCarry:
    budgets = budgets_from_settings(settings, max_chars=max_chars)
    paths = _relative_paths(settings, workspace)
    # The full carry (no `max_chars`) is written with its inline variant beside it.
    inline = inline_budget(settings, workspace) if max_chars is None else None
    try:
        return _planned(settings, workspace, source, budgets, paths, inline=inline)
    except PromptBudgetError:
        if max_chars is not None:
            raise  # the caller asked for a budget the required segments cannot meet
        reason = "the required segments do not fit carry.total_chars"
        log.warning("%s: carry falls back to flat injection: %s", workspace, reason)
        return _flat(settings, workspace, budgets, paths, reason, strict=False)
    except Exception as error:  # noqa: BLE001 — I4: the one boundary; never leave a host without a carry
        reason = redact(f"{type(error).__name__}: {error}")
        log.warning(
            "%s: carry falls back to flat injection: %s",
            settings.root_path / workspace,
            reason,
        )
        return _flat(settings, workspace, budgets, paths, reason, strict=max_chars is not None)


def _relative_paths(settings: Settings, workspace: str) -> dict[str, str]:
    carry = settings.carry
    return {
        "ledger": f"{workspace}/{carry.ledger_file}",
        "plan": f"{workspace}/{carry.plan_file}",
        "sidecar": f"{workspace}/{carry.sidecar_file}",
    }


def _planned(
    settings: Settings,
    workspace: str,
    source: RecallAccess,
    budgets: CarryBudgets,
    paths: Mapping[str, str],
    *,
    inline: int | None = None,
) -> BuiltCarry:
    root = settings.root_path
    sources: list[SourceFile] = []
    follow = settings.index.follow_links_outside_root
    ledger_text = read_source(root, paths["ledger"], sources, follow=follow)
    plan_text = read_source(root, paths["plan"], sources, follow=follow)
    warnings: list[str] = []
    sidecar_text = read_sidecar(root, paths["sidecar"], sources, warnings, follow=follow)
    inputs = CarryInputs(
        workspace=workspace,
        discipline=settings.carry.discipline,
        ledger_path=paths["ledger"],
        plan_path=paths["plan"],
        ledger_text=ledger_text,
        plan_text=plan_text,
        sidecar_text=sidecar_text,
        section_names=SectionNames(**dataclasses.asdict(settings.carry.sections)),
        root_defaults=_root_defaults(settings, sources, warnings),
        root=str(root.absolute()),
    )
    queries = recall_queries(inputs)
    limit = max(settings.recall.limit, 4 * settings.carry.memory_top_k)
    hits, degraded = recall_many(source, queries, workspace=workspace, limit=limit)
    inputs = dataclasses.replace(inputs, recall_hits=hits)
    plan = build_carry(inputs, budgets)
    text = plan.text
    if redact(text) != text:  # I3, belt and braces: a secret formed across segment borders
        raise ValueError("the planned carry still held a secret after redaction")
    reason: str | None = None
    if plan.fallback is not None:  # the planner chose the flat carry, and says why
        reason = f"{plan.fallback}: fewer than two of the ledger's four sections recognised"
        log.info("%s: carry is flat: %s", workspace, reason)
    inline_text = None
    if inline is not None and len(text) > inline:  # a carry that fits is injected as it is
        inline_text = _inline_variant(settings, workspace, inputs, inline)
    return BuiltCarry(
        workspace=workspace,
        text=text,
        fallback=plan.fallback is not None,
        reason=reason,
        budgets=budgets,
        sources=tuple(sources),
        queries=queries,
        recall_degraded=degraded,
        plan=plan,
        segment_decisions=plan.segment_decisions,
        warnings=(*warnings, *plan.warnings),
        inline_text=inline_text,
        inline_budget=inline,
    )


def _inline_variant(
    settings: Settings, workspace: str, inputs: CarryInputs, budget: int
) -> str | None:
    """Given the full carry's inputs (recall already done), return the carry planned under
    the inline budget, or None when its required segments do not fit it (the hook then
    answers briefly, as it would have)."""
    try:
        text = build_carry(inputs, budgets_from_settings(settings, max_chars=budget)).text
    except PromptBudgetError as error:
        log.info("%s: no inline variant: %s", workspace, error)
        return None
    if redact(text) != text:  # I3, as for the full carry
        raise ValueError("the planned inline carry still held a secret after redaction")
    return text


def recall_many(
    source: RecallAccess, queries: Iterable[str], *, workspace: str, limit: int
) -> tuple[tuple[RecallHit, ...], str | None]:
    """Given short queries, return their hits merged and the first degradation reported.

    One recall access answers every query (one store, one loaded model). A hit found by
    several queries keeps its best confidence; the order is best confidence first, then the
    first query and rank that found it (stable: same index, same order). Every hit is kept
    (`min_confidence=0`): the carry's own gate, `carry.memory_min_confidence`, decides.
    """
    best: dict[str, tuple[RecallHit, int]] = {}
    degraded: str | None = None
    seen = 0
    for query in queries:
        answer = source.answer(query, workspace=workspace, limit=limit, min_confidence=0)
        degraded = degraded or answer.degraded
        for hit in answer.hits:
            held = best.get(hit.id)
            if held is None:
                best[hit.id] = (hit, seen)
                seen += 1
            elif hit.confidence > held[0].confidence:
                best[hit.id] = (hit, held[1])
    merged = sorted(best.values(), key=lambda pair: (-pair[0].confidence, pair[1]))
    return tuple(hit for hit, _ in merged), degraded


def _root_defaults(
    settings: Settings, sources: list[SourceFile], warnings: list[str]
) -> tuple[Entry, ...]:
    """Given the settings, return the root-level memory's entries (MEMORY.md and other
    Markdown at the root, `notes/`…), sorted by path and line: the user's standing defaults.

    Read the way the indexer reads them (links out of the root, size limit, UTF-8); a file
    that cannot be read is a warning for the manifest, never an error.
    """
    root = settings.root_path
    try:
        tops = sorted(
            child.name
            for child in root.iterdir()
            if child.name.lower().endswith(".md") or child.name in ROOT_LEVEL_DIRS
        )
    except OSError as error:
        warnings.append(f"root-level memory: cannot list {root}: {error.strerror or error}")
        return ()
    found = scan_paths(root, tops, settings.index)
    entries: list[Entry] = []
    for relative in sorted(found.files):
        content = read_markdown(
            root,
            relative,
            settings.index.max_file_bytes,
            follow_links_outside_root=settings.index.follow_links_outside_root,
        )
        if not isinstance(content, FileContent):
            if content is not None:
                warnings.append(f"root-level memory: {content.path}: {content.reason}")
            continue
        sources.append(SourceFile(relative, content.sha256, content.size, content.mtime_ns / 1e9))
        entries.extend(
            entry for entry in parse_entries(relative, content.text) if _says_something(entry)
        )
    return tuple(entries)


def _says_something(entry: Entry) -> bool:
    """Given a root-level entry, return False when it is a heading with nothing under it (a
    file's `# Title` above its `##` sections): standing in the carry it would be a bare heading,
    and its sections, which hold the rules, are entries of their own."""
    lines = entry.text.splitlines()
    if entry.heading_path and lines:
        lines = lines[1:]
    return any(line.strip() for line in lines)


def _flat(
    settings: Settings,
    workspace: str,
    budgets: CarryBudgets,
    paths: Mapping[str, str],
    reason: str,
    *,
    strict: bool,
) -> BuiltCarry:
    """Given why the planned carry failed, return the flat-injection carry.

    It never raises, except PromptBudgetError when `strict` (a caller-chosen budget that not
    even the flat carry's required parts fit); otherwise a minimal carry is the last resort.
    """
    root = settings.root_path
    sources: list[SourceFile] = []
    follow = settings.index.follow_links_outside_root
    ledger_text = read_source_lenient(root, paths["ledger"], sources, follow=follow)
    plan_text = read_source_lenient(root, paths["plan"], sources, follow=follow)
    # The fallback still carries the user's standing rules and cuts at item boundaries,
    # newest kept (issue 20): a failure of the planner is no reason to lose them.
    rules_text = read_source_lenient(root, ROOT_RULES_FILE, sources, follow=follow)
    flat_inputs = FlatInputs(
        workspace=workspace,
        discipline=settings.carry.discipline,
        plan_text=plan_text,
        ledger_text=ledger_text,
        plan_path=paths["plan"],
        ledger_path=paths["ledger"],
        root=str(root.absolute()),
        whole_items=True,
        rules_text=rules_text,
        rules_path=ROOT_RULES_FILE,
    )
    decisions: tuple[SegmentDecision, ...] = ()
    try:
        flat = build_flat_carry(
            flat_inputs,
            total_chars=budgets.total_chars,
            plan_chars=budgets.plan_chars,
            ledger_chars=budgets.ledger_chars,
        )
        text, decisions = flat.text, flat.decisions
    except PromptBudgetError:
        if strict:
            raise
        reason = f"{reason}; flat injection does not fit either"
        log.warning("%s: minimal carry written: %s", root / workspace, reason)
        text = _minimal(settings, workspace, paths)
    except Exception as error:  # noqa: BLE001 — I4: even the fallback failing must leave a carry
        reason = f"{reason}; flat injection failed too: {type(error).__name__}: {error}"
        log.warning("%s: minimal carry written: %s", root / workspace, reason)
        text = _minimal(settings, workspace, paths)
    return BuiltCarry(
        workspace=workspace,
        text=text,
        fallback=True,
        reason=redact(reason),
        budgets=budgets,
        sources=tuple(sources),
        queries=(),
        recall_degraded=None,
        plan=None,
        segment_decisions=decisions,
        warnings=(),
    )


def _minimal(settings: Settings, workspace: str, paths: Mapping[str, str]) -> str:
    """Given a workspace, return the carry of very last resort: discipline, notice, trailer."""
    closing = trailer(
        workspace,
        ledger_path=paths["ledger"],
        plan_path=paths["plan"],
        expand=False,
        root=str(settings.root_path.absolute()),
    )
    return f"{settings.carry.discipline}\n\n{FLAT_NOTE}\n\n{closing}\n"


# --- writing ----------------------------------------------------------------------------------


def write_carry(
    settings: Settings,
    workspace: str,
    *,
    store: Store | None = None,
    recaller: RecallAccess | None = None,
    lock_timeout: float | None = WRITE_CARRY_LOCK_TIMEOUT,
) -> CarryResult:
    """Given a workspace, (re)write its carry and manifest; return what happened.

    Raises UsageError when `workspace` is not a folder of the root, and IndexBusy when another
    writer holds the index lock for longer than `lock_timeout` (a hook must not wait for a
    cold index: it plans the carry in memory instead).
    """
    check_workspace(settings, workspace)
    return write_carries(
        settings, [workspace], store=store, recaller=recaller, lock_timeout=lock_timeout
    )[0]


def write_carries(
    settings: Settings,
    workspaces: Iterable[str] | None = None,
    *,
    store: Store | None = None,
    recaller: RecallAccess | None = None,
    lock_timeout: float | None = None,
) -> list[CarryResult]:
    """Given workspaces (None: all of them), (re)write their carries; return one result each.

    One recaller serves every workspace of the call (the one passed in, or one opened here
    on first need and closed at the end). A named workspace that is no folder of the root (it
    may have just been deleted) is skipped with a warning.

    Carry writers hold the root's index lock (`indexer.index_lock`) like index writers:
    two writers interleaving could leave one's .md beside the other's manifest. Writing every
    workspace (None: the daemon's reconcile, `carryd carry`) also tidies the carry folder:
    temp files a killed writer left, and the carries of workspaces that are gone.
    """
    with index_lock(settings, timeout=lock_timeout):
        return _write_carries(settings, workspaces, store=store, recaller=recaller)


def _write_carries(
    settings: Settings,
    workspaces: Iterable[str] | None,
    *,
    store: Store | None,
    recaller: RecallAccess | None,
) -> list[CarryResult]:
    if workspaces is None:
        tidy_carry_dir(settings, list_workspaces(settings))
    names = list_workspaces(settings) if workspaces is None else sorted(set(workspaces))
    present = []
    for workspace in names:
        try:
            check_workspace(settings, workspace)
        except UsageError as error:
            log.warning("carry skipped: %s", error)
            continue
        present.append(workspace)
    names = present
    source = recaller if recaller is not None else _local_recall(settings, store)
    results: list[CarryResult] = []
    try:
        for workspace in names:
            built = _build(settings, workspace, source, max_chars=None)
            results.append(write_built_carry(settings, built))
    finally:
        if source is not recaller:
            source.close()
    return results
