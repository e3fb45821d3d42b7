"""The one-shot commands: parse what the command line asked, call the service, print.

`carryd index|verify|recall|expand|carry|plan|status` live here; the services they call
(`indexer.indexing`, `recall.access`, `carries.carrying`, `carries.archive`, `running.status`)
live in the layers below. `carryd run`, `service`, `hook`, `setup` and `mcp` have modules of
their own (`running.run`, `running.service`, `hosts.hook_command`, `hosts.setup`, `mcp.server`).
JSON exists here and at the control socket, nowhere inside.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon.carries.archive import archive_plans
from carryd.daemon.carries.carrying import CarryResult, build_workspace_carry, write_carries
from carryd.daemon.errors import UsageError
from carryd.daemon.indexer.indexing import sync_root
from carryd.daemon.indexer.scan import shown
from carryd.daemon.indexer.verifying import verify_root
from carryd.daemon.layout import check_workspace, is_workspace, list_workspaces
from carryd.daemon.progress import SyncDisplay, progress_mode
from carryd.daemon.recall.access import recall_access
from carryd.daemon.recall.recalling import answer_json
from carryd.daemon.running.status import render_text, status_report
from carryd.index.errors import PromptBudgetError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.recall import RecallAnswer


# --- index, verify ------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd index [--json]`: sync once, showing each phase's progress on stderr (none with
    --json; `progress.SyncDisplay`); exit 0 (also when degraded or files were skipped)."""
    mode = progress_mode(as_json=getattr(args, "json", False))
    with SyncDisplay(mode=mode) as display:
        report = sync_root(settings, progress=display.embedding, phase_progress=display.phase)
    for note in report.notes:
        print(f"carryd: {note}", file=sys.stderr)
    for problem in report.problems:
        print(f"carryd: skipped {problem.path}: {problem.reason}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return 0
    print(
        f"indexed {report.files} files, {report.entries} entries: embedded {report.embedded}, "
        f"removed {report.removed}, {report.unchanged} files unchanged "
        f"({report.seconds:.1f} s)"
    )
    if report.problems:
        print(f"skipped {len(report.problems)} files (see above)")
    if report.degraded:
        print(f"degraded: no vectors (lexical recall only): {report.degraded}")
    return 0


def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd verify [--json]`: exit 0 when index and files agree, 1 otherwise."""
    report = verify_root(settings)
    for note in report.notes:
        print(f"carryd: {note}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps(report.to_json(), ensure_ascii=False))
    elif report.ok:
        for problem in report.skipped:
            print(f"skipped (not indexed): {problem.path}: {problem.reason}")
        print("index and files agree")
    else:
        for difference in report.problems:
            print(f"{difference.kind}: {difference.path or '-'}: {difference.detail}")
        print(
            f"{len(report.problems)} differences: `carryd index` picks up changed files; "
            f"damage inside the index goes when {settings.db_path} is deleted and rebuilt"
        )
    return 0 if report.ok else 1


# --- recall, expand -----------------------------------------------------------------------


def _recall_params(
    query: str, workspace: str | None, limit: int | None, min_confidence: float | None
) -> dict[str, Any]:
    return {
        "query": query,
        "workspace": workspace,
        "limit": limit,
        "min_confidence": min_confidence,
    }


@dataclass(frozen=True)
class BadLine:
    """A line of a `recall --batch` file that is no request: its number and what is wrong."""

    number: int
    message: str


def _batch_requests(path: str, args: argparse.Namespace) -> list[dict[str, Any] | BadLine]:
    """Given a JSON-lines file ("-" for stdin), return its requests in order, a bad line as a
    `BadLine` naming it (`path:line`): one bad line does not cost the others' answers."""
    try:
        if path == "-":
            lines = sys.stdin.read().splitlines()
        else:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read the batch file: {error}") from error
    requests: list[dict[str, Any] | BadLine] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            requests.append(_batch_request(line, args) | {"line": number})
        except UsageError as error:
            requests.append(BadLine(number, f"{path}:{number}: {error}"))
    return requests


def _batch_request(line: str, args: argparse.Namespace) -> dict[str, Any]:
    """Given one line of a batch file, return its request; UsageError says what is wrong."""
    try:
        item = json.loads(line)
    except ValueError as error:
        raise UsageError(f"not a JSON object: {error}") from error
    if not isinstance(item, dict) or not isinstance(item.get("query"), str):
        raise UsageError('expected {"query": "…", "workspace"?: "…"}')
    if not item["query"].strip():
        raise UsageError("the query is empty")
    workspace = item.get("workspace", args.workspace)
    if workspace is not None and not isinstance(workspace, str):
        raise UsageError("'workspace' must be a string")
    limit = item.get("limit", args.limit)
    floor = item.get("min_confidence", args.min_confidence)
    if not isinstance(limit, int | None) or not isinstance(floor, int | float | None):
        raise UsageError("'limit' must be a whole number and 'min_confidence' a number")
    _check_numbers(limit, floor)
    return _recall_params(item["query"], workspace, limit, floor)


def _check_numbers(limit: int | None, min_confidence: float | None) -> None:
    # --limit 0 would ask for an answer that is empty by construction: say so instead.
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
        raise UsageError(f"--min-confidence must be between 0 and 1, got {min_confidence}")


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd recall QUERY | --batch FILE`: print the answer(s); exit 0."""
    query = getattr(args, "query", None)
    batch = getattr(args, "batch", None)
    if (query is None) == (batch is None):
        raise UsageError("give either a QUERY or --batch FILE (not both)")
    if query is not None and not query.strip():
        raise UsageError("the QUERY is empty")
    _check_numbers(args.limit, args.min_confidence)
    if batch is not None:
        return _recall_batch(settings, _batch_requests(batch, args))
    if args.workspace is not None:
        checked_workspace(settings, args.workspace)
    assert query is not None  # for the type checker: no --batch means a QUERY (checked above)
    params = _recall_params(query, args.workspace, args.limit, args.min_confidence)
    (typed,) = list(_answers(settings, [params]))
    answer = answer_json(typed)
    if getattr(args, "json", False):
        print(json.dumps(answer, ensure_ascii=False, indent=2))
    else:
        print(_listing(answer, ranked_all=args.min_confidence == 0))
    return 0


def _recall_batch(settings: Settings, requests: list[dict[str, Any] | BadLine]) -> int:
    """Given a batch's requests (a bad line as a `BadLine`), print one JSON line per line, in
    order: the answer, or {"line", "error"} (also on stderr); exit 2 when a line was bad."""
    for position, request in enumerate(requests):
        if isinstance(request, dict) and request["workspace"] is not None:
            try:
                checked_workspace(settings, request["workspace"])
            except UsageError as error:
                requests[position] = BadLine(request["line"], f"line {request['line']}: {error}")
    good = [request for request in requests if isinstance(request, dict)]
    answers = _answers(settings, good)
    for request in requests:
        if isinstance(request, BadLine):
            print(f"carryd: {request.message}", file=sys.stderr)
            line = {"line": request.number, "error": request.message}
            print(json.dumps(line, ensure_ascii=False), flush=True)
        else:
            print(json.dumps(answer_json(next(answers)), ensure_ascii=False), flush=True)
    for _ in answers:  # run out: its `finally` closes the recall access
        pass
    return 2 if len(good) < len(requests) else 0


def checked_workspace(settings: Settings, workspace: str) -> str:
    """Given a --workspace value, return it when it names a workspace of the root; else raise
    UsageError naming the known ones (the one check every command's --workspace goes through)."""
    check_workspace(settings, workspace)  # the name's shape, and that the folder exists
    if not is_workspace(settings, workspace):  # not the state folder, an ignored or hidden one
        known = ", ".join(list_workspaces(settings)) or "none"
        raise UsageError(
            f"{workspace!r} is not a workspace of {settings.root_path} (workspaces: {known})"
        )
    return workspace


def _listing(answer: Mapping[str, Any], *, ranked_all: bool = False) -> str:
    """Given a recall answer, return it as a short human-readable listing."""
    lines = []
    if answer.get("degraded"):
        lines.append(f"(degraded: {answer['degraded']})")
    hits = answer.get("hits", [])
    if not hits:
        lines.append(
            "no candidates: no entry shares a word with the query and none is close enough "
            "in meaning to be nominated"
            if ranked_all
            else "no memory above the confidence threshold (--min-confidence 0 lists every "
            "ranked candidate)"
        )
    for position, hit in enumerate(hits, start=1):
        lines.append(
            f"{position}. {hit['id']}  {hit['path']}:{hit['line_start']}-{hit['line_end']}  "
            f"confidence {hit['confidence']:.2f} ({hit['match_reason']})"
        )
        lines.append(f"   {hit['l0']}")
    if hits:
        lines.append("full text: carryd expand ID...")
    return "\n".join(lines)


def cmd_expand(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd expand ID...`: print full text; exit 1 when any id is missing."""
    ids = list(args.ids)
    access = recall_access(settings, daemon=True, missing_index="sync")
    try:
        answer = access.expand(ids)
    finally:
        access.close()
    if getattr(args, "json", False):
        print(json.dumps(answer, ensure_ascii=False, indent=2))
    else:
        for entry in answer["entries"]:
            where = f"{shown(entry['path'])}:{entry['line_start']}-{entry['line_end']}"
            print(f"<!-- {entry['id']} {where} -->")
            print(entry["text"].rstrip("\n"))
            print()
        for item in answer["missing"]:
            print(f"carryd: {item['id']}: {item['reason']}", file=sys.stderr)
    return 1 if answer["missing"] else 0


def _answers(settings: Settings, requests: Sequence[dict[str, Any]]) -> Iterator[RecallAnswer]:
    """Given recall requests, yield their answers: from the running daemon when one answers,
    else in-process (syncing the root once first when it has no index yet)."""
    access = recall_access(settings, daemon=True, missing_index="sync")
    try:
        for params in requests:
            yield access.answer(
                params["query"],
                workspace=params["workspace"],
                limit=params["limit"],
                min_confidence=params["min_confidence"],
            )
    finally:
        access.close()


# --- carry, plan, status ------------------------------------------------------------------


def cmd_carry(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd carry [--workspace W] [--print] [--max-chars N]`."""
    workspace: str | None = getattr(args, "workspace", None)
    max_chars: int | None = getattr(args, "max_chars", None)
    if max_chars is not None and max_chars < 1:
        raise UsageError(f"--max-chars must be at least 1, got {max_chars}")
    existing = list_workspaces(settings)
    if workspace is not None:
        checked_workspace(settings, workspace)
    if getattr(args, "print_", False):
        if workspace is None:
            if len(existing) != 1:
                known = ", ".join(existing) or "none"
                raise UsageError(
                    f"--print needs --workspace W when the root has {len(existing)} "
                    f"workspaces (workspaces: {known})"
                )
            workspace = existing[0]
        try:
            built = build_workspace_carry(settings, workspace, max_chars=max_chars)
        except PromptBudgetError as error:  # the asked budget cannot hold the required parts
            raise UsageError(f"--max-chars {max_chars}: {error}") from error
        if built.fallback:
            print(f"carryd: {workspace}: flat fallback: {built.reason}", file=sys.stderr)
        _print_text(built.text)
        return 0
    if max_chars is not None:
        raise UsageError("--max-chars plans a carry to print: use it with --print")
    # The carries are planned from the index: bring it up to date first (a stat walk when
    # nothing changed), so a carry written here reflects the files it then says it is from.
    report = sync_root(settings)
    for problem in report.problems:
        print(f"carryd: skipped {problem.path}: {problem.reason}", file=sys.stderr)
    try:
        results = write_carries(settings, None if workspace is None else [workspace])
    except OSError as error:
        print(f"carryd: cannot write carries in {settings.carry_dir}: {error}", file=sys.stderr)
        return 1
    if not results:
        print(f"no workspaces in {settings.root_path}")
    for result in results:
        print(_summary(result))
    return 0


def _summary(result: CarryResult) -> str:
    state = "written" if result.changed else "unchanged"
    line = f"{result.workspace}: {state}, {result.bytes} bytes → {result.path}"
    if result.fallback:
        line += f" (flat fallback: {result.reason})"
    return line


def _print_text(text: str) -> None:
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        sys.stdout.flush()
        buffer.write(text.encode("utf-8"))
        buffer.flush()
    else:
        sys.stdout.write(text)


def cmd_plan(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd plan archive [--workspace W] [--dry-run]`: print what moved (or would move);
    exit 1 if a plan failed."""
    if args.action != "archive":
        raise UsageError(f"unknown plan action {args.action!r} (known: archive)")
    workspace = getattr(args, "workspace", None)
    dry_run = bool(getattr(args, "dry_run", False))
    chosen = None if workspace is None else [checked_workspace(settings, workspace)]
    results = archive_plans(settings, chosen, dry_run=dry_run)
    for outcome in results:
        if outcome.reason != "no_plan" or workspace is not None:
            print(outcome.describe())
    if not results:
        print(f"no workspaces under {settings.root_path}")
    return 0 if all(outcome.ok for outcome in results) else 1


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """Print the status; return 0 when healthy, 1 when degraded or stale."""
    now = time.time()
    report = status_report(settings, now=now)
    if getattr(args, "json", False):
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        print(render_text(report, now=now))
    return 0 if report["healthy"] else 1
