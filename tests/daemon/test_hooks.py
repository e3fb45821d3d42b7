"""`carryd hook claude-code session-start|statusline`: recorded-shape host JSON in, a valid answer
out, exit 0 on every path, `additionalContext` within the inline budget, the carry never in
`systemMessage`, the bypass honoured, and the status line's hand-off hint exactly at 0.75."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import load_settings
from carryd.daemon.hosts.claude_code import statusline_text, used_fraction
from carryd.daemon.hosts.hook_events import Wire, session_start_answer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VENV_CARRYD = Path(sys.executable).absolute().parent / "carryd"
SOURCES = ("startup", "resume", "clear", "compact")


def session_start_input(cwd: str | None, source: str = "startup") -> str:
    """The shape Claude Code sends a SessionStart hook (its hooks reference)."""
    data: dict[str, Any] = {
        "session_id": "8a3c1f0e-5b2d-4c7e-9f10-2d6b7a9e4c11",
        "transcript_path": "/home/me/.claude/projects/-home-me-shop/8a3c1f0e.jsonl",
        "hook_event_name": "SessionStart",
        "source": source,
        "model": "claude-sonnet-4-5",
    }
    if cwd is not None:
        data["cwd"] = cwd
    return json.dumps(data)


def statusline_input(cwd: str | None, used_percentage: Any = 42.5, **overrides: Any) -> str:
    """The shape Claude Code sends a statusLine command (its statusline reference)."""
    data: dict[str, Any] = {
        "hook_event_name": "Status",
        "session_id": "8a3c1f0e-5b2d-4c7e-9f10-2d6b7a9e4c11",
        "transcript_path": "/home/me/.claude/projects/-home-me-shop/8a3c1f0e.jsonl",
        "model": {"id": "claude-opus-4-1", "display_name": "Opus"},
        "version": "2.0.14",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.0123, "total_duration_ms": 45000},
        "context_window": {
            "total_input_tokens": 15234,
            "total_output_tokens": 4521,
            "context_window_size": 200000,
            "used_percentage": used_percentage,
            "current_usage": {
                "input_tokens": 8500,
                "output_tokens": 1200,
                "cache_creation_input_tokens": 5000,
                "cache_read_input_tokens": 2000,
            },
        },
    }
    if cwd is not None:
        data["cwd"] = cwd
        data["workspace"] = {"current_dir": cwd, "project_dir": cwd}
    data.update(overrides)
    return json.dumps(data)


def run_hook(
    event: str,
    stdin: str,
    *args: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["hook", "claude-code", event, *args])
    return code, capsys.readouterr().out


def session_answer(output: str, budget: int = 9_000) -> str | None:
    """Check a SessionStart answer's shape; return its additionalContext (None when absent).

    A `systemMessage` is the person's notice of a setup problem: one short line, never the carry.
    """
    answer = json.loads(output)
    assert isinstance(answer, dict)
    assert set(answer) <= {"hookSpecificOutput", "systemMessage"}
    notice = answer.get("systemMessage")
    if notice is not None:
        assert isinstance(notice, str) and len(notice) <= 300
        assert DISCIPLINE_START not in notice, "the carry must never go to systemMessage"
    if "hookSpecificOutput" not in answer:
        return None
    specific = answer["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    context = specific["additionalContext"]
    assert isinstance(context, str)
    assert len(context) <= budget, f"additionalContext has {len(context)} chars > {budget}"
    return context


def notice_of(output: str) -> str:
    """The person's notice in a hook answer ("" when there is none)."""
    return str(json.loads(output).get("systemMessage") or "")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "memory"
    (memory / "shop" / "handoff").mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Defaults\n\nPrefer small commits.\n", encoding="utf-8")
    return memory


# --- SessionStart: every path answers validly -----------------------------------------------------


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "   \n",
        "not json at all",
        "[1, 2, 3]",
        "null",
        '"a string"',
        "{}",
        '{"cwd": 42, "source": "startup"}',
        '{"cwd": "", "source": "clear"}',
        '{"source": "compact"',
        "\udcff\udcfe garbage",
        session_start_input(None),
    ],
    ids=[
        "empty",
        "blank",
        "not-json",
        "array",
        "null",
        "string",
        "no-cwd",
        "cwd-number",
        "cwd-empty",
        "truncated",
        "undecodable",
        "missing-cwd",
    ],
)
def test_bad_or_missing_input_gets_a_small_valid_answer(
    stdin: str, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_hook(
        "session-start", stdin, "--root", str(root), monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 0
    assert session_answer(out) is None  # nothing for the model: it cannot fix the input
    assert notice_of(out).startswith("carryd: ")


@pytest.mark.parametrize("source", SOURCES)
def test_an_unknown_workspace_is_said_briefly(
    source: str,
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cwd = tmp_path / "projects" / "elsewhere"
    code, out = run_hook(
        "session-start",
        session_start_input(str(cwd), source),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0
    assert session_answer(out) is None
    assert "no workspace 'elsewhere'" in notice_of(out)


def test_the_state_dir_is_never_a_workspace(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / ".carryd").mkdir()
    code, out = run_hook(
        "session-start",
        session_start_input(str(root / ".carryd")),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0 and session_answer(out) is None
    assert "no workspace '.carryd'" in notice_of(out)


@pytest.mark.parametrize(
    "config_text",
    ['root = "/x"\nnot valid toml [[[', "root = 5\n", "[hooks]\nunknown_key = 1\n"],
    ids=["bad-toml", "wrong-type", "unknown-key"],
)
def test_a_broken_config_never_breaks_the_host(
    config_text: str,
    tmp_path: Path,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(config_text, encoding="utf-8")
    code, out = run_hook(
        "session-start",
        session_start_input(str(root / "shop"), "clear"),
        "--config",
        str(config),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0 and session_answer(out) is None
    assert "config error" in notice_of(out)
    code, out = run_hook(
        "statusline",
        statusline_input(str(root / "shop"), 80),
        "--config",
        str(config),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0 and out.count("\n") == 1 and "ctx 80%" in out and "config error" in out


def test_no_root_at_all_is_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_hook(
        "session-start", session_start_input("/tmp/x"), monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 0 and session_answer(out) is None
    assert "no memory root" in notice_of(out)


def test_a_tiny_inline_budget_is_still_kept(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'root = "{root}"\n[hooks]\ninline_chars = 40\n', encoding="utf-8")
    for stdin in ("", session_start_input(str(tmp_path / "nowhere" / "deep"))):
        code, out = run_hook(
            "session-start", stdin, "--config", str(config), monkeypatch=monkeypatch, capsys=capsys
        )
        assert code == 0
        session_answer(out, budget=40)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
HOOK_OBJECTS = st.fixed_dictionaries(
    {},
    optional={
        "cwd": st.text(max_size=60) | JSON_VALUES,
        "source": st.sampled_from([*SOURCES, "other"]) | JSON_VALUES,
        "hook_event_name": st.just("SessionStart"),
        "context_window": st.fixed_dictionaries(
            {}, optional={"used_percentage": st.floats() | JSON_VALUES}
        )
        | JSON_VALUES,
        "workspace": st.fixed_dictionaries({}, optional={"current_dir": JSON_VALUES}),
        "model": JSON_VALUES,
    },
)
ANY_STDIN = st.text(max_size=200) | HOOK_OBJECTS.map(json.dumps) | JSON_VALUES.map(json.dumps)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stdin=ANY_STDIN, budget=st.sampled_from([0, 1, 40, 400, 9_000]))
def test_any_input_gets_a_valid_answer_within_the_budget(
    stdin: str, budget: int, tmp_path: Path
) -> None:
    root = tmp_path / "memory"
    root.mkdir(exist_ok=True)
    config = tmp_path / f"budget-{budget}.toml"
    config.write_text(f'root = "{root}"\n[hooks]\ninline_chars = {budget}\n', encoding="utf-8")
    answer = session_start_answer(stdin, load_settings(config), None)
    assert answer.context is not None and len(answer.context) <= budget
    session_answer(Wire("SessionStart").answer(context=answer.context, notice=None), budget)
    line = statusline_text(stdin, load_settings(config), None)
    assert "\n" not in line and line.startswith(("[", "ctx "))


# --- bypass ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "anything"])
def test_the_bypass_makes_every_answer_empty(
    value: str, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CARRYD_HOOKS_OFF", value)
    code, out = run_hook(
        "session-start",
        session_start_input(str(root / "shop"), "clear"),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert (code, out) == (0, "{}\n")
    code, out = run_hook(
        "statusline",
        statusline_input(str(root / "shop"), 90),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert (code, out) == (0, "\n")


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", " OFF "])
def test_a_false_bypass_value_does_not_bypass(
    value: str, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CARRYD_HOOKS_OFF", value)
    code, out = run_hook(
        "session-start", "", "--root", str(root), monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 0 and session_answer(out) is None and notice_of(out)  # not bypassed


def test_the_bypass_variable_name_comes_from_the_config(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'root = "{root}"\n[hooks]\nbypass_env = "MY_OFF"\n', encoding="utf-8")
    monkeypatch.setenv("MY_OFF", "1")
    code, out = run_hook(
        "session-start", "", "--config", str(config), monkeypatch=monkeypatch, capsys=capsys
    )
    assert (code, out) == (0, "{}\n")


def test_the_bypass_holds_even_with_a_broken_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("this is [[ not toml", encoding="utf-8")
    monkeypatch.setenv("CARRYD_HOOKS_OFF", "1")
    code, out = run_hook(
        "session-start", "", "--config", str(config), monkeypatch=monkeypatch, capsys=capsys
    )
    assert (code, out) == (0, "{}\n")


# --- the status line ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("percent", "hint"),
    [(0, False), (42.5, False), (62, False), (62.6, False), (62.7, True), (75, True), (93, True)],
)
def test_the_hand_off_hint_appears_at_the_hand_off_point(
    percent: float,
    hint: bool,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run_hook(
        "statusline",
        statusline_input(str(root / "shop"), percent),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0 and out.endswith("\n") and out.count("\n") == 1
    # A 200k model compacts at 167k; the hand-off point is 75% of that: 125,250 tokens.
    assert f"ctx {int(percent)}% | hand-off 125k, compacts ~167k (status line)" in out
    assert ("/clear" in out) is hint
    assert "[Opus]" in out


def test_the_threshold_comes_from_the_config(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'root = "{root}"\n[hooks]\nhandoff_threshold = 0.6\n', encoding="utf-8")
    _, out = run_hook(
        "statusline",
        statusline_input(str(root / "shop"), 51),
        "--config",
        str(config),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert "/clear" in out and "hand-off 100k" in out  # 60% of 167k


@pytest.mark.parametrize(
    ("stdin", "shown"),
    [
        ("", "ctx ?"),
        ("garbage", "ctx ?"),
        ("[]", "ctx ?"),
        ("{}", "ctx ?"),
        (json.dumps({"context_window": {"used_percentage": None}}), "ctx ?"),
        (json.dumps({"context_window": {"used_percentage": "75"}}), "ctx ?"),
        (json.dumps({"context_window": {"used_percentage": 150}}), "ctx 100%"),
        (json.dumps({"context_window": {"used_percentage": -3}}), "ctx 0%"),
        (json.dumps({"model": "not-an-object", "context_window": 7}), "ctx ?"),
    ],
)
def test_missing_or_odd_fields_still_give_one_line(
    stdin: str,
    shown: str,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run_hook(
        "statusline", stdin, "--root", str(root), monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 0 and out.count("\n") == 1 and out.startswith(shown)


def test_used_fraction_falls_back_to_the_token_counts() -> None:
    data = json.loads(statusline_input("/x", None))
    assert used_fraction(data) == pytest.approx((8500 + 5000 + 2000) / 200000)
    assert used_fraction({"context_window": {"used_percentage": 75}}) == 0.75
    assert used_fraction({}) is None


def test_the_status_line_says_when_there_is_no_carry(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = run_hook(
        "statusline",
        statusline_input(str(root / "shop"), 30),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert "carry missing (shop)" in out
    _, out = run_hook(
        "statusline",
        statusline_input(str(root / "shop"), 80),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert "no carry yet" in out


def test_the_status_line_names_an_unknown_workspace(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = run_hook(
        "statusline",
        statusline_input(str(tmp_path / "other"), 80),
        "--root",
        str(root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert "no workspace 'other'" in out and "/clear" not in out


# --- the real console script ----------------------------------------------------------------------


def run_console(event: str, stdin: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(VENV_CARRYD), "hook", "claude-code", event, *args],
        input=stdin.encode("utf-8"),
        capture_output=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8")


def test_the_console_script_answers_every_source_and_bad_input(root: Path) -> None:
    env = dict(os.environ, LANG="C", LC_ALL="C")  # a host with an ASCII locale
    for stdin in ("", "{", session_start_input(str(root / "nowhere"), "resume")):
        session_answer(run_console("session-start", stdin, "--root", str(root), env=env))
    line = run_console("statusline", statusline_input(str(root / "shop"), 75), "--root", str(root))
    assert line.count("\n") == 1 and "ctx 75%" in line and "/clear" in line
    bypass = dict(env, CARRYD_HOOKS_OFF="1")
    assert run_console("session-start", "{}", "--root", str(root), env=bypass) == "{}\n"
    assert run_console("statusline", "{}", "--root", str(root), env=bypass) == "\n"


def test_stdin_closed_or_a_terminal_does_not_hang(root: Path) -> None:
    done = subprocess.run(
        [str(VENV_CARRYD), "hook", "claude-code", "session-start", "--root", str(root)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert session_answer(done.stdout.decode()) is None
    assert "no hook input" in notice_of(done.stdout.decode())


# --- real carries (the real offline model) --------------------------------------------------------

DISCIPLINE_START = "You are continuing work handed off from an earlier context"


def write_project(root: Path, workspace: str, *, items: int) -> None:
    """A workspace whose ledger and plan have `items` entries per list (long enough to matter)."""
    handoff = root / workspace / "handoff"
    handoff.mkdir(parents=True, exist_ok=True)
    tried = "\n".join(
        f"- ❌ Attempt {n}: retrying the refund job {n} inside the webhook handler timed out after "
        f"10 s (Stripe resent the event, job {n} refunded twice). Failed."
        for n in range(items)
    )
    upcoming = "\n".join(
        f"- [ ] Step {n}: compute partial refund {n} from the order's line items and cover it "
        f"with contract test `refund_case_{n}`."
        for n in range(items)
    )
    (handoff / "LEDGER.md").write_text(
        "# Handoff ledger\n\n## Task status\n- Refund flow: 14/17 contract tests pass.\n\n"
        "## Goal\nMake the refund flow pass every contract test, then delete the legacy "
        "payments adapter.\n\n"
        f"## Tried approaches and failure reasons\n{tried}\n\n"
        f"## Progress and next steps\n{upcoming}\n",
        encoding="utf-8",
    )
    current = "\n".join(
        f"- Service {n} moved to `services/s{n}/`; its payments still call the old adapter."
        for n in range(items)
    )
    (root / workspace / "PLAN.md").write_text(
        f"# Checkout rewrite\n\n## Current state\n{current}\n\n"
        "## History\n- 2026-10-02: cart split.\n",
        encoding="utf-8",
    )
    (root / workspace / "notes.md").write_text(
        "# Refund currency\n\nRefunds in a currency other than the charge's fail with "
        "`ERR_REFUND_CURRENCY_MISMATCH`; convert with the charge's rate.\n",
        encoding="utf-8",
    )


_BUILT: dict[str, Path] = {}


@pytest.fixture
def carried_root(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, use_model: Path) -> Path:
    """A root with a big workspace (carry > 9,000 chars) and a small one, indexed and carried.

    Indexed and carried for real once per session; each test gets its own copy (mtimes kept,
    so the carries stay fresh relative to their sources).
    """
    if "root" not in _BUILT:
        built = tmp_path_factory.mktemp("carried") / "memory"
        built.mkdir()
        (built / "MEMORY.md").write_text(
            "# Defaults\n\nPrefer small commits and contract tests.\n", encoding="utf-8"
        )
        write_project(built, "shop", items=40)
        write_project(built, "tiny", items=2)
        assert main(["index", "--root", str(built)]) == 0
        assert main(["carry", "--root", str(built)]) == 0
        _BUILT["root"] = built
    root = tmp_path / "memory"
    shutil.copytree(_BUILT["root"], root, symlinks=True)
    return root


def hook_context(
    root: Path,
    stdin: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    budget: int = 9_000,
) -> str:
    capsys.readouterr()
    code, out = run_hook(
        "session-start",
        stdin,
        *(args or ("--root", str(root))),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0
    context = session_answer(out, budget)
    assert context is not None
    return context


@pytest.mark.parametrize("source", SOURCES)
def test_the_carry_is_planned_under_the_inline_budget_for_every_source(
    source: str,
    carried_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from carryd.daemon.carries.carrying import build_workspace_carry
    from carryd.daemon.config import load_settings

    # Carried for this copy of the root: the carry names its root, and the pre-built inline
    # variant is planned for the line naming this root's full carry path.
    assert main(["carry", "--root", str(carried_root)]) == 0
    full = carried_root / ".carryd" / "carry" / "shop.md"
    assert len(full.read_text(encoding="utf-8")) > 9_000, "the full carry must not fit inline"
    context = hook_context(
        carried_root,
        session_start_input(str(Path("/home/me/src/shop")), source),
        monkeypatch,
        capsys,
    )
    suffix = f"\n\nFull carry: {full}"
    assert context.endswith(suffix)
    assert context.startswith(DISCIPLINE_START)
    # Planned, not cut: exactly what the carry planner makes of the smaller budget.
    planned = build_workspace_carry(
        load_settings(None, root=carried_root), "shop", max_chars=9_000 - len(suffix)
    )
    assert not planned.fallback
    assert context == planned.text.rstrip("\n") + suffix
    assert "## Progress and next steps" in context and "# How to read more" in context


def test_a_fresh_carry_that_fits_is_injected_byte_for_byte(
    carried_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    full = carried_root / ".carryd" / "carry" / "tiny.md"
    context = hook_context(
        carried_root, session_start_input("/home/me/src/tiny", "clear"), monkeypatch, capsys
    )
    assert context == full.read_text(encoding="utf-8").rstrip("\n") + f"\n\nFull carry: {full}"


def test_a_stale_or_missing_carry_is_rewritten_when_no_daemon_runs(
    carried_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    carry = carried_root / ".carryd" / "carry" / "tiny.md"
    ledger = carried_root / "tiny" / "handoff" / "LEDGER.md"
    ledger.write_text(
        ledger.read_text(encoding="utf-8") + "- [ ] Step 99: ship the currency fix.\n",
        encoding="utf-8",
    )
    # The carry was written a minute before this edit (no daemon ran since).
    past = ledger.stat().st_mtime - 60
    for written in (carry, carry.with_suffix(".json")):
        os.utime(written, (past, past))
    code, line = run_hook(
        "statusline",
        statusline_input("/home/me/src/tiny", 80),
        "--root",
        str(carried_root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert "carry stale (tiny/handoff/LEDGER.md newer)" in line and "/clear" in line

    context = hook_context(
        carried_root, session_start_input("/home/me/src/tiny", "clear"), monkeypatch, capsys
    )
    assert "Step 99: ship the currency fix" in context
    assert "Step 99: ship the currency fix" in carry.read_text(encoding="utf-8")

    carry.unlink()
    context = hook_context(
        carried_root, session_start_input("/home/me/src/tiny", "startup"), monkeypatch, capsys
    )
    assert carry.is_file() and context.startswith(DISCIPLINE_START)
    code, line = run_hook(
        "statusline",
        statusline_input("/home/me/src/tiny", 80),
        "--root",
        str(carried_root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert "fresh carry ready: /clear to hand off (tiny)" in line


@pytest.mark.parametrize(("percent", "hint"), [(62, False), (75, True)])
def test_the_status_line_with_a_fresh_carry(
    percent: int,
    hint: bool,
    carried_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, line = run_hook(
        "statusline",
        statusline_input("/home/me/src/shop", percent),
        "--root",
        str(carried_root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    point = "hand-off 125k, compacts ~167k (status line)"
    if hint:
        assert line == (
            f"[Opus] ctx 75% | {point} | at hand-off | fresh carry ready: /clear to hand off "
            "(shop)\n"
        )
    else:
        assert line == f"[Opus] ctx 62% | {point} | carry fresh (shop)\n"


def test_a_budget_too_small_for_the_required_segments_says_so_briefly(
    carried_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "small.toml"
    config.write_text(f'root = "{carried_root}"\n[hooks]\ninline_chars = 600\n', encoding="utf-8")
    context = hook_context(
        carried_root,
        session_start_input("/home/me/src/shop", "clear"),
        monkeypatch,
        capsys,
        "--config",
        str(config),
        budget=600,
    )
    assert context.startswith("carryd: no carry inlined for 'shop'")


def test_the_bypass_wins_over_a_real_carry(
    carried_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CARRYD_HOOKS_OFF", "1")
    code, out = run_hook(
        "session-start",
        session_start_input("/home/me/src/shop", "clear"),
        "--root",
        str(carried_root),
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert (code, out) == (0, "{}\n")


def test_the_console_script_injects_a_real_carry(carried_root: Path) -> None:
    context = session_answer(
        run_console(
            "session-start",
            session_start_input("/home/me/src/shop", "compact"),
            "--root",
            str(carried_root),
        )
    )
    assert context is not None and context.startswith(DISCIPLINE_START)
    assert context.endswith(f"Full carry: {carried_root / '.carryd' / 'carry' / 'shop.md'}")


def test_with_the_daemon_running_the_hook_recalls_through_it(
    carried_root: Path, tmp_path: Path
) -> None:
    """The warm daemon answers recall: the hook process never imports fastembed."""
    log = (tmp_path / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [str(VENV_CARRYD), "run", "--root", str(carried_root)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        probe = (
            "import io, json, sys\n"
            "from carryd.daemon.config import load_settings\n"
            "from carryd.daemon.control import request\n"
            "import time\n"
            f"settings = load_settings(None, root={str(carried_root)!r})\n"
            "deadline = time.monotonic() + 90\n"
            "while request(settings, 'ping', {}, timeout=1.0) is None:\n"
            "    assert time.monotonic() < deadline, 'daemon not ready'\n"
            "    time.sleep(0.2)\n"
            "from carryd.daemon.cli.dispatch import main\n"
            "sys.stdin = io.StringIO(json.dumps({'cwd': '/x/shop', 'source': 'clear'}))\n"
            "code = main(['hook', 'claude-code', 'session-start', '--root', "
            f"{str(carried_root)!r}])\n"
            "print('FASTEMBED' if 'fastembed' in sys.modules else 'NO-FASTEMBED', code)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=180, check=False
        )
        assert done.returncode == 0, done.stderr
        answer_line, marker = done.stdout.strip().splitlines()[-2:]
        context = session_answer(answer_line)
        assert context is not None and context.startswith(DISCIPLINE_START)
        assert marker == "NO-FASTEMBED 0"
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()


def test_a_cwd_no_path_can_hold_is_bad_input_not_a_crash(root: Path) -> None:
    settings = load_settings(None, root=root)
    answer = session_start_answer('{"cwd": "/tmp/a\\u0000b", "source": "clear"}', settings, None)
    assert answer.reason == "bad_input" and (answer.context or "").count("no usable cwd") == 1
    status = '{"cwd": "\\u0000", "context_window": {"used_percentage": 80}}'
    line = statusline_text(status, settings, None)
    assert "no cwd" in line


def test_codex_session_start_speaks_the_same_wire_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`carryd hook codex session-start` answers Codex's SessionStart hook (Claude Code's wire
    format); an event Codex has no hook for still answers, empty, with exit 0."""
    root = tmp_path / "memory"
    (root / "shop").mkdir(parents=True)
    stdin = json.dumps({"cwd": "/nowhere/shop", "source": "startup"})
    answers = []
    for host in ("claude-code", "codex"):
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        assert main(["hook", host, "session-start", "--root", str(root)]) == 0
        answers.append(capsys.readouterr().out)
    assert answers[0] == answers[1]
    assert session_answer(answers[1]) is not None
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"cwd": "/nowhere/shop"}'))
    assert main(["hook", "codex", "statusline", "--root", str(root)]) == 0
    assert capsys.readouterr().out == "\n"


def test_a_fresh_carry_too_big_to_inline_answers_from_the_prebuilt_variant(
    carried_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 10 item 7: with a fresh carry and no daemon, the hook reads the variant
    `carryd carry` pre-built for its budget — no model, no planner — and a variant whose
    bytes do not match the manifest's sha256 is not trusted (the hook re-plans, same text)."""
    # Re-planned for this copy of the root: the carry names its root, and the inline budget
    # leaves room for the line naming the full carry's path.
    assert main(["carry", "--root", str(carried_root)]) == 0
    carry_dir = carried_root / ".carryd" / "carry"
    full, inline = carry_dir / "shop.md", carry_dir / "shop.inline.md"
    assert len(full.read_text(encoding="utf-8")) > 9_000 and inline.is_file()
    probe = (
        "import io, json, sys\n"
        "from carryd.daemon.cli.dispatch import main\n"
        "sys.stdin = io.StringIO(json.dumps({'cwd': '/x/shop', 'source': 'clear'}))\n"
        f"code = main(['hook', 'claude-code', 'session-start', '--root', {str(carried_root)!r}])\n"
        "heavy = [m for m in ('fastembed', 'onnxruntime', 'carryd.carry.planner') "
        "if m in sys.modules]\n"
        "print(json.dumps(heavy), code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    answer_line, marker = done.stdout.strip().splitlines()[-2:]
    assert marker == "[] 0"  # nothing heavy imported: a file was read
    expected = inline.read_text(encoding="utf-8").rstrip("\n") + f"\n\nFull carry: {full}"
    assert session_answer(answer_line) == expected
    # Tampered with: not the bytes the manifest names, so the hook plans the carry itself.
    inline.write_text("not the carry", encoding="utf-8")
    context = hook_context(
        carried_root, session_start_input("/home/me/src/shop", "clear"), monkeypatch, capsys
    )
    assert context == expected
