"""`carryd doctor`: check a setup end to end, one line per check, exit 1 on a problem.

Checks, in the order a new user meets them: the root (it exists, holds Markdown or carryd's
state folder, and that folder is not a link or another user's), the model (it loads, and it
is the one the index's vectors were made with), the index (counts, entries without vectors),
how carryd reads each workspace's PLAN.md and ledger headings (a warn for a ledger heading it
does not recognise), each host's hooks and the root they name, and
the service. Each line reads `ok|warn|FAIL  what: detail`, and a warn or FAIL line says what
to run. Only FAIL makes the exit status 1; a host that is simply not set up is a warn.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from carryd.carry.ledger import parse_ledger
from carryd.carry.plan import history_items
from carryd.daemon.hosts.settings_files import HOSTS, Host, carryd_event_of, settings_path
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.layout import check_root, list_workspaces
from carryd.daemon.running.service import current_platform, plan_service
from carryd.daemon.running.status import index_counts
from carryd.daemon.state import pid_alive, read_state, refuse_redirected_state
from carryd.index.errors import CarrydError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

Verdict = Literal["ok", "warn", "FAIL"]
Check = tuple[Verdict, str, str]


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd doctor`: print every check; exit 1 when one FAILs."""
    failed = False
    for verdict, what, detail in checks(settings):
        print(f"{verdict:<4}  {what}: {detail}")
        failed = failed or verdict == "FAIL"
    return 1 if failed else 0


def checks(settings: Settings) -> Iterator[Check]:
    """Given settings, yield (verdict, what, detail) for each check, in order."""
    root_check = _root(settings)
    yield root_check
    yield _model(settings)
    if root_check[0] == "FAIL":
        return
    yield from _index(settings)
    yield from _headings(settings)
    for host in HOSTS:
        yield _hooks(settings, host)
    yield _service(settings)


def _root(settings: Settings) -> Check:
    try:
        check_root(settings)
        refuse_redirected_state(settings)
    except CarrydError as error:
        return "FAIL", "root", str(error)
    workspaces = ", ".join(list_workspaces(settings)) or "none yet (a top-level folder is one)"
    return "ok", "root", f"{settings.root_path} (workspaces: {workspaces})"


def _model(settings: Settings) -> Check:
    embedder, reason = load_embedder_for(settings)
    if embedder is None:
        return "FAIL", "model", f"{reason}"
    where = f" from {settings.model.model_path}" if settings.model.model_path else ""
    return "ok", "model", f"{embedder.identity.name} loads{where}"


def _index(settings: Settings) -> Iterator[Check]:
    try:
        counts = index_counts(settings)
    except CarrydError as error:
        yield "FAIL", "index", str(error)
        return
    if counts is None:
        yield "warn", "index", f"none yet: `carryd index --root {settings.root_path}` builds it"
        return
    entries, vectors = counts.get("entries", 0), counts.get("vectors", 0)
    detail = f"{counts.get('files', 0)} files, {entries} entries, {vectors} vectors"
    embedder, _ = load_embedder_for(settings, lazy=True)
    if embedder is not None and entries:
        from carryd.index.store import Store

        with Store.open(settings.db_path) as store:
            own = store.vector_count(embedder.identity.key())  # the new set's, mid-way
            re_embedding = store.next_identity() == embedder.identity.key()
        if own < entries and re_embedding:
            yield (
                "warn",
                "index",
                (
                    f"{detail}; re-embedding for the configured model: {own}/{entries}, the "
                    f"old model's vectors answer meanwhile: `carryd index --root "
                    f"{settings.root_path}` (or the daemon) finishes it"
                ),
            )
            return
        if own < entries:
            yield (
                "warn",
                "index",
                (
                    f"{detail}; {entries - own} entries have no vector of the configured model: "
                    f"`carryd index --root {settings.root_path}` embeds them"
                ),
            )
            return
    yield "ok", "index", detail


def _headings(settings: Settings) -> Iterator[Check]:
    """For every workspace with a PLAN.md or a ledger, read from the files themselves (a
    workspace never carried yet too): a warn naming the ledger headings outside carryd's
    section table (carried last), else an ok saying how carryd reads the plan and ledger."""
    carry = settings.carry
    for workspace in list_workspaces(settings):
        folder = settings.root_path / workspace
        ledger, plan = _text(folder / carry.ledger_file), _text(folder / carry.plan_file)
        if ledger is None and plan is None:
            continue
        what = f"headings {workspace}"
        if isinstance(ledger, OSError) or isinstance(plan, OSError):
            error = ledger if isinstance(ledger, OSError) else plan
            yield "warn", what, f"cannot read it: {error}"
            continue
        unknown = parse_ledger(ledger, names=carry.sections).unrecognised if ledger else ()
        if unknown:
            quoted = ", ".join(f"'{name}'" for name in unknown)
            yield (
                "warn",
                what,
                (
                    f"the ledger's {quoted} is not a section carryd knows; it is carried last "
                    f"(rename it, or add the name under [carry.sections] in the config)"
                ),
            )
            continue
        read = [] if ledger is None else [f"{carry.ledger_file}: every section known"]
        if plan is not None:
            entries = len(history_items(plan))
            read.append(
                f"{carry.plan_file}: current state and {entries} history entries"
                if entries
                else f"{carry.plan_file}: all current state (no history heading or dated log)"
            )
        yield "ok", what, "; ".join(read)


def _text(path: Path) -> str | OSError | None:
    """Given a file, return its text (None: there is none; the error when it cannot be read)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as error:
        return error


def _hooks(settings: Settings, host: Host) -> Check:
    path = settings_path(host, home=Path.home(), project=None, codex_home=os.getenv("CODEX_HOME"))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "warn", f"hooks {host}", f"not set up (`carryd setup {host}` wires them in)"
    except (OSError, ValueError) as error:
        return "FAIL", f"hooks {host}", f"{path}: cannot read it ({error})"
    commands = [text for text in _strings(data) if carryd_event_of(text, host) is not None]
    if not commands:
        return "warn", f"hooks {host}", f"{path} has none of carryd's (`carryd setup {host}`)"
    roots = {_root_of(command) for command in commands}
    wrong = sorted(str(root) for root in roots if root is not None and not _same(root, settings))
    if wrong:
        return (
            "FAIL",
            f"hooks {host}",
            (
                f"{path}: the hooks name root {', '.join(wrong)}, not {settings.root_path}: "
                f"`carryd setup {host} --root {settings.root_path}` points them here"
            ),
        )
    named = "the configured root" if roots == {None} else str(settings.root_path)
    return "ok", f"hooks {host}", f"{len(commands)} hooks in {path}, for {named}"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _root_of(command: str) -> Path | None:
    words = shlex.split(command)
    for position, word in enumerate(words[:-1]):
        if word == "--root":
            return Path(words[position + 1]).expanduser()
    return None


def _same(path: Path, settings: Settings) -> bool:
    try:
        return path.resolve() == settings.root_path.resolve()
    except OSError:
        return False


def _service(settings: Settings) -> Check:
    plan = plan_service(settings, platform=current_platform())
    recorded = read_state(settings) or {}
    running = pid_alive(recorded.get("pid")) and recorded.get("state") not in ("stopped", None)
    daemon = f"daemon running (pid {recorded.get('pid')})" if running else "no daemon running"
    if plan.path.exists():
        return "ok", "service", f"{plan.name} installed ({plan.path}); {daemon}"
    return (
        "warn",
        "service",
        (
            f"not installed; {daemon} (`carryd service install --root {settings.root_path}` keeps "
            f"index and carries fresh, or run `carryd run` yourself)"
        ),
    )
