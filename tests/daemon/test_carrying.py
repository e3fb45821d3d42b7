"""Writing carries end to end: real files, real index, real model (no stand-ins).

Covers the manifest, redaction of planted secrets in the .md AND the manifest, skipped
writes, every fallback path (unreadable ledger, a directory in its place, a corrupt index, a
missing index) still writing a carry with its reason, and the `carryd carry` command.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from carryd.daemon.carries.carrying import build_workspace_carry, write_carries, write_carry
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import DEFAULT_DISCIPLINE, Settings, load_settings
from carryd.daemon.errors import UsageError
from carryd.daemon.layout import list_workspaces

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c2Tg1JYbGq3nB0x7m8K9ZqLr4T5uVwXyZ0a1B2c3D4e5F6g\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRETS = (AWS, GITHUB, "MIIEowIBAAKCAQEA", "BEGIN RSA PRIVATE KEY")

FILES = {
    "MEMORY.md": """\
# Personal defaults

## Automation language
<!-- slot: preference:automation-language -->
I usually prefer Python for scripts and automation; Bash only for one-liners.

## Commit style
Write commit messages that say why, not what.
""",
    "webshop/notes.md": f"""\
# Webshop conventions

## Automation language
<!-- slot: preference:automation-language -->
In this repository all automation is TypeScript (`scripts/*.ts`, run with tsx).

## Refund deploy key {AWS}
Refunds are deployed with the key above; the GitHub token is {GITHUB}.

## Money
Amounts are integers in minor units (cents) everywhere; never floats.
""",
    "webshop/logs/2026-11-28.md": """\
# 2026-11-28

## Refund currency mismatch
The multi-currency contract test fails with ERR_REFUND_CURRENCY_MISMATCH because the refund
is created in the shop's default currency while the charge was in EUR.
""",
    "webshop/PLAN.md": f"""\
# Webshop checkout rewrite

## Current state
- Checkout service moved from the monolith to `services/checkout/`.
- Stripe webhooks verified with the signing secret; deploy token = {GITHUB}
- Next milestone: remove the legacy adapter once the refund flow passes its contract tests.

## History
- 2026-10-02: split the cart from the monolith; sessions now live in Redis.
""",
    "webshop/handoff/LEDGER.md": f"""\
# Handoff ledger

## Task status
- Refund flow: contract tests 14/17 passing.

## Goal
Make the refund flow pass all 17 contract tests (refund currency, automation scripts).
Deploy with {AWS}.

{PEM}

## Tried approaches and failure reasons
- ❌ Retrying refunds inside the webhook handler: Stripe times out after 10 s. Failed.
- ✅ Queueing refunds in `refund_jobs`: solved the timeouts.

## Progress and next steps
- [ ] Fix `ERR_REFUND_CURRENCY_MISMATCH` in the multi-currency contract test.
- [ ] Write the refund automation script: which automation language for scripts?
""",
    "tooling/PLAN.md": """\
# Dotfiles

## Current state
Migrating shell setup from zsh to fish.
""",
}


def make_root(root: Path, files: dict[str, str] = FILES) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def settings_for(root: Path) -> Settings:
    return load_settings(None, root=root)


def indexed(root: Path) -> Settings:
    from carryd.daemon.indexer.indexing import sync_root

    settings = settings_for(root)
    report = sync_root(settings)
    assert report.degraded is None, report.degraded
    return settings


@pytest.fixture
def memory_root(tmp_path: Path, use_model: Path) -> Settings:
    return indexed(make_root(tmp_path / "memory"))


def manifest(settings: Settings, workspace: str) -> dict:  # type: ignore[type-arg]
    return json.loads((settings.carry_dir / f"{workspace}.json").read_text(encoding="utf-8"))


def test_list_workspaces_skips_state_ignored_hidden_and_root_level_folders(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    for name in (".carryd", ".git", "node_modules", ".hidden", "notes", "zeta"):
        (root / name).mkdir(exist_ok=True)
    (root / "file.md").write_text("x", encoding="utf-8")
    assert list_workspaces(settings_for(root)) == ["tooling", "webshop", "zeta"]


def test_write_carries_writes_carry_and_manifest(memory_root: Settings) -> None:
    results = write_carries(memory_root)
    assert [(r.workspace, r.changed, r.fallback) for r in results] == [
        ("tooling", True, False),
        ("webshop", True, False),
    ]
    webshop = results[1]
    text = webshop.path.read_text(encoding="utf-8")
    assert text.startswith(DEFAULT_DISCIPLINE + "\n\n")
    assert "# Handoff ledger (`webshop/handoff/LEDGER.md`)" in text
    assert "<recalled_memory>" in text
    # The one absolute path is the root, named in the trailer's commands (issue 10 item 6:
    # they run as written from any folder; this overrides DESIGN's "no absolute paths").
    trailer = text[text.index("# How to read more") :]
    root = str(memory_root.root_path)
    assert root not in text[: len(text) - len(trailer)]
    assert f"carryd expand <id> --root {root}`" in trailer
    assert f"--workspace webshop --root {root}`" in trailer
    data = manifest(memory_root, "webshop")
    assert data["sha256"] == webshop.sha256 and data["bytes"] == webshop.bytes
    assert data["fallback"] is False and data["reason"] is None
    assert {source["path"] for source in data["sources"]} == {
        "webshop/handoff/LEDGER.md",
        "webshop/PLAN.md",
        "MEMORY.md",  # root-level memory: standing defaults, candidates every time
    }
    assert all(len(source["sha256"]) == 64 for source in data["sources"])
    assert {d["name"] for d in data["segments"]} == {
        "discipline", "notice", "anchors", "ledger", "plan", "standing", "memory", "trailer",
    }  # fmt: skip
    assert data["generated_at"] and data["carryd_version"]
    assert data["budgets"]["total_chars"] == 18_000
    # Planned within what flat injection would cost (or the memory budget and the framing).
    assert data["chars"] <= data["budgets"]["planned_within_chars"] <= 18_000
    reasons = {d["memory_id"]: d["reason"] for d in data["memory"]["decisions"]}
    assert "selected" in reasons.values()
    # Several short queries: the goal's first sentence, the status line, each open next step.
    assert data["memory"]["queries"] == [
        "Make the refund flow pass all 17 contract tests (refund currency, automation scripts).",
        "Refund flow: contract tests 14/17 passing.",
        "Write the refund automation script: which automation language for scripts?",
        "Fix `ERR_REFUND_CURRENCY_MISMATCH` in the multi-currency contract test.",
    ]
    # Ledger and plan entries are in the carry already: not recalled a second time.
    assert data["memory"]["excluded_already_in_carry"]
    assert data["anchors"]["shown"] == data["anchors"]["total"] > 0


def test_slot_conflict_is_decided_by_authority_end_to_end(tmp_path: Path, use_model: Path) -> None:
    root = make_root(tmp_path / "memory")
    config = tmp_path / "config.toml"
    # A low gate so that both automation-language entries reach the conflict stage.
    config.write_text("[carry]\nmemory_min_confidence = 0.001\n", encoding="utf-8")
    from carryd.daemon.indexer.indexing import sync_root

    settings = load_settings(config, root=root)
    sync_root(settings)
    result = write_carry(settings, "webshop")
    decisions = manifest(settings, "webshop")["memory"]["decisions"]
    by_slot = {
        (d["authority"], d["reason"]): d
        for d in decisions
        if d["slot"] == "preference:automation-language"
    }
    assert set(by_slot) == {("workspace_override", "selected"), ("user_default", "authority_loser")}
    loser = by_slot[("user_default", "authority_loser")]
    assert loser["winner_id"] == by_slot[("workspace_override", "selected")]["memory_id"]
    text = result.path.read_text(encoding="utf-8")
    assert "all automation is TypeScript" in text and "prefer Python" not in text


def test_planted_secrets_reach_neither_carry_nor_manifest(memory_root: Settings) -> None:
    write_carries(memory_root)
    for workspace in ("webshop", "tooling"):
        carry = (memory_root.carry_dir / f"{workspace}.md").read_text(encoding="utf-8")
        raw_manifest = (memory_root.carry_dir / f"{workspace}.json").read_text(encoding="utf-8")
        for secret in SECRETS:
            assert secret not in carry, (workspace, secret)
            assert secret not in raw_manifest, (workspace, secret)
    carry = (memory_root.carry_dir / "webshop.md").read_text(encoding="utf-8")
    assert "[redacted:aws_access_key]" in carry
    assert "[redacted:private_key]" in carry


def test_unchanged_carry_is_not_rewritten(memory_root: Settings) -> None:
    first = write_carry(memory_root, "webshop")
    carry_path = memory_root.carry_dir / "webshop.md"
    manifest_path = memory_root.carry_dir / "webshop.json"
    stamps = (carry_path.stat().st_mtime_ns, manifest_path.stat().st_mtime_ns)
    second = write_carry(memory_root, "webshop")
    assert first.changed and not second.changed
    assert second.sha256 == first.sha256
    assert (carry_path.stat().st_mtime_ns, manifest_path.stat().st_mtime_ns) == stamps
    manifest_path.unlink()
    third = write_carry(memory_root, "webshop")
    assert not third.changed and manifest_path.is_file()  # a missing manifest comes back
    assert carry_path.stat().st_mtime_ns == stamps[0]
    leftovers = [p.name for p in memory_root.carry_dir.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_changed_ledger_rewrites_the_carry(memory_root: Settings) -> None:
    before = write_carry(memory_root, "webshop")
    ledger = memory_root.root_path / "webshop/handoff/LEDGER.md"
    ledger.write_text(
        ledger.read_text(encoding="utf-8") + "- [ ] One more step.\n", encoding="utf-8"
    )
    after = write_carry(memory_root, "webshop")
    assert after.changed and after.sha256 != before.sha256
    assert "One more step." in after.path.read_text(encoding="utf-8")


def assert_fallback(settings: Settings, workspace: str, reason_part: str) -> str:
    result = write_carry(settings, workspace)
    assert result.fallback, result
    assert reason_part in (result.reason or "")
    text = result.path.read_text(encoding="utf-8")
    assert text.startswith(DEFAULT_DISCIPLINE + "\n\n")
    assert "flat fallback" in text and "# How to read more" in text
    assert len(text) <= settings.carry.total_chars
    data = manifest(settings, workspace)
    assert data["fallback"] is True and reason_part in data["reason"]
    for secret in SECRETS:
        assert secret not in text
        assert secret not in json.dumps(data, ensure_ascii=False)
    return text


def test_fallback_when_the_ledger_is_not_utf8(memory_root: Settings) -> None:
    ledger = memory_root.root_path / "webshop/handoff/LEDGER.md"
    ledger.write_bytes(ledger.read_bytes() + b"\n- broken byte \xff\xfe here\n")
    text = assert_fallback(memory_root, "webshop", "UnicodeDecodeError")
    assert "Queueing refunds" in text  # the flat carry still holds the ledger, decoded leniently
    assert "Checkout service moved" in text
    # … and the user's standing rules (issue 20: a failed planner is no reason to lose them)
    assert "# Your standing rules (`MEMORY.md`)" in text
    assert "Write commit messages that say why, not what." in text
    assert "MEMORY.md" in {s["path"] for s in manifest(memory_root, "webshop")["sources"]}


def test_fallback_when_the_ledger_is_a_directory(memory_root: Settings) -> None:
    ledger = memory_root.root_path / "webshop/handoff/LEDGER.md"
    ledger.unlink()
    ledger.mkdir()
    text = assert_fallback(memory_root, "webshop", "IsADirectoryError")
    assert "Checkout service moved" in text


def test_fallback_when_the_index_is_corrupt(memory_root: Settings) -> None:
    db = memory_root.db_path
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    assert_fallback(memory_root, "webshop", "index was unusable")


def test_fallback_when_the_index_is_missing(tmp_path: Path, use_model: Path) -> None:
    settings = settings_for(make_root(tmp_path / "memory"))
    assert not settings.db_path.exists()
    assert_fallback(settings, "webshop", "no index")
    assert not settings.db_path.exists()  # carry does not build an index behind your back
    # A workspace with nothing to recall needs no index.
    assert not write_carry(settings, "tooling").fallback


def test_an_invalid_sidecar_is_only_a_warning(memory_root: Settings) -> None:
    sidecar = memory_root.root_path / "webshop/handoff/sidecar.json"
    sidecar.write_text("{not json", encoding="utf-8")
    result = write_carry(memory_root, "webshop")
    assert not result.fallback
    data = manifest(memory_root, "webshop")
    assert any(warning.startswith("sidecar:") for warning in data["warnings"])
    assert "webshop/handoff/sidecar.json" in {source["path"] for source in data["sources"]}


def test_unknown_workspace_is_a_usage_error(memory_root: Settings) -> None:
    with pytest.raises(UsageError):
        write_carry(memory_root, "nope")
    with pytest.raises(UsageError):
        build_workspace_carry(memory_root, "../etc")


# --- the command ------------------------------------------------------------------------------


def run(root: Path, *args: str) -> int:
    return main(["carry", "--root", str(root), *args])


def test_cmd_carry_writes_all_and_prints_a_summary(memory_root: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    root = memory_root.root_path
    assert run(root) == 0
    out = capsys.readouterr().out
    assert "tooling: written" in out and "webshop: written" in out
    assert run(root, "--workspace", "webshop") == 0
    assert "webshop: unchanged" in capsys.readouterr().out


def test_cmd_carry_print(memory_root: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    root = memory_root.root_path
    assert run(root, "--print") == 2  # two workspaces: which one?
    assert "--workspace" in capsys.readouterr().err
    assert run(root, "--print", "--workspace", "webshop") == 0
    printed = capsys.readouterr().out
    write_carry(memory_root, "webshop")
    assert printed == (memory_root.carry_dir / "webshop.md").read_text(encoding="utf-8")


def test_cmd_carry_print_with_max_chars(memory_root: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    root = memory_root.root_path
    assert run(root, "--print", "--workspace", "webshop", "--max-chars", "2500") == 0
    small = capsys.readouterr().out
    assert len(small) <= 2_500
    assert small.startswith(DEFAULT_DISCIPLINE) and "# How to read more" in small
    # A usage error: the budget asked for cannot hold the required parts.
    assert run(root, "--print", "--workspace", "webshop", "--max-chars", "100") == 2
    assert "required carry segments need" in capsys.readouterr().err
    assert run(root, "--workspace", "webshop", "--max-chars", "2500") == 2
    assert run(root, "--print", "--workspace", "nope") == 2


def test_cmd_carry_print_with_one_workspace_needs_no_flag(
    tmp_path: Path, use_model: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    root = make_root(tmp_path / "one", {"solo/PLAN.md": "# Solo\n\n## Current state\nAlone.\n"})
    assert run(root, "--print") == 0
    out = capsys.readouterr().out
    assert "Alone." in out and "has no handoff ledger (`solo/handoff/LEDGER.md`)" in out


def test_written_files_are_private_to_the_user(memory_root: Settings) -> None:
    result = write_carry(memory_root, "webshop")
    assert os.stat(result.path).st_mode & 0o077 == 0


def test_a_discipline_too_big_for_the_budget_still_leaves_a_minimal_carry(tmp_path: Path) -> None:
    root = make_root(tmp_path / "memory", {"solo/PLAN.md": "# Solo\n\n## Current state\nok\n"})
    config = tmp_path / "config.toml"
    config.write_text('[carry]\ntotal_chars = 300\ndiscipline = """' + "D" * 400 + '"""\n')
    settings = load_settings(config, root=root)
    result = write_carry(settings, "solo")
    assert result.fallback and "do not fit" in (result.reason or "")
    assert result.path.read_text(encoding="utf-8").startswith("D" * 400 + "\n\n")


def test_write_carries_skips_a_workspace_that_vanished(tmp_path: Path) -> None:
    root = make_root(tmp_path / "memory", {"solo/PLAN.md": "# Solo\n\n## Current state\nok\n"})
    results = write_carries(settings_for(root), ["solo", "gone"])
    assert [result.workspace for result in results] == ["solo"]


def test_slots_from_the_warm_index_give_the_same_carry_as_slots_read_from_the_files(
    tmp_path: Path, use_model: Path
) -> None:
    """A local Recaller and the hook's recaller (which may recall through the daemon's socket)
    both hand carry hits that carry their slot. Same carry either way, slot conflict
    included."""
    from carryd.daemon.indexer.indexing import sync_root
    from carryd.daemon.indexer.model import load_embedder_for
    from carryd.daemon.layout import open_store
    from carryd.daemon.recall.access import recall_access
    from carryd.daemon.recall.recalling import Recaller

    root = make_root(tmp_path / "memory")
    config = tmp_path / "config.toml"
    config.write_text("[carry]\nmemory_min_confidence = 0.001\n", encoding="utf-8")
    settings = load_settings(config, root=root)
    sync_root(settings)
    embedder, degraded = load_embedder_for(settings)
    with open_store(settings) as store:
        local = Recaller(settings, store, embedder, degraded)
        from_index = build_workspace_carry(settings, "webshop", store=store, recaller=local)
    hook = recall_access(settings, daemon=False)
    try:
        from_files = build_workspace_carry(settings, "webshop", recaller=hook)
    finally:
        hook.close()
    assert from_index.text == from_files.text
    assert from_index.plan.memory_decisions == from_files.plan.memory_decisions
    assert any(
        decision.slot == "preference:automation-language"
        for decision in from_index.plan.memory_decisions
    )


def test_the_manifest_names_unrecognised_sections_and_they_are_still_planned(
    memory_root: Settings,
) -> None:
    ledger = memory_root.root_path / "webshop" / "handoff" / "LEDGER.md"
    ledger.write_text("## Goal\nship it\n\n## Random thoughts\n- maybe Kafka\n", encoding="utf-8")
    result = write_carry(memory_root, "webshop")
    manifest = json.loads((memory_root.carry_dir / "webshop.json").read_text(encoding="utf-8"))
    assert not result.fallback and manifest["fallback"] is False  # names are weights, no gate
    assert manifest["unrecognised_sections"] == ["Random thoughts"]
    assert "## Random thoughts\n- maybe Kafka" in result.path.read_text(encoding="utf-8")
    ledger.write_text(
        "## 目标\nship it\n\n## 决策\n- Kafka\n\n## 踩坑\n- ❌ Redis — lost acks\n",
        encoding="utf-8",
    )
    result = write_carry(memory_root, "webshop")
    manifest = json.loads((memory_root.carry_dir / "webshop.json").read_text(encoding="utf-8"))
    assert not result.fallback and manifest["unrecognised_sections"] == ["决策"]
    assert "## 决策\n- Kafka" in result.path.read_text(encoding="utf-8")


def test_the_inline_variant_is_written_beside_the_carry(tmp_path: Path, use_model: Path) -> None:
    """Issue 10 item 7: the daemon and `carryd carry` pre-build the SessionStart variant under
    the hook's inline budget, with its own sha256 in the manifest, byte-stable, rewritten only
    when its bytes change, and the same text the hook would otherwise plan."""
    import hashlib

    from carryd.daemon.carries.carrying import inline_budget, inline_path

    root = make_root(tmp_path / "memory")
    config = tmp_path / "config.toml"
    config.write_text("[hooks]\ninline_chars = 2500\n", encoding="utf-8")
    settings = load_settings(config, root=root)
    from carryd.daemon.indexer.indexing import sync_root

    sync_root(settings)
    result = write_carry(settings, "webshop")
    path = inline_path(settings, "webshop")
    inline = path.read_text(encoding="utf-8")
    full = result.path.read_text(encoding="utf-8")
    budget = inline_budget(settings, "webshop")
    assert len(full) > budget >= len(inline) > 0
    entry = manifest(settings, "webshop")["inline"]
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert entry["carry"] == ".carryd/carry/webshop.inline.md" and entry["budget_chars"] == budget
    # The same text the hook's own planning gives for that budget.
    planned = build_workspace_carry(settings, "webshop", max_chars=budget)
    assert inline == planned.text
    assert inline.startswith(DEFAULT_DISCIPLINE) and "# How to read more" in inline
    stamp = path.stat().st_mtime_ns
    write_carry(settings, "webshop")
    assert path.stat().st_mtime_ns == stamp and path.read_text(encoding="utf-8") == inline
    # A budget the required segments cannot meet: no variant, none left behind, none named.
    config.write_text("[hooks]\ninline_chars = 200\n", encoding="utf-8")
    settings = load_settings(config, root=root)
    write_carry(settings, "webshop")
    assert not path.exists() and manifest(settings, "webshop")["inline"] is None


def test_short_queries_find_a_workspace_note_and_the_gate_keeps_noise_out(
    tmp_path: Path, use_model: Path
) -> None:
    """Issue 10 item 5 end to end (real index, real model): a note that answers one open next
    step is recalled into the carry by that step's short query; a root-level rule that no
    query is about is carried anyway, at `user_default`; notes about nothing the ledger says
    stay out at the default gate (`carry.memory_min_confidence`)."""
    files = {
        "MEMORY.md": "# Defaults\n\n- Answer in short bullet points.\n",
        "notes/laptop.md": "# Laptop\n\n- The laptop has 16 GB of RAM and runs Fedora.\n",
        "notes/habits.md": "# Habits\n\n## Shell\n- Always use uv run, never bare pip.\n",
        "shop/notes/fx.md": (
            "# Currency conversion\n\nERR_REFUND_CURRENCY_MISMATCH comes from refunds created "
            "in the shop currency; convert with `fx.convert(amount, charge.currency)` first.\n"
        ),
        "shop/notes/garden.md": (
            "# Garden\n\nTomatoes need watering twice a week in July; basil every day.\n"
        ),
        "shop/notes/bike.md": "# Bike\n\nThe rear derailleur cable was replaced in May.\n",
        "shop/handoff/LEDGER.md": (
            "# Handoff ledger\n\n## Task status\n- Refund flow: contract tests 14/17 passing.\n\n"
            "## Goal\nMake the refund flow pass all 17 contract tests. Then remove the adapter.\n\n"
            "## Tried approaches and failure reasons\n- ❌ Retrying in the webhook: times out.\n\n"
            "## Progress and next steps\n"
            "- [ ] Fix ERR_REFUND_CURRENCY_MISMATCH in the multi-currency contract test.\n"
            "- [ ] Delete `lib/payments/legacy.js` once the tests pass.\n"
        ),
    }
    settings = indexed(make_root(tmp_path / "memory", files))
    result = write_carry(settings, "shop")
    text = result.path.read_text(encoding="utf-8")
    data = manifest(settings, "shop")
    # Found by the next step's query; shown as its L0 (`carryd expand` gives the rest).
    assert 'source="shop/notes/fx.md:1-3">\nCurrency conversion — ERR_REFUND_CURRENCY' in text
    # Root-level defaults stand under their files' names, as the user wrote them.
    assert "## Defaults (`MEMORY.md:1-3`)\n- Answer in short bullet points." in text
    # A root note that states no rule is knowledge: named by its file, not shown (issue 20).
    assert "16 GB of RAM" not in text
    assert "not shown (`carryd recall` finds them): notes/{laptop}.md" in text
    # A file's title with nothing under it is no default: only its section stands.
    assert "### Shell (`notes/habits.md:3-4`)\n- Always use uv run" in text
    assert "notes/habits.md:1`" not in text
    assert "Tomatoes" not in text and "derailleur" not in text  # noise stays out
    assert len(data["memory"]["queries"]) == 4


def test_writing_every_carry_removes_temp_files_and_carries_of_workspaces_gone(
    memory_root: Settings,
) -> None:
    write_carries(memory_root)
    carry_dir = memory_root.carry_dir
    # A writer killed between its temp file and the rename; a workspace renamed.
    (carry_dir / ".webshop.md.k9x2.tmp").write_bytes(b"half a carry")
    (carry_dir / ".webshop.json.0aa1.tmp").write_bytes(b"{")
    shutil.move(memory_root.root_path / "tooling", memory_root.root_path / "tools")
    (carry_dir / "README.md").write_text("a note the user keeps here\n", encoding="utf-8")
    # Writing one workspace (a watcher batch) leaves the folder as it is.
    write_carries(memory_root, ["webshop"])
    assert (carry_dir / ".webshop.md.k9x2.tmp").exists() and (carry_dir / "tooling.md").exists()
    results = write_carries(memory_root)
    assert [result.workspace for result in results] == ["tools", "webshop"]
    assert sorted(path.name for path in carry_dir.iterdir()) == [
        "README.md",
        "tools.json",
        "tools.md",
        "webshop.json",
        "webshop.md",
    ]


def test_a_carry_writer_waits_for_the_index_lock_and_a_hook_gives_up_soon(
    memory_root: Settings,
) -> None:
    import fcntl
    import time

    from carryd.daemon.indexer.index_lock import IndexBusy, lock_path

    path = lock_path(memory_root)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)  # another writer (an open file description apart)
    os.pwrite(descriptor, b"pid 4242: carryd index\n", 0)
    try:
        started = time.monotonic()
        with pytest.raises(IndexBusy, match="pid 4242: carryd index"):
            write_carry(memory_root, "webshop", lock_timeout=0.3)
        assert 0.3 <= time.monotonic() - started < 5
    finally:
        os.close(descriptor)
    assert write_carry(memory_root, "webshop", lock_timeout=0.3).bytes > 0
